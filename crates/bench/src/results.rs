//! Every data point of a run, and the files they are kept in: `results.json`
//! (everything, read back by `fslab bench report`) and `results.csv` (the
//! points, one a line).
//!
//! An experiment may have run with several seeds: it then has one
//! [`RunInfo`] per seed, and each of its points and skipped systems names
//! the seed it belongs to. [`Results::at_seed`] gives one seed's view, on
//! which every question about "the" value of a point has one answer.

use crate::cpu::Charges;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// One measured value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The experiment's id.
    pub experiment: String,
    /// The seed of the run that measured it.
    #[serde(default)]
    pub seed: u64,
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
    /// The seed of the run that could not run it.
    #[serde(default)]
    pub seed: u64,
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
    /// What the CPU model charged: `on`, `off` (nothing, as on wall time)
    /// or `paper` (the papers' checksums). Files before version 3 lack it;
    /// [`Results::load`] gives them `off` where `cpu_model` is `off`, else
    /// `on`, the only two those versions could run.
    #[serde(default)]
    pub cpu_charges: Charges,
    /// The seed.
    pub seed: u64,
    /// Whether the small configuration ran.
    pub quick: bool,
    /// Host seconds the experiment took.
    pub host_seconds: f64,
    /// Notes the run made (caches that could not be dropped…).
    pub notes: Vec<String>,
    /// The configuration file whose parameters replaced the experiment's
    /// own (`--config`): a sensitivity run, not the papers' setup. Absent
    /// from the file when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigRecord>,
}

impl RunInfo {
    /// Whether `other` ran its experiment as this run did, but for the
    /// seed (and the host time it took, and its notes).
    pub fn same_setup(&self, other: &RunInfo) -> bool {
        (
            &self.experiment,
            &self.disk,
            &self.clock,
            &self.cpu_model,
            self.cpu_charges,
            self.quick,
            &self.config,
        ) == (
            &other.experiment,
            &other.disk,
            &other.clock,
            &other.cpu_model,
            other.cpu_charges,
            other.quick,
            &other.config,
        )
    }

    /// How it ran, in words, for a message: the clock, the CPU model and
    /// its charges, the size, and the configuration file if any.
    fn setup_words(&self) -> String {
        let mut words = format!(
            "{} time, CPU model {} ({}){}",
            self.clock,
            self.cpu_model,
            self.cpu_charges.name(),
            if self.quick { ", quick" } else { "" }
        );
        if let Some(config) = &self.config {
            words.push_str(&format!(", configuration {}", config.path));
        }
        words
    }

    /// A run of `experiment` on `disk` at `seed`, on virtual time with
    /// nothing charged for CPU, no notes and no configuration file: what a
    /// results file built by hand (a test's, a paper's numbers) records.
    pub fn uncharged(experiment: &str, disk: &str, seed: u64) -> RunInfo {
        RunInfo {
            experiment: experiment.into(),
            disk: disk.into(),
            clock: "virtual".into(),
            cpu_model: "off".into(),
            cpu_charges: Charges::Off,
            seed,
            quick: false,
            host_seconds: 0.0,
            notes: vec![],
            config: None,
        }
    }
}

/// What a configuration file changed in one experiment's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRecord {
    /// The file, as the command line named it.
    pub path: String,
    /// Each parameter it set that the run used (none: the file set only
    /// what this experiment does not have, such as a disk on a memory
    /// disk).
    pub overrides: Vec<Override>,
}

/// One parameter a configuration file set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Override {
    /// The key, as the file names it: `disk.rpm`, `machine.mips`.
    pub key: String,
    /// The value the run used.
    pub value: serde_json::Value,
    /// The experiment's own value, where the key names one (a scale does
    /// not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<serde_json::Value>,
}

impl ConfigRecord {
    /// The overrides in one line: `disk.rpm = 8004 (was 4002), disk.seek_scale = 0.5`.
    pub fn describe(&self) -> String {
        if self.overrides.is_empty() {
            return "none of its parameters applies here".into();
        }
        let each: Vec<String> = self
            .overrides
            .iter()
            .map(|o| match &o.baseline {
                Some(serde_json::Value::Null) => format!("{} = {} (was none)", o.key, o.value),
                Some(was) => format!("{} = {} (was {was})", o.key, o.value),
                None => format!("{} = {}", o.key, o.value),
            })
            .collect();
        each.join(", ")
    }
}

/// Everything a run produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// One per experiment and seed run.
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

    /// The CPU charges of the runs on virtual time, each with the
    /// experiments that ran with it, when there is more than one: results
    /// that mix them compare unlike costs. `None` when they agree (runs on
    /// wall time charge nothing whatever was asked, and are left out).
    pub fn mixed_cpu_charges(&self) -> Option<Vec<(Charges, Vec<String>)>> {
        let mut by: BTreeMap<&'static str, (Charges, BTreeSet<&str>)> = BTreeMap::new();
        for r in self.runs.iter().filter(|r| r.clock == "virtual") {
            by.entry(r.cpu_charges.name())
                .or_insert((r.cpu_charges, BTreeSet::new()))
                .1
                .insert(&r.experiment);
        }
        (by.len() > 1).then(|| {
            by.into_values()
                .map(|(charges, experiments)| (charges, experiments.into_iter().map(String::from).collect()))
                .collect()
        })
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

    /// How `experiment` ran, if it did (over several seeds, the first run
    /// recorded; [`Results::runs_of`] gives them all).
    pub fn run(&self, experiment: &str) -> Option<&RunInfo> {
        self.runs.iter().find(|r| r.experiment == experiment)
    }

    /// The seeds `experiment` ran with, in increasing order (none when it
    /// has not run).
    pub fn seeds(&self, experiment: &str) -> Vec<u64> {
        let mut seeds: Vec<u64> =
            self.runs.iter().filter(|r| r.experiment == experiment).map(|r| r.seed).collect();
        seeds.sort_unstable();
        seeds.dedup();
        seeds
    }

    /// Whether any experiment ran with more than one seed.
    pub fn several_seeds(&self) -> bool {
        self.runs.iter().any(|r| self.runs.iter().any(|o| o.experiment == r.experiment && o.seed != r.seed))
    }

    /// Every run of `experiment`, in the order of their seeds.
    pub fn runs_of(&self, experiment: &str) -> Vec<&RunInfo> {
        let mut runs: Vec<&RunInfo> = self.runs.iter().filter(|r| r.experiment == experiment).collect();
        runs.sort_by_key(|r| r.seed);
        runs
    }

    /// One seed's view: each experiment's runs, points and skipped systems
    /// of `seed`. An experiment that ran with one other seed only is kept
    /// whole, so that a check reading it beside one of several seeds
    /// (PostMark's large set against its default set) compares each seed
    /// with that one measurement rather than with nothing; one with several
    /// seeds but not this one is left out. Records of an experiment with no
    /// run are kept, having no seed to choose by.
    pub fn at_seed(&self, seed: u64) -> Results {
        let mut chosen: BTreeMap<&str, Option<u64>> = BTreeMap::new();
        for r in &self.runs {
            chosen.entry(&r.experiment).or_insert_with(|| {
                let seeds = self.seeds(&r.experiment);
                match seeds.as_slice() {
                    _ if seeds.contains(&seed) => Some(seed),
                    [only] => Some(*only),
                    _ => None,
                }
            });
        }
        let keeps = |experiment: &str, s: u64| chosen.get(experiment).is_none_or(|c| *c == Some(s));
        Results {
            runs: self.runs.iter().filter(|r| keeps(&r.experiment, r.seed)).cloned().collect(),
            points: self.points.iter().filter(|p| keeps(&p.experiment, p.seed)).cloned().collect(),
            skipped: self.skipped.iter().filter(|s| keeps(&s.experiment, s.seed)).cloned().collect(),
        }
    }

    /// Adds another run's results to these, replacing nothing: one
    /// invocation's runs, seed after seed.
    pub fn extend(&mut self, other: Results) {
        self.runs.extend(other.runs);
        self.points.extend(other.points);
        self.skipped.extend(other.skipped);
    }

    /// Adds the seeds of runs made apart (`fslab bench merge`: two
    /// processes, or two machines, each running some seeds of the same
    /// experiments) to these. Refuses a seed of an experiment already here,
    /// and runs of one experiment made differently (another disk, clock,
    /// CPU model, size or configuration file): the seeds of one experiment
    /// must differ in their seed alone, as one invocation's do.
    pub fn gather(&mut self, other: Results) -> Result<(), String> {
        for run in &other.runs {
            for mine in self.runs.iter().filter(|r| r.experiment == run.experiment) {
                if mine.seed == run.seed {
                    return Err(format!("{} seed {} is in more than one of them", run.experiment, run.seed));
                }
                if !mine.same_setup(run) {
                    return Err(format!(
                        "{} seed {} ran on {} with {}, seed {} on {} with {}: their seeds would not be comparable",
                        run.experiment,
                        mine.seed,
                        mine.disk,
                        mine.setup_words(),
                        run.seed,
                        run.disk,
                        run.setup_words()
                    ));
                }
            }
        }
        self.extend(other);
        Ok(())
    }

    /// Adds another run's results; an experiment run again replaces every
    /// seed of the old, so that an experiment's seeds are always one
    /// invocation's (or runs [`Results::gather`] found alike), made with
    /// one configuration.
    pub fn merge(&mut self, other: Results) {
        for run in &other.runs {
            self.runs.retain(|r| r.experiment != run.experiment);
            self.points.retain(|p| p.experiment != run.experiment);
            self.skipped.retain(|s| s.experiment != run.experiment);
        }
        self.extend(other);
    }

    /// The points as CSV, with a header line.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("experiment,system,phase,x,metric,value,seed\n");
        for p in &self.points {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{}",
                p.experiment, p.system, p.phase, p.x, p.metric, p.value, p.seed
            );
        }
        out
    }

    /// Whether any experiment ran with a configuration file's overrides.
    pub fn has_overrides(&self) -> bool {
        self.runs.iter().any(|r| r.config.is_some())
    }

    /// Writes `results.json` (in the format of [`FORMAT_VERSION`])
    /// and `results.csv` into `dir`.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let file = FileOut { version: FORMAT_VERSION, results: self };
        let json = serde_json::to_string_pretty(&file).map_err(io::Error::other)?;
        std::fs::write(dir.join("results.json"), json + "\n")?;
        std::fs::write(dir.join("results.csv"), self.to_csv())
    }

    /// Reads `results.json` from `dir`, of this version or an older one;
    /// a newer one is refused (its shape may mean what this one cannot
    /// read).
    pub fn load(dir: &Path) -> io::Result<Results> {
        let path = dir.join("results.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let invalid =
            |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
        let file: FileIn = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if file.version > FORMAT_VERSION {
            return Err(invalid(format!(
                "results format version {} is newer than this fslab reads ({FORMAT_VERSION})",
                file.version
            )));
        }
        let mut results = file.results;
        if file.version < 2 {
            results.seed_from_runs();
        }
        if file.version < 3 {
            for r in &mut results.runs {
                r.cpu_charges = if r.cpu_model == "off" { Charges::Off } else { Charges::On };
            }
        }
        Ok(results)
    }

    /// Gives each point and skipped system of a version-1 file the seed of
    /// its experiment's run, the only one that version kept.
    fn seed_from_runs(&mut self) {
        let seeds: BTreeMap<String, u64> = self.runs.iter().map(|r| (r.experiment.clone(), r.seed)).collect();
        let seed_of = |experiment: &str| seeds.get(experiment).copied().unwrap_or(1);
        for p in &mut self.points {
            p.seed = seed_of(&p.experiment);
        }
        for s in &mut self.skipped {
            s.seed = seed_of(&s.experiment);
        }
    }
}

/// The version of `results.json` written now. Version 3 records each
/// run's CPU charges (`cpu_charges`), since `--cpu-model paper` runs the
/// same machine as `on`, and a sensitivity run's configuration file
/// (`runs[].config`, only when `--config` was given); version 2 tags every
/// point and skipped system with its seed, and an experiment has a run per
/// seed; version 1 (no `version` member) kept one run per experiment,
/// whose seed its records take when read.
pub const FORMAT_VERSION: u32 = 3;

/// `results.json` as written: the version first, then the results.
#[derive(Serialize)]
struct FileOut<'a> {
    version: u32,
    #[serde(flatten)]
    results: &'a Results,
}

/// `results.json` as read: a file without a version is version 1.
#[derive(Deserialize)]
struct FileIn {
    #[serde(default = "first_version")]
    version: u32,
    #[serde(flatten)]
    results: Results,
}

fn first_version() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(system: &str, x: f64, value: f64) -> Point {
        Point {
            experiment: "e".into(),
            seed: 1,
            system: system.into(),
            phase: "create".into(),
            x,
            metric: "MB/s".into(),
            value,
        }
    }

    fn run_info(experiment: &str, seed: u64) -> RunInfo {
        RunInfo { quick: true, host_seconds: 0.1, ..RunInfo::uncharged(experiment, "dsp3105", seed) }
    }

    /// Experiment `e` at seeds 1-3 (lfs at 1.0, 2.0, 3.0 MB/s) and `f` at
    /// seed 7 only, with `e`'s seed 2 missing `ffs`.
    fn three_seeds() -> Results {
        let mut r = Results::default();
        for seed in 1..=3 {
            r.runs.push(run_info("e", seed));
            r.points.push(Point { seed, ..point("lfs", 4096.0, seed as f64) });
        }
        r.skipped.push(Skipped {
            experiment: "e".into(),
            seed: 2,
            system: "ffs".into(),
            reason: "failed: no space".into(),
            not_yet: false,
        });
        r.runs.push(run_info("f", 7));
        r.points.push(Point { experiment: "f".into(), seed: 7, ..point("lfs", 0.0, 9.0) });
        r
    }

    #[test]
    fn several_seeds_round_trip_through_the_file_and_each_has_its_view() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = three_seeds();
        r.save(dir.path()).expect("save");
        let json = std::fs::read_to_string(dir.path().join("results.json")).expect("json");
        assert!(json.starts_with("{\n  \"version\": 3,"), "{json}");
        let back = Results::load(dir.path()).expect("load");
        assert_eq!(back, r);
        assert_eq!(back.seeds("e"), vec![1, 2, 3]);
        assert!(back.several_seeds());
        let csv = std::fs::read_to_string(dir.path().join("results.csv")).expect("csv");
        assert!(csv.starts_with("experiment,system,phase,x,metric,value,seed\n"), "{csv}");
        assert!(csv.contains("e,lfs,create,4096,MB/s,3,3\n"), "{csv}");

        let two = back.at_seed(2);
        assert_eq!(two.value("e", "lfs", "create", "MB/s", 4096.0), Some(2.0));
        assert_eq!(two.runs.len(), 2, "e's seed 2 and f's only run");
        assert!(two.skipped("e", "ffs").is_some());
        assert!(back.at_seed(3).skipped("e", "ffs").is_none(), "ffs failed on seed 2 only");
        assert_eq!(two.value("f", "lfs", "create", "MB/s", 0.0), Some(9.0), "one seed serves every view");
        let seven = back.at_seed(7);
        assert!(seven.run("e").is_none() && seven.points.iter().all(|p| p.experiment == "f"));

        let mut rerun = back.clone();
        rerun.merge(Results { runs: vec![run_info("e", 5)], ..Results::default() });
        assert_eq!(rerun.seeds("e"), vec![5], "a rerun replaces every seed of the old");
        assert!(rerun.points.iter().all(|p| p.experiment == "f"));
    }

    /// A file written before seeds were recorded per point: no version,
    /// no seed on points or skipped systems, one run per experiment.
    #[test]
    fn a_single_seed_file_of_the_first_version_still_loads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = r#"{
  "runs": [{"experiment": "e", "disk": "dsp3105", "clock": "virtual", "cpu_model": "off",
            "seed": 4, "quick": false, "host_seconds": 1.0, "notes": []}],
  "points": [{"experiment": "e", "system": "lfs", "phase": "create", "x": 1024.0,
              "metric": "MB/s", "value": 0.5}],
  "skipped": [{"experiment": "e", "system": "ffs", "reason": "not yet: x", "not_yet": true}]
}"#;
        std::fs::write(dir.path().join("results.json"), old).expect("write");
        let r = Results::load(dir.path()).expect("an old file loads");
        assert_eq!(r.points[0].seed, 4, "its run's seed");
        assert_eq!(r.runs[0].cpu_charges, Charges::Off, "its cpu_model is off");
        assert_eq!(r.skipped[0].seed, 4);
        assert_eq!(r.seeds("e"), vec![4]);
        assert!(!r.several_seeds());
        assert_eq!(r.at_seed(4), r);

        let newer = old.replacen('{', "{\"version\": 4,", 1);
        std::fs::write(dir.path().join("results.json"), newer).expect("write");
        let err = Results::load(dir.path()).expect_err("a newer version is refused");
        assert!(err.to_string().contains("version 4 is newer"), "{err}");
    }

    /// A version-2 file has no `cpu_charges`: a machine's name was `on`,
    /// the only other model it could run. A version-3 file keeps `paper`.
    #[test]
    fn cpu_charges_are_read_from_old_files_and_kept_in_new_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let v2 = r#"{"version": 2,
  "runs": [{"experiment": "e", "disk": "dsp3105", "clock": "virtual", "cpu_model": "sparcstation2",
            "seed": 1, "quick": false, "host_seconds": 1.0, "notes": []},
           {"experiment": "f", "disk": "mem", "clock": "wall", "cpu_model": "off",
            "seed": 1, "quick": false, "host_seconds": 1.0, "notes": []}],
  "points": [], "skipped": []
}"#;
        std::fs::write(dir.path().join("results.json"), v2).expect("write");
        let mut r = Results::load(dir.path()).expect("a version-2 file loads");
        let charges: Vec<Charges> = r.runs.iter().map(|r| r.cpu_charges).collect();
        assert_eq!(charges, vec![Charges::On, Charges::Off]);
        assert_eq!(r.mixed_cpu_charges(), None, "a run on wall time charges nothing by nature");

        r.runs.push(RunInfo { cpu_charges: Charges::Paper, ..run_info("g", 1) });
        r.save(dir.path()).expect("save");
        let json = std::fs::read_to_string(dir.path().join("results.json")).expect("json");
        assert!(json.contains("\"cpu_charges\": \"paper\""), "{json}");
        let back = Results::load(dir.path()).expect("load");
        assert_eq!(back, r);
        assert_eq!(
            back.mixed_cpu_charges(),
            Some(vec![(Charges::On, vec!["e".to_string()]), (Charges::Paper, vec!["g".to_string()])])
        );
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
        r.runs.push(run_info("e", 1));
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
            .contains("e,lfs,create,4096,MB/s,1.5,1"));
        let mut again = r.clone();
        let mut newer = r.clone();
        newer.points = vec![point("lfs", 4096.0, 2.0)];
        again.merge(newer);
        assert_eq!(again.points.len(), 1);
        assert!(Results::load(&dir.path().join("nothing")).is_err());
    }

    /// Seeds run apart gather into the results one invocation of them all
    /// would have made; a seed given twice, or runs made differently, are
    /// refused and leave the results as they were.
    #[test]
    fn gathered_seeds_join_and_a_repeated_or_different_run_is_refused() {
        let all = three_seeds();
        let part = |seeds: &[u64]| Results {
            runs: all.runs.iter().filter(|r| seeds.contains(&r.seed)).cloned().collect(),
            points: all.points.iter().filter(|p| seeds.contains(&p.seed)).cloned().collect(),
            skipped: all.skipped.iter().filter(|s| seeds.contains(&s.seed)).cloned().collect(),
        };
        let mut gathered = part(&[1, 7]);
        gathered.gather(part(&[2, 3])).expect("seeds 2 and 3 beside 1");
        assert_eq!(gathered.seeds("e"), vec![1, 2, 3]);
        assert_eq!(gathered.series("e", "lfs", "create", "MB/s").len(), 3);
        assert_eq!(gathered.skipped.len(), 1);

        let before = gathered.clone();
        let err = gathered.gather(part(&[3])).expect_err("seed 3 twice");
        assert!(err.contains("e seed 3 is in more than one"), "{err}");
        let mut slower = part(&[4]);
        slower.runs.push(RunInfo { disk: "hp97560".into(), ..run_info("e", 4) });
        let err = gathered.gather(slower).expect_err("another disk");
        assert!(err.contains("would not be comparable"), "{err}");
        let full = Results { runs: vec![RunInfo { quick: false, ..run_info("e", 5) }], ..Results::default() };
        assert!(gathered.gather(full).is_err(), "a full-size seed beside quick ones");
        assert_eq!(gathered, before);
    }
}
