//! Directories over the storage manager: lookup, insert, remove and retarget
//! of entries in the chunk format of `format::dirent`, plus `readdir`.
//!
//! Lookups go through [`DirIndex`], a per-directory in-memory index (the
//! role of FreeBSD's dirhash) built from the blocks on first use and kept in
//! step by every change this process makes. The blocks stay the truth: any
//! error while changing a directory drops its index, and an index may be
//! dropped at any moment ([`DirIndexes::clear`]); the next lookup rebuilds it.

use std::collections::HashMap;

use super::{DirEntry, Ns};
use crate::error::{errno, Location};
use crate::format::dirent::{
    self, dt, empty_dir_block, entry_size, kind_from_dt, parse_chunk, put_entry, seal_chunk, set_reclen,
    DIRBLKSIZ, ENTRY_BYTES,
};
use crate::format::{Ino, Lbn};
use crate::storage::StorageManager;
use crate::{Error, Result};

/// Directories indexed at once; past this, an index is dropped to make room.
const MAX_INDEXED_DIRS: usize = 1024;

/// Where a name lives: the entry's byte offset in the directory file and the
/// inode it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub offset: u64,
    pub ino: Ino,
}

/// The index of one directory.
///
/// Invariant (while it exists): `names` holds exactly the live entries of
/// the directory's blocks, and `free[c]` is the largest record a new entry
/// could take in chunk `c` ([`dirent::Entry::free_bytes`] maximised over the
/// chunk); `free.len()` is the directory size / 512.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct DirIndex {
    pub names: HashMap<Vec<u8>, Slot>,
    pub free: Vec<u16>,
}

/// The indexes of the directories used lately, by inode number.
#[derive(Debug, Default)]
pub(crate) struct DirIndexes {
    map: HashMap<Ino, DirIndex>,
}

impl DirIndexes {
    /// Forgets the index of `dir` (changed behind its back, or freed).
    pub fn forget(&mut self, dir: Ino) {
        self.map.remove(&dir);
    }

    /// Forgets every index.
    pub fn clear(&mut self) {
        self.map.clear();
    }

    fn get(&self, dir: Ino) -> Option<&DirIndex> {
        self.map.get(&dir)
    }

    fn get_mut(&mut self, dir: Ino) -> Option<&mut DirIndex> {
        self.map.get_mut(&dir)
    }

    fn insert(&mut self, dir: Ino, index: DirIndex) {
        if self.map.len() >= MAX_INDEXED_DIRS {
            if let Some(&victim) = self.map.keys().next() {
                self.map.remove(&victim);
            }
        }
        self.map.insert(dir, index);
    }
}

fn max_free(entries: &[dirent::Entry<'_>]) -> u16 {
    entries.iter().map(|e| e.free_bytes()).max().unwrap_or(0) as u16
}

fn stale(dir: Ino, why: &'static str) -> Error {
    Error::corrupt_at("directory index", Location::Inode(dir), why)
}

impl<S: StorageManager> Ns<'_, S> {
    fn block_bytes(&self) -> usize {
        self.s.block_size() as usize
    }

    /// Reads every block of directory `dir` and indexes it.
    pub(crate) fn scan_dir(&mut self, dir: Ino) -> Result<DirIndex> {
        let size = self.s.vget(dir)?.attr.size;
        let bs = self.block_bytes();
        if !size.is_multiple_of(bs as u64) {
            return Err(Error::corrupt_at(
                "directory",
                Location::Inode(dir),
                format!("size {size} is not a multiple of the block size"),
            ));
        }
        // A directory cannot hold more blocks than the device has: a larger
        // size is damage (and would make this scan run for ever).
        let capacity = self.s.device_blocks()?;
        if size / bs as u64 > capacity {
            return Err(Error::corrupt_at(
                "directory",
                Location::Inode(dir),
                format!("size {size} is larger than the file system"),
            ));
        }
        let mut index = DirIndex::default();
        let mut block = vec![0u8; bs];
        for lbn in 0..size / bs as u64 {
            self.s.read_block(dir, lbn as Lbn, &mut block)?;
            for (i, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let chunk_offset = lbn * bs as u64 + (i * DIRBLKSIZ) as u64;
                let entries = parse_chunk(chunk, dir, chunk_offset)?;
                index.free.push(max_free(&entries));
                for e in entries.iter().filter(|e| e.ino != 0) {
                    let slot = Slot { offset: chunk_offset + e.offset as u64, ino: e.ino };
                    if index.names.insert(e.name.to_vec(), slot).is_some() {
                        return Err(Error::corrupt_at(
                            "directory",
                            Location::Inode(dir),
                            format!("a name appears twice (again at offset {})", slot.offset),
                        ));
                    }
                }
            }
        }
        Ok(index)
    }

    fn ensure_index(&mut self, dir: Ino) -> Result<()> {
        if self.st.dirs.get(dir).is_none() {
            let index = self.scan_dir(dir)?;
            self.st.dirs.insert(dir, index);
        }
        Ok(())
    }

    /// Finds `name` in directory `dir`: `Some(slot)` if present, `None` if
    /// absent; an error only if the directory's blocks are unreadable.
    pub(crate) fn dir_lookup(&mut self, dir: Ino, name: &[u8]) -> Result<Option<Slot>> {
        self.ensure_index(dir)?;
        Ok(self.st.dirs.get(dir).and_then(|index| index.names.get(name).copied()))
    }

    /// Whether directory `dir` holds nothing but `.` and `..`.
    pub(crate) fn dir_is_empty(&mut self, dir: Ino) -> Result<bool> {
        self.ensure_index(dir)?;
        let index = self.st.dirs.get(dir).ok_or(stale(dir, "index vanished"))?;
        Ok(index.names.keys().all(|n| n == b"." || n == b".."))
    }

    /// Runs a change of directory `dir`; if it fails, the index may no longer
    /// match the blocks, so it is dropped.
    fn changing<T>(&mut self, dir: Ino, body: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let result = body(self);
        if result.is_err() {
            self.st.dirs.forget(dir);
        }
        result
    }

    /// Adds entry `name` → `ino` to directory `dir`, which must not hold
    /// `name`. Grows the directory by a block if no chunk has room. Returns
    /// the entry's offset.
    pub(crate) fn dir_add(&mut self, dir: Ino, name: &[u8], ino: Ino, dtype: u8) -> Result<u64> {
        if ino > u32::MAX as Ino {
            return Err(errno(libc::EOVERFLOW, "inode number does not fit a directory entry"));
        }
        self.changing(dir, |ns| {
            ns.ensure_index(dir)?;
            let need = entry_size(name.len());
            let index = ns.st.dirs.get(dir).ok_or(stale(dir, "index vanished"))?;
            let chunks = index.free.len();
            let (offset, free) = match index.free.iter().position(|&f| f as usize >= need) {
                Some(c) => ns.insert_in_chunk(dir, c, name, ino, dtype)?,
                None => ns.append_block(dir, chunks, name, ino, dtype)?,
            };
            let per_block = ns.block_bytes() / DIRBLKSIZ;
            let index = ns.st.dirs.get_mut(dir).ok_or(stale(dir, "index vanished"))?;
            let c = (offset / DIRBLKSIZ as u64) as usize;
            if index.free.len() <= c {
                // A new block: its first chunk holds the entry, the others are empty.
                index.free.resize(c + per_block, ENTRY_BYTES as u16);
            }
            index.free[c] = free;
            index.names.insert(name.to_vec(), Slot { offset, ino });
            Ok(offset)
        })
    }

    /// Inserts into chunk `c`, which the index says has room: in an unused
    /// slot, or in the slack after a live entry. Returns the entry's offset and
    /// the chunk's new largest free record.
    fn insert_in_chunk(
        &mut self,
        dir: Ino,
        c: usize,
        name: &[u8],
        ino: Ino,
        dtype: u8,
    ) -> Result<(u64, u16)> {
        let bs = self.block_bytes();
        let per_block = bs / DIRBLKSIZ;
        let lbn = (c / per_block) as Lbn;
        let within = (c % per_block) * DIRBLKSIZ;
        let chunk_offset = (c * DIRBLKSIZ) as u64;
        let need = entry_size(name.len());
        let mut block = vec![0u8; bs];
        self.s.read_block(dir, lbn, &mut block)?;
        let chunk = &mut block[within..within + DIRBLKSIZ];
        let (at, slot_ino, reclen, used) = {
            let entries = parse_chunk(chunk, dir, chunk_offset)?;
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
    fn append_block(
        &mut self,
        dir: Ino,
        chunks: usize,
        name: &[u8],
        ino: Ino,
        dtype: u8,
    ) -> Result<(u64, u16)> {
        let bs = self.block_bytes();
        let mut attr = self.s.vget(dir)?.attr;
        if attr.size != (chunks * DIRBLKSIZ) as u64 {
            return Err(stale(dir, "directory size changed behind the index"));
        }
        let lbn = attr.size / bs as u64;
        let mut block = empty_dir_block(bs);
        put_entry(&mut block, 0, ino, ENTRY_BYTES, dtype, name);
        seal_chunk(&mut block[..DIRBLKSIZ]);
        self.s.write_block(dir, lbn as Lbn, 0, &block)?;
        attr.size += bs as u64;
        self.s.update(dir, &attr)?;
        Ok((lbn * bs as u64, (ENTRY_BYTES - entry_size(name.len())) as u16))
    }

    /// Reads the chunk holding directory offset `offset`: (block, lbn, byte
    /// of the chunk in the block, the chunk's offset in the directory).
    fn read_chunk_of(&mut self, dir: Ino, offset: u64) -> Result<(Vec<u8>, Lbn, usize, u64)> {
        let bs = self.block_bytes();
        let mut block = vec![0u8; bs];
        let lbn = offset / bs as u64;
        let chunk_offset = offset / DIRBLKSIZ as u64 * DIRBLKSIZ as u64;
        let within = (chunk_offset % bs as u64) as usize;
        self.s.read_block(dir, lbn as Lbn, &mut block)?;
        Ok((block, lbn as Lbn, within, chunk_offset))
    }

    /// Removes entry `name` from directory `dir`: merges its record into the
    /// previous entry of its chunk, or frees the slot if it is the first.
    /// Fails with ENOENT if there is no such entry.
    pub(crate) fn dir_remove(&mut self, dir: Ino, name: &[u8]) -> Result<Slot> {
        let slot = self.dir_lookup(dir, name)?.ok_or(errno(libc::ENOENT, "no such entry"))?;
        self.changing(dir, |ns| {
            let (mut block, lbn, within, chunk_offset) = ns.read_chunk_of(dir, slot.offset)?;
            let chunk = &mut block[within..within + DIRBLKSIZ];
            let at = (slot.offset - chunk_offset) as usize;
            let (previous, reclen) = {
                let entries = parse_chunk(chunk, dir, chunk_offset)?;
                let i = entries
                    .iter()
                    .position(|e| e.offset == at && e.ino == slot.ino && e.name == name)
                    .ok_or(stale(dir, "entry not where the index says"))?;
                (i.checked_sub(1).map(|p| (entries[p].offset, entries[p].reclen)), entries[i].reclen)
            };
            match previous {
                Some((prev_at, prev_reclen)) => set_reclen(chunk, prev_at, prev_reclen + reclen),
                None => put_entry(chunk, at, 0, reclen, dt::UNKNOWN, b""),
            }
            seal_chunk(chunk);
            let free = max_free(&parse_chunk(chunk, dir, chunk_offset)?);
            ns.s.write_block(dir, lbn, within, chunk)?;
            let index = ns.st.dirs.get_mut(dir).ok_or(stale(dir, "index vanished"))?;
            index.names.remove(name);
            let c = (chunk_offset / DIRBLKSIZ as u64) as usize;
            if let Some(f) = index.free.get_mut(c) {
                *f = free;
            }
            Ok(slot)
        })
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
                let e = entries
                    .iter()
                    .find(|e| e.offset == at && e.ino == slot.ino && e.name == name)
                    .ok_or(stale(dir, "entry not where the index says"))?;
                e.reclen
            };
            put_entry(chunk, at, ino, reclen, dtype, name);
            seal_chunk(chunk);
            ns.s.write_block(dir, lbn, within, chunk)?;
            let index = ns.st.dirs.get_mut(dir).ok_or(stale(dir, "index vanished"))?;
            index.names.insert(name.to_vec(), Slot { offset: slot.offset, ino });
            Ok(slot)
        })
    }

    /// The parent of directory `dir`, read from its `..` entry without
    /// building an index (rename walks up the tree with it).
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
    /// entry present throughout a listing is returned exactly once.
    pub(crate) fn dir_read(&mut self, dir: Ino, offset: u64, max: usize) -> Result<Vec<DirEntry>> {
        let size = self.s.vget(dir)?.attr.size;
        let bs = self.block_bytes() as u64;
        let mut out = Vec::new();
        let mut block = vec![0u8; bs as usize];
        let mut lbn = offset / bs;
        while out.len() < max && lbn * bs < size {
            self.s.read_block(dir, lbn as Lbn, &mut block)?;
            for (i, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let chunk_offset = lbn * bs + (i * DIRBLKSIZ) as u64;
                if chunk_offset + (DIRBLKSIZ as u64) <= offset {
                    continue;
                }
                for e in parse_chunk(chunk, dir, chunk_offset)? {
                    let at = chunk_offset + e.offset as u64;
                    if e.ino == 0 || at < offset {
                        continue;
                    }
                    if out.len() >= max {
                        return Ok(out);
                    }
                    out.push(DirEntry {
                        ino: e.ino,
                        kind: kind_from_dt(e.dtype),
                        name: e.name.to_vec(),
                        next_offset: at + 1,
                    });
                }
            }
            lbn += 1;
        }
        Ok(out)
    }

    /// Whether the index of `dir`, if there is one, matches its blocks.
    pub(crate) fn dir_index_matches(&mut self, dir: Ino) -> Result<bool> {
        let scanned = self.scan_dir(dir)?;
        Ok(self.st.dirs.get(dir).is_none_or(|index| *index == scanned))
    }
}
