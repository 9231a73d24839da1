//! Directories over the storage manager: lookup, insert, remove and retarget
//! of entries in the chunk format of `format::dirent`, plus `readdir`.
//!
//! Two ways to every answer: the directory's hash (`ufs::dirhash`, 2002
//! paper §3), when it has one, and otherwise a linear scan of the blocks,
//! which is always right. The blocks are the truth: any error while changing
//! a directory drops its hash, and a hash may be dropped at any moment; the
//! next lookup rebuilds it or scans.
//!
//! Removing an entry from the last block of a directory frees the trailing
//! blocks left with no live entry (never the first block): the compaction
//! the paper left undone (§3.5). Entries still never move, so an entry's
//! offset stays a valid `readdir` cookie; a cookie at or past the new end
//! simply ends the listing, since nothing live was there.

use super::dirhash::Answer;
use super::{DirEntry, Ns};
use crate::error::{errno, Location};
use crate::format::dirent::{
    self, dt, empty_dir_block, entry_size, kind_from_dt, parse_chunk, put_entry, seal_chunk, set_reclen,
    DIRBLKSIZ, ENTRY_BYTES,
};
use crate::format::{Ino, Lbn};
use crate::storage::StorageManager;
use crate::{Error, Result};

/// Where a name lives: the entry's byte offset in the directory file and the
/// inode it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub offset: u64,
    pub ino: Ino,
}

/// The largest record a new entry could take in a chunk.
pub(crate) fn max_free(entries: &[dirent::Entry<'_>]) -> usize {
    entries.iter().map(|e| e.free_bytes()).max().unwrap_or(0)
}

fn stale(dir: Ino, why: &'static str) -> Error {
    Error::corrupt_at("directory hash", Location::Inode(dir), why)
}

/// Whether a chunk holds no live entry: one unused record spanning it.
fn chunk_is_empty(entries: &[dirent::Entry<'_>]) -> bool {
    entries.iter().all(|e| e.ino == 0)
}

impl<S: StorageManager> Ns<'_, S> {
    fn block_bytes(&self) -> usize {
        self.s.block_size() as usize
    }

    /// Reads block `lbn` of directory `dir` for a lookup or a change,
    /// counting it (the work dirhash saves, §3.2).
    pub(crate) fn read_dir_block(&mut self, dir: Ino, lbn: Lbn, buf: &mut [u8]) -> Result<()> {
        self.st.dirs.count_blocks_read(1);
        self.s.read_block(dir, lbn, buf)
    }

    /// The number of blocks of directory `dir`, once its size is checked.
    pub(crate) fn dir_blocks(&mut self, dir: Ino) -> Result<u64> {
        let size = self.s.vget(dir)?.attr.size;
        let bs = self.block_bytes() as u64;
        if !size.is_multiple_of(bs) {
            return Err(Error::corrupt_at(
                "directory",
                Location::Inode(dir),
                format!("size {size} is not a multiple of the block size"),
            ));
        }
        // A directory cannot hold more blocks than the device has: a larger
        // size is damage (and would make a scan run for ever).
        let capacity = self.s.device_blocks()?;
        if size / bs > capacity {
            return Err(Error::corrupt_at(
                "directory",
                Location::Inode(dir),
                format!("size {size} is larger than the file system"),
            ));
        }
        Ok(size / bs)
    }

    /// Finds `name` in directory `dir`: `Some(slot)` if present, `None` if
    /// absent; an error if the directory's blocks are unreadable, or in
    /// checking mode if the hash and the blocks disagree.
    pub(crate) fn dir_lookup(&mut self, dir: Ino, name: &[u8]) -> Result<Option<Slot>> {
        let found = match self.dirhash_lookup(dir, name)? {
            Answer::Unknown => {
                self.st.dirs.count_miss();
                return self.scan_lookup(dir, name);
            }
            Answer::Found(slot) => Some(slot),
            Answer::Absent => None,
        };
        self.st.dirs.count_hit();
        if self.st.dirs.checking() {
            let scanned = self.scan_lookup(dir, name)?;
            if scanned != found {
                self.st.dirs.forget(dir);
                return Err(Error::corrupt_at(
                    "directory hash",
                    Location::Inode(dir),
                    format!(
                        "the hash says {found:?} for {:?}, the blocks say {scanned:?}",
                        String::from_utf8_lossy(name)
                    ),
                ));
            }
        }
        Ok(found)
    }

    /// The linear scan, from the block where the last scan of `dir` found
    /// its entry round to the block before it (FFS's sequential lookup
    /// optimisation, 2002 paper §3.2). A scan that does not find the name
    /// has seen every chunk, and remembers the first with room for it, for
    /// the create that usually follows (FFS's lookup for CREATE, §3.3).
    fn scan_lookup(&mut self, dir: Ino, name: &[u8]) -> Result<Option<Slot>> {
        let blocks = self.dir_blocks(dir)?;
        let bs = self.block_bytes() as u64;
        let start = match self.st.dirs.scan_hint(dir) / bs {
            hint if hint < blocks => hint,
            _ => 0,
        };
        let need = entry_size(name.len());
        let mut room: Option<usize> = None;
        let mut block = vec![0u8; bs as usize];
        for i in 0..blocks {
            let lbn = (start + i) % blocks;
            self.read_dir_block(dir, lbn as Lbn, &mut block)?;
            for (c, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let chunk_offset = lbn * bs + (c * DIRBLKSIZ) as u64;
                let (mut hit, mut free) = (None, 0);
                dirent::for_each_entry(chunk, dir, chunk_offset, |e| {
                    if hit.is_none() && e.ino != 0 && dirent::same_name(e.name, name) {
                        hit = Some((e.offset, e.ino));
                    }
                    free = free.max(e.free_bytes());
                })?;
                if let Some((within, ino)) = hit {
                    let offset = chunk_offset + within as u64;
                    self.st.dirs.set_scan_hint(dir, offset);
                    return Ok(Some(Slot { offset, ino }));
                }
                let index = (chunk_offset / DIRBLKSIZ as u64) as usize;
                if free >= need && room.is_none_or(|r| index < r) {
                    room = Some(index);
                }
            }
        }
        self.st.dirs.set_create_hint(dir, need, room);
        Ok(None)
    }

    /// The first chunk of `dir` whose entries satisfy `wanted`, by a linear
    /// scan from the start.
    fn first_chunk_where(
        &mut self,
        dir: Ino,
        wanted: impl Fn(&[dirent::Entry<'_>]) -> bool,
    ) -> Result<Option<usize>> {
        let blocks = self.dir_blocks(dir)?;
        let bs = self.block_bytes();
        let mut block = vec![0u8; bs];
        for lbn in 0..blocks {
            self.read_dir_block(dir, lbn as Lbn, &mut block)?;
            for (c, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let chunk_offset = lbn * bs as u64 + (c * DIRBLKSIZ) as u64;
                if wanted(&parse_chunk(chunk, dir, chunk_offset)?) {
                    return Ok(Some((chunk_offset / DIRBLKSIZ as u64) as usize));
                }
            }
        }
        Ok(None)
    }

    /// The first chunk of `dir` with a record of `need` bytes free, by a
    /// linear scan (FFS before dirhash, §3.3).
    fn scan_free(&mut self, dir: Ino, need: usize) -> Result<Option<usize>> {
        self.first_chunk_where(dir, |entries| max_free(entries) >= need)
    }

    /// The largest record a new entry could take in chunk `c` of `dir`.
    fn chunk_room(&mut self, dir: Ino, c: usize) -> Result<usize> {
        let (block, _, within, chunk_offset) = self.read_chunk_of(dir, (c * DIRBLKSIZ) as u64)?;
        Ok(max_free(&parse_chunk(&block[within..within + DIRBLKSIZ], dir, chunk_offset)?))
    }

    /// Whether the storage manager holds chunk `c` of `dir`
    /// (`StorageManager::dir_chunk_held`).
    fn chunk_held(&mut self, dir: Ino, c: usize) -> bool {
        self.s.dir_chunk_held(dir, (c * DIRBLKSIZ) as u64)
    }

    /// The chunk a new entry of `need` bytes goes into among those the
    /// storage manager does not hold, by the same policy as `dir_add`'s
    /// first choice `held` (the hash's summary, or a scan from `held` on:
    /// no chunk before the first with room has any).
    fn unheld_free_chunk(&mut self, dir: Ino, need: usize, held: usize) -> Result<Option<usize>> {
        if self.dirhash_ready(dir)? {
            let (dirs, s) = (&self.st.dirs, &mut self.s);
            let unheld = |c: usize| !s.dir_chunk_held(dir, (c * DIRBLKSIZ) as u64);
            return Ok(dirs.free_chunk_where(dir, need, unheld));
        }
        let blocks = self.dir_blocks(dir)?;
        let bs = self.block_bytes();
        let per_block = bs / DIRBLKSIZ;
        let mut block = vec![0u8; bs];
        for lbn in (held / per_block) as u64..blocks {
            self.read_dir_block(dir, lbn as Lbn, &mut block)?;
            for (i, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let chunk_offset = lbn * bs as u64 + (i * DIRBLKSIZ) as u64;
                let c = (chunk_offset / DIRBLKSIZ as u64) as usize;
                if c <= held {
                    continue;
                }
                if max_free(&parse_chunk(chunk, dir, chunk_offset)?) >= need && !self.chunk_held(dir, c) {
                    return Ok(Some(c));
                }
            }
        }
        Ok(None)
    }

    /// Whether directory `dir` holds nothing but `.` and `..`.
    pub(crate) fn dir_is_empty(&mut self, dir: Ino) -> Result<bool> {
        if self.st.dirs.live_entries(dir).is_some_and(|n| n > 2) {
            return Ok(false);
        }
        let other = |entries: &[dirent::Entry<'_>]| {
            entries.iter().any(|e| e.ino != 0 && e.name != b"." && e.name != b"..")
        };
        Ok(self.first_chunk_where(dir, other)?.is_none())
    }

    /// Runs a change of directory `dir`; if it fails, the hash may no longer
    /// match the blocks, so it is dropped.
    fn changing<T>(&mut self, dir: Ino, body: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.st.dirs.take_create_hint(dir, 0);
        let result = body(self);
        if result.is_err() {
            self.st.dirs.forget(dir);
        }
        result
    }

    /// Adds entry `name` → `ino` to directory `dir`, which must not hold
    /// `name`. Returns the entry's offset. Where it goes, in order of
    /// preference (2002 paper §3.3):
    ///
    /// 1. with a hash: the first chunk of the smallest size class with room
    ///    (fills chunks tight);
    /// 2. without one: the first chunk with room, as the lookup that found
    ///    `name` absent saw it, or by a scan (FFS's traditional policy);
    /// 3. a new block at the end of the directory.
    pub(crate) fn dir_add(&mut self, dir: Ino, name: &[u8], ino: Ino, dtype: u8) -> Result<u64> {
        if ino > u32::MAX as Ino {
            return Err(errno(libc::EOVERFLOW, "inode number does not fit a directory entry"));
        }
        let need = entry_size(name.len());
        let seen = self.st.dirs.take_create_hint(dir, need);
        let keeping =
            self.s.dir_chunk_keeping(dir, name, ino).map(|offset| (offset / DIRBLKSIZ as u64) as usize);
        self.changing(dir, |ns| {
            let chunk =
                if let Some(c) = keeping.filter(|&c| ns.chunk_room(dir, c).is_ok_and(|room| room >= need)) {
                    Some(c)
                } else if ns.dirhash_ready(dir)? {
                    let found = ns.st.dirs.free_chunk(dir, need);
                    if found.is_none() && ns.st.dirs.checking() && ns.scan_free(dir, need)?.is_some() {
                        return Err(stale(dir, "the summary says no chunk has room, but one has"));
                    }
                    found
                } else if let Some(room) = seen {
                    room
                } else {
                    ns.scan_free(dir, need)?
                };
            let (offset, free) = match chunk {
                Some(c) if keeping != Some(c) && ns.chunk_held(dir, c) => {
                    match ns.unheld_free_chunk(dir, need, c)? {
                        Some(other) => ns.insert_in_chunk(dir, other, name, ino, dtype)?,
                        // Growing is the way around a held chunk, not a reason
                        // to fail: on a full disk the entry goes there after all.
                        None => match ns.append_block(dir, name, ino, dtype) {
                            Err(e) if e.errno() == libc::ENOSPC => {
                                ns.insert_in_chunk(dir, c, name, ino, dtype)?
                            }
                            appended => appended?,
                        },
                    }
                }
                Some(c) => ns.insert_in_chunk(dir, c, name, ino, dtype)?,
                None => ns.append_block(dir, name, ino, dtype)?,
            };
            ns.st.dirs.added(dir, name, offset, (offset / DIRBLKSIZ as u64) as usize, free);
            Ok(offset)
        })
    }

    /// Inserts into chunk `c`, which has room: in an unused slot, or in the
    /// slack after a live entry. Returns the entry's offset and the chunk's
    /// new largest free record.
    fn insert_in_chunk(
        &mut self,
        dir: Ino,
        c: usize,
        name: &[u8],
        ino: Ino,
        dtype: u8,
    ) -> Result<(u64, usize)> {
        let bs = self.block_bytes();
        let per_block = bs / DIRBLKSIZ;
        let lbn = (c / per_block) as Lbn;
        let within = (c % per_block) * DIRBLKSIZ;
        let chunk_offset = (c * DIRBLKSIZ) as u64;
        let need = entry_size(name.len());
        // Only the chunk is read and written back: a create copied its
        // whole block twice.
        let mut bytes = [0u8; DIRBLKSIZ];
        let chunk = &mut bytes[..];
        self.st.dirs.count_blocks_read(1);
        self.s.read_block_part(dir, lbn, within, chunk)?;
        let (at, slot_ino, reclen, used) = {
            let entries = parse_chunk(chunk, dir, chunk_offset)?;
            self.dirhash_check_chunk(dir, c, &entries)?;
            let e = entries.iter().find(|e| e.free_bytes() >= need).ok_or(stale(dir, "chunk has no room"))?;
            (e.offset, e.ino, e.reclen, entry_size(e.name.len()))
        };
        let placed = if slot_ino == 0 {
            put_entry(chunk, at, ino, reclen, dtype, name);
            at
        } else {
            set_reclen(chunk, at, used);
            put_entry(chunk, at + used, ino, reclen - used, dtype, name);
            at + used
        };
        seal_chunk(chunk);
        let free = max_free(&parse_chunk(chunk, dir, chunk_offset)?);
        self.s.write_block(dir, lbn, within, chunk)?;
        Ok((chunk_offset + placed as u64, free))
    }

    /// Appends a block of empty chunks holding the new entry first.
    fn append_block(&mut self, dir: Ino, name: &[u8], ino: Ino, dtype: u8) -> Result<(u64, usize)> {
        let bs = self.block_bytes();
        let mut attr = self.s.vget(dir)?.attr;
        if self.st.dirs.chunks(dir).is_some_and(|chunks| attr.size != (chunks * DIRBLKSIZ) as u64) {
            return Err(stale(dir, "directory size changed behind the hash"));
        }
        let lbn = attr.size / bs as u64;
        let mut block = empty_dir_block(bs);
        put_entry(&mut block, 0, ino, ENTRY_BYTES, dtype, name);
        seal_chunk(&mut block[..DIRBLKSIZ]);
        self.s.write_block(dir, lbn as Lbn, 0, &block)?;
        attr.size += bs as u64;
        self.s.update(dir, &attr)?;
        let free = ENTRY_BYTES - entry_size(name.len());
        let per_block = bs / DIRBLKSIZ;
        self.st.dirs.grew(dir, (0..per_block).map(|i| if i == 0 { free } else { ENTRY_BYTES }));
        Ok((lbn * bs as u64, free))
    }

    /// Reads the chunk holding directory offset `offset`: (block, lbn, byte
    /// of the chunk in the block, the chunk's offset in the directory).
    fn read_chunk_of(&mut self, dir: Ino, offset: u64) -> Result<(Vec<u8>, Lbn, usize, u64)> {
        let bs = self.block_bytes();
        let mut block = vec![0u8; bs];
        let lbn = offset / bs as u64;
        let chunk_offset = offset / DIRBLKSIZ as u64 * DIRBLKSIZ as u64;
        let within = (chunk_offset % bs as u64) as usize;
        self.read_dir_block(dir, lbn as Lbn, &mut block)?;
        Ok((block, lbn as Lbn, within, chunk_offset))
    }

    /// Removes entry `name` from directory `dir`: merges its record into the
    /// previous entry of its chunk, or frees the slot if it is the first;
    /// then frees the directory's trailing blocks if that left them empty.
    /// Fails with ENOENT if there is no such entry.
    pub(crate) fn dir_remove(&mut self, dir: Ino, name: &[u8]) -> Result<Slot> {
        let slot = self.dir_lookup(dir, name)?.ok_or(errno(libc::ENOENT, "no such entry"))?;
        self.dir_remove_slot(dir, name, slot)
    }

    /// Removes the entry `name` → `slot.ino` at `slot.offset` of directory
    /// `dir`, as [`dir_remove`](Self::dir_remove) does once it has found
    /// it; fails if that entry is not there. fsck names the entry by its
    /// place when the name alone does not say which (a name listed twice).
    pub(crate) fn dir_remove_slot(&mut self, dir: Ino, name: &[u8], slot: Slot) -> Result<Slot> {
        self.changing(dir, |ns| {
            let (mut block, lbn, within, chunk_offset) = ns.read_chunk_of(dir, slot.offset)?;
            let c = (chunk_offset / DIRBLKSIZ as u64) as usize;
            let chunk = &mut block[within..within + DIRBLKSIZ];
            let at = (slot.offset - chunk_offset) as usize;
            let (previous, reclen) = {
                let entries = parse_chunk(chunk, dir, chunk_offset)?;
                ns.dirhash_check_chunk(dir, c, &entries)?;
                let i = entries
                    .iter()
                    .position(|e| e.offset == at && e.ino == slot.ino && e.name == name)
                    .ok_or(stale(dir, "entry not where the lookup found it"))?;
                (i.checked_sub(1).map(|p| (entries[p].offset, entries[p].reclen)), entries[i].reclen)
            };
            match previous {
                Some((prev_at, prev_reclen)) => set_reclen(chunk, prev_at, prev_reclen + reclen),
                None => put_entry(chunk, at, 0, reclen, dt::UNKNOWN, b""),
            }
            seal_chunk(chunk);
            let entries = parse_chunk(chunk, dir, chunk_offset)?;
            let (free, emptied) = (max_free(&entries), chunk_is_empty(&entries));
            ns.s.write_block(dir, lbn, within, chunk)?;
            if !ns.st.dirs.removed(dir, name, slot.offset, c, free) && ns.st.dirs.checking() {
                return Err(stale(dir, "a removed entry was not in the hash"));
            }
            if emptied {
                // Tidying, after the removal is made: its caller goes on
                // to lower link counts and free what the name held, which
                // an error here used to stop (the name gone, the count as
                // it was). What it could not free is a leak fsck finds.
                let _ = ns.truncate_empty_tail(dir, lbn);
            }
            Ok(slot)
        })
    }

    /// If block `changed` is the last block of `dir`, frees the trailing
    /// blocks that hold no live entry (the truncation §3.5 left undone).
    /// The rules, in order:
    ///
    /// 1. only after a removal emptied a chunk of the last block;
    /// 2. only whole blocks from the end: entries never move, so an empty
    ///    block in the middle stays for later creates;
    /// 3. never block 0, which holds `.` and `..`.
    fn truncate_empty_tail(&mut self, dir: Ino, changed: Lbn) -> Result<()> {
        let bs = self.block_bytes() as u64;
        let mut attr = self.s.vget(dir)?.attr;
        let blocks = attr.size / bs;
        if changed < 0 || changed as u64 + 1 != blocks || blocks <= 1 {
            return Ok(());
        }
        let mut keep = blocks;
        let mut block = vec![0u8; bs as usize];
        while keep > 1 && self.block_is_empty(dir, keep - 1, &mut block)? {
            keep -= 1;
        }
        if keep == blocks {
            return Ok(());
        }
        // The size first: a directory whose size still covered freed
        // blocks would read them as zeros, which no chunk parses, and
        // every lookup and create in it would fail.
        attr.size = keep * bs;
        self.s.update(dir, &attr)?;
        self.st.dirs.truncated(dir, (attr.size / DIRBLKSIZ as u64) as usize);
        self.st.dirs.count_truncated(blocks - keep);
        self.s.free_blocks(dir, keep, u64::MAX)
    }

    /// Whether block `lbn` of `dir` holds no live entry.
    fn block_is_empty(&mut self, dir: Ino, lbn: u64, block: &mut [u8]) -> Result<bool> {
        self.read_dir_block(dir, lbn as Lbn, block)?;
        for (c, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
            let chunk_offset = lbn * block.len() as u64 + (c * DIRBLKSIZ) as u64;
            if !chunk_is_empty(&parse_chunk(chunk, dir, chunk_offset)?) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Points the existing entry `name` of `dir` at `ino` (rename over a
    /// target, exchange, or a moved directory's `..`). Returns the entry as
    /// it was.
    pub(crate) fn dir_retarget(&mut self, dir: Ino, name: &[u8], ino: Ino, dtype: u8) -> Result<Slot> {
        let slot = self.dir_lookup(dir, name)?.ok_or(errno(libc::ENOENT, "no such entry"))?;
        self.changing(dir, |ns| {
            let (mut block, lbn, within, chunk_offset) = ns.read_chunk_of(dir, slot.offset)?;
            let chunk = &mut block[within..within + DIRBLKSIZ];
            let at = (slot.offset - chunk_offset) as usize;
            let reclen = {
                let entries = parse_chunk(chunk, dir, chunk_offset)?;
                ns.dirhash_check_chunk(dir, (chunk_offset / DIRBLKSIZ as u64) as usize, &entries)?;
                let e = entries
                    .iter()
                    .find(|e| e.offset == at && e.ino == slot.ino && e.name == name)
                    .ok_or(stale(dir, "entry not where the lookup found it"))?;
                e.reclen
            };
            put_entry(chunk, at, ino, reclen, dtype, name);
            seal_chunk(chunk);
            ns.s.write_block(dir, lbn, within, chunk)?;
            Ok(slot)
        })
    }

    /// The parent of directory `dir`, read from its `..` entry without
    /// building a hash (rename walks up the tree with it).
    pub(crate) fn dir_parent(&mut self, dir: Ino) -> Result<Ino> {
        let (block, _, _, _) = self.read_chunk_of(dir, 0)?;
        let entries = parse_chunk(&block[..DIRBLKSIZ], dir, 0)?;
        match entries.get(1) {
            Some(e) if e.name == b".." && e.ino != 0 => Ok(e.ino),
            _ => Err(Error::corrupt_at("directory", Location::Inode(dir), "second entry is not '..'")),
        }
    }

    /// Live entries of `dir` at byte offsets `>= offset`, at most `max`.
    /// An entry's cookie is its offset + 1: entries never move, so every
    /// entry present throughout a listing is returned exactly once; a
    /// cookie at or past the end (the directory lost empty trailing blocks
    /// since) ends the listing.
    pub(crate) fn dir_read(&mut self, dir: Ino, offset: u64, max: usize) -> Result<Vec<DirEntry>> {
        let size = self.s.vget(dir)?.attr.size;
        let bs = self.block_bytes() as u64;
        let mut out = Vec::new();
        let mut block = vec![0u8; bs as usize];
        let mut lbn = offset / bs;
        while out.len() < max && lbn * bs < size {
            self.s.read_block(dir, lbn as Lbn, &mut block)?;
            entries_from(&block, dir, lbn * bs, offset, max, &mut out)?;
            lbn += 1;
        }
        Ok(out)
    }

    /// Whether the hash of `dir`, if there is one, matches its blocks.
    pub(crate) fn dir_index_matches(&mut self, dir: Ino) -> Result<bool> {
        self.dirhash_matches(dir)
    }
}

/// Appends to `out` the live entries of the directory block `block` of
/// `dir`, which starts at byte `start`, from `offset` on, until `out`
/// holds `max`: one block of a `readdir`, whoever read the block.
pub(crate) fn entries_from(
    block: &[u8],
    dir: Ino,
    start: u64,
    offset: u64,
    max: usize,
    out: &mut Vec<DirEntry>,
) -> Result<()> {
    for (i, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
        let chunk_offset = start + (i * DIRBLKSIZ) as u64;
        if chunk_offset + (DIRBLKSIZ as u64) <= offset {
            continue;
        }
        for e in parse_chunk(chunk, dir, chunk_offset)? {
            let at = chunk_offset + e.offset as u64;
            if e.ino == 0 || at < offset {
                continue;
            }
            if out.len() >= max {
                return Ok(());
            }
            out.push(DirEntry {
                ino: e.ino,
                kind: kind_from_dt(e.dtype),
                name: e.name.to_vec(),
                next_offset: at + 1,
            });
        }
    }
    Ok(())
}
