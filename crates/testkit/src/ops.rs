//! Operations and a seeded generator of random operation sequences.
//!
//! Map: [`Op`] is one step (a path-based file-system call, a handle call, or
//! a whole-system action such as [`Op::Remount`]); [`Generator`] draws ops
//! from a `SmallRng` with [`Weights`] over a small name pool, so names
//! collide, targets exist about half the time and errors are common.
//! [`fill`] makes the bytes of a write from its `fill` seed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::model::Kind;

/// A path from the root: its components.
pub type Path = Vec<String>;

/// How a rename treats its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenameKind {
    /// `rename(2)`: replace a compatible target.
    Plain,
    /// `RENAME_NOREPLACE`: EEXIST if the target exists.
    NoReplace,
    /// `RENAME_EXCHANGE`: swap two existing names.
    Exchange,
}

/// A symlink target to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This text.
    Text(String),
    /// `n` bytes of `x` (past the block size or 4,095 bytes: ENAMETOOLONG).
    Long(usize),
}

impl Target {
    /// The target's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Target::Text(t) => t.as_bytes().to_vec(),
            Target::Long(n) => vec![b'x'; *n],
        }
    }
}

/// One step of a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create an empty regular file (`mknod` of S_IFREG).
    Create {
        /// Where.
        path: Path,
        /// Permission bits.
        perm: u32,
    },
    /// Make a directory.
    Mkdir {
        /// Where.
        path: Path,
        /// Permission bits.
        perm: u32,
    },
    /// Make a symbolic link.
    Symlink {
        /// Where.
        path: Path,
        /// What it points at.
        target: Target,
    },
    /// Read a symbolic link.
    Readlink {
        /// Which.
        path: Path,
    },
    /// Write `len` bytes made by [`fill`] from `fill` at `offset`.
    Write {
        /// Which file.
        path: Path,
        /// Byte offset.
        offset: u64,
        /// Byte count.
        len: usize,
        /// Seed of the bytes.
        fill: u64,
    },
    /// Read `len` bytes at `offset`.
    Read {
        /// Which file.
        path: Path,
        /// Byte offset.
        offset: u64,
        /// Byte count.
        len: usize,
    },
    /// Set the size (`setattr` with a size).
    Truncate {
        /// Which file.
        path: Path,
        /// New size.
        size: u64,
    },
    /// `fallocate` with a Linux `FALLOC_FL_*` mode.
    Fallocate {
        /// Which file.
        path: Path,
        /// Start.
        offset: u64,
        /// Length.
        len: u64,
        /// Mode flags.
        mode: i32,
    },
    /// Set permission bits.
    Chmod {
        /// Which node.
        path: Path,
        /// New bits.
        perm: u32,
    },
    /// Compare attributes.
    Getattr {
        /// Which node.
        path: Path,
    },
    /// Compare one directory's listing.
    Readdir {
        /// Which directory.
        path: Path,
        /// Entries per `readdir` call.
        page: usize,
    },
    /// Remove a non-directory name.
    Unlink {
        /// Which.
        path: Path,
    },
    /// Remove an empty directory.
    Rmdir {
        /// Which.
        path: Path,
    },
    /// Rename `from` to `to`.
    Rename {
        /// Source.
        from: Path,
        /// Target.
        to: Path,
        /// Flags.
        kind: RenameKind,
    },
    /// Add the name `to` for the node at `from`.
    Link {
        /// Existing name.
        from: Path,
        /// New name.
        to: Path,
    },
    /// Set an extended attribute to `len` bytes of `fill`.
    SetXattr {
        /// Which node.
        path: Path,
        /// Attribute name.
        name: String,
        /// Value length.
        len: usize,
        /// Value byte.
        fill: u8,
        /// XATTR_CREATE / XATTR_REPLACE / 0.
        flags: i32,
    },
    /// Get an extended attribute.
    GetXattr {
        /// Which node.
        path: Path,
        /// Attribute name.
        name: String,
    },
    /// Remove an extended attribute.
    RemoveXattr {
        /// Which node.
        path: Path,
        /// Attribute name.
        name: String,
    },
    /// List extended attributes.
    ListXattr {
        /// Which node.
        path: Path,
    },
    /// Open (pin) the node at `path` into handle slot `slot`, closing what
    /// the slot held.
    Open {
        /// Which node.
        path: Path,
        /// Handle slot.
        slot: usize,
    },
    /// Close (unpin) handle `slot`.
    Close {
        /// Handle slot.
        slot: usize,
    },
    /// Write through a handle (works after the last name is gone).
    WriteHandle {
        /// Handle slot.
        slot: usize,
        /// Byte offset.
        offset: u64,
        /// Byte count.
        len: usize,
        /// Seed of the bytes.
        fill: u64,
    },
    /// Read through a handle.
    ReadHandle {
        /// Handle slot.
        slot: usize,
        /// Byte offset.
        offset: u64,
        /// Byte count.
        len: usize,
    },
    /// `fsync` one node.
    Fsync {
        /// Which node.
        path: Path,
    },
    /// `sync` everything.
    Sync,
    /// Drop the in-memory directory indexes.
    DropIndexes,
    /// Unmount and mount again from the same device (persistent layouts only;
    /// closes every handle).
    Remount,
}

/// Relative frequencies of the kinds of op (0 = never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weights {
    /// Create.
    pub create: u32,
    /// Mkdir.
    pub mkdir: u32,
    /// Symlink.
    pub symlink: u32,
    /// Readlink.
    pub readlink: u32,
    /// Write.
    pub write: u32,
    /// Read.
    pub read: u32,
    /// Truncate.
    pub truncate: u32,
    /// Fallocate (punch hole mostly).
    pub fallocate: u32,
    /// Fallocate's collapse and insert of a range.
    pub shift: u32,
    /// Chmod.
    pub chmod: u32,
    /// Getattr.
    pub getattr: u32,
    /// Readdir.
    pub readdir: u32,
    /// Unlink.
    pub unlink: u32,
    /// Rmdir.
    pub rmdir: u32,
    /// Rename of every kind.
    pub rename: u32,
    /// Link.
    pub link: u32,
    /// Xattr calls of every kind.
    pub xattr: u32,
    /// Handle calls (open, close, write and read through handles).
    pub handle: u32,
    /// Fsync and sync.
    pub sync: u32,
    /// Drop directory indexes.
    pub drop_indexes: u32,
    /// Remount.
    pub remount: u32,
    /// Percent of offsets, lengths and sizes drawn at byte granularity
    /// inside a small file's first blocks (24 KiB), where an FFS file's
    /// last block is a tail of fragments that writes, truncates and
    /// fallocate grow, shrink, move or make whole. 0: none.
    pub near_tails: u32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            create: 10,
            mkdir: 6,
            symlink: 3,
            readlink: 2,
            write: 16,
            read: 6,
            truncate: 5,
            fallocate: 4,
            shift: 3,
            chmod: 1,
            getattr: 3,
            readdir: 3,
            unlink: 6,
            rmdir: 4,
            rename: 10,
            link: 4,
            xattr: 6,
            handle: 6,
            sync: 2,
            drop_indexes: 1,
            remount: 0,
            near_tails: 0,
        }
    }
}

impl Weights {
    /// The defaults plus remounts, for layouts that persist.
    pub fn with_remount() -> Weights {
        Weights { remount: 1, ..Weights::default() }
    }
}

/// Handle slots the generator uses.
pub const HANDLE_SLOTS: usize = 4;

const DIRS: [&str; 3] = ["a", "b", "c"];
const FILES: [&str; 4] = ["x", "y", "z", "w"];
const XATTR_NAMES: [&str; 6] = ["user.a", "user.b", "trusted.c", "user.a-longer-name", "nospace.x", "user."];
const BS: u64 = 4096;
/// The bytes [`Weights::near_tails`] draws fall in: three 8 KiB blocks.
const TAIL_SPAN: u64 = 24 << 10;
/// Deepest existing directory new names are made in (renames can still make
/// deeper trees, but they do not keep growing).
const MAX_DIR_DEPTH: usize = 3;

/// Draws random operations.
///
/// It is told which paths exist ([`Generator::set_known`]) and aims most ops
/// at them, the rest at random names, so both successes and errors are common.
pub struct Generator {
    rng: SmallRng,
    weights: Weights,
    known: Vec<(Path, Kind)>,
}

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64, weights: Weights) -> Generator {
        Generator { rng: SmallRng::seed_from_u64(seed), weights, known: Vec::new() }
    }

    /// Tells the generator the paths that exist now and their kinds.
    pub fn set_known(&mut self, known: Vec<(Path, Kind)>) {
        self.known = known;
    }

    /// An existing path of a kind `want` accepts, now and then.
    fn existing(&mut self, chance: f64, want: impl Fn(Kind) -> bool) -> Option<Path> {
        if !self.rng.gen_bool(chance) {
            return None;
        }
        let count = self.known.iter().filter(|(_, k)| want(*k)).count();
        if count == 0 {
            return None;
        }
        let pick = self.rng.gen_range(0..count);
        self.known.iter().filter(|(_, k)| want(*k)).nth(pick).map(|(p, _)| p.clone())
    }

    /// A directory path: the root or up to two directory names.
    fn dir_path(&mut self) -> Path {
        if let Some(p) = self.existing(0.7, |k| k == Kind::Dir).filter(|p| p.len() <= MAX_DIR_DEPTH) {
            return p;
        }
        let depth = match self.rng.gen_range(0..100) {
            0..=39 => 0,
            40..=79 => 1,
            _ => 2,
        };
        (0..depth).map(|_| DIRS[self.rng.gen_range(0..DIRS.len())].to_string()).collect()
    }

    /// A path whose last name is usually a file name (now and then a
    /// directory name, so kinds mismatch).
    fn path(&mut self) -> Path {
        if let Some(p) = self.existing(0.6, |k| k != Kind::Dir) {
            return p;
        }
        let mut p = self.dir_path();
        p.push(if self.rng.gen_ratio(1, 10) { self.dir_name() } else { self.file_name() });
        p
    }

    /// A path whose last name is usually a directory name.
    fn dir_like_path(&mut self) -> Path {
        if let Some(p) =
            self.existing(0.5, |k| k == Kind::Dir).filter(|p| !p.is_empty() && p.len() <= MAX_DIR_DEPTH)
        {
            return p;
        }
        let mut p = self.dir_path();
        p.push(if self.rng.gen_ratio(1, 10) { self.file_name() } else { self.dir_name() });
        p
    }

    fn dir_name(&mut self) -> String {
        DIRS[self.rng.gen_range(0..DIRS.len())].to_string()
    }

    fn file_name(&mut self) -> String {
        FILES[self.rng.gen_range(0..FILES.len())].to_string()
    }

    /// A path for a new name: now and then one too long.
    fn new_path(&mut self, dir: bool) -> Path {
        if self.rng.gen_ratio(1, 100) {
            vec!["n".repeat(256)]
        } else {
            let mut p = self.dir_path();
            p.push(if dir == self.rng.gen_ratio(9, 10) { self.dir_name() } else { self.file_name() });
            p
        }
    }

    /// Whether this draw is one of the [`Weights::near_tails`] share.
    fn near_tail(&mut self) -> bool {
        self.weights.near_tails > 0 && self.rng.gen_range(0..100) < self.weights.near_tails
    }

    fn offset(&mut self) -> u64 {
        if self.near_tail() {
            return self.rng.gen_range(0..TAIL_SPAN);
        }
        match self.rng.gen_range(0..100) {
            0..=44 => self.rng.gen_range(0..64 << 10),
            45..=64 => self.rng.gen_range(0..64) * BS,
            65..=79 => {
                // Around the first indirect and the first double-indirect block.
                let edge = if self.rng.gen_bool(0.5) { 12 * BS } else { (12 + 512) * BS };
                edge - self.rng.gen_range(0..2 * BS).min(edge) + self.rng.gen_range(0..2 * BS)
            }
            _ => self.rng.gen_range(1 << 20..8 << 20),
        }
    }

    fn length(&mut self) -> usize {
        if self.near_tail() {
            return self.rng.gen_range(1..TAIL_SPAN as usize / 2);
        }
        match self.rng.gen_range(0..100) {
            0..=39 => self.rng.gen_range(1..4096),
            40..=59 => (self.rng.gen_range(1..5) * BS) as usize,
            60..=69 => (self.rng.gen_range(1..5) * BS) as usize + self.rng.gen_range(0..3) - 1,
            70..=89 => self.rng.gen_range(4096..64 << 10),
            _ => self.rng.gen_range(64 << 10..200 << 10),
        }
    }

    fn size(&mut self) -> u64 {
        if self.near_tail() {
            return self.rng.gen_range(0..TAIL_SPAN);
        }
        match self.rng.gen_range(0..10) {
            0..=1 => 0,
            2..=5 => self.rng.gen_range(0..64 << 10),
            6..=7 => self.rng.gen_range(0..32) * BS,
            _ => self.offset(),
        }
    }

    fn xattr_name(&mut self) -> String {
        let i = if self.rng.gen_ratio(1, 20) { self.rng.gen_range(4..6) } else { self.rng.gen_range(0..4) };
        XATTR_NAMES[i].to_string()
    }

    /// The next operation.
    pub fn next_op(&mut self) -> Op {
        let w = self.weights;
        let table = [
            w.create,
            w.mkdir,
            w.symlink,
            w.readlink,
            w.write,
            w.read,
            w.truncate,
            w.fallocate,
            w.chmod,
            w.getattr,
            w.readdir,
            w.unlink,
            w.rmdir,
            w.rename,
            w.link,
            w.xattr,
            w.handle,
            w.sync,
            w.drop_indexes,
            w.remount,
            w.shift,
        ];
        let total: u32 = table.iter().sum();
        let mut pick = self.rng.gen_range(0..total.max(1));
        let mut which = 0;
        for (i, &weight) in table.iter().enumerate() {
            if pick < weight {
                which = i;
                break;
            }
            pick -= weight;
        }
        match which {
            0 => Op::Create { path: self.new_path(false), perm: 0o644 },
            1 => Op::Mkdir { path: self.new_path(true), perm: 0o755 },
            2 => {
                let target = match self.rng.gen_range(0..20) {
                    0 => Target::Long(4097),
                    1 => Target::Long(self.rng.gen_range(100..4096)),
                    _ => Target::Text(self.path().join("/")),
                };
                Op::Symlink { path: self.new_path(false), target }
            }
            3 => Op::Readlink { path: self.path() },
            4 => Op::Write {
                path: self.path(),
                offset: self.offset(),
                len: self.length(),
                fill: self.rng.gen(),
            },
            5 => Op::Read { path: self.path(), offset: self.offset(), len: self.length() },
            6 => Op::Truncate { path: self.path(), size: self.size() },
            7 => {
                let keep = libc::FALLOC_FL_KEEP_SIZE;
                let mode = match self.rng.gen_range(0..10) {
                    0..=5 => libc::FALLOC_FL_PUNCH_HOLE | keep,
                    6 => 0,
                    7 => keep,
                    8 => libc::FALLOC_FL_ZERO_RANGE,
                    _ => libc::FALLOC_FL_ZERO_RANGE | keep,
                };
                let len = if self.rng.gen_ratio(1, 30) { 0 } else { self.length() as u64 };
                Op::Fallocate { path: self.path(), offset: self.offset(), len, mode }
            }
            8 => Op::Chmod {
                path: if self.rng.gen_bool(0.3) { self.dir_like_path() } else { self.path() },
                perm: self.rng.gen_range(0..0o7777),
            },
            9 => Op::Getattr { path: self.path() },
            10 => {
                let page = self.rng.gen_range(1..6);
                let path = if self.rng.gen_ratio(1, 10) { self.path() } else { self.dir_path() };
                Op::Readdir { path, page }
            }
            11 => Op::Unlink { path: self.path() },
            12 => Op::Rmdir { path: self.dir_like_path() },
            13 => {
                let kind = match self.rng.gen_range(0..10) {
                    0..=5 => RenameKind::Plain,
                    6..=7 => RenameKind::NoReplace,
                    _ => RenameKind::Exchange,
                };
                let is_dir = self.rng.gen_bool(0.4);
                let from = if is_dir { self.dir_like_path() } else { self.path() };
                let to = if self.rng.gen_ratio(1, 8) {
                    // Into its own subtree.
                    let mut to = from.clone();
                    to.push(self.dir_name());
                    to
                } else if self.rng.gen_ratio(1, 16) {
                    // Onto an ancestor.
                    from[..from.len().saturating_sub(1).max(1)].to_vec()
                } else {
                    self.new_path(is_dir)
                };
                Op::Rename { from, to, kind }
            }
            14 => Op::Link { from: self.path(), to: self.new_path(false) },
            15 => {
                let path = if self.rng.gen_bool(0.25) { self.dir_like_path() } else { self.path() };
                let name = self.xattr_name();
                match self.rng.gen_range(0..10) {
                    0..=4 => {
                        let len = match self.rng.gen_range(0..10) {
                            0 => 0,
                            1 => self.rng.gen_range(1500..3000),
                            2 => 70_000,
                            _ => self.rng.gen_range(1..300),
                        };
                        let flags = match self.rng.gen_range(0..6) {
                            0 => libc::XATTR_CREATE,
                            1 => libc::XATTR_REPLACE,
                            _ => 0,
                        };
                        Op::SetXattr { path, name, len, fill: self.rng.gen(), flags }
                    }
                    5..=6 => Op::GetXattr { path, name },
                    7..=8 => Op::RemoveXattr { path, name },
                    _ => Op::ListXattr { path },
                }
            }
            16 => {
                let slot = self.rng.gen_range(0..HANDLE_SLOTS);
                match self.rng.gen_range(0..10) {
                    0..=2 => Op::Open { path: self.path(), slot },
                    3..=4 => Op::Close { slot },
                    5..=7 => Op::WriteHandle {
                        slot,
                        offset: self.offset(),
                        len: self.length(),
                        fill: self.rng.gen(),
                    },
                    _ => Op::ReadHandle { slot, offset: self.offset(), len: self.length() },
                }
            }
            17 => {
                if self.rng.gen_bool(0.5) {
                    Op::Sync
                } else {
                    Op::Fsync { path: self.path() }
                }
            }
            18 => Op::DropIndexes,
            19 => Op::Remount,
            _ => self.shift(),
        }
    }

    /// A collapse or insert of a range: mostly whole blocks inside the
    /// file (near the first indirect and double-indirect blocks at times,
    /// and now and then long enough to cross from one to the other), now
    /// and then misaligned or with another flag, which are refused.
    fn shift(&mut self) -> Op {
        let mut mode = if self.rng.gen_bool(0.5) {
            libc::FALLOC_FL_COLLAPSE_RANGE
        } else {
            libc::FALLOC_FL_INSERT_RANGE
        };
        if self.rng.gen_ratio(1, 20) {
            mode |= libc::FALLOC_FL_KEEP_SIZE;
        }
        let offset = match self.rng.gen_range(0..10) {
            0..=5 => self.rng.gen_range(0..8) * BS,
            6..=8 => (if self.rng.gen_bool(0.5) { 12 } else { 12 + 512 } - self.rng.gen_range(0..4)) * BS,
            _ => self.offset(),
        };
        let len = match self.rng.gen_range(0..20) {
            0..=13 => self.rng.gen_range(1..4) * BS,
            14..=17 => self.rng.gen_range(6..600) * BS,
            18 => 0,
            _ => self.length() as u64,
        };
        Op::Fallocate { path: self.path(), offset, len, mode }
    }
}

/// The bytes of a write: `len` bytes, different for each `seed`.
pub fn fill(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}
