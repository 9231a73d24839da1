//! Inodes held in memory by a storage manager, and which of them changed.
//!
//! Both layouts keep the inodes they touched since mount and write the
//! changed ones later (LFS into inode blocks of the next partial segment,
//! FFS into their inode-table blocks). [`InodeCache::mark_dirty`] is the
//! one place an inode becomes changed, as the buffer cache's dirtying is
//! for blocks: together they are where every change of metadata passes
//! (xv6's `log_write`), which a journal or a dependency tracker hooks.

use super::IntMap;
use crate::format::inode::Inode;
use crate::format::Ino;
use std::collections::hash_map::Entry;
use std::collections::BTreeSet;

/// Clean inodes a storage manager keeps unless told otherwise
/// (`MountOptions::clean_inodes`). An inode is 256 bytes on disk and about
/// as much here: 100,000 of them are ~28 MiB with the table.
pub const DEFAULT_CLEAN_INODES: usize = 100_000;

/// Clean inodes kept beside a buffer cache of `cache_bytes`: one for each
/// 16 KiB of cache (under 2% of it in memory), from 4,096 to
/// [`DEFAULT_CLEAN_INODES`]. A long-lived mount's memory then follows its
/// cache, not the files it has seen (`fslab mount`'s default; 16,384 at
/// the default 256 MiB). A clean inode dropped costs a decode when next
/// asked for if its block is cached, a read if not.
pub fn clean_inodes_for_cache(cache_bytes: u64) -> usize {
    (cache_bytes / (16 << 10)).clamp(4096, DEFAULT_CLEAN_INODES as u64) as usize
}

/// Inodes by number, with the set of those changed since they were last
/// written. Each inode is boxed: the table's slots are then 16 bytes, not
/// 240, and a table grown for 100,000 inodes has 262,144 of them (60 MiB
/// of slots unboxed, 28 MiB boxed with the inodes).
pub struct InodeCache {
    inodes: IntMap<Ino, Box<Inode>>,
    dirty: BTreeSet<Ino>,
    /// Clean inodes past which some are dropped.
    clean_limit: usize,
}

impl Default for InodeCache {
    fn default() -> InodeCache {
        InodeCache::with_clean_limit(DEFAULT_CLEAN_INODES)
    }
}

impl InodeCache {
    /// An empty cache keeping up to [`DEFAULT_CLEAN_INODES`] clean inodes.
    pub fn new() -> InodeCache {
        InodeCache::default()
    }

    /// An empty cache keeping up to `clean_limit` clean inodes (at least one).
    pub fn with_clean_limit(clean_limit: usize) -> InodeCache {
        InodeCache { inodes: IntMap::default(), dirty: BTreeSet::new(), clean_limit: clean_limit.max(1) }
    }

    /// The memory the inodes held take.
    pub fn memory(&self) -> crate::memory::MemoryUse {
        use crate::memory::{btree_set_bytes, hash_map_bytes, MemoryUse};
        let boxed = self.inodes.len() as u64 * std::mem::size_of::<Inode>() as u64;
        MemoryUse::new(
            "inode cache",
            self.inodes.len(),
            hash_map_bytes(&self.inodes) + boxed + btree_set_bytes(&self.dirty),
        )
    }

    /// Inode `ino` if it is in memory.
    pub fn get(&self, ino: Ino) -> Option<&Inode> {
        self.inodes.get(&ino).map(|inode| &**inode)
    }

    /// Inode `ino` to change, if it is in memory. A change made through it
    /// is kept only once [`InodeCache::mark_dirty`] is called.
    pub fn get_mut(&mut self, ino: Ino) -> Option<&mut Inode> {
        self.inodes.get_mut(&ino).map(|inode| &mut **inode)
    }

    /// Puts `inode` in memory: changed (a new inode, or one that must be
    /// written) or as it is on disk. When the cache is full half of its
    /// clean inodes are dropped first, whichever the table holds first
    /// (never a changed one): dropping them all emptied the cache of what
    /// a working set was using, and dropping one at a time would scan the
    /// table at every insert.
    pub fn insert(&mut self, inode: Inode, dirty: bool) {
        let ino = inode.ino;
        if self.inodes.len() >= self.clean_limit + self.dirty.len() && !self.inodes.contains_key(&ino) {
            let changed = &self.dirty;
            let mut kept = self.clean_limit / 2;
            self.inodes.retain(|i, _| {
                if changed.contains(i) {
                    return true;
                }
                let keep = kept > 0;
                kept = kept.saturating_sub(1);
                keep
            });
        }
        // One lookup; a held inode keeps its box.
        match self.inodes.entry(ino) {
            Entry::Occupied(mut held) => **held.get_mut() = inode,
            Entry::Vacant(slot) => {
                slot.insert(Box::new(inode));
            }
        }
        if dirty {
            self.dirty.insert(ino);
        } else {
            self.dirty.remove(&ino);
        }
    }

    /// Notes that inode `ino` changed: the one place an inode becomes
    /// changed. Returns false if it is not in memory (nothing to note).
    pub fn mark_dirty(&mut self, ino: Ino) -> bool {
        if !self.inodes.contains_key(&ino) {
            return false;
        }
        self.dirty.insert(ino);
        true
    }

    /// Whether inode `ino` changed since it was last written.
    pub fn is_dirty(&self, ino: Ino) -> bool {
        self.dirty.contains(&ino)
    }

    /// Notes that inode `ino` was written (it stays in memory).
    pub fn mark_clean(&mut self, ino: Ino) {
        self.dirty.remove(&ino);
    }

    /// Forgets inode `ino` (it was freed).
    pub fn remove(&mut self, ino: Ino) {
        self.inodes.remove(&ino);
        self.dirty.remove(&ino);
    }

    /// Forgets every inode.
    pub fn clear(&mut self) {
        self.inodes.clear();
        self.dirty.clear();
    }

    /// The numbers of the inodes in memory, in no order.
    pub fn numbers(&self) -> impl Iterator<Item = Ino> + '_ {
        self.inodes.keys().copied()
    }

    /// The changed inodes, in number order.
    pub fn dirty(&self) -> &BTreeSet<Ino> {
        &self.dirty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(ino: Ino) -> Inode {
        Inode { ino, ..Inode::default() }
    }

    #[test]
    fn a_full_cache_drops_half_its_clean_inodes_and_keeps_changed_ones() {
        const LIMIT: usize = 1000;
        let mut c = InodeCache::with_clean_limit(LIMIT);
        c.insert(inode(5), true);
        for ino in 10..10 + LIMIT as Ino {
            c.insert(inode(ino), false);
        }
        let clean = |c: &InodeCache| c.numbers().filter(|&i| !c.is_dirty(i)).count();
        assert_eq!(clean(&c), LIMIT, "nothing dropped below the limit");
        c.insert(inode(1), false);
        assert_eq!(clean(&c), LIMIT / 2 + 1, "half the clean inodes dropped when full, the new one kept");
        assert_eq!(c.get(5).map(|i| i.ino), Some(5), "a changed inode is never dropped");
        assert!(c.is_dirty(5) && !c.is_dirty(1));
        assert_eq!(c.get(1).map(|i| i.ino), Some(1));
    }

    #[test]
    fn the_clean_inodes_kept_follow_the_cache() {
        assert_eq!(clean_inodes_for_cache(256 << 20), 16_384);
        assert_eq!(clean_inodes_for_cache(128 << 20), 8_192);
        assert_eq!(clean_inodes_for_cache(1 << 20), 4_096);
        assert_eq!(clean_inodes_for_cache(64 << 30), DEFAULT_CLEAN_INODES);
    }

    #[test]
    fn marking_needs_the_inode_in_memory_and_writing_or_freeing_clears_it() {
        let mut c = InodeCache::new();
        assert!(!c.mark_dirty(3));
        c.insert(inode(3), false);
        assert!(!c.is_dirty(3));
        assert!(c.mark_dirty(3));
        assert_eq!(c.dirty().iter().copied().collect::<Vec<_>>(), vec![3]);
        c.mark_clean(3);
        assert!(c.dirty().is_empty() && c.get(3).is_some());
        c.insert(inode(3), true);
        c.remove(3);
        assert!(c.get(3).is_none() && !c.is_dirty(3));
    }
}
