//! The name-lookup table of one directory (2002 paper §3.2): open
//! addressing with linear probing over 32-bit entry *offsets*. The table
//! never holds a name: a slot only says "the entry you want may be at this
//! offset", and the caller confirms it by reading the directory block and
//! comparing the name there.
//!
//! A slot is the entry's offset / 4 (offsets are 4-aligned) in its low
//! `offset_bits` bits; the high bits a directory of the table's size leaves
//! unused hold bits of the name's hash (a *tag*), so that a candidate whose
//! tag differs is skipped without reading its block. In a 100,000-entry
//! directory that is 12 bits: a lookup for an absent name reads a block for
//! one chain entry in 4,096 instead of for every one.
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

/// The largest directory whose offsets fit a slot: a slot holds offset / 4
/// in at most 30 bits, which never reach [`EMPTY`] or [`DELETED`].
pub(super) const MAX_OFFSET_BYTES: u64 = 1 << 32;

/// The lookup table. See the module comment for its invariant.
pub(super) struct LookupTable {
    slots: Vec<u32>,
    used: usize,
    live: usize,
    /// Bits of a slot holding offset / 4; the rest hold the tag.
    offset_bits: u32,
    /// This table's secret hash key (the per-table random value of §3.5).
    keys: RandomState,
}

impl LookupTable {
    /// An empty table of `slots` slots (at least 2) for offsets below
    /// `max_offset` (at most [`MAX_OFFSET_BYTES`]).
    pub fn new(slots: usize, max_offset: u64) -> LookupTable {
        // The offset field never reaches its two highest values, which in a
        // slot with an all-ones tag would read as EMPTY or DELETED.
        let largest = max_offset.min(MAX_OFFSET_BYTES) / 4 + 2;
        let offset_bits = (u64::BITS - largest.leading_zeros()).min(u32::BITS);
        LookupTable {
            slots: vec![EMPTY; slots.max(2)],
            used: 0,
            live: 0,
            offset_bits,
            keys: RandomState::new(),
        }
    }

    /// The slot value of `offset` under `hash`; `None` if it does not fit.
    fn encode(&self, hash: u64, offset: u32) -> Option<u32> {
        let field = offset / 4;
        if self.offset_bits < u32::BITS && field >= (1 << self.offset_bits) - 2 {
            return None;
        }
        Some(self.tag(hash) | field)
    }

    /// The bits of `hash` a slot keeps above its offset field.
    fn tag(&self, hash: u64) -> u32 {
        (hash as u32).checked_shl(self.offset_bits).unwrap_or(0)
    }

    /// The offset a live slot holds.
    fn decode(&self, slot: u32) -> u32 {
        match 1u32.checked_shl(self.offset_bits) {
            Some(limit) => (slot & (limit - 1)) * 4,
            None => slot * 4,
        }
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

    /// The live offsets on the chain of `hash` whose tag is that of
    /// `hash`, in probe order, each with its slot: the candidates for a
    /// name with that hash.
    pub fn candidates(&self, hash: u64) -> Candidates<'_> {
        let mask = self.tag(u64::from(u32::MAX));
        Candidates { table: self, slot: self.home(hash), steps: 0, tag: self.tag(hash), mask }
    }

    /// The candidates of `hash` ([`LookupTable::candidates`]), with
    /// `first`, if it is among them, moved to the front: the sequential
    /// optimisation of §3.2 consults the entry after the last one found
    /// before any other. Walks the chain once more to place `first`, which
    /// reads no block and allocates nothing.
    pub fn ordered_candidates(&self, hash: u64, first: Option<u32>) -> impl Iterator<Item = u32> + '_ {
        let first = first.filter(|&f| self.candidates(hash).any(|(_, o)| o == f));
        first.into_iter().chain(self.candidates(hash).map(|(_, o)| o).filter(move |&o| Some(o) != first))
    }

    /// Slots walked to the end of the chain of `hash`, tags ignored.
    #[cfg(test)]
    pub fn chain_length(&self, hash: u64) -> usize {
        let mut slot = self.home(hash);
        let mut n = 0;
        while self.slots[slot] != EMPTY && n < self.slots.len() {
            slot = self.next(slot);
            n += 1;
        }
        n
    }

    /// Records that the entry of `hash` lives at `offset`. The name must not
    /// be in the table already. Takes the first deleted or empty slot of
    /// the chain. Returns false, changing nothing, if `offset` is beyond
    /// what the table was made for.
    pub fn insert(&mut self, hash: u64, offset: u32) -> bool {
        let Some(value) = self.encode(hash, offset) else { return false };
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
        self.slots[slot] = value;
        self.live += 1;
        true
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
    tag: u32,
    mask: u32,
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
                value if value & self.mask == self.tag => return Some((slot, self.table.decode(value))),
                _ => continue,
            }
        }
        None
    }
}
