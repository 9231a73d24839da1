//! `realloc`: a file's run of delayed blocks moved to a contiguous free
//! run as the file is written — McKusick's `ffs_reallocblks`, the 1997
//! aging paper's "realloc algorithm" (Smith and Seltzer, §2: "before the
//! blocks are written to disk, however, the reallocation code gathers
//! clusters of logically sequential blocks and tries to relocate them to
//! free clusters of the appropriate size"), which its §4 found keeps an
//! aged FFS's files far closer to contiguous (layout score 0.899 against
//! 0.766 after ten simulated months).
//!
//! When it runs (4.4BSD `cluster_write`): a block was written to its end,
//! it continues the file's open run in the file (`cluster`), it is the
//! file's last block, and it landed somewhere other than right after the
//! run on the disk. Then the run and the block are given a new run of
//! contiguous whole blocks (`Allocator::cluster_alloc`, the cluster
//! summary's search), the pointers are changed, and the old places freed.
//! No data moves: the blocks were never written, and the cache holds them
//! by (inode, block), so each goes to whatever address its pointer names
//! when it is written (`Ffs::placements_of`).
//!
//! Every move goes through the integrity mode: each new place is
//! `block_allocated` (soft updates then hold back any pointer to it until
//! its contents and bitmap are durable), each pointer changes through the
//! inode or indirect block (which a journal logs), and each old place is
//! freed when `realloc_free_when` says — soft updates once the block
//! naming the new place is durable, a journal once its transaction
//! commits, `async` at once, `sync` at once for a run of direct blocks
//! (which it moves only if the inode on the disk names none of them,
//! `realloc_may_move`) and once the indirect block is durable for the
//! others.

use super::freed::Freed;
use super::fs::Ffs;
use crate::bmap;
use crate::format::blockno::{Parent, NDADDR};
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::Hint;
use crate::Result;

/// Percent of the data area a move must leave free (FreeBSD's
/// `freespace(fs, 4)`, asked before the move there: "running with less than 5% free block reserve is
/// not recommended and those that choose to do so do not expect to have
/// good file layout").
const MIN_FREE_PERCENT: u32 = 4;

impl Ffs {
    /// Block `lbn` of `ino`, at `addr`, was just written to its end. If it
    /// breaks the file's open run only by where it lies, moves the run and
    /// it to a contiguous run and returns the block's new address; `None`
    /// leaves everything as it was. Nothing moves (FreeBSD
    /// `ffs_reallocblks` answers ENOSPC, and the caller pushes the run as
    /// it stands) when:
    /// * `realloc` is off for this mount (FreeBSD's `vfs.ffs.doreallocblks`);
    /// * the file has no open run, or the block does not continue it in
    ///   the file, or already continues it on the disk (unless a test
    ///   asks for a move at every block, `MountOptions::realloc_always`);
    /// * the run would pass `maxcontig` blocks: a cluster at its maximum
    ///   is pushed, never grown (`cluster_write`: `v_clen <= cursize`);
    ///   and so with `maxcontig` 1 — no cluster summary worth the name,
    ///   FreeBSD's `fs_contigsumsize <= 0` — nothing ever moves;
    /// * the block is not the file's last (`cluster_write` tries only "at
    ///   end of file": a rewrite in the middle keeps its layout);
    /// * any block of the run has been on the disk since it joined, or is
    ///   not dirty (fslab's rule, stricter than FreeBSD, which moves any
    ///   buffer it gathers: a block that was written may be named by an
    ///   inode that is durable, whose data must then be rewritten — a
    ///   move would cost a write where it is meant to save seeks);
    /// * the move would leave less than 4% of the data area free
    ///   (FreeBSD asks for 4% before it; fslab after, since where a mode
    ///   defers frees the old places are not free again until the
    ///   operation's changes are durable, and the rest of the operation
    ///   must still find room), or would dig into the `minfree` reserve;
    /// * space is promised (`reserve_blocks`: an `fallocate` writing the
    ///   blocks it promised): a move takes whole blocks before it gives
    ///   any back, and a promise of every block left must be kept;
    /// * the run crosses from the direct blocks to the indirect ones
    ///   (FreeBSD: "indirect blocks are usually initially laid out in a
    ///   position between the data blocks", and moving the run would push
    ///   the first indirect block out of its way), or spans two indirect
    ///   blocks (FreeBSD reads a second map; fslab moves a run whose
    ///   pointers are in one place only: such a run is rare, one per
    ///   indirect block's worth of a file);
    /// * the run starts and the block lies in different cylinder groups
    ///   (FreeBSD: "the filesystem has decided to move and do not force it
    ///   back to the previous cylinder group" — `maxbpg` sent it on);
    /// * any block's pointer is not where the run says (the run is stale);
    /// * the integrity mode forbids it (`realloc_may_move`: `sync` moves a
    ///   run of direct blocks only if the inode on the disk names none);
    /// * no group has a free run of the length needed
    ///   (`Allocator::cluster_alloc`: 4.4BSD's `ffs_clusteralloc` through
    ///   `ffs_hashalloc`; FreeBSD's later limit of ten groups and its
    ///   `i_nextclustercg` memory of where the last search ended are not
    ///   kept).
    pub(super) fn realloc_run(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<Option<Daddr>> {
        if !self.realloc {
            return Ok(None);
        }
        let Some(run) = self.clusters.open_run(ino) else { return Ok(None) };
        let fpb = self.frags_per_block();
        let geo = self.sb.geometry;
        let len = run.blocks + 1;
        let follows = addr.get() == run.addr.get() + u64::from(run.blocks) * fpb;
        if lbn != run.first + Lbn::from(run.blocks)
            || (follows && !self.options.realloc_always)
            || len > geo.maxcontig
            || run.written
        {
            return Ok(None);
        }
        let bs = self.block_size() as u64;
        if self.cached_inode(ino)?.attr.size != (lbn as u64 + 1) * bs {
            return Ok(None);
        }
        let frags = i64::from(len) * fpb as i64;
        if self.reserved_frags > 0
            || self.alloc.free_space(MIN_FREE_PERCENT) < frags
            || self.alloc.free_space(self.sb.policy.minfree) < frags
        {
            return Ok(None);
        }
        let Some(map) = self.one_map(run.first, lbn) else { return Ok(None) };
        if geo.group_of(run.addr.get()) != geo.group_of(addr.get()) {
            return Ok(None);
        }
        let mut old = Vec::with_capacity(len as usize);
        for i in 0..len {
            let l = run.first + Lbn::from(i);
            let at = if l == lbn { addr } else { Daddr::new(run.addr.get() + u64::from(i) * fpb) };
            // A block held in part has its other bytes at its old place.
            let partial = self.cache.partial((ino, l)).is_some();
            if partial || !self.cache.is_dirty((ino, l)) || bmap::pointer(self, ino, l)? != at {
                return Ok(None);
            }
            old.push(at);
        }
        if !self.mode().realloc_may_move(self, ino, map, &old)? {
            return Ok(None);
        }
        let pref = self.blkpref(ino, run.first)?;
        // The indirect block holding the pointers stays in memory from
        // here to the last pointer changed, so no change can fail halfway
        // for want of it.
        if let Some(meta) = map {
            bmap::load_indirect(self, ino, meta)?;
        }
        let moved = self.with_pinned(map.map(|meta| (ino, meta)), |fs| {
            match fs.alloc.cluster_alloc(ino, pref.get(), len) {
                Some(new) => fs.move_run(ino, run.first, map, &old, Daddr::new(new)).map(Some),
                None => Ok(None),
            }
        });
        let Some(new) = moved? else { return Ok(None) };
        self.clusters.moved(ino, new);
        self.reallocated += 1;
        Ok(Some(Daddr::new(new.get() + u64::from(run.blocks) * fpb)))
    }

    /// Where the pointers of blocks `first ..= last` live, if in one place:
    /// `Some(None)` for the inode's direct pointers, `Some(Some(meta))`
    /// for indirect block `meta`; `None` when they are not all in one.
    fn one_map(&self, first: Lbn, last: Lbn) -> Option<Option<Lbn>> {
        if first < NDADDR as Lbn && last >= NDADDR as Lbn {
            return None;
        }
        match (self.tree.parent(first)?, self.tree.parent(last)?) {
            (Parent::Direct(_), Parent::Direct(_)) => Some(None),
            (Parent::Meta { meta: a, .. }, Parent::Meta { meta: b, .. }) if a == b => Some(Some(a)),
            _ => None,
        }
    }

    /// Points blocks `first ..` of `ino`, now at `old`, at the run of whole
    /// blocks from `new` (just allocated), and frees their old places.
    /// Returns `new`. Should a pointer fail to change, the blocks already
    /// moved stay moved (their old places freed) and the rest of the new
    /// run goes back at once: no pointer ever named it.
    fn move_run(
        &mut self,
        ino: Ino,
        first: Lbn,
        map: Option<Lbn>,
        old: &[Daddr],
        new: Daddr,
    ) -> Result<Daddr> {
        let fpb = self.frags_per_block();
        let to = |i: usize| Daddr::new(new.get() + i as u64 * fpb);
        let mut failed = None;
        for i in 0..old.len() {
            self.mode().block_allocated(self, to(i));
            let lbn = first + i as Lbn;
            if let Err(e) = bmap::set_pointer(self, ino, lbn, to(i)) {
                failed = Some((i, e));
                break;
            }
            self.tx.hint(Hint::BlocksAllocated { ino, lbn });
        }
        let moved = failed.as_ref().map_or(old.len(), |&(i, _)| i);
        for &from in &old[..moved] {
            self.mode().unwritten_block_dropped(self, from);
            self.free_reallocated(ino, map, Freed::Frags { start: from.get(), count: fpb as u32 })?;
        }
        match failed {
            None => Ok(new),
            Some((i, e)) => {
                for j in i..old.len() {
                    self.alloc.free(to(j).get(), fpb as u32)?;
                }
                Err(e)
            }
        }
    }
}
