//! The aged images of the aged-FFS (1995 §5) and realloc (1997 §4-5)
//! experiments: how each runs, full or `--quick`, and opening a copy of an
//! aged image, an image rebuilt from an aged free-space map, or a realloc
//! run on a mounted directory.

use super::open::{mount_env, open, target_on, Subject};
use super::Settings;
use crate::aging::generate::Params as AgingParams;
use crate::aging::rebuild::{self, FreeMaps};
use crate::cpu::CpuModel;
use crate::device::{self, Medium};
use crate::experiment::Experiment;
use crate::system::{FfsParams, System};
use crate::target::library::Library;
use crate::target::{Backend, Target};
use crate::workload::{self, Record};
use fslab::ffs::Ffs;
use std::io;

/// How the aged-FFS experiment (1995 §5) runs, full or `--quick`.
pub(super) struct AgedSetup {
    /// The benchmark: create and read, 25 files a directory.
    pub(super) spec: workload::sequential::Spec,
    /// Bytes of the partition, aged and benchmarked alike.
    pub(super) partition: u64,
    /// The aging stream (its `fs_bytes` is the file system's, set when
    /// aging begins).
    pub(super) stream: AgingParams,
}

impl AgedSetup {
    /// The paper's benchmark (32 MB per size) on 372 MB, 31 groups of 12
    /// MB (Table 4's staff: 353 MB, 31 groups), aged 300 days writing 100
    /// times the file system (`fslab age`'s defaults, the 1997 paper's
    /// ten months); `--quick`: 4 MB per size on 48 MB aged 30 days at 10
    /// times, a few seconds of host time.
    pub(super) fn new(quick: bool, seed: u64) -> AgedSetup {
        let (spec, partition, days, write_factor) = if quick {
            (workload::sequential::Spec::aged_quick(), 48 << 20, 30, 10)
        } else {
            (workload::sequential::Spec::aged(), 372 << 20, 300, 100)
        };
        AgedSetup { spec, partition, stream: AgingParams { seed, fs_bytes: 0, days, write_factor } }
    }
}

/// How the realloc experiment (1997 §4–5) runs, full or `--quick`.
pub(super) struct ReallocSetup {
    /// The sequential benchmark (§5.1).
    pub(super) sequential: workload::sequential::Spec,
    /// Bytes of the partition, aged and benchmarked alike.
    pub(super) partition: u64,
    /// The aging stream (its `fs_bytes` is the file system's, set when
    /// aging begins).
    pub(super) stream: AgingParams,
    /// The hot files are those modified in the stream's last this many
    /// days.
    pub(super) hot_days: u64,
}

impl ReallocSetup {
    /// The paper's 502 MB (Table 1; 502 MiB, as `docs/lab/aging.md` makes
    /// it), aged 300 days writing 100 times the file system (`fslab age`'s
    /// defaults, the paper's ten months), hot files of the last 30 days
    /// ("the last month", §5.2); `--quick`: 48 MB aged 30 days at 10 times,
    /// hot files of the last 3, a few seconds of host time.
    pub(super) fn new(quick: bool, seed: u64) -> ReallocSetup {
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
    pub(super) fn hot_since(&self) -> u64 {
        self.stream.days.saturating_sub(self.hot_days) * crate::aging::ops::DAY
    }
}

/// The share of the aged file system's files the 1997 paper found hot
/// (§5.2: 929 of 8774). The realloc experiment also benchmarks that share
/// of its most recently modified files (`recent`), since the synthetic
/// stream's last month touches nearly every file (`docs/lab/aging.md`).
pub(super) const PAPER_HOT_SHARE: f64 = 929.0 / 8774.0;

/// Whether day `day` of `days` is one the realloc experiment records the
/// layout score of: the first, every tenth, and the last (`docs/lab/aging.md`'s
/// table; the report would otherwise carry 300 rows a system).
pub(super) fn recorded_day(day: u64, days: u64) -> bool {
    day.is_multiple_of(10) || day + 1 == days
}

/// A copy of the aged image on `aged` on a new device of `bytes` for
/// `system`, mounted with `params` (the image's geometry and allocator are
/// its own; the mount's integrity mode and cache are `params`' and the
/// machine's).
pub(super) fn open_aged_copy(
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
    let machine = settings.machine(e);
    let env = mount_env(&machine, system, &dev);
    let library = Library::<Ffs>::open(dev.dev.clone(), dev.sim.clone(), *params, env)?;
    let cpu = CpuModel::with(settings.cpu_model, machine);
    Ok(target_on(dev, Box::new(library), cpu))
}

/// The realloc experiment on a mounted directory: aged in place by the
/// same stream (sized for the experiment's partition, not the whole file
/// system), its hot and recent files read and rewritten, and the sequential
/// benchmark beside them; no layout score (a directory has none).
pub(super) fn realloc_on_dir(
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
        placement: crate::aging::run::Placement::Namespace,
        stop: None,
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
pub(super) fn open_rebuilt(
    e: &Experiment,
    settings: &Settings,
    system: &System,
    medium: &Medium,
    params: &FfsParams,
    bytes: u64,
    maps: Option<&FreeMaps>,
) -> io::Result<Target> {
    let dev = device::prepare(medium, Some(bytes), &format!("{}-{}", e.id, system.name))?;
    let machine = settings.machine(e);
    let env = || mount_env(&machine, system, &dev);
    Library::<Ffs>::make(dev.dev.clone(), None, dev.sim.clone(), *params, env())?.finish()?;
    if let Some(maps) = maps {
        rebuild::impose(dev.dev.as_ref(), maps)?;
    }
    let library = Library::<Ffs>::open(dev.dev.clone(), dev.sim.clone(), *params, env())?;
    let cpu = CpuModel::with(settings.cpu_model, machine);
    Ok(target_on(dev, Box::new(library), cpu))
}
