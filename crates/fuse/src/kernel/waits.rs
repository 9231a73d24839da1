//! The answers a ring queue hands to other threads to finish
//! ([`super::Serve::serve_later`]): an answer that must wait for the disk
//! before it is sent (an fsync's durability, a read's transfers) is
//! finished on a worker thread, writing into its entry's payload, and the
//! queue's thread goes on serving the other callers of its CPU meanwhile;
//! when it is finished, the worker says so through an eventfd the queue's
//! ring reads, and the queue's thread commits the answer (only it may
//! submit to its ring).
//!
//! Workers are started as waits come, up to one per entry of the queue
//! (no more can wait at once), and end with the queue.

use super::reply::Answer;
use super::Finish;
use io_uring::{opcode, squeue, types};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// An entry's reply buffer, lent to a worker while the entry waits.
pub(super) struct Lent {
    /// The buffer's start; valid for `len` bytes while the entry waits.
    pub(super) ptr: *mut u8,
    /// Its length.
    pub(super) len: usize,
}

// SAFETY: a lent buffer is touched by one thread at a time: the worker
// while the entry waits, the queue's thread only after the worker has
// said it is done (see `queue::State::Waiting`).
unsafe impl Send for Lent {}

/// An answer handed out: the entry, the rest of its answer, the answer so
/// far, and the entry's reply buffer.
type Job = (usize, Finish, Answer, Lent);

/// An answer finished: the entry, and the answer to send.
pub(super) type Ended = (usize, Answer);

/// The user data of the ring's read of the eventfd (entries use their
/// index).
pub(super) const WOKEN: u64 = u64::MAX;

/// A queue's waits in flight and the workers that run them.
pub(super) struct Waits {
    eventfd: Arc<OwnedFd>,
    jobs: Option<mpsc::Sender<Job>>,
    next_job: Arc<Mutex<mpsc::Receiver<Job>>>,
    ended_tx: mpsc::Sender<Ended>,
    ended: mpsc::Receiver<Ended>,
    /// Workers waiting for a job.
    idle: Arc<AtomicUsize>,
    workers: Vec<JoinHandle<()>>,
    limit: usize,
    /// What the ring's read of the eventfd writes into: boxed, so that its
    /// address stays fixed while a read is outstanding.
    counter: Box<u64>,
    /// A read of the eventfd is outstanding in the ring.
    pub(super) armed: bool,
}

impl Waits {
    /// Waits for a queue of `limit` entries, with no worker yet.
    pub(super) fn new(limit: usize) -> io::Result<Waits> {
        // SAFETY: eventfd has no pointer arguments; a descriptor it returns
        // is new and owned by no one else.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        let eventfd = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        let (jobs, next_job) = mpsc::channel();
        let (ended_tx, ended) = mpsc::channel();
        Ok(Waits {
            eventfd,
            jobs: Some(jobs),
            next_job: Arc::new(Mutex::new(next_job)),
            ended_tx,
            ended,
            idle: Arc::new(AtomicUsize::new(0)),
            workers: Vec::new(),
            limit,
            counter: Box::new(0),
            armed: false,
        })
    }

    /// Finishes `entry`'s answer (so far `answer`, in `reply`) with
    /// `finish` on a worker.
    pub(super) fn hand(
        &mut self,
        entry: usize,
        finish: Finish,
        answer: Answer,
        reply: Lent,
    ) -> io::Result<()> {
        if self.idle.load(Ordering::Acquire) == 0 && self.workers.len() < self.limit {
            self.start_worker()?;
        }
        let jobs = self.jobs.as_ref().ok_or_else(|| io::Error::other("waits already finished"))?;
        jobs.send((entry, finish, answer, reply)).map_err(|_| io::Error::other("every wait worker has ended"))
    }

    fn start_worker(&mut self) -> io::Result<()> {
        let (next_job, ended, idle) =
            (Arc::clone(&self.next_job), self.ended_tx.clone(), Arc::clone(&self.idle));
        let eventfd = Arc::clone(&self.eventfd);
        let worker = std::thread::Builder::new().name("fslab-ring-wait".to_string()).spawn(move || loop {
            idle.fetch_add(1, Ordering::AcqRel);
            let job = next_job.lock().unwrap_or_else(PoisonError::into_inner).recv();
            idle.fetch_sub(1, Ordering::AcqRel);
            let Ok((entry, finish, answer, reply)) = job else { return };
            // SAFETY: the entry's buffer, lent while it waits (see `Lent`).
            let reply = unsafe { std::slice::from_raw_parts_mut(reply.ptr, reply.len) };
            // A finish that panics fails its answer; the entry must still
            // be committed, or the queue could never end.
            let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| finish(reply, answer)));
            if ended.send((entry, finished.unwrap_or(Answer::Error(libc::EIO)))).is_err() {
                return;
            }
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a live buffer to an eventfd this
            // worker keeps open. A failure cannot happen short of the
            // counter's overflow, which 2^64 - 1 wake-ups would take.
            unsafe { libc::write(eventfd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        })?;
        self.workers.push(worker);
        Ok(())
    }

    /// The waits that have ended since the last call.
    pub(super) fn ended(&self) -> impl Iterator<Item = Ended> + '_ {
        self.ended.try_iter()
    }

    /// A read of the eventfd for the ring, which completes with user data
    /// [`WOKEN`] once a wait has ended.
    ///
    /// # Safety
    ///
    /// The read writes into `self`'s counter: `self` must outlive the ring
    /// or the read's completion, whichever comes first.
    pub(super) unsafe fn read(&mut self) -> squeue::Entry128 {
        let counter: *mut u64 = &mut *self.counter;
        opcode::Read::new(types::Fd(self.eventfd.as_raw_fd()), counter.cast(), 8)
            .build()
            .user_data(WOKEN)
            .into()
    }

    /// Makes an outstanding read of the eventfd complete (at the end of
    /// the queue, so that nothing the ring does outlives the counter).
    pub(super) fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: as in the worker.
        unsafe { libc::write(self.eventfd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Ends every worker once its wait, if any, has ended.
    pub(super) fn finish(&mut self) {
        self.jobs = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

impl Drop for Waits {
    fn drop(&mut self) {
        self.finish();
    }
}
