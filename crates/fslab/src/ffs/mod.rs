//! The Fast File System's storage-manager parts that stand apart from the
//! storage boundary: the on-disk format, the allocator, mkfs and dump.
//!
//! * [`geometry`] — sizes and address arithmetic: groups, inode homes.
//! * [`layout`] — the superblock and cylinder-group area, encoded and
//!   validated (`docs/FORMAT.md`, "FFS").
//! * [`bitmap`] — the bitmaps as stored.
//! * [`cg`] — one cylinder group in memory and allocation inside it.
//! * [`alloc`] — the policies across groups: `blkpref`, `dirpref`,
//!   `hashalloc`, `valloc`, `realloccg`, frees, with the totals.
//! * [`mkfs`] — `newfs` and `dumpfs`, over a `disk::BlockDevice`.
//!
//! Below it are only `format` (codec, inode size, block-pointer
//! arithmetic) and `disk`. Disk addresses are fragment numbers ([`Frag`]);
//! the shared inode and indirect blocks hold them as 32-bit pointers.

pub mod alloc;
pub mod bitmap;
pub mod cg;
pub mod geometry;
pub mod layout;
pub mod mkfs;

pub use alloc::{Allocator, InodeGrant, Realloc};
pub use layout::{Optim, Policy, RotDelay, Superblock, Totals};
pub use mkfs::{dump, mkfs, plan, MkfsOptions};

/// An FFS disk address: a fragment number counted from byte 0 of the
/// device. 0 is the primary superblock, so it also means "no block".
pub type Frag = u64;
