//! Entries, link counts and renames under soft updates: what a namespace
//! operation's hints leave waiting, a rename's guards of its old name,
//! and the rounds that make chains of new names durable (fsync, a
//! rename's settling).

use super::*;

impl Softdep {
    /// Starts tracking `ino`'s slot (stores it, so the block carries it).
    pub(super) fn track(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        fs.mark_inode_dirty(ino)?;
        fs.store_inode(ino)?;
        Ok(())
    }

    /// A waiter for the next write of `ino`'s slot. The inode is not
    /// stored in its block now but at the next sync, fsync or crowded
    /// write-back, as any changed inode is: stored at every name added, it
    /// dirtied an inode-table block per rename, and write-back went round
    /// every few hundred renames (MH's pack, a rename per file in name
    /// order, spread over a thousand blocks). What waits for it waits a
    /// little longer; nothing it orders changes. A write of the block
    /// before that store satisfies no waiter (`InodeDeps::unstored`).
    pub(super) fn wait_for_inode(&self, fs: &mut Ffs, ino: Ino, shows: Shows) -> Result<Written> {
        fs.mark_inode_dirty(ino)?;
        let w = new_written();
        let mut state = self.state();
        let deps = state.inodes.entry(ino).or_default();
        deps.waiters.push((w.clone(), shows));
        deps.unstored = true;
        Ok(w)
    }

    pub(super) fn entry_added(&self, fs: &mut Ffs, dir: Ino, offset: u64, ino: Ino) -> Result<()> {
        self.add_entry(fs, dir, offset, ino, None, None)
    }

    /// The entry at `offset` of `dir` names `ino` now: it waits for the
    /// inode (and what the same operation raised) to be durable; until
    /// then a write shows `previous` there (a rename over an existing
    /// name), or the slot free. A rename's new name has `shown`.
    pub(super) fn add_entry(
        &self,
        fs: &mut Ffs,
        dir: Ino,
        offset: u64,
        ino: Ino,
        previous: Option<(Ino, u8)>,
        shown: Option<Written>,
    ) -> Result<()> {
        let named = *fs.cached_inode(ino)?;
        let shows = if named.attr.is_reg() { Shows::Inode } else { Shows::Whole };
        let mut waits = vec![Cond::Write(self.wait_for_inode(fs, ino, shows)?)];
        let raised: Vec<Ino> = self.state().raised.clone();
        for other in raised.into_iter().filter(|&r| r != ino) {
            waits.push(Cond::Write(self.wait_for_inode(fs, other, Shows::Inode)?));
        }
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        // The entry's name, read back only while some rename's image may
        // hold one (a create's path otherwise).
        let imaging = !self.state().imaged_names.is_empty();
        let name = fs.cache.share(key).filter(|_| imaging).and_then(|block| {
            let within = (offset % bs) as usize;
            let chunk = within - within % DIRBLKSIZ;
            let bytes = block.get(chunk..chunk + DIRBLKSIZ)?;
            let chunk_offset = offset - (within % DIRBLKSIZ) as u64;
            let entry = crate::format::dirent::entry_in_chunk(bytes, dir, chunk_offset, within % DIRBLKSIZ)
                .ok()??;
            Some(name_key(dir, entry.name))
        });
        let mut state = self.state();
        if let Some(&(cg, since)) = state.inodes.get(&ino).and_then(|d| d.allocated.as_ref()) {
            waits.push(Cond::Group { cg, since });
        }
        // The same name, still in a rename's image of another chunk: shown
        // only once that image is gone (the disk never names two).
        // In the image's own chunk the one sector's write replaces the one
        // entry by the other (`rolled_back_dir_block`): no wait for it.
        let chunk = (key, (offset % bs) as usize / DIRBLKSIZ);
        let elsewhere: Vec<Imaged> = match name.and_then(|n| state.imaged_names.get_mut(&n)) {
            Some(imaged) => {
                imaged.retain(|i| i.alive.strong_count() > 0);
                imaged.iter().filter(|i| (i.key, i.chunk) != chunk).cloned().collect()
            }
            None => Vec::new(),
        };
        for i in elsewhere {
            // The image's entry, removed as a removal is: done by a write
            // whose copy of the chunk no longer holds it.
            let cleared = new_written();
            state.removals.entry(i.key).or_default().push((i.at, i.ino, cleared.clone()));
            let cond = Cond::ImageGone { guard: i.alive, key: i.key, ino: i.ino, cleared };
            state.awaited.entry(i.moved).or_default().push(cond.clone());
            state.awaited.entry(i.ino).or_default().push(cond.clone());
            waits.push(cond);
        }
        let add = Add { offset: (offset % bs) as usize, ino, previous, shown, waits, ghost: false };
        state.adds.entry(key).or_default().push(add);
        Ok(())
    }

    /// The entry at `offset` of `dir` naming `ino` is gone; `destroyed`
    /// when `ino` goes with it (rmdir, unlink: not a rename's move).
    /// Returns the entry's add if no write had shown it yet (then there is
    /// nothing to wait for).
    pub(super) fn entry_removed(
        &self,
        fs: &mut Ffs,
        dir: Ino,
        offset: u64,
        ino: Ino,
        destroyed: bool,
    ) -> Result<Option<Add>> {
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        let at = (offset % bs) as usize;
        {
            let mut state = self.state();
            if let Some(unshown) = state.take_unshown(key, at, ino) {
                // The entry never reached the disk: nothing to wait for.
                return Ok(Some(unshown));
            }
        }
        let live = *fs.cached_inode(ino)?;
        // Not stored in its block now: the slot's next write shows the
        // count raised by this removal until it is durable (`slot_to_write`),
        // and a file freed meanwhile keeps its slot until then
        // (`names_gone`), so the unlink dirties no inode block. FreeBSD's
        // dirrem likewise leaves the inode alone until the directory block
        // is written. A slot stored before this removal shows a count one
        // higher still: too high is a leak, never damage.
        fs.mark_inode_dirty(ino)?;
        let w = new_written();
        // The removal dirtied the block, unless the directory shrank and
        // freed it: then the entry is gone once the directory's inode is
        // durable without the block (or free).
        let dropped = !fs.cache.is_dirty(key);
        if dropped {
            self.track(fs, dir)?;
        }
        let mut state = self.state();
        if dropped {
            state.inodes.entry(dir).or_default().waiters.push((w.clone(), Shows::Dropped));
        } else {
            state.removals.entry(key).or_default().push((at, ino, w.clone()));
        }
        let deps = state.inodes.entry(ino).or_default();
        if deps.removals.is_empty() {
            deps.live = Some(live);
        }
        deps.removals.push(w);
        drop(state);
        if live.attr.is_dir() && destroyed {
            // The child's `..` names the parent until the child's slot is
            // free on disk (FreeBSD's rmdir dirrem on the child's inowait).
            let freed = self.wait_for_inode(fs, ino, Shows::Freed)?;
            let parent = *fs.cached_inode(dir)?;
            self.track(fs, dir)?;
            let mut state = self.state();
            let deps = state.inodes.entry(dir).or_default();
            if deps.removals.is_empty() {
                deps.live = Some(parent);
            }
            deps.removals.push(freed);
        }
        Ok(None)
    }

    /// A rename's hint, once the rename is known to be a regular file's
    /// (see `Rename::Soft`).
    pub(super) fn soft_rename_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        match hint {
            Hint::LinkCount { ino, nlink } => {
                if fs.stored_nlink(ino)?.is_none_or(|stored| nlink > stored) {
                    self.state().raised.push(ino);
                }
                Ok(())
            }
            Hint::EntryAdded { dir, offset, ino } => {
                let shown = new_written();
                self.add_entry(fs, dir, offset, ino, None, Some(shown.clone()))?;
                self.new_name(dir, offset, shown);
                self.settle_guards_hiding(fs, dir, offset)
            }
            Hint::EntryChanged { dir, offset, old, ino } if self.is_moved(dir) => {
                self.dotdot_changed(fs, dir, offset, old, ino)
            }
            Hint::EntryChanged { dir, offset, old, ino } => {
                let bs = fs.block_size() as u64;
                let (key, at) = ((dir, (offset / bs) as Lbn), (offset % bs) as usize);
                // What the disk has there: what the replaced entry's add
                // would have shown, if no write showed it yet; otherwise
                // the replaced entry, whose count falls once a write shows
                // the change.
                let before_type = self.state().before.get(&key).and_then(|b| b.get(at + 6).copied());
                let previous = match self.entry_removed(fs, dir, offset, old, true)? {
                    Some(unshown) => {
                        self.state().unshown_gone(&unshown, None);
                        unshown.previous
                    }
                    None => Some((old, before_type.unwrap_or(dt::UNKNOWN))),
                };
                let shown = new_written();
                self.add_entry(fs, dir, offset, ino, previous, Some(shown.clone()))?;
                self.new_name(dir, offset, shown);
                self.settle_guards_hiding(fs, dir, offset)
            }
            Hint::EntryRemoved { dir, offset, ino } => {
                let bs = fs.block_size() as u64;
                let key = (dir, (offset / bs) as Lbn);
                let (moved, new) = match &self.state().rename {
                    Rename::Soft { moved, new: Some(new) } => (*moved, new.clone()),
                    _ => return Err(errno(libc::EIO, "soft updates: a rename removed its old name first")),
                };
                let at = (offset % bs) as usize;
                match self.entry_removed(fs, dir, offset, ino, false)? {
                    // The old name never reached the disk: what did (an
                    // older name, if any) now waits for the new one.
                    Some(unshown) => {
                        self.state().unshown_gone(&unshown, Some(&new));
                        Ok(())
                    }
                    None => {
                        let mut state = self.state();
                        let removal = state
                            .removals
                            .get(&key)
                            .and_then(|r| r.iter().rev().find(|r| r.0 == at && r.1 == ino));
                        state.old_name_gone = removal.map(|r| r.2.clone());
                        drop(state);
                        self.guard_old_name(fs, key, at, moved, new)
                    }
                }
            }
            _ => Ok(()),
        }
    }

    /// Whether `ino` is what the open rename moves.
    fn is_moved(&self, ino: Ino) -> bool {
        matches!(self.state().rename, Rename::Soft { moved, .. } if moved == ino)
    }

    /// A moved directory's `..` at `offset` names its new parent `ino`
    /// instead of `old` [FreeBSD's DIRCHG on `..`]. The change is an entry
    /// added over another: shown once the new parent is durable with the
    /// count this rename raised (rule 1), the old parent until then; and a
    /// removal of a name of the old parent, whose count stays raised on the
    /// disk until the change is durable (rule 3). A crash between the
    /// rename's writes may leave the directory with both names, or with a
    /// `..` that names its other parent: what fsck settles after 4.4BSD's
    /// ordered writes too, with every count high enough. As in 4.4BSD's
    /// order the `..` changes last: not before the old name's removal is
    /// durable, so a `..` naming the new parent says the rename is done
    /// on the disk but for it, and fsck completes a rename cut short
    /// (both names, `..` naming the old parent) by keeping the new name.
    fn dotdot_changed(&self, fs: &mut Ffs, dir: Ino, offset: u64, old: Ino, ino: Ino) -> Result<()> {
        let previous = match self.entry_removed(fs, dir, offset, old, false)? {
            Some(unshown) => {
                self.state().unshown_gone(&unshown, None);
                unshown.previous
            }
            None => Some((old, dt::DIR)),
        };
        self.add_entry(fs, dir, offset, ino, previous, None)?;
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        let mut state = self.state();
        if let Some(gone) = state.old_name_gone.clone() {
            if let Some(add) = state.adds.get_mut(&key).and_then(|adds| adds.last_mut()) {
                add.waits.push(Cond::Write(gone));
            }
        }
        Ok(())
    }

    /// Records the open rename's new name.
    pub(super) fn new_name(&self, dir: Ino, offset: u64, shown: Written) {
        if let Rename::Soft { new, .. } = &mut self.state().rename {
            *new = Some((dir, offset, shown));
        }
    }

    /// The old name at `at` of block `key` is gone in memory: until the
    /// new name is durable, writes of its chunk show it as it was before
    /// the rename.
    pub(super) fn guard_old_name(
        &self,
        fs: &mut Ffs,
        key: BlockKey,
        at: usize,
        moved: Ino,
        (new_dir, new_offset, shown): (Ino, u64, Written),
    ) -> Result<()> {
        let chunk = at / DIRBLKSIZ;
        let mut state = self.state();
        if is_durable(&shown, fs.queue.durable()) {
            // Made durable already (its old name's block was freed).
            return Ok(());
        }
        let image: Option<Arc<[u8]>> = state
            .before
            .get(&key)
            .and_then(|b| b.get(chunk * DIRBLKSIZ..(chunk + 1) * DIRBLKSIZ))
            .map(Arc::from);
        let Some(image) = image else {
            // No image of the chunk from before the rename: the new name
            // is made durable now instead.
            drop(state);
            return self.settle_new_names(fs, &[(moved, new_dir, new_offset, shown)]);
        };
        let token = Arc::new(());
        let chunk_offset = key.1 as u64 * fs.block_size() as u64 + (chunk * DIRBLKSIZ) as u64;
        if let Ok(entries) = crate::format::dirent::parse_chunk(&image, key.0, chunk_offset) {
            for e in entries.iter().filter(|e| e.ino != 0) {
                let at = chunk * DIRBLKSIZ + e.offset;
                let imaged = Imaged { alive: Arc::downgrade(&token), key, chunk, at, ino: e.ino, moved };
                state.imaged_names.entry(name_key(key.0, e.name)).or_default().push(imaged);
            }
        }
        let guard = Guard { chunk, image, shown, moved, new_dir, new_offset, _alive: token };
        state.guards.entry(key).or_default().push(guard);
        Ok(())
    }

    /// A rename's new name at `offset` of `dir` lies in a chunk an older
    /// rename holds back: no write would show it until that rename's own
    /// new name is durable. New entries keep out of held chunks
    /// (`dir_chunk_held`), but a rename back to a name the disk still
    /// shows for the same file goes there (`dir_chunk_keeping`), and so
    /// does a change in place or an entry on a full disk. Two renames
    /// each in the other's held chunk would wait for each other for ever,
    /// so the older renames' new names are made durable now (this one's
    /// add is recorded first, so those writes do not show it).
    pub(super) fn settle_guards_hiding(&self, fs: &mut Ffs, dir: Ino, offset: u64) -> Result<()> {
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        let chunk = (offset % bs) as usize / DIRBLKSIZ;
        let durable = fs.queue.durable();
        let hiding: Vec<(Ino, Ino, u64, Written)> = self
            .state()
            .guards
            .get(&key)
            .map(|g| {
                g.iter()
                    .filter(|g| g.chunk == chunk && !is_durable(&g.shown, durable))
                    .map(|g| (g.moved, g.new_dir, g.new_offset, g.shown.clone()))
                    .collect()
            })
            .unwrap_or_default();
        self.settle_new_names(fs, &hiding)
    }

    /// A rename of `moved` is beginning (its first hint; nothing of it is
    /// changed yet). If an earlier rename of the file is not durable and
    /// a new entry waits for that rename's image to go (`Cond::ImageGone`),
    /// that rename's new name is made durable first. This rename may hand
    /// the earlier one's wait on to its own new name (`unshown_gone`), and
    /// that name may in turn wait for the image of the very rename whose
    /// new entry waits on the earlier one: swapping two files through a
    /// temporary name (`a` to `t`, `b` to `a`, `t` to `b`) leaves `b`'s
    /// new entry waiting for the image that shows `b` naming the other
    /// file, whose rename waits for `a`'s new entry, which waits for the
    /// image that shows `a` naming this one. Two images of one chunk can
    /// never both go, and a sync stalled there for ever. Images are
    /// dependencies kept per chunk, coarser than the per-entry ones soft
    /// updates are built on so that no cycle can form (2000 paper §4); a
    /// cycle is kept from forming here instead, at the cost of a settle
    /// in that rare case (a rename of a name not yet durable whose old
    /// image another name waits on).
    pub(super) fn settle_before_renaming(&self, fs: &mut Ffs, moved: Ino) -> Result<()> {
        let awaited = self.state().awaited_renames_of(moved, fs.queue.durable());
        self.settle_new_names(fs, &awaited)
    }

    /// What an fsync of `ino` still has to write (dirty blocks), and
    /// whether anything of its chain waits at all: `ino`'s blocks, the
    /// inodes of `ino` and of every directory on the way up through names
    /// not yet shown, those names' directory blocks, and for a directory
    /// the inodes its own new entries name.
    pub(super) fn fsync_chain(&self, fs: &mut Ffs, ino: Ino) -> Result<(Vec<BlockKey>, bool)> {
        let all = Lbn::MIN..=Lbn::MAX;
        let mut keys: Vec<BlockKey> = fs.cache.dirty_keys_in(ino, all.clone());
        let mut chain = vec![ino];
        let mut named: Vec<Ino> = Vec::new();
        let mut waiting = false;
        {
            let state = self.state();
            let mut i = 0;
            while i < chain.len() {
                let member = chain[i];
                i += 1;
                for (key, adds) in &state.adds {
                    if adds.iter().any(|a| !a.ghost && a.ino == member) {
                        waiting = true;
                        keys.push(*key);
                        if !chain.contains(&key.0) {
                            chain.push(key.0);
                        }
                    }
                }
            }
            for (key, adds) in &state.adds {
                if key.0 == ino {
                    waiting |= adds.iter().any(|a| !a.ghost);
                    named.extend(adds.iter().filter(|a| !a.ghost).map(|a| a.ino));
                }
            }
            waiting |= state.removals.keys().any(|k| k.0 == ino);
        }
        for &member in chain.iter().chain(named.iter()) {
            let key = fs.store_inode(member)?;
            keys.push(key);
            if member != ino && !fs.cached_inode(member)?.attr.is_reg() {
                keys.extend(fs.cache.dirty_keys_in(member, all.clone()));
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys.retain(|&k| fs.cache.is_dirty(k));
        waiting |= !keys.is_empty();
        Ok((keys, waiting))
    }

    /// Makes renames' new names durable now (each: the moved inode, the
    /// new name's directory and offset, and its first showing write), in
    /// `sync`'s order and a few barriers whatever their number: the groups
    /// (a new inode's bitmap), the moved inodes with their raised counts,
    /// then the new names' blocks, and a barrier; in rounds, since a new
    /// name may wait for another rename's image of the same name to go.
    /// Every rename held anywhere goes with them: barriers are paid for
    /// anyway, and a directory emptied from its end after a run of renames
    /// (MH's remove after its pack) released one held block after another,
    /// a thousand renames settled a barrier pair each.
    pub(super) fn settle_new_names(&self, fs: &mut Ffs, names: &[(Ino, Ino, u64, Written)]) -> Result<()> {
        let mut waiting: Vec<Written> = names.iter().map(|n| n.3.clone()).collect();
        for _ in 0..SETTLE_ROUNDS {
            let durable = fs.queue.durable();
            waiting.retain(|w| !is_durable(w, durable));
            if waiting.is_empty() {
                return Ok(());
            }
            let mut all: Vec<(Ino, Ino, u64)> = names.iter().map(|n| (n.0, n.1, n.2)).collect();
            all.extend(self.state().guards.values().flatten().map(|g| (g.moved, g.new_dir, g.new_offset)));
            self.settle_round(fs, &all)?;
        }
        Err(errno(libc::EIO, "soft updates: a rename's new name did not become durable"))
    }

    /// One round of `settle_new_names`.
    pub(super) fn settle_round(&self, fs: &mut Ffs, names: &[(Ino, Ino, u64)]) -> Result<()> {
        fs.write_groups()?;
        // A moved directory's or symbolic link's blocks before its inode,
        // the inodes before the names.
        let mut blocks = Vec::new();
        for &(moved, _, _) in names {
            if !fs.cached_inode(moved)?.attr.is_reg() {
                blocks.extend(fs.dirty_blocks_of(moved));
            }
        }
        fs.write_ordered(&blocks)?;
        // A moved directory's new parent, with the count its `..` raised,
        // is one of what the new name waits for.
        let mut inodes = Vec::new();
        for &(moved, new_dir, _) in names {
            inodes.push(fs.store_inode(moved)?);
            if fs.cached_inode(moved)?.attr.is_dir() {
                inodes.push(fs.store_inode(new_dir)?);
            }
        }
        inodes.sort_unstable();
        inodes.dedup();
        fs.write_ordered(&inodes)?;
        // A directory that grew in this transaction: its new blocks, then
        // its inode, so the name is reachable.
        let bs = fs.block_size() as u64;
        let (mut entries, mut grown) = (Vec::new(), Vec::new());
        for &(_, dir, offset) in names {
            if fs.grew_in_tx(dir) {
                entries.extend(fs.dirty_blocks_of(dir));
                grown.push(dir);
            } else {
                entries.push((dir, (offset / bs) as Lbn));
            }
        }
        // A new name waiting for an image of the same name in another
        // chunk to go (`Cond::ImageGone`) waits for a write of that chunk
        // without it, once the image's own rename is durable.
        entries.extend(self.state().adds.values().flatten().flat_map(|a| &a.waits).filter_map(|c| match c {
            Cond::ImageGone { key, .. } => Some(*key),
            _ => None,
        }));
        entries.sort_unstable();
        entries.dedup();
        fs.write_ordered(&entries)?;
        let mut dir_inodes = Vec::new();
        for dir in grown {
            dir_inodes.push(fs.store_inode(dir)?);
        }
        fs.write_ordered(&dir_inodes)?;
        fs.queue.flush()?;
        self.prune(fs.queue.durable());
        Ok(())
    }
}
