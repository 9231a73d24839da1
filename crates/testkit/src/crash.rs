//! Crash exploration in the style of ACE, CrashMonkey's automatic crash
//! explorer: short workloads of "core" operations with persistence points,
//! run over a [`CrashDisk`], then every (or a sample of every) image a power
//! cut could leave is mounted and checked against what the workload was
//! promised (`docs/SEMANTICS.md`, "Durability" and "Atomicity").
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
//!   [`record`] runs a workload on a fresh [`CrashDisk`] over a copy of it
//!   and notes, for each persistence point, the device event count when it
//!   returned ([`Recorded`]).
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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use disk::{BlockDevice, CrashDisk, CrashState, MemDisk};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem, RenameFlags, SetAttr};

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

/// One primitive call on the namespace. Paths are relative to the root,
/// components joined by `/` (`"A/foo"`); `""` is the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `mknod(parent, name, S_IFREG | 0644)`.
    Create(String),
    /// `write(path, offset, pattern(tag, offset, len))`.
    Write {
        /// The file.
        path: String,
        /// Where.
        offset: u64,
        /// How many bytes.
        len: usize,
        /// Which pattern ([`pattern`]).
        tag: u8,
    },
    /// `setattr(path, size)`: truncate down or extend with a hole.
    Truncate(String, u64),
    /// `link(from, to)`.
    Link(String, String),
    /// `unlink(path)`.
    Unlink(String),
    /// `open(path)`, then `unlink(path)`, and no close: the file lives on
    /// with no name (an orphan) to the end of the run.
    UnlinkOpen(String),
    /// `rename(from, to)`, no flags.
    Rename(String, String),
    /// `mkdir(path, 0755)`.
    Mkdir(String),
    /// `rmdir(path)`.
    Rmdir(String),
    /// `symlink(path → target)`.
    Symlink(String, String),
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Create(p) => write!(f, "create({p})"),
            Op::Write { path, offset, len, tag } => write!(f, "write({path}, {offset}+{len}, tag {tag})"),
            Op::Truncate(p, size) => write!(f, "truncate({p}, {size})"),
            Op::Link(a, b) => write!(f, "link({a} -> {b})"),
            Op::Unlink(p) => write!(f, "unlink({p})"),
            Op::UnlinkOpen(p) => write!(f, "unlink-open({p})"),
            Op::Rename(a, b) => write!(f, "rename({a} -> {b})"),
            Op::Mkdir(p) => write!(f, "mkdir({p})"),
            Op::Rmdir(p) => write!(f, "rmdir({p})"),
            Op::Symlink(p, t) => write!(f, "symlink({p} -> {t:?})"),
        }
    }
}

/// A persistence point: a call that returns only once something is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Persist {
    /// `fsync(path)` (a file, or a directory by its own path).
    Fsync(String),
    /// `fdatasync(path)`.
    Fdatasync(String),
    /// `fsync` of the directory `path` (`""` is the root), for the names in it.
    FsyncDir(String),
    /// `sync()`: a checkpoint.
    Sync,
}

impl fmt::Display for Persist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Persist::Fsync(p) => write!(f, "fsync({p})"),
            Persist::Fdatasync(p) => write!(f, "fdatasync({p})"),
            Persist::FsyncDir(p) => write!(f, "fsync_dir({})", if p.is_empty() { "/" } else { p }),
            Persist::Sync => write!(f, "sync()"),
        }
    }
}

/// One step of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A primitive operation (changes the model's state).
    Op(Op),
    /// A persistence point (changes nothing, promises durability).
    Persist(Persist),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Op(op) => op.fmt(f),
            Step::Persist(p) => p.fmt(f),
        }
    }
}

/// A named sequence of steps, run after the setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// Stable name: family and index, e.g. `seq2-0042`.
    pub name: String,
    /// The steps, dependencies included.
    pub steps: Vec<Step>,
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.name)?;
        for (i, step) in self.steps.iter().enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            step.fmt(f)?;
        }
        Ok(())
    }
}

/// A model node's identity (never reused within a run).
pub type NodeId = usize;

/// What a model node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A regular file's bytes.
    File(Vec<u8>),
    /// A directory (its entries are the paths under it in [`Tree::names`]).
    Dir,
    /// A symbolic link's target.
    Symlink(Vec<u8>),
}

impl Body {
    /// The `format::inode::kind` bits of this body.
    pub fn kind(&self) -> u32 {
        match self {
            Body::File(_) => kind::REG,
            Body::Dir => kind::DIR,
            Body::Symlink(_) => kind::LNK,
        }
    }
}

/// A model node: contents and the inode number the file system gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Contents.
    pub body: Body,
    /// Inode number (0 while generating, before any file system is asked).
    pub ino: Ino,
}

/// The oracle model: every path (the root excluded) and the node it names.
/// Cloned after every primitive operation of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// Path → node.
    pub names: BTreeMap<String, NodeId>,
    /// Live nodes.
    pub nodes: BTreeMap<NodeId, Node>,
    next: NodeId,
}

/// The directory part of `path` (`""` for a name in the root).
pub fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

/// The last component of `path`.
pub fn name_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, n)| n)
}

impl Tree {
    /// The node `path` names, if any.
    pub fn node_at(&self, path: &str) -> Option<(NodeId, &Node)> {
        let id = *self.names.get(path)?;
        self.nodes.get(&id).map(|n| (id, n))
    }

    fn is_dir(&self, path: &str) -> bool {
        path.is_empty() || matches!(self.node_at(path), Some((_, Node { body: Body::Dir, .. })))
    }

    fn children(&self, dir: &str) -> Vec<String> {
        self.names.keys().filter(|p| parent_of(p) == dir && !p.is_empty()).cloned().collect()
    }

    fn add(&mut self, path: &str, body: Body) -> Result<NodeId, String> {
        if !self.is_dir(parent_of(path)) {
            return Err(format!("{path}: parent is not a directory"));
        }
        if self.names.contains_key(path) {
            return Err(format!("{path}: exists"));
        }
        let id = self.next;
        self.next += 1;
        self.nodes.insert(id, Node { body, ino: 0 });
        self.names.insert(path.to_string(), id);
        Ok(id)
    }

    /// Removes the name `path`; frees its node if no other name is left.
    fn drop_name(&mut self, path: &str) {
        if let Some(id) = self.names.remove(path) {
            if !self.names.values().any(|&v| v == id) {
                self.nodes.remove(&id);
            }
        }
    }

    fn file_mut(&mut self, path: &str) -> Result<&mut Vec<u8>, String> {
        let id = *self.names.get(path).ok_or_else(|| format!("{path}: absent"))?;
        match self.nodes.get_mut(&id) {
            Some(Node { body: Body::File(data), .. }) => Ok(data),
            _ => Err(format!("{path}: not a file")),
        }
    }

    /// Applies `op`; returns the node it created, if any. An error means the
    /// operation is not valid here (the generator drops such workloads).
    pub fn apply(&mut self, op: &Op) -> Result<Option<NodeId>, String> {
        match op {
            Op::Create(p) => self.add(p, Body::File(Vec::new())).map(Some),
            Op::Mkdir(p) => self.add(p, Body::Dir).map(Some),
            Op::Symlink(p, t) => self.add(p, Body::Symlink(t.as_bytes().to_vec())).map(Some),
            Op::Write { path, offset, len, tag } => {
                let data = self.file_mut(path)?;
                let end = *offset as usize + len;
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[*offset as usize..end].copy_from_slice(&pattern(*tag, *offset, *len));
                Ok(None)
            }
            Op::Truncate(p, size) => {
                self.file_mut(p)?.resize(*size as usize, 0);
                Ok(None)
            }
            Op::Link(from, to) => {
                let (id, node) = self.node_at(from).ok_or_else(|| format!("{from}: absent"))?;
                if node.body == Body::Dir {
                    return Err(format!("{from}: a directory"));
                }
                if !self.is_dir(parent_of(to)) || self.names.contains_key(to.as_str()) {
                    return Err(format!("{to}: exists or no parent"));
                }
                self.names.insert(to.clone(), id);
                Ok(None)
            }
            Op::Unlink(p) | Op::UnlinkOpen(p) => match self.node_at(p) {
                Some((_, n)) if n.body != Body::Dir => {
                    self.drop_name(p);
                    Ok(None)
                }
                _ => Err(format!("{p}: absent or a directory")),
            },
            Op::Rmdir(p) => {
                if !self.is_dir(p) || p.is_empty() || !self.children(p).is_empty() {
                    return Err(format!("{p}: not an empty directory"));
                }
                self.drop_name(p);
                Ok(None)
            }
            Op::Rename(from, to) => self.rename(from, to).map(|()| None),
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), String> {
        let (id, node) = self.node_at(from).ok_or_else(|| format!("{from}: absent"))?;
        let from_dir = node.body == Body::Dir;
        if from == to || to.starts_with(&format!("{from}/")) || !self.is_dir(parent_of(to)) {
            return Err(format!("rename {from} -> {to}: not allowed"));
        }
        if let Some((_, target)) = self.node_at(to) {
            let to_dir = target.body == Body::Dir;
            if from_dir != to_dir || (to_dir && !self.children(to).is_empty()) {
                return Err(format!("rename {from} -> {to}: target of the wrong kind or not empty"));
            }
            self.drop_name(to);
        }
        self.names.remove(from);
        self.names.insert(to.to_string(), id);
        if from_dir {
            let prefix = format!("{from}/");
            let moved: Vec<(String, NodeId)> = self
                .names
                .iter()
                .filter(|(p, _)| p.starts_with(&prefix))
                .map(|(p, &v)| (p.clone(), v))
                .collect();
            for (p, v) in moved {
                self.names.remove(&p);
                self.names.insert(format!("{to}/{}", &p[prefix.len()..]), v);
            }
        }
        Ok(())
    }

    /// The namespace: path → (type bits, inode number).
    pub fn namespace(&self) -> BTreeMap<String, (u32, Ino)> {
        self.names
            .iter()
            .filter_map(|(p, id)| self.nodes.get(id).map(|n| (p.clone(), (n.body.kind(), n.ino))))
            .collect()
    }
}

/// What exists before every workload, created and synced (not explored):
/// directories `A`, `B`, `A/sub` (empty); files `A/foo` (12 000 bytes, three
/// blocks, tag 1), `A/bar` (3 000 bytes, tag 2), `B/baz` (5 000 bytes, tag 3).
pub fn setup_ops() -> Vec<Op> {
    let w = |path: &str, len: usize, tag: u8| Op::Write { path: path.into(), offset: 0, len, tag };
    vec![
        Op::Mkdir("A".into()),
        Op::Mkdir("B".into()),
        Op::Mkdir("A/sub".into()),
        Op::Create("A/foo".into()),
        w("A/foo", 12_000, 1),
        Op::Create("A/bar".into()),
        w("A/bar", 3_000, 2),
        Op::Create("B/baz".into()),
        w("B/baz", 5_000, 3),
    ]
}

/// The model after [`setup_ops`], without inode numbers.
pub fn setup_tree() -> Tree {
    let mut tree = Tree::default();
    for op in setup_ops() {
        tree.apply(&op).expect("the setup is valid");
    }
    tree
}

/// The core operations, each with a short label. "write new data" writes a
/// file that does not exist yet, so a create is added before it; the
/// other writes are an overwrite across a block boundary, an append and a
/// write past the end that leaves a hole.
pub fn alphabet() -> Vec<(&'static str, Op)> {
    let s = |x: &str| x.to_string();
    let w = |path: &str, offset: u64, len: usize, tag: u8| Op::Write { path: s(path), offset, len, tag };
    vec![
        ("create", Op::Create(s("A/new"))),
        ("create-B", Op::Create(s("B/new"))),
        ("write-new", w("A/new", 0, 6_000, 10)),
        ("write-overwrite", w("A/foo", 3_000, 4_000, 11)),
        ("write-append", w("A/foo", 12_000, 5_000, 12)),
        ("write-hole", w("A/foo", 40_000, 3_000, 13)),
        ("write-overwrite-bar", w("A/bar", 0, 2_000, 14)),
        ("truncate-down", Op::Truncate(s("A/foo"), 1_000)),
        ("truncate-up", Op::Truncate(s("A/foo"), 30_000)),
        ("link", Op::Link(s("A/foo"), s("A/foolink"))),
        ("link-across", Op::Link(s("A/foo"), s("B/foolink"))),
        ("unlink", Op::Unlink(s("A/foo"))),
        ("unlink-bar", Op::Unlink(s("A/bar"))),
        ("unlink-open", Op::UnlinkOpen(s("A/foo"))),
        ("rename-new-name", Op::Rename(s("A/foo"), s("A/new"))),
        ("rename-over", Op::Rename(s("A/foo"), s("A/bar"))),
        ("rename-across", Op::Rename(s("A/foo"), s("B/foo"))),
        ("rename-across-over", Op::Rename(s("A/foo"), s("B/baz"))),
        ("rename-dir-across", Op::Rename(s("A/sub"), s("B/sub"))),
        ("mkdir", Op::Mkdir(s("A/newdir"))),
        ("mkdir-B", Op::Mkdir(s("B/newdir"))),
        ("rmdir", Op::Rmdir(s("A/sub"))),
        ("symlink", Op::Symlink(s("A/sym"), s("foo"))),
    ]
}

/// The operations that make `op` possible in `tree` (ACE's dependencies):
/// a create before a write, truncate, link or rename of a missing file.
/// `None` when it cannot be made possible this way.
fn dependencies(tree: &Tree, op: &Op) -> Vec<Op> {
    let needs_file = match op {
        Op::Write { path, .. } | Op::Truncate(path, _) => Some(path),
        Op::Link(from, _) | Op::Rename(from, _) => Some(from),
        _ => None,
    };
    match needs_file {
        Some(p) if !tree.names.contains_key(p.as_str()) && tree.is_dir(parent_of(p)) => {
            vec![Op::Create(p.clone())]
        }
        _ => Vec::new(),
    }
}

/// The sensible persistence points after `op`: fsync / fdatasync of the
/// file it made or changed, fsync of the directories whose entries it
/// changed, sync.
pub fn persist_options(op: &Op) -> Vec<Persist> {
    let file = |p: &str| vec![Persist::Fsync(p.into()), Persist::Fdatasync(p.into())];
    let dir = |p: &str| Persist::FsyncDir(parent_of(p).into());
    let mut out = match op {
        Op::Create(p) | Op::Write { path: p, .. } | Op::Truncate(p, _) => {
            let mut v = file(p);
            v.push(dir(p));
            v
        }
        Op::Link(_, to) => {
            let mut v = file(to);
            v.push(dir(to));
            v
        }
        Op::Unlink(p) | Op::UnlinkOpen(p) | Op::Rmdir(p) | Op::Symlink(p, _) => vec![dir(p)],
        Op::Rename(from, to) => {
            // A directory is fsynced, not fdatasynced.
            let mut v = if setup_tree().is_dir(from) { vec![Persist::Fsync(to.clone())] } else { file(to) };
            v.push(dir(to));
            if parent_of(from) != parent_of(to) {
                v.push(dir(from));
            }
            v
        }
        Op::Mkdir(p) => vec![Persist::Fsync(p.clone()), dir(p)],
    };
    out.push(Persist::Sync);
    out
}

/// How many persistence variants [`workloads`] makes per pair of core
/// operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// For each ordered pair: every persistence point after the second op
    /// alone, plus one variant with a point after each op (kinds rotating).
    Default,
    /// For each ordered pair: every combination of (none or each point)
    /// after the first op and each point after the second.
    Full,
}

/// Builds one workload from core operations and the persistence point after
/// each (`None`: no point there); dependencies are added before an op that
/// needs them. `None` if some op is not valid in sequence.
pub fn build(name: String, core: &[(&Op, Option<Persist>)]) -> Option<Workload> {
    let mut tree = setup_tree();
    let mut steps = Vec::new();
    for (op, persist) in core {
        for dep in dependencies(&tree, op) {
            tree.apply(&dep).ok()?;
            steps.push(Step::Op(dep));
        }
        tree.apply(op).ok()?;
        steps.push(Step::Op((*op).clone()));
        if let Some(p) = persist {
            let target_ok = match p {
                Persist::Fsync(path) | Persist::Fdatasync(path) => tree.names.contains_key(path.as_str()),
                Persist::FsyncDir(path) => tree.is_dir(path),
                Persist::Sync => true,
            };
            if !target_ok {
                return None;
            }
            steps.push(Step::Persist(p.clone()));
        }
    }
    Some(Workload { name, steps })
}

/// Every workload: `seq1-*` (one core operation followed by each of its
/// persistence points) and `seq2-*` (every ordered pair of core operations
/// that is valid in sequence, with the persistence variants of
/// `coverage`). Deterministic order and names.
pub fn workloads(coverage: Coverage) -> Vec<Workload> {
    let ops = alphabet();
    let mut out = Vec::new();
    for (_, op) in &ops {
        for p in persist_options(op) {
            let name = format!("seq1-{:04}", out.len());
            if let Some(w) = build(name, &[(op, Some(p))]) {
                out.push(w);
            }
        }
    }
    let mut rotation = 0usize;
    for (_, a) in &ops {
        for (_, b) in &ops {
            if build(String::new(), &[(a, None), (b, None)]).is_none() {
                continue;
            }
            let pa = persist_options(a);
            let pb = persist_options(b);
            let mut variants: Vec<(Option<Persist>, Persist)> = Vec::new();
            match coverage {
                Coverage::Default => {
                    variants.extend(pb.iter().map(|q| (None, q.clone())));
                    variants
                        .push((Some(pa[rotation % pa.len()].clone()), pb[(rotation / 2) % pb.len()].clone()));
                    rotation += 1;
                }
                Coverage::Full => {
                    for first in std::iter::once(None).chain(pa.iter().cloned().map(Some)) {
                        variants.extend(pb.iter().map(|q| (first.clone(), q.clone())));
                    }
                }
            }
            for (first, second) in variants {
                let name = format!("seq2-{:04}", out.len());
                if let Some(w) = build(name, &[(a, first), (b, Some(second))]) {
                    out.push(w);
                }
            }
        }
    }
    out
}

/// Resolves `path` to an inode by lookups from the root.
pub fn resolve<S: StorageManager>(fs: &mut FileSystem<S>, path: &str) -> fslab::Result<Ino> {
    let mut ino = ROOT_INO;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        ino = fs.lookup(ino, part.as_bytes())?.ino;
    }
    Ok(ino)
}

/// Applies `op` to `fs` and `tree`, recording the inode number of a node it
/// creates. Panics (with `context`) if either refuses: every workload is
/// valid by construction.
pub fn apply_both<S: StorageManager>(
    fs: &mut FileSystem<S>,
    tree: &mut Tree,
    op: &Op,
    context: &dyn fmt::Display,
) {
    let creds = Creds::default();
    let dir = |fs: &mut FileSystem<S>, p: &str| resolve(fs, parent_of(p));
    let result: fslab::Result<Option<Ino>> = (|| {
        Ok(match op {
            Op::Create(p) => {
                let parent = dir(fs, p)?;
                Some(fs.mknod(parent, name_of(p).as_bytes(), 0o100644, 0, creds)?.ino)
            }
            Op::Mkdir(p) => {
                let parent = dir(fs, p)?;
                Some(fs.mkdir(parent, name_of(p).as_bytes(), 0o755, creds)?.ino)
            }
            Op::Symlink(p, t) => {
                let parent = dir(fs, p)?;
                Some(fs.symlink(parent, name_of(p).as_bytes(), t.as_bytes(), creds)?.ino)
            }
            Op::Write { path, offset, len, tag } => {
                let ino = resolve(fs, path)?;
                let n = fs.write(ino, *offset, &pattern(*tag, *offset, *len))?;
                assert_eq!(n, *len, "{context}: short write in {op}");
                None
            }
            Op::Truncate(p, size) => {
                let ino = resolve(fs, p)?;
                fs.setattr(ino, &SetAttr { size: Some(*size), ..SetAttr::default() })?;
                None
            }
            Op::Link(from, to) => {
                let ino = resolve(fs, from)?;
                let parent = dir(fs, to)?;
                fs.link(ino, parent, name_of(to).as_bytes())?;
                None
            }
            Op::Unlink(p) => {
                let parent = dir(fs, p)?;
                fs.unlink(parent, name_of(p).as_bytes())?;
                None
            }
            Op::UnlinkOpen(p) => {
                let parent = dir(fs, p)?;
                let ino = fs.lookup(parent, name_of(p).as_bytes())?.ino;
                fs.pin(ino);
                fs.unlink(parent, name_of(p).as_bytes())?;
                None
            }
            Op::Rmdir(p) => {
                let parent = dir(fs, p)?;
                fs.rmdir(parent, name_of(p).as_bytes())?;
                None
            }
            Op::Rename(from, to) => {
                let (p1, p2) = (dir(fs, from)?, dir(fs, to)?);
                fs.rename(p1, name_of(from).as_bytes(), p2, name_of(to).as_bytes(), RenameFlags::default())?;
                None
            }
        })
    })();
    let ino = match result {
        Ok(ino) => ino,
        Err(e) => panic!("{context}: {op} failed on the file system: {e}"),
    };
    let created = match tree.apply(op) {
        Ok(created) => created,
        Err(e) => panic!("{context}: {op} refused by the model: {e}"),
    };
    if let (Some(id), Some(ino)) = (created, ino) {
        if let Some(node) = tree.nodes.get_mut(&id) {
            node.ino = ino;
        }
    }
}

/// Makes the setup image: mkfs, [`setup_ops`], unmount (a clean checkpoint).
/// Returns the image and the model with inode numbers.
pub fn setup_image() -> (Vec<u8>, Tree) {
    setup_image_on(DISK_BYTES, |dev| {
        let mkfs = MkfsOptions { block_size: BLOCK_SIZE, segment_size: SEGMENT_SIZE };
        fslab::mkfs_lfs(dev.clone(), &mkfs, Creds::default())?;
        Ok(FileSystem::new(Lfs::mount(dev, mount_options())?))
    })
}

/// [`setup_image`] for any layout: a device of `disk_bytes`, on which
/// `make` makes a file system and mounts it.
pub fn setup_image_on<S: StorageManager>(
    disk_bytes: u64,
    make: impl FnOnce(Arc<dyn BlockDevice>) -> fslab::Result<FileSystem<S>>,
) -> (Vec<u8>, Tree) {
    let disk = Arc::new(MemDisk::new(disk_bytes));
    let mut fs = make(disk.clone()).expect("mkfs and mount the new image");
    let mut tree = Tree::default();
    for op in setup_ops() {
        apply_both(&mut fs, &mut tree, &op, &"setup");
    }
    fs.unmount().expect("unmount after setup");
    (disk.snapshot(), tree)
}

/// A persistence point as the run saw it.
#[derive(Debug, Clone)]
pub struct Point {
    /// Its step in the workload (`None`: the setup's sync).
    pub step: Option<usize>,
    /// What it was.
    pub persist: Persist,
    /// Index of the model state it made durable (`Recorded::states`).
    pub state: usize,
    /// Device events recorded when it returned: acknowledged at any cut
    /// at or after this.
    pub events: usize,
    /// The file it made durable (fsync / fdatasync of a file).
    pub node: Option<NodeId>,
}

/// A workload's run: the model after each primitive operation and the
/// persistence points with their event counts.
pub struct Recorded {
    /// The workload's steps.
    pub steps: Vec<Step>,
    /// `states[0]` is the setup; `states[k]` is after the k-th operation.
    pub states: Vec<Tree>,
    /// The setup's sync (at event 0), then each persistence point in order.
    pub points: Vec<Point>,
    /// The device the workload ran on.
    pub crash: CrashDisk,
    /// Device events when the workload ended.
    pub events: usize,
    /// Device events when each operation returned (`op_events[k]` for the
    /// operation that made `states[k + 1]`).
    pub op_events: Vec<usize>,
    /// Inodes that were open with no name left at some step of the run
    /// (`FileSystem::orphans`), each with the device events when the
    /// operation that left it so returned.
    pub orphans: BTreeMap<Ino, usize>,
}

/// Runs `workload` on a fresh [`CrashDisk`] over a copy of `image` (with
/// model `setup`), recording states and persistence points. The file system
/// is dropped without unmounting at the end, as a power cut would.
pub fn record(workload: &Workload, image: &[u8], setup: &Tree) -> Recorded {
    record_on(workload, image, setup, |dev| Ok(FileSystem::new(Lfs::mount(dev, mount_options())?)))
}

/// [`record`] for any layout: `mount` mounts the setup image's copy.
pub fn record_on<S: StorageManager>(
    workload: &Workload,
    image: &[u8],
    setup: &Tree,
    mount: impl FnOnce(Arc<dyn BlockDevice>) -> fslab::Result<FileSystem<S>>,
) -> Recorded {
    let crash = CrashDisk::over(MemDisk::from_bytes(image.to_vec()));
    let dev: Arc<dyn BlockDevice> = Arc::new(crash.clone());
    let mut fs = mount(dev).unwrap_or_else(|e| panic!("{workload}: mount the setup image: {e}"));
    let mut tree = setup.clone();
    let mut states = vec![tree.clone()];
    let mut op_events = Vec::new();
    let mut points = vec![Point { step: None, persist: Persist::Sync, state: 0, events: 0, node: None }];
    let mut orphans = BTreeMap::new();
    for (i, step) in workload.steps.iter().enumerate() {
        match step {
            Step::Op(op) => {
                apply_both(&mut fs, &mut tree, op, workload);
                states.push(tree.clone());
                op_events.push(crash.events());
                for ino in fs.orphans() {
                    orphans.entry(ino).or_insert(crash.events());
                }
            }
            Step::Persist(p) => {
                let path = match p {
                    Persist::Fsync(path) | Persist::Fdatasync(path) | Persist::FsyncDir(path) => Some(path),
                    Persist::Sync => None,
                };
                let result = match path {
                    Some(path) => resolve(&mut fs, path)
                        .and_then(|ino| fs.fsync(ino, matches!(p, Persist::Fdatasync(_)))),
                    None => fs.sync(),
                };
                if let Err(e) = result {
                    panic!("{workload}: {p} failed: {e}");
                }
                let node = match p {
                    Persist::Fsync(path) | Persist::Fdatasync(path) => {
                        tree.node_at(path).filter(|(_, n)| matches!(n.body, Body::File(_))).map(|(id, _)| id)
                    }
                    _ => None,
                };
                points.push(Point {
                    step: Some(i),
                    persist: p.clone(),
                    state: states.len() - 1,
                    events: crash.events(),
                    node,
                });
            }
        }
    }
    let events = crash.events();
    drop(fs);
    Recorded { steps: workload.steps.clone(), states, points, crash, events, op_events, orphans }
}

/// One broken promise, with everything needed to replay it.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The workload (name and steps).
    pub workload: String,
    /// The crash state's description (cut, what became of unflushed writes).
    pub state: String,
    /// The cut (events kept).
    pub cut: usize,
    /// The persistence points and their event counts.
    pub points: String,
    /// What was expected and what was found.
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "workload {}", self.workload)?;
        writeln!(f, "  crash state: {} (cut {})", self.state, self.cut)?;
        writeln!(f, "  persistence points: {}", self.points)?;
        write!(f, "  {}", self.what)
    }
}

/// What exploring one or more workloads found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Workloads run.
    pub workloads: usize,
    /// Crash states mounted and checked.
    pub states: usize,
    /// States whose mount applied roll-forward (partial segments applied).
    pub rolled_forward: usize,
    /// States whose mount discarded an unfinished directory operation.
    pub discarded: usize,
    /// Images after a second power cut (or recovery and unmount) checked.
    pub second_crashes: usize,
    /// Device events recorded by the workloads (setup excluded).
    pub events: usize,
    /// The violations, in the order found.
    pub violations: Vec<Violation>,
}

impl Outcome {
    /// Adds `other`'s counts and violations to this one.
    pub fn merge(&mut self, other: Outcome) {
        self.workloads += other.workloads;
        self.states += other.states;
        self.rolled_forward += other.rolled_forward;
        self.discarded += other.discarded;
        self.second_crashes += other.second_crashes;
        self.events += other.events;
        self.violations.extend(other.violations);
    }
}

/// How many crash states to try per workload, and with which seed.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// At most this many crash states per workload ([`CrashDisk::crash_states`]).
    pub max_states: usize,
    /// Seed for the crash-state sample (mixed with the workload's index).
    pub seed: u64,
    /// Second power cuts (during the recovery mount or its unmount) tried
    /// per crash state that recovered something, besides the image after
    /// the clean unmount.
    pub second_crashes: usize,
}

/// Runs `workload` and checks every crash state the budget allows. A state
/// stops at its first violation; the others are still checked.
pub fn explore(workload: &Workload, image: &[u8], setup: &Tree, budget: Budget, index: u64) -> Outcome {
    let rec = record(workload, image, setup);
    let mut outcome = Outcome { workloads: 1, events: rec.events, ..Outcome::default() };
    let seed = budget.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for state in rec.crash.crash_states(budget.max_states, seed) {
        outcome.states += 1;
        let CrashState { description, cut, disk, .. } = state;
        match check_state(&rec, disk, cut, budget.second_crashes, seed ^ cut as u64) {
            Ok(checked) => {
                outcome.rolled_forward += usize::from(checked.recovery.applied > 0);
                outcome.discarded += usize::from(checked.recovery.discarded > 0);
                outcome.second_crashes += checked.second_crashes;
            }
            Err(what) => outcome.violations.push(Violation {
                workload: workload.to_string(),
                state: description,
                cut,
                points: points_text(&rec),
                what,
            }),
        }
    }
    outcome
}

fn points_text(rec: &Recorded) -> String {
    rec.points
        .iter()
        .map(|p| match p.step {
            None => format!("setup sync (events ≤ {})", p.events),
            Some(step) => format!("step {step} {} after op {} (events ≤ {})", p.persist, p.state, p.events),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One observed node: what the walk found at an inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Its type (`format::inode::kind`).
    pub kind: u32,
    /// Its link count.
    pub nlink: u32,
    /// Its size.
    pub size: u64,
    /// File contents or symlink target.
    pub data: Vec<u8>,
    /// Names found for it (directories: 1 plus subdirectories' `..` counted
    /// separately).
    pub names: u32,
    /// Subdirectories found in it.
    pub subdirs: u32,
}

/// The tree as mounted after a crash.
#[derive(Debug, Default)]
pub struct Observed {
    /// Path → (type, inode number).
    pub namespace: BTreeMap<String, (u32, Ino)>,
    /// What each inode found holds.
    pub inodes: BTreeMap<Ino, Seen>,
}

fn kind_name(k: u32) -> &'static str {
    match k {
        kind::REG => "file",
        kind::DIR => "dir",
        kind::LNK => "symlink",
        _ => "other",
    }
}

fn namespace_text(ns: &BTreeMap<String, (u32, Ino)>) -> String {
    let items: Vec<String> = ns.iter().map(|(p, (k, ino))| format!("{p}={}#{ino}", kind_name(*k))).collect();
    format!("{{{}}}", items.join(" "))
}

/// Walks the tree from the root, checking structure (item 2 of the module
/// doc) as it goes.
/// Files past this size are read in pieces and not kept: a damaged image
/// may hold a sparse file of terabytes, which is a valid file, not one to
/// hold in memory.
const WHOLE_READ_LIMIT: u64 = 16 << 20;

/// A regular file's contents (empty past [`WHOLE_READ_LIMIT`]: then 65
/// pieces of 64 KiB spread over it are read, so every part must still be
/// readable) and the length reads found, for the caller to compare with
/// its size.
fn read_whole<S: StorageManager>(
    fs: &mut FileSystem<S>,
    ino: Ino,
    size: u64,
) -> fslab::Result<(Vec<u8>, u64)> {
    if size <= WHOLE_READ_LIMIT {
        let data = fs.read(ino, 0, size as usize + 1)?;
        let len = data.len() as u64;
        return Ok((data, len));
    }
    const PIECE: u64 = 64 << 10;
    for i in 0..=64 {
        fs.read(ino, (size - PIECE) / 64 * i, PIECE as usize)?;
    }
    let past = fs.read(ino, size, 1)?;
    Ok((Vec::new(), size + past.len() as u64))
}

pub fn walk<S: StorageManager>(fs: &mut FileSystem<S>) -> Result<Observed, String> {
    let mut seen = Observed::default();
    let root = fs.getattr(ROOT_INO).map_err(|e| format!("root inode unreadable: {e}"))?;
    if !root.attr.is_dir() {
        return Err(format!("root inode has mode {:o}", root.attr.mode));
    }
    seen.inodes.insert(
        ROOT_INO,
        Seen {
            kind: kind::DIR,
            nlink: root.attr.nlink,
            size: root.attr.size,
            data: vec![],
            names: 1,
            subdirs: 0,
        },
    );
    let mut dirs_seen = BTreeSet::from([ROOT_INO]);
    let mut stack = vec![(String::new(), ROOT_INO, ROOT_INO)];
    while let Some((path, dir, parent)) = stack.pop() {
        let mut offset = 0;
        let mut entries = Vec::new();
        loop {
            let page =
                fs.readdir(dir, offset, 16).map_err(|e| format!("readdir of /{path} (#{dir}): {e}"))?;
            let Some(last) = page.last() else { break };
            offset = last.next_offset;
            entries.extend(page);
            if entries.len() > 10_000 {
                return Err(format!("directory /{path} does not end"));
            }
        }
        let mut dots = (false, false);
        for entry in entries {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            if name == "." || name == ".." {
                let want = if name == "." { dir } else { parent };
                if entry.ino != want {
                    return Err(format!("/{path}: `{name}` names #{} instead of #{want}", entry.ino));
                }
                if name == "." {
                    dots.0 = true;
                } else {
                    dots.1 = true;
                }
                continue;
            }
            let child = if path.is_empty() { name.clone() } else { format!("{path}/{name}") };
            let inode = fs.getattr(entry.ino).map_err(|e| {
                format!(
                    "entry /{child} names inode #{} that cannot be read: {e} (entry without inode)",
                    entry.ino
                )
            })?;
            let k = inode.attr.mode & kind::MASK;
            if k != entry.kind {
                return Err(format!(
                    "entry /{child} says {} but inode #{} is a {}",
                    kind_name(entry.kind),
                    entry.ino,
                    kind_name(k)
                ));
            }
            if seen.namespace.insert(child.clone(), (k, entry.ino)).is_some() {
                return Err(format!("name /{child} listed twice"));
            }
            if let Some(s) = seen.inodes.get_mut(&dir) {
                s.subdirs += u32::from(k == kind::DIR);
            }
            if let Some(s) = seen.inodes.get_mut(&entry.ino) {
                if k == kind::DIR {
                    return Err(format!("directory #{} reached twice (second time as /{child})", entry.ino));
                }
                s.names += 1;
                continue;
            }
            let (data, read) = match k {
                kind::REG => read_whole(fs, entry.ino, inode.attr.size)
                    .map_err(|e| format!("read /{child} (#{}): {e}", entry.ino))?,
                kind::LNK => {
                    let target = fs.readlink(entry.ino).map_err(|e| format!("readlink /{child}: {e}"))?;
                    let len = target.len() as u64;
                    (target, len)
                }
                _ => (Vec::new(), 0),
            };
            if k == kind::REG && read != inode.attr.size {
                return Err(format!("/{child}: size {} but read returned {read} bytes", inode.attr.size));
            }
            seen.inodes.insert(
                entry.ino,
                Seen { kind: k, nlink: inode.attr.nlink, size: inode.attr.size, data, names: 1, subdirs: 0 },
            );
            if k == kind::DIR {
                if !dirs_seen.insert(entry.ino) {
                    return Err(format!("directory #{} reached twice", entry.ino));
                }
                stack.push((child, entry.ino, dir));
            }
        }
        if dots != (true, true) {
            return Err(format!("/{path} (#{dir}) lacks `.` or `..`"));
        }
    }
    for (ino, s) in &seen.inodes {
        let want = if s.kind == kind::DIR { 2 + s.subdirs } else { s.names };
        if s.nlink != want {
            return Err(format!(
                "inode #{ino} ({}) has link count {} but {want} links were found",
                kind_name(s.kind),
                s.nlink
            ));
        }
    }
    Ok(seen)
}

/// What checking one crash state did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checked {
    /// What the mount's roll-forward applied and discarded.
    pub recovery: fslab::lfs::Recovery,
    /// Images after a second power cut (during or after the recovery mount
    /// and its unmount) checked.
    pub second_crashes: usize,
}

/// Mounts one crash state, unmounts it cleanly and checks it (module doc,
/// items 1-6).
///
/// When `second > 0` and the mount recovered something (applied or
/// discarded partial segments), it also checks item 7: the image after
/// that unmount, and up to `second` images a second power cut during the
/// recovery mount or the unmount could leave, mount again and show exactly
/// the tree the first recovery found (recovery is idempotent, a crash
/// inside it loses nothing, its log is not confused with log from before
/// the first crash), and items 3-6 hold on them after a clean unmount.
///
/// `disk` is the crash image (taken, not copied); `cut` its cut; `seed`
/// picks the second crashes.
pub fn check_state(
    rec: &Recorded,
    disk: MemDisk,
    cut: usize,
    second: usize,
    seed: u64,
) -> Result<Checked, String> {
    // Record the mount's writes only when second crashes are wanted.
    let (crash, dev): (Option<CrashDisk>, Arc<dyn BlockDevice>) = if second > 0 {
        let crash = CrashDisk::over(disk);
        (Some(crash.clone()), Arc::new(crash))
    } else {
        (None, Arc::new(disk))
    };
    let lfs = Lfs::mount(dev.clone(), mount_options()).map_err(|e| format!("mount failed: {e}"))?;
    let recovery = lfs.recovery();
    let mut fs = FileSystem::new(lfs);
    let seen = walk(&mut fs)?;
    fs.unmount().map_err(|e| format!("unmount after recovery failed: {e}"))?;
    drop(fs);
    check_image(rec, cut, dev.as_ref(), &seen)?;
    let crash = crash.filter(|_| recovery.applied > 0 || recovery.discarded > 0);
    let Some(crash) = crash else { return Ok(Checked { recovery, second_crashes: 0 }) };
    // The image after the clean unmount, then a sample of power cuts during
    // the mount and the unmount (the base image, the state already checked,
    // left out).
    let end = crash.events();
    let after_unmount =
        crash.crash_image(end, &disk::CrashChoice::AllPersisted).map_err(|e| e.to_string())?;
    let mut seconds =
        vec![(format!("none: the image after recovery and a clean unmount (cut {end})"), after_unmount)];
    seconds.extend(
        crash
            .crash_states(second + 1, seed)
            .filter(|s| s.cut > 0 && s.cut < end)
            .take(second)
            .map(|s| (s.description, s.disk)),
    );
    let second_crashes = seconds.len();
    for (description, disk) in seconds {
        let context =
            |e: String| format!("after recovery and a second power cut: {e} [second cut: {description}]");
        let dev: Arc<dyn BlockDevice> = Arc::new(disk);
        let lfs =
            Lfs::mount(dev.clone(), mount_options()).map_err(|e| context(format!("mount failed: {e}")))?;
        let mut fs = FileSystem::new(lfs);
        let seen_again = walk(&mut fs).map_err(context)?;
        fs.unmount().map_err(|e| context(format!("unmount failed: {e}")))?;
        drop(fs);
        if seen_again.namespace != seen.namespace {
            return Err(context(format!(
                "the second mount found namespace {}, the first {}",
                namespace_text(&seen_again.namespace),
                namespace_text(&seen.namespace)
            )));
        }
        if let Some((ino, a)) = seen.inodes.iter().find(|(ino, a)| seen_again.inodes.get(ino) != Some(a)) {
            return Err(context(format!(
                "inode #{ino} differs: first mount {} (nlink {}), second {:?}",
                describe(&a.data),
                a.nlink,
                seen_again.inodes.get(ino).map(|b| (describe(&b.data), b.nlink))
            )));
        }
        check_image(rec, cut, dev.as_ref(), &seen_again).map_err(context)?;
    }
    Ok(Checked { recovery, second_crashes })
}

/// Items 3-6 on an image mounted, walked and unmounted cleanly.
fn check_image(rec: &Recorded, cut: usize, dev: &dyn BlockDevice, seen: &Observed) -> Result<(), String> {
    check_renames(rec, seen)?;
    check_namespace(rec, cut, seen)?;
    check_contents(rec, cut, seen)?;
    check_fsck(dev)
}

/// Rename atomicity, checked on its own for a clearer report (item 3
/// implies it): after a rename of a name that existed at setup, when no other
/// operation of the workload touches either name, the target names the old or the new inode,
/// never nothing, and the renamed inode keeps one of its two names.
fn check_renames(rec: &Recorded, seen: &Observed) -> Result<(), String> {
    let ops: Vec<&Op> =
        rec.steps.iter().filter_map(|s| if let Step::Op(op) = s { Some(op) } else { None }).collect();
    for (i, op) in ops.iter().enumerate() {
        let Op::Rename(from, to) = op else { continue };
        let (before, after) = (&rec.states[i], &rec.states[i + 1]);
        if !rec.states[0].names.contains_key(from.as_str()) && !rec.states[0].names.contains_key(to.as_str())
        {
            continue;
        }
        let touched =
            |p: &str| ops.iter().enumerate().any(|(j, other)| j != i && other.to_string().contains(p));
        if touched(from) || touched(to) {
            continue;
        }
        let Some((_, moved)) = before.node_at(from) else { continue };
        let old_target = before.node_at(to).map(|(_, n)| n.ino);
        let new_target = after.node_at(to).map(|(_, n)| n.ino);
        let found_to = seen.namespace.get(to.as_str()).map(|&(_, ino)| ino);
        let found_from = seen.namespace.get(from.as_str()).map(|&(_, ino)| ino);
        if old_target.is_some() && found_to.is_none() {
            return Err(format!(
                "{op} not atomic: {to} names nothing; expected the old inode #{} or the new #{}",
                old_target.unwrap_or(0),
                new_target.unwrap_or(0)
            ));
        }
        if found_to.is_some() && found_to != old_target && found_to != new_target {
            return Err(format!(
                "{op} not atomic: {to} names #{}, expected {old_target:?} or {new_target:?}",
                found_to.unwrap_or(0)
            ));
        }
        if found_from != Some(moved.ino) && found_to != Some(moved.ino) {
            return Err(format!(
                "{op} not atomic: inode #{} lost both names ({from} names {found_from:?}, {to} names {found_to:?})",
                moved.ino
            ));
        }
    }
    Ok(())
}

/// Item 3: the namespace is the one after some prefix of the operations,
/// not older than the latest acknowledged persistence point.
fn check_namespace(rec: &Recorded, cut: usize, seen: &Observed) -> Result<(), String> {
    let floor = rec.points.iter().filter(|p| p.events <= cut).map(|p| p.state).max().unwrap_or(0);
    let found = &seen.namespace;
    if rec.states[floor..].iter().any(|s| &s.namespace() == found) {
        return Ok(());
    }
    let older = rec.states[..floor].iter().position(|s| &s.namespace() == found);
    let mut msg = match older {
        Some(k) => format!(
            "namespace went back to the state after op {k}, older than the acknowledged state after op {floor}:"
        ),
        None => format!("namespace is not the one after any prefix of the ops (at least op {floor}):"),
    };
    for (k, s) in rec.states.iter().enumerate().skip(floor) {
        msg.push_str(&format!("\n    expected after op {k}: {}", namespace_text(&s.namespace())));
    }
    msg.push_str(&format!("\n    found: {}", namespace_text(found)));
    Err(msg)
}

/// Items 4 and 5: contents of every file found, against the model.
fn check_contents(rec: &Recorded, cut: usize, seen: &Observed) -> Result<(), String> {
    // Which model node each inode is: the namespace matched some state; a
    // freed inode number may be reused, so several states (with different
    // nodes at one path) can match, and any of them may explain the file.
    let matching: Vec<&Tree> = rec.states.iter().filter(|s| s.namespace() == seen.namespace).collect();
    if matching.is_empty() {
        return Ok(()); // reported by check_namespace
    }
    for (path, &(kd, ino)) in &seen.namespace {
        let Some(s) = seen.inodes.get(&ino) else { continue };
        let mut first_error = None;
        let mut explained = false;
        let mut ids = BTreeSet::new();
        for state in matching.iter().rev() {
            let Some((id, node)) = state.node_at(path) else { continue };
            if !ids.insert(id) {
                continue;
            }
            let result = match (&node.body, kd) {
                (Body::Symlink(target), kind::LNK) if &s.data != target => Err(format!(
                    "symlink /{path} points at {:?}, made pointing at {:?}",
                    String::from_utf8_lossy(&s.data),
                    String::from_utf8_lossy(target)
                )),
                (Body::File(_), kind::REG) => check_file(rec, cut, path, id, &s.data),
                _ => Ok(()),
            };
            match result {
                Ok(()) => {
                    explained = true;
                    break;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if !explained {
            if let Some(e) = first_error {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The contents node `id` had in each state where it lived, by state index.
fn versions(rec: &Recorded, id: NodeId) -> Vec<(usize, &[u8])> {
    rec.states
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s.nodes.get(&id) {
            Some(Node { body: Body::File(d), .. }) => Some((k, d.as_slice())),
            _ => None,
        })
        .collect()
}

fn describe(data: &[u8]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < data.len() && runs.len() < 8 {
        let zero = data[i] == 0;
        let start = i;
        while i < data.len() && (data[i] == 0) == zero {
            i += 1;
        }
        runs.push(format!("{}..{} {}", start, i, if zero { "zeros" } else { "data" }));
    }
    if i < data.len() {
        runs.push("…".into());
    }
    format!("{} bytes [{}]", data.len(), runs.join(", "))
}

fn check_file(rec: &Recorded, cut: usize, path: &str, id: NodeId, data: &[u8]) -> Result<(), String> {
    let all = versions(rec, id);
    // Item 5: sizes and bytes it was given.
    if !all.iter().any(|(_, v)| v.len() == data.len()) {
        let sizes: BTreeSet<usize> = all.iter().map(|(_, v)| v.len()).collect();
        return Err(format!("/{path} has size {} but only ever had sizes {sizes:?}", data.len()));
    }
    for (o, &b) in data.iter().enumerate() {
        if b != 0 && !all.iter().any(|(_, v)| v.get(o) == Some(&b)) {
            return Err(format!(
                "/{path} shows byte {b:#04x} at offset {o} that no write put there (data it was not given); \
                 found {}",
                describe(data)
            ));
        }
    }
    // Item 4: the newest acknowledged point that covers this file.
    let covering = rec
        .points
        .iter()
        .filter(|p| p.events <= cut)
        .filter(|p| p.persist == Persist::Sync || p.node == Some(id))
        .map(|p| (p.state, p))
        .max_by_key(|(s, _)| *s);
    let Some((from, point)) = covering else { return Ok(()) };
    let later: Vec<&(usize, &[u8])> = all.iter().filter(|(k, _)| *k >= from).collect();
    if later.len() != rec.states.len() - from {
        return Ok(()); // freed at some later step: the name checks cover it
    }
    if later.iter().any(|(_, v)| *v == data) {
        return Ok(());
    }
    let mut msg = format!(
        "/{path} lost data made durable by {} (after op {from}); found {}",
        if point.step.is_none() { "the setup sync".to_string() } else { point.persist.to_string() },
        describe(data)
    );
    for (k, v) in later {
        let first = v.iter().zip(data).position(|(a, b)| a != b).unwrap_or(v.len().min(data.len()));
        msg.push_str(&format!("\n    allowed (after op {k}): {}, first difference at {first}", describe(v)));
    }
    Err(msg)
}

/// Item 6: fsck on the image after recovery and a clean unmount.
fn check_fsck(dev: &dyn BlockDevice) -> Result<(), String> {
    crate::subject::fsck_clean(dev, false).map_err(|e| format!("after recovery and a clean unmount, {e}"))
}

/// Explores every workload of `list` on `threads` threads (each workload on
/// one thread, in any order) and merges the outcomes; violations are sorted
/// by workload name so reports are stable.
pub fn explore_all(list: &[Workload], budget: Budget, threads: usize) -> Outcome {
    keep_images_off_mmap();
    let (image, setup) = setup_image();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let total = std::sync::Mutex::new(Outcome::default());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(workload) = list.get(i) else { break };
                let outcome = explore(workload, &image, &setup, budget, i as u64);
                total.lock().unwrap_or_else(|e| e.into_inner()).merge(outcome);
            });
        }
    });
    let mut total = total.into_inner().unwrap_or_else(|e| e.into_inner());
    total.violations.sort_by(|a, b| a.workload.cmp(&b.workload).then(a.cut.cmp(&b.cut)));
    total
}

/// Every crash state copies the device image a few times; glibc serves
/// blocks this large with `mmap` and returns them with `munmap`, and the page
/// faults cost more than the checks (half the run in the kernel). Raising
/// the threshold keeps them in the heap, where they are reused.
fn keep_images_off_mmap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let bytes = i32::try_from(4 * DISK_BYTES).unwrap_or(i32::MAX);
        // SAFETY: mallopt only changes allocator tuning parameters; it is
        // safe to call at any time, from any thread.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 16 * bytes);
        }
    }
}
