//! Tickets: moments of durability a caller can wait for without the file
//! system.
//!
//! A write is durable when the device has it *and* a flush barrier issued
//! after it has returned (DESIGN.md, "The durability model").
//! Whatever numbers the writes and issues the barriers (the cache's write
//! queue) implements [`Barrier`]; a storage manager hands out [`Ticket`]s
//! for the writes an operation promised, and its caller waits on them —
//! after letting other callers in, if it serialises them with a lock — so
//! that operations waiting for the same flush share it (group commit).
//!
//! A caller that reads the device without the file system's lock asks the
//! same writer whether a write since could have changed what it read
//! ([`UnlockedReads`]).
//!
//! This module is below every layer that uses it: it names none of them.

use crate::Result;
use std::sync::Arc;

/// What makes numbered writes durable: the writer of a device.
pub trait Barrier: Send + Sync {
    /// Waits until write `seq` and every write numbered before it are
    /// durable, issuing a flush barrier if nobody else is issuing one that
    /// covers them. Fails if one of them, or the barrier, failed.
    fn wait_durable(&self, seq: u64) -> Result<()>;

    /// Whether write `seq` is durable already (or failed: waiting would
    /// return at once either way).
    fn is_durable(&self, seq: u64) -> bool;
}

/// Device reads by a caller that does not hold the file system's lock,
/// and what makes them safe: every write is numbered when it is submitted,
/// before the device has it, so a read of addresses that no write numbered
/// after a moment covers saw them as they were at that moment. The writer
/// of a device (the cache's write queue) implements it; a storage
/// manager's planned reads (`storage::Fetches`) use it.
pub trait UnlockedReads: Send + Sync {
    /// Reads `buf.len()` bytes at address `addr` (in the writer's address
    /// units), once no write in flight covers them.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()>;

    /// Whether a write numbered after `since` may cover any of the `bytes`
    /// bytes at address `addr` (true too when the writer no longer
    /// remembers back that far).
    fn written_since(&self, since: u64, addr: u64, bytes: usize) -> bool;

    /// The number of the last write submitted: the moment a read planned
    /// now starts from.
    fn issued(&self) -> u64;
}

/// The durability of one write and of every write numbered before it by
/// the same [`Barrier`], or of such writes of several barriers (a ticket
/// joined from tickets of different barriers waits for each). A ticket of
/// no write ([`Ticket::none`]) is ready at once.
#[derive(Clone, Default)]
pub struct Ticket {
    /// The first barrier's write, and any other barrier's after it: a
    /// ticket of one barrier, the usual one, allocates nothing.
    first: Option<(Arc<dyn Barrier>, u64)>,
    more: Vec<(Arc<dyn Barrier>, u64)>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seqs: Vec<u64> = self.waits().map(|(_, seq)| seq).collect();
        write!(f, "Ticket({seqs:?})")
    }
}

impl Ticket {
    /// Nothing to wait for.
    pub fn none() -> Ticket {
        Ticket::default()
    }

    /// A ticket for write `seq` of `barrier`.
    pub fn new(barrier: Arc<dyn Barrier>, seq: u64) -> Ticket {
        if seq == 0 {
            return Ticket::none();
        }
        Ticket { first: Some((barrier, seq)), more: Vec::new() }
    }

    fn waits(&self) -> impl Iterator<Item = (&Arc<dyn Barrier>, u64)> {
        self.first.iter().chain(self.more.iter()).map(|(b, seq)| (b, *seq))
    }

    /// The latest write this ticket waits for, of any barrier (0: none).
    pub fn seq(&self) -> u64 {
        self.waits().map(|(_, seq)| seq).max().unwrap_or(0)
    }

    /// Whether waiting would return at once.
    pub fn is_ready(&self) -> bool {
        self.waits().all(|(b, seq)| b.is_durable(seq))
    }

    /// Both tickets: waiting for it waits for both. Of two writes of one
    /// barrier it keeps the later, since a barrier's writes are durable in
    /// the order of their numbers.
    pub fn join(mut self, other: Ticket) -> Ticket {
        for (barrier, seq) in other.first.into_iter().chain(other.more) {
            let mine =
                self.first.iter_mut().chain(self.more.iter_mut()).find(|(b, _)| Arc::ptr_eq(b, &barrier));
            if let Some((_, have)) = mine {
                *have = (*have).max(seq);
            } else if self.first.is_none() {
                self.first = Some((barrier, seq));
            } else {
                self.more.push((barrier, seq));
            }
        }
        self
    }

    /// Waits until the writes are durable; fails if one of them, or a
    /// barrier meant to cover it, failed.
    pub fn wait(&self) -> Result<()> {
        for (barrier, seq) in self.waits() {
            barrier.wait_durable(seq)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A barrier whose writes up to `durable` are durable; a wait makes
    /// every write up to the one waited for durable, and is counted.
    #[derive(Default)]
    struct Counted {
        durable: Mutex<u64>,
        waits: Mutex<Vec<u64>>,
    }

    impl Barrier for Counted {
        fn wait_durable(&self, seq: u64) -> Result<()> {
            self.waits.lock().expect("lock").push(seq);
            let mut durable = self.durable.lock().expect("lock");
            *durable = (*durable).max(seq);
            Ok(())
        }

        fn is_durable(&self, seq: u64) -> bool {
            *self.durable.lock().expect("lock") >= seq
        }
    }

    #[test]
    fn a_joined_ticket_keeps_the_later_write_of_a_barrier_and_waits_for_every_barrier() {
        let (a, b) = (Arc::new(Counted::default()), Arc::new(Counted::default()));
        let ticket = Ticket::new(a.clone(), 3)
            .join(Ticket::new(b.clone(), 7))
            .join(Ticket::new(a.clone(), 5))
            .join(Ticket::none())
            .join(Ticket::new(a.clone(), 4));
        assert_eq!(ticket.seq(), 7);
        assert!(!ticket.is_ready());
        ticket.wait().expect("wait");
        assert_eq!(*a.waits.lock().expect("lock"), vec![5], "one wait, for the later write");
        assert_eq!(*b.waits.lock().expect("lock"), vec![7]);
        assert!(ticket.is_ready());
        assert!(Ticket::new(a, 0).is_ready(), "write 0 is no write");
    }
}
