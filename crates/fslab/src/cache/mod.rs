//! The buffer cache: blocks named by (inode, logical block number), as in the
//! BSD logical block cache (1993 paper §4.1.2), since LFS assigns addresses
//! only when it writes; blocks that belong to no file (FFS's cylinder-group
//! and inode blocks) are named by device address ([`device_key`]). The
//! write-back layer (`writeback`) writes dirty buffers to their addresses
//! with hooks at the start and end of each write.
//!
//! Interface: `get`, `insert`, `mark_dirty`, `mark_clean`, `remove`,
//! `dirty_keys_in`, and the thresholds of §3.1/§4.4: once dirty bytes pass
//! the start-write threshold the owner should start a segment write
//! ([`BufferCache::should_start_write`]); past the stop-access threshold
//! ([`CacheLimits::stop_access_bytes`]) a writer must wait for writes in
//! flight (LFS's segment I/O enforces it). Clean buffers are evicted whenever
//! the cache is over its memory limit, by the second-chance (CLOCK)
//! approximation of least-recently-used: a use only sets a flag, so the hot
//! path of a lookup costs no queue traffic. Dirty buffers are never evicted.
//! Buffers written and then not used again wait apart, on probation, and
//! only a start-write threshold's worth of them may stay: a stream of writes
//! must not fill the cache with data nobody reads (nor make a fresh mount
//! fault in the whole memory limit, which cost a first sequential write a
//! third of its speed). The cache decides nothing about disk addresses.

pub mod inodes;
mod queue;
mod slots;
mod writeback;

pub use crate::durable::Ticket;
pub use inodes::{clean_inodes_for_cache, InodeCache, DEFAULT_CLEAN_INODES};
pub use queue::{DeviceReader, Header, Seq, WriteJob, WriteMode, WriteQueue};
pub use writeback::{write_back, NoHooks, Placement, WriteAs, WriteDest, WriteHooks, WriteNow, WrittenBack};

use crate::format::{Daddr, Ino, Lbn};
use disk::AlignedBytes;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A block's name in the cache: a file's block by (inode, logical block
/// number), or a block of the device by address ([`device_key`]).
pub type BlockKey = (Ino, Lbn);

/// The "inode" of blocks named by device address (FFS's cylinder-group and
/// inode blocks, which belong to no file). Inode number 0 is never a file,
/// so a device key cannot collide with a file's block.
pub const DEVICE: Ino = 0;

/// The cache key of the block at device address `addr`. An address is a
/// count of units of at least 512 bytes on a device of at most 2^64 bytes,
/// so it always fits the key's signed 64 bits.
pub fn device_key(addr: Daddr) -> BlockKey {
    (DEVICE, addr.get() as Lbn)
}

/// The device address a [`device_key`] names, or `None` for a file's block.
pub fn device_addr(key: BlockKey) -> Option<Daddr> {
    (key.0 == DEVICE && key.1 >= 0).then(|| Daddr::new(key.1 as u64))
}

/// A block's bytes. Shared with a segment write in flight, which holds a
/// reference until the device has the bytes; changing a shared buffer copies
/// it first, so the write goes out as it was when queued. Aligned, so that
/// the segment write reaches an `O_DIRECT` device without a bounce copy.
pub type BlockData = Arc<AlignedBytes>;

/// A block holding a copy of `bytes`.
pub fn block_of(bytes: &[u8]) -> BlockData {
    Arc::new(AlignedBytes::copy_of(bytes))
}

struct Buffer {
    /// Its bytes: a whole block, or fewer when it is clean and the rest
    /// are zeros ([`BufferCache::mark_written_holding`]; a file's tail in
    /// fragments).
    data: BlockData,
    dirty: bool,
    /// Used since the eviction sweep last passed it: spared once more.
    /// Atomic so that readers sharing the cache ([`BufferCache::peek`])
    /// can note their use; only the sweep, which holds the cache
    /// exclusively, clears it.
    referenced: AtomicBool,
    /// The number of this buffer's entry in the sweep or probation queue, or
    /// [`NOT_QUEUED`]. Entries of buffers since removed or re-inserted carry
    /// other numbers and are skipped.
    entry: u64,
    /// Its entry is in the probation queue, not the sweep.
    on_probation: bool,
    /// The write that last took its contents to the device (0: none since
    /// it was cached). Its current contents are durable once that write is,
    /// if it is clean.
    written: Seq,
    /// Set when its last write was a rolled-back copy and it stayed dirty:
    /// the durable point of that write, plus one (0: not parked). Until
    /// something durable changes, or the block does, writing it again
    /// would write the same copy ([`BufferCache::is_parked`]).
    parked: Seq,
    /// The rolled-back copy its last write carried, where, and that
    /// write's number, while it stays dirty ([`BufferCache::copy_on_disk`]).
    /// Boxed: only soft updates' rolled-back blocks have one, and every
    /// buffer carries the field.
    copy_on_disk: Option<Box<(Daddr, BlockData, Seq)>>,
    /// Holders that need it cached whatever its state ([`BufferCache::pin`]).
    pins: u32,
    /// `Some((from, to))`: only these bytes are the block's; the rest of
    /// `data` is zeros standing for what the disk holds
    /// ([`BufferCache::write_partial`]). Such a buffer is always dirty.
    partial: Option<(u32, u32)>,
}

/// Buffers on probation that one trim passes over because they are still
/// being written, before it gives up. They were queued in the order they
/// are written, so the ones behind a busy one are mostly in flight too: a
/// trim moves the first busy buffer it meets to the back and stops. (Walking
/// on past up to 64 of them, as every block a segment write marks clean
/// trims, cost a tenth of the daemon's CPU in a sequential write.)
const BUSY_LOOKS: usize = 1;

/// [`Buffer::entry`] of a buffer with no queue entry (it is dirty; it gets
/// one when it is written).
const NOT_QUEUED: u64 = 0;

/// The smallest start-write threshold: sixteen 4 KiB blocks, so that a
/// cache of a few hundred kilobytes still writes batches worth a summary.
/// (It was a megabyte, one default segment, which made the lab's machines
/// with 1.84 and 3.2 MB of cache write at 1 MiB instead of the papers'
/// 460 and 800 KB.)
pub const MIN_START_WRITE_BYTES: u64 = 64 << 10;

/// Sizes that govern the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// Memory the buffers may use, clean and dirty together.
    pub memory_bytes: u64,
    /// Dirty bytes at which a segment write should begin.
    pub start_write_bytes: u64,
    /// Dirty bytes at which writers must wait for a segment write.
    pub stop_access_bytes: u64,
}

impl CacheLimits {
    /// Thresholds derived from a memory limit: start writing at a quarter of
    /// it, at most 16 MiB — sixteen default segments, so writes leave as
    /// whole segments; more only held unwritten data, and memory that a
    /// fresh mount had to fault in (a 64 MiB cap cost sequential writes a
    /// tenth, `scripts/bench-basic`) — and stop access at a half.
    ///
    /// At least [`MIN_START_WRITE_BYTES`]: below a megabyte of cache the
    /// quarter holds, as in the 1995 paper's BSD-LFS, which wrote a segment
    /// at 115 dirty blocks (§4) — a quarter of its 1.84 MB cache. Small
    /// caches write partial segments; the space check counts what they
    /// cost (`lfs/space.rs`, and the cleaner's fill test at 95% with 16-block
    /// writes).
    pub fn for_memory(memory_bytes: u64) -> CacheLimits {
        let start = (memory_bytes / 4).clamp(MIN_START_WRITE_BYTES, 16 << 20);
        CacheLimits {
            memory_bytes,
            start_write_bytes: start,
            stop_access_bytes: (memory_bytes / 2).max(start),
        }
    }
}

/// The buffer cache. Invariants: `dirty` holds exactly the keys of the
/// buffers whose `dirty` flag is set; every clean buffer has exactly one
/// entry whose number matches its [`Buffer::entry`], in `probation` if its
/// `on_probation` is set and in `sweep` if not; `on_probation` counts those
/// buffers.
pub struct BufferCache {
    block_size: usize,
    limits: CacheLimits,
    /// Lookups are the hot path (several per block written), so the
    /// buffers are hashed; `keys` keeps them in order for per-file walks.
    buffers: slots::Slots<Buffer>,
    keys: BTreeSet<BlockKey>,
    /// The CLOCK hand's path: the next buffer it looks at is at the front.
    sweep: VecDeque<(BlockKey, u64)>,
    /// Entry numbers handed out so far.
    entries: u64,
    /// Keys of the dirty buffers, so the segment writer finds them without
    /// walking the clean ones.
    dirty: BTreeSet<BlockKey>,
    /// Clean buffers that were written and not used since, oldest first:
    /// they go before anything in the sweep, and only a few may stay.
    probation: VecDeque<(BlockKey, u64)>,
    /// Buffers whose entry is in `probation`.
    on_probation: usize,
    /// The bytes of those buffers.
    probation_bytes: u64,
    /// The bytes of every buffer: what the memory limit bounds.
    held_bytes: u64,
    /// The latest write of any buffer evicted since: what a block no longer
    /// cached waits for to be durable.
    evicted_written: Seq,
    /// While a journal runs: each block changed since the last
    /// [`take_changes`](Self::take_changes), with its contents before the
    /// first of those changes (`None`: it was not cached, a new block).
    /// Holding the old contents costs nothing until the change: the
    /// change copies the buffer (`Arc::make_mut`) instead of writing it in
    /// place.
    changes: Option<IntMap<BlockKey, Option<BlockData>>>,
}

impl BufferCache {
    /// An empty cache of `block_size`-byte buffers.
    pub fn new(block_size: u32, limits: CacheLimits) -> BufferCache {
        BufferCache {
            block_size: block_size as usize,
            limits,
            buffers: slots::Slots::default(),
            keys: BTreeSet::new(),
            sweep: VecDeque::new(),
            entries: NOT_QUEUED,
            dirty: BTreeSet::new(),
            probation: VecDeque::new(),
            on_probation: 0,
            probation_bytes: 0,
            held_bytes: 0,
            evicted_written: 0,
            changes: None,
        }
    }

    /// Starts keeping, for each block changed, its contents before the
    /// change (what a journal diffs against).
    pub fn keep_changes(&mut self) {
        self.changes.get_or_insert_with(IntMap::default);
    }

    /// The blocks changed since the last call, each with its contents
    /// before the first change; the record starts again empty.
    pub fn take_changes(&mut self) -> Vec<(BlockKey, Option<BlockData>)> {
        let Some(changes) = self.changes.as_mut() else { return Vec::new() };
        let mut out: Vec<_> = std::mem::take(changes).into_iter().collect();
        out.sort_unstable_by_key(|&(k, _)| k);
        out
    }

    /// How many blocks have changes recorded since the last
    /// [`take_changes`](Self::take_changes).
    pub fn changes_held(&self) -> usize {
        self.changes.as_ref().map_or(0, |c| c.len())
    }

    /// Puts changes taken by [`take_changes`](Self::take_changes) back:
    /// they are older than any change recorded since, so theirs are the
    /// images before.
    pub fn put_back_changes(&mut self, taken: Vec<(BlockKey, Option<BlockData>)>) {
        if let Some(changes) = self.changes.as_mut() {
            changes.extend(taken);
        }
    }

    /// The contents of `key` before its first change since the last
    /// [`take_changes`](Self::take_changes): `None` if it has not changed
    /// since, `Some(None)` if it was not cached then.
    pub fn before_changes(&self, key: BlockKey) -> Option<Option<BlockData>> {
        self.changes.as_ref()?.get(&key).cloned()
    }

    /// Notes that `key` is about to change, keeping its contents first.
    fn changing(&mut self, key: BlockKey) {
        if self.changes.is_some() {
            // A journal diffs whole blocks against their contents before.
            self.make_whole(key);
        }
        if let Some(changes) = self.changes.as_mut() {
            let buffers = &self.buffers;
            changes.entry(key).or_insert_with(|| buffers.get(&key).map(|b| b.data.clone()));
        }
    }

    /// Queues a clean buffer that has no entry: at the back of the sweep,
    /// or of the probation queue if `written` and not used since.
    fn enqueue(&mut self, key: BlockKey, written: bool) {
        if let Some(b) = self.buffers.get_mut(&key) {
            if b.entry == NOT_QUEUED {
                self.entries += 1;
                b.entry = self.entries;
                if *b.referenced.get_mut() || !written {
                    self.sweep.push_back((key, self.entries));
                } else {
                    b.on_probation = true;
                    self.on_probation += 1;
                    self.probation_bytes += b.data.len() as u64;
                    self.probation.push_back((key, self.entries));
                }
            }
        }
    }

    /// Forgets the entry of `b` if it is on probation.
    fn leave_probation(b: &mut Buffer, on_probation: &mut usize, probation_bytes: &mut u64) {
        if b.on_probation {
            b.on_probation = false;
            b.entry = NOT_QUEUED;
            *on_probation -= 1;
            *probation_bytes -= b.data.len() as u64;
        }
    }

    /// Takes `b` out of the counts of what is held, as it leaves the cache.
    fn forget(&mut self, b: &mut Buffer) {
        Self::leave_probation(b, &mut self.on_probation, &mut self.probation_bytes);
        self.held_bytes -= b.data.len() as u64;
    }

    /// The contents of `key`, if cached: a whole block.
    pub fn get(&mut self, key: BlockKey) -> Option<&[u8]> {
        // One lookup: this is on every hot path.
        let b = self.buffers.get_mut(&key).filter(|b| b.partial.is_none())?;
        *b.referenced.get_mut() = true;
        Self::widen(b, self.block_size, &mut self.held_bytes, &mut self.probation_bytes);
        Some(&b.data[..])
    }

    /// The bytes of `key` the cache holds, if cached: fewer than a block
    /// when the rest are zeros ([`BufferCache::mark_written_holding`]). For a reader
    /// that copies them out, which need not make the block whole first.
    pub fn get_held(&mut self, key: BlockKey) -> Option<&[u8]> {
        let b = self.buffers.get_mut(&key).filter(|b| b.partial.is_none())?;
        *b.referenced.get_mut() = true;
        Some(&b.data[..])
    }

    /// Makes a buffer that holds fewer bytes than a block whole again,
    /// zeros after them, before it is changed or shared as a block.
    fn make_whole(&mut self, key: BlockKey) {
        if let Some(b) = self.buffers.get_mut(&key) {
            Self::widen(b, self.block_size, &mut self.held_bytes, &mut self.probation_bytes);
        }
    }

    /// [`make_whole`](Self::make_whole) of a buffer already found.
    fn widen(b: &mut Buffer, block_size: usize, held_bytes: &mut u64, probation_bytes: &mut u64) {
        if b.data.len() >= block_size {
            return;
        }
        let mut whole = AlignedBytes::zeroed(block_size);
        whole[..b.data.len()].copy_from_slice(&b.data);
        let grown = (block_size - b.data.len()) as u64;
        b.data = Arc::new(whole);
        *held_bytes += grown;
        if b.on_probation {
            *probation_bytes += grown;
        }
    }

    /// Keeps only the first `len` bytes of clean `key` if every byte after
    /// them is zero, as after a file's tail of fragments (4.4BSD sizes a
    /// tail's buffer to its fragments, `bread(…, blksize)`): a small file
    /// cached on FFS then takes its own size, not a block's. Readers see
    /// the same block: [`get`](Self::get), [`share`](Self::share) and every
    /// change make it whole again first; [`peek`](Self::peek) and
    /// [`get_held`](Self::get_held) give the bytes held. A write in flight
    /// keeps the whole block it was given, so the short copy is not shared
    /// with it and may be evicted before it completes: a read of the
    /// address then waits for it (`queue`), as a read of any block does.
    fn keep_only(&mut self, key: BlockKey, len: usize) {
        let Some(b) = self.buffers.get_mut(&key) else { return };
        if b.dirty || b.partial.is_some() || len >= b.data.len() || !all_zeros(&b.data[len..]) {
            return;
        }
        let shrunk = (b.data.len() - len) as u64;
        b.data = block_of(&b.data[..len]);
        self.held_bytes -= shrunk;
        if b.on_probation {
            self.probation_bytes -= shrunk;
        }
    }

    /// The bytes of `key` the cache holds, if cached, for a reader that
    /// shares the cache with other readers: fewer than a block when the
    /// rest are zeros, as [`get_held`](Self::get_held). It notes the use as
    /// [`BufferCache::get`] does, so the sweep spares the block exactly as
    /// it would have.
    pub fn peek(&self, key: BlockKey) -> Option<&[u8]> {
        let b = self.buffers.get(&key).filter(|b| b.partial.is_none())?;
        b.referenced.store(true, Ordering::Relaxed);
        Some(&b.data[..])
    }

    /// Whether `key` is cached, whole or in part.
    pub fn contains(&self, key: BlockKey) -> bool {
        self.buffers.contains_key(&key)
    }

    /// Whether `key` is cached and dirty.
    pub fn is_dirty(&self, key: BlockKey) -> bool {
        self.buffers.get(&key).is_some_and(|b| b.dirty)
    }

    /// Mutable contents of a cached block, which becomes dirty. Returns
    /// `None` if `key` is not cached, or only in part.
    pub fn get_mut_dirty(&mut self, key: BlockKey) -> Option<&mut [u8]> {
        if self.partial(key).is_some() {
            return None;
        }
        if self.buffers.contains_key(&key) {
            self.changing(key);
        }
        // Makes a buffer held short whole first.
        self.mark_dirty(key);
        self.buffers.get_mut(&key).map(|b| &mut Arc::make_mut(&mut b.data)[..])
    }

    /// Mutable contents of `key`, which becomes dirty; a zero-filled block
    /// if it is not cached (a new indirect block). `None` only if the cache
    /// could not keep it.
    pub fn get_or_zeroed_mut(&mut self, key: BlockKey) -> Option<&mut [u8]> {
        if !self.contains(key) {
            let zero = self.zeroed();
            self.insert(key, zero, true);
        }
        self.get_mut_dirty(key)
    }

    /// A new reference to the contents of `key`, for a write in flight;
    /// `None` if it is not cached, or only in part. A whole block: one that
    /// holds fewer bytes is copied out whole.
    pub fn share(&self, key: BlockKey) -> Option<BlockData> {
        let b = self.buffers.get(&key).filter(|b| b.partial.is_none())?;
        if b.data.len() == self.block_size {
            return Some(b.data.clone());
        }
        let mut whole = AlignedBytes::zeroed(self.block_size);
        whole[..b.data.len()].copy_from_slice(&b.data);
        Some(Arc::new(whole))
    }

    /// The bytes of `key` that are cached, when only some are
    /// ([`BufferCache::write_partial`]).
    pub fn partial(&self, key: BlockKey) -> Option<std::ops::Range<usize>> {
        let (from, to) = self.buffers.get(&key)?.partial?;
        Some(from as usize..to as usize)
    }

    /// The contents of `key` and the bytes of them that are its, for
    /// write-back: all of them unless it is cached only in part.
    pub fn share_for_write(&self, key: BlockKey) -> Option<(BlockData, std::ops::Range<usize>)> {
        let b = self.buffers.get(&key)?;
        if b.partial.is_none() {
            return self.share(key).map(|data| (data, 0..self.block_size));
        }
        let valid = b.partial.map_or(0..b.data.len(), |(from, to)| from as usize..to as usize);
        Some((b.data.clone(), valid))
    }

    /// Whether [`write_partial`](Self::write_partial) would take `len`
    /// bytes at `offset` of `key`.
    pub fn takes_partial(&self, key: BlockKey, offset: usize, len: usize) -> bool {
        let end = offset.saturating_add(len);
        if self.changes.is_some() || len == 0 || end > self.block_size {
            return false;
        }
        match self.buffers.get(&key) {
            None => true,
            Some(b) => b.partial.is_some_and(|(from, to)| end >= from as usize && offset <= to as usize),
        }
    }

    /// Writes `data` at byte `offset` of block `key` without the rest of
    /// it: a block not cached becomes a dirty buffer holding only these
    /// bytes, and one held in part takes them if they touch or overlap what
    /// it holds (it is whole once they cover the block). The other bytes
    /// are the disk's: a reader brings them in with
    /// [`insert`](Self::insert), clean, which merges the two. So a write
    /// of part of a block need not read the block first, as 4.4BSD's NFS
    /// client keeps a buffer's valid and dirty ranges (`b_validoff`,
    /// `b_dirtyoff`) instead of reading.
    ///
    /// Returns false, changing nothing, when the block is cached whole,
    /// the bytes would leave a gap, or the cache keeps before-images of
    /// changes (a journal diffs whole blocks): the caller then reads the
    /// block and writes into it.
    ///
    /// Until the buffer is whole, `get`, `peek`, `share` and
    /// `get_mut_dirty` do not return it; once written back it leaves the
    /// cache, since its clean bytes would not be the whole block.
    pub fn write_partial(&mut self, key: BlockKey, offset: usize, data: &[u8]) -> bool {
        if !self.takes_partial(key, offset, data.len()) {
            return false;
        }
        let end = offset + data.len();
        match self.buffers.get_mut(&key) {
            None => {
                let mut block = AlignedBytes::zeroed(self.block_size);
                block[offset..end].copy_from_slice(data);
                self.insert(key, Arc::new(block), true);
                if let Some(b) = self.buffers.get_mut(&key) {
                    b.partial = Some((offset as u32, end as u32));
                }
                true
            }
            Some(b) => {
                let Some((from, to)) = b.partial else { return false };
                let (from, to) = (from as usize, to as usize);
                Arc::make_mut(&mut b.data)[offset..end].copy_from_slice(data);
                let (from, to) = (from.min(offset), to.max(end));
                b.partial = (from > 0 || to < self.block_size).then_some((from as u32, to as u32));
                b.parked = 0;
                true
            }
        }
    }

    /// A zero-filled block to fill and insert.
    pub fn zeroed(&self) -> BlockData {
        Arc::new(AlignedBytes::zeroed(self.block_size))
    }

    /// Caches `data` (one block, or clean and fewer bytes when the rest are
    /// zeros, as [`mark_written_holding`](Self::mark_written_holding) leaves it) under `key`,
    /// replacing what was there.
    /// Room is made first, so the block just inserted is never the one
    /// evicted: a caller may use it right away. Clean `data` inserted over
    /// a buffer held in part ([`write_partial`](Self::write_partial)) is
    /// the disk's copy: the bytes written since go over it, and the buffer
    /// is whole and still dirty.
    pub fn insert(&mut self, key: BlockKey, mut data: BlockData, dirty: bool) {
        if dirty && data.len() < self.block_size {
            let mut whole = AlignedBytes::zeroed(self.block_size);
            whole[..data.len()].copy_from_slice(&data);
            data = Arc::new(whole);
        }
        if !dirty {
            if let Some(b) = self.buffers.get_mut(&key) {
                if let Some((from, to)) = b.partial {
                    let (from, to) = (from as usize, to as usize);
                    let mut whole = AlignedBytes::zeroed(self.block_size);
                    whole[..data.len()].copy_from_slice(&data);
                    if from < to {
                        whole[from..to].copy_from_slice(&b.data[from..to]);
                    }
                    b.data = Arc::new(whole);
                    b.partial = None;
                    return;
                }
            }
        }
        if dirty {
            self.changing(key);
        }
        let mut pins = 0;
        if let Some(mut old) = self.buffers.remove(&key) {
            self.keys.remove(&key);
            self.forget(&mut old);
            if old.dirty && !dirty {
                self.dirty.remove(&key);
            }
            pins = old.pins;
        }
        self.evict_to(self.capacity_bytes().saturating_sub(data.len() as u64));
        if dirty {
            self.dirty.insert(key);
        }
        self.held_bytes += data.len() as u64;
        // A dirty buffer is queued when it is written out.
        self.buffers.insert(
            key,
            Buffer {
                data,
                dirty,
                referenced: AtomicBool::new(false),
                entry: NOT_QUEUED,
                on_probation: false,
                written: 0,
                parked: 0,
                copy_on_disk: None,
                pins,
                partial: None,
            },
        );
        self.keys.insert(key);
        if !dirty {
            self.enqueue(key, false);
        }
    }

    /// Marks a cached block dirty; returns whether it was clean before.
    pub fn mark_dirty(&mut self, key: BlockKey) -> bool {
        self.make_whole(key);
        if let Some(b) = self.buffers.get_mut(&key) {
            // Changed: a write would carry something new.
            b.parked = 0;
        }
        match self.buffers.get_mut(&key) {
            Some(b) if !b.dirty => {
                b.dirty = true;
                Self::leave_probation(b, &mut self.on_probation, &mut self.probation_bytes);
                self.dirty.insert(key);
                true
            }
            _ => false,
        }
    }

    /// Marks a cached block clean (it has been written).
    pub fn mark_clean(&mut self, key: BlockKey) {
        self.mark_written(key, 0);
    }

    /// Marks a cached block clean: write `seq` of the write queue took its
    /// contents to the device (0 for a write outside the queue).
    /// A buffer held in part leaves the cache (unless pinned, when it
    /// stays dirty): clean, it would pass for the whole block.
    pub fn mark_written(&mut self, key: BlockKey, seq: Seq) {
        self.mark_written_holding(key, seq, self.block_size);
    }

    /// [`mark_written`](Self::mark_written) for a write that took only the
    /// first `len` bytes of `key` (a file's tail of fragments): the buffer
    /// keeps only those if the rest are zeros, before it joins the
    /// probation queue and counts against its share. Readers see the same
    /// block: [`get`](Self::get), [`share`](Self::share) and every change
    /// make it whole again first; [`peek`](Self::peek) and
    /// [`get_held`](Self::get_held) give the bytes held.
    pub fn mark_written_holding(&mut self, key: BlockKey, seq: Seq, len: usize) {
        if let Some(pins) = self.buffers.get(&key).filter(|b| b.partial.is_some()).map(|b| b.pins) {
            if pins == 0 {
                self.remove(key);
                self.evicted_written = self.evicted_written.max(seq);
            }
            return;
        }
        if let Some(b) = self.buffers.get_mut(&key) {
            if b.dirty {
                b.dirty = false;
                self.dirty.remove(&key);
            }
            b.written = b.written.max(seq);
            b.parked = 0;
            b.copy_on_disk = None;
        }
        self.keep_only(key, len);
        // The sweep dropped its entry while it was dirty; a clean buffer
        // needs one to be evictable.
        self.enqueue(key, true);
        self.trim_probation(self.capacity_bytes());
    }

    /// Notes that `key` was just written as a rolled-back copy, at durable
    /// point `durable`, and stays dirty (see [`BufferCache::is_parked`]).
    pub fn park(&mut self, key: BlockKey, durable: Seq) {
        if let Some(b) = self.buffers.get_mut(&key) {
            if b.dirty {
                b.parked = durable + 1;
            }
        }
    }

    /// Notes that write `seq` took `copy`, a rolled-back copy of `key`, to
    /// `addr`, and `key` stays dirty.
    pub fn note_copy_written(&mut self, key: BlockKey, addr: Daddr, copy: BlockData, seq: Seq) {
        if let Some(b) = self.buffers.get_mut(&key) {
            if b.dirty {
                b.copy_on_disk = Some(Box::new((addr, copy, seq)));
            }
        }
    }

    /// The write that took exactly `copy` to `addr` as `key`'s last
    /// rolled-back copy, if one did: writing it again would change
    /// nothing on the disk. (A sync's rounds made soft updates write the
    /// same rolled-back inode blocks once per round, while what held them
    /// back waited for a later round.)
    pub fn copy_on_disk(&self, key: BlockKey, addr: Daddr, copy: &[u8]) -> Option<Seq> {
        let b = self.buffers.get(&key)?;
        match b.copy_on_disk.as_deref() {
            Some((at, written, seq)) if b.dirty && *at == addr && written[..] == *copy => Some(*seq),
            _ => None,
        }
    }

    /// Whether writing `key` now would only write again the rolled-back
    /// copy its last write carried: it has not changed since, and nothing
    /// became durable (`durable` is what is durable now), so whatever held
    /// its changes back still does. Write-back skips it; a barrier ends it.
    pub fn is_parked(&self, key: BlockKey, durable: Seq) -> bool {
        self.buffers.get(&key).is_some_and(|b| b.dirty && b.parked == durable + 1)
    }

    /// The write whose durability makes the current contents of `key`
    /// durable: `None` while it is dirty (nothing has taken them to the
    /// device yet). A block not cached was evicted clean, after a write no
    /// later than any eviction's.
    pub fn durable_after(&self, key: BlockKey) -> Option<Seq> {
        match self.buffers.get(&key) {
            Some(b) if b.dirty => None,
            Some(b) => Some(b.written),
            None => Some(self.evicted_written),
        }
    }

    /// Keeps `key` cached, clean or dirty, until as many [`unpin`]s: for a
    /// storage manager that will write into the buffer again shortly and
    /// must find it there (an integrity mode between two writes of it).
    /// Pinning a block not cached does nothing.
    ///
    /// [`unpin`]: BufferCache::unpin
    pub fn pin(&mut self, key: BlockKey) {
        if let Some(b) = self.buffers.get_mut(&key) {
            b.pins += 1;
        }
    }

    /// Undoes one [`BufferCache::pin`].
    pub fn unpin(&mut self, key: BlockKey) {
        if let Some(b) = self.buffers.get_mut(&key) {
            b.pins = b.pins.saturating_sub(1);
        }
    }

    /// Drops `key`; returns whether it was dirty. Its recorded change goes
    /// too: a block is removed because it was freed or moved to another
    /// name, so a block made again under `key` is a new one, somewhere
    /// else, which a journal must log whole rather than as a diff against
    /// the old one's contents.
    pub fn remove(&mut self, key: BlockKey) -> bool {
        if let Some(changes) = self.changes.as_mut() {
            changes.remove(&key);
        }
        let mut removed = self.buffers.remove(&key);
        if let Some(b) = &mut removed {
            self.keys.remove(&key);
            self.forget(b);
        }
        match removed {
            Some(b) if b.dirty => {
                self.dirty.remove(&key);
                true
            }
            _ => false,
        }
    }

    /// The first block of inode `ino` among `lbns` that is cached.
    pub fn first_in(&self, ino: Ino, lbns: std::ops::Range<Lbn>) -> Option<Lbn> {
        if lbns.is_empty() {
            return None;
        }
        self.keys.range((ino, lbns.start)..(ino, lbns.end)).next().map(|&(_, lbn)| lbn)
    }

    /// Cached keys of inode `ino` with logical block numbers in `lbns`.
    pub fn keys_in(&self, ino: Ino, lbns: std::ops::RangeInclusive<Lbn>) -> Vec<BlockKey> {
        self.keys.range((ino, *lbns.start())..=(ino, *lbns.end())).copied().collect()
    }

    /// Dirty keys of inode `ino` with logical block numbers in `lbns`, sorted.
    pub fn dirty_keys_in(&self, ino: Ino, lbns: std::ops::RangeInclusive<Lbn>) -> Vec<BlockKey> {
        self.dirty.range((ino, *lbns.start())..=(ino, *lbns.end())).copied().collect()
    }

    /// The inodes that have dirty blocks, in order.
    pub fn dirty_inodes(&self) -> Vec<Ino> {
        let mut inos: Vec<Ino> = self.dirty.iter().map(|&(ino, _)| ino).collect();
        inos.dedup();
        inos
    }

    /// What the cache's memory is spent on: the buffers' blocks, and the
    /// tables and queues that find them.
    pub fn memory(&self) -> Vec<crate::memory::MemoryUse> {
        use crate::memory::{btree_set_bytes, MemoryUse};
        let queued = |q: &VecDeque<(BlockKey, u64)>| {
            q.capacity() as u64 * std::mem::size_of::<(BlockKey, u64)>() as u64
        };
        vec![
            MemoryUse::new("buffer cache: blocks", self.buffers.len(), self.held_bytes),
            MemoryUse::new(
                "buffer cache: index",
                self.buffers.len(),
                self.buffers.bytes() + btree_set_bytes(&self.keys) + btree_set_bytes(&self.dirty),
            ),
            MemoryUse::new(
                "buffer cache: eviction queues",
                self.sweep.len() + self.probation.len(),
                queued(&self.sweep) + queued(&self.probation),
            ),
        ]
    }

    /// Checks the invariants written on the type (`dirty`, `keys` and the
    /// queue entries agree with the buffers); says which one fails. O(n):
    /// for the storage managers' [`check_invariants`] and for tests.
    ///
    /// [`check_invariants`]: crate::storage::StorageManager::check_invariants
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        if self.keys.len() != self.buffers.len() || self.keys.iter().any(|k| !self.buffers.contains_key(k)) {
            return Err(format!("{} ordered keys for {} buffers", self.keys.len(), self.buffers.len()));
        }
        let flagged = self.buffers.iter().filter(|(_, b)| b.dirty).count();
        if flagged != self.dirty.len()
            || self.dirty.iter().any(|k| !self.buffers.get(k).is_some_and(|b| b.dirty))
        {
            return Err(format!("{} dirty keys for {flagged} buffers flagged dirty", self.dirty.len()));
        }
        let swept: std::collections::HashSet<(BlockKey, u64)> = self.sweep.iter().copied().collect();
        let probation: std::collections::HashSet<(BlockKey, u64)> = self.probation.iter().copied().collect();
        let (mut on_probation, mut probation_bytes, mut held_bytes) = (0, 0, 0);
        for (&key, b) in self.buffers.iter() {
            on_probation += usize::from(b.on_probation);
            held_bytes += b.data.len() as u64;
            if b.on_probation {
                probation_bytes += b.data.len() as u64;
            }
            if b.partial.is_some() && !b.dirty {
                return Err(format!("buffer {key:?} held in part is clean"));
            }
            if b.data.len() > self.block_size
                || (b.data.len() < self.block_size && (b.dirty || b.partial.is_some()))
            {
                return Err(format!(
                    "buffer {key:?} holds {} bytes and is dirty or held in part",
                    b.data.len()
                ));
            }
            if b.dirty {
                continue;
            }
            let queued = if b.on_probation { &probation } else { &swept };
            if b.entry == NOT_QUEUED || !queued.contains(&(key, b.entry)) {
                return Err(format!("clean buffer {key:?} has no entry {} in its queue", b.entry));
            }
        }
        if on_probation != self.on_probation {
            return Err(format!("{} buffers on probation counted as {}", on_probation, self.on_probation));
        }
        if (probation_bytes, held_bytes) != (self.probation_bytes, self.held_bytes) {
            return Err(format!(
                "{held_bytes} bytes held ({probation_bytes} on probation) counted as {} ({})",
                self.held_bytes, self.probation_bytes
            ));
        }
        Ok(())
    }

    /// Number of dirty buffers.
    pub fn dirty_count(&self) -> u64 {
        self.dirty.len() as u64
    }

    /// Bytes held by dirty buffers.
    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_count() * self.block_size as u64
    }

    /// The start-write threshold in bytes.
    pub fn start_write_bytes(&self) -> u64 {
        self.limits.start_write_bytes
    }

    /// The memory the buffers may use, clean and dirty together.
    pub fn memory_limit_bytes(&self) -> u64 {
        self.limits.memory_bytes
    }

    /// Whether dirty data has reached the start-write threshold.
    pub fn should_start_write(&self) -> bool {
        self.dirty_bytes() >= self.limits.start_write_bytes
    }

    /// The bytes the memory limit allows the buffers, at least sixteen blocks.
    fn capacity_bytes(&self) -> u64 {
        self.limits.memory_bytes.max(16 * self.block_size as u64)
    }

    /// The bytes of written buffers the probation queue may hold: a
    /// start-write threshold's worth, the data of about the last segment
    /// write, at least sixteen blocks.
    fn probation_capacity_bytes(&self) -> u64 {
        self.limits.start_write_bytes.max(16 * self.block_size as u64)
    }

    /// Evicts buffers on probation, oldest first, while they hold more
    /// than their share or the cache more than `limit` bytes. One used since
    /// it was written joins the sweep instead.
    fn trim_probation(&mut self, limit: u64) {
        let share = self.probation_capacity_bytes();
        let mut looks = self.probation.len();
        let mut busy = 0;
        while looks > 0 && busy < BUSY_LOOKS && (self.probation_bytes > share || self.held_bytes > limit) {
            looks -= 1;
            let Some((key, entry)) = self.probation.pop_front() else { break };
            let Some(b) = self.buffers.get_mut(&key) else { continue };
            if b.entry != entry || !b.on_probation {
                continue;
            }
            if *b.referenced.get_mut() || b.pins > 0 {
                b.on_probation = false;
                self.on_probation -= 1;
                self.probation_bytes -= b.data.len() as u64;
                self.sweep.push_back((key, entry));
            } else if Arc::strong_count(&b.data) > 1 {
                // Still being written (a read must find it here).
                self.probation.push_back((key, entry));
                busy += 1;
            } else {
                self.evict(key);
            }
        }
        if self.probation.len() > 4 * self.on_probation + 1024 {
            let buffers = &self.buffers;
            self.probation
                .retain(|(key, entry)| buffers.get(key).is_some_and(|b| b.on_probation && b.entry == *entry));
        }
    }

    /// Drops clean `key`, which no one holds, to make room.
    fn evict(&mut self, key: BlockKey) {
        if let Some(mut gone) = self.buffers.remove(&key) {
            self.forget(&mut gone);
            self.evicted_written = self.evicted_written.max(gone.written);
        }
        self.keys.remove(&key);
    }

    /// Evicts clean buffers until the cache holds at most `limit` bytes,
    /// or none is left that may go.
    fn evict_to(&mut self, limit: u64) {
        self.trim_probation(limit);
        // Each entry is looked at most twice (once to clear its reference),
        // so a cache whose clean buffers are all busy costs one bounded pass.
        let mut looks = 2 * self.sweep.len();
        while self.held_bytes > limit && looks > 0 {
            looks -= 1;
            let Some((key, entry)) = self.sweep.pop_front() else { break };
            let Some(b) = self.buffers.get_mut(&key) else { continue };
            if b.entry != entry {
                continue;
            }
            if b.dirty {
                // Queued again when it is written.
                b.entry = NOT_QUEUED;
            } else if *b.referenced.get_mut() || b.pins > 0 || Arc::strong_count(&b.data) > 1 {
                // Used since the last pass, pinned, or shared with a write
                // in flight (a read must find it here until the device has
                // it).
                *b.referenced.get_mut() = false;
                self.sweep.push_back((key, entry));
            } else {
                self.evict(key);
            }
        }
        // Entries of removed buffers pile up under heavy unlinking; rebuild
        // when the queue is much longer than the cache.
        if self.sweep.len() > 4 * self.buffers.len() + 1024 {
            let live = self
                .buffers
                .iter()
                .filter(|(_, b)| b.entry != NOT_QUEUED && !b.on_probation)
                .map(|(k, b)| (*k, b.entry));
            let mut live: Vec<(BlockKey, u64)> = live.collect();
            live.sort_by_key(|&(_, entry)| entry);
            self.sweep = live.into();
        }
    }
}

/// Whether every byte of `bytes` is zero. Folded without an early exit, so
/// that it compiles to wide loads: a byte-at-a-time search that stops at
/// the first non-zero byte cost two microseconds a small file written.
fn all_zeros(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    let wide = words.by_ref().fold(0u64, |acc, w| acc | u64::from_ne_bytes(w.try_into().unwrap_or_default()));
    wide == 0 && words.remainder().iter().fold(0u8, |acc, &x| acc | x) == 0
}

/// A hash map for keys made of integers (inode and block numbers), hashed
/// with [`IntHasher`]: the lookups of the block and inode caches are on
/// every hot path, and the standard keyed hash was a visible share of them.
pub(crate) type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// The hash of integer keys: a multiply-rotate mix of their words with a
/// 64-bit finalizer (MurmurHash3's `fmix64`), so keys that differ only in
/// high bits (the blocks of a sparse file) still spread over the table. It
/// is not keyed: someone choosing file offsets to collide could slow the
/// lookups, never corrupt them, and the speed of an unkeyed hash is the
/// point.
#[derive(Default)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(23) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_i64(&mut self, word: i64) {
        self.write_u64(word as u64);
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(test)]
mod tests;
