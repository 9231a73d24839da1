//! Dirhash (Dowse and Malone 2002, §2.4 and §3): an in-memory summary of a
//! large directory, built from its blocks on first use and kept in step by
//! every change, that turns name lookup and the search for free space from
//! a scan of the directory into a few probes.
//!
//! Parts: `table` (the lookup table of offsets, §3.2), `free` (the
//! free-space summary, §3.3), `io` (building a hash from the blocks,
//! answering a lookup by confirming candidates in the blocks, and the
//! checking mode), and this file: the hashes of all directories under one
//! memory budget (§3.4), the mount options and the counters.
//!
//! It relies on `format::dirent` for the entry format and on `ufs::dir`,
//! which owns the directory blocks and falls back to a linear scan whenever
//! dirhash has no answer.

mod free;
mod io;
mod table;
pub(crate) use io::lookup_cached;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::format::dirent::{entry_size, DIRBLKSIZ};
use crate::format::Ino;
use free::FreeSpace;
use table::{LookupTable, MAX_OFFSET_BYTES};

/// Dirhash's settings, the mount options `dirhash`, `dirhash_maxmem`,
/// `dirhash_minsize` and `dirhash_check` (the paper's sysctls, §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirhashOptions {
    /// Whether directories are hashed at all (`dirhash=on|off`). Off, every
    /// lookup and create scans the directory, as FFS did before dirhash.
    pub enabled: bool,
    /// Memory all hashes together may use, in bytes (default 2 MiB, §3).
    pub max_memory: u64,
    /// Directories smaller than this many bytes are not hashed (default
    /// 2.5 KiB, §3). A directory is never smaller than one block.
    pub min_dir_size: u64,
    /// Cross-check every answer of a hash against a scan of the directory
    /// blocks (FreeBSD's `ufsdirhash_checkblock`); a disagreement is an
    /// error (EIO). Slow: every lookup scans; for tests and debugging.
    pub check: bool,
}

impl Default for DirhashOptions {
    fn default() -> DirhashOptions {
        DirhashOptions { enabled: true, max_memory: 2 << 20, min_dir_size: 2560, check: false }
    }
}

/// Dirhash's counters since mount, and the memory its hashes hold now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirhashStats {
    /// Lookups a hash answered (found or absent) without a scan.
    pub hits: u64,
    /// Lookups no hash could answer, answered by a linear scan.
    pub misses: u64,
    /// Hashes built from a directory's blocks (rebuilds included).
    pub builds: u64,
    /// Hashes thrown away to make room for another under the memory budget.
    pub drops: u64,
    /// Hashes thrown away to be built again at another size: they were about
    /// to pass 75% full, or the directory grew past or shrank far below the
    /// size they were built for (§3.4).
    pub rebuilds: u64,
    /// Builds not done because the budget had no room (a hash that would
    /// not fit alone, or others too valuable to drop yet).
    pub refused: u64,
    /// Empty blocks cut from the end of directories.
    pub truncated_blocks: u64,
    /// Directory blocks read by lookups, creates, removes and hash builds
    /// (not by `readdir`): the work a hash saves.
    pub blocks_read: u64,
    /// Directories hashed now.
    pub hashes: u64,
    /// Bytes the hashes hold now.
    pub memory: u64,
    /// The most bytes the hashes held at once.
    pub peak_memory: u64,
}

/// What a hash says about a name: the entry, no such entry, or "I don't
/// know" (no hash, dirhash off, over budget, or the hash was found stale
/// and dropped). The directory blocks are the truth: on `Unknown` the
/// caller scans them, and in checking mode every other answer is compared
/// with a scan too (STYLE.md item 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer<T> {
    Found(T),
    Absent,
    Unknown,
}

/// Points a new hash starts with, so that it is not the first victim the
/// moment it is built.
const INITIAL_SCORE: u32 = 8;
/// Most points a hash can gather: how many refused builds the most used
/// hash withstands before it is dropped.
const MAX_SCORE: u32 = 64;
/// Linear-scan starting points remembered (one per directory, direct-mapped
/// by inode number: a hint lost to another directory costs one scan from
/// the start).
const SCAN_HINTS: usize = 64;

/// One directory's hash.
///
/// Invariant, while it is in [`Dirhash`]: `table` holds the offset of
/// every live entry of the directory's blocks and nothing else, and `free`
/// has one value per chunk of the directory, each the chunk's largest free
/// record. Every change to the blocks updates both, or drops the hash.
///
/// What a lookup changes (the sequential hint, the score, the recency) is
/// atomic, so that lookups holding the file system shared
/// ([`lookup_cached`]) keep them as exclusive ones do.
pub(super) struct DirHash {
    table: LookupTable,
    free: FreeSpace,
    /// The offset of the entry after the last one found: tried first by the
    /// next lookup (§3.2's sequential optimisation); [`NO_HINT`] for none.
    seq_next: AtomicU32,
    score: AtomicU32,
    last_used: AtomicU64,
    memory: u64,
}

/// `seq_next` of a hash with no sequential hint. No entry starts there: a
/// hashed directory is smaller than 4 GiB ([`MAX_OFFSET_BYTES`]).
const NO_HINT: u32 = u32::MAX;

impl DirHash {
    /// The offset the next lookup tries first.
    fn seq_next(&self) -> Option<u32> {
        Some(self.seq_next.load(Relaxed)).filter(|&o| o != NO_HINT)
    }

    /// Sets the offset the next lookup tries first.
    fn set_seq_next(&self, next: Option<u32>) {
        self.seq_next.store(next.unwrap_or(NO_HINT), Relaxed);
    }
}

/// A lookup's use of `hash`, by the `clock` of all lookups: its recency,
/// and a point towards its score.
fn note_use(clock: &AtomicU64, hash: &DirHash) {
    hash.last_used.store(clock.fetch_add(1, Relaxed) + 1, Relaxed);
    let _ = hash.score.fetch_update(Relaxed, Relaxed, |score| Some((score + 1).min(MAX_SCORE)));
}

/// The sizes of a hash to build for a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Plan {
    slots: usize,
    chunk_capacity: usize,
}

impl Plan {
    /// The hash for a directory of `size` bytes in `block_size` blocks
    /// (§3.4): lookup slots for 150% of the most entries the directory
    /// could hold (about one slot per 8 bytes), and free-space room for 150%
    /// of its chunks, at least one more block.
    fn for_size(size: u64, block_size: u32) -> Plan {
        let chunks = (size / DIRBLKSIZ as u64) as usize;
        let per_block = (block_size as usize / DIRBLKSIZ).max(1);
        let most_entries = size as usize / entry_size(1);
        Plan {
            slots: (most_entries * 3 / 2).max(16),
            chunk_capacity: (chunks * 3 / 2).max(chunks + per_block),
        }
    }

    fn memory(&self) -> u64 {
        let fixed = std::mem::size_of::<DirHash>() + std::mem::size_of::<Ino>() + 16;
        (self.slots * 4 + self.chunk_capacity + fixed + 66 * 4) as u64
    }

    /// A new, empty hash of these sizes.
    fn empty(&self) -> DirHash {
        DirHash {
            table: LookupTable::new(self.slots, (self.chunk_capacity * DIRBLKSIZ) as u64),
            free: FreeSpace::new(self.chunk_capacity),
            seq_next: AtomicU32::new(NO_HINT),
            score: AtomicU32::new(INITIAL_SCORE),
            last_used: AtomicU64::new(0),
            memory: 0,
        }
    }
}

impl DirHash {
    /// Whether the directory has shrunk so far below what the hash was built
    /// for that it wastes memory: its free-space summary less than one
    /// eighth used (§3.4, about 20% of the size at build).
    pub fn too_big_for(&self, chunks: usize) -> bool {
        chunks * 8 < self.free.capacity()
    }
}

/// The hashes of all directories, under one memory budget.
///
/// Lifecycle of a directory's hash: absent → built on a lookup or change
/// of a directory of at least `min_dir_size` bytes, if the budget has room
/// (`plan`, then `insert`) → kept in step by every change → dropped when it
/// no longer fits the directory (`discard_for_rebuild`), when the budget
/// needs its memory, when the directory is freed (`forget`), after any
/// error while changing the directory, or when dirhash is switched off.
/// Callers hold the file system's lock: exclusively, except for lookups
/// by [`lookup_cached`], which hold it shared and change only atomics.
pub(crate) struct Dirhash {
    options: DirhashOptions,
    hashes: HashMap<Ino, DirHash>,
    memory: u64,
    /// Lookups and builds so far: the recency of each hash's last use.
    clock: AtomicU64,
    stats: DirhashStats,
    /// Counters of lookups made holding the file system shared, added to
    /// `stats` when read.
    shared_hits: AtomicU64,
    shared_blocks_read: AtomicU64,
    scan_hints: [(Ino, u64); SCAN_HINTS],
    /// What the last scan that missed saw: the directory, the entry size
    /// it could take, and the first chunk with room for that (`None`: the
    /// directory must grow). Any change of a directory forgets it.
    create_hint: Option<(Ino, usize, Option<usize>)>,
}

impl Default for Dirhash {
    fn default() -> Dirhash {
        Dirhash {
            options: DirhashOptions::default(),
            hashes: HashMap::new(),
            memory: 0,
            clock: AtomicU64::new(0),
            stats: DirhashStats::default(),
            shared_hits: AtomicU64::new(0),
            shared_blocks_read: AtomicU64::new(0),
            scan_hints: [(0, 0); SCAN_HINTS],
            create_hint: None,
        }
    }
}

impl std::fmt::Debug for Dirhash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dirhash").field("options", &self.options).field("stats", &self.stats()).finish()
    }
}

impl Dirhash {
    /// The settings.
    pub fn options(&self) -> DirhashOptions {
        self.options
    }

    /// Changes the settings: switching off drops every hash, a smaller
    /// budget drops the least recently used until the rest fit.
    pub fn set_options(&mut self, options: DirhashOptions) {
        self.options = options;
        if !options.enabled {
            self.clear();
        }
        while self.memory > options.max_memory {
            let Some(victim) = self.least_recently_used() else { break };
            self.remove(victim);
            self.stats.drops += 1;
        }
    }

    /// The counters, with the memory in use now.
    pub fn stats(&self) -> DirhashStats {
        DirhashStats {
            hashes: self.hashes.len() as u64,
            memory: self.memory,
            hits: self.stats.hits + self.shared_hits.load(Relaxed),
            blocks_read: self.stats.blocks_read + self.shared_blocks_read.load(Relaxed),
            ..self.stats
        }
    }

    /// Forgets the hash of `dir` (changed behind its back, or freed).
    pub fn forget(&mut self, dir: Ino) {
        self.remove(dir);
        // Only a hint about `dir` itself: a create forgets the new inode's
        // stale hash between its lookup and its insertion, and must keep
        // what the lookup saw of the parent.
        if self.create_hint.is_some_and(|(d, _, _)| d == dir) {
            self.create_hint = None;
        }
        let hint = &mut self.scan_hints[dir as usize % SCAN_HINTS];
        if hint.0 == dir {
            *hint = (0, 0);
        }
    }

    /// Forgets every hash.
    pub fn clear(&mut self) {
        self.create_hint = None;
        self.hashes.clear();
        self.memory = 0;
    }

    /// Whether checking mode is on.
    pub fn checking(&self) -> bool {
        self.options.check
    }

    fn remove(&mut self, dir: Ino) -> Option<DirHash> {
        let hash = self.hashes.remove(&dir)?;
        self.memory -= hash.memory;
        Some(hash)
    }

    fn least_recently_used(&self) -> Option<Ino> {
        self.hashes.iter().min_by_key(|(_, h)| h.last_used.load(Relaxed)).map(|(&dir, _)| dir)
    }

    /// The hash of `dir` for a lookup: the use counts towards its score.
    pub(super) fn used(&mut self, dir: Ino) -> Option<&mut DirHash> {
        let hash = self.hashes.get_mut(&dir)?;
        note_use(&self.clock, hash);
        Some(hash)
    }

    /// The hash of `dir`, for a lookup holding the file system shared,
    /// which notes its use ([`Dirhash::note_use`]) once it has answered.
    pub(super) fn peek(&self, dir: Ino) -> Option<&DirHash> {
        self.hashes.get(&dir)
    }

    /// A lookup's use of `hash`: its recency, and a point towards its score.
    pub(super) fn note_use(&self, hash: &DirHash) {
        note_use(&self.clock, hash);
    }

    /// Counts a lookup answered by a hash, holding the file system shared,
    /// that read `blocks` directory chunks.
    pub(super) fn count_shared_hit(&self, blocks: u64) {
        self.shared_hits.fetch_add(1, Relaxed);
        self.shared_blocks_read.fetch_add(blocks, Relaxed);
    }

    /// The hash of `dir`, if there is one, to keep in step with a change.
    pub(super) fn get_mut(&mut self, dir: Ino) -> Option<&mut DirHash> {
        self.hashes.get_mut(&dir)
    }

    /// The offset the next lookup in `dir` tries first, for tests.
    #[cfg(test)]
    pub(crate) fn sequential_next(&self, dir: Ino) -> Option<u32> {
        self.hashes.get(&dir)?.seq_next()
    }

    /// Whether `dir` has a hash.
    pub fn has(&self, dir: Ino) -> bool {
        self.hashes.contains_key(&dir)
    }

    /// Whether a hash may be built for a directory of `size` bytes, and of
    /// what sizes; makes room in the budget if it may. In order:
    ///
    /// 1. dirhash off: no;
    /// 2. smaller than `min_dir_size`: no, a scan of a small directory is
    ///    cheap (§3, §3.2 on the 2.5 KB cut-off);
    /// 3. 4 GiB or more: no, its offsets do not fit a slot;
    /// 4. a hash larger than the whole budget: no (refused);
    /// 5. room in the budget: yes;
    /// 6. otherwise the least recently used hash loses a point; at zero it
    ///    is dropped and step 5 is tried again, while it has points left the
    ///    build is refused. A hash thus survives as many refused builds as
    ///    it has been used, up to a cap: the paper's hybrid of LRU and LFU,
    ///    which keeps a working set larger than the budget from rebuilding
    ///    hashes on every lookup (§3.4).
    pub(super) fn plan(&mut self, size: u64, block_size: u32) -> Option<Plan> {
        if !self.options.enabled || size < self.options.min_dir_size || size >= MAX_OFFSET_BYTES {
            return None;
        }
        let plan = Plan::for_size(size, block_size);
        let need = plan.memory();
        if need > self.options.max_memory {
            self.stats.refused += 1;
            return None;
        }
        while self.memory + need > self.options.max_memory {
            let victim = self.least_recently_used()?;
            let score = self.hashes.get_mut(&victim)?.score.get_mut();
            *score = score.saturating_sub(1);
            if *score > 0 {
                self.stats.refused += 1;
                return None;
            }
            self.remove(victim);
            self.stats.drops += 1;
        }
        Some(plan)
    }

    /// Keeps `hash`, just built for `dir` by `plan`.
    pub(super) fn insert(&mut self, dir: Ino, plan: Plan, mut hash: DirHash) {
        self.remove(dir);
        *hash.last_used.get_mut() = *self.clock.get_mut() + 1;
        *self.clock.get_mut() += 1;
        hash.memory = plan.memory();
        self.memory += hash.memory;
        self.stats.peak_memory = self.stats.peak_memory.max(self.memory);
        self.stats.builds += 1;
        self.hashes.insert(dir, hash);
    }

    /// Drops the hash of `dir` because it no longer fits the directory; the
    /// next lookup builds one of the right size.
    pub(super) fn discard_for_rebuild(&mut self, dir: Ino) {
        if self.remove(dir).is_some() {
            self.stats.rebuilds += 1;
        }
    }

    /// Entry `name` was added to `dir` at `offset`, in chunk `chunk`, which
    /// now has `free` bytes of room. Drops the hash if it would pass 75%
    /// full (§3.4).
    pub(super) fn added(&mut self, dir: Ino, name: &[u8], offset: u64, chunk: usize, free: usize) {
        let Some(hash) = self.hashes.get_mut(&dir) else { return };
        if hash.table.would_pass_three_quarters() {
            self.discard_for_rebuild(dir);
            return;
        }
        let h = hash.table.hash(name);
        if !hash.table.insert(h, offset as u32) {
            self.discard_for_rebuild(dir);
            return;
        }
        hash.free.set(chunk, free);
    }

    /// Entry `name` at `offset` left `dir`; its chunk `chunk` now has `free`
    /// bytes of room. Returns false if the hash did not hold that entry (it
    /// is then dropped: it was stale).
    pub(super) fn removed(&mut self, dir: Ino, name: &[u8], offset: u64, chunk: usize, free: usize) -> bool {
        let Some(hash) = self.hashes.get_mut(&dir) else { return true };
        let h = hash.table.hash(name);
        let held = hash.table.remove(h, offset as u32);
        if held {
            hash.free.set(chunk, free);
            if hash.seq_next() == Some(offset as u32) {
                hash.set_seq_next(None);
            }
        } else {
            self.remove(dir);
        }
        held
    }

    /// The chunk of `dir` a new entry of `need` bytes goes into, by its
    /// free-space summary (§3.3); `None` if no chunk has room (or there is
    /// no hash).
    pub(super) fn free_chunk(&self, dir: Ino, need: usize) -> Option<usize> {
        self.hashes.get(&dir)?.free.find(need)
    }

    /// As `free_chunk`, among the chunks `usable` accepts.
    pub(super) fn free_chunk_where(
        &self,
        dir: Ino,
        need: usize,
        usable: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        self.hashes.get(&dir)?.free.find_where(need, usable)
    }

    /// The chunks the hash of `dir` summarises, if it has one.
    pub(super) fn chunks(&self, dir: Ino) -> Option<usize> {
        Some(self.hashes.get(&dir)?.free.chunks())
    }

    /// The live entries the hash of `dir` holds, if it has one.
    pub(super) fn live_entries(&self, dir: Ino) -> Option<usize> {
        Some(self.hashes.get(&dir)?.table.live())
    }

    /// `dir` grew by chunks with these free bytes. Drops the hash if the
    /// directory grew past what it was built for (§3.4).
    pub(super) fn grew(&mut self, dir: Ino, free: impl IntoIterator<Item = usize>) {
        let Some(hash) = self.hashes.get_mut(&dir) else { return };
        for f in free {
            if !hash.free.push(f) {
                self.discard_for_rebuild(dir);
                return;
            }
        }
    }

    /// `dir` was cut to `chunks` chunks. Drops the hash if the directory
    /// shrank far below what it was built for (§3.4).
    pub(super) fn truncated(&mut self, dir: Ino, chunks: usize) {
        let Some(hash) = self.hashes.get_mut(&dir) else { return };
        hash.free.truncate(chunks);
        if hash.too_big_for(chunks) {
            self.discard_for_rebuild(dir);
        }
    }

    /// Counts a lookup answered by a hash.
    pub(super) fn count_hit(&mut self) {
        self.stats.hits += 1;
    }

    /// Counts a lookup answered by a scan.
    pub(super) fn count_miss(&mut self) {
        self.stats.misses += 1;
    }

    /// Counts directory blocks read.
    pub(crate) fn count_blocks_read(&mut self, blocks: u64) {
        self.stats.blocks_read += blocks;
    }

    /// Counts empty blocks cut from the end of a directory.
    pub(crate) fn count_truncated(&mut self, blocks: u64) {
        self.stats.truncated_blocks += blocks;
    }

    /// Where a linear scan of `dir` should start: the offset of the last
    /// entry a scan found there (FFS's `i_diroff`), so that names looked up
    /// in directory order cost one block each (§3.2).
    pub(crate) fn scan_hint(&self, dir: Ino) -> u64 {
        match self.scan_hints[dir as usize % SCAN_HINTS] {
            (ino, offset) if ino == dir => offset,
            _ => 0,
        }
    }

    /// Remembers that a scan of `dir` did not find a name of `need` bytes
    /// and saw `room` as the first chunk with room for it.
    pub(crate) fn set_create_hint(&mut self, dir: Ino, need: usize, room: Option<usize>) {
        self.create_hint = Some((dir, need, room));
    }

    /// Takes what the last missed scan saw, if it was of `dir` for an entry
    /// of `need` bytes: `Some(room)`; `None` if there is no such hint (the
    /// hint is gone either way).
    pub(crate) fn take_create_hint(&mut self, dir: Ino, need: usize) -> Option<Option<usize>> {
        match self.create_hint.take() {
            Some((d, n, room)) if d == dir && n == need => Some(room),
            _ => None,
        }
    }

    /// Remembers where a scan of `dir` found its entry.
    pub(crate) fn set_scan_hint(&mut self, dir: Ino, offset: u64) {
        self.scan_hints[dir as usize % SCAN_HINTS] = (dir, offset);
    }
}
