//! Segment writes in flight.
//!
//! The segment writer builds partial segments under the file system's lock
//! and hands each one to a thread of its own that writes it to the device, so
//! the next requests are served while the device copies. The paper's
//! stop-access threshold (§4.4) is enforced here: when the bytes queued but
//! not yet written pass it, the writer waits for segment writes to finish.
//!
//! Until a partial segment is on the device, nobody may read its blocks from
//! the device: the buffer cache keeps (and will not evict) every block it
//! shares with a write in flight, and [`SegmentIo::wait_for`] makes any other
//! device read of those addresses wait for the write.
//!
//! With [`SegmentWrites::Inline`] there is no thread: `submit` writes the
//! partial segment itself and nothing is ever in flight. That is for runs on
//! a simulated disk, whose writes are posted anyway, where a thread's
//! scheduling must not decide when a write reaches the disk.

use super::layout::Summary;
use super::SegmentWrites;
use crate::cache::{block_of, BlockData};
use crate::error::errno;
use crate::format::Daddr;
use crate::Result;
use disk::BlockDevice;
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// One partial segment to write: its first block's address, its summary
/// (whose data CRC the writer thread computes) and the blocks after it.
struct Job {
    start: Daddr,
    offset: u64,
    summary: Summary,
    blocks: Vec<BlockData>,
}

impl Job {
    /// The partial segment's bytes, summary first, with the data CRC filled
    /// in: computed here, off the file system's lock.
    fn encode(&mut self, block_size: usize) -> BlockData {
        let mut crc = 0;
        for block in &self.blocks {
            crc = crate::format::codec::crc32c_append(crc, block);
        }
        self.summary.data_crc = crc;
        block_of(&self.summary.encode(block_size))
    }

    /// Writes the partial segment to `dev` in one request.
    fn write(&mut self, dev: &dyn BlockDevice, block_size: usize) -> std::io::Result<()> {
        let summary = self.encode(block_size);
        let refs: Vec<&[u8]> =
            std::iter::once(&summary[..]).chain(self.blocks.iter().map(|b| &b[..])).collect();
        dev.write_vectored_at(self.offset, &refs)
    }
}

#[derive(Default)]
struct State {
    /// Writes queued or running: first block → number of blocks.
    in_flight: BTreeMap<Daddr, u64>,
    /// Bytes queued or running.
    bytes: u64,
    /// The first write that failed; every later barrier reports it.
    error: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The writer thread and what it has in flight.
///
/// Lifecycle: `new` starts the thread; `submit` queues partial segments;
/// `wait_idle` is the point after which everything submitted is on the
/// device (not yet durable: a flush barrier follows); dropping it finishes
/// the queue and joins the thread. Inline (`inline` set), `submit` writes
/// and the rest have nothing to wait for.
pub(super) struct SegmentIo {
    sender: Option<mpsc::Sender<Job>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    block_size: u64,
    /// The stop-access threshold: queued bytes past it make `submit` wait.
    stop_access_bytes: u64,
    /// The device, when partial segments are written inline.
    inline: Option<Arc<dyn BlockDevice>>,
}

impl SegmentIo {
    /// Starts the writer thread for `dev`, or none if `writes` is inline.
    pub(super) fn new(
        dev: Arc<dyn BlockDevice>,
        block_size: u32,
        stop_access_bytes: u64,
        writes: SegmentWrites,
    ) -> SegmentIo {
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), changed: Condvar::new() });
        if writes == SegmentWrites::Inline {
            return SegmentIo {
                sender: None,
                shared,
                thread: None,
                block_size: block_size as u64,
                stop_access_bytes,
                inline: Some(dev),
            };
        }
        let (sender, receiver) = mpsc::channel::<Job>();
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fslab-segment-io".into())
            .spawn(move || {
                for mut job in receiver {
                    let result = job.write(dev.as_ref(), block_size as usize);
                    let bytes = (job.blocks.len() as u64 + 1) * block_size as u64;
                    drop(job.blocks);
                    let mut state = worker.lock();
                    state.in_flight.remove(&job.start);
                    state.bytes -= bytes;
                    if let Err(e) = result {
                        state.error.get_or_insert_with(|| e.to_string());
                    }
                    worker.changed.notify_all();
                }
            })
            .ok();
        SegmentIo {
            sender: thread.as_ref().map(|_| sender),
            shared,
            thread,
            block_size: block_size as u64,
            stop_access_bytes,
            inline: None,
        }
    }

    fn failed(state: &State) -> Result<()> {
        match &state.error {
            Some(why) => Err(crate::Error::Io(std::io::Error::other(format!("segment write failed: {why}")))),
            None => Ok(()),
        }
    }

    /// Queues a partial segment whose summary is at `start`, followed by
    /// `blocks`; waits while more than the stop-access threshold is in flight.
    pub(super) fn submit(&self, start: Daddr, summary: Summary, blocks: Vec<BlockData>) -> Result<()> {
        let bytes = (blocks.len() as u64 + 1) * self.block_size;
        let mut job = Job { start, offset: start.byte_offset(self.block_size), summary, blocks };
        if let Some(dev) = &self.inline {
            return job
                .write(dev.as_ref(), self.block_size as usize)
                .map_err(|e| crate::Error::Io(std::io::Error::other(format!("segment write failed: {e}"))));
        }
        let Some(sender) = &self.sender else {
            return Err(errno(libc::EIO, "segment writer thread is not running"));
        };
        {
            let mut state = self.shared.lock();
            Self::failed(&state)?;
            state.in_flight.insert(start, job.blocks.len() as u64 + 1);
            state.bytes += bytes;
        }
        if let Err(mpsc::SendError(job)) = sender.send(job) {
            let mut state = self.shared.lock();
            state.in_flight.remove(&job.start);
            state.bytes -= bytes;
            return Err(errno(libc::EIO, "segment writer thread has stopped"));
        }
        let mut state = self.shared.lock();
        while state.bytes > self.stop_access_bytes && state.error.is_none() {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        Self::failed(&state)
    }

    /// Waits until every submitted write has reached the device.
    pub(super) fn wait_idle(&self) -> Result<()> {
        let mut state = self.shared.lock();
        while !state.in_flight.is_empty() {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        Self::failed(&state)
    }

    /// Waits until no write in flight covers any of the `blocks` blocks from
    /// `daddr` on.
    pub(super) fn wait_for(&self, daddr: Daddr, blocks: u64) {
        let end = daddr + blocks.max(1);
        let mut state = self.shared.lock();
        loop {
            // Writes in flight never overlap one another, so the last one
            // starting before `end` is the only one that can reach `daddr`.
            let covered = state.in_flight.range(..end).next_back().is_some_and(|(&s, &n)| daddr < s + n);
            if !covered {
                return;
            }
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for SegmentIo {
    fn drop(&mut self) {
        // Closing the channel ends the thread once the queue is written.
        self.sender = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
