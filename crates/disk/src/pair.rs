//! Two devices seen as one address space: a file system's device, and a
//! second device placed after it at a fixed offset (a journal's log on a
//! disk of its own, as the 2000 journaling paper's LFFS-wafs-2 kept it).
//! Whoever writes above the offset writes the second device; nothing else
//! changes, so the write queue, its sequence numbers and its flushes stay
//! one, and a crash cuts the power of both devices at the same moment
//! (a `CrashDisk` over a pair records the two devices' writes in one
//! order).
//!
//! A flush flushes each device written since its last flush: a log write
//! followed by a flush does not also wait for the first device, unless it
//! was written too — then it must, since the flush promises every write
//! before it.

use crate::{check_bounds, BlockDevice};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A device of `first` (bytes `0 .. min(first.size(), base)`) and
/// `second` (bytes `base .. base + second.size()`); bytes between the two
/// are neither, and an access there fails. Bytes of `first` from `base` on
/// (past a file system that does not fill its device) are out of reach.
pub struct DevicePair {
    first: Arc<dyn BlockDevice>,
    second: Arc<dyn BlockDevice>,
    base: u64,
    first_written: AtomicBool,
    second_written: AtomicBool,
}

impl DevicePair {
    /// `second` placed at byte `base` of the pair.
    pub fn new(first: Arc<dyn BlockDevice>, second: Arc<dyn BlockDevice>, base: u64) -> DevicePair {
        DevicePair {
            first,
            second,
            base,
            first_written: AtomicBool::new(false),
            second_written: AtomicBool::new(false),
        }
    }

    /// Where the second device begins.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// The device of `len` bytes at `offset` and the offset on it; an
    /// access across the two, or in the gap between them, is refused.
    fn route(&self, offset: u64, len: usize) -> io::Result<(&Arc<dyn BlockDevice>, u64, &AtomicBool)> {
        check_bounds(offset, len, self.size())?;
        if offset >= self.base {
            return Ok((&self.second, offset - self.base, &self.second_written));
        }
        check_bounds(offset, len, self.first.size().min(self.base))?;
        Ok((&self.first, offset, &self.first_written))
    }
}

impl BlockDevice for DevicePair {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let (dev, at, _) = self.route(offset, buf.len())?;
        dev.read_at(at, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let (dev, at, written) = self.route(offset, buf.len())?;
        dev.write_at(at, buf)?;
        written.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        let len = bufs.iter().map(|b| b.len()).sum();
        let (dev, at, written) = self.route(offset, len)?;
        dev.write_vectored_at(at, bufs)?;
        written.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        // A write marks its device once it has returned, and a flush clears
        // the mark before it flushes: a write still running when a flush
        // starts (which that flush need not cover) marks the device after
        // the clearing, so the next flush covers it. Marked before the
        // write, it was cleared by the flush running beside it and the
        // next flush skipped the device.
        // A flush that fails marks both devices again (the one it failed
        // on, and the other, not reached), so a flush tried again does not
        // skip what is still not durable.
        let second = self.second_written.swap(false, Ordering::SeqCst);
        let first = self.first_written.swap(false, Ordering::SeqCst);
        let flushed = (if second { self.second.flush() } else { Ok(()) }).and_then(|()| {
            if first {
                self.first.flush()
            } else {
                Ok(())
            }
        });
        if flushed.is_err() {
            self.second_written.fetch_or(second, Ordering::SeqCst);
            self.first_written.fetch_or(first, Ordering::SeqCst);
        }
        flushed
    }

    fn read_ahead(&self, offset: u64, len: usize) -> io::Result<()> {
        let (dev, at, _) = self.route(offset, len)?;
        dev.read_ahead(at, len)
    }

    fn takes_read_ahead(&self) -> bool {
        self.first.takes_read_ahead()
    }

    fn joins_writes(&self) -> bool {
        self.first.joins_writes() && self.second.joins_writes()
    }

    fn size(&self) -> u64 {
        self.base + self.second.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CountingDisk, MemDisk};

    #[test]
    fn each_half_of_the_address_space_reaches_its_own_device() {
        let a = Arc::new(MemDisk::new(8192));
        let b = Arc::new(MemDisk::new(4096));
        let pair = DevicePair::new(a.clone(), b.clone(), 12288);
        assert_eq!(pair.size(), 16384);
        pair.write_at(4096, &[1u8; 512]).expect("first");
        pair.write_at(12288 + 512, &[2u8; 512]).expect("second");
        assert_eq!(a.snapshot()[4096..4608], [1u8; 512]);
        assert_eq!(b.snapshot()[512..1024], [2u8; 512]);
        let mut back = [0u8; 512];
        pair.read_at(12288 + 512, &mut back).expect("read");
        assert_eq!(back, [2u8; 512]);
        // The gap, a write across the end of the first, and past the end.
        assert!(pair.read_at(8192, &mut back).is_err());
        assert!(pair.write_at(8192 - 256, &[0u8; 512]).is_err());
        assert!(pair.write_at(16384 - 256, &[0u8; 512]).is_err());
        // Placed inside the first device: its bytes from there on are out
        // of reach, and the second's are there instead.
        let inside = DevicePair::new(a, b, 4096);
        assert_eq!(inside.size(), 8192);
        inside.read_at(4096 + 512, &mut back).expect("read the second");
        assert_eq!(back, [2u8; 512]);
        assert!(inside.write_at(4096 - 256, &[0u8; 512]).is_err(), "across the two");
    }

    #[test]
    fn a_flush_flushes_only_the_devices_written_since_the_last() {
        let a = Arc::new(CountingDisk::new(MemDisk::new(8192)));
        let b = Arc::new(CountingDisk::new(MemDisk::new(8192)));
        let pair = DevicePair::new(a.clone(), b.clone(), 8192);
        pair.write_at(8192, &[1u8; 512]).expect("log");
        pair.flush().expect("flush");
        assert_eq!((a.flushes(), b.flushes()), (0, 1));
        pair.write_at(0, &[1u8; 512]).expect("data");
        pair.write_at(8192, &[1u8; 512]).expect("log");
        pair.flush().expect("flush");
        assert_eq!((a.flushes(), b.flushes()), (1, 2));
        pair.flush().expect("nothing to flush");
        assert_eq!((a.flushes(), b.flushes()), (1, 2));
    }

    /// A device whose writes wait at a gate (when one is set), and which
    /// knows whether a write has returned since its last flush.
    struct Gated {
        inner: MemDisk,
        gate: std::sync::Mutex<Option<Arc<std::sync::Barrier>>>,
        unflushed: AtomicBool,
        /// The next flush fails (and flushes nothing).
        fail_flush: AtomicBool,
    }

    impl BlockDevice for Gated {
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
            self.inner.read_at(offset, buf)
        }

        fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
            let gate = self.gate.lock().map(|g| g.clone()).unwrap_or(None);
            if let Some(gate) = gate {
                gate.wait();
                gate.wait();
            }
            self.inner.write_at(offset, buf)?;
            self.unflushed.store(true, Ordering::SeqCst);
            Ok(())
        }

        fn flush(&self) -> io::Result<()> {
            if self.fail_flush.swap(false, Ordering::SeqCst) {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            self.unflushed.store(false, Ordering::SeqCst);
            Ok(())
        }

        fn size(&self) -> u64 {
            self.inner.size()
        }
    }

    /// A log write still running when one flush starts is covered by the
    /// next: the group commit of one thread's flush beside another's write.
    #[test]
    fn a_write_running_beside_a_flush_is_covered_by_the_next_flush() {
        let gate = Arc::new(std::sync::Barrier::new(2));
        let log = Arc::new(Gated {
            inner: MemDisk::new(8192),
            gate: std::sync::Mutex::new(Some(gate.clone())),
            unflushed: AtomicBool::new(false),
            fail_flush: AtomicBool::new(false),
        });
        let pair = Arc::new(DevicePair::new(Arc::new(MemDisk::new(8192)), log.clone(), 8192));
        let writer = {
            let pair = pair.clone();
            std::thread::spawn(move || pair.write_at(8192, &[1u8; 512]))
        };
        gate.wait(); // the write has begun
        pair.flush().expect("a flush beside the write");
        gate.wait(); // the write goes on
        writer.join().expect("writer thread").expect("log write");
        pair.flush().expect("the flush after the write");
        assert!(!log.unflushed.load(Ordering::SeqCst), "the write was never flushed");
    }

    /// A flush that fails leaves both devices to the next: neither the
    /// one it failed on nor the other, which it did not reach, is taken
    /// for flushed.
    #[test]
    fn a_failed_flush_leaves_both_devices_to_the_next() {
        let data = Arc::new(CountingDisk::new(MemDisk::new(8192)));
        let log = Arc::new(Gated {
            inner: MemDisk::new(8192),
            gate: std::sync::Mutex::new(None),
            unflushed: AtomicBool::new(false),
            fail_flush: AtomicBool::new(true),
        });
        let pair = DevicePair::new(data.clone(), log.clone(), 8192);
        pair.write_at(0, &[1u8; 512]).expect("data");
        pair.write_at(8192, &[1u8; 512]).expect("log");
        assert!(pair.flush().is_err(), "the log's flush fails");
        pair.flush().expect("tried again");
        assert!(!log.unflushed.load(Ordering::SeqCst), "the log was never flushed");
        assert_eq!(data.flushes(), 1, "the data device was never flushed");
    }
}
