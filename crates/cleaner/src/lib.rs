//! Cleaning policies for fslab's log-structured file system, built only on
//! the mechanism `fslab::lfs::clean` exposes (1993 paper §3.5, Table 3).
//!
//! * [`mechanism`] — [`Mechanism`], the one surface a policy sees, with
//!   its implementations: a file system held directly, and one behind a lock
//!   shared with other threads ([`Locked`]).
//! * [`policy`] — [`Policy`] and the policies: greedy, cost-benefit, and
//!   hot-cold (cost-benefit choice, rewritten oldest data first).
//! * [`Cleaner`] — one cleaning pass: choose segments, read them, find
//!   their live blocks, account for the hidden cost, move, mark clean. It is
//!   also the [`fslab::lfs::clean::SpaceMaker`] writers run when they are
//!   short of space.
//! * [`background`] — the thread that cleans while a mount serves requests.
//! * [`workload`] — the overwrite workload that tests and benchmarks clean under.
//!
//! A policy can never lose data: the mechanism re-checks every block it is
//! asked to move and refuses to mark a segment clean that still holds one.

#![warn(missing_docs)]

pub mod background;
mod driver;
pub mod mechanism;
pub mod policy;
pub mod workload;

pub use driver::{Cleaner, Pass, SegmentReads};
pub use mechanism::{LfsAccess, Locked, Mechanism};
pub use policy::Policy;
