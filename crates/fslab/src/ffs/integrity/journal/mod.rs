//! `journal`: a write-ahead log of metadata, the 2000 paper's LFFS
//! (§5; `ffs/journal.rs` has the log's format and replay).
//!
//! Every operation is one transaction. At its commit the metadata blocks
//! it changed — directory, indirect and extended-attribute blocks,
//! inode-table blocks, cylinder groups, the superblock — are compared with
//! what they held before its first change (the cache keeps that copy,
//! `BufferCache::keep_changes`), and the bytes that differ go into the log
//! as redo records, with a record per run of fragments freed. Records are
//! that small on purpose: the paper's results turn on the bytes logged per
//! operation (§8.1), and whole-block logging would make a synchronous
//! journal slower than FFS.
//!
//! The rules:
//! * **Write-ahead** (§5.1): a metadata block reaches its home only once
//!   the log holding its last committed change is durable — before any
//!   write-back, the log is written and flushed first if it must be. A
//!   block changed by the transaction still open (write-back in the middle
//!   of a write) goes home as it was at the last commit; a block new in it
//!   does not go at all.
//! * **Frees** are reused only once the transaction that freed them is
//!   durable (`FreeWhen::Committed`), though the groups it logs already
//!   show them free.
//! * **Ordered data** (`journal_data=ordered`, the default; decisions
//!   0019 and 0022): a regular file's new blocks are logged with the
//!   transaction that gives them to it when they are few and it is to be
//!   durable at once (`journal=sync`, fsync), and otherwise
//!   written, with no log byte issued until they are durable, so that no
//!   pointer the log makes durable names a block holding a deleted file's
//!   bytes. A logged file block is then logged at every change, as
//!   metadata is, until the checkpoint passes it. `writeback` orders no
//!   data, as the 2000 paper's journals (§6).
//! * **Commit**: with `journal=sync`, a namespace operation (create,
//!   remove, rename, link, mkdir, rmdir) is durable when it returns — its
//!   transaction is written at commit and the caller waits, outside the
//!   file system's lock, for the flush, which every operation committed
//!   meanwhile shares (group commit). With `journal=async` the log is
//!   written a unit at a time as it fills (64 KiB for a `file` log, 4 KiB
//!   for `wafs`: §8.1), and flushed by fsync, sync and once a second.
//! * **Batches**: an operation that need not be durable when it returns
//!   may share its transaction with the ones after it, up to
//!   `MountOptions::journal_batch` operations (a compound transaction, as
//!   ext4's jbd2 and NetBSD's WAPBL make): the blocks they change are
//!   compared and logged once for all of them, and a crash keeps all of
//!   them or none. A batch ends early at any write-back between
//!   operations, fsync, sync, tick, or an operation that must be durable.
//!   A batch of 1 logs every operation on its own, as the 2000 paper's
//!   LFFS did (§5) — what the lab runs.
//! * **Checkpoint** (§5.1): the log's start is the oldest transaction with
//!   a block not yet durable at home; a sync writes it to the superblock,
//!   and an operation that finds the log half full syncs first.

mod commits;

use super::IntegrityMode;
use super::WriteContext;
use crate::cache::{device_key, BlockData, BlockKey, IntMap, Placement, Seq, Ticket, WriteAs, DEVICE};
use crate::error::errno;
use crate::ffs::freed::{FreeWhen, Freed};
use crate::ffs::fs::Ffs;
use crate::ffs::journal::{changed_ranges, encode_transaction, Record, BLOCK};
use crate::ffs::layout::{patch_journal_checkpoint, JournalInfo};
use crate::format::blockno::is_indirect;
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::{Hint, TxKind};
use crate::Result;
use commits::{issue_log, Commits};
use disk::AlignedBytes;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How often an asynchronous journal's log is flushed (the syncer's once
/// a second, §5.1).
const COMMIT_INTERVAL: Duration = Duration::from_secs(1);

/// Bytes a free record takes in the log.
const FREE_RECORD_BYTES: usize = 16;

/// Frees waiting for their transaction to be durable past which a commit
/// flushes the log (an asynchronous journal's removes would otherwise keep
/// thousands, each shown again in every group stored).
const MAX_PENDING_FREES: usize = 1024;

/// Log bytes one file block allocated, freed or moved may cost, at most:
/// a free record (16 bytes) or its share of a new indirect block logged
/// whole, with its share of the diffs of the group's bitmaps, summaries and
/// the indirect blocks that point at it, each diff with its record's header.
const LOG_BYTES_PER_FILE_BLOCK: u64 = 64;

/// Changed blocks past which a batch is committed before its operation
/// count says so (each holds its image before the batch in memory).
const MAX_BATCH_BLOCKS: usize = 256;

/// Bytes of new blocks past which a file's data is ordered (durable before
/// the log is issued) rather than logged (decision 0022).
const LOGGED_DATA_PER_FILE: u64 = 32 << 10;

/// Bytes of new file data one transaction logs at most, and the share of
/// the log that bounds it (a sixteenth: with the later changes of blocks
/// logged before, at most an eighth, a transaction stays well inside the
/// quarter `blocks_per_tx` leaves it).
const LOGGED_DATA_PER_TX: u64 = 256 << 10;
const LOGGED_DATA_LOG_SHARE: u64 = 16;

/// The journal mode.
pub(super) struct Journal {
    /// `journal=sync`: namespace operations are durable when they return.
    sync: bool,
    /// Operations one transaction may gather (at least 1).
    batch: u32,
    /// For tests: the write-ahead rule switched off (blocks go home as
    /// cached, whatever the log holds), so that a crash explorer shows its
    /// checks catch a journal that breaks it.
    disorder: bool,
    /// `journal_data=ordered`: a file's new blocks are logged with the
    /// transaction that gives them to it, or durable before it is logged.
    ordered_data: bool,
    state: Arc<Mutex<Option<State>>>,
    /// The commits' barrier, made at mount (it needs the write queue).
    commits: Mutex<Option<Arc<Commits>>>,
}

/// What the journal keeps between calls.
struct State {
    info: JournalInfo,
    frag_size: u64,
    /// The position after the last transaction committed.
    head: u64,
    /// The sequence number the next transaction gets.
    next_seq: u64,
    /// The log's bytes from `buf_start` (a log block's start) to `head`.
    buf: Vec<u8>,
    buf_start: u64,
    /// The log is issued to the device up to here.
    issued: u64,
    /// Log writes in flight: (write, transactions below this number it
    /// completes).
    in_flight: Vec<(Seq, u64)>,
    /// Transactions below this number are durable in the log.
    durable_seq: u64,
    /// Where each transaction still in the log starts.
    starts: BTreeMap<u64, u64>,
    /// Metadata blocks with committed changes not yet durable at home.
    unsettled: IntMap<BlockKey, Unsettled>,
    /// The checkpoint the disk's superblock holds (position, sequence).
    checkpoint: (u64, u64),
    /// A superblock write carrying a newer checkpoint: (write, checkpoint).
    checkpoint_in_flight: Option<(Seq, (u64, u64))>,
    /// The checkpoint in the superblock copy whose write is starting: it
    /// is in flight once the write is issued (a copy held back carries
    /// none to the disk).
    checkpoint_starting: Option<(u64, u64)>,
    /// Free records of the transaction being built.
    frees: Vec<Record>,
    /// The kind of the open transaction.
    open: Option<TxKind>,
    /// Operations committed since the last transaction was logged.
    batched: u32,
    /// Something was freed since the last transaction was logged: frees
    /// the batch holds, which no allocation can have until it is logged.
    batch_frees: bool,
    /// For the write-back under way: what to write of each block with
    /// changes not yet committed (its image at the last commit; `None`: a
    /// block new since, held back).
    rollback: IntMap<BlockKey, Option<BlockData>>,
    /// When the log was last flushed, on the mount's clock.
    last_force: Duration,
    /// Set while a checkpoint makes room: what changed stays uncommitted
    /// (and goes home as it was at the last commit) until it ends.
    making_room: bool,
    /// Blocks given to regular files since the last transaction was
    /// logged: with ordered data, the next transaction logs them or they
    /// are made durable before it is.
    new_data: BTreeSet<BlockKey>,
    /// Set while those blocks are written: their write-back is not the
    /// end of a transaction (`writes_starting`), but part of logging one.
    ordering_data: bool,
    /// Where runs were allocated (not grown) since a transaction was last
    /// logged: no transaction in the log allocates them or names them,
    /// and none logged what they hold (`realloc_free_when`).
    fresh: HashSet<u64>,
    /// File blocks whose contents are in the log, with the newest
    /// transaction that logged them: until the checkpoint passes it, replay
    /// would write that image, so every later change to them is logged too.
    logged_data: IntMap<BlockKey, u64>,
    /// Per transaction that wrote ordered data, the write queue's number
    /// its log bytes wait for: a transaction's log is issued only once
    /// that write and every write before it are durable (the last one is
    /// what a force flushes first).
    data_marks: BTreeMap<u64, Seq>,
    /// Freed blocks whose name another block took (a collapsed range)
    /// before their free was durable: they pin the checkpoint as in
    /// `unsettled` until it is.
    displaced: Vec<Unsettled>,
    /// Counters for `fslab stat` and the lab.
    stats: JournalStats,
    /// Log writes (and their bytes) not yet counted in the file system's
    /// statistics: made by waiters outside its lock.
    uncounted: (u64, u64),
}

impl State {
    /// Whether `key` has a committed change the log does not yet hold
    /// durably: it may not go home until the log does (write-ahead).
    fn ahead_of_log(&self, key: &BlockKey) -> bool {
        self.unsettled.get(key).is_some_and(|u| u.latest >= self.durable_seq)
    }
}

/// A transaction's records, made by [`Journal::records_of`].
#[derive(Default)]
struct Records {
    records: Vec<Record>,
    /// The blocks they change.
    touched: Vec<BlockKey>,
    /// The file blocks among them.
    data: BTreeSet<BlockKey>,
    /// Bytes of file data they hold, and of those the bytes of blocks the
    /// log held before.
    data_bytes: u64,
    data_bytes_before: u64,
}

/// A block's committed changes not yet at home.
#[derive(Debug, Clone, Copy)]
struct Unsettled {
    /// The oldest transaction whose change to it may not be at home.
    oldest: u64,
    /// The newest transaction that changed it.
    latest: u64,
    /// A write of it: (write, the newest transaction its image holds).
    written: Option<(Seq, u64)>,
    /// Freed by this transaction: nothing of it need reach home once that
    /// transaction is durable.
    released: Option<u64>,
}

/// What the journal has done since mount.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Transactions committed.
    pub transactions: u64,
    /// Bytes of them in the log.
    pub bytes_logged: u64,
    /// Log writes issued.
    pub log_writes: u64,
    /// Flushes the journal asked for.
    pub forces: u64,
    /// Syncs made to free log space.
    pub checkpoints: u64,
    /// Bytes of the largest transaction logged.
    pub largest_transaction: u64,
    /// Bytes of file data logged: small files' new blocks, and later
    /// changes to them while the log holds them (decision 0022).
    pub data_logged: u64,
}

impl Journal {
    pub(super) fn new(sync: bool, batch: u32, disorder: bool, ordered_data: bool) -> Journal {
        Journal {
            sync,
            batch: batch.max(1),
            disorder,
            ordered_data,
            state: Arc::new(Mutex::new(None)),
            commits: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<State>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `key` is metadata, which the journal logs: a device block
    /// (inode table, group, superblock), an indirect or extended-attribute
    /// block, or a block of a directory or symbolic link.
    fn is_logged(fs: &mut Ffs, key: BlockKey) -> bool {
        key.0 == DEVICE || key.1 < 0 || fs.is_namespace_file(key.0)
    }

    /// Commits what changed since the last commit as one transaction:
    /// inodes and groups stored into their blocks, each changed metadata
    /// block diffed against its image before the change. With ordered
    /// data, the blocks given to files since the last one are logged with
    /// it or made durable before it (`split_new_data`): logged only when
    /// the transaction is to be `durable_soon` (a `journal=sync` operation,
    /// an fsync), where logging them saves a flush; otherwise the next
    /// force's flush covers them at no cost, and logging would only write
    /// them twice.
    fn log_changes(&self, fs: &mut Ffs, durable_soon: bool) -> Result<()> {
        let new_data = self.take_new_data();
        let made = self.log_changes_with(fs, &new_data, durable_soon, true);
        if made.is_err() {
            // Still to be logged or ordered: the transaction that failed
            // here is not logged, and the next must not be logged before
            // them.
            self.put_back_new_data(new_data);
        }
        made
    }

    /// [`Journal::log_changes`] with the new blocks taken; `may_checkpoint`
    /// once, so that a checkpoint that leaves the log no emptier is not
    /// made again and again.
    fn log_changes_with(
        &self,
        fs: &mut Ffs,
        new_data: &BTreeSet<BlockKey>,
        durable_soon: bool,
        may_checkpoint: bool,
    ) -> Result<()> {
        // From here on the log may name what was allocated until now.
        if let Some(st) = self.lock().as_mut() {
            st.fresh.clear();
        }
        let data_limit = self
            .lock()
            .as_ref()
            .map_or(0, |st| LOGGED_DATA_PER_TX.min(st.info.bytes / LOGGED_DATA_LOG_SHARE));
        let new_limit = if durable_soon { data_limit } else { 0 };
        let (to_log, to_order) = Self::split_new_data(fs, new_data, new_limit);
        // The write this transaction's log must wait for (0: none).
        let mut data_needed = 0;
        if !to_order.is_empty() {
            let keys: Vec<BlockKey> =
                to_order.iter().flat_map(|&ino| fs.cache.dirty_keys_in(ino, 0..=Lbn::MAX)).collect();
            data_needed = self.write_ordered_data(fs, &keys)?;
        }
        fs.store_dirty_inodes()?;
        fs.store_groups();
        if fs.superblock_needs_store() {
            fs.store_superblock();
        }
        let changes = fs.cache.take_changes();
        let logged_before: BTreeSet<BlockKey> = match self.lock().as_ref() {
            Some(st) if !st.logged_data.is_empty() => {
                changes.iter().map(|&(k, _)| k).filter(|k| st.logged_data.contains_key(k)).collect()
            }
            _ => BTreeSet::new(),
        };
        let made = Self::records_of(fs, &changes, &to_log, &logged_before);
        let missed: Vec<BlockKey> = to_log.iter().copied().filter(|k| !made.data.contains(k)).collect();
        if !missed.is_empty() {
            // Chosen for the log but not found in the cache as changed
            // (not expected): ordered instead, before the log.
            match self.write_ordered_data(fs, &missed) {
                Ok(issued) => data_needed = issued,
                Err(e) => {
                    fs.cache.put_back_changes(changes);
                    return Err(e);
                }
            }
        }
        if may_checkpoint && made.data_bytes_before > data_limit.saturating_mul(2) {
            // Later changes to blocks logged before must be logged while
            // replay could write their older image; here they would crowd
            // the transaction. A checkpoint puts every image in the log
            // behind it, so the transaction need log none of them.
            fs.cache.put_back_changes(changes);
            self.put_back_new_data(new_data.clone());
            self.make_room(fs, 0)?;
            return self.log_changes_with(fs, &self.take_new_data(), durable_soon, false);
        }
        let Records { mut records, touched, data, data_bytes, .. } = made;
        // A file block written home since it changed (write-back before
        // this transaction) is at home as logged once that write is
        // durable: no later write would settle it.
        let at_home: Vec<bool> = touched.iter().map(|&k| !fs.cache.is_dirty(k)).collect();
        let issued = fs.queue.issued();
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return Ok(()) };
        st.batched = 0;
        st.batch_frees = false;
        records.extend(st.frees.iter().cloned());
        if records.is_empty() {
            return Ok(());
        }
        let seq = st.next_seq;
        let bytes = encode_transaction(seq, st.info.generation, &records);
        if bytes.len() as u64 + 2 * BLOCK > st.info.bytes {
            // Nothing of it may reach home unlogged: the changes stay
            // recorded, so write-back keeps sending these blocks as they
            // were at the last commit. The namespace makes large
            // operations in steps that fit (`blocks_per_tx`), so this is a
            // bound missed: the mount fails as after a device error (every
            // later change refused, the unmount reporting it) rather than
            // refusing every commit after this one for ever, and the image
            // keeps its last durable transaction.
            let log_bytes = st.info.bytes;
            drop(guard);
            fs.cache.put_back_changes(changes);
            fs.queue.fail(format!(
                "journal: a transaction of {} bytes does not fit the log's {log_bytes} (make a larger \
                 journal with `fslab mkfs --journal-size`)",
                bytes.len()
            ));
            return Err(errno(
                libc::EFBIG,
                "journal: one operation changed more metadata than the log holds; the mount takes no \
                 more changes (make a larger journal with `fslab mkfs --journal-size`)",
            ));
        }
        if st.head + bytes.len() as u64 + BLOCK > st.checkpoint.0 + st.info.bytes {
            // No room until a checkpoint. The changes go back to the
            // cache's record first, so that the checkpoint's write-back
            // sends these blocks home as they were at the last commit; then
            // the same transaction is made again and logged.
            drop(guard);
            fs.cache.put_back_changes(changes);
            self.put_back_new_data(new_data.clone());
            self.make_room(fs, bytes.len() as u64)?;
            return self.log_changes_with(fs, &self.take_new_data(), durable_soon, may_checkpoint);
        }
        st.frees.clear();
        if data_needed > 0 && st.data_marks.values().next_back().is_none_or(|&last| last < data_needed) {
            st.data_marks.insert(seq, data_needed);
        }
        st.starts.insert(seq, st.head);
        st.buf.extend_from_slice(&bytes);
        st.head += bytes.len() as u64;
        st.next_seq += 1;
        st.stats.transactions += 1;
        st.stats.bytes_logged += bytes.len() as u64;
        st.stats.data_logged += data_bytes;
        st.stats.largest_transaction = st.stats.largest_transaction.max(bytes.len() as u64);
        for (key, at_home) in touched.into_iter().zip(at_home) {
            let u = st.unsettled.entry(key).or_insert(Unsettled {
                oldest: seq,
                latest: seq,
                written: None,
                released: None,
            });
            u.latest = seq;
            if at_home {
                u.written = Some((issued, seq));
            }
            // Made again after a free: this block's changes must reach home
            // like any other's, though the freed one's need not.
            u.released = None;
        }
        for key in data {
            st.logged_data.insert(key, seq);
        }
        Ok(())
    }

    /// Notes the blocks the transaction just ended gave regular files
    /// (its hints; a directory's, a symbolic link's and every indirect
    /// block are logged as metadata).
    fn note_new_data(&self, fs: &mut Ffs) {
        let allocated: Vec<BlockKey> = fs
            .tx
            .hints()
            .iter()
            .filter_map(|h| match *h {
                Hint::BlocksAllocated { ino, lbn } if lbn >= 0 => Some((ino, lbn)),
                _ => None,
            })
            .collect();
        let blocks: Vec<BlockKey> =
            allocated.into_iter().filter(|&(ino, _)| !fs.is_namespace_file(ino)).collect();
        if let Some(st) = self.lock().as_mut() {
            st.new_data.extend(blocks);
        }
    }

    /// The blocks given to files since the last transaction, for the one
    /// being made (none while they are being written for it).
    fn take_new_data(&self) -> BTreeSet<BlockKey> {
        match self.lock().as_mut() {
            Some(st) if !st.ordering_data => std::mem::take(&mut st.new_data),
            _ => BTreeSet::new(),
        }
    }

    fn put_back_new_data(&self, blocks: BTreeSet<BlockKey>) {
        if let Some(st) = self.lock().as_mut() {
            st.new_data.extend(blocks);
        }
    }

    /// Ordered data (ext3's and ext4's `data=ordered`, decision 0019), in
    /// two ways (decision 0022): a file whose new blocks are few, cached
    /// and changed since the last transaction has them logged with the
    /// transaction that gives them to it — replay writes them, so no
    /// pointer the log makes durable names a block holding what a deleted
    /// file left there, and the log's one flush covers them. Any other
    /// file's dirty blocks are written, and durable before the log bytes
    /// of the transaction are issued. Returns the blocks to log and the files to order,
    /// logging at most `limit` bytes.
    fn split_new_data(fs: &mut Ffs, new: &BTreeSet<BlockKey>, limit: u64) -> (BTreeSet<BlockKey>, Vec<Ino>) {
        let mut to_log = BTreeSet::new();
        let mut to_order = Vec::new();
        let mut total = 0;
        let mut blocks = new.iter().copied().peekable();
        while let Some(&(ino, _)) = blocks.peek() {
            let mut file = Vec::new();
            while let Some(key) = blocks.next_if(|&(i, _)| i == ino) {
                file.push(key);
            }
            let mut bytes = 0u64;
            let loggable = file.iter().all(|&key| {
                let changed = fs.cache.before_changes(key).is_some() && fs.cache.contains(key);
                let run = match fs.placements_of(&[key]) {
                    Ok(placed) => placed.first().map(|p| p.bytes as u64),
                    Err(_) => None,
                };
                bytes += run.unwrap_or(u64::MAX / 4);
                changed && run.is_some()
            });
            if loggable && bytes <= LOGGED_DATA_PER_FILE && total + bytes <= limit {
                total += bytes;
                to_log.extend(file);
            } else {
                to_order.push(ino);
            }
        }
        (to_log, to_order)
    }

    /// The ordered half of [`Journal::split_new_data`]: the dirty blocks
    /// among `keys` written, and no log issued until they and every write
    /// in flight are durable: returns the write that covers them, which
    /// the transaction's mark records (`data_marks`). The flush that makes them so
    /// is the log writer's: a waiter for a commit takes it outside the
    /// file system's lock, so that operations committing meanwhile share
    /// it, and an asynchronous journal's log waits for the next force
    /// rather than flushing at every transaction.
    fn write_ordered_data(&self, fs: &mut Ffs, keys: &[BlockKey]) -> Result<Seq> {
        if let Some(st) = self.lock().as_mut() {
            st.ordering_data = true;
        }
        let written = fs.write_dirty_among(keys);
        if let Some(st) = self.lock().as_mut() {
            st.ordering_data = false;
        }
        written.map(|()| fs.queue.issued())
    }

    /// The change records of the blocks among `changes` (each with its
    /// image before the first change) that the log holds: metadata, the
    /// new file blocks `new_data` chose to log, and the file blocks
    /// `logged_before` whose images the log holds from earlier.
    fn records_of(
        fs: &mut Ffs,
        changes: &[(BlockKey, Option<BlockData>)],
        new_data: &BTreeSet<BlockKey>,
        logged_before: &BTreeSet<BlockKey>,
    ) -> Records {
        let mut made = Records::default();
        for (key, before) in changes {
            let key = *key;
            let data = new_data.contains(&key) || logged_before.contains(&key);
            if !data && !Self::is_logged(fs, key) {
                continue;
            }
            let Some(now) = fs.cache.share(key) else { continue };
            let Ok(placed) = fs.placements_of(&[key]) else { continue };
            let Some(&Placement { addr, bytes: run, .. }) = placed.first() else { continue };
            let (ino, lbn) = key;
            // An indirect block is logged as it goes to the disk, with its
            // sector checksums; every other block as cached.
            let seals = ino != DEVICE && is_indirect(lbn);
            let sealed = |bytes: &BlockData| -> BlockData {
                if !seals {
                    return bytes.clone();
                }
                let mut copy = AlignedBytes::copy_of(bytes);
                fs.tree.seal(&mut copy, ino, lbn);
                Arc::new(copy)
            };
            // A file block new to its file is logged whole, over zeros:
            // what its place held before is another file's, or nothing.
            let new = before.is_none() || new_data.contains(&key);
            let old = match before {
                Some(b) if !new => sealed(b),
                _ => Arc::new(AlignedBytes::zeroed(now.len())),
            };
            let now = sealed(&now);
            let ranges: Vec<(usize, usize)> = changed_ranges(&old, &now)
                .into_iter()
                .filter(|&(o, _)| o < run)
                .map(|(o, l)| (o, l.min(run - o)))
                .collect();
            let zeroed = if new { run as u32 } else { 0 };
            if new && ranges.is_empty() {
                made.records.push(Record::Change { block: addr.get(), offset: 0, zeroed, bytes: Vec::new() });
            }
            // Only the block's first record zeroes it at replay.
            for (i, (offset, len)) in ranges.into_iter().enumerate() {
                if data {
                    made.data_bytes += len as u64;
                    if !new_data.contains(&key) {
                        made.data_bytes_before += len as u64;
                    }
                }
                made.records.push(Record::Change {
                    block: addr.get(),
                    offset: offset as u32,
                    zeroed: if i == 0 { zeroed } else { 0 },
                    bytes: now[offset..offset + len].to_vec(),
                });
            }
            made.touched.push(key);
            if data {
                made.data.insert(key);
            }
        }
        made
    }

    /// Writes every block home and moves the checkpoint, until the log
    /// has room for `bytes` more.
    fn make_room(&self, fs: &mut Ffs, bytes: u64) -> Result<()> {
        if let Some(st) = self.lock().as_mut() {
            st.stats.checkpoints += 1;
            st.making_room = true;
        }
        let made = self.write_home(fs);
        if let Some(st) = self.lock().as_mut() {
            st.making_room = false;
        }
        made?;
        let guard = self.lock();
        let Some(st) = guard.as_ref() else { return Ok(()) };
        if st.head + bytes + BLOCK > st.checkpoint.0 + st.info.bytes {
            return Err(errno(libc::EIO, "journal: a checkpoint left the log without room"));
        }
        Ok(())
    }

    /// Every committed change durable at home, and the checkpoint moved.
    fn write_home(&self, fs: &mut Ffs) -> Result<()> {
        self.force(fs)?;
        fs.write_dirty(None, true)?;
        fs.write_groups()?;
        fs.queue.flush()?;
        self.prune(fs.queue.durable());
        self.write_checkpoint(fs)
    }

    /// Issues the log's bytes not yet issued (see [`issue_log`]), and
    /// counts the journal's writes in the file system's. Whole units stop
    /// at the first transaction whose ordered data is not durable, and
    /// wait for the next force; a force flushes that data first.
    fn write_log(&self, fs: &mut Ffs, whole_units_only: bool) -> Result<Seq> {
        let needed =
            self.lock().as_ref().and_then(|st| st.data_marks.values().next_back().copied()).unwrap_or(0);
        if !whole_units_only && fs.queue.durable() < needed {
            fs.queue.ticket(needed).wait()?;
        }
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return Ok(0) };
        let last = issue_log(st, &fs.queue, whole_units_only);
        let (writes, bytes) = std::mem::take(&mut st.uncounted);
        fs.stats.writes += writes;
        fs.stats.bytes_written += bytes;
        last
    }

    /// A ticket for every transaction committed so far (none if they are
    /// durable already): its waiter writes the log if nobody has.
    fn commits_ticket(&self) -> Ticket {
        let through = self.lock().as_ref().filter(|st| st.durable_seq < st.next_seq).map(|st| st.next_seq);
        let commits = self.commits.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        match (through, commits) {
            (Some(through), Some(commits)) => Ticket::new(commits, through),
            _ => Ticket::none(),
        }
    }

    /// Makes every committed transaction durable in the log: writes and
    /// flushes it if it holds commits not yet durable, and returns whether
    /// it did.
    fn force(&self, fs: &mut Ffs) -> Result<bool> {
        let pending = self.lock().as_ref().is_some_and(|st| st.durable_seq < st.next_seq);
        if !pending {
            return Ok(false);
        }
        self.write_log(fs, false)?;
        fs.queue.flush()?;
        if let Some(st) = self.lock().as_mut() {
            st.stats.forces += 1;
            st.last_force = fs.options.clock.now();
        }
        self.prune(fs.queue.durable());
        Ok(true)
    }

    /// Writes the superblock, which carries the checkpoint, if the
    /// checkpoint moved since the disk's copy.
    fn write_checkpoint(&self, fs: &mut Ffs) -> Result<()> {
        self.prune(fs.queue.durable());
        let moved = self.lock().as_ref().is_some_and(|st| tail_of(st) != st.checkpoint);
        if !moved {
            return Ok(());
        }
        let key = fs.superblock_key();
        if !fs.cache.contains(key) {
            // The disk's copy, as it is: what it holds besides the
            // checkpoint is the last commit's (or older, and in the log).
            let mut block = AlignedBytes::zeroed(fs.block_size());
            fs.read_at(Daddr::new(0), &mut block)?;
            fs.cache.insert(key, Arc::new(block), false);
        }
        let mut placements = [Placement { key, addr: Daddr::new(0), bytes: fs.block_size() }];
        fs.write_placements_now(&mut placements)?;
        fs.queue.flush()?;
        self.prune(fs.queue.durable());
        Ok(())
    }
}

/// The checkpoint the journal's state allows now: the oldest transaction
/// with a block not durable at home, else the log's head.
fn tail_of(st: &State) -> (u64, u64) {
    let oldest = st.unsettled.values().chain(&st.displaced).map(|u| u.oldest).min().unwrap_or(st.next_seq);
    match st.starts.get(&oldest) {
        Some(&pos) => (pos, oldest),
        None => (st.head, st.next_seq),
    }
}

/// Moves the log's durable point to what `durable` (the write queue's)
/// covers, dropping the log writes it covers: all a waiter for a commit
/// needs, and cheap (the blocks at home are [`prune_state`]'s).
fn advance_durable(st: &mut State, durable: Seq) {
    let mut durable_seq = st.durable_seq;
    st.in_flight.retain(|&(write, through)| {
        if write <= durable {
            durable_seq = durable_seq.max(through);
            false
        } else {
            true
        }
    });
    st.durable_seq = durable_seq;
    // Marks of transactions durable in the log: their data is too.
    while st.data_marks.first_key_value().is_some_and(|(&seq, _)| seq < durable_seq) {
        st.data_marks.pop_first();
    }
}

/// Forgets what `durable` (the write queue's durable point) has made of
/// no more use: log writes, blocks settled at home, transactions behind
/// the checkpoint.
fn prune_state(st: &mut State, durable: Seq) {
    advance_durable(st, durable);
    let durable_seq = st.durable_seq;
    st.unsettled.retain(|_, u| {
        if u.released.is_some_and(|r| r < durable_seq) {
            return false;
        }
        match u.written {
            Some((write, covers)) if write <= durable => {
                if u.latest <= covers {
                    return false;
                }
                u.oldest = covers + 1;
                u.written = None;
                true
            }
            _ => true,
        }
    });
    st.displaced.retain(|u| u.released.is_some_and(|r| r >= durable_seq));
    if let Some((write, checkpoint)) = st.checkpoint_in_flight {
        if write <= durable {
            st.checkpoint = checkpoint;
            st.checkpoint_in_flight = None;
        }
    }
    let (_, tail_seq) = tail_of(st).min(st.checkpoint);
    st.starts = st.starts.split_off(&tail_seq);
    // Replay starts at the disk's checkpoint: images logged before it are
    // never written again, so later changes to those blocks need no log.
    let replayed_from = st.checkpoint.1;
    st.logged_data.retain(|_, latest| *latest >= replayed_from);
}

impl IntegrityMode<Ffs> for Journal {
    fn suits(&self, fs: &Ffs) -> Result<()> {
        if !fs.sb.journal.present() {
            return Err(errno(
                libc::EINVAL,
                "this image has no journal: make it with `fslab mkfs --layout ffs --journal file` (or wafs)",
            ));
        }
        // The log is written a 4 KiB log block at a time, addressed in
        // fragments: a larger fragment cannot address every log block, and
        // every other block would land on the one before it. mkfs refuses
        // such a journal; an image made before it did mounts in the other
        // modes.
        if fs.frag_size() > BLOCK {
            return Err(errno(
                libc::EINVAL,
                "this image's fragments are larger than the journal's 4 KiB log block, which its log \
                 cannot be written in: mount it with another integrity mode",
            ));
        }
        Ok(())
    }

    fn mounted(&self, fs: &mut Ffs) -> Result<()> {
        self.suits(fs)?;
        let info = fs.sb.journal;
        *self.lock() = Some(State {
            info,
            frag_size: fs.frag_size(),
            head: info.tail,
            next_seq: info.tail_seq,
            buf: Vec::new(),
            buf_start: info.tail / BLOCK * BLOCK,
            issued: info.tail,
            in_flight: Vec::new(),
            durable_seq: info.tail_seq,
            starts: BTreeMap::new(),
            unsettled: IntMap::default(),
            checkpoint: (info.tail, info.tail_seq),
            checkpoint_in_flight: None,
            checkpoint_starting: None,
            frees: Vec::new(),
            open: None,
            batched: 0,
            batch_frees: false,
            rollback: IntMap::default(),
            last_force: fs.options.clock.now(),
            making_room: false,
            new_data: BTreeSet::new(),
            ordering_data: false,
            fresh: HashSet::new(),
            logged_data: IntMap::default(),
            data_marks: BTreeMap::new(),
            displaced: Vec::new(),
            stats: JournalStats::default(),
            uncounted: (0, 0),
        });
        *self.commits.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) =
            Some(Arc::new(Commits { state: Arc::clone(&self.state), queue: Arc::clone(&fs.queue) }));
        // The block holding the head is rewritten from the log's own
        // bytes: load what the disk has of it before the head.
        let from = info.tail / BLOCK * BLOCK;
        if from < info.tail {
            let mut block = vec![0u8; BLOCK as usize];
            let off = from % info.bytes;
            fs.dev.read_at(fs.sb.geometry.byte_offset(info.start) + off, &mut block)?;
            block.truncate((info.tail - from) as usize);
            if let Some(st) = self.lock().as_mut() {
                st.buf = block;
            }
        }
        fs.cache.keep_changes();
        Ok(())
    }

    /// A quarter of the log: an operation begun with the log more than half
    /// full syncs first (`tx_beginning`), so a transaction this size always
    /// finds room, with the batch it may join.
    fn blocks_per_tx(&self) -> Option<u64> {
        let bytes = self.lock().as_ref()?.info.bytes;
        Some((bytes / 4 / LOG_BYTES_PER_FILE_BLOCK).max(1))
    }

    fn tx_beginning(&self, fs: &mut Ffs, kind: TxKind) -> Result<()> {
        let (crowded, batch_frees) = {
            let mut guard = self.lock();
            let Some(st) = guard.as_mut() else { return Ok(()) };
            st.open = Some(kind);
            (st.head - st.checkpoint.0 > st.info.bytes / 2, st.batch_frees)
        };
        if batch_frees && fs.space_is_short() {
            // What the batch freed becomes allocatable only once it is
            // logged and durable, and an operation short of space cannot
            // log it (its own changes would go with it, half made): the
            // batch ends here, between operations, while space is short.
            self.log_changes(fs, false)?;
        }
        if crowded {
            // Between operations: nothing is half done, so a sync writes
            // every block home as it is.
            self.log_changes(fs, false)?;
            self.make_room(fs, 0)?;
        }
        Ok(())
    }

    fn on_hint(&self, _fs: &mut Ffs, _hint: Hint) -> Result<()> {
        Ok(())
    }

    fn indirect_allocated(&self, _fs: &mut Ffs, _ino: Ino, _lbn: Lbn, _addr: Daddr) -> Result<()> {
        Ok(())
    }

    fn commit(&self, fs: &mut Ffs) -> Result<Ticket> {
        if self.ordered_data {
            self.note_new_data(fs);
        }
        let (kind, batch_full) = {
            let mut guard = self.lock();
            let Some(st) = guard.as_mut() else { return Ok(Ticket::none()) };
            st.batched += 1;
            (st.open.take(), st.batched >= self.batch)
        };
        let durable_now = self.sync && kind.is_some_and(|k| k.is_namespace() && k != TxKind::Reclaim);
        let crowded = fs.pending_frees.len() > MAX_PENDING_FREES;
        if durable_now || batch_full || crowded || fs.cache.changes_held() > MAX_BATCH_BLOCKS {
            self.log_changes(fs, durable_now)?;
        }
        if crowded {
            // Each group the next transactions log shows these frees again
            // (`Ffs::store_groups`): a flush lets them go.
            self.force(fs)?;
            fs.release_durable_frees()?;
        }
        if durable_now {
            // Written by the first of those who wait for it (`Commits`).
            return Ok(self.commits_ticket());
        }
        self.write_log(fs, true)?;
        Ok(Ticket::none())
    }

    /// The log through the last commit (which holds the file's name since
    /// it was made, and a small file's new blocks), then the file's other
    /// blocks, behind one barrier: the log's waiter writes the log after
    /// the blocks, and its flush covers both. The blocks the log holds are
    /// not written now (they would be written twice, once under the lock,
    /// and a write of them would first have to force the log).
    fn fsync(&self, fs: &mut Ffs, ino: Ino) -> Result<Ticket> {
        if fs.tx.is_open() {
            fs.write_file_waited(ino)?;
        } else {
            self.log_changes(fs, true)?;
            let in_log: Vec<BlockKey> = match self.lock().as_ref() {
                Some(st) => fs.dirty_blocks_of(ino).into_iter().filter(|k| st.ahead_of_log(k)).collect(),
                None => Vec::new(),
            };
            fs.write_file_waited_but(ino, &in_log)?;
        }
        Ok(self.commits_ticket().join(fs.queue.ticket_for_all()))
    }

    fn free_when(&self, _fs: &mut Ffs, _ino: Ino, what: Freed) -> Result<FreeWhen> {
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return Ok(FreeWhen::Now) };
        st.batch_frees = true;
        if let Freed::Frags { start, count } = what {
            // A record per run freed, as the paper's journals logged one
            // per block (§8.1: delete costs grow with the file) — until
            // they would take an eighth of the log: then a run that
            // continues the last one joins it, so that removing a file
            // many times the log's size still fits one transaction.
            let crowded = (st.frees.len() * FREE_RECORD_BYTES) as u64 > st.info.bytes / 8;
            match st.frees.last_mut() {
                Some(Record::Free { start: last, count: n })
                    if crowded && *last + u64::from(*n) == start && n.checked_add(count).is_some() =>
                {
                    *n += count
                }
                _ => st.frees.push(Record::Free { start, count }),
            }
        }
        Ok(FreeWhen::Committed(st.next_seq))
    }

    fn block_allocated(&self, _fs: &mut Ffs, addr: Daddr) {
        if let Some(st) = self.lock().as_mut() {
            st.fresh.insert(addr.get());
        }
    }

    /// A grown run is as new as it was before.
    fn block_extended(&self, _fs: &mut Ffs, _addr: Daddr) {}

    /// At once for an old place allocated since a transaction was last
    /// logged (it was never written: `realloc_run`): no transaction in
    /// the log allocates it, names it or holds its contents, and what goes
    /// home before the next is logged is as at the last commit. A free
    /// that waited for the commit kept one operation's earlier moves from
    /// its later allocations: near a full disk a write ran short where the
    /// space was there. With `disorder` blocks go home as they are, so it
    /// waits as any free.
    fn realloc_free_when(&self, fs: &mut Ffs, ino: Ino, map: Option<Lbn>, what: Freed) -> Result<FreeWhen> {
        let _ = map;
        if let (false, Freed::Frags { start, .. }) = (self.disorder, what) {
            if self.lock().as_mut().is_some_and(|st| st.fresh.remove(&start)) {
                return Ok(FreeWhen::Now);
            }
        }
        self.free_when(fs, ino, what)
    }

    fn committed_before(&self, durable: Seq) -> u64 {
        self.prune(durable);
        self.lock().as_ref().map_or(0, |st| st.durable_seq)
    }

    fn force_commits(&self, fs: &mut Ffs) -> Result<bool> {
        if !fs.tx.is_open() {
            self.log_changes(fs, false)?;
        }
        self.force(fs)
    }

    fn block_relocated(&self, _fs: &mut Ffs, ino: Ino, from: Lbn, to: Lbn) {
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return };
        if let Some(latest) = st.logged_data.remove(&(ino, from)) {
            let at = st.logged_data.entry((ino, to)).or_insert(latest);
            *at = (*at).max(latest);
        }
        let Some(moved) = st.unsettled.remove(&(ino, from)) else { return };
        match st.unsettled.insert((ino, to), moved) {
            // The block that had the name, freed (a collapse frees the
            // range first), still pins the checkpoint until its free is
            // durable.
            Some(old) if old.released.is_some() => st.displaced.push(old),
            Some(old) => {
                if let Some(u) = st.unsettled.get_mut(&(ino, to)) {
                    u.oldest = u.oldest.min(old.oldest);
                }
            }
            None => {}
        }
    }

    fn block_released(&self, _fs: &mut Ffs, ino: Ino, lbn: Lbn) -> Result<()> {
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return Ok(()) };
        let next = st.next_seq;
        if let Some(u) = st.unsettled.get_mut(&(ino, lbn)) {
            u.released = Some(next);
        }
        Ok(())
    }

    fn prune(&self, durable: Seq) {
        if let Some(st) = self.lock().as_mut() {
            prune_state(st, durable);
        }
    }

    fn waiting(&self) -> usize {
        self.lock().as_ref().map_or(0, |st| st.unsettled.len())
    }

    fn writes_starting(&self, fs: &mut Ffs, keys: &[BlockKey]) -> Result<()> {
        if self.disorder {
            return Ok(());
        }
        let held_open = self.lock().as_ref().is_some_and(|st| st.making_room || st.ordering_data);
        if !fs.tx.is_open() && !held_open {
            // Changes made outside an operation (a sync storing inodes
            // and groups, frees released) are a transaction of their own.
            self.log_changes(fs, false)?;
        }
        // File data not in the log goes as it is (with `writeback` the
        // journal orders no data before metadata, as the 2000 paper's, §6;
        // with `ordered`, `log_changes` logs it or sends it before the log).
        let logged_data: Vec<bool> = match self.lock().as_ref() {
            Some(st) => keys.iter().map(|k| st.logged_data.contains_key(k)).collect(),
            None => return Ok(()),
        };
        let mut rollback: IntMap<BlockKey, Option<BlockData>> = IntMap::default();
        for (&k, logged) in keys.iter().zip(logged_data) {
            if let Some(before) = fs.cache.before_changes(k) {
                if logged || Self::is_logged(fs, k) {
                    rollback.insert(k, before);
                }
            }
        }
        let needs_log = {
            let mut guard = self.lock();
            let Some(st) = guard.as_mut() else { return Ok(()) };
            st.rollback = rollback;
            keys.iter().any(|k| st.ahead_of_log(k))
        };
        // A background write-back (the cache past its threshold) does not
        // wait for the log: what needs it is held (`write_starting`) until
        // the next flush — a tick's, an fsync's, a sync's.
        if needs_log && !fs.writing_in_background {
            self.prune(fs.queue.durable());
            let still = self.lock().as_ref().is_some_and(|st| keys.iter().any(|k| st.ahead_of_log(k)));
            if still {
                self.force(fs)?;
            }
        }
        Ok(())
    }

    fn write_starting(
        &self,
        key: BlockKey,
        _addr: Daddr,
        data: &BlockData,
        ctx: &WriteContext,
    ) -> Result<WriteAs> {
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return Ok(WriteAs::Cached) };
        let superblock = key == device_key(Daddr::new(0));
        if ctx.background && key.0 == DEVICE && !superblock {
            // Inode and group blocks wait for a sync or the checkpoint: the
            // log holds their changes, and nearly every operation changes
            // them again, so a write at every threshold wrote the same
            // scattered blocks over and over (a journal's metadata goes
            // home lazily, 2000 §5; FFS-async keeps inodes in memory for
            // the sync likewise). Directory blocks still go: too many to
            // keep, they would crowd the cache into a sync each time.
            return Ok(WriteAs::Held);
        }
        let chosen = if self.disorder {
            WriteAs::Cached
        } else {
            // The write-ahead rule: a change not yet durable in the log
            // keeps its block at home as it was (held, dirty).
            let ahead = st.ahead_of_log(&key);
            match st.rollback.get(&key) {
                _ if ahead => WriteAs::Held,
                Some(Some(image)) => WriteAs::RolledBack(image.clone()),
                Some(None) => WriteAs::Held,
                None => WriteAs::Cached,
            }
        };
        if !superblock {
            return Ok(chosen);
        }
        let tail = tail_of(st);
        let patch = |bytes: &[u8]| {
            let mut copy = AlignedBytes::copy_of(bytes);
            patch_journal_checkpoint(&mut copy, tail.0, tail.1);
            Arc::new(copy)
        };
        let chosen = match chosen {
            WriteAs::Cached => WriteAs::Sealed(patch(data)),
            WriteAs::RolledBack(image) => WriteAs::RolledBack(patch(&image)),
            other => other,
        };
        if !matches!(chosen, WriteAs::Held) {
            st.checkpoint_starting = Some(tail);
        }
        Ok(chosen)
    }

    fn write_done(&self, key: BlockKey, _addr: Daddr, seq: Seq) {
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return };
        if let Some(u) = st.unsettled.get_mut(&key) {
            u.written = Some((seq, u.latest));
        }
        if key == device_key(Daddr::new(0)) {
            if let Some(tail) = st.checkpoint_starting.take() {
                st.checkpoint_in_flight = Some((seq, tail));
            }
        }
    }

    fn tick(&self, fs: &mut Ffs) -> Result<()> {
        let due = self
            .lock()
            .as_ref()
            .is_some_and(|st| fs.options.clock.now().saturating_sub(st.last_force) >= COMMIT_INTERVAL);
        if due && !fs.tx.is_open() {
            self.log_changes(fs, false)?;
            self.force(fs)?;
            // The checkpoint follows what write-back has made durable at
            // home since the last tick (2000 §5: the log's start is
            // recorded as it moves), so that a crash replays no more of
            // the log than it must.
            self.write_checkpoint(fs)?;
        }
        Ok(())
    }

    fn synced(&self, fs: &mut Ffs) -> Result<()> {
        self.force(fs)?;
        self.write_checkpoint(fs)
    }

    fn journal_stats(&self) -> Option<JournalStats> {
        self.lock().as_ref().map(|st| st.stats)
    }
}
