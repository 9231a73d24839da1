//! The Fast File System: cylinder groups, bitmaps, fragments, clustering
//! and the metadata-integrity modes, as a storage manager under the same
//! namespace as LFS (1993 paper §2.1, §5.1; 1995 paper §1.1, §3).
//!
//! * [`geometry`] — sizes and address arithmetic: groups, inode homes.
//! * [`layout`] — the superblock and cylinder-group area, encoded and
//!   validated (`docs/FORMAT.md`, "FFS").
//! * [`bitmap`] — the bitmaps as stored.
//! * [`cg`] — one cylinder group in memory and allocation inside it.
//! * [`alloc`] — the policies across groups: `blkpref`, `dirpref`,
//!   `hashalloc`, `valloc`, `realloccg`, frees, with the totals.
//! * [`mkfs`] — `newfs` and `dumpfs`, over a `disk::BlockDevice`.
//! * `fs` — the mounted file system ([`Ffs`]), mount, the superblock;
//!   `writeback` (groups, dirty buffers through the integrity mode's hooks,
//!   write-behind, sync, unmount); `inodes` (inodes in their tables), `blocks` (file blocks, fragments,
//!   `balloc`), `cluster` (a file's runs of blocks, pushed as they fill by
//!   `writeback`),
//!   `realloc` (a run of delayed blocks moved to contiguous space as it
//!   grows: `ffs_reallocblks`),
//!   `integrity` (one interface, a module per mode), `frees` (frees
//!   deferred until the pointer's removal is durable; `freed`, what a free
//!   gives back and when), `orphans` (the on-disk list of files unlinked
//!   while open), `leaks` (the background scan that frees what a crash left
//!   leaked on a soft-updates image; `leak_scan`, its state), [`journal`]
//!   (the journal's log format and replay), [`log_device`] (a log on a
//!   device of its own, paired with the file system's), `storage` (the
//!   `StorageManager` implementation), [`placement`] (where every file's
//!   blocks lie and how the free space lies, read-only, for the aging
//!   lab's layout score and fragmentation figures).
//!
//! State the mounted file system holds is typed in files that name no
//! `Ffs` (`cluster`, `freed`, `leak_scan`), so that `fs` imports no file
//! that imports it; the one cycle left is `fs` with `integrity`, a strategy
//! whose methods take the `Ffs` they act on (`tests/layering.rs`).
//!
//! Below it are only `format` (codec, inode size, block-pointer
//! arithmetic) and `disk`. Disk addresses are fragment numbers ([`Frag`]);
//! the shared inode and indirect blocks hold them as 32-bit pointers.

pub mod alloc;
pub mod bitmap;
mod blocks;
pub mod cg;
mod cluster;
mod freed;
mod frees;
mod fs;
pub mod geometry;
mod inodes;
mod integrity;
pub mod journal;
pub mod layout;
mod leak_scan;
mod leaks;
pub mod log_device;
pub mod mkfs;
mod options;
mod orphans;
pub mod placement;
mod realloc;
mod storage;
mod writeback;

pub use crate::cache::WriteMode;
pub use alloc::{Allocator, InodeGrant, Realloc};
pub use fs::{Ffs, Stats};
pub use integrity::JournalStats;
pub use layout::{
    DirPref, JournalInfo, JournalKind, LogDeviceName, Optim, Policy, RotDelay, Superblock, Totals,
};
pub use leak_scan::{LeakReport, LeakScanState};
pub use mkfs::{dump, mkfs, mkfs_with_log, plan, plan_with_log, MkfsOptions};
pub use options::{Integrity, JournalData, MountOptions, RunPush, DEFAULT_JOURNAL_BATCH};
pub use placement::{FilePlacement, GroupFreeSpace, PlacedBlock};

/// An FFS disk address: a fragment number counted from byte 0 of the
/// device. 0 is the primary superblock, so it also means "no block".
pub type Frag = u64;
