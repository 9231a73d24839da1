//! The request queue in front of the drive, and the order it is served in.
//!
//! Requests arrive with the clock's time; the drive takes the next one when
//! it finishes the last. Which one is the scheduler's choice among those
//! that have arrived by then:
//! 1. [`Scheduler::Fcfs`]: the oldest.
//! 2. [`Scheduler::CLook`]: the one with the lowest LBN at or after the end
//!    of the last request served; when there is none, the lowest LBN of all
//!    (a one-way elevator that sweeps up and jumps back). This is the order
//!    of 4.4BSD's `disksort()`, the queue the papers' kernels had.

use std::collections::{BTreeMap, VecDeque};

/// The order queued requests are served in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheduler {
    /// First come, first served.
    #[default]
    Fcfs,
    /// Circular LOOK by LBN (4.4BSD `disksort`).
    CLook,
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// Data from the disk to the host.
    Read,
    /// Data from the host to the disk.
    Write,
}

/// One command to the drive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    /// Serial number, in submission order.
    pub id: u64,
    pub kind: RequestKind,
    pub lbn: u64,
    pub sectors: u64,
    /// When it reached the queue.
    pub submit: u64,
}

/// Requests waiting for the drive.
///
/// Invariant: `arriving` is in submission order with non-decreasing submit
/// times; `sorted` (C-LOOK only) holds requests that had arrived by the last
/// time the drive chose one.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    scheduler: Scheduler,
    arriving: VecDeque<Request>,
    sorted: BTreeMap<(u64, u64), Request>,
    /// When the drive last chose: everything in `sorted` had arrived by then.
    last_choice: u64,
}

impl Queue {
    pub fn new(scheduler: Scheduler) -> Queue {
        Queue { scheduler, ..Queue::default() }
    }

    pub fn push(&mut self, request: Request) {
        self.arriving.push_back(request);
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.arriving.is_empty() && self.sorted.is_empty()
    }

    /// A time by which some queued request had arrived (`None` when the
    /// queue is empty): the drive chooses next at the later of this and the
    /// time it is free.
    pub fn ready_time(&self) -> Option<u64> {
        if self.sorted.is_empty() {
            self.arriving.front().map(|r| r.submit)
        } else {
            Some(self.last_choice)
        }
    }

    /// Takes the request the drive serves next when it chooses at time
    /// `now`, the last request it served having ended at LBN `cursor`.
    /// Only requests that have arrived by `now` are candidates.
    pub fn pop(&mut self, now: u64, cursor: u64) -> Option<Request> {
        match self.scheduler {
            Scheduler::Fcfs => {
                if self.arriving.front()?.submit <= now {
                    self.arriving.pop_front()
                } else {
                    None
                }
            }
            Scheduler::CLook => {
                self.last_choice = now;
                while self.arriving.front().is_some_and(|r| r.submit <= now) {
                    if let Some(r) = self.arriving.pop_front() {
                        self.sorted.insert((r.lbn, r.id), r);
                    }
                }
                let key = self
                    .sorted
                    .range((cursor, 0)..)
                    .next()
                    .or_else(|| self.sorted.iter().next())
                    .map(|(k, _)| *k)?;
                self.sorted.remove(&key)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u64, lbn: u64, submit: u64) -> Request {
        Request { id, kind: RequestKind::Read, lbn, sectors: 1, submit }
    }

    #[test]
    fn fcfs_serves_in_arrival_order() {
        let mut q = Queue::new(Scheduler::Fcfs);
        q.push(req(0, 50, 0));
        q.push(req(1, 10, 0));
        q.push(req(2, 30, 5));
        assert_eq!(q.pop(0, 0).map(|r| r.id), Some(0));
        assert_eq!(q.pop(0, 0).map(|r| r.id), Some(1));
        assert!(q.pop(4, 0).is_none(), "request 2 has not arrived at time 4");
        assert_eq!(q.pop(5, 0).map(|r| r.id), Some(2));
        assert!(q.is_empty());
    }

    #[test]
    fn clook_sweeps_up_then_jumps_back() {
        let mut q = Queue::new(Scheduler::CLook);
        for (id, lbn) in [(0, 50), (1, 10), (2, 70), (3, 30)] {
            q.push(req(id, lbn, 0));
        }
        let mut order = Vec::new();
        let mut cursor = 40;
        while let Some(r) = q.pop(0, cursor) {
            order.push(r.lbn);
            cursor = r.lbn + r.sectors;
        }
        assert_eq!(order, [50, 70, 10, 30]);
    }
}
