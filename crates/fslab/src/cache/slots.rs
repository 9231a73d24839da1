//! The cache's buffers by name: a hash table of small entries, each the
//! place of a buffer in a dense vector of the buffers themselves.
//!
//! Why not the buffers in the table itself: a table whose entries come
//! and go (an insert and an eviction for every block read or written in a
//! full cache) fills with tombstones, and once they have used up its free
//! slots it rehashes in place only while it holds at most half its
//! capacity, and doubles otherwise. A cache's buffer count is a power of
//! two, just past half the capacity of the table that first holds it, so
//! the table doubled: 2^17 slots of 65 bytes for the 32,768 buffers of a
//! 256 MiB cache, 8 MiB (`docs/lab/analysis.md`, "Ten million files, a
//! third time"). Slots of a key and a place take 25 bytes, and the buffers
//! 64 each, once.

use super::{BlockKey, IntMap};

/// Values by block key; removing one moves the last into its place.
pub(super) struct Slots<V> {
    /// Where each key's value is in `items`.
    places: IntMap<BlockKey, usize>,
    /// The values with their keys, in no order.
    items: Vec<(BlockKey, V)>,
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Slots { places: IntMap::default(), items: Vec::new() }
    }
}

impl<V> Slots<V> {
    /// How many values there are.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// The value of `key`.
    pub(super) fn get(&self, key: &BlockKey) -> Option<&V> {
        let &at = self.places.get(key)?;
        self.items.get(at).map(|(_, v)| v)
    }

    /// The value of `key`, to change.
    pub(super) fn get_mut(&mut self, key: &BlockKey) -> Option<&mut V> {
        let &at = self.places.get(key)?;
        self.items.get_mut(at).map(|(_, v)| v)
    }

    /// Whether `key` has a value.
    pub(super) fn contains_key(&self, key: &BlockKey) -> bool {
        self.places.contains_key(key)
    }

    /// Sets the value of `key`; returns the one it replaces.
    pub(super) fn insert(&mut self, key: BlockKey, value: V) -> Option<V> {
        if let Some(&at) = self.places.get(&key) {
            if let Some((_, old)) = self.items.get_mut(at) {
                return Some(std::mem::replace(old, value));
            }
        }
        self.places.insert(key, self.items.len());
        self.items.push((key, value));
        None
    }

    /// Takes the value of `key` out.
    pub(super) fn remove(&mut self, key: &BlockKey) -> Option<V> {
        let at = self.places.remove(key)?;
        if at >= self.items.len() {
            return None;
        }
        let (_, value) = self.items.swap_remove(at);
        if let Some(&(moved, _)) = self.items.get(at) {
            self.places.insert(moved, at);
        }
        // A cache emptied (a large file removed) lets its memory go once
        // three quarters of it stand empty.
        if self.items.capacity() > 1024 && self.items.len() < self.items.capacity() / 4 {
            self.items.shrink_to(self.items.len() * 2);
            self.places.shrink_to(self.items.len() * 2);
        }
        Some(value)
    }

    /// Every key with its value, in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&BlockKey, &V)> {
        self.items.iter().map(|(k, v)| (k, v))
    }

    /// Bytes the table and the vector hold.
    pub(super) fn bytes(&self) -> u64 {
        crate::memory::hash_map_bytes(&self.places)
            + crate::memory::vec_bytes(&self.items, self.items.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Inserts, replacements and removals in a scrambled order against a
    /// plain map: every value stays found under its key after the moves
    /// removal makes.
    #[test]
    fn values_stay_under_their_keys_through_removals() {
        let mut slots: Slots<u64> = Slots::default();
        let mut model: HashMap<BlockKey, u64> = HashMap::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for step in 0..20_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = ((state % 7) + 1, (state >> 8) as i64 % 500);
            if state.is_multiple_of(3) {
                assert_eq!(slots.remove(&key), model.remove(&key), "step {step}");
            } else {
                assert_eq!(slots.insert(key, step), model.insert(key, step), "step {step}");
            }
            assert_eq!(slots.len(), model.len());
        }
        for (key, value) in &model {
            assert_eq!(slots.get(key), Some(value));
        }
        let mut listed: Vec<_> = slots.iter().map(|(k, v)| (*k, *v)).collect();
        let mut expected: Vec<_> = model.into_iter().collect();
        listed.sort_unstable();
        expected.sort_unstable();
        assert_eq!(listed, expected);
    }

    #[test]
    fn an_emptied_set_lets_its_memory_go() {
        let mut slots: Slots<[u64; 8]> = Slots::default();
        for i in 0..10_000 {
            slots.insert((1, i), [0; 8]);
        }
        let full = slots.bytes();
        for i in 0..9_990 {
            slots.remove(&(1, i));
        }
        assert!(slots.bytes() < full / 8, "{} of {full} bytes kept", slots.bytes());
        assert_eq!(slots.get(&(1, 9_995)), Some(&[0; 8]));
    }
}
