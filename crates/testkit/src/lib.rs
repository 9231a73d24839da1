//! Test support for fslab: an in-memory model of a POSIX file system and a
//! harness that runs random operation sequences against it and fslab.
//!
//! Map: [`model`] (what the answers should be), [`ops`] (the operations and
//! their seeded generator), [`subject`] (the file systems under test),
//! [`space`] (when a subject may answer ENOSPC), [`harness`] (apply,
//! compare, report), [`crash`]
//! (ACE-style crash exploration: workloads with persistence points, every
//! crash image mounted and checked). The tests in `tests/` run them over
//! `MemStorage` and over `Lfs` on a memory disk.

pub mod crash;
pub mod harness;
pub mod model;
pub mod ops;
pub mod space;
pub mod subject;
