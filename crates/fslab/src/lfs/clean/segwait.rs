//! `segwait` (1993 paper, Table 3): [`SegmentClock`], a count of partial
//! segments written that a cleaner sleeps on without the file system's
//! lock, with what [`Lfs::cleaning_wanted`] said as they were written. The
//! segment writer moves it ([`Lfs::advance_segment_clock`]); the mount
//! closes it when it is dropped (`CleanState`).

use super::CleaningWanted;
use crate::lfs::Lfs;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// `segwait`: a counter of partial segments written, and a way to sleep
/// until it moves, shared outside the file system's lock. With the count
/// goes what [`Lfs::cleaning_wanted`] said as they were written, so that a
/// background cleaner need not take the file system's lock to learn that
/// there is nothing to do, nor even wake: it can sleep until a partial
/// segment is written while cleaning is wanted.
#[derive(Debug, Default)]
pub struct SegmentClock {
    state: Mutex<ClockState>,
    moved: Condvar,
    /// Notified only for partial segments written while cleaning was wanted.
    wanted: Condvar,
}

#[derive(Debug, Default)]
struct ClockState {
    partials: u64,
    wanted: CleaningWanted,
    /// The file system is gone (unmounted or dropped).
    closed: bool,
    /// Calls of [`SegmentClock::interrupt`] so far.
    interrupts: u64,
}

impl SegmentClock {
    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Partial segments written since mount.
    pub fn now(&self) -> u64 {
        self.lock().partials
    }

    /// Sleeps until more than `seen` partial segments have been written,
    /// the file system is gone, `timeout` passes, or
    /// [`SegmentClock::interrupt`] is called. Returns the count.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let guard = self.lock();
        let interrupts = guard.interrupts;
        let (guard, _) = self
            .moved
            .wait_timeout_while(guard, timeout, |s| {
                s.partials <= seen && !s.closed && s.interrupts == interrupts
            })
            .unwrap_or_else(|e| e.into_inner());
        guard.partials
    }

    /// Sleeps until more than `seen` partial segments have been written and
    /// the last of them said cleaning was wanted, the file system is gone,
    /// `timeout` passes, or [`SegmentClock::interrupt`] is called. Returns
    /// the count. Partial segments written
    /// while no cleaning is wanted do not wake it: a stream of writes to a
    /// disk with space to spare would otherwise wake the waiter on every
    /// one, each wake-up a switch (and on a virtual machine a crossing to
    /// another CPU) that the writers pay for.
    pub fn wait_until_wanted(&self, seen: u64, timeout: Duration) -> u64 {
        let guard = self.lock();
        let interrupts = guard.interrupts;
        let (guard, _) = self
            .wanted
            .wait_timeout_while(guard, timeout, |s| {
                !(s.closed || s.interrupts != interrupts || (s.partials > seen && s.wanted.wanted))
            })
            .unwrap_or_else(|e| e.into_inner());
        guard.partials
    }

    /// Whether the file system this clock belonged to is gone: no segment
    /// will be written any more.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.moved.notify_all();
        self.wanted.notify_all();
    }

    /// Ends every wait in progress now, as if its timeout had passed: a
    /// cleaner being stopped (before an unmount) need not sleep out its
    /// timeout first.
    pub fn interrupt(&self) {
        self.lock().interrupts += 1;
        self.moved.notify_all();
        self.wanted.notify_all();
    }

    /// [`Lfs::cleaning_wanted`] as of the last partial segment written
    /// (all zero and not wanted before the first).
    pub fn cleaning_wanted(&self) -> CleaningWanted {
        self.lock().wanted
    }

    fn advance(&self, partials: u64, wanted: CleaningWanted) {
        let mut state = self.lock();
        state.partials += partials;
        state.wanted = wanted;
        drop(state);
        self.moved.notify_all();
        if wanted.wanted {
            self.wanted.notify_all();
        }
    }
}

impl Lfs {
    /// The clock `segwait` sleeps on; it can be waited on without the lock.
    pub fn segment_clock(&self) -> Arc<SegmentClock> {
        self.clean.clock.clone()
    }

    /// Moves the segment clock on by `partials` just handed to the device,
    /// waking `segwait`.
    pub(in crate::lfs) fn advance_segment_clock(&mut self, partials: u64) {
        let wanted = self.cleaning_wanted();
        self.clean.clock.advance(partials, wanted);
    }
}
