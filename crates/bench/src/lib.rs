//! The lab: the papers' workloads, written once, run on fslab over a
//! simulated 1990s disk (virtual time, deterministic), on an image file,
//! on the raw device, or on any mounted directory; results set beside the
//! papers' numbers in a report with plots. No file-system logic lives
//! here.
//!
//! * [`aging`] — aging streams (seeded or traced), their replay, the
//!   layout score.
//! * [`cpu`] — the CPU cost model of the papers' machines.
//! * [`config`] — a sensitivity run's configuration file: disk and
//!   machine parameters in place of an experiment's own.
//! * [`target`] — what workloads drive: [`target::Target`] over a library
//!   file system, the raw device, or a mounted directory.
//! * [`system`] — the systems compared, by name: LFS and FFS variants, and
//!   the papers' systems fslab lacks, listed as not yet.
//! * [`device`] — simulated disks, memory disks, image files, partitions.
//! * [`workload`] — the papers' workloads.
//! * [`experiment`] — which workload, disk, machine and systems reproduce
//!   which table or figure.
//! * [`runner`] — runs experiments into [`results::Results`].
//! * [`claims`] — the twelve headline claims and their checks.
//! * [`seeds`] — several seeds: the spread of a value, a check's verdict
//!   over all of them.
//! * [`report`] and [`plot`] — the markdown report, SVG and PNG plots.
//! * [`progress`] — the progress line.
//! * [`splitmix`] — the fixed generator the aging streams draw from (the
//!   disk crate's, which its simulated disks and crash explorer use too).

pub mod aging;
pub mod claims;
pub mod config;
pub mod cpu;
pub mod device;
pub mod experiment;
pub mod factorial;
pub mod plot;
pub mod progress;
pub mod report;
pub mod results;
pub mod runner;
pub mod seeds;
pub mod setup;
pub use disk::splitmix;
pub mod system;
pub mod target;
pub mod workload;
