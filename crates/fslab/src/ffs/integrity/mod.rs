//! Metadata integrity: one interface, [`IntegrityMode`], with one module
//! per mode (2000 paper §2 for FFS and FFS-async; §3.1 for the three rules
//! every mode keeps in its own way):
//!
//! * `ordered` — 4.4BSD's synchronous, ordered metadata writes (`sync`);
//! * `delayed` — nothing ordered, nothing synchronous but fsync and sync
//!   (`async`);
//! * `softdep` — soft updates: nothing synchronous, every change tracked
//!   and rolled back in what is written until what it depends on is
//!   durable (`softdep`);
//! * `journal` — a write-ahead log of the bytes each operation changed in
//!   metadata, committed synchronously or not (`journal`,
//!   `journal-sync`).
//!
//! A mode decides *when* a dirtied block may reach the device and in what
//! order, never *where* a block lives. `Ffs` calls it at the points where
//! order matters — each hint of a transaction, a new indirect block, blocks
//! freed, a block moved, the orphan list changed, commit, fsync — and
//! around every block write (`write_starting`, `write_done`), which is
//! where a mode that rolls changes back (soft updates) or holds blocks
//! until a log covers them (a journal) attaches. A new mode is a new module
//! here, never a branch in the others.
//!
//! Below the modes are the write primitives they share (`hooks.rs`): an
//! *ordered* write (`Ffs::write_ordered`) is issued only once everything
//! issued before it is durable, and leaves its own durability to whoever needs it (the
//! transaction's ticket, or a later ordered write's barrier); a *durable*
//! write (`Ffs::write_durable`) is also followed by a barrier, for what
//! a write the mode does not order (file data, a delayed write-back) must
//! never overtake.

mod delayed;
mod hooks;
mod journal;
mod ordered;
mod softdep;

pub use journal::JournalStats;

use super::freed::{FreeWhen, Freed};
use crate::cache::{BlockData, BlockKey, Seq, Ticket, WriteAs};
use crate::format::blockno::Geometry;
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::{Hint, TxKind};
use crate::Result;

/// How FFS keeps its metadata recoverable: what to write, and in what
/// order, when the namespace changes something. Every method is given the
/// mounted file system, `Fs` (always `Ffs`: the parameter keeps this
/// interface from naming the state that holds it, so that `fs.rs` depends
/// on it and not the other way round); a mode with state of its own keeps
/// it behind `&self` (the file system holds the mode in an `Arc`, so a mode
/// can call back into the file system while it runs).
pub(super) trait IntegrityMode<Fs>: Send + Sync {
    /// Whether this mode can run on the image at all, asked before the
    /// mount writes anything: a refusal leaves the image as it was.
    fn suits(&self, fs: &Fs) -> Result<()> {
        let _ = fs;
        Ok(())
    }

    /// The file system is mounted and its superblock written: the mode
    /// may start (a journal takes up its log where the superblock says).
    fn mounted(&self, fs: &mut Fs) -> Result<()> {
        let _ = fs;
        Ok(())
    }

    /// The most file blocks one transaction should allocate, free or move
    /// (`StorageManager::blocks_per_tx`); `None`, the default, for a mode
    /// that holds a transaction of any size.
    fn blocks_per_tx(&self) -> Option<u64> {
        None
    }

    /// An outermost transaction of `kind` begins; nothing of it has
    /// changed yet.
    fn tx_beginning(&self, fs: &mut Fs, kind: TxKind) -> Result<()> {
        let _ = (fs, kind);
        Ok(())
    }

    /// A hint of the open transaction, sent after the change it names.
    fn on_hint(&self, fs: &mut Fs, hint: Hint) -> Result<()>;

    /// Indirect block `lbn` of `ino` was just given `addr`; no pointer to
    /// it is set yet (rule 1: never point at a structure before it is
    /// initialised).
    fn indirect_allocated(&self, fs: &mut Fs, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()>;

    /// Blocks of `ino` were freed in memory: the inode and indirect blocks
    /// no longer point at them (rule 2: never reuse a resource before every
    /// pointer to it is nullified). A mode that orders nothing here, or
    /// defers the frees (`free_when`), does nothing.
    fn blocks_freed(&self, fs: &mut Fs, ino: Ino) -> Result<()> {
        let _ = (fs, ino);
        Ok(())
    }

    /// Block `lbn` of `ino` was copied to a new place and its pointer set
    /// there; the fragments it leaves are freed next (rule 3: never reset
    /// the old pointer to a live resource before the new one is set).
    /// Nothing by default, as for `blocks_freed`.
    fn block_moving(&self, fs: &mut Fs, ino: Ino, lbn: Lbn) -> Result<()> {
        let _ = (fs, ino, lbn);
        Ok(())
    }

    /// The `next_orphan` field of `ino` changed in memory (it joined the
    /// orphan list, or the orphan after it left). Nothing by default: the
    /// list goes with whatever writes the inode and the superblock.
    fn orphan_link_changed(&self, fs: &mut Fs, ino: Ino) -> Result<()> {
        let _ = (fs, ino);
        Ok(())
    }

    /// The orphan list's head in the superblock changed in memory (nothing
    /// by default, as for `orphan_link_changed`).
    fn orphan_head_changed(&self, fs: &mut Fs) -> Result<()> {
        let _ = fs;
        Ok(())
    }

    /// The outermost transaction ended: what the caller must wait for
    /// before the operation counts as done, as this mode promises it.
    fn commit(&self, fs: &mut Fs) -> Result<Ticket>;

    /// Starts making `ino`'s contents, attributes and name durable; the
    /// ticket says when they are.
    fn fsync(&self, fs: &mut Fs, ino: Ino) -> Result<Ticket>;

    /// When freeing `what`, whose last pointer was in `ino`, may take
    /// effect (`frees`): at once, or once the blocks that held the pointer
    /// are durable without it.
    fn free_when(&self, fs: &mut Fs, ino: Ino, what: Freed) -> Result<FreeWhen> {
        let _ = (fs, ino, what);
        Ok(FreeWhen::Now)
    }

    /// Whether every removal of a name of `ino` that this mode holds back
    /// is durable by write `durable`: until then, freeing the inode (its
    /// slot cleared, its bitmap bit) waits (`FreeWhen::NamesGone`), and the
    /// unlink that freed it dirties no inode block. Yes by default: a mode
    /// that orders or logs removals as they happen has none held back.
    fn names_gone(&self, ino: Ino, durable: Seq) -> bool {
        let _ = (ino, durable);
        true
    }

    /// Whether chunk `chunk` (512-byte chunks, from 0) of directory block
    /// `key` must be written as it was before a change that is not yet
    /// durable, so that a new entry placed there would wait for it
    /// (`StorageManager::dir_chunk_held`). No by default.
    fn dir_chunk_held(&self, key: BlockKey, chunk: usize) -> bool {
        let _ = (key, chunk);
        false
    }

    /// The chunk (block, chunk in it) whose copy on the disk may still
    /// hold an entry `name` of directory `dir` naming `ino`, gone in
    /// memory (a rename's old name the mode keeps), if any. None by
    /// default.
    fn dir_chunk_keeping(&self, dir: Ino, name: &[u8], ino: Ino) -> Option<(BlockKey, usize)> {
        let _ = (dir, name, ino);
        None
    }

    /// `realloc` is about to move blocks of `ino` that were never written
    /// away from `old`; their pointers are in `map` (an indirect block, or
    /// the inode's direct pointers for `None`). Whether it may: yes unless
    /// the mode says otherwise.
    fn realloc_may_move(&self, fs: &mut Fs, ino: Ino, map: Option<Lbn>, old: &[Daddr]) -> Result<bool> {
        let _ = (fs, ino, map, old);
        Ok(true)
    }

    /// `realloc` moved blocks of `ino` that were never written to a
    /// contiguous run (each new place given to `block_allocated`, each
    /// pointer, in `map` as for `realloc_may_move`, set there); `what`,
    /// the fragments one of them leaves, is freed next. When that free
    /// may take effect: as any free's (`free_when`) unless the mode says
    /// otherwise.
    fn realloc_free_when(&self, fs: &mut Fs, ino: Ino, map: Option<Lbn>, what: Freed) -> Result<FreeWhen> {
        let _ = map;
        self.free_when(fs, ino, what)
    }

    /// The block at `addr` was given up before anything was written to it
    /// (`realloc` moved it away, and no pointer in memory names it): what
    /// the mode tracks of its contents may go.
    fn unwritten_block_dropped(&self, fs: &mut Fs, addr: Daddr) {
        let _ = (fs, addr);
    }

    /// Inode `ino` was allocated (its bitmap bit set in memory).
    fn inode_allocated(&self, fs: &mut Fs, ino: Ino) {
        let _ = (fs, ino);
    }

    /// The block or fragment run at `addr` was allocated, or grew in
    /// place: what it holds on disk is not yet its contents.
    fn block_allocated(&self, fs: &mut Fs, addr: Daddr) {
        let _ = (fs, addr);
    }

    /// The fragment run at `addr` grew in place: as `block_allocated`,
    /// unless the mode tells a new run from an older one grown.
    fn block_extended(&self, fs: &mut Fs, addr: Daddr) {
        self.block_allocated(fs, addr);
    }

    /// Inode `ino` is about to be stored in its slot at byte `at` of the
    /// inode block at `addr`, which holds `old` now.
    fn inode_storing(&self, ino: Ino, addr: Daddr, at: usize, old: &[u8]) {
        let _ = (ino, addr, at, old);
    }

    /// Indirect block `key` is about to change in the cache.
    fn indirect_changing(&self, fs: &mut Fs, key: BlockKey) {
        let _ = (fs, key);
    }

    /// Directory block `key`, in the cache as it is now, is about to
    /// change.
    fn dir_block_changing(&self, fs: &mut Fs, key: BlockKey) {
        let _ = (fs, key);
    }

    /// Block `from` of `ino` is now block `to` of it, at the same place (a
    /// range collapsed or inserted): what the mode tracks by block follows
    /// it.
    fn block_relocated(&self, fs: &mut Fs, ino: Ino, from: Lbn, to: Lbn) {
        let _ = (fs, ino, from, to);
    }

    /// Block `lbn` of `ino` is being freed: it is still in the cache, and
    /// is dropped from it next (its space goes back by `free_when`).
    fn block_released(&self, fs: &mut Fs, ino: Ino, lbn: Lbn) -> Result<()> {
        let _ = (fs, ino, lbn);
        Ok(())
    }

    /// Blocks `keys` are about to be written back: what must reach the
    /// disk before them goes first (a journal's log).
    fn writes_starting(&self, fs: &mut Fs, keys: &[BlockKey]) -> Result<()> {
        let _ = (fs, keys);
        Ok(())
    }

    /// The first journal transaction not yet durable in the log once
    /// everything up to write `durable` is: every transaction before it is
    /// (what `FreeWhen::Committed` waits for). An exclusive bound, so that
    /// before the first commit none counts as durable, transaction 0
    /// included.
    fn committed_before(&self, durable: Seq) -> u64 {
        let _ = durable;
        0
    }

    /// Makes every committed transaction durable (a journal's log), as an
    /// allocation short of space asks before it fails, and a write-back
    /// that left blocks held for it. Returns whether anything was made
    /// durable that was not: then blocks the write-ahead rule held may go.
    fn force_commits(&self, fs: &mut Fs) -> Result<bool> {
        let _ = fs;
        Ok(false)
    }

    /// Called at each tick of the mount, between operations.
    fn tick(&self, fs: &mut Fs) -> Result<()> {
        let _ = fs;
        Ok(())
    }

    /// A sync wrote everything: the mode settles what it keeps of its own
    /// (a journal's checkpoint).
    fn synced(&self, fs: &mut Fs) -> Result<()> {
        let _ = fs;
        Ok(())
    }

    /// What a journal has done since mount (`None` for other modes).
    fn journal_stats(&self) -> Option<JournalStats> {
        None
    }

    /// The cylinder groups `cgs` were written, the last as write `seq`.
    fn groups_written(&self, cgs: &[u32], seq: Seq) {
        let _ = (cgs, seq);
    }

    /// Everything up to write `durable` is durable: state that waited for
    /// it may go.
    fn prune(&self, durable: Seq) {
        let _ = durable;
    }

    /// How much the mode still tracks as waiting (dependencies not yet
    /// durable): a sync's rounds go on while each leaves less.
    fn waiting(&self) -> usize {
        0
    }

    /// `key` is about to be written to `addr`: which bytes to write — the
    /// cached ones, or a copy with the changes rolled back whose
    /// dependencies are not yet durable, its checksums recomputed (the
    /// buffer then stays dirty). `Ffs` seals an indirect block after.
    fn write_starting(
        &self,
        key: BlockKey,
        addr: Daddr,
        data: &BlockData,
        ctx: &WriteContext,
    ) -> Result<WriteAs> {
        let _ = (key, addr, data, ctx);
        Ok(WriteAs::Cached)
    }

    /// The write of `key` to `addr` was issued as write `seq`.
    fn write_done(&self, key: BlockKey, addr: Daddr, seq: Seq) {
        let _ = (key, addr, seq);
    }
}

/// What a mode knows as a block write starts.
pub(super) struct WriteContext {
    /// Every write up to this one is durable.
    pub durable: Seq,
    /// How indirect blocks hold their pointers.
    pub tree: Geometry,
    /// Whether the write-back runs only because the cache passed its
    /// threshold (not a sync, an fsync or a tick).
    pub background: bool,
}

#[cfg(test)]
mod tests;
