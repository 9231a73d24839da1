//! Aging: a file system as it lives for years (the 1997 paper, Smith and
//! Seltzer, "File System Aging"), replayed from a seed or a trace, and the
//! layout score it is judged by.
//!
//! * [`ops`] — the operations of a stream and their simulated times.
//! * [`generate`] — the seeded stream, calibrated to the paper's
//!   aggregates (§3.1, §3.2).
//! * [`trace`] — the stream as versioned text (`docs/FORMAT.md`, "Aging
//!   trace").
//! * [`score`] — the layout score of an FFS image (§3.3).
//! * [`fragmentation`] — the free space of an FFS as runs of free blocks,
//!   and an LFS cleaner's work, a day at a time.
//! * [`rebuild`] — an empty FFS given an aged one's free-space map (the
//!   1995 paper's §5.3), aging an image on a memory disk to get one, and
//!   copying an aged image to the disk it is benchmarked on (the 1997
//!   paper's §5); the free-space maps as a file of their own.
//! * [`report`] — the day lines and the results file.
//! * [`plots`] — the figures by day as SVG charts.
//! * [`run`] — replaying a stream on a [`crate::target::Target`], a day at
//!   a time, with the day's utilisation and score; the files where the
//!   stream's paths put them, or one directory per cylinder group as the
//!   1997 paper's replay had them.

pub mod fragmentation;
pub mod generate;
pub mod ops;
pub mod plots;
pub mod rebuild;
pub mod report;
pub mod run;
pub mod score;
pub mod trace;
