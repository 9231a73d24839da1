//! The waits a ring queue hands to other threads ([`super::Serve::serve_later`]):
//! an answer that must wait for the disk before it is sent (an fsync's)
//! waits on a worker thread, and the queue's thread goes on serving the
//! other callers of its CPU meanwhile; when the wait ends, the worker says
//! so through an eventfd the queue's ring reads, and the queue's thread
//! commits the answer (only it may submit to its ring).
//!
//! Workers are started as waits come, up to one per entry of the queue
//! (no more can wait at once), and end with the queue.

use super::Wait;
use io_uring::{opcode, squeue, types};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// A wait handed out: the entry whose answer waits, and the wait.
type Job = (usize, Wait);

/// A wait ended: the entry, and the errno that replaces its answer if
/// the wait failed.
pub(super) type Ended = (usize, Result<(), i32>);

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

    /// Runs `wait`, for `entry`'s answer, on a worker.
    pub(super) fn hand(&mut self, entry: usize, wait: Wait) -> io::Result<()> {
        if self.idle.load(Ordering::Acquire) == 0 && self.workers.len() < self.limit {
            self.start_worker()?;
        }
        let jobs = self.jobs.as_ref().ok_or_else(|| io::Error::other("waits already finished"))?;
        jobs.send((entry, wait)).map_err(|_| io::Error::other("every wait worker has ended"))
    }

    fn start_worker(&mut self) -> io::Result<()> {
        let (next_job, ended, idle) =
            (Arc::clone(&self.next_job), self.ended_tx.clone(), Arc::clone(&self.idle));
        let eventfd = Arc::clone(&self.eventfd);
        let worker = std::thread::Builder::new().name("fslab-ring-wait".to_string()).spawn(move || loop {
            idle.fetch_add(1, Ordering::AcqRel);
            let job = next_job.lock().unwrap_or_else(PoisonError::into_inner).recv();
            idle.fetch_sub(1, Ordering::AcqRel);
            let Ok((entry, wait)) = job else { return };
            // A wait that panics fails its answer; the entry must still
            // be committed, or the queue could never end.
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(wait)).unwrap_or(Err(libc::EIO));
            if ended.send((entry, result)).is_err() {
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
