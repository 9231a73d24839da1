//! The copies write-back sends under soft updates: each block as its
//! dependencies allow — an inode block's slots, a directory block's
//! entries and chunks, an indirect block's pointers rolled back to what
//! is safe while the buffer keeps its real contents.

use super::*;

impl Softdep {
    pub(super) fn rolled_back_inode_block(
        &self,
        key: BlockKey,
        addr: Daddr,
        data: &BlockData,
        durable: Seq,
    ) -> Option<BlockData> {
        let mut state = self.state();
        let inos = state.blocks.get(&addr.get())?.clone();
        let mut copy: Option<AlignedBytes> = None;
        for ino in inos {
            let Some(&(_, at)) = state.inodes.get(&ino).and_then(|d| d.slot.as_ref()) else { continue };
            let Some(bytes) = data.get(at..at + INODE_SIZE) else { continue };
            let Ok(stored) = Inode::decode(bytes) else { continue };
            if stored.ino != ino && stored.ino != 0 {
                continue;
            }
            let stored = Inode { ino, ..stored };
            let (out, whole) = state.slot_to_write(stored, durable);
            let shown = out.is_ok();
            let deps = state.inodes.entry(ino).or_default();
            let mut satisfied = Vec::new();
            // The slot written is older than what the waiters wait for.
            let shown = shown && !deps.unstored;
            let freed = match &out {
                Ok(inode) => inode.attr.mode == 0,
                Err(prior) => Inode::decode(prior).map_or(true, |i| i.attr.mode == 0),
            };
            deps.waiters.retain(|(w, need)| {
                let met = match need {
                    Shows::Inode => shown && !freed,
                    Shows::Whole => shown && !freed && whole,
                    Shows::Freed => freed,
                    Shows::Dropped => freed || (shown && whole),
                };
                if met {
                    satisfied.push(w.clone());
                    false
                } else {
                    true
                }
            });
            state.starting.entry(key).or_default().extend(satisfied);
            match out {
                Ok(out) if out == stored => {}
                Ok(out) => {
                    let copy = copy.get_or_insert_with(|| AlignedBytes::copy_of(data));
                    if out.encode(&mut copy[at..at + INODE_SIZE]).is_err() {
                        continue;
                    }
                }
                Err(prior) => {
                    let copy = copy.get_or_insert_with(|| AlignedBytes::copy_of(data));
                    copy[at..at + INODE_SIZE].copy_from_slice(&prior);
                }
            }
        }
        copy.map(Arc::new)
    }

    /// The copy of directory block `key` to write: each chunk held back by
    /// a rename (`Guard`) as it was before it, and each entry whose add
    /// waits shown as before it (free, or the name it replaced). What the
    /// copy shows is what the write satisfies: adds shown, removals in
    /// chunks written as they are now.
    pub(super) fn rolled_back_dir_block(
        &self,
        key: BlockKey,
        data: &BlockData,
        durable: Seq,
    ) -> Option<BlockData> {
        let mut guard = self.state();
        let state = &mut *guard;
        if !state.adds.contains_key(&key)
            && !state.guards.contains_key(&key)
            && !state.removals.contains_key(&key)
        {
            return None;
        }
        let bs = data.len() as u64;
        let mut adds = state.adds.remove(&key).unwrap_or_default();
        let met = |state: &State, a: &Add| !a.ghost && a.waits.iter().all(|c| state.cond_met(c, durable));
        // The chunks a rename holds back: in each, the oldest rename whose
        // new name is not durable, unless its new name is in the same
        // chunk and may be shown now (one sector: both names change in
        // the one write). Its image is the chunk before it.
        let mut imaged: HashMap<usize, Arc<[u8]>> = HashMap::new();
        if let Some(guards) = state.guards.get_mut(&key) {
            guards.retain(|g| !is_durable(&g.shown, durable));
        }
        let guards = state.guards.remove(&key).unwrap_or_default();
        for g in &guards {
            if imaged.contains_key(&g.chunk) {
                continue;
            }
            let same_chunk = (g.new_dir, g.new_offset / bs) == (key.0, key.1 as u64)
                && (g.new_offset % bs) as usize / DIRBLKSIZ == g.chunk;
            let passes = same_chunk
                && adds
                    .iter()
                    .any(|a| a.shown.as_ref().is_some_and(|w| Arc::ptr_eq(w, &g.shown)) && met(state, a));
            if !passes {
                imaged.insert(g.chunk, g.image.clone());
            }
        }
        let mut copy: Option<AlignedBytes> = None;
        for (&chunk, image) in &imaged {
            let at = chunk * DIRBLKSIZ;
            if at + DIRBLKSIZ <= data.len() {
                copy.get_or_insert_with(|| AlignedBytes::copy_of(data))[at..at + DIRBLKSIZ]
                    .copy_from_slice(image);
            }
        }
        // Entries whose adds wait (and ghosts) are shown as before them,
        // wherever the copy holds them.
        let mut restored: Vec<(usize, Ino)> = Vec::new();
        let mut resealed: HashSet<usize> = HashSet::new();
        for add in &adds {
            if met(state, add) {
                continue;
            }
            let at = add.offset;
            let view: &[u8] = copy.as_deref().unwrap_or(data);
            if at + ENTRY_HEADER > view.len()
                || u64::from(u32::from_le_bytes([view[at], view[at + 1], view[at + 2], view[at + 3]]))
                    != add.ino
            {
                continue;
            }
            // A ghost whose space a live entry of the same file took since
            // (a name not yet durable renamed again, into the space the
            // last one left): only a copy showing the ghost's own name
            // rolls back; one showing the live entry as the cache holds it
            // shows that entry, whose rename waits for it.
            if add.ghost && adds.iter().any(|a| !a.ghost && a.offset == at && a.ino == add.ino) {
                let chunk = at - at % DIRBLKSIZ;
                let chunk_offset = key.1 as u64 * bs + chunk as u64;
                let live = data
                    .get(chunk..chunk + DIRBLKSIZ)
                    .and_then(|c| entry_at(c, key.0, chunk_offset, at - chunk));
                if live.is_some_and(|e| shows_entry(view, at, e)) {
                    continue;
                }
            }
            let c = copy.get_or_insert_with(|| AlignedBytes::copy_of(data));
            let (ino, dtype) = add.previous.unwrap_or((0, dt::UNKNOWN));
            c[at..at + 4].copy_from_slice(&(ino as u32).to_le_bytes());
            if add.previous.is_some() {
                c[at + 6] = dtype;
                restored.push((at, ino));
            }
            resealed.insert(at / DIRBLKSIZ);
        }
        if let Some(c) = copy.as_mut() {
            for chunk in resealed {
                let at = chunk * DIRBLKSIZ;
                seal_chunk(&mut c[at..at + DIRBLKSIZ]);
            }
        }
        // An image is the whole chunk as it was before its rename, other
        // files' entries too. One the cache no longer holds, which nothing
        // keeps, goes from the copy: a removal may always reach the disk
        // first (its file's count stays raised until it has), and no later
        // copy shows it again, so that what the removal frees is never
        // named. Kept, a removal waited for the image's rename, whose new
        // name could be waiting in turn for that removal (`Cond::ImageGone`:
        // a name a file's rename left, taken by another file's rename,
        // before either was durable).
        let block_offset = key.1 as u64 * bs;
        for &chunk in imaged.keys() {
            let Some(c) = copy.as_mut() else { break };
            let Some(bytes) = c.get_mut(chunk * DIRBLKSIZ..(chunk + 1) * DIRBLKSIZ) else { continue };
            let chunk_offset = block_offset + (chunk * DIRBLKSIZ) as u64;
            let Some(cached) = data.get(chunk * DIRBLKSIZ..(chunk + 1) * DIRBLKSIZ) else { continue };
            let gone: Vec<usize> = match crate::format::dirent::parse_chunk(bytes, key.0, chunk_offset) {
                Ok(entries) => entries
                    .iter()
                    .filter(|e| {
                        let entry = (e.ino, e.dtype, e.name);
                        e.ino != 0
                            && entry_at(cached, key.0, chunk_offset, e.offset) != Some(entry)
                            && !kept_entry(&guards, &adds, key.0, chunk_offset, chunk, e.offset, entry)
                    })
                    .map(|e| e.offset)
                    .collect(),
                Err(_) => continue,
            };
            for &within in &gone {
                bytes[within..within + 4].copy_from_slice(&0u32.to_le_bytes());
            }
            if !gone.is_empty() {
                seal_chunk(bytes);
            }
        }
        let view: &[u8] = copy.as_deref().unwrap_or(data);
        let shows = |a: &Add| {
            let at = a.offset;
            at + 4 <= view.len()
                && u64::from(u32::from_le_bytes([view[at], view[at + 1], view[at + 2], view[at + 3]]))
                    == a.ino
        };
        // Adds met and shown are done; the rest wait on. Ghosts stay while
        // a guard may image their chunk.
        let mut satisfied = Vec::new();
        adds.retain(|a| {
            if a.ghost {
                return guards.iter().any(|g| g.chunk == a.offset / DIRBLKSIZ);
            }
            if met(state, a) && shows(a) {
                satisfied.extend(a.shown.clone());
                return false;
            }
            true
        });
        // A removal is done by a write whose copy no longer holds the
        // entry: its chunk as it is now, unless the entry is restored there
        // (a change rolled back), or a guard's image of it (with what is
        // restored in it) from before the entry went. A removal held while
        // any image was written instead waited on a later rename's image,
        // which waited in turn for a new entry of the removed name, which
        // waits for the removal.
        let removals = state.removals.remove(&key).unwrap_or_default();
        let block_offset = key.1 as u64 * bs;
        let (done, held): (Vec<_>, Vec<_>) = removals.into_iter().partition(|(at, ino, _)| {
            let chunk = at / DIRBLKSIZ;
            if !imaged.contains_key(&chunk) {
                return !restored.contains(&(*at, *ino));
            }
            let written = view.get(chunk * DIRBLKSIZ..(chunk + 1) * DIRBLKSIZ);
            let chunk_offset = block_offset + (chunk * DIRBLKSIZ) as u64;
            written.is_some_and(|w| !chunk_holds(w, key.0, chunk_offset, at % DIRBLKSIZ, *ino))
        });
        satisfied.extend(done.into_iter().map(|(_, _, w)| w));
        if !held.is_empty() {
            state.removals.insert(key, held);
        }
        if !adds.is_empty() {
            state.adds.insert(key, adds);
        }
        if !guards.is_empty() {
            state.guards.insert(key, guards);
        }
        if !satisfied.is_empty() {
            state.starting.entry(key).or_default().extend(satisfied);
        }
        copy.map(Arc::new)
    }

    pub(super) fn rolled_back_indirect(
        &self,
        key: BlockKey,
        data: &BlockData,
        ctx: &WriteContext,
    ) -> Option<BlockData> {
        let mut state = self.state();
        let safe = state.indirect.get(&key)?.clone();
        let count = ctx.tree.pointers_in(data.len()) as usize;
        let all_safe = (0..count).all(|i| {
            let at = ctx.tree.pointer_offset(i);
            let raw = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            state.pointee_safe(Daddr::from_pointer(raw), ctx.durable)
        });
        if all_safe {
            state.indirect.remove(&key);
            return None;
        }
        Some(safe)
    }
}

/// An entry as rollbacks compare them: inode, type and name.
type EntryId<'a> = (Ino, u8, &'a [u8]);

/// The entry of `chunk` (at `chunk_offset` of directory `dir`) that starts
/// at byte `within`, if one does (not the remains of one removed, which
/// the entry before it took over).
fn entry_at(chunk: &[u8], dir: Ino, chunk_offset: u64, within: usize) -> Option<EntryId<'_>> {
    let entry = crate::format::dirent::entry_in_chunk(chunk, dir, chunk_offset, within).ok()??;
    Some((entry.ino, entry.dtype, entry.name))
}

/// Whether the bytes at `at` of `block` are the header and name of `entry`
/// (a copy being rolled back, whose chunks are sealed only at the end).
fn shows_entry(block: &[u8], at: usize, (ino, dtype, name): EntryId<'_>) -> bool {
    let header = block.get(at..at + ENTRY_HEADER);
    let shown = block.get(at + ENTRY_HEADER..at + ENTRY_HEADER + name.len());
    header.is_some_and(|h| {
        u64::from(u32::from_le_bytes([h[0], h[1], h[2], h[3]])) == ino
            && h[6] == dtype
            && h[7] as usize == name.len()
    }) && shown == Some(name)
}

/// Whether an image of chunk `chunk` (at `chunk_offset` of directory
/// `dir`) must keep its `entry` at byte `within`, which the cache no
/// longer holds: while that file's rename keeps it as its old name (the
/// entry is in the image of a guard that moved it), or while another
/// entry replaced it in place (a rename over it, not yet durable: the
/// name names one of the two; not a ghost, whose file has moved on).
fn kept_entry(
    guards: &[Guard],
    adds: &[Add],
    dir: Ino,
    chunk_offset: u64,
    chunk: usize,
    within: usize,
    entry: EntryId<'_>,
) -> bool {
    let (ino, at) = (entry.0, chunk * DIRBLKSIZ + within);
    guards.iter().any(|g| {
        g.chunk == chunk && g.moved == ino && entry_at(&g.image, dir, chunk_offset, within) == Some(entry)
    }) || adds.iter().any(|a| !a.ghost && a.offset == at && a.previous.is_some_and(|(p, _)| p == ino))
}

/// Whether a chunk as written (at `chunk_offset` of directory `dir`)
/// holds a live entry at byte `at` of the chunk naming `ino`. A chunk that
/// does not parse counts as holding it: the removal waits for a later
/// write rather than being counted done.
fn chunk_holds(chunk: &[u8], dir: Ino, chunk_offset: u64, at: usize, ino: Ino) -> bool {
    match crate::format::dirent::entry_in_chunk(chunk, dir, chunk_offset, at) {
        Ok(entry) => entry.is_some_and(|e| e.ino == ino),
        Err(_) => true,
    }
}
