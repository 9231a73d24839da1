//! Opening a fresh target for one subject of an experiment (a system of
//! the registry on the experiment's medium, or a mounted directory): the
//! medium and its size, the mount's clock and cache, and a partition sized
//! to a utilization as `statfs` counts it.

use super::{Place, RealDir, Settings};
use crate::config::{DiskTuning, DriveTuning};
use crate::cpu::{CpuModel, Machine};
use crate::device::{self, Medium};
use crate::experiment::{dirhash_off, Experiment};
use crate::system::{self, Kind, System};
use crate::target::dir::Dir;
use crate::target::library::MountEnv;
use crate::target::raw::Raw;
use crate::target::Backend;
use crate::target::Target;
use fslab::time::TimeSource;
use std::io;

/// What an experiment runs against.
pub(super) enum Subject<'a> {
    /// A system of the registry, on `medium`.
    System(&'static System, &'a Medium),
    /// A mounted directory.
    Dir(&'a RealDir),
}

impl Subject<'_> {
    pub(super) fn name(&self) -> String {
        match self {
            Subject::System(s, _) => s.name.to_string(),
            Subject::Dir(d) => d.name.clone(),
        }
    }

    pub(super) fn cleans(&self) -> bool {
        match self {
            Subject::System(s, _) => matches!(s.kind, Kind::Lfs(p) if p.cleaner.is_some()),
            Subject::Dir(_) => false,
        }
    }

    pub(super) fn is_library(&self) -> bool {
        matches!(self, Subject::System(..))
    }
}

/// The medium an experiment's systems run on. A simulated drive chosen
/// for every experiment takes the run's seed, whatever seed it was named
/// with, so that each seed of `--seeds` turns the disks to a new phase,
/// and the configuration file's changes, if any.
pub(super) fn medium_for(e: &Experiment, settings: &Settings) -> Medium {
    let tuning: Box<DiskTuning> =
        Box::new(settings.config.as_ref().map(|c| c.disk.clone()).unwrap_or_default());
    let sim =
        |model: &str| Medium::Sim { model: model.to_string(), seed: settings.seed, tuning: tuning.clone() };
    match &settings.place {
        Place::Medium(Medium::Sim { model, .. }) => sim(model),
        Place::Medium(m) => m.clone(),
        _ if e.disk == "mem" => Medium::Memory,
        _ => sim(e.disk),
    }
}

/// Bytes of a device on `medium` for `e` when the workload does not say:
/// the paper's drive's capacity (memory disks: 256 MiB).
fn default_bytes(e: &Experiment, medium: &Medium) -> io::Result<u64> {
    match medium {
        Medium::Sim { model, tuning, .. } => device::model_bytes(model, &tuning.drive),
        _ if e.disk == "mem" => Ok(256 << 20),
        _ => device::model_bytes(e.disk, &DriveTuning::default()),
    }
}

/// Opens a fresh target for `subject`: a new device of `bytes` (or the
/// default) with a new file system, or a new directory in a mount.
pub(super) fn open(
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
    let machine = settings.machine(e);
    let cpu = CpuModel::with(settings.cpu_model, machine);
    let backend: Box<dyn Backend> = match system.kind {
        Kind::Raw => {
            let charge = dev.clock.clone().map(|c| (c, cpu));
            Box::new(Raw::new(dev.dev.clone(), dev.sim.clone(), charge, 8))
        }
        _ => {
            let env = mount_env(&machine, system, &dev);
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

/// How `system` is mounted on `dev`: on the simulated disk's clock
/// (deterministic) or on wall time, with `machine`'s cache.
pub(super) fn mount_env(machine: &Machine, system: &System, dev: &device::Device) -> MountEnv {
    MountEnv {
        clock: dev.clock.clone().map_or_else(TimeSource::wall, TimeSource::virtual_clock),
        deterministic: dev.clock.is_some(),
        cache_bytes: machine.cache_bytes(system.block_size()),
    }
}

/// `backend` on `dev`: in virtual time, charging `cpu`, on a simulated
/// disk; in wall time otherwise. The target keeps the device.
pub(super) fn target_on(dev: device::Device, backend: Box<dyn Backend>, cpu: CpuModel) -> Target {
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
pub(super) fn partition_for(
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
