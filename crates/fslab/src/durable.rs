//! Tickets: moments of durability a caller can wait for without the file
//! system.
//!
//! A write is durable when the device has it *and* a flush barrier issued
//! after it has returned (ARCHITECTURE.md, "Where durability comes from").
//! Whatever numbers the writes and issues the barriers (the cache's write
//! queue) implements [`Barrier`]; a storage manager hands out [`Ticket`]s
//! for the writes an operation promised, and its caller waits on them —
//! after letting other callers in, if it serialises them with a lock — so
//! that operations waiting for the same flush share it (group commit).
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

/// The durability of one write and of every write numbered before it by
/// the same [`Barrier`]. A ticket of no write ([`Ticket::none`]) is ready at
/// once.
#[derive(Clone, Default)]
pub struct Ticket {
    seq: u64,
    barrier: Option<Arc<dyn Barrier>>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ticket({})", self.seq)
    }
}

impl Ticket {
    /// Nothing to wait for.
    pub fn none() -> Ticket {
        Ticket::default()
    }

    /// A ticket for write `seq` of `barrier`.
    pub fn new(barrier: Arc<dyn Barrier>, seq: u64) -> Ticket {
        Ticket { seq, barrier: Some(barrier) }
    }

    /// The write this ticket waits for (0: none).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Whether waiting would return at once.
    pub fn is_ready(&self) -> bool {
        self.seq == 0 || self.barrier.as_ref().is_none_or(|b| b.is_durable(self.seq))
    }

    /// The later of two tickets: waiting for it waits for both, since a
    /// storage manager numbers all its writes with one barrier.
    pub fn join(self, other: Ticket) -> Ticket {
        if other.seq > self.seq {
            other
        } else {
            self
        }
    }

    /// Waits until the write is durable; fails if it, or the barrier meant
    /// to cover it, failed.
    pub fn wait(&self) -> Result<()> {
        match &self.barrier {
            Some(b) if self.seq > 0 => b.wait_durable(self.seq),
            _ => Ok(()),
        }
    }
}
