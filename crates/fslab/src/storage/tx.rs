//! Transactions and dependency hints: how the namespace tells a storage
//! manager which of its calls form one operation, and what that operation
//! changed, so that the layout below can make it recoverable its own way.
//!
//! `ufs` opens a transaction ([`StorageManager::begin`]) around every
//! operation that changes more than one block or field — create, mknod,
//! mkdir, symlink, link, unlink, rmdir, rename, truncate, a write, setattr,
//! an extended-attribute change, the freeing of an orphan — and ends it
//! with [`StorageManager::commit`] whatever happened inside ([`transaction`]
//! does both). Opening may fail: a storage manager may refuse with ENOSPC,
//! or wait, before anything changed (a journal reserving log space).
//!
//! Inside, `ufs` reports what it did in memory as [`Hint`]s, each sent
//! *after* the change it names, so that a storage manager sees the change
//! before any of it can reach the disk:
//!
//! * LFS writes a namespace transaction's blocks in one atomic batch of
//!   partial segments (1993 paper §4.3) and ignores the hints;
//! * FFS in `sync` mode writes each piece synchronously in the order the
//!   hints demand (2000 paper §2: an inode before the entry that names it,
//!   an entry removed before its inode is freed);
//! * soft updates turn them into per-pointer dependencies (2000 paper
//!   §4), and a journal logs them (§5).
//!
//! The block hints ([`Hint::BlocksAllocated`], [`Hint::BlocksFreed`]) come
//! from the storage manager's own allocator, which [`TxLog`] records beside
//! the namespace's.
//!
//! [`StorageManager::begin`]: super::StorageManager::begin
//! [`StorageManager::commit`]: super::StorageManager::commit

use super::StorageManager;
use crate::format::{Ino, Lbn};
use crate::Result;

/// What a transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxKind {
    /// A new node: create, mknod, mkdir, symlink (and the root at mkfs).
    Create,
    /// A new name for an existing node.
    Link,
    /// A name removed: unlink, rmdir.
    Unlink,
    /// A name moved (and what it replaces unlinked).
    Rename,
    /// Two names exchanged (`RENAME_EXCHANGE`): each entry stays where it
    /// is and names the other's node.
    Exchange,
    /// An orphan freed at its last close (or at unmount).
    Reclaim,
    /// Blocks of a file freed or zeroed: truncate, punching a hole.
    Truncate,
    /// File data stored: write, fallocate, copy_file_range.
    Write,
    /// Attributes changed without a size change.
    SetAttr,
    /// The extended-attribute block changed.
    Xattr,
}

impl TxKind {
    /// Whether this changes the namespace (names, links, which inodes
    /// exist): what BSD-LFS calls a directory operation (§4.3).
    pub fn is_namespace(self) -> bool {
        matches!(
            self,
            TxKind::Create
                | TxKind::Link
                | TxKind::Unlink
                | TxKind::Rename
                | TxKind::Exchange
                | TxKind::Reclaim
        )
    }
}

/// A transaction as [`StorageManager::begin`] is told it: what it does,
/// and an upper bound on the file blocks it may dirty (data, directory,
/// symbolic-link and extended-attribute blocks, new or rewritten). A
/// storage manager derives from it what it must hold in reserve for the
/// metadata those blocks bring with them (inode, indirect, group and
/// summary blocks, by its own geometry): the room a journal reserves in
/// its log before the operation may start, or a log's space check.
///
/// [`StorageManager::begin`]: super::StorageManager::begin
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxSpec {
    /// What the transaction does.
    pub kind: TxKind,
    /// The most file blocks it may dirty.
    pub file_blocks: u64,
}

impl TxSpec {
    /// A transaction of `kind` that dirties at most what one of its kind
    /// does, whatever its arguments: a directory operation touches a block
    /// of each directory it changes and of each node it makes (a new
    /// directory's first block, a symbolic link's target), a truncate the
    /// two partial blocks at the ends of its range.
    pub fn new(kind: TxKind) -> TxSpec {
        let file_blocks = match kind {
            // The entry's block (or the block the directory grows by), and
            // the new node's first block.
            TxKind::Create => 2,
            TxKind::Link | TxKind::Unlink | TxKind::Xattr | TxKind::Write => 1,
            // The two entries, removed and added (over a target, or in a
            // block the directory grows by) or exchanged, and the `..` of
            // each directory that moves (two in an exchange).
            TxKind::Rename | TxKind::Exchange => 4,
            TxKind::Reclaim | TxKind::SetAttr => 0,
            TxKind::Truncate => 2,
        };
        TxSpec { kind, file_blocks }
    }

    /// A transaction of `kind` that dirties at most `file_blocks` blocks
    /// (a write of a range: the blocks the range covers).
    pub fn dirtying(kind: TxKind, file_blocks: u64) -> TxSpec {
        TxSpec { kind, file_blocks }
    }
}

impl From<TxKind> for TxSpec {
    fn from(kind: TxKind) -> TxSpec {
        TxSpec::new(kind)
    }
}

/// A change made inside a transaction, reported after it was made in
/// memory. Offsets are byte offsets in the directory file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hint {
    /// The entry at `offset` of directory `dir` now names `ino`, which
    /// was initialised (and its link count raised) before.
    EntryAdded { dir: Ino, offset: u64, ino: Ino },
    /// The entry at `offset` of directory `dir` that named `ino` is gone;
    /// `ino`'s link count has not been lowered yet.
    EntryRemoved { dir: Ino, offset: u64, ino: Ino },
    /// The entry at `offset` of directory `dir` names `ino` instead of
    /// `old` (rename over a target, exchange, a moved directory's `..`).
    EntryChanged { dir: Ino, offset: u64, old: Ino, ino: Ino },
    /// The link count of `ino` is now `nlink` (stored with `update`).
    LinkCount { ino: Ino, nlink: u32 },
    /// `ino` has no name left but is still open: it must be freed at its
    /// last close, or after a crash (an orphan).
    Orphaned { ino: Ino },
    /// The orphan `ino` is being freed.
    Reclaimed { ino: Ino },
    /// Block `lbn` of `ino` got space (data, indirect or xattr block).
    BlocksAllocated { ino: Ino, lbn: Lbn },
    /// Data blocks `first ..= last` of `ino` were freed.
    BlocksFreed { ino: Ino, first: u64, last: u64 },
}

/// Transactions that dirtied more file blocks than [`TxSpec`] declared
/// ([`TxLog::over_bound`]): the last of them, and how many there were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBound {
    /// The last one's kind.
    pub kind: TxKind,
    /// The file blocks it dirtied.
    pub dirtied: u64,
    /// The file blocks it declared.
    pub bound: u64,
    /// How many transactions went over.
    pub count: u64,
}

impl std::fmt::Display for OverBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} transaction(s) dirtied more file blocks than declared; the last, a {:?}, dirtied {} of {}",
            self.count, self.kind, self.dirtied, self.bound
        )
    }
}

/// The bookkeeping every storage manager needs for transactions: nesting
/// (a reclaim may run inside another operation's transaction; only the
/// outermost counts), the kind of the open one, and — when asked to
/// ([`TxLog::recording`]) — its hints.
#[derive(Debug, Default, Clone)]
pub struct TxLog {
    depth: u32,
    kind: Option<TxKind>,
    /// File blocks the open transactions together may dirty.
    bound: u64,
    /// File blocks the open transaction dirtied, with repeats (counted
    /// once each at commit: a push is cheaper on the write path than a
    /// set's insert).
    dirtied: Vec<(Ino, Lbn)>,
    /// Transactions that dirtied more file blocks than they declared.
    over_bound: Option<OverBound>,
    recording: bool,
    hints: Vec<Hint>,
    begun: u64,
    committed: u64,
}

impl TxLog {
    /// A log that keeps the hints of the open transaction (for a layout
    /// that orders or logs by them, and for tests).
    pub fn recording() -> TxLog {
        TxLog { recording: true, ..TxLog::default() }
    }

    /// Opens a transaction as `spec` says, or nests inside the open one
    /// (whose bound grows by the nested one's). Returns whether this is
    /// the outermost.
    pub fn begin(&mut self, spec: TxSpec) -> bool {
        self.begun += 1;
        self.depth += 1;
        if self.depth == 1 {
            self.kind = Some(spec.kind);
            self.bound = spec.file_blocks;
            self.dirtied.clear();
            self.hints.clear();
            return true;
        }
        self.bound = self.bound.saturating_add(spec.file_blocks);
        false
    }

    /// The most file blocks the open transaction (with those nested in it)
    /// declared it may dirty.
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// Block `lbn` of `ino` was written in the open transaction: what its
    /// declared bound ([`TxSpec::file_blocks`]) must cover. Outside a
    /// transaction (write-back, the cleaner) nothing is counted.
    pub fn dirtied(&mut self, ino: Ino, lbn: Lbn) {
        if self.depth > 0 && self.dirtied.last() != Some(&(ino, lbn)) {
            self.dirtied.push((ino, lbn));
        }
    }

    /// The file blocks the open (or last) transaction dirtied; sorted and
    /// without repeats once it has committed.
    pub fn dirtied_blocks(&self) -> &[(Ino, Lbn)] {
        &self.dirtied
    }

    /// Transactions that dirtied more file blocks than they declared:
    /// what a journal reserving log space by the bound could not have
    /// logged.
    pub fn over_bound(&self) -> Option<OverBound> {
        self.over_bound
    }

    /// Records `hint` for the open transaction (kept only when recording).
    pub fn hint(&mut self, hint: Hint) {
        if self.recording && self.depth > 0 {
            self.hints.push(hint);
        }
    }

    /// Ends the transaction begun last. Returns the outermost transaction's
    /// kind when it is the one that ended; an unmatched end is an error.
    pub fn commit(&mut self) -> Result<Option<TxKind>> {
        if self.depth == 0 {
            return Err(crate::error::errno(libc::EINVAL, "commit without begin"));
        }
        self.committed += 1;
        self.depth -= 1;
        if self.depth > 0 {
            return Ok(None);
        }
        self.dirtied.sort_unstable();
        self.dirtied.dedup();
        let dirtied = self.dirtied.len() as u64;
        if let (Some(kind), true) = (self.kind, dirtied > self.bound) {
            let count = self.over_bound.map_or(0, |o| o.count) + 1;
            self.over_bound = Some(OverBound { kind, dirtied, bound: self.bound, count });
        }
        Ok(self.kind.take())
    }

    /// Whether a transaction is open.
    pub fn is_open(&self) -> bool {
        self.depth > 0
    }

    /// How deep transactions are nested now (0: none open).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The kind of the outermost open transaction.
    pub fn kind(&self) -> Option<TxKind> {
        self.kind
    }

    /// Whether the open transaction changes the namespace.
    pub fn in_namespace_op(&self) -> bool {
        self.kind.is_some_and(TxKind::is_namespace)
    }

    /// The hints of the open (or last) transaction, when recording.
    pub fn hints(&self) -> &[Hint] {
        &self.hints
    }

    /// Transactions begun and committed so far (nested ones included).
    pub fn counts(&self) -> (u64, u64) {
        (self.begun, self.committed)
    }
}

/// Runs `body` as one transaction as `spec` says: `begin` first (if it
/// fails, `body` does not run), `commit` after, even when `body` fails. The
/// first error wins. Returns `body`'s value and commit's ticket, which the
/// caller waits on (now, or once it has let others in).
pub fn transaction<S: StorageManager + ?Sized, T>(
    storage: &mut S,
    spec: TxSpec,
    body: impl FnOnce(&mut S) -> Result<T>,
) -> Result<(T, super::Ticket)> {
    storage.begin(spec)?;
    let result = body(storage);
    let committed = storage.commit();
    let value = result?;
    Ok((value, committed?))
}

/// Frees the blocks of orphan `ino` (a file with no name) in `Reclaim`
/// transactions of at most [`StorageManager::blocks_per_tx`] blocks each,
/// the first blocks first, holes skipped, until what is left fits one
/// transaction: the caller's last, which frees the rest and the inode.
/// Nothing when the storage manager sets no bound. Each step leaves a
/// sound file with holes where its blocks were, so a crash between steps
/// leaves an orphan for mount to finish. Returns the steps' tickets,
/// joined.
pub fn free_blocks_in_steps<S: StorageManager + ?Sized>(storage: &mut S, ino: Ino) -> Result<super::Ticket> {
    free_in_steps(storage, ino, 0, TxKind::Reclaim)
}

/// [`free_blocks_in_steps`] of the blocks from `first` on only, in
/// `Truncate` transactions: for a file with a name, the blocks past its
/// end (a `fallocate` with `KEEP_SIZE` leaves them), whose freeing leaves
/// the file as it reads.
pub fn free_blocks_past_in_steps<S: StorageManager + ?Sized>(
    storage: &mut S,
    ino: Ino,
    first: u64,
) -> Result<super::Ticket> {
    free_in_steps(storage, ino, first, TxKind::Truncate)
}

/// The space `ino` holds, in blocks (data, indirect and attribute
/// blocks): what a removal of it frees, to compare with
/// [`StorageManager::blocks_per_tx`].
pub(crate) fn blocks_held<S: StorageManager + ?Sized>(storage: &mut S, ino: Ino) -> Result<u64> {
    Ok(storage.vget(ino)?.blocks.saturating_mul(512) / u64::from(storage.block_size().max(1)))
}

fn free_in_steps<S: StorageManager + ?Sized>(
    storage: &mut S,
    ino: Ino,
    first: u64,
    kind: TxKind,
) -> Result<super::Ticket> {
    let mut ticket = super::Ticket::none();
    let Some(limit) = storage.blocks_per_tx().map(|n| n.max(1)) else { return Ok(ticket) };
    let mut from = first;
    while blocks_held(storage, ino)? > limit {
        let Some(first) = storage.next_data(ino, from)? else { break };
        let last = first.saturating_add(limit - 1);
        let ((), step) = transaction(storage, TxSpec::new(kind), |s| s.free_blocks(ino, first, last))?;
        ticket = ticket.join(step);
        match last.checked_add(1) {
            Some(next) => from = next,
            None => break,
        }
    }
    Ok(ticket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_outermost_transaction_counts_and_hints_are_kept_when_recording() {
        let mut log = TxLog::recording();
        assert!(log.begin(TxSpec::new(TxKind::Unlink)));
        log.hint(Hint::Orphaned { ino: 5 });
        assert!(!log.begin(TxSpec::dirtying(TxKind::Reclaim, 4)), "nested");
        assert_eq!(log.bound(), 5, "a nested transaction adds its bound");
        assert!(log.in_namespace_op());
        assert_eq!(log.commit().expect("inner"), None);
        assert_eq!(log.kind(), Some(TxKind::Unlink));
        assert_eq!(log.commit().expect("outer"), Some(TxKind::Unlink));
        assert_eq!(log.hints(), &[Hint::Orphaned { ino: 5 }]);
        assert!(log.commit().is_err(), "an unmatched commit");
        assert_eq!(log.counts(), (2, 2));
        assert_eq!(log.over_bound(), None);

        // Blocks dirtied are counted once each, against the bound.
        log.begin(TxSpec::dirtying(TxKind::Write, 2));
        for lbn in [0, 1, 1, 0] {
            log.dirtied(9, lbn);
        }
        log.commit().expect("within");
        assert_eq!(log.over_bound(), None);
        log.begin(TxSpec::new(TxKind::Link));
        log.dirtied(2, 0);
        log.dirtied(3, 0);
        log.commit().expect("over");
        assert_eq!(log.over_bound(), Some(OverBound { kind: TxKind::Link, dirtied: 2, bound: 1, count: 1 }));
        log.dirtied(4, 4);
        assert_eq!(log.over_bound().map(|o| o.count), Some(1), "outside a transaction nothing counts");

        let mut quiet = TxLog::default();
        quiet.begin(TxSpec::new(TxKind::Write));
        quiet.hint(Hint::BlocksFreed { ino: 3, first: 0, last: 9 });
        assert!(quiet.hints().is_empty() && !quiet.in_namespace_op());
    }
}
