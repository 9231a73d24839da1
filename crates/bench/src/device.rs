//! The devices experiments run on: a simulated disk of the papers (virtual
//! time), a memory disk or an image file (wall time), optionally cut to a
//! partition at its start (the TPC-B and Andrew runs set a utilization by
//! the partition's size).

use crate::config::{DiskTuning, DriveTuning};
use disk::{BlockDevice, DiskModel, FileDisk, MemDisk, SimDisk, SimOptions, VirtualClock};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to run the library on.
#[derive(Debug, Clone, PartialEq)]
pub enum Medium {
    /// A simulated drive of the catalogue (`DiskModel::by_name`), on
    /// virtual time.
    Sim {
        /// The drive's name.
        model: String,
        /// Seeds the rotational phase.
        seed: u64,
        /// A sensitivity run's changes to the drive (none by default);
        /// boxed, being many times the size of the other variants.
        tuning: Box<DiskTuning>,
    },
    /// A disk in memory, on wall time.
    Memory,
    /// An image file in this directory, on wall time.
    Image(PathBuf),
}

impl Medium {
    /// A name for reports: the drive's, `mem` or `file`.
    pub fn name(&self) -> String {
        match self {
            Medium::Sim { model, .. } => model.clone(),
            Medium::Memory => "mem".into(),
            Medium::Image(_) => "file".into(),
        }
    }

    /// Whether runs on it keep virtual time.
    pub fn is_virtual(&self) -> bool {
        matches!(self, Medium::Sim { .. })
    }

    /// Drive `model` of the catalogue, with its default seed and no
    /// changes.
    pub fn sim(model: &str) -> Medium {
        Medium::Sim { model: model.to_string(), seed: 1, tuning: Box::default() }
    }
}

/// Drive `model` of the catalogue as `tuning` changes it.
pub fn drive(model: &str, tuning: &DriveTuning) -> io::Result<DiskModel> {
    let mut drive = DiskModel::by_name(model).ok_or_else(|| unknown_model(model))?;
    tuning.apply(&mut drive);
    Ok(drive)
}

/// The capacity of drive `model`, as `tuning` changes it, in bytes.
pub fn model_bytes(model: &str, tuning: &DriveTuning) -> io::Result<u64> {
    let clock = Arc::new(VirtualClock::new());
    Ok(SimDisk::new(drive(model, tuning)?, clock)?.size())
}

fn unknown_model(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("unknown disk model {name} (known: {}, mem, file)", DiskModel::names().join(", ")),
    )
}

/// A device ready for a run. An image file is removed when this is dropped.
pub struct Device {
    /// The device the file system is made on (maybe a partition).
    pub dev: Arc<dyn BlockDevice>,
    /// The simulated disk, for its counters.
    pub sim: Option<Arc<SimDisk>>,
    /// The virtual clock, on a simulated disk.
    pub clock: Option<Arc<VirtualClock>>,
    image: Option<PathBuf>,
}

impl Drop for Device {
    fn drop(&mut self) {
        if let Some(path) = self.image.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A second device for a journal's log (LFFS-wafs-2's third disk), of
/// `bytes`, beside `data` on `medium`: on a simulated medium, the first
/// `bytes` of another drive of the same model on the same virtual clock
/// (its own seed, so its rotation is not the first one's; the medium's
/// `[disk.log]` changes on top of its `[disk]` ones); otherwise a memory
/// disk or an image file like the first.
pub fn prepare_log(
    medium: &Medium,
    data: &Device,
    bytes: u64,
    tag: &str,
) -> io::Result<Arc<dyn BlockDevice>> {
    match (medium, &data.clock) {
        (Medium::Sim { model, seed, tuning }, Some(clock)) => {
            let mut drive = drive(model, &tuning.drive)?;
            tuning.log.apply(&mut drive);
            let options = SimOptions { seed: seed.wrapping_add(1), ..SimOptions::default() };
            let whole: Arc<dyn BlockDevice> = Arc::new(SimDisk::with_options(drive, clock.clone(), options)?);
            Ok(Arc::new(Partition::new(whole, bytes)))
        }
        _ => {
            let mut log = prepare(medium, Some(bytes), &format!("{tag}-log"))?;
            // The image file goes when the data device does: the log
            // device outlives this `Device`, so it keeps the file's path.
            let dev = log.dev.clone();
            if let Some(path) = log.image.take() {
                return Ok(Arc::new(RemovedWhenDropped { dev, path }));
            }
            Ok(dev)
        }
    }
}

/// A device whose image file is removed when it is dropped.
struct RemovedWhenDropped {
    dev: Arc<dyn BlockDevice>,
    path: PathBuf,
}

impl Drop for RemovedWhenDropped {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl BlockDevice for RemovedWhenDropped {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.dev.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.dev.write_at(offset, buf)
    }
    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        self.dev.write_vectored_at(offset, bufs)
    }
    fn flush(&self) -> io::Result<()> {
        self.dev.flush()
    }
    fn joins_writes(&self) -> bool {
        self.dev.joins_writes()
    }
    fn size(&self) -> u64 {
        self.dev.size()
    }
}

/// A fresh device on `medium`: the whole drive, or its first `bytes` when
/// given (a memory disk or image file must be given a size). `tag` names
/// an image file.
pub fn prepare(medium: &Medium, bytes: Option<u64>, tag: &str) -> io::Result<Device> {
    match medium {
        Medium::Sim { model, seed, tuning } => {
            let drive = drive(model, &tuning.drive)?;
            let clock = Arc::new(VirtualClock::new());
            let sim = Arc::new(SimDisk::with_options(
                drive,
                clock.clone(),
                SimOptions { seed: *seed, ..SimOptions::default() },
            )?);
            let whole: Arc<dyn BlockDevice> = sim.clone();
            let dev = match bytes {
                Some(b) if b < sim.size() => Arc::new(Partition::new(whole, b)) as Arc<dyn BlockDevice>,
                _ => whole,
            };
            Ok(Device { dev, sim: Some(sim), clock: Some(clock), image: None })
        }
        Medium::Memory => {
            let bytes = bytes.ok_or_else(|| io::Error::other("a memory disk needs a size"))?;
            Ok(Device { dev: Arc::new(MemDisk::new(bytes)), sim: None, clock: None, image: None })
        }
        Medium::Image(dir) => {
            let bytes = bytes.ok_or_else(|| io::Error::other("an image file needs a size"))?;
            let path = image_path(dir, tag);
            let dev = FileDisk::create(&path, bytes)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            Ok(Device { dev: Arc::new(dev), sim: None, clock: None, image: Some(path) })
        }
    }
}

fn image_path(dir: &Path, tag: &str) -> PathBuf {
    dir.join(format!("fslab-bench-{}-{tag}.img", std::process::id()))
}

/// The first `size` bytes of a device, as a device.
pub struct Partition {
    inner: Arc<dyn BlockDevice>,
    size: u64,
}

impl Partition {
    /// The first `size` bytes of `inner` (rounded down to 4 KiB).
    pub fn new(inner: Arc<dyn BlockDevice>, size: u64) -> Partition {
        let size = size.min(inner.size()) / 4096 * 4096;
        Partition { inner, size }
    }
}

impl BlockDevice for Partition {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        disk::check_bounds(offset, buf.len(), self.size)?;
        self.inner.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        disk::check_bounds(offset, buf.len(), self.size)?;
        self.inner.write_at(offset, buf)
    }

    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        let len = bufs.iter().map(|b| b.len()).sum();
        disk::check_bounds(offset, len, self.size)?;
        self.inner.write_vectored_at(offset, bufs)
    }

    fn flush(&self) -> io::Result<()> {
        self.inner.flush()
    }

    fn read_ahead(&self, offset: u64, len: usize) -> io::Result<()> {
        disk::check_bounds(offset, len, self.size)?;
        self.inner.read_ahead(offset, len)
    }

    fn takes_read_ahead(&self) -> bool {
        self.inner.takes_read_ahead()
    }

    fn joins_writes(&self) -> bool {
        self.inner.joins_writes()
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_refuses_what_lies_past_it() {
        let dev = prepare(&Medium::sim("hp97560"), Some(1 << 20), "t").expect("device");
        assert_eq!(dev.dev.size(), 1 << 20);
        assert!(dev.dev.write_at((1 << 20) - 512, &[0u8; 512]).is_ok());
        assert!(dev.dev.write_at(1 << 20, &[0u8; 512]).is_err());
        assert!(prepare(&Medium::sim("rk05"), None, "t").is_err());
        assert!(model_bytes("dsp3105", &DriveTuning::default()).expect("size") > 1_000_000_000);
    }
}
