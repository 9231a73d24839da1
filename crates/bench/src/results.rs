//! Every data point of a run, and the files they are kept in: `results.json`
//! (everything, read back by `fslab bench report`) and `results.csv` (the
//! points, one a line).

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// One measured value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The experiment's id.
    pub experiment: String,
    /// The system's name.
    pub system: String,
    /// The phase or operation ("create", "read", "before-cleaning"…).
    pub phase: String,
    /// The parameter swept (file size in bytes, utilization in percent,
    /// directory entries…); 0 when there is none.
    pub x: f64,
    /// What was measured, with its unit ("MB/s", "files/s", "TPS", "s",
    /// "cpu%", "us/op"…).
    pub metric: String,
    /// The value.
    pub value: f64,
}

/// A system an experiment could not run, and why ("not yet: FFS is not in
/// fslab yet", or the error that stopped it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The experiment's id.
    pub experiment: String,
    /// The system's name.
    pub system: String,
    /// Why.
    pub reason: String,
    /// Whether it is a system that does not exist yet (rather than a
    /// failure).
    pub not_yet: bool,
}

/// How one experiment was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The experiment's id.
    pub experiment: String,
    /// The disk: a drive's name, `mem`, `file`, or `real`.
    pub disk: String,
    /// `virtual` or `wall`.
    pub clock: String,
    /// The CPU model (a machine's name, or `off`).
    pub cpu_model: String,
    /// The seed.
    pub seed: u64,
    /// Whether the small configuration ran.
    pub quick: bool,
    /// Host seconds the experiment took.
    pub host_seconds: f64,
    /// Notes the run made (caches that could not be dropped…).
    pub notes: Vec<String>,
}

/// Everything a run produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// One per experiment run.
    pub runs: Vec<RunInfo>,
    /// The data points.
    pub points: Vec<Point>,
    /// The systems that did not run.
    pub skipped: Vec<Skipped>,
}

impl Results {
    /// The points of `experiment` for `system`, `phase` and `metric`, in
    /// the order of x.
    pub fn series(&self, experiment: &str, system: &str, phase: &str, metric: &str) -> Vec<(f64, f64)> {
        let mut s: Vec<(f64, f64)> = self
            .points
            .iter()
            .filter(|p| {
                p.experiment == experiment && p.system == system && p.phase == phase && p.metric == metric
            })
            .map(|p| (p.x, p.value))
            .collect();
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
        s
    }

    /// The value at `x` of that series (within 0.1%), if measured.
    pub fn value(&self, experiment: &str, system: &str, phase: &str, metric: &str, x: f64) -> Option<f64> {
        self.series(experiment, system, phase, metric)
            .into_iter()
            .find(|(px, _)| (px - x).abs() <= x.abs() * 1e-3 + 1e-9)
            .map(|(_, v)| v)
    }

    /// The systems that ran in `experiment`, in order of first appearance.
    pub fn systems(&self, experiment: &str) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in self.points.iter().filter(|p| p.experiment == experiment) {
            if !names.contains(&p.system) {
                names.push(p.system.clone());
            }
        }
        names
    }

    /// Why `system` did not run in `experiment`, if it did not.
    pub fn skipped(&self, experiment: &str, system: &str) -> Option<&Skipped> {
        self.skipped.iter().find(|s| s.experiment == experiment && s.system == system)
    }

    /// How `experiment` ran, if it did.
    pub fn run(&self, experiment: &str) -> Option<&RunInfo> {
        self.runs.iter().find(|r| r.experiment == experiment)
    }

    /// Adds another run's results; a re-run experiment replaces the old.
    pub fn merge(&mut self, other: Results) {
        for run in &other.runs {
            self.runs.retain(|r| r.experiment != run.experiment);
            self.points.retain(|p| p.experiment != run.experiment);
            self.skipped.retain(|s| s.experiment != run.experiment);
        }
        self.runs.extend(other.runs);
        self.points.extend(other.points);
        self.skipped.extend(other.skipped);
    }

    /// The points as CSV, with a header line.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("experiment,system,phase,x,metric,value\n");
        for p in &self.points {
            let _ =
                writeln!(out, "{},{},{},{},{},{}", p.experiment, p.system, p.phase, p.x, p.metric, p.value);
        }
        out
    }

    /// Writes `results.json` and `results.csv` into `dir`.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        std::fs::write(dir.join("results.json"), json + "\n")?;
        std::fs::write(dir.join("results.csv"), self.to_csv())
    }

    /// Reads `results.json` from `dir`.
    pub fn load(dir: &Path) -> io::Result<Results> {
        let path = dir.join("results.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(system: &str, x: f64, value: f64) -> Point {
        Point {
            experiment: "e".into(),
            system: system.into(),
            phase: "create".into(),
            x,
            metric: "MB/s".into(),
            value,
        }
    }

    #[test]
    fn results_round_trip_through_json_and_merge_replaces_a_rerun() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut r = Results {
            points: vec![
                point("lfs", 4096.0, 1.5),
                point("lfs", 1024.0, 0.5),
                point("ffs", 1024.0, 10.849125183630237),
            ],
            ..Results::default()
        };
        r.runs.push(RunInfo {
            experiment: "e".into(),
            disk: "dsp3105".into(),
            clock: "virtual".into(),
            cpu_model: "off".into(),
            seed: 1,
            quick: true,
            host_seconds: 0.1,
            notes: vec![],
        });
        r.save(dir.path()).expect("save");
        let back = Results::load(dir.path()).expect("load");
        assert_eq!(
            back, r,
            "every value read back bit for bit (a run merged into saved results rewrites them)"
        );
        assert_eq!(back.series("e", "lfs", "create", "MB/s"), vec![(1024.0, 0.5), (4096.0, 1.5)]);
        assert_eq!(back.value("e", "lfs", "create", "MB/s", 4096.0), Some(1.5));
        assert!(std::fs::read_to_string(dir.path().join("results.csv"))
            .expect("csv")
            .contains("e,lfs,create,4096,MB/s,1.5"));
        let mut again = r.clone();
        let mut newer = r.clone();
        newer.points = vec![point("lfs", 4096.0, 2.0)];
        again.merge(newer);
        assert_eq!(again.points.len(), 1);
        assert!(Results::load(&dir.path().join("nothing")).is_err());
    }
}
