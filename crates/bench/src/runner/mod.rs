//! Running experiments: for each system, a fresh target on the chosen
//! medium, the experiment's workload, its points tagged and kept. A system
//! that does not exist yet is recorded as *not yet*; one that fails is
//! recorded with its error, and the run goes on.
//!
//! This file holds the settings and the loop over experiments, seeds and
//! systems; `open.rs` opens a fresh target for a system or a mounted
//! directory; `workloads.rs` runs each experiment's workload on one;
//! `aged.rs` prepares the aged images the 1995 and 1997 experiments
//! start from; `derive.rs` adds the points derived from the measured ones
//! (factors, times relative to a base system, aged over empty).

mod aged;
mod derive;
mod open;
mod workloads;

pub use derive::{derive_factors, derive_of_empty, derive_relative};

use crate::config::{Config, Scope};
use crate::cpu::{Charges, Machine};
use crate::device::Medium;
use crate::experiment::{missing_feature, Experiment};
use crate::progress::Progress;
use crate::results::{ConfigRecord, Point, Results, RunInfo, Skipped};
use crate::system;
use crate::workload::Record;
use open::{medium_for, Subject};
use std::path::PathBuf;
use std::time::Instant;
use workloads::run_subject;

/// A mounted directory to run on, and its name in the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealDir {
    /// The system's name in results (`ext4`, `fslab-mount`…).
    pub name: String,
    /// The directory.
    pub path: PathBuf,
}

impl RealDir {
    /// Parses `NAME=DIR` or `DIR` (then named after the directory).
    pub fn parse(arg: &str) -> RealDir {
        match arg.split_once('=') {
            Some((name, path)) if !name.is_empty() && !name.contains('/') => {
                RealDir { name: name.to_string(), path: PathBuf::from(path) }
            }
            _ => {
                let path = PathBuf::from(arg);
                let name =
                    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| arg.into());
                RealDir { name: format!("dir:{name}"), path }
            }
        }
    }
}

/// Where the experiments run.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// Each experiment on its paper's drive (or, for CPU-bound ones, a
    /// memory disk).
    Paper,
    /// Every experiment's systems on this medium.
    Medium(Medium),
    /// The workloads on these mounted directories instead of the systems.
    Real(Vec<RealDir>),
}

/// How to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Seeds disks and workloads.
    pub seed: u64,
    /// The small configuration.
    pub quick: bool,
    /// What the CPU model charges (virtual time only).
    pub cpu_model: Charges,
    /// Where.
    pub place: Place,
    /// Where image files go (`--disk file`).
    pub scratch: PathBuf,
    /// Print progress on standard error.
    pub progress: bool,
    /// Whether runs on mounted directories drop the kernel's caches
    /// between phases (root only; tests turn it off).
    pub drop_kernel_caches: bool,
    /// Run only these of each experiment's systems (`None`: all).
    pub only_systems: Option<Vec<String>>,
    /// A sensitivity run's configuration file (`--config`): its disk and
    /// machine parameters replace the experiments' own.
    pub config: Option<Config>,
}

impl Settings {
    /// The machine `e` charges for and caches as: its own, as the
    /// configuration file changes it.
    pub fn machine(&self, e: &Experiment) -> Machine {
        match &self.config {
            Some(config) => config.machine(e.machine),
            None => e.machine,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            seed: 1,
            quick: false,
            cpu_model: Charges::On,
            place: Place::Paper,
            scratch: std::env::temp_dir(),
            progress: false,
            drop_kernel_caches: true,
            only_systems: None,
            config: None,
        }
    }
}

/// Points recorded for one system of one experiment at one seed.
struct Tagged<'a> {
    experiment: &'static str,
    seed: u64,
    system: String,
    results: &'a mut Results,
    notes: &'a mut Vec<String>,
}

impl Record for Tagged<'_> {
    fn record(&mut self, phase: &str, x: f64, metric: &str, value: f64) {
        self.results.points.push(Point {
            experiment: self.experiment.to_string(),
            seed: self.seed,
            system: self.system.clone(),
            phase: phase.to_string(),
            x,
            metric: metric.to_string(),
            value,
        });
    }

    fn note(&mut self, text: String) {
        let line = format!("{}: {text}", self.system);
        if !self.notes.contains(&line) {
            self.notes.push(line);
        }
    }
}

/// Bytes as "4 KB", "16 MB".
pub fn human_bytes(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MB", b >> 20)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{} KB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Runs `experiments` with `settings.seed` and returns everything they
/// produced.
pub fn run(experiments: &[&'static Experiment], settings: &Settings) -> Results {
    run_seeds(experiments, settings, &[settings.seed])
}

/// Runs each of `experiments` once per seed of `seeds` (all seeds of one
/// experiment before the next) and returns everything they produced, each
/// record tagged with its seed.
pub fn run_seeds(experiments: &[&'static Experiment], settings: &Settings, seeds: &[u64]) -> Results {
    let mut results = Results::default();
    let mut progress = Progress::new(settings.progress);
    let total = experiments.len() * seeds.len();
    let mut done = 0;
    for e in experiments {
        for &seed in seeds {
            done += 1;
            let label = if seeds.len() > 1 {
                format!("[{done}/{total}] {} seed {seed}", e.id)
            } else {
                format!("[{done}/{total}] {}", e.id)
            };
            progress.start(&label);
            let started = Instant::now();
            let one = run_experiment(e, &Settings { seed, ..settings.clone() }, &mut progress);
            results.extend(one);
            progress.done(started.elapsed());
        }
    }
    results
}

/// Runs `e` at `settings.seed`: every system, then the points derived
/// from theirs (the seed's alone, so that no ratio mixes two seeds).
fn run_experiment(e: &'static Experiment, settings: &Settings, progress: &mut Progress) -> Results {
    let mut results = Results::default();
    let started = Instant::now();
    let medium = medium_for(e, settings);
    let mut notes = Vec::new();
    let subjects: Vec<Subject<'_>> = match &settings.place {
        Place::Real(dirs) => dirs.iter().map(Subject::Dir).collect(),
        _ => e
            .systems
            .iter()
            .filter(|name| settings.only_systems.as_ref().is_none_or(|only| only.iter().any(|o| o == *name)))
            .filter_map(|name| match system::by_name(name) {
                Some(s) if s.not_yet().is_none() => Some(Subject::System(s, &medium)),
                _ => {
                    let reason = system::by_name(name)
                        .and_then(|s| s.not_yet())
                        .or_else(|| missing_feature(name))
                        .unwrap_or("unknown system");
                    results.skipped.push(Skipped {
                        experiment: e.id.into(),
                        seed: settings.seed,
                        system: name.to_string(),
                        reason: format!("not yet: {reason}"),
                        not_yet: true,
                    });
                    None
                }
            })
            .collect(),
    };
    for subject in &subjects {
        let name = subject.name();
        progress.step(&name);
        let mut tagged = Tagged {
            experiment: e.id,
            seed: settings.seed,
            system: name.clone(),
            results: &mut results,
            notes: &mut notes,
        };
        if let Err(err) = run_subject(e, settings, subject, &mut tagged, progress) {
            results.skipped.push(Skipped {
                experiment: e.id.into(),
                seed: settings.seed,
                system: name.clone(),
                reason: format!("failed: {err}"),
                not_yet: false,
            });
            progress.warn(&format!("{}: {name}: {err}", e.id));
        }
    }
    derive_factors(e, &mut results);
    derive_relative(e, &mut results);
    derive_of_empty(e, &mut results);
    if let Some(lattice) = crate::experiment::lattice(e) {
        crate::factorial::derive(e.id, lattice, &mut results);
    }
    let clock = match (&settings.place, medium.is_virtual()) {
        (Place::Real(_), _) | (_, false) => "wall",
        _ => "virtual",
    };
    results.runs.push(RunInfo {
        experiment: e.id.into(),
        disk: if matches!(settings.place, Place::Real(_)) { "real".into() } else { medium.name() },
        clock: clock.into(),
        cpu_model: if settings.cpu_model != Charges::Off && clock == "virtual" {
            e.machine.name.into()
        } else {
            "off".into()
        },
        cpu_charges: if clock == "virtual" { settings.cpu_model } else { Charges::Off },
        seed: settings.seed,
        quick: settings.quick,
        host_seconds: started.elapsed().as_secs_f64(),
        notes,
        config: config_record(e, settings),
    });
    results
}

/// What `settings`' configuration file changes in a run of `e`, if a file
/// was given: the drive's keys on a simulated disk, `[disk.log]` where a
/// system puts its journal on a second drive, the CPU's where it is
/// charged, the cache's for fslab's own systems.
pub fn config_record(e: &Experiment, settings: &Settings) -> Option<ConfigRecord> {
    let config = settings.config.as_ref()?;
    let medium = medium_for(e, settings);
    let drive = match &medium {
        Medium::Sim { model, .. } => disk::DiskModel::by_name(model),
        _ => None,
    };
    let real = matches!(settings.place, Place::Real(_));
    let log_drive = !real
        && e.systems
            .iter()
            .filter(|name| settings.only_systems.as_ref().is_none_or(|only| only.iter().any(|o| o == *name)))
            .filter_map(|name| system::by_name(name))
            .any(|s| s.not_yet().is_none() && s.log_device_bytes().is_some());
    let scope = Scope {
        drive: if real { None } else { drive },
        log_drive,
        machine: e.machine,
        cpu_charged: !real && settings.cpu_model != Charges::Off && medium.is_virtual(),
        cache_used: !real,
    };
    Some(config.record(&scope))
}
