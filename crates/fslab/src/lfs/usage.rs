//! The segment usage table (1993 paper §4.2, Fig. 7): one entry per segment
//! with its live bytes, the time it was last written and whether it is
//! clean, dirty or being written.
//!
//! [`SegmentUsage`] is the table's only owner. Every change goes through
//! [`SegmentUsage::update`], which keeps the space the table describes
//! ([`SegmentSpace`]: writable, reclaimable and cleanable blocks, clean and
//! dirty segment counts) summed as it goes, so a space check never scans
//! the table and no caller has to remember to recount. What depends on the
//! log heads as well (a head's segment is neither writable nor cleanable)
//! is taken out at query time by `space.rs`, for the two to four segments
//! the heads hold.

use super::layout::{SegUse, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK};

/// Space as the segment usage table describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SegmentSpace {
    /// Blocks the log can advance into without reclaiming anything.
    pub writable: u64,
    /// Blocks of empty dirty segments: writable after a checkpoint.
    pub reclaimable: u64,
    /// Segments clean or empty.
    pub clean_segments: u64,
    /// Blocks a cleaner could free in the other dirty segments.
    pub dead: u64,
}

impl SegmentSpace {
    /// Takes one segment's terms `before` out of the sums and puts `after`
    /// in (saturating: a mismatch must not panic).
    pub(crate) fn replace(&mut self, before: SegmentSpace, after: SegmentSpace) {
        self.writable = (self.writable + after.writable).saturating_sub(before.writable);
        self.reclaimable = (self.reclaimable + after.reclaimable).saturating_sub(before.reclaimable);
        self.clean_segments =
            (self.clean_segments + after.clean_segments).saturating_sub(before.clean_segments);
        self.dead = (self.dead + after.dead).saturating_sub(before.dead);
    }
}

/// The sums kept beside the entries; each is the sum of one term per
/// segment, so an update replaces one segment's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Sums {
    space: SegmentSpace,
    /// Segments flagged clean (the cleaner info block's count).
    clean: u64,
    /// Segments flagged dirty.
    dirty: u64,
    /// Live bytes in all segments.
    live_bytes: u64,
}

/// The segment usage table and what it adds up to.
#[derive(Debug, Clone)]
pub struct SegmentUsage {
    entries: Vec<SegUse>,
    blocks_per_segment: u64,
    block_size: u64,
    sums: Sums,
}

impl SegmentUsage {
    /// Bytes the table's entries take.
    pub fn memory_bytes(&self) -> u64 {
        crate::memory::vec_bytes(&self.entries, self.entries.capacity())
    }

    /// A table of `entries` for segments of `blocks_per_segment` blocks of
    /// `block_size` bytes.
    pub fn new(entries: Vec<SegUse>, blocks_per_segment: u64, block_size: u32) -> SegmentUsage {
        let mut usage = SegmentUsage {
            entries,
            blocks_per_segment,
            block_size: block_size as u64,
            sums: Sums::default(),
        };
        for seg in 0..usage.entries.len() {
            let terms = usage.terms(seg as u64);
            usage.add(terms, 1);
        }
        usage
    }

    /// Number of segments.
    pub fn len(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Whether the table has no segments.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Segment `seg`'s entry.
    pub fn get(&self, seg: u64) -> Option<SegUse> {
        self.entries.get(seg as usize).copied()
    }

    /// Whether segment `seg` exists and has every flag in `flags`.
    pub fn has_flags(&self, seg: u64, flags: u32) -> bool {
        self.get(seg).is_some_and(|s| s.flags & flags == flags)
    }

    /// Every entry, in segment order.
    pub fn iter(&self) -> impl Iterator<Item = &SegUse> + '_ {
        self.entries.iter()
    }

    /// Changes segment `seg`'s entry with `change`, keeping the sums;
    /// `None` (and nothing changed) if there is no such segment. The caller
    /// owns writing the entry back (`Tables::update_segment` does both).
    pub(crate) fn update<R>(&mut self, seg: u64, change: impl FnOnce(&mut SegUse) -> R) -> Option<R> {
        let before = self.terms(seg);
        let entry = self.entries.get_mut(seg as usize)?;
        let result = change(entry);
        self.add(before, -1);
        let after = self.terms(seg);
        self.add(after, 1);
        Some(result)
    }

    /// Blocks of segment `seg` that can hold log (all but a superblock copy).
    pub fn usable_blocks(&self, seg: u64) -> u64 {
        self.blocks_per_segment - u64::from(self.has_flags(seg, SEGUSE_SUPERBLOCK))
    }

    /// What the table says about space, every segment counted (the log
    /// heads' included).
    pub(crate) fn space(&self) -> SegmentSpace {
        self.sums.space
    }

    /// Segments flagged clean and segments flagged dirty.
    pub fn clean_and_dirty(&self) -> (u64, u64) {
        (self.sums.clean, self.sums.dirty)
    }

    /// Live bytes in all segments.
    pub fn live_bytes(&self) -> u64 {
        self.sums.live_bytes
    }

    /// What segment `seg` adds to the space: a clean segment is writable;
    /// an empty dirty one is reclaimable (writable after a checkpoint); both
    /// count as clean segments. In any other dirty segment a cleaner could
    /// free its blocks less what moving its live data takes: the live
    /// blocks, an inode block for their files (one per 16 blocks at worst)
    /// and summaries.
    pub(crate) fn space_terms(&self, seg: u64) -> SegmentSpace {
        let mut t = SegmentSpace::default();
        let Some(s) = self.get(seg) else { return t };
        if s.flags & SEGUSE_CLEAN != 0 {
            t.writable = self.usable_blocks(seg);
            t.clean_segments = 1;
        } else if s.flags & SEGUSE_DIRTY != 0 && s.live_bytes == 0 {
            t.reclaimable = self.usable_blocks(seg);
            t.clean_segments = 1;
        } else if s.flags & SEGUSE_DIRTY != 0 {
            let live = (s.live_bytes as u64).div_ceil(self.block_size);
            let moved = live + live.div_ceil(16) + 2;
            t.dead = self.usable_blocks(seg).saturating_sub(moved);
        }
        t
    }

    /// Everything segment `seg` adds to the sums.
    fn terms(&self, seg: u64) -> Sums {
        let Some(s) = self.get(seg) else { return Sums::default() };
        Sums {
            space: self.space_terms(seg),
            clean: u64::from(s.flags & SEGUSE_CLEAN != 0),
            dirty: u64::from(s.flags & SEGUSE_DIRTY != 0),
            live_bytes: s.live_bytes as u64,
        }
    }

    /// Checks the invariant of the sums (each is the sum of one term per
    /// segment): recounts them; says what disagrees.
    pub(crate) fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut recounted = Sums::default();
        for seg in 0..self.len() {
            let t = self.terms(seg);
            recounted.space.replace(SegmentSpace::default(), t.space);
            recounted.clean += t.clean;
            recounted.dirty += t.dirty;
            recounted.live_bytes += t.live_bytes;
        }
        if recounted != self.sums {
            return Err(format!("segment usage sums {:?} recount as {recounted:?}", self.sums));
        }
        Ok(())
    }

    /// Adds (`sign` 1) or takes out (`sign` -1) one segment's terms.
    fn add(&mut self, t: Sums, sign: i8) {
        let s = &mut self.sums;
        if sign > 0 {
            s.space.replace(SegmentSpace::default(), t.space);
            s.clean += t.clean;
            s.dirty += t.dirty;
            s.live_bytes += t.live_bytes;
        } else {
            s.space.replace(t.space, SegmentSpace::default());
            s.clean = s.clean.saturating_sub(t.clean);
            s.dirty = s.dirty.saturating_sub(t.dirty);
            s.live_bytes = s.live_bytes.saturating_sub(t.live_bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::SEGUSE_ACTIVE;
    use super::*;

    fn recounted(u: &SegmentUsage) -> SegmentUsage {
        SegmentUsage::new(u.entries.clone(), u.blocks_per_segment, u.block_size as u32)
    }

    #[test]
    fn sums_kept_by_updates_equal_a_recount() {
        let clean = SegUse { flags: SEGUSE_CLEAN, ..SegUse::default() };
        let mut u = SegmentUsage::new(vec![clean; 40], 256, 4096);
        u.update(0, |s| s.flags = SEGUSE_SUPERBLOCK | SEGUSE_DIRTY | SEGUSE_ACTIVE);
        assert_eq!(u.usable_blocks(0), 255);
        // A pseudo-random walk over every kind of change an LFS makes.
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..2000 {
            let seg = rng.gen_range(0..41); // one past the end: no such segment
            let (change, bytes) = (rng.gen_range(0..4), rng.gen_range(0..65536u32));
            let changed = u.update(seg, |s| match change {
                0 => s.flags = (s.flags & SEGUSE_SUPERBLOCK) | SEGUSE_DIRTY,
                1 => s.flags = (s.flags & SEGUSE_SUPERBLOCK) | SEGUSE_CLEAN,
                2 => s.live_bytes = s.live_bytes.saturating_add(bytes),
                _ => s.live_bytes = s.live_bytes.saturating_sub(bytes),
            });
            assert_eq!(changed.is_some(), seg < 40);
            assert_eq!(u.sums, recounted(&u).sums);
        }
        let (clean, dirty) = u.clean_and_dirty();
        assert_eq!(clean + dirty, 40);
        assert!(u.space().writable > 0 && u.space().dead > 0, "{:?}", u.space());
        assert_eq!(u.check_invariants(), Ok(()));
        // An entry changed behind `update`'s back is what the check is for.
        u.entries[3].live_bytes += 4096;
        assert!(u.check_invariants().is_err_and(|e| e.contains("recount")));
    }
}
