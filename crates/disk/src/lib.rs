//! Block devices: the bottom layer of fslab.
//!
//! This crate owns the bytes on a device and nothing else. It offers the
//! [`BlockDevice`] trait and its contract, [`FileDisk`] (an image file or a
//! block device), [`MemDisk`] (a vector in memory), [`CrashDisk`] (replays
//! power cuts), [`ReadOnlyOverlay`] (keeps writes in memory, for read-only
//! mounts), [`DevicePair`] (a second device after the first, as a journal's
//! log device) and [`SimDisk`] (a simulated 1990s disk on a virtual clock,
//! module [`sim`]). It knows no file-system structure: every caller speaks in
//! byte offsets and lengths.

mod aligned;
mod counting;
mod crash;
mod faulty;
mod file;
mod mem;
mod overlay;
mod pair;
pub mod sim;
pub mod splitmix;

pub use aligned::{all_aligned, AlignedBytes, DIRECT_ALIGN};
pub use counting::CountingDisk;
pub use crash::{CrashChoice, CrashDisk, CrashState, CrashStates, Persist, RecordedWrite, EXHAUSTIVE_LIMIT};
pub use faulty::FaultyDisk;
pub use file::{FileDisk, DIRECT_READ_MIN};
pub use mem::MemDisk;
pub use overlay::ReadOnlyOverlay;
pub use pair::DevicePair;
pub use sim::{DiskModel, SimDisk, SimOptions, VirtualClock};

use std::io;

/// The size of a sector: the unit the device writes atomically.
pub const SECTOR_SIZE: u64 = 512;

/// A device that stores bytes at offsets.
///
/// # Contract
///
/// * **Atomicity.** A write of an aligned 512-byte sector either happens
///   entirely or not at all, even across a power cut. A larger write may be torn
///   at any sector boundary: after a crash any subset of its sectors may hold
///   the new bytes.
/// * **Ordering.** Writes issued before a [`flush`](BlockDevice::flush) are
///   durable once `flush` returns. Writes not yet followed by a returned flush
///   may be lost, or reach the medium in any order, if the power fails.
/// * **Visibility.** A read always sees the latest write to the same bytes,
///   whether or not it has been flushed.
/// * **Bounds.** Reads and writes past [`size`](BlockDevice::size) fail with
///   an error of kind `InvalidInput`; they never extend the device.
///
/// Implementations are shared between threads; each call is independent.
pub trait BlockDevice: Send + Sync {
    /// Reads `buf.len()` bytes starting at byte `offset`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// Writes all of `buf` at byte `offset`. Not durable until a later flush.
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()>;

    /// Writes the buffers one after another starting at byte `offset`, as if
    /// they were one buffer: one request to the device where it can be.
    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        let mut at = offset;
        for buf in bufs {
            self.write_at(at, buf)?;
            at += buf.len() as u64;
        }
        Ok(())
    }

    /// A flush barrier: every write that returned before this call is durable
    /// when it returns.
    fn flush(&self) -> io::Result<()>;

    /// A hint that `len` bytes at `offset` will be read soon: a device may
    /// start reading them now, without the caller waiting (a posted read,
    /// as 4.4BSD's read-ahead issued the next cluster's read
    /// asynchronously), so that a later [`read_at`](BlockDevice::read_at)
    /// of them finishes sooner. It changes no contents and returns nothing;
    /// the default does nothing.
    fn read_ahead(&self, _offset: u64, _len: usize) -> io::Result<()> {
        Ok(())
    }

    /// Whether [`read_ahead`](BlockDevice::read_ahead) does anything here,
    /// so that a caller can skip working out what to read ahead (default:
    /// no).
    fn takes_read_ahead(&self) -> bool {
        false
    }

    /// Whether writes that lie one after another on it are best sent as
    /// one, whatever buffers they come from: yes (the default) where each
    /// request costs a system call and nothing more, as on an image file
    /// or a block device; no on a simulated disk that charges each request
    /// as the papers' disks did, so that a layout issues there the
    /// requests its paper's system issued.
    fn joins_writes(&self) -> bool {
        true
    }

    /// The device's size in bytes.
    fn size(&self) -> u64;
}

/// Checks that `len` bytes at `offset` lie inside a device of `size` bytes.
pub fn check_bounds(offset: u64, len: usize, size: u64) -> io::Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("access of {len} bytes at offset {offset} is past the end of the device ({size} bytes)"),
        )),
    }
}

/// A shared or boxed device is a device: every call goes to the one inside.
macro_rules! forward_block_device {
    ($($wrapper:ty),*) => {$(
        impl<T: BlockDevice + ?Sized> BlockDevice for $wrapper {
            fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
                (**self).read_at(offset, buf)
            }
            fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
                (**self).write_at(offset, buf)
            }
            fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
                (**self).write_vectored_at(offset, bufs)
            }
            fn flush(&self) -> io::Result<()> {
                (**self).flush()
            }
            fn read_ahead(&self, offset: u64, len: usize) -> io::Result<()> {
                (**self).read_ahead(offset, len)
            }
            fn takes_read_ahead(&self) -> bool {
                (**self).takes_read_ahead()
            }
            fn joins_writes(&self) -> bool {
                (**self).joins_writes()
            }
            fn size(&self) -> u64 {
                (**self).size()
            }
        }
    )*};
}

forward_block_device!(std::sync::Arc<T>, Box<T>);
