//! A device with faults a test chooses: reads of a byte range that fail, as
//! a bad sector's do, and a power cut after a number of flush barriers or
//! of writes, after which every write and barrier fails while the medium
//! keeps what came before (and, if asked, the first sectors of the write
//! the cut fell in). For tests of what a file system or its checker does when
//! the device, not the data, goes wrong (`CrashDisk` explores the states a
//! cut can leave; this one lets the code run on past the fault).

use crate::BlockDevice;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// `inner`, with the faults set by [`FaultyDisk::failing_reads`],
/// [`FaultyDisk::cut_after_flushes`], [`FaultyDisk::cut_after_writes`] and
/// [`FaultyDisk::fail_writes`].
pub struct FaultyDisk<D> {
    inner: D,
    bad_reads: Range<u64>,
    /// Flushes left before the cut; `u64::MAX` for none.
    flushes_left: AtomicU64,
    /// Writes left before the cut; `u64::MAX` for none.
    writes_left: AtomicU64,
    /// Bytes of the write the cut falls in that reach the medium.
    torn_bytes: u64,
    /// The write the cut fell in has been torn.
    torn: AtomicBool,
    /// Writes touching this range fail, so many more times
    /// ([`FaultyDisk::fail_writes`]).
    bad_writes: Mutex<(Range<u64>, u64)>,
}

impl<D: BlockDevice> FaultyDisk<D> {
    /// `inner` without faults yet.
    pub fn new(inner: D) -> FaultyDisk<D> {
        FaultyDisk {
            inner,
            bad_reads: 0..0,
            flushes_left: AtomicU64::new(u64::MAX),
            writes_left: AtomicU64::new(u64::MAX),
            torn_bytes: 0,
            torn: AtomicBool::new(false),
            bad_writes: Mutex::new((0..0, 0)),
        }
    }

    /// From now on, the next `times` writes that touch bytes `range` fail
    /// with EIO (writing nothing), as a sector the drive cannot write.
    /// Settable while the device is in use.
    pub fn fail_writes(&self, range: Range<u64>, times: u64) {
        *self.bad_writes.lock().unwrap_or_else(PoisonError::into_inner) = (range, times);
    }

    fn write_fails(&self, offset: u64, len: u64) -> bool {
        let mut bad = self.bad_writes.lock().unwrap_or_else(PoisonError::into_inner);
        let (range, times) = &mut *bad;
        let touches = offset < range.end && range.start < offset + len;
        if touches && *times > 0 {
            *times -= 1;
            return true;
        }
        false
    }

    /// Reads that touch bytes `range` fail with EIO.
    pub fn failing_reads(self, range: Range<u64>) -> FaultyDisk<D> {
        FaultyDisk { bad_reads: range, ..self }
    }

    /// The power is cut after `flushes` more barriers succeed.
    pub fn cut_after_flushes(self, flushes: u64) -> FaultyDisk<D> {
        self.flushes_left.store(flushes, Ordering::SeqCst);
        self
    }

    /// The power is cut after `writes` more writes succeed; of the write
    /// it falls in, the first `torn_bytes` bytes (whole sectors of 512)
    /// reach the medium, as a drive's sectors land one by one.
    pub fn cut_after_writes(self, writes: u64, torn_bytes: u64) -> FaultyDisk<D> {
        self.writes_left.store(writes, Ordering::SeqCst);
        FaultyDisk { torn_bytes: torn_bytes / 512 * 512, ..self }
    }

    fn cut(&self) -> bool {
        self.flushes_left.load(Ordering::SeqCst) == 0 || self.writes_left.load(Ordering::SeqCst) == 0
    }

    /// Counts a write against the cut; whether it may go whole.
    fn write_allowed(&self) -> bool {
        let counted = self
            .writes_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n != u64::MAX && n > 0).then(|| n - 1));
        counted.is_ok() || counted == Err(u64::MAX)
    }
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

impl<D: BlockDevice> BlockDevice for FaultyDisk<D> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if offset < self.bad_reads.end && self.bad_reads.start < offset + buf.len() as u64 {
            return Err(eio());
        }
        self.inner.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        if self.write_fails(offset, buf.len() as u64) || self.flushes_left.load(Ordering::SeqCst) == 0 {
            return Err(eio());
        }
        if !self.write_allowed() {
            // The write the cut falls in: only its first sectors land.
            let torn = (self.torn_bytes as usize).min(buf.len());
            if torn > 0 && !self.torn.swap(true, Ordering::SeqCst) {
                self.inner.write_at(offset, &buf[..torn])?;
            }
            return Err(eio());
        }
        self.inner.write_at(offset, buf)
    }

    fn flush(&self) -> io::Result<()> {
        if self.cut() {
            return Err(eio());
        }
        self.inner.flush()?;
        let _ = self.flushes_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n != u64::MAX).then(|| n.saturating_sub(1))
        });
        Ok(())
    }

    fn joins_writes(&self) -> bool {
        self.inner.joins_writes()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemDisk;

    #[test]
    fn reads_of_the_range_fail_and_the_cut_comes_after_its_flushes() {
        let disk = FaultyDisk::new(MemDisk::new(8192)).failing_reads(512..1024).cut_after_flushes(1);
        let mut buf = [0u8; 512];
        disk.read_at(0, &mut buf).expect("before the range");
        assert!(disk.read_at(1000, &mut buf).is_err(), "overlapping the range");
        disk.write_at(0, &[1u8; 512]).expect("before the cut");
        disk.flush().expect("the one flush");
        assert!(disk.write_at(0, &[2u8; 512]).is_err(), "after the cut");
        assert!(disk.flush().is_err());
        disk.read_at(0, &mut buf).expect("reads go on");
        assert_eq!(buf, [1u8; 512], "the medium keeps what came before");
    }

    #[test]
    fn the_cut_after_writes_tears_the_write_it_falls_in() {
        let disk = FaultyDisk::new(MemDisk::new(8192)).cut_after_writes(1, 700);
        disk.write_at(0, &[1u8; 1024]).expect("the one write");
        assert!(disk.write_at(1024, &[2u8; 2048]).is_err(), "the write the cut falls in");
        assert!(disk.write_at(4096, &[3u8; 512]).is_err(), "after the cut");
        assert!(disk.flush().is_err());
        let mut buf = [0u8; 4096];
        disk.read_at(0, &mut buf).expect("reads go on");
        assert_eq!(buf[..1024], [1u8; 1024], "before the cut");
        assert_eq!(buf[1024..1536], [2u8; 512], "one whole sector of the torn write");
        assert!(buf[1536..].iter().all(|&b| b == 0), "nothing after it");
    }

    #[test]
    fn writes_of_the_range_fail_as_many_times_as_asked() {
        let disk = FaultyDisk::new(MemDisk::new(8192));
        disk.fail_writes(1024..1536, 1);
        disk.write_at(0, &[1u8; 512]).expect("outside the range");
        assert!(disk.write_at(1024, &[2u8; 512]).is_err(), "the one failure");
        disk.write_at(1024, &[3u8; 512]).expect("then it writes");
        let mut buf = [0u8; 512];
        disk.read_at(1024, &mut buf).expect("read");
        assert_eq!(buf, [3u8; 512]);
    }
}
