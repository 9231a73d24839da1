//! What a mount of FFS is asked for: its metadata-integrity mode and the
//! rest of its options. Kept apart from the mounted state (`fs.rs`) so that
//! the integrity modes' interface (`integrity`) can name the options a mode
//! is built from without naming the file system the modes act on.

use crate::cache::WriteMode;
use crate::time::TimeSource;
use std::time::Duration;

/// How FFS keeps its metadata recoverable across a crash (2000 paper §2,
/// §8: FFS and FFS-async).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    /// 4.4BSD FFS: each namespace operation writes the metadata it depends
    /// on synchronously, in the order that leaves an image fsck can repair
    /// without loss — an inode before the entry that names it, a raised
    /// link count before the entry it counts, an entry's removal before
    /// anything it named is freed. The operation is durable when it returns.
    Sync,
    /// Everything delayed, no ordering: the 2000 paper's FFS-async, the
    /// upper bound on what metadata integrity costs. After a crash, fsck
    /// makes the image mountable; what the namespace held may be lost.
    Async,
    /// Soft updates (McKusick and Ganger; 2000 paper §4): metadata written
    /// back as lazily as `Async`, but every pointer, entry and link count
    /// tracked so that whatever block reaches the disk, at whatever
    /// moment, carries only changes whose dependencies are durable (the
    /// others rolled back in the copy written). A crash leaves only leaks;
    /// the image mounts without fsck.
    Softdep,
    /// A write-ahead log of metadata (2000 paper §5, LFFS), committed
    /// asynchronously: integrity without durability, like soft updates
    /// (§6); the log is flushed by fsync, sync and once a second. After a
    /// crash, mount replays the log and needs no fsck.
    Journal,
    /// The journal with synchronous commits: a create, remove, rename,
    /// link, mkdir or rmdir is durable when it returns (FFS's promise,
    /// §6), operations finishing together sharing a flush.
    JournalSync,
}

impl Integrity {
    /// Every mode, in the order of the 2000 paper's tables.
    pub const ALL: [Integrity; 5] =
        [Integrity::Sync, Integrity::Async, Integrity::Softdep, Integrity::Journal, Integrity::JournalSync];

    /// The name `-o integrity=` takes and `fslab stat` shows.
    pub fn name(self) -> &'static str {
        match self {
            Integrity::Sync => "sync",
            Integrity::Async => "async",
            Integrity::Softdep => "softdep",
            Integrity::Journal => "journal",
            Integrity::JournalSync => "journal-sync",
        }
    }

    /// The mode named `name` (see [`Integrity::name`]).
    pub fn from_name(name: &str) -> Option<Integrity> {
        Integrity::ALL.into_iter().find(|i| i.name() == name)
    }
}

/// Choices made at each mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOptions {
    /// Memory the buffer cache may use.
    pub cache_bytes: u64,
    /// The metadata-integrity mode.
    pub integrity: Integrity,
    /// Time between automatic syncs (4.4BSD's update daemon ran every 30 s),
    /// on `clock`.
    pub sync_interval: Duration,
    /// Who writes back: the cache's writer thread, or the file system
    /// itself, inline.
    pub writes: WriteMode,
    /// The clock automatic syncs go by (default: the host's); a mount on a
    /// simulated disk is given the disk's virtual clock.
    pub clock: TimeSource,
    /// Mount an image that was not unmounted cleanly, whose bitmaps may be
    /// stale: only for a read-only mount (over a `disk::ReadOnlyOverlay`),
    /// which allocates nothing the image will keep, or for fsck's namespace
    /// repair right after it rebuilt the groups.
    pub allow_unclean: bool,
    /// For tests: at every point where write-back may run, write a random
    /// part of what is dirty (seeded by this), so that a crash explorer
    /// sees blocks reach the disk at every moment the cache could send
    /// them, not only when it is full.
    pub adversary: Option<u64>,
    /// Operations a journal may gather into one transaction when none of
    /// them must be durable as it returns (a compound transaction, as
    /// jbd2's): fewer, larger transactions cost less to log. 1 logs each
    /// operation on its own, as the 2000 paper's LFFS did (§5).
    pub journal_batch: u32,
    /// What a journal orders of file data: `Ordered` (the default, as
    /// ext4's `data=ordered`) makes a file's new blocks durable before the
    /// transaction that points at them, so that after a crash no file holds
    /// another's old bytes; `Writeback` orders nothing, as the 2000 paper's
    /// LFFS (§6) and the lab's journals. Ignored by the other modes.
    pub journal_data: JournalData,
    /// For tests: soft updates track their dependencies but roll nothing
    /// back and order nothing, writing every block as cached — what a
    /// crash explorer runs to show that its checks catch a mode that does
    /// not keep the rules. Ignored by the other modes.
    pub disorder: bool,
    /// Whether a file's delayed blocks are moved to a contiguous free run
    /// as it is written (`realloc`); `None`: as the superblock says
    /// (`SB_REALLOC`, chosen at mkfs).
    pub realloc: Option<bool>,
    /// Which of a file's write runs go to the disk as soon as a write
    /// breaks them (`cluster.rs`): 4.4BSD's rule or FreeBSD's.
    pub run_push: RunPush,
    /// For tests: with `realloc` on, every filled block that continues a
    /// file's run moves the run, contiguous or not — so that a model test
    /// sees blocks move at every write where a move is allowed.
    pub realloc_always: bool,
    /// Clean inodes kept in memory (`cache::InodeCache`); changed ones are
    /// kept until written whatever this says.
    pub clean_inodes: usize,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            cache_bytes: 256 << 20,
            integrity: Integrity::Sync,
            sync_interval: Duration::from_secs(30),
            writes: WriteMode::Thread,
            clock: TimeSource::wall(),
            allow_unclean: false,
            adversary: None,
            journal_batch: DEFAULT_JOURNAL_BATCH,
            journal_data: JournalData::Ordered,
            disorder: false,
            realloc: None,
            run_push: RunPush::Sequential,
            realloc_always: false,
            clean_inodes: crate::cache::DEFAULT_CLEAN_INODES,
        }
    }
}

impl MountOptions {
    /// What a run on a simulated disk needs to repeat to the nanosecond:
    /// write-back inline and syncs by `clock`, so no thread and no host
    /// time decides anything.
    pub fn deterministic(clock: TimeSource) -> MountOptions {
        MountOptions { writes: WriteMode::Inline, clock, ..MountOptions::default() }
    }
}

/// Which runs of a file's written blocks are pushed to the disk when the
/// file's next write does not continue them (`-o cluster_push=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPush {
    /// Every run, as 4.4BSD's `cluster_write`: a random writer's every
    /// block goes to the disk alone as its next write comes. The lab's
    /// systems, which reproduce papers of 4.4BSD's time, run this.
    Every,
    /// Only a run that a sequential writer made, as FreeBSD's
    /// `cluster_write` since 4.0: a random writer's blocks stay delayed,
    /// and write-back sends them in address order with their neighbours.
    Sequential,
}

/// What a journal orders of file data (`-o journal_data=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalData {
    /// A file's newly allocated blocks are written and flushed before the
    /// transaction that gives them to it is logged: a crash never leaves a
    /// file pointing at a block that still holds what a deleted file left.
    Ordered,
    /// File data is not ordered against the log: after a crash, a file
    /// written since its last fsync may hold the old contents of blocks it
    /// was just given (as in `sync` and `async`, and the paper's LFFS).
    Writeback,
}

impl JournalData {
    /// The name `-o journal_data=` takes.
    pub fn name(self) -> &'static str {
        match self {
            JournalData::Ordered => "ordered",
            JournalData::Writeback => "writeback",
        }
    }
}

/// Operations a journal gathers into one transaction unless told
/// otherwise: enough that a batch's diffs cost a few percent of what its
/// operations' own would, few enough that a batch's blocks stay cached.
pub const DEFAULT_JOURNAL_BATCH: u32 = 64;
