//! The harness: applies each [`Op`] to the [`Model`] and to a real
//! [`FileSystem`], compares the answers after every step and the whole tree
//! every few steps, and on any difference panics with the seed, the step and
//! the last ops, so the failure can be replayed.
//!
//! Map: a [`Subject`] is a file system under test (`crate::subject`);
//! [`Harness`] holds the model, the subject, the model-id → inode map and
//! the open handles, and applies ops here; `checks` compares state (a
//! node, a listing, the whole tree, the inode count); [`run`] drives a
//! [`Generator`] through a harness for a [`RunConfig`].
//!
//! Checks after each step: the op's result (Ok value or errno), the
//! attributes (kind, permission bits, nlink, size) of every node the op
//! named and of their parents, and that a node the model freed is gone
//! (ENOENT) from the real file system. ENOSPC, and a write cut short, are
//! accepted only where the model says the space is short (`crate::space`);
//! anywhere else they are wrong answers. Whole-tree checks: every
//! directory's listing read in small pages (each name exactly once, with the
//! right kind and inode, `.` and `..` included), its index, every node's
//! attributes, contents, symlink target and xattrs, and the count of inodes
//! in use (`statfs`), exact at any moment.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use fslab::format::inode::Inode;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem, RenameFlags, SetAttr};

use crate::model::{Kind, Model, NodeId, Res, ROOT};
use crate::ops::{fill, Generator, Op, RenameKind, Weights, HANDLE_SLOTS};
use crate::space;

mod checks;
pub use crate::subject::{FfsSubject, LfsSubject, MemSubject, Subject};

/// What one run does.
#[derive(Debug, Clone, Copy)]
pub struct RunConfig {
    /// Seed of the generator.
    pub seed: u64,
    /// Operations to apply.
    pub ops: usize,
    /// Steps between whole-tree checks.
    pub check_every: usize,
    /// Kinds of op and their frequencies.
    pub weights: Weights,
}

/// Counts from a run, for the test's log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Ops that succeeded on both sides.
    pub ok: usize,
    /// Ops that failed with the same errno on both sides (at the walk or
    /// in the call itself).
    pub errors: usize,
    /// Whole-tree checks made.
    pub tree_checks: usize,
    /// Remounts made.
    pub remounts: usize,
    /// Calls the real file system refused with ENOSPC (or cut short) where
    /// the model said the space was short.
    pub enospc: usize,
    /// Answers the calls that hold the file system shared gave in tree
    /// checks, each compared with the model: attributes, lookups, reads,
    /// listings, extended attributes.
    pub cached_answers: [usize; 5],
}

/// How often each kind of op ended each way ("rename: ENOTEMPTY" → count),
/// to see what a run covered.
pub type Outcomes = std::collections::BTreeMap<String, usize>;

/// Reads a positive integer from environment variable `name`, or `default`.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|&v| v > 0).unwrap_or(default)
}

/// Runs `cfg.ops` generated ops on `subject` and the model; panics with a
/// replayable report on the first difference.
pub fn run<T: Subject>(subject: T, cfg: RunConfig) -> (RunStats, Outcomes) {
    let mut harness = Harness::new(subject, cfg.seed);
    let mut gen = Generator::new(cfg.seed, cfg.weights);
    harness.check_tree();
    harness.check_inode_count();
    for step in 0..cfg.ops {
        gen.set_known(harness.model.paths());
        let op = gen.next_op();
        harness.apply(op);
        if (step + 1) % cfg.check_every.max(1) == 0 {
            harness.check_tree();
        }
    }
    harness.check_tree();
    harness.check_image();
    (harness.stats, harness.outcomes)
}

fn errno(e: fslab::Error) -> i32 {
    e.errno()
}

fn bytes(path: &[String]) -> Vec<Vec<u8>> {
    path.iter().map(|c| c.as_bytes().to_vec()).collect()
}

const HISTORY: usize = 20;

/// The model, a subject and what ties them together.
pub struct Harness<T: Subject> {
    seed: u64,
    step: usize,
    model: Model,
    subject: T,
    /// The real inode of each model node.
    inos: HashMap<NodeId, Ino>,
    handles: [Option<NodeId>; HANDLE_SLOTS],
    history: VecDeque<(usize, Op)>,
    /// Inodes in use minus model nodes alive, from the first check.
    inode_offset: Option<i64>,
    stats: RunStats,
    /// The outcome of the last comparison made.
    last: Option<String>,
    outcomes: Outcomes,
    /// Blocks the op being applied may add ([`space::op_blocks`]).
    op_blocks: u64,
    /// Why the model saw room for an ENOSPC of this op, for a report.
    space_note: Option<String>,
}

impl<T: Subject> Harness<T> {
    /// A harness over a fresh `subject` (its root empty); `seed` is only
    /// reported.
    pub fn new(subject: T, seed: u64) -> Harness<T> {
        let model = Model::new(subject.limits());
        Harness {
            seed,
            step: 0,
            model,
            subject,
            inos: HashMap::from([(ROOT, ROOT_INO)]),
            handles: [None; HANDLE_SLOTS],
            history: VecDeque::new(),
            inode_offset: None,
            stats: RunStats::default(),
            last: None,
            outcomes: Outcomes::new(),
            op_blocks: 0,
            space_note: None,
        }
    }

    /// Counts of each op kind's outcomes so far.
    pub fn outcomes(&self) -> &Outcomes {
        &self.outcomes
    }

    /// Counts so far.
    pub fn stats(&self) -> RunStats {
        self.stats
    }

    /// The subject, for extra checks.
    pub fn subject(&mut self) -> &mut T {
        &mut self.subject
    }

    fn fs(&mut self) -> &mut FileSystem<T::S> {
        self.subject.fs()
    }

    fn fail(&self, msg: String) -> ! {
        let mut report = String::new();
        let _ = writeln!(report, "model mismatch: seed {} step {}: {msg}", self.seed, self.step);
        if let Some(note) = &self.space_note {
            let _ = writeln!(report, "an ENOSPC where the model had room: {note}");
        }
        let _ = writeln!(report, "last {} ops (step: op):", self.history.len());
        for (step, op) in &self.history {
            let _ = writeln!(report, "  {step}: {op:?}");
        }
        panic!("{report}");
    }

    fn ino(&self, id: NodeId) -> Ino {
        match self.inos.get(&id) {
            Some(&ino) => ino,
            None => self.fail(format!("model node {id} has no real inode")),
        }
    }

    /// Compares a model result with a real one whose Ok values are equal
    /// when `same` says so.
    fn compare<A: std::fmt::Debug, B: std::fmt::Debug>(
        &mut self,
        what: &str,
        m: &Res<A>,
        r: &Result<B, fslab::Error>,
        same: impl FnOnce(&A, &B) -> bool,
    ) {
        let equal = match (m, r) {
            (Ok(a), Ok(b)) => same(a, b),
            (Err(a), Err(b)) => *a == b.errno(),
            _ => false,
        };
        if !equal {
            let show_m = match m {
                Ok(a) => format!("Ok({})", short(a)),
                Err(e) => format!("Err({})", errno_name(*e)),
            };
            let show_r = match r {
                Ok(b) => format!("Ok({})", short(b)),
                Err(e) => format!("Err({}: {e})", errno_name(e.errno())),
            };
            self.fail(format!("{what}: model {show_m}, fslab {show_r}"));
        }
        self.last = Some(match m {
            Ok(_) => "ok".to_string(),
            Err(e) => errno_name(*e),
        });
        let _ = what;
    }

    /// Walks `path` on the real file system as the model walks it.
    fn real_walk(&mut self, path: &[Vec<u8>]) -> fslab::Result<Ino> {
        let mut at = ROOT_INO;
        for name in path {
            at = self.fs().lookup(at, name)?.ino;
        }
        Ok(at)
    }

    /// The parent directory of `path`'s last component (ENOTDIR if it is
    /// not a directory, as the kernel's path walk answers).
    fn real_walk_parent(&mut self, path: &[Vec<u8>]) -> fslab::Result<Ino> {
        let Some((_, dirs)) = path.split_last() else {
            return Err(fslab::error::errno(libc::ENOENT, "empty path"));
        };
        let dir = self.real_walk(dirs)?;
        if !self.fs().getattr(dir)?.attr.is_dir() {
            return Err(fslab::error::errno(libc::ENOTDIR, "not a directory"));
        }
        Ok(dir)
    }

    /// Walks `path` on both sides and checks they agree; `Ok` with both ends.
    fn walk_both(&mut self, what: &str, path: &[Vec<u8>]) -> Option<(NodeId, Ino)> {
        let m = self.model.walk(path);
        let r = self.real_walk(path);
        self.check_walk(what, m, r)
    }

    /// Walks to the parent of `path` on both sides; `Ok` with both ends.
    fn walk_parent_both(&mut self, what: &str, path: &[Vec<u8>]) -> Option<(NodeId, Ino)> {
        let m = self.model.walk_parent(path).map(|(id, _)| id);
        let r = self.real_walk_parent(path);
        self.check_walk(what, m, r)
    }

    fn check_walk(&mut self, what: &str, m: Res<NodeId>, r: fslab::Result<Ino>) -> Option<(NodeId, Ino)> {
        let expected = m.map(|id| self.inos.get(&id).copied());
        self.compare(what, &expected, &r, |a, b| *a == Some(*b));
        match (m, r) {
            (Ok(id), Ok(ino)) => Some((id, ino)),
            _ => None,
        }
    }

    /// Records that model node `id` is real inode `ino`, which no other live
    /// node may be.
    fn bind(&mut self, id: NodeId, ino: Ino) {
        let clash =
            self.inos.iter().find(|(&other, &i)| i == ino && other != id && self.model.node(other).is_some());
        if let Some((other, _)) = clash {
            self.fail(format!("new node got inode {ino}, which live model node {other} still has"));
        }
        self.inos.insert(id, ino);
    }

    /// Applies one op to both sides and checks the results.
    pub fn apply(&mut self, op: Op) {
        self.step += 1;
        self.history.push_back((self.step, op.clone()));
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        // Nodes the op names, before it runs: checked (or checked gone) after.
        let mut named = self.named_nodes(&op);
        self.last = None;
        self.space_note = None;
        self.op_blocks = space::op_blocks(&op, self.model.limits().block_size);
        self.apply_inner(&op);
        self.check_storage_invariants();
        let outcome = self.last.take().unwrap_or_else(|| "skipped".to_string());
        match outcome.as_str() {
            "ok" => self.stats.ok += 1,
            "skipped" => {}
            _ => self.stats.errors += 1,
        }
        let kind = format!("{op:?}");
        let kind = kind.split([' ', '{']).next().unwrap_or("?").to_string();
        *self.outcomes.entry(format!("{kind}: {outcome}")).or_insert(0) += 1;
        named.extend(self.named_nodes(&op));
        named.extend(self.handles.iter().flatten().copied());
        let mut ids: Vec<NodeId> = named.into_iter().collect();
        ids.sort_unstable();
        for id in ids {
            if self.model.node(id).is_some() {
                self.check_attr(id);
            } else if let Some(ino) = self.inos.remove(&id) {
                let r = self.fs().getattr(ino);
                if let Ok(inode) = r {
                    self.fail(format!("model node {id} is gone but inode {ino} lives: {:?}", inode.attr));
                }
            }
        }
    }

    /// Every node the op's paths reach and their parents.
    fn named_nodes(&self, op: &Op) -> HashSet<NodeId> {
        let paths: Vec<&crate::ops::Path> = match op {
            Op::Create { path, .. }
            | Op::Mkdir { path, .. }
            | Op::Symlink { path, .. }
            | Op::Readlink { path }
            | Op::Write { path, .. }
            | Op::Read { path, .. }
            | Op::Truncate { path, .. }
            | Op::Fallocate { path, .. }
            | Op::Chmod { path, .. }
            | Op::Getattr { path }
            | Op::Readdir { path, .. }
            | Op::Unlink { path }
            | Op::Rmdir { path }
            | Op::SetXattr { path, .. }
            | Op::GetXattr { path, .. }
            | Op::RemoveXattr { path, .. }
            | Op::ListXattr { path }
            | Op::Open { path, .. }
            | Op::Fsync { path } => vec![path],
            Op::Rename { from, to, .. } | Op::Link { from, to } => vec![from, to],
            _ => Vec::new(),
        };
        let mut out = HashSet::new();
        for p in paths {
            let p = bytes(p);
            for depth in 0..=p.len() {
                if let Ok(id) = self.model.walk(&p[..depth]) {
                    out.insert(id);
                }
            }
        }
        out
    }

    fn apply_inner(&mut self, op: &Op) {
        let creds = Creds::default();
        match op {
            Op::Create { path, perm } => {
                let p = bytes(path);
                let Some((dir_id, dir)) = self.walk_parent_both("create: parent", &p) else { return };
                let name = &p[p.len() - 1];
                let r = self.fs().mknod(dir, name, libc::S_IFREG | perm, 0, creds);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.create_file(dir_id, name, *perm);
                self.created("create", m, r);
            }
            Op::Mkdir { path, perm } => {
                let p = bytes(path);
                let Some((dir_id, dir)) = self.walk_parent_both("mkdir: parent", &p) else { return };
                let name = &p[p.len() - 1];
                let r = self.fs().mkdir(dir, name, *perm, creds);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.mkdir(dir_id, name, *perm);
                self.created("mkdir", m, r);
            }
            Op::Symlink { path, target } => {
                let p = bytes(path);
                let Some((dir_id, dir)) = self.walk_parent_both("symlink: parent", &p) else { return };
                let name = &p[p.len() - 1];
                let t = target.bytes();
                let r = self.fs().symlink(dir, name, &t, creds);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.symlink(dir_id, name, &t);
                self.created("symlink", m, r);
            }
            Op::Readlink { path } => {
                let Some((id, ino)) = self.walk_both("readlink: walk", &bytes(path)) else { return };
                let r = self.fs().readlink(ino);
                let m = self.model.readlink(id);
                self.compare("readlink", &m, &r, |a, b| a == b);
            }
            Op::Write { path, offset, len, fill: seed } => {
                let Some((id, ino)) = self.walk_both("write: walk", &bytes(path)) else { return };
                self.write(id, ino, *offset, *len, *seed);
            }
            Op::WriteHandle { slot, offset, len, fill: seed } => {
                let Some(id) = self.handles[*slot] else { return };
                let ino = self.ino(id);
                self.write(id, ino, *offset, *len, *seed);
            }
            Op::Read { path, offset, len } => {
                let Some((id, ino)) = self.walk_both("read: walk", &bytes(path)) else { return };
                self.read(id, ino, *offset, *len);
            }
            Op::ReadHandle { slot, offset, len } => {
                let Some(id) = self.handles[*slot] else { return };
                let ino = self.ino(id);
                self.read(id, ino, *offset, *len);
            }
            Op::Truncate { path, size } => {
                let Some((id, ino)) = self.walk_both("truncate: walk", &bytes(path)) else { return };
                let r = self.fs().setattr(ino, &SetAttr { size: Some(*size), ..SetAttr::default() });
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.truncate(id, *size);
                self.compare("truncate", &m, &r, |_, b| b.attr.size == *size);
            }
            Op::Fallocate { path, offset, len, mode } => {
                let Some((id, ino)) = self.walk_both("fallocate: walk", &bytes(path)) else { return };
                let r = self.fs().fallocate(ino, *offset, *len, *mode);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.fallocate(id, *offset, *len, *mode);
                self.compare("fallocate", &m, &r, |_, _| true);
            }
            Op::Chmod { path, perm } => {
                let Some((id, ino)) = self.walk_both("chmod: walk", &bytes(path)) else { return };
                let r = self.fs().setattr(ino, &SetAttr { mode: Some(*perm), ..SetAttr::default() });
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.chmod(id, *perm);
                self.compare("chmod", &m, &r, |_, b| b.attr.mode & 0o7777 == *perm);
            }
            Op::Getattr { path } => {
                self.walk_both("getattr: walk", &bytes(path));
            }
            Op::Readdir { path, page } => {
                let Some((id, ino)) = self.walk_both("readdir: walk", &bytes(path)) else { return };
                let is_dir = self.model.node(id).is_some_and(|n| n.kind() == Kind::Dir);
                if is_dir {
                    self.check_listing(id, *page);
                } else {
                    let r = self.fs().readdir(ino, 0, 10);
                    self.compare("readdir of a non-directory", &Err::<(), _>(libc::ENOTDIR), &r, |_, _| true);
                }
            }
            Op::Unlink { path } => {
                let p = bytes(path);
                let Some((dir_id, dir)) = self.walk_parent_both("unlink: parent", &p) else { return };
                let name = &p[p.len() - 1];
                let r = self.fs().unlink(dir, name);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.unlink(dir_id, name);
                self.compare("unlink", &m, &r, |_, _| true);
            }
            Op::Rmdir { path } => {
                let p = bytes(path);
                let Some((dir_id, dir)) = self.walk_parent_both("rmdir: parent", &p) else { return };
                let name = &p[p.len() - 1];
                let r = self.fs().rmdir(dir, name);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.rmdir(dir_id, name);
                self.compare("rmdir", &m, &r, |_, _| true);
            }
            Op::Rename { from, to, kind } => {
                let (f, t) = (bytes(from), bytes(to));
                let Some((from_id, from_dir)) = self.walk_parent_both("rename: source parent", &f) else {
                    return;
                };
                let Some((to_id, to_dir)) = self.walk_parent_both("rename: target parent", &t) else {
                    return;
                };
                let (name, new_name) = (&f[f.len() - 1], &t[t.len() - 1]);
                let flags = RenameFlags {
                    noreplace: *kind == RenameKind::NoReplace,
                    exchange: *kind == RenameKind::Exchange,
                };
                let r = self.fs().rename(from_dir, name, to_dir, new_name, flags);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.rename(from_id, name, to_id, new_name, flags.noreplace, flags.exchange);
                self.compare("rename", &m, &r, |_, _| true);
            }
            Op::Link { from, to } => {
                let t = bytes(to);
                let Some((id, ino)) = self.walk_both("link: source", &bytes(from)) else { return };
                let Some((dir_id, dir)) = self.walk_parent_both("link: target parent", &t) else { return };
                let name = &t[t.len() - 1];
                let r = self.fs().link(ino, dir, name);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.link(id, dir_id, name);
                self.compare("link", &m, &r, |_, b| b.ino == ino);
            }
            Op::SetXattr { path, name, len, fill: byte, flags } => {
                let Some((id, ino)) = self.walk_both("setxattr: walk", &bytes(path)) else { return };
                let value = vec![*byte; *len];
                let r = self.fs().setxattr(ino, name.as_bytes(), &value, *flags);
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.setxattr(id, name.as_bytes(), &value, *flags);
                self.compare("setxattr", &m, &r, |_, _| true);
            }
            Op::GetXattr { path, name } => {
                let Some((id, ino)) = self.walk_both("getxattr: walk", &bytes(path)) else { return };
                let r = self.fs().getxattr(ino, name.as_bytes());
                let m = self.model.getxattr(id, name.as_bytes());
                self.compare("getxattr", &m, &r, |a, b| a == b);
            }
            Op::RemoveXattr { path, name } => {
                let Some((id, ino)) = self.walk_both("removexattr: walk", &bytes(path)) else { return };
                let r = self.fs().removexattr(ino, name.as_bytes());
                if self.out_of_space(&r) {
                    return;
                }
                let m = self.model.removexattr(id, name.as_bytes());
                self.compare("removexattr", &m, &r, |_, _| true);
            }
            Op::ListXattr { path } => {
                let Some((id, _)) = self.walk_both("listxattr: walk", &bytes(path)) else { return };
                self.check_xattrs(id);
            }
            Op::Open { path, slot } => {
                let Some((id, ino)) = self.walk_both("open: walk", &bytes(path)) else { return };
                self.close(*slot);
                self.fs().pin(ino);
                if let Err(e) = self.model.open(id) {
                    self.fail(format!("model open of a walked node failed: {e}"));
                }
                self.handles[*slot] = Some(id);
            }
            Op::Close { slot } => self.close(*slot),
            Op::Fsync { path } => {
                let Some((_, ino)) = self.walk_both("fsync: walk", &bytes(path)) else { return };
                let r = self.fs().fsync(ino, false);
                self.compare("fsync", &Ok(()), &r, |_, _| true);
            }
            Op::Sync => {
                let r = self.fs().sync();
                self.compare("sync", &Ok(()), &r, |_, _| true);
                self.check_inode_count();
            }
            Op::DropIndexes => self.fs().drop_dir_indexes(),
            Op::Remount => {
                // A remount starts a new transaction log.
                self.check_tx_bounds();
                match self.subject.remount() {
                    Ok(false) => return,
                    Ok(true) => {}
                    Err(e) => self.fail(format!("remount failed: {e}")),
                }
                self.stats.remounts += 1;
                self.model.close_all();
                self.handles = [None; HANDLE_SLOTS];
                self.check_tree();
                self.check_inode_count();
            }
        }
    }

    /// At the end of a run: fsck on the image, unmounted, finds nothing
    /// wrong (free maps, block counts, links: what the model cannot see).
    /// Files held open then are orphans on the image, which is no damage.
    fn check_image(&mut self) {
        self.check_tx_bounds();
        if let Err(what) = self.subject.fsck() {
            self.fail(format!("at the end of the run, {what}"));
        }
        self.model.close_all();
        self.handles = [None; HANDLE_SLOTS];
    }

    /// The storage manager's own bookkeeping still adds up after the op
    /// (`StorageManager::check_invariants`).
    fn check_storage_invariants(&mut self) {
        if let Err(what) = fslab::storage::StorageManager::check_invariants(self.fs().storage()) {
            self.fail(format!("an invariant of the storage manager broke: {what}"));
        }
    }

    /// Every transaction dirtied no more file blocks than it declared
    /// (what a journal's reservation would rest on).
    fn check_tx_bounds(&mut self) {
        if let Some(over) = fslab::storage::StorageManager::tx_over_bound(self.fs().storage()) {
            self.fail(over.to_string());
        }
    }

    /// Whether `r` is an ENOSPC the model allows (then the model is left
    /// alone: the refused call must have changed nothing). Any other
    /// ENOSPC goes on to be compared with the model's answer.
    fn out_of_space<X>(&mut self, r: &fslab::Result<X>) -> bool {
        r.as_ref().is_err_and(|e| e.errno() == libc::ENOSPC) && self.space_is_short()
    }

    /// Whether the model's contents, with what the op being applied may
    /// add, leave the subject short of space (`crate::space`); if not,
    /// notes the figures for a report.
    fn space_is_short(&mut self) -> bool {
        let Some(capacity) = self.subject.capacity() else { return false };
        let need = space::contents_blocks(&self.model, self.model.limits().block_size) + self.op_blocks;
        if capacity.short(need) {
            self.stats.enospc += 1;
            self.last = Some("ENOSPC (space short)".to_string());
            return true;
        }
        self.space_note = Some(format!(
            "the model's contents and this call take at most {need} blocks; the subject holds {} \
             ({capacity:?})",
            capacity.total.saturating_sub(capacity.fixed + need / capacity.per.max(1))
        ));
        false
    }

    /// Checks the result of a create-like call and binds the new node.
    fn created(&mut self, what: &str, m: Res<NodeId>, r: fslab::Result<Inode>) {
        self.compare(what, &m, &r, |_, _| true);
        if let (Ok(id), Ok(inode)) = (m, r) {
            self.bind(id, inode.ino);
        }
    }

    fn write(&mut self, id: NodeId, ino: Ino, offset: u64, len: usize, seed: u64) {
        let mut data = fill(seed, len);
        let r = self.fs().write(ino, offset, &data);
        if self.out_of_space(&r) {
            return;
        }
        if let Ok(n) = r {
            // A short count is what ENOSPC is in the middle of a write.
            if n < len && self.space_is_short() {
                data.truncate(n);
            }
        }
        let m = self.model.write(id, offset, &data);
        self.compare("write", &m, &r, |a, b| a == b);
    }

    fn read(&mut self, id: NodeId, ino: Ino, offset: u64, len: usize) {
        let r = self.fs().read(ino, offset, len);
        let m = self.model.read(id, offset, len);
        if let (Ok(a), Ok(b)) = (&m, &r) {
            if a != b {
                self.fail(format!("read at {offset} of {len}: {}", first_difference(a, b)));
            }
        }
        self.compare("read", &m, &r, |a, b| a == b);
    }

    fn close(&mut self, slot: usize) {
        let Some(id) = self.handles[slot].take() else { return };
        let ino = self.ino(id);
        let r = self.fs().unpin(ino, 1);
        self.compare("close (unpin)", &Ok(()), &r, |_, _| true);
        if let Err(e) = self.model.close(id) {
            self.fail(format!("model close failed: {e}"));
        }
        if self.model.node(id).is_none() {
            self.inos.remove(&id);
            if let Ok(inode) = self.fs().getattr(ino) {
                self.fail(format!(
                    "closed the last handle of a removed file, but inode {ino} lives: {:?}",
                    inode.attr
                ));
            }
        }
    }
}

/// Where two byte strings first differ, for a report.
pub fn first_difference(want: &[u8], got: &[u8]) -> String {
    match want.iter().zip(got).position(|(a, b)| a != b) {
        Some(i) => format!(
            "first difference at byte {i} (block {}): model {:#04x}, fslab {:#04x}; lengths {} / {}",
            i / 4096,
            want[i],
            got[i],
            want.len(),
            got.len()
        ),
        None => format!("lengths differ: model {}, fslab {}", want.len(), got.len()),
    }
}

fn short<X: std::fmt::Debug>(x: &X) -> String {
    let s = format!("{x:?}");
    if s.len() > 200 {
        format!("{}… ({} chars)", &s[..200], s.len())
    } else {
        s
    }
}

/// The name of an errno, for reports.
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::ENOENT => "ENOENT",
        libc::EEXIST => "EEXIST",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::EINVAL => "EINVAL",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::EPERM => "EPERM",
        libc::EBUSY => "EBUSY",
        libc::ENOSPC => "ENOSPC",
        libc::ENODATA => "ENODATA",
        libc::E2BIG => "E2BIG",
        libc::ERANGE => "ERANGE",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EFBIG => "EFBIG",
        libc::EIO => "EIO",
        libc::EMLINK => "EMLINK",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

/// Keeps `errno` used for callers mapping errors by hand.
pub fn errno_of(e: fslab::Error) -> i32 {
    errno(e)
}
