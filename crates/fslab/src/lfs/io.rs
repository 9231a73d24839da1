//! Segment writes in flight: partial segments go to the cache's writer
//! thread ([`WriteQueue`]), which writes each one — summary first — while
//! the next requests are served. The summary's data checksum is computed
//! there too, off the file system's lock.
//!
//! With [`SegmentWrites::Inline`] there is no thread: `submit` writes the
//! partial segment itself and nothing is ever in flight. That is for runs on
//! a simulated disk, whose writes are posted anyway, where a thread's
//! scheduling must not decide when a write reaches the disk.

use super::layout::Summary;
use super::SegmentWrites;
use crate::cache::{block_of, BlockData, Header, WriteJob, WriteQueue};
use crate::format::Daddr;
use crate::Result;
use disk::BlockDevice;
use std::sync::Arc;

/// LFS's writes in flight; addresses are blocks.
pub(super) struct SegmentIo {
    queue: WriteQueue,
    block_size: usize,
}

impl SegmentIo {
    /// Starts the writer thread for `dev`, or none if `writes` is inline.
    pub(super) fn new(
        dev: Arc<dyn BlockDevice>,
        block_size: u32,
        stop_access_bytes: u64,
        writes: SegmentWrites,
    ) -> SegmentIo {
        let bs = block_size as u64;
        let queue = WriteQueue::with_mode(dev, "fslab-segment-io", bs, bs, stop_access_bytes, writes);
        SegmentIo { queue, block_size: bs as usize }
    }

    /// Queues a partial segment whose summary is at `start`, followed by
    /// `blocks`; waits while more than the stop-access threshold is in flight.
    pub(super) fn submit(&self, start: Daddr, mut summary: Summary, blocks: Vec<BlockData>) -> Result<()> {
        let block_size = self.block_size;
        let header: Header = Box::new(move |blocks: &[BlockData]| {
            let mut crc = 0;
            for block in blocks {
                crc = crate::format::codec::crc32c_append(crc, block);
            }
            summary.data_crc = crc;
            block_of(&summary.encode(block_size))
        });
        let lens = vec![block_size; blocks.len()];
        let units = blocks.len() as u64 + 1;
        self.queue.submit(WriteJob { start, units, buffers: blocks, lens, header: Some(header) })?;
        Ok(())
    }

    /// Writes a block of zeros at block `at`, numbered as every write of
    /// the log is, so that a read planned before it (`DeviceReader`) knows
    /// its address was written since.
    pub(super) fn write_zeros(&self, at: Daddr) -> Result<()> {
        let zeros = block_of(&vec![0u8; self.block_size]);
        self.queue.write_now(WriteJob::of(at, self.block_size as u64, vec![zeros], vec![self.block_size]))?;
        Ok(())
    }

    /// Waits until every submitted write has reached the device.
    pub(super) fn wait_idle(&self) -> Result<()> {
        self.queue.wait_idle()
    }

    /// A flush barrier after every submitted write, and after writes made
    /// beside the queue (the superblock): what a checkpoint waits for.
    pub(super) fn barrier(&self) -> Result<()> {
        self.queue.barrier()
    }

    /// A ticket for every partial segment submitted so far.
    pub(super) fn ticket(&self) -> crate::cache::Ticket {
        self.queue.ticket_for_all()
    }

    /// A handle that reads the device without the file system's lock.
    pub(super) fn reader(&self) -> crate::cache::DeviceReader {
        self.queue.reader()
    }

    /// Waits until no write in flight covers any of the `blocks` blocks from
    /// `daddr` on.
    pub(super) fn wait_for(&self, daddr: Daddr, blocks: u64) {
        self.queue.wait_for(daddr, blocks)
    }
}
