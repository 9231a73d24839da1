//! The name-lookup table of one directory (2002 paper §3.2): open
//! addressing with linear probing over 32-bit entry *offsets*. The table
//! never holds a name: a slot only says "the entry you want may be at this
//! offset", and the caller confirms it by reading the directory block and
//! comparing the name there.
//!
//! Invariant: `used` counts the slots that are not [`EMPTY`] (live offsets
//! plus [`DELETED`] markers) and `live` the live offsets; at least one slot
//! is always [`EMPTY`] while `used <= 3/4` of the slots (the owner drops the
//! table before it passes that, §3.4), so every probe ends.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// A slot that never held an offset since the table was built (or was
/// reclaimed): a probe ends here.
const EMPTY: u32 = u32::MAX;
/// A slot whose offset was removed: a probe goes on past it.
const DELETED: u32 = u32::MAX - 1;

/// The largest directory whose offsets fit a slot: entry offsets are
/// 4-aligned, so below 4 GiB none equals [`EMPTY`] or [`DELETED`].
pub(super) const MAX_OFFSET_BYTES: u64 = 1 << 32;

/// The lookup table. See the module comment for its invariant.
pub(super) struct LookupTable {
    slots: Vec<u32>,
    used: usize,
    live: usize,
    /// This table's secret hash key (the per-table random value of §3.5).
    keys: RandomState,
}

impl LookupTable {
    /// An empty table of `slots` slots (at least 2).
    pub fn new(slots: usize) -> LookupTable {
        LookupTable { slots: vec![EMPTY; slots.max(2)], used: 0, live: 0, keys: RandomState::new() }
    }

    /// Live offsets in the table.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Whether one more insertion would leave the table more than 75%
    /// used, deleted markers counted (§3.4).
    pub fn would_pass_three_quarters(&self) -> bool {
        (self.used + 1) * 4 > self.slots.len() * 3
    }

    /// The hash of `name` in this table. The paper's FNV hash ended by
    /// mixing in the last byte, so names differing only there landed side by
    /// side, and it then hashed the table's address to spread them (§3.5);
    /// here the per-table random value is the key of a keyed hash, which
    /// spreads such names and also keeps anyone who cannot read the key from
    /// choosing names that collide.
    pub fn hash(&self, name: &[u8]) -> u64 {
        let mut h = self.keys.build_hasher();
        h.write(name);
        h.finish()
    }

    /// The first slot of the chain of `hash` (a multiply-shift: uniform for
    /// any table length).
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.slots.len() as u128) >> 64) as usize
    }

    fn next(&self, slot: usize) -> usize {
        if slot + 1 == self.slots.len() {
            0
        } else {
            slot + 1
        }
    }

    /// The live offsets on the chain of `hash`, in probe order, each with
    /// its slot: the candidates for a name with that hash.
    pub fn candidates(&self, hash: u64) -> Candidates<'_> {
        Candidates { table: self, slot: self.home(hash), steps: 0 }
    }

    /// Records that the entry of `hash` lives at `offset`. The name must not
    /// be in the table already. Takes the first deleted or empty slot of
    /// the chain.
    pub fn insert(&mut self, hash: u64, offset: u32) {
        debug_assert!(offset != EMPTY && offset != DELETED);
        let mut slot = self.home(hash);
        for _ in 0..self.slots.len() {
            match self.slots[slot] {
                EMPTY => {
                    self.used += 1;
                    break;
                }
                DELETED => break,
                _ => slot = self.next(slot),
            }
        }
        self.slots[slot] = offset;
        self.live += 1;
    }

    /// Forgets the entry of `hash` at `offset`. Returns false if the chain
    /// does not hold that offset.
    ///
    /// A removed slot becomes a deleted marker, since later slots of the
    /// chain may belong to names that probed past it; but when the slot
    /// after it is empty, no chain passes through, and it and the deleted
    /// markers just before it become empty again (§3.2, and the "more
    /// aggressive cleaning" of §3.5).
    pub fn remove(&mut self, hash: u64, offset: u32) -> bool {
        let Some(found) = self.candidates(hash).find(|&(_, o)| o == offset).map(|(slot, _)| slot) else {
            return false;
        };
        self.slots[found] = DELETED;
        self.live -= 1;
        if self.slots[self.next(found)] == EMPTY {
            let mut slot = found;
            while self.slots[slot] == DELETED {
                self.slots[slot] = EMPTY;
                self.used -= 1;
                slot = if slot == 0 { self.slots.len() - 1 } else { slot - 1 };
            }
        }
        true
    }

    /// Slots not empty (live and deleted), for tests.
    #[cfg(test)]
    pub fn used(&self) -> usize {
        self.used
    }
}

/// The walk along one chain: see [`LookupTable::candidates`].
pub(super) struct Candidates<'t> {
    table: &'t LookupTable,
    slot: usize,
    steps: usize,
}

impl Iterator for Candidates<'_> {
    type Item = (usize, u32);

    fn next(&mut self) -> Option<(usize, u32)> {
        // Bounded by the table's length even if no slot were empty.
        while self.steps < self.table.slots.len() {
            let slot = self.slot;
            self.slot = self.table.next(slot);
            self.steps += 1;
            match self.table.slots[slot] {
                EMPTY => {
                    self.steps = self.table.slots.len();
                    return None;
                }
                DELETED => continue,
                offset => return Some((slot, offset)),
            }
        }
        None
    }
}
