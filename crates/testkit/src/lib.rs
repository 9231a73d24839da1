//! Test support for fslab: an in-memory model of a POSIX file system and a
//! harness that runs random operation sequences against it and fslab.
//!
//! Map: [`model`] (what the answers should be), [`ops`] (the operations and
//! their seeded generator), [`harness`] (apply, compare, report). The tests
//! in `tests/` run it over `MemStorage` and over `Lfs` on a memory disk.

pub mod harness;
pub mod model;
pub mod ops;
