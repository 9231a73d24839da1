//! Writes in flight: a thread of its own writes what a layout queues, so
//! the next requests are served while the device copies (LFS's partial
//! segments, FFS's clusters). The paper's stop-access threshold (1993 §4.4)
//! is enforced here: when the bytes queued but not yet written pass it,
//! whoever queues more waits.
//!
//! A queue may also be inline ([`WriteMode::Inline`]): no thread, each
//! job written before `submit` returns. That is for runs on a simulated
//! disk, whose writes are posted anyway, where a thread's scheduling must
//! not decide when a write reaches the disk.
//!
//! Until a write is on the device nobody may read its addresses from the
//! device: the buffer cache keeps (and will not evict) every buffer it
//! shares with a write in flight, and [`WriteQueue::wait_for`] makes any
//! other device read of those addresses wait for the write.

use super::BlockData;
use crate::error::errno;
use crate::format::Daddr;
use crate::Result;
use disk::BlockDevice;
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Who hands a queue's writes to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// A thread of the queue's own writes them while the next requests are
    /// served: what a real mount wants.
    #[default]
    Thread,
    /// `submit` writes each job itself before it returns; nothing is ever
    /// in flight. On a simulated disk, whose writes are posted and served
    /// in simulated time, this still overlaps the disk with the file
    /// system, and no thread's scheduling can change a timing.
    Inline,
}

/// Makes the block that goes before a job's buffers, from them, on the
/// writer thread (LFS's summary, whose checksum covers the blocks after it).
pub type Header = Box<dyn FnOnce(&[BlockData]) -> BlockData + Send>;

/// One device write: `buffers` one after another from address `start`
/// (each cut to its entry of `lens`, which only the last may shorten),
/// preceded by the block `header` makes, if any.
pub struct WriteJob {
    /// The address of the first block written (the header's, if any).
    pub start: Daddr,
    /// Address units the write covers.
    pub units: u64,
    /// The buffers, shared with the cache: no copy is made.
    pub buffers: Vec<BlockData>,
    /// Bytes of each buffer to write.
    pub lens: Vec<usize>,
    /// The block before the buffers, made on the writer thread.
    pub header: Option<Header>,
}

impl WriteJob {
    /// Bytes the job writes.
    fn bytes(&self, header_bytes: u64) -> u64 {
        self.lens.iter().map(|&l| l as u64).sum::<u64>()
            + if self.header.is_some() { header_bytes } else { 0 }
    }

    /// Writes the job to `dev` in one vectored write: its header, made
    /// now from the buffers, then the buffers. The buffers are released
    /// when it returns.
    fn write_to(mut self, dev: &dyn BlockDevice, unit_bytes: u64) -> std::io::Result<()> {
        let header = self.header.take().map(|make| make(&self.buffers));
        let refs: Vec<&[u8]> = header
            .iter()
            .map(|h| &h[..])
            .chain(self.buffers.iter().zip(&self.lens).map(|(b, &l)| &b[..l]))
            .collect();
        dev.write_vectored_at(self.start.byte_offset(unit_bytes), &refs)
    }
}

#[derive(Default)]
struct State {
    /// Writes queued or running: first address → units.
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
/// Lifecycle: `new` starts the thread; `submit` queues writes; `wait_idle`
/// is the point after which everything submitted is on the device (not yet
/// durable: a flush barrier follows); dropping it finishes the queue and
/// joins the thread. Writes in flight never overlap one another (a layout
/// never queues an address twice before the first write is done).
pub struct WriteQueue {
    /// Set for an inline queue: `submit` writes here itself.
    inline: Option<Arc<dyn BlockDevice>>,
    sender: Option<mpsc::Sender<WriteJob>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    unit_bytes: u64,
    /// Bytes of a header block.
    header_bytes: u64,
    /// The stop-access threshold: queued bytes past it make `submit` wait.
    stop_access_bytes: u64,
}

impl WriteQueue {
    /// A queue for `dev` of `mode`: with [`WriteMode::Thread`] as
    /// [`WriteQueue::new`], with [`WriteMode::Inline`] one with no thread.
    pub fn with_mode(
        dev: Arc<dyn BlockDevice>,
        name: &str,
        unit_bytes: u64,
        header_bytes: u64,
        stop_access_bytes: u64,
        mode: WriteMode,
    ) -> WriteQueue {
        match mode {
            WriteMode::Thread => WriteQueue::new(dev, name, unit_bytes, header_bytes, stop_access_bytes),
            WriteMode::Inline => WriteQueue {
                inline: Some(dev),
                sender: None,
                shared: Arc::new(Shared { state: Mutex::new(State::default()), changed: Condvar::new() }),
                thread: None,
                unit_bytes,
                header_bytes,
                stop_access_bytes,
            },
        }
    }

    /// Starts a writer thread named `name` for `dev`, whose addresses are
    /// in units of `unit_bytes`; headers are `header_bytes` long.
    pub fn new(
        dev: Arc<dyn BlockDevice>,
        name: &str,
        unit_bytes: u64,
        header_bytes: u64,
        stop_access_bytes: u64,
    ) -> WriteQueue {
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), changed: Condvar::new() });
        let (sender, receiver) = mpsc::channel::<WriteJob>();
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for job in receiver {
                    let (bytes, start) = (job.bytes(header_bytes), job.start);
                    let result = job.write_to(dev.as_ref(), unit_bytes);
                    let mut state = worker.lock();
                    state.in_flight.remove(&start);
                    state.bytes -= bytes;
                    if let Err(e) = result {
                        state.error.get_or_insert_with(|| e.to_string());
                    }
                    worker.changed.notify_all();
                }
            })
            .ok();
        WriteQueue {
            inline: None,
            sender: thread.as_ref().map(|_| sender),
            shared,
            thread,
            unit_bytes,
            header_bytes,
            stop_access_bytes,
        }
    }

    fn failed(state: &State) -> Result<()> {
        match &state.error {
            Some(why) => Err(crate::Error::Io(std::io::Error::other(format!("write failed: {why}")))),
            None => Ok(()),
        }
    }

    /// The size of an address unit.
    pub fn unit_bytes(&self) -> u64 {
        self.unit_bytes
    }

    /// Queues `job`; waits while more than the stop-access threshold is in
    /// flight. Fails if an earlier write failed.
    pub fn submit(&self, job: WriteJob) -> Result<()> {
        if let Some(dev) = &self.inline {
            return job
                .write_to(dev.as_ref(), self.unit_bytes)
                .map_err(|e| crate::Error::Io(std::io::Error::other(format!("write failed: {e}"))));
        }
        let bytes = job.bytes(self.header_bytes);
        let (start, units) = (job.start, job.units);
        let Some(sender) = &self.sender else {
            return Err(errno(libc::EIO, "writer thread is not running"));
        };
        {
            let mut state = self.shared.lock();
            Self::failed(&state)?;
            state.in_flight.insert(start, units);
            state.bytes += bytes;
        }
        if sender.send(job).is_err() {
            let mut state = self.shared.lock();
            state.in_flight.remove(&start);
            state.bytes -= bytes;
            return Err(errno(libc::EIO, "writer thread has stopped"));
        }
        let mut state = self.shared.lock();
        while state.bytes > self.stop_access_bytes && state.error.is_none() {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        Self::failed(&state)
    }

    /// Waits until every submitted write has reached the device.
    pub fn wait_idle(&self) -> Result<()> {
        let mut state = self.shared.lock();
        while !state.in_flight.is_empty() {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        Self::failed(&state)
    }

    /// Waits until no write in flight covers any of the `units` units from
    /// `addr` on.
    pub fn wait_for(&self, addr: Daddr, units: u64) {
        let end = addr + units.max(1);
        let mut state = self.shared.lock();
        loop {
            // Writes in flight never overlap one another, so the last one
            // starting before `end` is the only one that can reach `addr`.
            let covered = state.in_flight.range(..end).next_back().is_some_and(|(&s, &n)| addr < s + n);
            if !covered {
                return;
            }
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for WriteQueue {
    fn drop(&mut self) {
        // Closing the channel ends the thread once the queue is written.
        self.sender = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::block_of;
    use disk::MemDisk;

    #[test]
    fn queued_writes_land_with_their_headers_and_a_read_waits_for_them() {
        let disk = Arc::new(MemDisk::new(1 << 20));
        let queue = WriteQueue::new(disk.clone(), "test-io", 512, 512, 1 << 20);
        let header: Header = Box::new(|blocks| block_of(&[blocks.len() as u8; 512]));
        queue
            .submit(WriteJob {
                start: Daddr::new(10),
                units: 3,
                buffers: vec![block_of(&[1; 512]), block_of(&[2; 512])],
                lens: vec![512, 100],
                header: Some(header),
            })
            .expect("submit");
        queue.wait_for(Daddr::new(12), 1);
        let mut got = vec![0u8; 3 * 512];
        disk.read_at(10 * 512, &mut got).expect("read");
        assert_eq!(
            (got[0], got[512], got[1024], got[1124]),
            (2, 1, 2, 0),
            "header, block, 100 bytes of the tail"
        );
        queue.wait_idle().expect("idle");
    }

    #[test]
    fn an_inline_queue_has_written_each_job_when_submit_returns() {
        let disk = Arc::new(MemDisk::new(1 << 20));
        let queue = WriteQueue::with_mode(disk.clone(), "unused", 512, 0, 1 << 20, WriteMode::Inline);
        let job = WriteJob {
            start: Daddr::new(4),
            units: 1,
            buffers: vec![block_of(&[9; 512])],
            lens: vec![512],
            header: None,
        };
        queue.submit(job).expect("submit");
        let mut got = [0u8; 1];
        disk.read_at(4 * 512, &mut got).expect("read");
        assert_eq!(got, [9], "on the device at once, with nothing to wait for");
        queue.wait_idle().expect("idle");
    }
}
