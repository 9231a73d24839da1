//! The vocabulary of a crash workload ([`Op`], [`Persist`], [`Step`],
//! [`Workload`]) and its generator: the setup every workload starts from,
//! the core operations, the persistence points each may take, and every
//! sequence of one and two of them ([`workloads`]), with the dependencies
//! ACE adds ("create before write").

use super::op::Op;
use super::tree::{parent_of, Tree};
use std::fmt;

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
