//! The buffer cache: blocks named by (inode, logical block number), as in the
//! BSD logical block cache (1993 paper §4.1.2) — never by disk address, since
//! LFS assigns addresses only when it writes.
//!
//! Interface: `get`, `insert`, `mark_dirty`, `mark_clean`, `remove`,
//! `dirty_keys`, and the thresholds of §3.1/§4.4: once dirty bytes pass the
//! start-write threshold the owner should start a segment write
//! ([`BufferCache::should_start_write`]); past the stop-access threshold a
//! writer must not dirty more until a segment write has finished
//! ([`BufferCache::must_stop_access`]). Clean buffers are evicted, least
//! recently used first, whenever the cache is over its memory limit; dirty
//! buffers are never evicted. The cache decides nothing about disk addresses.

use crate::format::{Ino, Lbn};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// A block's name in the cache.
pub type BlockKey = (Ino, Lbn);

/// A block's bytes. Shared with a segment write in flight, which holds a
/// reference until the device has the bytes; changing a shared buffer copies
/// it first, so the write goes out as it was when queued.
pub type BlockData = Arc<[u8]>;

struct Buffer {
    data: BlockData,
    dirty: bool,
    /// Last use, for LRU eviction; matches the newest queue entry for this key.
    stamp: u64,
}

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
    /// it (at most 64 MiB, so writes leave as whole segments without holding
    /// too much unwritten data), stop access at a half.
    pub fn for_memory(memory_bytes: u64) -> CacheLimits {
        let start = (memory_bytes / 4).clamp(1 << 20, 64 << 20);
        CacheLimits {
            memory_bytes,
            start_write_bytes: start,
            stop_access_bytes: (memory_bytes / 2).max(start),
        }
    }
}

/// The buffer cache. Invariant: `dirty` holds exactly the keys of the
/// buffers whose `dirty` flag is set; `lru` holds at least one entry per clean buffer
/// whose stamp matches it.
pub struct BufferCache {
    block_size: usize,
    limits: CacheLimits,
    buffers: BTreeMap<BlockKey, Buffer>,
    lru: VecDeque<(BlockKey, u64)>,
    clock: u64,
    /// Keys of the dirty buffers, so the segment writer finds them without
    /// walking the clean ones.
    dirty: BTreeSet<BlockKey>,
}

impl BufferCache {
    /// An empty cache of `block_size`-byte buffers.
    pub fn new(block_size: u32, limits: CacheLimits) -> BufferCache {
        BufferCache {
            block_size: block_size as usize,
            limits,
            buffers: BTreeMap::new(),
            lru: VecDeque::new(),
            clock: 0,
            dirty: BTreeSet::new(),
        }
    }

    fn touch(&mut self, key: BlockKey) {
        self.clock += 1;
        let stamp = self.clock;
        if let Some(b) = self.buffers.get_mut(&key) {
            b.stamp = stamp;
            self.lru.push_back((key, stamp));
        }
    }

    /// The contents of `key`, if cached.
    pub fn get(&mut self, key: BlockKey) -> Option<&[u8]> {
        if !self.buffers.contains_key(&key) {
            return None;
        }
        self.touch(key);
        self.buffers.get(&key).map(|b| &b.data[..])
    }

    /// Whether `key` is cached.
    pub fn contains(&self, key: BlockKey) -> bool {
        self.buffers.contains_key(&key)
    }

    /// Whether `key` is cached and dirty.
    pub fn is_dirty(&self, key: BlockKey) -> bool {
        self.buffers.get(&key).is_some_and(|b| b.dirty)
    }

    /// Mutable contents of a cached block, which becomes dirty. Returns
    /// `None` if `key` is not cached.
    pub fn get_mut_dirty(&mut self, key: BlockKey) -> Option<&mut [u8]> {
        self.mark_dirty(key);
        self.buffers.get_mut(&key).map(|b| Arc::make_mut(&mut b.data))
    }

    /// A new reference to the contents of `key`, for a write in flight.
    pub fn share(&self, key: BlockKey) -> Option<BlockData> {
        self.buffers.get(&key).map(|b| b.data.clone())
    }

    /// A zero-filled block to fill and insert.
    pub fn zeroed(&self) -> BlockData {
        Arc::from(vec![0u8; self.block_size])
    }

    /// Caches `data` (one block) under `key`, replacing what was there.
    /// Room is made first, so the block just inserted is never the one
    /// evicted: a caller may use it right away.
    pub fn insert(&mut self, key: BlockKey, data: BlockData, dirty: bool) {
        if self.buffers.remove(&key).is_some_and(|old| old.dirty) && !dirty {
            self.dirty.remove(&key);
        }
        self.evict_to(self.capacity().saturating_sub(1));
        if dirty {
            self.dirty.insert(key);
        }
        self.buffers.insert(key, Buffer { data, dirty, stamp: 0 });
        self.touch(key);
    }

    /// Marks a cached block dirty; returns whether it was clean before.
    pub fn mark_dirty(&mut self, key: BlockKey) -> bool {
        match self.buffers.get_mut(&key) {
            Some(b) if !b.dirty => {
                b.dirty = true;
                self.dirty.insert(key);
                true
            }
            _ => false,
        }
    }

    /// Marks a cached block clean (it has been written).
    pub fn mark_clean(&mut self, key: BlockKey) {
        if let Some(b) = self.buffers.get_mut(&key) {
            if b.dirty {
                b.dirty = false;
                self.dirty.remove(&key);
            }
        }
        // A buffer's queue entry may have been dropped while it was dirty;
        // a clean buffer needs one to be evictable.
        self.touch(key);
    }

    /// Drops `key`; returns whether it was dirty.
    pub fn remove(&mut self, key: BlockKey) -> bool {
        match self.buffers.remove(&key) {
            Some(b) if b.dirty => {
                self.dirty.remove(&key);
                true
            }
            _ => false,
        }
    }

    /// Cached keys of inode `ino` with logical block numbers in `lbns`.
    pub fn keys_in(&self, ino: Ino, lbns: std::ops::RangeInclusive<Lbn>) -> Vec<BlockKey> {
        self.buffers.range((ino, *lbns.start())..=(ino, *lbns.end())).map(|(k, _)| *k).collect()
    }

    /// Every dirty key, sorted by inode and logical block number.
    pub fn dirty_keys(&self) -> Vec<BlockKey> {
        self.dirty.iter().copied().collect()
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

    /// Number of dirty buffers.
    pub fn dirty_count(&self) -> u64 {
        self.dirty.len() as u64
    }

    /// Bytes held by dirty buffers.
    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_count() * self.block_size as u64
    }

    /// Whether dirty data has reached the start-write threshold.
    pub fn should_start_write(&self) -> bool {
        self.dirty_bytes() >= self.limits.start_write_bytes
    }

    /// Whether dirty data has reached the stop-access threshold.
    pub fn must_stop_access(&self) -> bool {
        self.dirty_bytes() >= self.limits.stop_access_bytes
    }

    /// Buffers the memory limit allows.
    fn capacity(&self) -> usize {
        (self.limits.memory_bytes / self.block_size as u64).max(16) as usize
    }

    /// Evicts clean buffers, least recently used first, until the cache fits
    /// its memory limit or holds only dirty buffers.
    pub fn evict(&mut self) {
        self.evict_to(self.capacity());
    }

    fn evict_to(&mut self, limit: usize) {
        while self.buffers.len() > limit {
            let Some((key, stamp)) = self.lru.pop_front() else { break };
            // A buffer shared with a write in flight stays: a read must find
            // it here until the device has it.
            let evictable = self
                .buffers
                .get(&key)
                .is_some_and(|b| b.stamp == stamp && !b.dirty && Arc::strong_count(&b.data) == 1);
            if evictable {
                self.buffers.remove(&key);
            }
        }
        // Stale queue entries pile up for hot buffers; rebuild when the queue
        // is much longer than the cache.
        if self.lru.len() > 4 * self.buffers.len() + 1024 {
            let mut live: Vec<(BlockKey, u64)> = self.buffers.iter().map(|(k, b)| (*k, b.stamp)).collect();
            live.sort_by_key(|&(_, stamp)| stamp);
            self.lru = live.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(byte: u8) -> BlockData {
        Arc::from(vec![byte; 4096])
    }

    fn small_cache() -> BufferCache {
        BufferCache::new(
            4096,
            CacheLimits { memory_bytes: 16 * 4096, start_write_bytes: 4 * 4096, stop_access_bytes: 8 * 4096 },
        )
    }

    #[test]
    fn eviction_takes_clean_buffers_and_keeps_dirty_ones() {
        let mut cache = small_cache();
        for i in 0..20 {
            cache.insert((5, i), block(i as u8), i < 10);
        }
        for i in 0..10 {
            assert!(cache.contains((5, i)), "dirty block {i} must never be evicted");
        }
        let cached = (10..20).filter(|&i| cache.contains((5, i))).count();
        assert_eq!(cached, 6, "cache holds 16 buffers at most while clean ones remain");
        assert_eq!(cache.dirty_count(), 10);
        assert!(cache.should_start_write() && cache.must_stop_access());
    }

    #[test]
    fn least_recently_used_buffer_goes_first() {
        let mut cache = small_cache();
        for i in 0..16 {
            cache.insert((1, i), block(0), false);
        }
        assert!(cache.get((1, 0)).is_some());
        cache.insert((1, 100), block(0), false);
        assert!(cache.contains((1, 0)), "block 0 was used recently");
        assert!(!cache.contains((1, 1)), "block 1 was the least recently used");
    }

    #[test]
    fn dirty_accounting_follows_marks_and_removal() {
        let mut cache = small_cache();
        cache.insert((2, 0), block(1), false);
        assert!(cache.mark_dirty((2, 0)));
        assert!(!cache.mark_dirty((2, 0)));
        assert_eq!(cache.dirty_keys(), vec![(2, 0)]);
        cache.mark_clean((2, 0));
        assert_eq!(cache.dirty_count(), 0);
        cache.insert((2, -12), block(2), true);
        assert!(cache.remove((2, -12)));
        assert_eq!(cache.dirty_bytes(), 0);
    }

    #[test]
    fn a_buffer_shared_with_a_write_in_flight_is_neither_evicted_nor_changed() {
        let mut cache = small_cache();
        cache.insert((3, 0), block(7), false);
        let in_flight = cache.share((3, 0)).expect("cached");
        for i in 1..40 {
            cache.insert((3, i), block(0), false);
        }
        assert!(cache.contains((3, 0)), "shared buffer stays cached");
        cache.get_mut_dirty((3, 0)).expect("cached")[0] = 9;
        assert_eq!(in_flight[0], 7, "the write in flight keeps the bytes it was given");
        assert_eq!(cache.get((3, 0)).expect("cached")[0], 9);
    }
}
