//! Crash exploration in the style of ACE, CrashMonkey's automatic crash
//! explorer: short workloads of "core" operations with persistence points,
//! run over a [`CrashDisk`](disk::CrashDisk), then every (or a sample of
//! every) image a power cut could leave is mounted and checked against what
//! the workload was promised (`docs/SEMANTICS.md`, "Durability" and
//! "Atomicity").
//!
//! Map:
//! * The vocabulary: [`Op`] (one primitive call), [`Persist`] (fsync,
//!   fdatasync, fsync of a directory, sync), [`Step`], [`Workload`].
//! * The generator: [`setup_ops`] / [`setup_tree`] (what exists, synced,
//!   before a workload — not crash-explored), [`alphabet`] (the core
//!   operations), [`persist_options`], [`build`], [`workloads`] (every
//!   sequence of one and two core operations with persistence points,
//!   [`Coverage`] of their combinations; dependencies such as "create before
//!   write" added as ACE does).
//! * The oracle model: [`Tree`], the namespace and contents after each
//!   primitive operation; a workload's run keeps one per step.
//! * The run: [`setup_image`] builds the synced setup image once;
//!   [`record`] runs a workload on a fresh [`CrashDisk`](disk::CrashDisk)
//!   over a copy of it and notes, for each persistence point, the device
//!   event count when it returned ([`Recorded`]).
//! * The check: [`explore`] enumerates a workload's crash states within a
//!   [`Budget`] and checks each ([`check_state`], [`Checked`]);
//!   [`explore_all`] does every workload on several threads; [`Outcome`]
//!   counts and keeps the [`Violation`]s.
//!
//! What is checked on each crash image (a violation names the workload, the
//! crash state's description and cut, expected and found):
//! 1. mount succeeds (roll-forward never fails on a crash image);
//! 2. the tree walked from the root is consistent: every entry's inode is
//!    readable and of the entry's type, `.` and `..` are right, link counts
//!    match the names, no directory is reached twice;
//! 3. the namespace (every path, with its type and inode number) is exactly
//!    the namespace after some prefix of the workload's operations, and not
//!    older than the latest acknowledged persistence point. Directory
//!    operations are all-or-nothing and applied in log order, and any
//!    fsync or sync writes every pending directory operation with the ifile
//!    (SEMANTICS.md), so this covers "fsync of the parent makes the name
//!    durable", rename atomicity (the target names the old or new inode,
//!    source and target never both vanish) and "no half-applied directory
//!    operation";
//! 4. a file covered by an acknowledged fsync / fdatasync of it, or by a sync
//!    (the setup is one), holds its contents and size as of then or as of
//!    some later step of the workload;
//! 5. a file never shows data it was not given: its size is one it had, and
//!    every byte is 0 or a byte that some state of that file had at that
//!    offset; a symlink's target is the one it was made with;
//! 6. after the mount and a clean unmount, `fslab-check` (fsck) finds
//!    nothing at all — live bytes, summaries, flags, free list exact. That
//!    includes a file the run held open when its last name went
//!    ([`Op::UnlinkOpen`]): the recovery mount frees it from the orphan
//!    list (or from what roll-forward applied);
//! 7. when the mount recovered something, a second power cut during that
//!    mount or its unmount changes nothing: mounting again finds the same
//!    tree, and 1-6 hold ([`check_state`]; the image after the unmount and
//!    [`Budget::second_crashes`] sampled cuts per state).
//!
//! Files: `workload.rs` (the vocabulary and the generator), `tree.rs` (the
//! oracle model), `record.rs` (the setup image and a workload's recorded
//! run), `observe.rs` (walking a mounted image into what it shows),
//! `check.rs` (one crash state's checks, 1-7 below), `explore.rs`
//! (enumerating crash states, the outcome), `repair_cut.rs` (an fsck
//! repair the power cuts part way). This file holds the geometry
//! every run uses and the byte pattern files are written with.

mod check;
mod explore;
mod observe;
mod op;
mod record;
mod repair_cut;
mod tree;
mod workload;

pub use check::{check_state, Checked};
pub use explore::{explore, explore_all, Budget, Outcome, Violation};
pub use observe::{walk, Observed, Seen};
pub use op::Op;
pub use record::{apply_both, record, record_on, resolve, setup_image, setup_image_on, Point, Recorded};
pub use repair_cut::repair_cut_after;
pub use tree::{name_of, parent_of, Body, Node, NodeId, Tree};
pub use workload::{
    alphabet, build, persist_options, setup_ops, setup_tree, workloads, Coverage, Persist, Step, Workload,
};

use fslab::lfs::MountOptions;

/// Size of the device each workload runs on.
pub const DISK_BYTES: u64 = 2 << 20;
/// Block size of the file system under test.
pub const BLOCK_SIZE: u32 = 4096;
/// Segment size of the file system under test.
pub const SEGMENT_SIZE: u32 = 64 << 10;
/// Buffer cache of every mount.
pub const CACHE_BYTES: u64 = 1 << 20;

/// The mount options every mount here uses.
pub fn mount_options() -> MountOptions {
    MountOptions { cache_bytes: CACHE_BYTES, ..MountOptions::default() }
}

/// The byte a write tagged `tag` puts at file offset `offset`: never 0, and
/// two different tags (below 251) never put the same byte at one offset, so
/// a byte tells which write it came from.
pub fn pattern_byte(tag: u8, offset: u64) -> u8 {
    ((offset.wrapping_mul(7) + u64::from(tag) * 31) % 251) as u8 + 1
}

/// `len` bytes a write tagged `tag` puts at `offset`.
pub fn pattern(tag: u8, offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| pattern_byte(tag, offset + i)).collect()
}
