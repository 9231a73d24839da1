//! A device that counts the reads made of it: for tests that check how a
//! file system reads (one request per segment, none for a block it is about
//! to overwrite, read-ahead of the next cluster), where a simulated disk's
//! timing would be more than needed.

use crate::BlockDevice;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// `inner`, counting its read requests and the bytes they read.
pub struct CountingDisk<D> {
    inner: D,
    reads: AtomicU64,
    bytes_read: AtomicU64,
    read_aheads: AtomicU64,
}

impl<D: BlockDevice> CountingDisk<D> {
    /// Counts the reads of `inner`, from zero.
    pub fn new(inner: D) -> CountingDisk<D> {
        CountingDisk {
            inner,
            reads: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            read_aheads: AtomicU64::new(0),
        }
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
        self.inner.write_at(offset, buf)
    }
    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        self.inner.write_vectored_at(offset, bufs)
    }
    fn flush(&self) -> io::Result<()> {
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
    fn size(&self) -> u64 {
        self.inner.size()
    }
}
