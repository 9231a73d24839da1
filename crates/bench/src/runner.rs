//! Running experiments: for each system, a fresh target on the chosen
//! medium, the experiment's workload, its points tagged and kept. A system
//! that does not exist yet is recorded as *not yet*; one that fails is
//! recorded with its error, and the run goes on.

use crate::aging::generate::Params as AgingParams;
use crate::aging::rebuild::{self, FreeMaps};
use crate::cpu::CpuModel;
use crate::device::{self, Medium};
use crate::experiment::{
    aged_pair, dirhash_off, factors, missing_feature, relative_to, Experiment, Workload, OF_EMPTY, RELATIVE,
};
use crate::progress::Progress;
use crate::results::{Point, Results, RunInfo, Skipped};
use crate::system::{self, FfsParams, Kind, System};
use crate::target::dir::Dir;
use crate::target::library::{Library, MountEnv};
use crate::target::raw::Raw;
use crate::target::Backend;
use crate::target::Target;
use crate::workload::{self, Record};
use fslab::ffs::Ffs;
use fslab::time::TimeSource;
use std::io;
use std::path::PathBuf;
use std::time::Instant;

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
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Seeds disks and workloads.
    pub seed: u64,
    /// The small configuration.
    pub quick: bool,
    /// Whether the CPU model charges (virtual time only).
    pub cpu_model: bool,
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
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            seed: 1,
            quick: false,
            cpu_model: true,
            place: Place::Paper,
            scratch: std::env::temp_dir(),
            progress: false,
            drop_kernel_caches: true,
            only_systems: None,
        }
    }
}

/// What an experiment runs against.
enum Subject<'a> {
    /// A system of the registry, on `medium`.
    System(&'static System, &'a Medium),
    /// A mounted directory.
    Dir(&'a RealDir),
}

impl Subject<'_> {
    fn name(&self) -> String {
        match self {
            Subject::System(s, _) => s.name.to_string(),
            Subject::Dir(d) => d.name.clone(),
        }
    }

    fn cleans(&self) -> bool {
        match self {
            Subject::System(s, _) => matches!(s.kind, Kind::Lfs(p) if p.cleaner.is_some()),
            Subject::Dir(_) => false,
        }
    }

    fn is_library(&self) -> bool {
        matches!(self, Subject::System(..))
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

/// The medium an experiment's systems run on. A simulated drive chosen
/// for every experiment takes the run's seed, whatever seed it was named
/// with, so that each seed of `--seeds` turns the disks to a new phase.
fn medium_for(e: &Experiment, settings: &Settings) -> Medium {
    match &settings.place {
        Place::Medium(Medium::Sim { model, .. }) => Medium::Sim { model: model.clone(), seed: settings.seed },
        Place::Medium(m) => m.clone(),
        _ if e.disk == "mem" => Medium::Memory,
        _ => Medium::Sim { model: e.disk.to_string(), seed: settings.seed },
    }
}

/// Bytes of a device on `medium` for `e` when the workload does not say:
/// the paper's drive's capacity (memory disks: 256 MiB).
fn default_bytes(e: &Experiment, medium: &Medium) -> io::Result<u64> {
    match medium {
        Medium::Sim { model, .. } => device::model_bytes(model),
        _ if e.disk == "mem" => Ok(256 << 20),
        _ => device::model_bytes(e.disk),
    }
}

/// Opens a fresh target for `subject`: a new device of `bytes` (or the
/// default) with a new file system, or a new directory in a mount.
fn open(
    e: &Experiment,
    settings: &Settings,
    subject: &Subject<'_>,
    bytes: Option<u64>,
) -> io::Result<Target> {
    let (system, medium) = match subject {
        Subject::Dir(d) => {
            let name = format!("fslab-bench-{}-{}", std::process::id(), e.id);
            return Ok(Target::on_wall_time(Box::new(Dir::new(
                &d.path,
                &name,
                settings.drop_kernel_caches,
            )?)));
        }
        Subject::System(s, m) => (*s, *m),
    };
    // The experiment's dirhash setting over the registry's (see
    // `dirhash_off`).
    let adjusted = if dirhash_off(e) { system.without_dirhash() } else { *system };
    let system = &adjusted;
    let size = match bytes {
        Some(b) => b,
        None => default_bytes(e, medium)?,
    };
    let dev = device::prepare(medium, Some(size), &format!("{}-{}", e.id, system.name))?;
    let cpu = if settings.cpu_model { CpuModel::of(e.machine) } else { CpuModel::off() };
    let backend: Box<dyn Backend> = match system.kind {
        Kind::Raw => {
            let charge = dev.clock.clone().map(|c| (c, cpu));
            Box::new(Raw::new(dev.dev.clone(), dev.sim.clone(), charge, 8))
        }
        _ => {
            let env = mount_env(e, system, &dev);
            let tag = format!("{}-{}", e.id, system.name);
            let log = match system.log_device_bytes() {
                Some(bytes) => Some(device::prepare_log(medium, &dev, bytes, &tag)?),
                None => None,
            };
            system::open_library(system, dev.dev.clone(), log, dev.sim.clone(), env)?
        }
    };
    Ok(target_on(dev, backend, cpu))
}

/// How `system` is mounted on `dev` in experiment `e`: on the simulated
/// disk's clock (deterministic) or on wall time, with the experiment
/// machine's cache.
fn mount_env(e: &Experiment, system: &System, dev: &device::Device) -> MountEnv {
    MountEnv {
        clock: dev.clock.clone().map_or_else(TimeSource::wall, TimeSource::virtual_clock),
        deterministic: dev.clock.is_some(),
        cache_bytes: e.machine.cache_bytes(system.block_size()),
    }
}

/// `backend` on `dev`: in virtual time, charging `cpu`, on a simulated
/// disk; in wall time otherwise. The target keeps the device.
fn target_on(dev: device::Device, backend: Box<dyn Backend>, cpu: CpuModel) -> Target {
    let mut target = match dev.clock.clone() {
        Some(clock) => Target::on_virtual_time(backend, clock, cpu),
        None => Target::on_wall_time(backend),
    };
    target.keep(Box::new(dev));
    target
}

/// A partition on which `data` bytes make the file system `utilization`
/// full as its `statfs` counts (the papers' utilization is what `df`
/// shows): what the file system keeps back for itself (LFS's reserved
/// segments, FFS's metadata) is measured on a trial file system and added.
fn partition_for(
    e: &Experiment,
    settings: &Settings,
    subject: &Subject<'_>,
    data: u64,
    utilization: f64,
) -> io::Result<u64> {
    let wanted = (data as f64 / utilization) as u64;
    let mut trial = open(e, settings, subject, Some(wanted))?;
    let total = trial.usage()?.total;
    trial.finish()?;
    Ok(wanted + wanted.saturating_sub(total))
}

/// How the aged-FFS experiment (1995 §5) runs, full or `--quick`.
struct AgedSetup {
    /// The benchmark: create and read, 25 files a directory.
    spec: workload::sequential::Spec,
    /// Bytes of the partition, aged and benchmarked alike.
    partition: u64,
    /// The aging stream (its `fs_bytes` is the file system's, set when
    /// aging begins).
    stream: AgingParams,
}

impl AgedSetup {
    /// The paper's benchmark (32 MB per size) on 372 MB, 31 groups of 12
    /// MB (Table 4's staff: 353 MB, 31 groups), aged 300 days writing 100
    /// times the file system (`fslab age`'s defaults, the 1997 paper's
    /// ten months); `--quick`: 4 MB per size on 48 MB aged 30 days at 10
    /// times, a few seconds of host time.
    fn new(quick: bool, seed: u64) -> AgedSetup {
        let (spec, partition, days, write_factor) = if quick {
            (workload::sequential::Spec::aged_quick(), 48 << 20, 30, 10)
        } else {
            (workload::sequential::Spec::aged(), 372 << 20, 300, 100)
        };
        AgedSetup { spec, partition, stream: AgingParams { seed, fs_bytes: 0, days, write_factor } }
    }
}

/// How the realloc experiment (1997 §4–5) runs, full or `--quick`.
struct ReallocSetup {
    /// The sequential benchmark (§5.1).
    sequential: workload::sequential::Spec,
    /// Bytes of the partition, aged and benchmarked alike.
    partition: u64,
    /// The aging stream (its `fs_bytes` is the file system's, set when
    /// aging begins).
    stream: AgingParams,
    /// The hot files are those modified in the stream's last this many
    /// days.
    hot_days: u64,
}

impl ReallocSetup {
    /// The paper's 502 MB (Table 1; 502 MiB, as `docs/lab/aging.md` makes
    /// it), aged 300 days writing 100 times the file system (`fslab age`'s
    /// defaults, the paper's ten months), hot files of the last 30 days
    /// ("the last month", §5.2); `--quick`: 48 MB aged 30 days at 10 times,
    /// hot files of the last 3, a few seconds of host time.
    fn new(quick: bool, seed: u64) -> ReallocSetup {
        let (sequential, partition, days, write_factor, hot_days) = if quick {
            (workload::sequential::Spec::ss97_quick(), 48 << 20, 30, 10, 3)
        } else {
            (workload::sequential::Spec::ss97(), 502 << 20, 300, 100, 30)
        };
        ReallocSetup {
            sequential,
            partition,
            stream: AgingParams { seed, fs_bytes: 0, days, write_factor },
            hot_days,
        }
    }

    /// The simulated second from which a file counts as hot.
    fn hot_since(&self) -> u64 {
        self.stream.days.saturating_sub(self.hot_days) * crate::aging::ops::DAY
    }
}

/// The share of the aged file system's files the 1997 paper found hot
/// (§5.2: 929 of 8774). The realloc experiment also benchmarks that share
/// of its most recently modified files (`recent`), since the synthetic
/// stream's last month touches nearly every file (`docs/lab/aging.md`).
const PAPER_HOT_SHARE: f64 = 929.0 / 8774.0;

/// Whether day `day` of `days` is one the realloc experiment records the
/// layout score of: the first, every tenth, and the last (`docs/lab/aging.md`'s
/// table; the report would otherwise carry 300 rows a system).
fn recorded_day(day: u64, days: u64) -> bool {
    day.is_multiple_of(10) || day + 1 == days
}

/// A copy of the aged image on `aged` on a new device of `bytes` for
/// `system`, mounted with `params` (the image's geometry and allocator are
/// its own; the mount's integrity mode and cache are `params`' and the
/// machine's).
fn open_aged_copy(
    e: &Experiment,
    settings: &Settings,
    system: &System,
    medium: &Medium,
    params: &FfsParams,
    bytes: u64,
    aged: &dyn disk::BlockDevice,
) -> io::Result<Target> {
    let dev = device::prepare(medium, Some(bytes), &format!("{}-{}", e.id, system.name))?;
    rebuild::copy_image(aged, dev.dev.as_ref())?;
    let env = mount_env(e, system, &dev);
    let library = Library::<Ffs>::open(dev.dev.clone(), dev.sim.clone(), *params, env)?;
    let cpu = if settings.cpu_model { CpuModel::of(e.machine) } else { CpuModel::off() };
    Ok(target_on(dev, Box::new(library), cpu))
}

/// The realloc experiment on a mounted directory: aged in place by the
/// same stream (sized for the experiment's partition, not the whole file
/// system), its hot and recent files read and rewritten, and the sequential
/// benchmark beside them; no layout score (a directory has none).
fn realloc_on_dir(
    e: &Experiment,
    settings: &Settings,
    subject: &Subject<'_>,
    setup: &ReallocSetup,
    rec: &mut dyn Record,
) -> io::Result<()> {
    let mut t = open(e, settings, subject, None)?;
    let stream = AgingParams { fs_bytes: setup.partition, ..setup.stream };
    let mut generator = crate::aging::generate::Generator::new(stream);
    let options = crate::aging::run::RunOptions {
        max_ops: None,
        clock: None,
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
    };
    let summary = crate::aging::run::run(&mut t, &mut generator, options)?;
    let hot = crate::aging::run::hot_files(&summary.live, setup.hot_since());
    workload::hot_files::run(&mut t, &hot, &workload::hot_files::Spec::paper(), rec)?;
    let recent = crate::aging::run::most_recent(&summary.live, PAPER_HOT_SHARE);
    let spec = workload::hot_files::Spec { name: "recent", ..workload::hot_files::Spec::paper() };
    workload::hot_files::run(&mut t, &recent, &spec, rec)?;
    t.finish()?;
    let mut fresh = || open(e, settings, subject, None);
    workload::sequential::run(&mut fresh, &setup.sequential, rec)
}

/// A fresh FFS of `params` for `system` on a new device of `bytes`,
/// mounted: made and unmounted first, then, for the aged system, given
/// `maps` (1995 §5.3), then mounted again. The empty system goes through
/// the same unmount and mount, so that the two differ in their free space
/// only.
fn open_rebuilt(
    e: &Experiment,
    settings: &Settings,
    system: &System,
    medium: &Medium,
    params: &FfsParams,
    bytes: u64,
    maps: Option<&FreeMaps>,
) -> io::Result<Target> {
    let dev = device::prepare(medium, Some(bytes), &format!("{}-{}", e.id, system.name))?;
    let env = || mount_env(e, system, &dev);
    Library::<Ffs>::make(dev.dev.clone(), None, dev.sim.clone(), *params, env())?.finish()?;
    if let Some(maps) = maps {
        rebuild::impose(dev.dev.as_ref(), maps)?;
    }
    let library = Library::<Ffs>::open(dev.dev.clone(), dev.sim.clone(), *params, env())?;
    let cpu = if settings.cpu_model { CpuModel::of(e.machine) } else { CpuModel::off() };
    Ok(target_on(dev, Box::new(library), cpu))
}

/// The utilization of TPC-B's partition that the database alone makes:
/// the 1995 paper's lowest, 48%, where it measured LFS without the cleaner
/// ("measured on the lowest utilization (48%) and projected across").
/// The paper "scaled the benchmark database to allow experimentation with
/// disk utilization" (Table 3) and found FFS flat across utilizations
/// because "every disk write [...] merely overwrites an existing disk
/// block" (§4): the database stays where it is, and other data fills the
/// partition further. The 1993 runs at 80% use the same partition (the
/// 1995 paper ran "the same benchmark" and found the 1993 paper's loss).
const TPCB_DATABASE_ALONE: f64 = 0.48;

/// The utilizations TPC-B is run at.
fn tpcb_utilizations(e: &Experiment, quick: bool) -> Vec<f64> {
    match (e.workload, quick) {
        (Workload::TpcbAt80, _) => vec![80.0],
        (_, true) => vec![50.0, 80.0],
        (_, false) => vec![48.0, 56.0, 64.0, 72.0, 80.0],
    }
}

/// Runs `e`'s workload against one subject.
fn run_subject(
    e: &Experiment,
    settings: &Settings,
    subject: &Subject<'_>,
    rec: &mut dyn Record,
    progress: &mut Progress,
) -> io::Result<()> {
    let quick = settings.quick;
    let seed = settings.seed;
    let name = subject.name();
    let finish = |mut t: Target| t.finish();
    match e.workload {
        Workload::Bandwidth => {
            let mut spec =
                if quick { workload::bandwidth::Spec::quick() } else { workload::bandwidth::Spec::paper() };
            spec.mb = 1e6;
            let mut t = open(e, settings, subject, None)?;
            workload::bandwidth::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::SmallFiles => {
            let spec = if quick {
                workload::small_files::Spec::quick()
            } else {
                workload::small_files::Spec::paper()
            };
            let mut t = open(e, settings, subject, None)?;
            workload::small_files::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::LargeFile => {
            let spec = if quick {
                workload::large_file::Spec::quick(seed)
            } else {
                workload::large_file::Spec::paper(seed)
            };
            let mut t = open(e, settings, subject, None)?;
            workload::large_file::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::Sequential => {
            let spec =
                if quick { workload::sequential::Spec::quick() } else { workload::sequential::Spec::paper() };
            let mut sizes = spec.sizes.iter();
            let mut fresh = || {
                if let Some(size) = sizes.next() {
                    progress.step(&format!("{name} {}", human_bytes(*size)));
                }
                open(e, settings, subject, None)
            };
            workload::sequential::run(&mut fresh, &spec, rec)
        }
        Workload::AgedSequential => {
            let setup = AgedSetup::new(quick, seed);
            let mut sizes = setup.spec.sizes.iter();
            let Subject::System(system, medium) = subject else {
                // A mounted directory is benchmarked as its file system
                // stands: no free-space map can be given to it.
                let mut fresh = || {
                    if let Some(size) = sizes.next() {
                        progress.step(&format!("{name} {}", human_bytes(*size)));
                    }
                    open(e, settings, subject, None)
                };
                return workload::sequential::run(&mut fresh, &setup.spec, rec);
            };
            let Kind::Ffs(params) = system.kind else {
                return Err(io::Error::other(format!("{name}: the aged-FFS experiment runs FFS only")));
            };
            let maps = if system::is_aged(system.name) {
                progress.step(&format!("{name} aging"));
                let aged = rebuild::age_on_memory(&params, setup.partition, setup.stream)?;
                let util = aged.maps.utilisation();
                let score =
                    aged.summary.days.last().and_then(|d| d.score.as_ref()).and_then(|s| s.primary().score());
                rec.record("aged", 0.0, "used %", 100.0 * util);
                rec.note(format!(
                    "aged by {} ({} operations, {} MB written): {:.1}% of the data fragments in use, layout \
                     score (data+tail) {}",
                    aged.stream.describe(),
                    aged.summary.ops,
                    aged.summary.bytes_written >> 20,
                    100.0 * util,
                    score.map_or_else(|| "none".into(), |s| format!("{s:.3}")),
                ));
                Some(aged.maps)
            } else {
                None
            };
            let mut fresh = || {
                if let Some(size) = sizes.next() {
                    progress.step(&format!("{name} {}", human_bytes(*size)));
                }
                open_rebuilt(e, settings, system, medium, &params, setup.partition, maps.as_ref())
            };
            workload::sequential::run(&mut fresh, &setup.spec, rec)
        }
        Workload::AgedRealloc => {
            let setup = ReallocSetup::new(quick, seed);
            let Subject::System(system, medium) = subject else {
                return realloc_on_dir(e, settings, subject, &setup, rec);
            };
            let Kind::Ffs(params) = system.kind else {
                return Err(io::Error::other(format!("{name}: the realloc experiment runs FFS only")));
            };
            // Aged on a memory disk, benchmarked on the simulated one (see
            // `rebuild::age_image`): the clock moves only to each
            // operation's simulated time, so syncs fall in the stream's
            // idle gaps as `fslab age`'s do and the image is the one it
            // makes from the seed; on the simulated disk the drive's time
            // would run on top of the stream's, and modelling a million
            // aging writes costs host time no measured figure needs.
            progress.step(&format!("{name} aging"));
            let aged = rebuild::age_image(&params, setup.partition, setup.stream)?;
            let days = aged.summary.days.len() as u64;
            for day in &aged.summary.days {
                if !recorded_day(day.day, days) {
                    continue;
                }
                if let Some(score) = day.score.as_ref().and_then(|s| s.primary().score()) {
                    rec.record("aging", day.day as f64, "score", score);
                }
                rec.record("aging", day.day as f64, "used %", 100.0 * day.utilisation);
            }
            let hot = crate::aging::run::hot_files(&aged.summary.live, setup.hot_since());
            let live = aged.summary.live.len();
            let live_bytes: u64 = aged.summary.live.iter().map(|f| f.size).sum();
            let recent = crate::aging::run::most_recent(&aged.summary.live, PAPER_HOT_SHARE);
            let share = |files: &[crate::aging::run::LiveFile]| {
                let bytes: u64 = files.iter().map(|f| f.size).sum();
                format!(
                    "{} files ({:.1}%), {} MB ({:.1}% of the live bytes)",
                    files.len(),
                    100.0 * files.len() as f64 / live.max(1) as f64,
                    bytes >> 20,
                    100.0 * bytes as f64 / live_bytes.max(1) as f64
                )
            };
            let score =
                aged.summary.days.last().and_then(|d| d.score.as_ref()).and_then(|s| s.primary().score());
            rec.note(format!(
                "aged by {} ({} operations, {} MB written): layout score (data+tail) {} at the end; {} files \
                 live; hot (modified in the last {} days): {}; recent: {}",
                aged.stream.describe(),
                aged.summary.ops,
                aged.summary.bytes_written >> 20,
                score.map_or_else(|| "none".into(), |s| format!("{s:.3}")),
                live,
                setup.hot_days,
                share(&hot),
                share(&recent),
            ));
            for (files, spec) in [
                (&hot, workload::hot_files::Spec::paper()),
                (&recent, workload::hot_files::Spec { name: "recent", ..workload::hot_files::Spec::paper() }),
            ] {
                progress.step(&format!("{name} {} files", spec.name));
                let mut t =
                    open_aged_copy(e, settings, system, medium, &params, setup.partition, aged.dev.as_ref())?;
                workload::hot_files::run(&mut t, files, &spec, rec)?;
                finish(t)?;
            }
            let mut sizes = setup.sequential.sizes.iter();
            let mut fresh = || {
                if let Some(size) = sizes.next() {
                    progress.step(&format!("{name} {}", human_bytes(*size)));
                }
                open_aged_copy(e, settings, system, medium, &params, setup.partition, aged.dev.as_ref())
            };
            workload::sequential::run(&mut fresh, &setup.sequential, rec)
        }
        Workload::TpcbByUtilization | Workload::TpcbAt80 => {
            let mut spec =
                if quick { workload::tpcb::Spec::quick(seed) } else { workload::tpcb::Spec::paper(seed) };
            spec.cleaner = subject.cleans();
            if !subject.is_library() {
                let mut t = open(e, settings, subject, None)?;
                let x = 100.0 * t.usage()?.utilization();
                workload::tpcb::run(&mut t, &spec, x.round(), rec)?;
                return finish(t);
            }
            // One partition, on which the database alone is the 1995
            // paper's lowest utilization; other data brings it to each
            // higher one (see TPCB_DATABASE_ALONE).
            let bytes = partition_for(e, settings, subject, spec.database_bytes(), TPCB_DATABASE_ALONE)?;
            for u in tpcb_utilizations(e, quick) {
                progress.step(&format!("{name} at {u}%"));
                let mut t = open(e, settings, subject, Some(bytes))?;
                spec.fill_to = Some(u / 100.0);
                workload::tpcb::run(&mut t, &spec, u, rec)?;
                finish(t)?;
            }
            Ok(())
        }
        Workload::Andrew => {
            let mut spec =
                if quick { workload::andrew::Spec::quick() } else { workload::andrew::Spec::paper() };
            let bytes = if quick { 24 << 20 } else { 256 << 20 };
            if subject.is_library() {
                spec.fill_to = Some(0.8);
            }
            if subject.cleans() {
                // The paper's LFSC: enough runs to overwrite the file system twice.
                spec.runs = if quick { 3 } else { 100 };
            }
            let mut t = open(e, settings, subject, Some(bytes))?;
            workload::andrew::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::MhFolder => {
            let spec = if quick {
                workload::mh_folder::Spec::quick(seed)
            } else {
                workload::mh_folder::Spec::paper(seed)
            };
            let mut t = open(e, settings, subject, partition(e, quick))?;
            workload::mh_folder::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::Microbench => {
            let spec =
                if quick { workload::microbench::Spec::quick() } else { workload::microbench::Spec::paper() };
            let mut sizes = spec.sizes.iter();
            let mut fresh = || {
                match sizes.next() {
                    Some(size) => progress.step(&format!("{name} {}", human_bytes(*size))),
                    None => progress.step(&format!("{name} create/delete")),
                }
                open(e, settings, subject, partition(e, quick))
            };
            workload::microbench::run(&mut fresh, &spec, rec)
        }
        Workload::PostMark | Workload::PostMarkLarge => {
            use workload::postmark::Spec;
            let spec = match (e.workload, quick) {
                (Workload::PostMark, true) => Spec::quick(seed),
                (_, true) => Spec { files: 1_500, ..Spec::quick(seed) },
                (Workload::PostMark, false) => Spec::paper(seed),
                (_, false) => Spec::large(seed),
            };
            let mut t = open(e, settings, subject, partition(e, quick))?;
            workload::postmark::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::SshBuild => {
            let spec =
                if quick { workload::ssh_build::Spec::quick() } else { workload::ssh_build::Spec::paper() };
            let mut t = open(e, settings, subject, partition(e, quick))?;
            workload::ssh_build::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::Netnews => {
            let spec = if quick {
                workload::netnews::Spec::quick(seed)
            } else {
                workload::netnews::Spec::paper(seed)
            };
            let mut t = open(e, settings, subject, partition(e, quick))?;
            workload::netnews::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::Sdet => {
            let spec =
                if quick { workload::sdet::Spec::quick(seed) } else { workload::sdet::Spec::paper(seed) };
            for &users in &spec.users {
                progress.step(&format!("{name} {users} users"));
                let mut t = open(e, settings, subject, partition(e, quick))?;
                workload::sdet::one_level(&mut t, &spec, users, rec)?;
                finish(t)?;
            }
            Ok(())
        }
        Workload::Buildworld => {
            use workload::buildworld::Spec;
            let spec = if quick { Spec::quick() } else { Spec::paper() };
            let mut t = open(e, settings, subject, partition(e, quick))?;
            workload::buildworld::run(&mut t, &spec, rec)?;
            finish(t)
        }
        Workload::DirOps => {
            let spec =
                if quick { workload::dirops::Spec::quick(seed) } else { workload::dirops::Spec::paper(seed) };
            let mut t = open(e, settings, subject, None)?;
            workload::dirops::run(&mut t, &spec, rec)?;
            finish(t)
        }
    }
}

/// The partition the 2000 and 2002 papers' workloads run on: the start of
/// the drive, smaller than the whole (which makes each fresh file system
/// slower to make and changes no result of theirs: a folder or 128 MB of
/// files stays in the first cylinder groups), smaller still for `--quick`.
fn partition(e: &Experiment, quick: bool) -> Option<u64> {
    match (e.workload, quick) {
        // The 2000 paper's macrobenchmarks ran on its 9 GB test partition
        // with the log partition after it (Table 3): the whole drive.
        (Workload::PostMark | Workload::SshBuild | Workload::Netnews | Workload::Sdet, true) => {
            Some(256 << 20)
        }
        (
            Workload::PostMark
            | Workload::PostMarkLarge
            | Workload::SshBuild
            | Workload::Netnews
            | Workload::Sdet,
            false,
        ) => None,
        (Workload::MhFolder | Workload::Microbench, true) => Some(256 << 20),
        // The paper's /usr was the test partition, size not given: the
        // whole drive (old dirpref spreads directories over all of it).
        (Workload::Buildworld, true) => Some(512 << 20),
        (Workload::MhFolder | Workload::Microbench, false) => Some(2 << 30),
        _ => None,
    }
}

/// Adds, for an experiment normalized to a system (`relative_to`), every
/// system's time relative to it in each phase and x both measured: the
/// base's seconds over the system's ([`RELATIVE`]; above 1 is faster).
pub fn derive_relative(e: &Experiment, results: &mut Results) {
    let Some(base) = relative_to(e) else { return };
    let derived: Vec<Point> = results
        .points
        .iter()
        .filter(|p| p.experiment == e.id && p.metric == "s" && p.value > 0.0)
        .filter_map(|p| {
            let b = results.value(e.id, base, &p.phase, "s", p.x)?;
            Some(Point {
                experiment: e.id.to_string(),
                seed: p.seed,
                system: p.system.clone(),
                phase: p.phase.clone(),
                x: p.x,
                metric: RELATIVE.to_string(),
                value: b / p.value,
            })
        })
        .collect();
    results.points.extend(derived);
}

/// Adds, for the aged-FFS experiment ([`aged_pair`]), the aged system's
/// MB/s over the empty one's in each phase and size both measured
/// ([`OF_EMPTY`]; 1995 Fig. 8's "percentage of the throughput").
pub fn derive_of_empty(e: &Experiment, results: &mut Results) {
    let Some((aged, empty)) = aged_pair(e) else { return };
    let derived: Vec<Point> = results
        .points
        .iter()
        .filter(|p| p.experiment == e.id && p.system == aged && p.metric == "MB/s")
        .filter_map(|p| {
            let base = results.value(e.id, empty, &p.phase, "MB/s", p.x).filter(|b| *b > 0.0)?;
            Some(Point { metric: OF_EMPTY.to_string(), value: p.value / base, ..p.clone() })
        })
        .collect();
    results.points.extend(derived);
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

/// Adds `e`'s factors (see [`factors`]) from the files/s its systems
/// measured: one point per phase both systems of a factor measured.
pub fn derive_factors(e: &Experiment, results: &mut Results) {
    let mut derived = Vec::new();
    for f in factors(e) {
        for p in results.points.iter().filter(|p| {
            p.experiment == e.id && p.system == f.faster && p.metric == "files/s" && p.value > 0.0
        }) {
            if let Some(slower) = results.value(e.id, f.slower, &p.phase, "files/s", p.x) {
                if slower > 0.0 {
                    derived.push(Point {
                        experiment: e.id.to_string(),
                        seed: p.seed,
                        system: f.faster.to_string(),
                        phase: p.phase.clone(),
                        x: p.x,
                        metric: f.metric.to_string(),
                        value: p.value / slower,
                    });
                }
            }
        }
    }
    results.points.extend(derived);
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
    crate::factorial::derive(e, &mut results);
    let clock = match (&settings.place, medium.is_virtual()) {
        (Place::Real(_), _) | (_, false) => "wall",
        _ => "virtual",
    };
    results.runs.push(RunInfo {
        experiment: e.id.into(),
        disk: if matches!(settings.place, Place::Real(_)) { "real".into() } else { medium.name() },
        clock: clock.into(),
        cpu_model: if settings.cpu_model && clock == "virtual" {
            e.machine.name.into()
        } else {
            "off".into()
        },
        seed: settings.seed,
        quick: settings.quick,
        host_seconds: started.elapsed().as_secs_f64(),
        notes,
    });
    results
}
