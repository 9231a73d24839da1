//! The control socket of a mount, of either layout: what `fslab stat`
//! shows of any mount (space, device counters, directory hashes), and on
//! LFS the cleaner's [`Mechanism`](fslab_cleaner::Mechanism) and the cleaner
//! report, served over a Unix socket so that a cleaner can run as its own
//! process, as the 1993 paper's cleaner does (§3.5), and several at once.
//!
//! Parts: `access` (what the server reaches, for any layout), `path`
//! (where the socket lives), `wire` (framing, encoding and decoding,
//! limits), `server`, `client`, `tests`.
//!
//! * [`socket_path_candidates`] / [`find_socket`] — where a mount's socket
//!   lives, derived from the canonical mount point alone:
//!   `/run/fslab/<FNV-1a-64 of the path, 16 hex digits>.sock`, or the same
//!   name in `$TMPDIR/fslab-<uid>/` when /run is not writable.
//! * [`Server`] — started by the mount daemon: one thread accepting, one
//!   per connection; it reaches the file system only through [`SharedFs`],
//!   which any layout implements, and the cleaner's requests through
//!   [`LogAccess`], which a layout without a log (FFS) answers with
//!   EOPNOTSUPP and [`FFS_HAS_NO_CLEANER`].
//! * [`Client`] — a [`Mechanism`](fslab_cleaner::Mechanism) over the socket, so
//!   `Cleaner::pass` runs unchanged in another process, plus
//!   [`Client::report`], [`Client::mount_report`],
//!   [`Client::dirhash_report`], [`Client::memory_report`] and
//!   [`Client::lock_report`].
//!
//! Protocol, version 11 (`wire`). Every integer is little-endian.
//!
//! ```text
//! frame    = u32 length, then `length` bytes (requests ≤ 16 MiB, responses ≤ 1 GiB + 1 MiB)
//! request  = u8 op, then its arguments
//! response = u8 0, then the results | u8 1, i32 errno, u16 length, message (UTF-8)
//! op 0 hello        "FSLC", u32 version        → "FSLC", u32 version   (first, once)
//! op 1 segment_table                          → table (header, u32 count, count × segment)
//! op 2 read_segment u64 seg                   → the segment's bytes (rest of the frame)
//! op 3 bmapv        u32 count, count × ref    → u32 count, count × u64 daddr
//! op 4 markv_cost   u32 count, count × ref    → u64 blocks
//! op 5 markv        u32 count, count × ref, u8 to (0 shared, 1 cold) → u64 moved, u64 skipped, u64 blocks_written
//! op 6 segclean     u64 seg                   → nothing
//! op 7 segwait      u32 milliseconds (≤ 10 s) → nothing
//! op 8 report                                 → policy, counters, cleaned segments, thresholds,
//!                                               u8 flags (1 cold head open, 2 age predicts survival),
//!                                               u64 partial segments written at the cold head
//! op 9 segment_refs u64 seg                   → u32 count, count × ref (what the summaries name)
//! op 10 dirhash                               → u8 flags (1 on, 2 checking), u64 max memory,
//!                                               u64 min size, 11 × u64 counters (the order of
//!                                               `DirhashStats`' fields)
//! op 11 mount                                 → u8 layout (0 LFS, 1 FFS), u32 block size,
//!                                               u32 longest name, 4 × u64 (blocks, blocks free,
//!                                               inodes, inodes free),
//!                                               then LFS: 6 × u64 (the order of `lfs::Stats`' fields)
//!                                               or FFS: u8 integrity (0 sync, 1 async, 2 softdep,
//!                                               3 journal, 4 journal=sync), u32 cylinder groups,
//!                                               9 × u64 (`ffs::Stats`' order), leaks, u8 journal
//!                                               (0 none, 1: then 7 × u64, `JournalStats`' order;
//!                                               `largest_transaction`, the sixth, since version 10,
//!                                               `data_logged`, the seventh, since version 11)
//! leaks    = u8 scan (0 not needed, 1 running: u64 next, u64 of; 2 done; 3 stopped: u8 length,
//!            reason), then 5 × u64 (the order of `LeakReport`'s counters)
//! op 12 memory                               → u64 resident bytes (0: unknown), u32 count,
//!                                               count × (u8 length, name (UTF-8), u64 entries,
//!                                               u64 bytes)
//! op 13 lock                                 → 10 × u64 (the order of `LockReport`'s numbers),
//!                                               u8 length, what held the lock longest (UTF-8)
//! counters = 6 × u64 (the order of `CleanerCounters`' fields; `blocks_moved`, the sixth, since version 9)
//! ref      = u64 ino, u32 version, u8 kind (0 block, 1 inode), i64 lbn, u64 daddr, i64 age
//! ```
//!
//! A new request is added without a new version: a server that predates
//! it answers EOPNOTSUPP, which the client passes on, so an older mount
//! still serves everything else to a newer `fslab`. A changed request or
//! response bumps the version. Ops 1–9 are the cleaner's: an FFS mount
//! answers each with EOPNOTSUPP and [`FFS_HAS_NO_CLEANER`] and keeps the
//! connection (a mount older than op 11 is always LFS: only LFS mounts
//! served a socket then).
//!
//! `markv` carries no block contents: the file system reads each block
//! itself, so a client can move blocks but never choose what they hold.
//! Every length and count is checked against a cap and against the bytes
//! actually received before anything is allocated for it; a malformed
//! request gets an error response, an oversized frame an error and a closed
//! connection, and neither can panic the server.
//!
//! Who may connect: the socket's directory is mode 0700 and owned by the
//! user who mounted, so only that user (or root) reaches it.

mod access;
mod client;
mod path;
mod server;
#[cfg(test)]
mod tests;
mod wire;

use fslab::ffs::Integrity;
use fslab::lfs::clean::CleanerReport;
use fslab::storage::StatFs;
use fslab::ufs::{DirhashOptions, DirhashStats};
use fslab::Layout;

pub use access::{LogAccess, ServedStorage, SharedFs, FFS_HAS_NO_CLEANER};
pub use client::Client;
pub use path::{find_socket, private_dir, socket_file_name, socket_path_candidates};
pub use server::Server;
pub use wire::{IDLE_TIMEOUT, MAX_BLOCKS, MAX_CONNECTIONS, MAX_SEGWAIT};

/// What `fslab stat` shows: the cleaner's counters and the segment table's
/// thresholds, taken together under the lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The policy of the mount's own cleaner, or "off".
    pub policy: String,
    /// The cleaner's counters since mount.
    pub cleaner: CleanerReport,
    /// Segments in the file system.
    pub segments: u64,
    /// Bytes per segment.
    pub segment_bytes: u64,
    /// Clean segments now.
    pub clean_segments: u64,
    /// Clean segments kept for the cleaner.
    pub reserve_segments: u64,
    /// Cleaning starts below this many clean segments.
    pub low_water: u64,
    /// Background cleaning stops at this many.
    pub high_water: u64,
    /// Whether the log has a cold head open.
    pub cold_head: bool,
    /// Partial segments written at the cold head since mount.
    pub cold_partial_segments: u64,
    /// Whether age predicts survival on this disk (what hot-cold goes by).
    pub ages_predict_survival: bool,
}

/// What `fslab stat` shows about directory hashing: the mount's dirhash
/// settings and its counters since mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirhashReport {
    /// The settings (mount options).
    pub options: DirhashOptions,
    /// The counters, and the memory the hashes hold.
    pub stats: DirhashStats,
}

/// What `fslab stat` shows of a mount of any layout: its space as `df`
/// sees it and the layout's counters since mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountReport {
    /// Blocks and inodes, in all and free.
    pub space: StatFs,
    /// The layout and its own counters.
    pub layout: LayoutReport,
}

/// What `fslab stat` shows of a daemon's memory: its resident size and
/// the structures that grow with the files it has seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryReport {
    /// The daemon's resident memory (`VmRSS`), if the system said.
    pub resident: Option<u64>,
    /// The file system's structures, estimated ([`fslab::memory`]).
    pub parts: Vec<fslab::memory::MemoryUse>,
}

/// What `fslab stat` shows of the lock around a mounted file system: how
/// the calls since mount took it, how long they waited for it and how long
/// it was held exclusively (times in nanoseconds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockReport {
    /// Time since the mount.
    pub since_mount_ns: u64,
    /// Calls that held it exclusively.
    pub exclusive: u64,
    /// Of those, the ones that found it taken.
    pub exclusive_waited: u64,
    /// Their waits, in all.
    pub exclusive_wait_ns: u64,
    /// Time it was held exclusively, in all.
    pub exclusive_held_ns: u64,
    /// The longest exclusive hold.
    pub longest_hold_ns: u64,
    /// What held it then (a request's name, or a background thread's work).
    pub longest_hold_by: String,
    /// Calls that took it shared, to answer from memory.
    pub shared: u64,
    /// Of those, the ones that could not and went on to hold it exclusively.
    pub shared_declined: u64,
    /// Shared calls that found it held exclusively.
    pub shared_waited: u64,
    /// Their waits, in all.
    pub shared_wait_ns: u64,
}

/// A layout's counters since mount, with what names its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutReport {
    /// The log: partial segments, blocks and device writes, checkpoints.
    Lfs(fslab::lfs::Stats),
    /// FFS: its integrity mode, its cylinder groups, its device reads and
    /// writes.
    Ffs {
        /// How metadata is kept recoverable (`-o integrity=`).
        integrity: Integrity,
        /// Cylinder groups in the file system.
        cylinder_groups: u32,
        /// The counters.
        stats: fslab::ffs::Stats,
        /// The background scan for what a crash leaked.
        leaks: fslab::ffs::LeakReport,
        /// What the journal did, on a journal mount.
        journal: Option<fslab::ffs::JournalStats>,
    },
}

impl LayoutReport {
    /// Which layout this is.
    pub fn layout(&self) -> Layout {
        match self {
            LayoutReport::Lfs(_) => Layout::Lfs,
            LayoutReport::Ffs { .. } => Layout::Ffs,
        }
    }
}
