//! Dirhash against the directory blocks: building a hash by one pass over
//! the directory (§3.2), answering a lookup by confirming each candidate
//! offset in its block, and the checking mode that compares the hash with
//! the blocks (as FreeBSD's `ufsdirhash_checkblock`).

use super::{Answer, DirHash, Plan};
use crate::error::Location;
use crate::format::dirent::{entry_in_chunk, parse_chunk, Entry, DIRBLKSIZ, ENTRY_BYTES};
use crate::format::{Ino, Lbn};
use crate::storage::StorageManager;
use crate::ufs::dir::{max_free, Slot};
use crate::ufs::Ns;
use crate::{Error, Result};

/// Blocks read at once while building a hash.
const BUILD_BATCH: u64 = 32;

/// A disagreement between a hash and the blocks: in checking mode an
/// error, otherwise the hash is dropped and the blocks answer.
fn disagreement(dir: Ino, why: String) -> Error {
    Error::corrupt_at("directory hash", Location::Inode(dir), why)
}

/// The directory chunk last read by one lookup, so that candidates in the
/// same chunk cost one read. Only the chunk is copied, not its block: in a
/// large directory a random lookup's block is cold in the processor's
/// caches, and copying 4 KiB of it to confirm one entry was most of what a
/// lookup at 100,000 entries cost beyond one at 1,000.
struct LastChunk {
    offset: Option<u64>,
    /// Chunks read so far (for the `blocks_read` counter).
    reads: u64,
    data: [u8; DIRBLKSIZ],
}

/// What the entry at a candidate offset turned out to be.
enum AtOffset {
    /// The name looked for: the entry, and the offset of the entry after it.
    Match(Slot, u64),
    /// Another live entry.
    Other,
    /// No live entry starts there: the hash is stale.
    Stale,
}

impl<S: StorageManager> Ns<'_, S> {
    /// Makes sure `dir` has a hash if it may have one ([`super::Dirhash::plan`]).
    /// `Ok(false)`: it has none, and the caller scans.
    pub(crate) fn dirhash_ready(&mut self, dir: Ino) -> Result<bool> {
        if self.st.dirs.has(dir) {
            return Ok(true);
        }
        let size = self.s.vget(dir)?.attr.size;
        let Some(plan) = self.st.dirs.plan(size, self.s.block_size()) else { return Ok(false) };
        let hash = self.dirhash_build(dir, plan)?;
        self.st.dirs.insert(dir, plan, hash);
        Ok(true)
    }

    /// One pass over the blocks of `dir`: every live entry's offset into
    /// the table, every chunk's free space into the summary.
    fn dirhash_build(&mut self, dir: Ino, plan: Plan) -> Result<DirHash> {
        let blocks = self.dir_blocks(dir)?;
        let bs = self.s.block_size() as usize;
        let mut hash = plan.empty();
        let mut buf = vec![0u8; bs * BUILD_BATCH.min(blocks).max(1) as usize];
        let mut first = 0;
        while first < blocks {
            let n = BUILD_BATCH.min(blocks - first);
            let buf = &mut buf[..n as usize * bs];
            self.st.dirs.count_blocks_read(n);
            self.s.read_blocks(dir, first as Lbn, buf)?;
            for (i, chunk) in buf.chunks_exact(DIRBLKSIZ).enumerate() {
                let chunk_offset = first * bs as u64 + (i * DIRBLKSIZ) as u64;
                let entries = parse_chunk(chunk, dir, chunk_offset)?;
                if !hash.free.push(max_free(&entries)) {
                    return Err(disagreement(dir, "directory larger than the hash planned for it".into()));
                }
                for e in entries.iter().filter(|e| e.ino != 0) {
                    let h = hash.table.hash(e.name);
                    if !hash.table.insert(h, (chunk_offset + e.offset as u64) as u32) {
                        return Err(disagreement(dir, "an offset beyond what the hash planned for".into()));
                    }
                }
            }
            first += n;
        }
        Ok(hash)
    }

    /// Looks `name` up in the hash of `dir`: each candidate offset of its
    /// chain is read and compared, the one after the last entry found first
    /// (§3.2's sequential optimisation). `Unknown` if there is no hash, or
    /// the hash turned out stale (it is then dropped; in checking mode that
    /// is an error).
    pub(crate) fn dirhash_lookup(&mut self, dir: Ino, name: &[u8]) -> Result<Answer<Slot>> {
        if !self.dirhash_ready(dir)? {
            return Ok(Answer::Unknown);
        }
        let storage = &mut *self.s;
        let dirs = &mut self.st.dirs;
        let Some(hash) = dirs.used(dir) else { return Ok(Answer::Unknown) };
        let h = hash.table.hash(name);
        let mut last = LastChunk { offset: None, reads: 0, data: [0u8; DIRBLKSIZ] };
        // Ok(answer), or Err(the offset where no entry starts: stale).
        let mut answer = Ok(Answer::Absent);
        let mut failure = None;
        for offset in hash.table.ordered_candidates(h, hash.seq_next()) {
            match entry_at(storage, &mut last, dir, u64::from(offset), name) {
                Ok(AtOffset::Match(slot, next)) => {
                    hash.set_seq_next(u32::try_from(next).ok());
                    answer = Ok(Answer::Found(slot));
                    break;
                }
                Ok(AtOffset::Other) => {}
                Ok(AtOffset::Stale) => {
                    answer = Err(offset);
                    break;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        dirs.count_blocks_read(last.reads);
        if let Some(e) = failure {
            return Err(e);
        }
        answer.or_else(|offset| {
            dirs.forget(dir);
            if dirs.checking() {
                return Err(disagreement(dir, format!("no entry at offset {offset}")));
            }
            Ok(Answer::Unknown)
        })
    }

    /// Checking mode: the entries of chunk `c` of `dir`, just read, against
    /// its hash: every live entry is in the table at its offset, and the
    /// chunk's free space is what the summary says. An error if not.
    pub(crate) fn dirhash_check_chunk(&mut self, dir: Ino, c: usize, entries: &[Entry<'_>]) -> Result<()> {
        if !self.st.dirs.checking() {
            return Ok(());
        }
        let Some(hash) = self.st.dirs.get_mut(dir) else { return Ok(()) };
        let chunk_offset = (c * DIRBLKSIZ) as u64;
        let why = if hash.free.free_bytes(c) != Some(max_free(entries) / 4 * 4) {
            Some(format!(
                "chunk {c}: summary says {:?} bytes free, the chunk has {}",
                hash.free.free_bytes(c),
                max_free(entries)
            ))
        } else {
            entries.iter().filter(|e| e.ino != 0).find_map(|e| {
                let offset = (chunk_offset + e.offset as u64) as u32;
                let h = hash.table.hash(e.name);
                (!hash.table.candidates(h).any(|(_, o)| o == offset))
                    .then(|| format!("entry at offset {offset} is not in the table"))
            })
        };
        match why {
            Some(why) => {
                self.st.dirs.forget(dir);
                Err(disagreement(dir, why))
            }
            None => Ok(()),
        }
    }

    /// Whether the hash of `dir`, if it has one, matches its blocks
    /// exactly: the same live offsets, each under its name's chain, and the
    /// same free space in every chunk.
    pub(crate) fn dirhash_matches(&mut self, dir: Ino) -> Result<bool> {
        if !self.st.dirs.has(dir) {
            return Ok(true);
        }
        let blocks = self.dir_blocks(dir)?;
        let bs = self.s.block_size() as usize;
        let mut block = vec![0u8; bs];
        let mut live = 0;
        for lbn in 0..blocks {
            self.s.read_block(dir, lbn as Lbn, &mut block)?;
            let Some(hash) = self.st.dirs.get_mut(dir) else { return Ok(true) };
            for (i, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let c = lbn as usize * (bs / DIRBLKSIZ) + i;
                let chunk_offset = (c * DIRBLKSIZ) as u64;
                let entries = parse_chunk(chunk, dir, chunk_offset)?;
                if hash.free.free_bytes(c) != Some(max_free(&entries) / 4 * 4) {
                    return Ok(false);
                }
                for e in entries.iter().filter(|e| e.ino != 0) {
                    live += 1;
                    let offset = (chunk_offset + e.offset as u64) as u32;
                    if !hash.table.candidates(hash.table.hash(e.name)).any(|(_, o)| o == offset) {
                        return Ok(false);
                    }
                }
            }
        }
        let Some(hash) = self.st.dirs.get_mut(dir) else { return Ok(true) };
        Ok(hash.table.live() == live && hash.free.chunks() as u64 == blocks * (bs / DIRBLKSIZ) as u64)
    }
}

/// Reads the entry at `offset` of `dir` and compares its name.
fn entry_at<S: StorageManager>(
    storage: &mut S,
    last: &mut LastChunk,
    dir: Ino,
    offset: u64,
    name: &[u8],
) -> Result<AtOffset> {
    let bs = u64::from(storage.block_size());
    let chunk_offset = offset / DIRBLKSIZ as u64 * DIRBLKSIZ as u64;
    if last.offset != Some(chunk_offset) {
        last.offset = None;
        let within = (chunk_offset % bs) as usize;
        last.reads += 1;
        storage.read_block_part(dir, (chunk_offset / bs) as Lbn, within, &mut last.data)?;
        last.offset = Some(chunk_offset);
    }
    let at = (offset - chunk_offset) as usize;
    let Some(e) = entry_in_chunk(&last.data, dir, chunk_offset, at)?.filter(|e| e.ino != 0) else {
        return Ok(AtOffset::Stale);
    };
    if e.name != name {
        return Ok(AtOffset::Other);
    }
    Ok(AtOffset::Match(Slot { offset, ino: e.ino }, entry_after(&e, chunk_offset, offset)))
}

/// The offset of the entry after `e`, which starts at `offset` in the
/// chunk at `chunk_offset`: where a lookup of the next name in directory
/// order looks first.
fn entry_after(e: &Entry<'_>, chunk_offset: u64, offset: u64) -> u64 {
    if e.offset + e.reclen >= ENTRY_BYTES {
        chunk_offset + DIRBLKSIZ as u64
    } else {
        offset + e.reclen as u64
    }
}

/// A lookup of `name` in `dir` by its hash, holding the file system shared:
/// `Some(Some(slot))` found, `Some(None)` absent, `None` when only an
/// exclusive lookup can answer — no hash, a candidate's block not cached,
/// a stale or damaged candidate (which the exclusive lookup drops or
/// reports), or checking mode. It changes only what [`DirHash`] keeps
/// atomic, as an exclusive lookup that answers would.
pub(crate) fn lookup_cached<S: StorageManager>(
    dirs: &super::Dirhash,
    storage: &S,
    dir: Ino,
    name: &[u8],
) -> Option<Option<Slot>> {
    if dirs.checking() {
        return None;
    }
    let hash = dirs.peek(dir)?;
    let bs = u64::from(storage.block_size());
    let h = hash.table.hash(name);
    let mut chunks = 0;
    let mut last_chunk = None;
    for offset in hash.table.ordered_candidates(h, hash.seq_next()) {
        let offset = u64::from(offset);
        let chunk_offset = offset / DIRBLKSIZ as u64 * DIRBLKSIZ as u64;
        if last_chunk != Some(chunk_offset) {
            chunks += 1;
            last_chunk = Some(chunk_offset);
        }
        let block = storage.peek_block(dir, (chunk_offset / bs) as Lbn)?;
        let within = (chunk_offset % bs) as usize;
        let chunk = block.get(within..within + DIRBLKSIZ)?;
        let at = (offset - chunk_offset) as usize;
        let e = entry_in_chunk(chunk, dir, chunk_offset, at).ok()?.filter(|e| e.ino != 0)?;
        if e.name == name {
            hash.set_seq_next(u32::try_from(entry_after(&e, chunk_offset, offset)).ok());
            dirs.note_use(hash);
            dirs.count_shared_hit(chunks);
            return Some(Some(Slot { offset, ino: e.ino }));
        }
    }
    dirs.note_use(hash);
    dirs.count_shared_hit(chunks);
    Some(None)
}
