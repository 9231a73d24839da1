//! fsck for fslab images, both layouts: verify an unmounted image and
//! repair what can be repaired safely. The layout is told by the magic at
//! byte 0 (`fslabLFS` / `fslabFFS`); each has its own checker, and the
//! namespace phases, which are the same for both, are shared.
//!
//! Map:
//! * [`check`] — read-only verification, returning a [`Report`]:
//!   * LFS (1993 BSD-LFS paper §3.4): six phases from the newest valid
//!     checkpoint —
//!     1. superblock copies and checkpoint (`image`);
//!     2. the ifile: trailers, segment usage table, inode map (`inodes`);
//!     3. every allocated inode and its block tree, each block confirmed by
//!        the segment summary of its partial segment, none claimed twice
//!        (`inodes`);
//!     4. the directory tree (`tree`);
//!     5. segment usage: live bytes recounted, flags (`usage`);
//!     6. the free-inode list (`usage`).
//!   * FFS (`ffs`): the superblock and its copies, then the five phases of
//!     fsck (Table 2 of the 1993 paper): blocks and sizes, pathnames,
//!     connectivity, reference counts (the last three in `tree`), and the
//!     cylinder groups rebuilt from what the others found.
//! * [`fsck`] — check, then (unless read-only) apply the problems' [`Fix`]es
//!   and check again, a few rounds at most (`repair`; FFS's own steps in
//!   `ffs::repair`).
//!
//! Relies on `fslab`'s public decoders for every on-disk structure and on
//! `disk::BlockDevice`; never shares state with a mounted instance (the
//! caller makes sure the image is not mounted). For LFS, work and memory
//! grow with the data on the image (inodes, blocks, directory entries), not
//! with its size: segments are visited only where live blocks lie. FFS has
//! no log to follow: every inode table up to its group's initialised mark
//! and every group is read, as fsck_ffs does.

mod ffs;
mod ifile;
mod image;
mod inodes;
mod orphans;
mod repair;
mod tree;
mod usage;

use disk::BlockDevice;
use fslab::format::{Ino, Lbn};
use std::fmt;
use std::time::{Duration, Instant};

pub use repair::fsck;

/// What is wrong with an extended-attribute block as read (its magic and
/// checksum, docs/FORMAT.md; the same block on both layouts), if anything.
pub(crate) fn xattr_block_damage(block: &[u8]) -> Option<&'static str> {
    use fslab::format::codec::{crc32c_skipping, Decoder};
    /// Where the block's checksum lies: bytes 4..8, over the block with
    /// that field taken as zero.
    const XATTR_CRC_OFFSET: usize = 4;
    let d = Decoder::new(block);
    if d.u32(0).ok() != Some(fslab::ufs::XATTR_MAGIC) {
        return Some("has no extended-attribute magic");
    }
    if d.u32(XATTR_CRC_OFFSET).ok() != Some(crc32c_skipping(block, XATTR_CRC_OFFSET)) {
        return Some("fails its checksum");
    }
    None
}

/// `n` and the noun for it: "1 inode", "2 inodes".
pub(crate) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Problems kept in a report; past this they are only counted.
pub const MAX_PROBLEMS: usize = 10_000;

/// What kind of structure a problem is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A superblock copy is unreadable, invalid or disagrees with the others.
    Superblock,
    /// The ifile: its inode, a block's trailer, its tables' sizes.
    Ifile,
    /// An inode: unreadable, wrong number, bad mode or size, wrong block count.
    Inode,
    /// A block pointer out of range or into a superblock.
    BlockPointer,
    /// A block not confirmed by its segment summary, or a damaged summary.
    Summary,
    /// A block claimed twice.
    DuplicateBlock,
    /// A directory chunk that does not parse, or a bad `.` / `..`.
    Directory,
    /// A directory entry naming a free or impossible inode, of the wrong
    /// type, or under a name an earlier entry of its directory holds.
    DirEntry,
    /// An allocated inode no directory reaches from the root.
    Unreachable,
    /// A link count that disagrees with the entries naming the inode.
    LinkCount,
    /// A segment usage entry or the cleaner info totals.
    SegmentUsage,
    /// The free-inode list.
    FreeList,
    /// A cylinder group's area: unreadable, or its bitmaps or counts
    /// disagree with the inodes (FFS).
    CylinderGroup,
    /// The orphan list: a cycle, or an inode on it that is not an orphan.
    OrphanList,
}

/// A repair the library can make (see `repair`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    /// Set the link count of `ino` to `nlink`.
    SetNlink { ino: Ino, nlink: u32 },
    /// Remove entry `name` of directory `dir` (it names a free inode).
    RemoveEntry { dir: Ino, name: Vec<u8> },
    /// Remove the entry `name` → `ino` at byte `offset` of `dir`: a later
    /// entry under a name an earlier one holds. Named by its place, since
    /// the name alone does not say which entry goes; what it named, if
    /// nothing else names it, is reconnected into `/lost+found`.
    RemoveDuplicate { dir: Ino, name: Vec<u8>, offset: u64, ino: Ino },
    /// Point entry `name` of `dir` at `ino`, with `ino`'s type.
    RetargetEntry { dir: Ino, name: Vec<u8>, ino: Ino },
    /// Replace the unreadable chunk at byte `offset` of `dir` (`.`/`..` naming
    /// `parent` for the first chunk).
    ResetChunk { dir: Ino, offset: u64, parent: Ino },
    /// Name the unreachable inode `ino` in `/lost+found`.
    Reconnect { ino: Ino },
    /// Free the unreachable inode `ino`, which has no links and no entries.
    FreeOrphan { ino: Ino },
    /// Set segment `segment`'s live bytes to `bytes`.
    SetLiveBytes { segment: u64, bytes: u32 },
    /// Recompute the data checksum of the partial segment whose summary is
    /// at `start`, inside the checkpoint, over its blocks as they are now
    /// (LFS): the damaged bytes stay in the files the repair names, and
    /// the log is whole again, so that the image can be written to.
    ResealPartial { start: fslab::format::Daddr },
    /// Write every superblock copy again (LFS: a clean unmount does; FFS:
    /// the copies in the groups, from the primary).
    RewriteSuperblocks,
    /// Write the primary superblock again from the copy the check used (FFS).
    RestoreSuperblock,
    /// Clear the slot of inode `ino`: it holds no usable inode; entries
    /// naming it are removed (FFS).
    ClearInode { ino: Ino },
    /// Recompute the checksum of inode `ino`, whose fields pass every check
    /// (FFS; fsck_ffs does the same for an inode whose check-hash fails).
    SealInode { ino: Ino },
    /// Clear the pointer to block `lbn` of `ino`: a hole where a bad,
    /// duplicated or damaged block was (FFS), or where the log cannot back
    /// the pointer (LFS: off the log, to a block the summaries give to
    /// something else, to an indirect block that is not this file's).
    ClearPointer { ino: Ino, lbn: Lbn },
    /// Write block `lbn` of `ino` again at the log's head as it reads: the
    /// summary of its partial segment is lost, so the log no longer
    /// confirms it where it is (LFS).
    RewriteBlock { ino: Ino, lbn: Lbn },
    /// Write inode `ino` again at the log's head, for the same reason (LFS).
    RewriteInode { ino: Ino },
    /// Set segment `segment`'s counts of summaries and inode blocks to what
    /// its log holds (LFS).
    SetSummaryCounts { segment: u64, nsums: u32, ninos: u32 },
    /// Write `block`, an ifile block rebuilt because the one at `daddr`
    /// failed its trailer, in its place, and recompute the data checksum
    /// of its partial segment, whose summary is at `partial` (LFS).
    RewriteIfileBlock { daddr: fslab::format::Daddr, partial: fslab::format::Daddr, block: Vec<u8> },
    /// Thread every free inode number onto the free list again, lowest
    /// first (LFS).
    RebuildFreeList,
    /// Move the log head that writes in `segment`, whose chain of partial
    /// segments lost a summary, on to a clean segment before the repair
    /// writes anything: what it writes again is then found (LFS).
    LeaveSegment { segment: u64 },
    /// Set the size of `ino` to `size` bytes (FFS).
    SetSize { ino: Ino, size: u64 },
    /// Set the space `ino` records holding, in 512-byte units (FFS).
    SetBlocks { ino: Ino, blocks: u64 },
    /// Rewrite the cylinder groups and the superblock's totals from what
    /// the check found, and mark the file system clean (FFS phase 5).
    RebuildGroups,
    /// Make a new, empty root directory; everything else is then reconnected
    /// into `/lost+found` (FFS).
    CreateRoot,
    /// Free the orphans on the (sound) orphan list: what a mount does.
    ReclaimOrphans,
    /// Empty a damaged orphan list (the inodes it named are freed as
    /// unreferenced inodes).
    ClearOrphanList,
    /// Clear the mark an earlier fsck left on an image whose damage it
    /// could not repair (LFS: `SB_DAMAGED`); set again if damage remains.
    ClearDamaged,
}

/// How much a problem matters, which decides whether preening may repair
/// it unasked.
///
/// The rule: a *leak* is something held or counted that nothing uses —
/// a block, fragment or inode marked allocated that nothing references, a
/// link count higher than the names of its inode, an inode no name reaches
/// (soft updates' background fsck repairs these too), or a
/// count that nothing is allocated or freed by (group and superblock
/// totals, blocks an inode records, a segment's live bytes when too high).
/// So are the cylinder groups of an FFS not unmounted cleanly, whatever
/// their bitmaps say: a mount refuses such an image until fsck rebuilds
/// them, so nothing is handed out from them. Running on with a leak wastes
/// space or an inode until fsck, never data: nothing points where it should
/// not, and nothing in use can be handed out again. These are what a crash
/// leaves. Everything else is *damage*: a structure that does not decode, a
/// superblock copy or checkpoint that cannot be used, a name or pointer to
/// the wrong place, a link count lower than the names (the file would be
/// freed while a name still points at it), a referenced block or inode
/// marked free in a group a mount trusts, or a segment counting fewer live
/// bytes than it holds (a segment counted empty is reused without
/// cleaning) — each can lose data if the file system is used.
/// Direction decides where it matters, so a problem is classified where it
/// is found, not by its repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// Harmless: space, an inode or a count held that nothing uses.
    Leak,
    /// Anything else: data may be lost if the file system is used as it is.
    Damage,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Leak => "leak",
            Severity::Damage => "damage",
        })
    }
}

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Whether it is a leak or damage ([`Severity`]).
    pub severity: Severity,
    /// What it is about.
    pub kind: Kind,
    /// The inode concerned, if any.
    pub ino: Option<Ino>,
    /// One line for a person.
    pub message: String,
    /// How repair would fix it; `None` if it cannot.
    pub fix: Option<Fix>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.message)?;
        if self.fix.is_none() {
            write!(f, " (cannot repair)")?;
        }
        Ok(())
    }
}

/// Counts of what a check looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Allocated inodes checked.
    pub inodes: u64,
    /// Blocks (data, indirect, xattr, ifile) checked.
    pub blocks: u64,
    /// Directories read.
    pub directories: u64,
    /// Directory entries read.
    pub entries: u64,
    /// Segments whose summaries were walked.
    pub segments_walked: u64,
}

/// Which layout an image has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// The log-structured file system.
    #[default]
    Lfs,
    /// The Fast File System.
    Ffs,
}

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The layout checked.
    pub layout: Layout,
    /// The problems, in the order found (at most [`MAX_PROBLEMS`]).
    pub problems: Vec<Problem>,
    /// Problems found past [`MAX_PROBLEMS`].
    pub omitted: u64,
    /// The serial of the checkpoint checked (LFS; 0 for FFS).
    pub checkpoint_serial: u64,
    /// Whether that checkpoint (LFS) or the superblock (FFS) says the file
    /// system was unmounted cleanly.
    pub clean_unmount: bool,
    /// What was looked at.
    pub counts: Counts,
    /// Orphans on a sound orphan list: files unlinked while open, left by a
    /// crash before their last close. Not damage — the next mount frees
    /// them, as does `--repair` — so a report with only these is clean.
    pub pending_reclaim: Vec<Ino>,
}

impl Report {
    /// Whether nothing was found wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty() && self.omitted == 0
    }

    /// Whether some problem is of kind `kind`.
    pub fn has(&self, kind: Kind) -> bool {
        self.problems.iter().any(|p| p.kind == kind)
    }

    /// Whether every problem found is a leak (true of a clean report too).
    /// Problems past [`MAX_PROBLEMS`] are not classified, so a report with
    /// any is not all leaks.
    pub fn only_leaks(&self) -> bool {
        self.omitted == 0 && self.problems.iter().all(|p| p.severity == Severity::Leak)
    }

    fn push(&mut self, severity: Severity, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem { severity, kind, ino, message, fix });
        } else {
            self.omitted += 1;
        }
    }
}

/// Why fsck could not run at all (exit status 8).
#[derive(Debug)]
pub enum Fatal {
    /// The device failed.
    Io(std::io::Error),
    /// Not an fslab image, or of a version this build does not read.
    Foreign(String),
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fatal::Io(e) => write!(f, "device error: {e}"),
            Fatal::Foreign(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Fatal {}

/// How fsck runs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Repair what can be repaired (otherwise the image is only read).
    pub repair: bool,
    /// Preen (fsck(8)'s `-p`): with `repair`, repair only when every
    /// problem found is a leak ([`Severity::Leak`]) with a repair;
    /// otherwise change nothing, so that a person runs the repair and sees
    /// what it does.
    pub preen: bool,
    /// Least time between two progress messages.
    pub progress_every: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { repair: false, preen: false, progress_every: Duration::from_secs(2) }
    }
}

/// What one repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The fix applied (`None` for a step that was not a fix, such as a
    /// mount that rolled the log forward).
    pub fix: Option<Fix>,
    /// One line for a person.
    pub message: String,
}

/// The end of an fsck run, with e2fsck's exit statuses.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The first check's report.
    pub first: Report,
    /// The last check's report (the same as `first` when nothing was repaired).
    pub last: Report,
    /// Repairs made, in order.
    pub repaired: Vec<Repaired>,
    /// Repairs tried that failed, with why.
    pub failed: Vec<String>,
}

impl Outcome {
    /// 0 clean, 1 errors corrected, 4 errors left uncorrected.
    pub fn exit_code(&self) -> u8 {
        if self.first.is_clean() {
            0
        } else if self.last.is_clean() {
            1
        } else {
            4
        }
    }
}

/// Progress messages, at most one per interval.
pub(crate) struct Progress<'a> {
    sink: &'a mut dyn FnMut(&str),
    every: Duration,
    last: Instant,
}

impl<'a> Progress<'a> {
    /// Messages to `sink`, at most one every `every`.
    pub fn new(sink: &'a mut dyn FnMut(&str), every: Duration) -> Progress<'a> {
        Progress { sink, every, last: Instant::now() }
    }

    /// Reports `done` of `total` in `phase` if enough time passed.
    pub fn tick(&mut self, phase: &str, done: u64, total: u64) {
        if self.last.elapsed() >= self.every {
            self.last = Instant::now();
            let percent = done.saturating_mul(100).checked_div(total).unwrap_or(100);
            (self.sink)(&format!("{phase}: {done} of {total} ({percent}%)"));
        }
    }
}

/// The layout of the image on `dev`, by the magic at byte 0; an image
/// whose byte 0 names neither is looked at as LFS first (its checker finds
/// the other superblock copies), then as FFS (a copy in a group).
pub(crate) fn layout_of(dev: &dyn BlockDevice) -> Option<Layout> {
    let mut magic = [0u8; 8];
    if dev.size() < magic.len() as u64 || dev.read_at(0, &mut magic).is_err() {
        return None;
    }
    match &magic {
        b"fslabFFS" => Some(Layout::Ffs),
        b"fslabLFS" => Some(Layout::Lfs),
        _ => None,
    }
}

/// Checks the image on `dev` without changing it; `progress` receives a
/// line now and then (at most every `options.progress_every`).
pub fn check(
    dev: &dyn BlockDevice,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, Fatal> {
    match layout_of(dev) {
        Some(Layout::Ffs) => ffs::check(dev, options, progress),
        Some(Layout::Lfs) => check_lfs(dev, options, progress),
        // Superblock copies further in, where byte 0 holds another file
        // system, are left from before the device was made into that one:
        // a repair from them would write over it.
        None => match fslab::other_file_system(dev) {
            Some(other) => Err(Fatal::Foreign(format!("the device holds {other}, not fslab"))),
            // A damaged primary superblock: its copies may still serve.
            None => match check_lfs(dev, options, progress) {
                Err(Fatal::Foreign(_)) if ffs::has_copy(dev) => ffs::check(dev, options, progress),
                other => other,
            },
        },
    }
}

/// [`check`] of an LFS image.
fn check_lfs(
    dev: &dyn BlockDevice,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, Fatal> {
    let mut checker = match image::Checker::open(dev, options, progress)? {
        image::Opened::Ready(checker) => checker,
        image::Opened::Unusable(report) => return Ok(report),
    };
    checker.run();
    Ok(checker.finish())
}
