//! A device that counts what is asked of it: for tests that check how a
//! file system reads (one request per segment, none for a block it is about
//! to overwrite, read-ahead of the next cluster), where it writes, and how
//! many flush barriers it issues, where a simulated disk's timing would be
//! more than needed. A flush can be made slow, as a disk's cache flush is,
//! so that a test can see callers share one.

use crate::BlockDevice;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// `inner`, counting its read requests and the bytes they read, its flushes,
/// and where each write began.
pub struct CountingDisk<D> {
    inner: D,
    reads: AtomicU64,
    bytes_read: AtomicU64,
    read_aheads: AtomicU64,
    flushes: AtomicU64,
    writes: Mutex<Vec<(u64, u64)>>,
    flush_delay: Duration,
}

impl<D: BlockDevice> CountingDisk<D> {
    /// Counts the reads of `inner`, from zero.
    pub fn new(inner: D) -> CountingDisk<D> {
        CountingDisk {
            inner,
            reads: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            read_aheads: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            writes: Mutex::new(Vec::new()),
            flush_delay: Duration::ZERO,
        }
    }

    /// Counts as [`CountingDisk::new`], and makes every flush take `delay`.
    pub fn with_flush_delay(inner: D, delay: Duration) -> CountingDisk<D> {
        CountingDisk { flush_delay: delay, ..CountingDisk::new(inner) }
    }

    /// The device counted, as it is (a test's copy of it after a crash).
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Flushes so far.
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
    }

    /// Every write so far, in the order made: its byte offset and length.
    pub fn writes(&self) -> Vec<(u64, u64)> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Forgets the writes recorded so far.
    pub fn clear_writes(&self) {
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn record_write(&self, offset: u64, len: u64) {
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).push((offset, len));
    }

    /// Read requests so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// Read-ahead hints ([`BlockDevice::read_ahead`]) so far.
    pub fn read_aheads(&self) -> u64 {
        self.read_aheads.load(Ordering::Relaxed)
    }
}

impl<D: BlockDevice> BlockDevice for CountingDisk<D> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.inner.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.record_write(offset, buf.len() as u64);
        self.inner.write_at(offset, buf)
    }
    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        self.record_write(offset, bufs.iter().map(|b| b.len() as u64).sum());
        self.inner.write_vectored_at(offset, bufs)
    }
    fn flush(&self) -> io::Result<()> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        if !self.flush_delay.is_zero() {
            std::thread::sleep(self.flush_delay);
        }
        self.inner.flush()
    }
    fn read_ahead(&self, offset: u64, len: usize) -> io::Result<()> {
        self.read_aheads.fetch_add(1, Ordering::Relaxed);
        self.inner.read_ahead(offset, len)
    }
    /// Yes: it counts them.
    fn takes_read_ahead(&self) -> bool {
        true
    }
    fn joins_writes(&self) -> bool {
        self.inner.joins_writes()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}
