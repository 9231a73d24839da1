//! What the lock around the file system costs, counted since mount for
//! `fslab stat`: how many calls held it exclusively and how many shared,
//! how many of each found it taken and how long they waited, how long it
//! was held exclusively in all, and its longest exclusive hold and by what.
//!
//! A call that finds the lock free reads no clock to take it; only a wait
//! is timed, and each exclusive hold (two clock reads, about 50 ns, against
//! the several microseconds of a request's round trip). The share of the
//! time the lock was held exclusively bounds what finer locks could give
//! on this machine: requests that never wait gain nothing from them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How the lock was used since mount: a snapshot of [`LockCounters`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Time since the file system was mounted.
    pub since_mount: Duration,
    /// Calls that held the lock exclusively: every change, and every
    /// answer that could not be given from memory.
    pub exclusive: u64,
    /// Of those, the ones that found it taken and waited.
    pub exclusive_waited: u64,
    /// Their waits, in all.
    pub exclusive_wait: Duration,
    /// Time the lock was held exclusively, in all.
    pub exclusive_held: Duration,
    /// The longest exclusive hold.
    pub longest_hold: Duration,
    /// What held it then: a request's name, or a background thread's work.
    pub longest_hold_by: &'static str,
    /// Calls that took the lock shared to answer from memory.
    pub shared: u64,
    /// Of those, the ones that could not answer and went on to hold it
    /// exclusively (counted there as well).
    pub shared_declined: u64,
    /// Shared calls that found it held exclusively and waited.
    pub shared_waited: u64,
    /// Their waits, in all.
    pub shared_wait: Duration,
}

/// The counters, updated by every call that takes the lock.
pub(crate) struct LockCounters {
    mounted: Instant,
    exclusive: AtomicU64,
    exclusive_waited: AtomicU64,
    exclusive_wait_ns: AtomicU64,
    exclusive_held_ns: AtomicU64,
    /// The longest hold so far, read without the mutex to decide whether
    /// a hold is a new longest (rarely), which then takes it.
    longest_ns: AtomicU64,
    longest: Mutex<(u64, &'static str)>,
    shared: AtomicU64,
    shared_declined: AtomicU64,
    shared_waited: AtomicU64,
    shared_wait_ns: AtomicU64,
}

/// Which way a call takes the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Exclusive,
    Shared,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl LockCounters {
    /// Counters of a file system mounted now.
    pub(crate) fn new() -> LockCounters {
        LockCounters {
            mounted: Instant::now(),
            exclusive: AtomicU64::new(0),
            exclusive_waited: AtomicU64::new(0),
            exclusive_wait_ns: AtomicU64::new(0),
            exclusive_held_ns: AtomicU64::new(0),
            longest_ns: AtomicU64::new(0),
            longest: Mutex::new((0, "")),
            shared: AtomicU64::new(0),
            shared_declined: AtomicU64::new(0),
            shared_waited: AtomicU64::new(0),
            shared_wait_ns: AtomicU64::new(0),
        }
    }

    /// Takes the lock `mode`'s way: `take_now` first, which must not
    /// block, and only if it finds the lock taken, `wait_for`, timed.
    pub(crate) fn take<G>(
        &self,
        mode: Mode,
        take_now: impl FnOnce() -> Option<G>,
        wait_for: impl FnOnce() -> G,
    ) -> G {
        let (calls, waited, wait_ns) = match mode {
            Mode::Exclusive => (&self.exclusive, &self.exclusive_waited, &self.exclusive_wait_ns),
            Mode::Shared => (&self.shared, &self.shared_waited, &self.shared_wait_ns),
        };
        calls.fetch_add(1, Ordering::Relaxed);
        if let Some(guard) = take_now() {
            return guard;
        }
        let start = Instant::now();
        let guard = wait_for();
        waited.fetch_add(1, Ordering::Relaxed);
        wait_ns.fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
        guard
    }

    /// Notes an exclusive hold by `by` that began at `start` and ends now.
    pub(crate) fn held(&self, by: &'static str, start: Instant) {
        let ns = nanos(start.elapsed());
        self.exclusive_held_ns.fetch_add(ns, Ordering::Relaxed);
        if ns > self.longest_ns.load(Ordering::Relaxed) {
            let mut longest = self.longest.lock().unwrap_or_else(PoisonError::into_inner);
            if ns > longest.0 {
                *longest = (ns, by);
                self.longest_ns.store(ns, Ordering::Relaxed);
            }
        }
    }

    /// Notes a shared call that could not answer from memory.
    pub(crate) fn declined(&self) {
        self.shared_declined.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    pub(crate) fn snapshot(&self) -> LockStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (longest_ns, longest_hold_by) = *self.longest.lock().unwrap_or_else(PoisonError::into_inner);
        LockStats {
            since_mount: self.mounted.elapsed(),
            exclusive: load(&self.exclusive),
            exclusive_waited: load(&self.exclusive_waited),
            exclusive_wait: Duration::from_nanos(load(&self.exclusive_wait_ns)),
            exclusive_held: Duration::from_nanos(load(&self.exclusive_held_ns)),
            longest_hold: Duration::from_nanos(longest_ns),
            longest_hold_by,
            shared: load(&self.shared),
            shared_declined: load(&self.shared_declined),
            shared_waited: load(&self.shared_waited),
            shared_wait: Duration::from_nanos(load(&self.shared_wait_ns)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier, RwLock};

    #[test]
    fn a_call_that_finds_the_lock_taken_is_counted_as_a_wait() {
        let counters = LockCounters::new();
        let lock = RwLock::new(0u32);
        let free =
            counters.take(Mode::Exclusive, || lock.try_write().ok(), || unreachable!("the lock is free"));
        drop(free);
        let taken = lock.write().expect("lock");
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let guard =
                    counters.take(Mode::Shared, || lock.try_read().ok(), || lock.read().expect("lock"));
                *guard
            });
            // Held until the waiter has counted its call (and so found
            // the lock taken), then a while longer.
            while counters.shared.load(Ordering::Relaxed) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(40));
            drop(taken);
            assert_eq!(waiter.join().expect("waiter"), 0);
        });
        let stats = counters.snapshot();
        assert_eq!((stats.exclusive, stats.exclusive_waited), (1, 0));
        assert_eq!((stats.shared, stats.shared_waited), (1, 1));
        assert!(stats.shared_wait >= Duration::from_millis(10), "waited {:?}", stats.shared_wait);
    }

    #[test]
    fn the_longest_hold_names_what_held_the_lock() {
        let counters = Arc::new(LockCounters::new());
        let start = Instant::now();
        // Long enough that no preemption of the short holds below
        // outlasts it.
        std::thread::sleep(Duration::from_millis(50));
        counters.held("write", start);
        counters.held("getattr", Instant::now());
        let barrier = Barrier::new(2);
        std::thread::scope(|s| {
            for by in ["rename", "unlink"] {
                let (counters, barrier) = (&counters, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    counters.held(by, Instant::now());
                });
            }
        });
        let stats = counters.snapshot();
        assert_eq!(stats.longest_hold_by, "write");
        assert!(stats.longest_hold >= Duration::from_millis(50));
        assert!(stats.exclusive_held >= stats.longest_hold);
    }
}
