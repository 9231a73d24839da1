//! What a mounted file system's memory is spent on: each structure that
//! grows with the files it has seen, as `fslab stat` shows it.
//!
//! The figures are estimates from lengths and capacities (a hash table
//! holds its capacity's slots and a control byte each; a B-tree set about
//! one and a half times its entries), not an allocator's count: enough to see
//! which structure grows and whether it is bounded.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::mem::size_of;

/// One structure's share of the memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryUse {
    /// What it is, in a few words (`"inode cache"`).
    pub what: String,
    /// Entries it holds (buffers, inodes, names).
    pub entries: u64,
    /// Bytes it holds, estimated.
    pub bytes: u64,
}

impl MemoryUse {
    /// A structure of `entries` entries taking `bytes`.
    pub fn new(what: &str, entries: usize, bytes: u64) -> MemoryUse {
        MemoryUse { what: what.to_string(), entries: entries as u64, bytes }
    }
}

/// Bytes a hash map's table holds: every slot of its capacity and a
/// control byte each (hashbrown's layout).
pub fn hash_map_bytes<K, V, S>(map: &HashMap<K, V, S>) -> u64 {
    map.capacity() as u64 * (size_of::<(K, V)>() as u64 + 1)
}

/// Bytes a hash set's table holds.
pub fn hash_set_bytes<K, S>(set: &HashSet<K, S>) -> u64 {
    set.capacity() as u64 * (size_of::<K>() as u64 + 1)
}

/// Bytes a B-tree set holds.
pub fn btree_set_bytes<K>(set: &BTreeSet<K>) -> u64 {
    set.len() as u64 * size_of::<K>() as u64 * 3 / 2
}

/// Bytes a vector's buffer holds.
pub fn vec_bytes<T>(v: &[T], capacity: usize) -> u64 {
    capacity.max(v.len()) as u64 * size_of::<T>() as u64
}

/// The resident memory of this process (`VmRSS`), if the system says.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_map_counts_its_capacity_not_its_length() {
        let mut map: HashMap<u64, u64> = HashMap::new();
        map.extend((0..1000).map(|i| (i, i)));
        let full = hash_map_bytes(&map);
        assert!(full >= 1000 * 17, "{full}");
        map.clear();
        assert_eq!(hash_map_bytes(&map), full, "a cleared table keeps its slots");
        map.shrink_to_fit();
        assert_eq!(hash_map_bytes(&map), 0);
    }
}
