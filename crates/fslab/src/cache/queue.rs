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
//!
//! Every write is numbered when it is submitted ([`Seq`]), and the queue
//! knows three moments of it: *issued* (submitted), *completed* (the device
//! has the bytes) and *durable* (a flush barrier issued after it completed
//! has returned). Only the last survives a power cut on a disk with a write
//! cache, and on `disk::CrashDisk`, so a dependency between writes is
//! satisfied by *durable*, never by *issued*. A flush counts a write durable
//! only if the write had completed when the flush was issued, so *durable*
//! never claims more than the device holds; flushes go through the queue
//! ([`WriteQueue::flush`], [`WriteQueue::barrier`], a [`Ticket`]'s wait), so
//! it is rarely less either. A ticket can be waited on by any thread,
//! without the file system: whoever waits first issues the flush, and
//! everyone waiting for a write it covers shares it (group commit).

use super::BlockData;
use crate::durable::{Barrier, Ticket, UnlockedReads};
use crate::error::errno;
use crate::format::Daddr;
use crate::Result;
use disk::BlockDevice;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
    /// A job of `buffers`, each cut to its entry of `lens`, from `start`
    /// (in address units of `unit_bytes`), with no header.
    pub fn of(start: Daddr, unit_bytes: u64, buffers: Vec<BlockData>, lens: Vec<usize>) -> WriteJob {
        let bytes: u64 = lens.iter().map(|&l| l as u64).sum();
        WriteJob { start, units: bytes.div_ceil(unit_bytes), buffers, lens, header: None }
    }

    /// Bytes the job writes.
    fn bytes(&self, header_bytes: u64) -> u64 {
        self.lens.iter().map(|&l| l as u64).sum::<u64>()
            + if self.header.is_some() { header_bytes } else { 0 }
    }

    /// Writes the job to `dev` in one vectored write: its header, made
    /// now from the buffers, then the buffers. The buffers are released
    /// when it succeeds; a failed write gives them back, to be kept.
    fn write_to(mut self, dev: &dyn BlockDevice, unit_bytes: u64) -> std::result::Result<(), Failed> {
        let header = self.header.take().map(|make| make(&self.buffers));
        let refs: Vec<&[u8]> = header
            .iter()
            .map(|h| &h[..])
            .chain(self.buffers.iter().zip(&self.lens).map(|(b, &l)| &b[..l]))
            .collect();
        let written = dev.write_vectored_at(self.start.byte_offset(unit_bytes), &refs);
        drop(refs);
        written.map_err(|e| Failed { why: e.to_string(), buffers: self.buffers })
    }
}

/// A write the device refused, with the buffers it held.
struct Failed {
    why: String,
    buffers: Vec<BlockData>,
}

impl State {
    /// Notes write failure `f`: the first is the queue's error. Its
    /// buffers are kept for as long as the queue lives, so that the cache,
    /// which evicts no buffer still shared, goes on serving what the disk
    /// does not hold (marked clean when they were queued, they would be
    /// read back from the device as whatever was there before).
    fn keep_failure(&mut self, f: Failed) {
        self.error.get_or_insert(f.why);
        self.kept.extend(f.buffers);
    }
}

/// The number of a write, given when it is submitted: 1 for the first,
/// one more for each after. 0 is "no write" (always durable).
pub type Seq = u64;

#[derive(Default)]
struct State {
    /// Writes queued or running: first address → units.
    in_flight: BTreeMap<Daddr, u64>,
    /// Bytes queued or running.
    bytes: u64,
    /// The first write that failed; every later barrier reports it.
    error: Option<String>,
    /// The last write submitted.
    issued: Seq,
    /// Every write up to this one has reached the device.
    completed: Seq,
    /// Writes past `completed` that have reached the device, ahead of one
    /// before them: a write made on a caller's thread (`write_now`) can
    /// finish before or after the writer thread's, whose jobs finish in
    /// the order they were submitted.
    completed_ahead: BTreeSet<Seq>,
    /// Every write up to this one is durable: a flush issued after it
    /// completed has returned.
    durable: Seq,
    /// A flush is running; waiters for what it covers wait for it.
    flushing: bool,
    /// Flushes the device has been asked for.
    flushes: u64,
    /// The buffers of writes that failed (`State::keep_failure`).
    kept: Vec<BlockData>,
    /// The last [`WRITE_HISTORY`] writes submitted, oldest first: what a
    /// read made without the file system's lock checks its device
    /// addresses against ([`UnlockedReads::written_since`]).
    recent: VecDeque<(Seq, Daddr, u64)>,
}

/// Writes [`State::recent`] remembers. A read done outside the file
/// system's lock that began more writes ago than this is taken as stale.
const WRITE_HISTORY: usize = 4096;

struct Shared {
    state: Mutex<State>,
    /// A write reached the device (or failed): what writers waiting for
    /// room, for an address or for idleness wait on.
    completed: Condvar,
    /// A flush ended (or a write failed): what waiters for durability
    /// wait on while a flush runs. Apart from `completed` so that the
    /// many waiters of a group commit sleep through every write that
    /// completes meanwhile, not wake for each one.
    flushed: Condvar,
    dev: Arc<dyn BlockDevice>,
}

impl State {
    /// Write `seq`, of `units` units from `start`, has been submitted.
    fn note_submitted(&mut self, seq: Seq, start: Daddr, units: u64) {
        if self.recent.len() == WRITE_HISTORY {
            self.recent.pop_front();
        }
        self.recent.push_back((seq, start, units));
    }

    /// Whether a write numbered after `since` may cover any of the `units`
    /// units from `addr` on: true too when the history no longer reaches
    /// back to `since`.
    fn written_since(&self, since: Seq, addr: Daddr, units: u64) -> bool {
        match self.recent.front() {
            Some(&(oldest, ..)) if oldest > since + 1 => return true,
            None => return self.issued > since,
            Some(_) => {}
        }
        let end = addr + units.max(1);
        self.recent
            .iter()
            .rev()
            .take_while(|&&(seq, ..)| seq > since)
            .any(|&(_, start, n)| start < end && addr < start + n)
    }

    /// Write `seq` has reached the device.
    fn complete(&mut self, seq: Seq) {
        if seq != self.completed + 1 {
            self.completed_ahead.insert(seq);
            return;
        }
        self.completed = seq;
        while self.completed_ahead.remove(&(self.completed + 1)) {
            self.completed += 1;
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the next write to complete.
    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.completed.wait(state).unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the running flush to end.
    fn wait_flushed<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.flushed.wait(state).unwrap_or_else(|e| e.into_inner())
    }

    /// A write completed: its waiters go on, and on a failure every
    /// waiter does, to report it.
    fn notify_completed(&self, state: &State) {
        self.completed.notify_all();
        if state.error.is_some() {
            self.flushed.notify_all();
        }
    }

    /// A flush ended: its waiters go on, and on a failure every waiter
    /// does.
    fn notify_flushed(&self, state: &State) {
        self.flushed.notify_all();
        if state.error.is_some() {
            self.completed.notify_all();
        }
    }

    /// Waits until write `seq` is durable, flushing the device if nobody
    /// else is: the flush covers every write completed when it is issued,
    /// so concurrent waiters share one.
    fn wait_durable_now(&self, seq: Seq) -> Result<()> {
        let mut state = self.lock();
        loop {
            WriteQueue::failed(&state)?;
            if state.durable >= seq {
                return Ok(());
            }
            if state.flushing {
                state = self.wait_flushed(state);
                continue;
            }
            if state.completed < seq.min(state.issued) {
                state = self.wait(state);
                continue;
            }
            let covers = state.completed;
            state.flushing = true;
            state.flushes += 1;
            drop(state);
            let flushed = self.dev.flush();
            state = self.lock();
            state.flushing = false;
            match flushed {
                Ok(()) => state.durable = state.durable.max(covers),
                Err(e) => {
                    state.error.get_or_insert_with(|| format!("flush failed: {e}"));
                }
            }
            self.notify_flushed(&state);
        }
    }
}

impl Shared {
    /// Waits until no write in flight covers any of the `units` units from
    /// `addr` on.
    fn wait_for(&self, addr: Daddr, units: u64) {
        let mut state = self.lock();
        while WriteQueue::overlaps(&state, addr, units) {
            state = self.wait(state);
        }
    }
}

/// Reads of a queue's device made by a thread that does not hold the file
/// system's lock (a kernel request reading a file whose blocks are not
/// cached), and the test that makes them safe.
///
/// A read planned under the lock at the moment `since` ([`WriteQueue::issued`])
/// names addresses whose bytes were then the file's. [`UnlockedReads::read`]
/// waits for writes already in flight to them, as a read under the lock
/// does. Writes submitted after `since` are the only other way the bytes
/// could change, and every write is noted when it is submitted, before the
/// device has it; so if [`UnlockedReads::written_since`] says no after the
/// read, the read saw what the file held at `since`.
#[derive(Clone)]
pub struct DeviceReader {
    shared: Arc<Shared>,
    unit_bytes: u64,
}

impl UnlockedReads for DeviceReader {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let addr = Daddr::new(addr);
        self.shared.wait_for(addr, (buf.len() as u64).div_ceil(self.unit_bytes));
        self.shared.dev.read_at(addr.byte_offset(self.unit_bytes), buf)?;
        Ok(())
    }

    fn written_since(&self, since: Seq, addr: u64, bytes: usize) -> bool {
        let units = (bytes as u64).div_ceil(self.unit_bytes);
        self.shared.lock().written_since(since, Daddr::new(addr), units)
    }

    fn issued(&self) -> Seq {
        self.shared.lock().issued
    }
}

impl Barrier for Shared {
    fn wait_durable(&self, seq: Seq) -> Result<()> {
        self.wait_durable_now(seq)
    }

    fn is_durable(&self, seq: Seq) -> bool {
        let state = self.lock();
        state.durable >= seq || state.error.is_some()
    }
}

/// The writer thread and what it has in flight.
///
/// Lifecycle: `new` starts the thread; `submit` queues writes; `wait_idle`
/// is the point after which everything submitted is on the device (not yet
/// durable: a flush barrier follows); dropping it finishes the queue and
/// joins the thread. Writes in flight never overlap one another: `submit`
/// waits for an earlier write to the same units to be done.
pub struct WriteQueue {
    /// Set for an inline queue: `submit` writes here itself.
    inline: Option<Arc<dyn BlockDevice>>,
    sender: Option<mpsc::Sender<(Seq, WriteJob)>>,
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
                inline: Some(dev.clone()),
                sender: None,
                shared: Arc::new(Shared {
                    state: Mutex::new(State::default()),
                    completed: Condvar::new(),
                    flushed: Condvar::new(),
                    dev,
                }),
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
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            completed: Condvar::new(),
            flushed: Condvar::new(),
            dev: dev.clone(),
        });
        let (sender, receiver) = mpsc::channel::<(Seq, WriteJob)>();
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for (seq, job) in receiver {
                    let (bytes, start) = (job.bytes(header_bytes), job.start);
                    let result = job.write_to(dev.as_ref(), unit_bytes);
                    let mut state = worker.lock();
                    state.in_flight.remove(&start);
                    state.bytes -= bytes;
                    state.complete(seq);
                    if let Err(failed) = result {
                        state.keep_failure(failed);
                    }
                    worker.notify_completed(&state);
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

    /// The first write or flush that failed, as an error; `Ok` while none
    /// has. Once one has, every later write, flush and wait fails.
    pub fn failure(&self) -> Result<()> {
        Self::failed(&self.shared.lock())
    }

    /// Fails the queue for a reason of the file system's own, as a write
    /// the device refused would (if nothing failed before): every later
    /// write, flush and wait fails, and every waiter wakes to report it.
    /// For a state the file system can no longer make durable.
    pub fn fail(&self, why: String) {
        let mut state = self.shared.lock();
        state.error.get_or_insert(why);
        self.shared.notify_completed(&state);
        self.shared.notify_flushed(&state);
    }

    /// The size of an address unit.
    pub fn unit_bytes(&self) -> u64 {
        self.unit_bytes
    }

    /// Queues `job`; waits while more than the stop-access threshold is in
    /// flight. Fails if an earlier write failed. Returns the job's number.
    pub fn submit(&self, job: WriteJob) -> Result<Seq> {
        if let Some(dev) = &self.inline {
            {
                // Noted before the device has it, as every write is.
                let mut state = self.shared.lock();
                let next = state.issued + 1;
                state.note_submitted(next, job.start, job.units);
            }
            if let Err(failed) = job.write_to(dev.as_ref(), self.unit_bytes) {
                // Kept, as the writer thread keeps it: every later write,
                // flush and wait fails too.
                let why = failed.why.clone();
                self.shared.lock().keep_failure(failed);
                return Err(crate::Error::Io(std::io::Error::other(format!("write failed: {why}"))));
            }
            let mut state = self.shared.lock();
            state.issued += 1;
            state.completed = state.issued;
            return Ok(state.issued);
        }
        let bytes = job.bytes(self.header_bytes);
        let (start, units) = (job.start, job.units);
        let Some(sender) = &self.sender else {
            return Err(errno(libc::EIO, "writer thread is not running"));
        };
        // Numbered and sent under the lock, so the writer receives jobs in
        // the order of their numbers and `completed` only moves forward.
        let mut state = self.shared.lock();
        // A block written again while its last write is still queued (a
        // rolled-back copy, then the block whole) waits for that write:
        // writes in flight never overlap, so `in_flight` keyed by start
        // address stays exact, and `write_now` never overtakes a queued
        // write and so moves `completed` past it.
        while Self::overlaps(&state, start, units) {
            state = self.shared.wait(state);
        }
        Self::failed(&state)?;
        state.issued += 1;
        let seq = state.issued;
        state.note_submitted(seq, start, units);
        state.in_flight.insert(start, units);
        state.bytes += bytes;
        if sender.send((seq, job)).is_err() {
            state.in_flight.remove(&start);
            state.bytes -= bytes;
            state.error.get_or_insert_with(|| "writer thread has stopped".into());
            return Err(errno(libc::EIO, "writer thread has stopped"));
        }
        while state.bytes > self.stop_access_bytes && state.error.is_none() {
            state = self.shared.wait(state);
        }
        Self::failed(&state)?;
        Ok(seq)
    }

    /// Writes `job` on the calling thread when nothing is in flight (a
    /// write its caller waits for at once gains nothing from the writer
    /// thread, and pays two thread switches for it), else queues it behind
    /// what is: either way numbered, and completed in order.
    pub fn write_now(&self, job: WriteJob) -> Result<Seq> {
        if self.inline.is_some() {
            return self.submit(job);
        }
        let seq = {
            let mut state = self.shared.lock();
            // Checked and claimed under one lock: a write submitted from
            // another thread meanwhile goes behind this one.
            if !state.in_flight.is_empty() {
                drop(state);
                return self.submit(job);
            }
            Self::failed(&state)?;
            state.issued += 1;
            let seq = state.issued;
            state.note_submitted(seq, job.start, job.units);
            state.in_flight.insert(job.start, job.units);
            state.issued
        };
        let start = job.start;
        let written = job.write_to(self.shared.dev.as_ref(), self.unit_bytes);
        let mut state = self.shared.lock();
        state.in_flight.remove(&start);
        state.complete(seq);
        if let Err(failed) = written {
            state.keep_failure(failed);
        }
        self.shared.notify_completed(&state);
        Self::failed(&state)?;
        Ok(seq)
    }

    /// The last write submitted (0: none yet).
    pub fn issued(&self) -> Seq {
        self.shared.lock().issued
    }

    /// Every write up to this one is durable.
    pub fn durable(&self) -> Seq {
        self.shared.lock().durable
    }

    /// Flushes the device has been asked for through this queue.
    pub fn flushes(&self) -> u64 {
        self.shared.lock().flushes
    }

    /// A ticket for write `seq` (and everything submitted before it).
    pub fn ticket(&self, seq: Seq) -> Ticket {
        Ticket::new(self.shared.clone(), seq)
    }

    /// A ticket for everything submitted so far.
    pub fn ticket_for_all(&self) -> Ticket {
        self.ticket(self.issued())
    }

    /// Makes everything submitted so far durable: waits for it to reach
    /// the device, then a flush barrier (shared with anyone waiting for
    /// the same). A barrier with nothing new to cover costs nothing.
    pub fn flush(&self) -> Result<()> {
        self.wait_idle()?;
        self.ticket_for_all().wait()
    }

    /// A flush barrier that is always issued: for writes that went to the
    /// device beside the queue (a superblock written in place), which
    /// [`WriteQueue::flush`] knows nothing of. Everything submitted before
    /// is durable too.
    pub fn barrier(&self) -> Result<()> {
        self.wait_idle()?;
        let covers = {
            let mut state = self.shared.lock();
            state.flushes += 1;
            state.completed
        };
        let flushed = self.shared.dev.flush();
        let mut state = self.shared.lock();
        match flushed {
            Ok(()) => state.durable = state.durable.max(covers),
            Err(e) => {
                state.error.get_or_insert_with(|| format!("flush failed: {e}"));
            }
        }
        self.shared.notify_flushed(&state);
        Self::failed(&state)
    }

    /// Waits while a flush runs (a write issued now would not be covered
    /// by it): a caller with writes to add waits so that what the others
    /// add meanwhile goes with its own, as one write, under the next flush.
    pub fn wait_flush_done(&self) {
        let mut state = self.shared.lock();
        while state.flushing && state.error.is_none() {
            state = self.shared.wait_flushed(state);
        }
    }

    /// Whether a flush is running.
    pub fn is_flushing(&self) -> bool {
        self.shared.lock().flushing
    }

    /// Waits until every submitted write has reached the device.
    pub fn wait_idle(&self) -> Result<()> {
        let mut state = self.shared.lock();
        while !state.in_flight.is_empty() {
            state = self.shared.wait(state);
        }
        Self::failed(&state)
    }

    /// Waits until no write in flight covers any of the `units` units from
    /// `addr` on.
    pub fn wait_for(&self, addr: Daddr, units: u64) {
        self.shared.wait_for(addr, units)
    }

    /// A handle that reads the device from any thread, without the file
    /// system's lock, and tells whether a write since could have changed
    /// what it read.
    pub fn reader(&self) -> DeviceReader {
        DeviceReader { shared: self.shared.clone(), unit_bytes: self.unit_bytes }
    }

    /// Whether a write in flight covers any of the `units` units from
    /// `addr` on.
    fn overlaps(state: &State, addr: Daddr, units: u64) -> bool {
        // Writes in flight never overlap one another, so the last one
        // starting before the end is the only one that can reach `addr`.
        let end = addr + units.max(1);
        state.in_flight.range(..end).next_back().is_some_and(|(&s, &n)| addr < s + n)
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
#[path = "queue_tests.rs"]
mod tests;
