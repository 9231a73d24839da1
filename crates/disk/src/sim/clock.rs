//! The virtual clock: simulated time in nanoseconds, shared by a simulated
//! disk and whoever drives it.
//!
//! Time moves only when someone moves it: a [`SimDisk`](super::SimDisk)
//! moves it to the completion of a read or a flush the caller waits for, and
//! a caller charges its own CPU time with [`VirtualClock::advance`]. Nothing
//! reads the host's wall clock, so a run repeats to the nanosecond.

use std::sync::atomic::{AtomicU64, Ordering};

/// Simulated time, in nanoseconds since the clock was made.
///
/// Shared as an `Arc<VirtualClock>`: several disks (a data disk and a log
/// disk, say) and the code above them see one time. Time never goes
/// backwards; every method is safe to call from several threads.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: AtomicU64,
}

impl VirtualClock {
    /// A clock at time zero.
    pub fn new() -> VirtualClock {
        VirtualClock { now: AtomicU64::new(0) }
    }

    /// The current simulated time in nanoseconds.
    pub fn now(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    /// Moves time forward by `ns` (CPU time the caller spent) and returns
    /// the new time.
    pub fn advance(&self, ns: u64) -> u64 {
        self.now.fetch_add(ns, Ordering::SeqCst).saturating_add(ns)
    }

    /// Moves time forward to `t` if it is later than now, and returns the
    /// time after the call (never earlier than before it).
    pub fn advance_to(&self, t: u64) -> u64 {
        self.now.fetch_max(t, Ordering::SeqCst).max(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_only_moves_forward() {
        let clock = VirtualClock::new();
        assert_eq!(clock.now(), 0);
        assert_eq!(clock.advance(5), 5);
        assert_eq!(clock.advance_to(3), 5);
        assert_eq!(clock.advance_to(9), 9);
        assert_eq!(clock.now(), 9);
    }
}
