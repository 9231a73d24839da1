//! Where a new entry fits, without a scan (2002 paper §3.3, Figure 7): the
//! free bytes of every 512-byte chunk (`dh_blkfree`), and for every size the
//! first chunk with exactly that much room (`dh_firstfree`).
//!
//! "Free" here is the largest record a new entry could take in the chunk
//! ([`crate::format::dirent::Entry::free_bytes`] maximised over the chunk),
//! not the chunk's total slack: entries never move, so scattered slack
//! cannot be gathered into one record as FFS does.

use crate::format::dirent::{entry_size, ENTRY_BYTES};
use crate::format::NAME_MAX;

/// Free space is counted in 4-byte units (entries are 4-aligned): a chunk
/// holds at most 504 / 4 = 126 of them, so one byte a chunk.
const UNIT: usize = 4;
/// Size classes: 0 ..= the largest entry's units (264 / 4 = 66); the last
/// class holds every chunk with room for any entry (§3.3).
const CLASSES: usize = entry_size(NAME_MAX) / UNIT + 1;
/// No chunk of that class.
const NONE: u32 = u32::MAX;

/// The free-space summary of one directory.
///
/// Invariant: `units.len()` is the directory's chunk count (at most
/// `capacity`); `first[k]` is the lowest chunk whose class is `k`, or
/// [`NONE`] if no chunk has class `k`; `count[k]` is how many chunks have
/// class `k`, so that the last chunk of a class leaving it costs no search
/// for the next.
pub(super) struct FreeSpace {
    units: Vec<u8>,
    first: [u32; CLASSES],
    count: [u32; CLASSES],
    capacity: usize,
}

fn class(units: u8) -> usize {
    (units as usize).min(CLASSES - 1)
}

impl FreeSpace {
    /// An empty summary with room for `capacity` chunks.
    pub fn new(capacity: usize) -> FreeSpace {
        FreeSpace {
            units: Vec::with_capacity(capacity),
            first: [NONE; CLASSES],
            count: [0; CLASSES],
            capacity,
        }
    }

    /// Chunks summarised.
    pub fn chunks(&self) -> usize {
        self.units.len()
    }

    /// Chunks the summary was built to hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The free bytes of chunk `c`.
    pub fn free_bytes(&self, c: usize) -> Option<usize> {
        self.units.get(c).map(|&u| u as usize * UNIT)
    }

    /// Appends a chunk with `free` bytes of room. Returns false, changing
    /// nothing, if the summary is full (the directory grew past what it was
    /// built for).
    pub fn push(&mut self, free: usize) -> bool {
        if self.units.len() >= self.capacity {
            return false;
        }
        let units = (free.min(ENTRY_BYTES) / UNIT) as u8;
        let k = class(units);
        if self.first[k] == NONE {
            self.first[k] = self.units.len() as u32;
        }
        self.count[k] += 1;
        self.units.push(units);
        true
    }

    /// Chunk `c` now has `free` bytes of room.
    pub fn set(&mut self, c: usize, free: usize) {
        let Some(&old) = self.units.get(c) else { return };
        let new = (free.min(ENTRY_BYTES) / UNIT) as u8;
        self.units[c] = new;
        let (was, now) = (class(old), class(new));
        if was == now {
            return;
        }
        self.count[was] -= 1;
        self.count[now] += 1;
        if self.first[was] == c as u32 {
            self.first[was] = if self.count[was] == 0 {
                NONE
            } else {
                let later = self.units[c + 1..].iter().position(|&u| class(u) == was);
                later.map_or(NONE, |i| (c + 1 + i) as u32)
            };
        }
        if self.first[now] == NONE || self.first[now] > c as u32 {
            self.first[now] = c as u32;
        }
    }

    /// The chunk a new entry of `need` bytes goes into: the first chunk of
    /// the smallest class with room for it (§3.3), or `None`: the directory
    /// must grow.
    pub fn find(&self, need: usize) -> Option<usize> {
        let from = need.div_ceil(UNIT).min(CLASSES - 1);
        self.first[from..].iter().find(|&&c| c != NONE).map(|&c| c as usize)
    }

    /// The chunk `find` would choose among those `usable` accepts (a
    /// chunk the storage manager holds is not): a scan of the summary,
    /// for when `find`'s choice is refused.
    pub fn find_where(&self, need: usize, mut usable: impl FnMut(usize) -> bool) -> Option<usize> {
        let from = need.div_ceil(UNIT).min(CLASSES - 1);
        let mut best: Option<(usize, usize)> = None;
        for (c, &u) in self.units.iter().enumerate() {
            let k = class(u);
            if k < from || best.is_some_and(|(b, _)| k >= b) || !usable(c) {
                continue;
            }
            best = Some((k, c));
            if k == from {
                break;
            }
        }
        best.map(|(_, c)| c)
    }

    /// Forgets the chunks from `chunks` on (the directory was truncated).
    pub fn truncate(&mut self, chunks: usize) {
        for &u in self.units.get(chunks..).unwrap_or(&[]) {
            self.count[class(u)] -= 1;
        }
        self.units.truncate(chunks);
        for first in &mut self.first {
            // No chunk below `first` has its class, so none is left.
            if *first != NONE && *first as usize >= chunks {
                *first = NONE;
            }
        }
    }
}
