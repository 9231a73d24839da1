//! The background scan that frees what a crash leaked on an image soft
//! updates kept: FreeBSD's `fsck -B` (2000 paper §4, "background fsck";
//! `integrity_and_aging.md` §1), run by the mount itself while it serves.
//!
//! Soft updates leave nothing wrong on the disk after a crash but leaks:
//! fragments marked in use that no pointer names, inodes in use that no
//! entry names, link counts higher than the names. The image mounts at
//! once; this scan, a slice per tick, finds those and gives them back.
//!
//! The file system changes under the scan between slices, so nothing is
//! judged from a view that may be stale:
//! * a fragment is *unclaimed* if it was in use when the scan began (a
//!   free pending then excluded) and no pointer seen since names it. Any
//!   free during the scan removes it from the set: a fragment freed and
//!   allocated again is not the one the scan began with. A pointer the
//!   scan has not reached yet cannot move to an inode it has passed
//!   without a free on the way, so an unclaimed fragment at the end was
//!   in use all along with nothing pointing at it;
//! * an inode is *touched* once anything changes its names or its link
//!   count, or it is allocated or freed, after the scan began. Only
//!   untouched inodes are judged: the entries naming one are the same at
//!   the end as when each directory was read.
//!
//! At the end, in this order: unclaimed fragments go back to their groups;
//! untouched inodes nothing names are freed (a directory only if it holds
//! nothing but `.` and `..`; one that holds more is left for fsck, which
//! reconnects it); everything is synced, so that no count falls before the
//! directories it counted are gone from the disk; then a link count higher
//! than the names found is lowered to them. Any error reading an inode or
//! a directory stops the scan before it frees anything. What only fsck
//! repairs (`LeakReport::left_for_fsck`) is counted and left.

use super::bitmap::Bitmap;
use super::freed::Freed;
use super::fs::Ffs;
use super::leak_scan::{LeakReport, LeakScan, LeakScanState, Seen};
use crate::bmap::{self, Visitor};
use crate::format::blockno::NDADDR;
use crate::format::dirent::{parse_chunk, DIRBLKSIZ};
use crate::format::inode::Inode;
use crate::format::{Daddr, Ino, Lbn, ROOT_INO};
use crate::storage::{transaction, Hint, StorageManager, TxKind, TxSpec};
use crate::{Error, Result};
use std::collections::{HashMap, HashSet};

/// Inodes (and directory blocks) one tick's slice reads at most.
const SLICE: u64 = 1024;

/// A scan of `ffs` as it stands: every fragment in use is unclaimed.
fn begin(ffs: &Ffs) -> LeakScan {
    let geo = ffs.sb.geometry;
    let mut unclaimed: Vec<Bitmap> = ffs
        .alloc
        .groups()
        .iter()
        .map(|g| {
            let mut map = Bitmap::new(geo.fpg);
            for f in geo.data_offset()..g.frags() {
                if !g.is_frag_free(f) {
                    map.set(f);
                }
            }
            map
        })
        .collect();
    for (start, count) in ffs.pending_free_runs() {
        for f in start..start + u64::from(count) {
            if let Some(map) = unclaimed.get_mut(geo.group_of(f) as usize) {
                map.clear(geo.within_group(f));
            }
        }
    }
    LeakScan {
        unclaimed,
        next: ROOT_INO,
        seen: HashMap::new(),
        names: HashMap::new(),
        blank: Vec::new(),
        touched: HashSet::new(),
    }
}

/// Collects an inode's pointers as `bmap::walk` finds them, reading its
/// indirect blocks as the cache holds them (sealed here, since a dirty
/// one is sealed only when written). Also the walk of `placement`.
pub(super) struct Pointers<'a> {
    fs: &'a mut Ffs,
    ino: Ino,
    last: Lbn,
    found: Vec<(Lbn, Daddr)>,
    failed: Option<Error>,
}

impl<'a> Pointers<'a> {
    /// A walk of inode `ino`'s pointers.
    pub(super) fn new(fs: &'a mut Ffs, ino: Ino) -> Pointers<'a> {
        Pointers { fs, ino, last: 0, found: Vec::new(), failed: None }
    }

    /// The pointers found, or the first indirect block that could not be
    /// read.
    pub(super) fn finish(self) -> Result<Vec<(Lbn, Daddr)>> {
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.found),
        }
    }
}

impl Visitor for Pointers<'_> {
    fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool {
        self.last = lbn;
        self.found.push((lbn, addr));
        true
    }

    fn read(&mut self, addr: Daddr) -> Result<Vec<u8>> {
        let (ino, lbn) = (self.ino, self.last);
        if self.fs.cache.get((ino, lbn)).is_none() {
            crate::bmap::BlockTree::read_indirect(self.fs, ino, lbn, addr)?;
        }
        let mut block =
            self.fs.cache.get((ino, lbn)).map(|b| b.to_vec()).ok_or_else(|| {
                crate::error::errno(libc::EIO, "indirect block evicted during the leak scan")
            })?;
        self.fs.tree.seal(&mut block, ino, lbn);
        Ok(block)
    }

    fn unreadable(&mut self, _lbn: Lbn, _addr: Daddr, error: Error) {
        self.failed.get_or_insert(error);
    }
}

impl Ffs {
    /// What the background leak scan found and freed on this mount.
    pub fn leak_report(&self) -> &LeakReport {
        &self.leak_report
    }

    /// At mount of an image soft updates kept and a crash left: starts the
    /// scan, run a slice at a time by [`Ffs::leak_scan_step`].
    pub(super) fn begin_leak_scan(&mut self) {
        let scan = begin(self);
        self.leak_report.state = LeakScanState::Running { next: scan.next, of: self.sb.geometry.ninodes() };
        self.leak_scan = Some(scan);
    }

    /// Inode `ino`'s names, link count or existence changed: the scan does
    /// not judge it.
    pub(super) fn leak_scan_touch(&mut self, ino: Ino) {
        if let Some(scan) = &mut self.leak_scan {
            scan.touched.insert(ino);
        }
    }

    /// What a free means to the scan.
    pub(super) fn leak_scan_freeing(&mut self, what: Freed) {
        let geo = self.sb.geometry;
        if let Some(scan) = &mut self.leak_scan {
            match what {
                Freed::Frags { start, count } => scan.claim(&geo, start, u64::from(count)),
                Freed::Inode { ino, .. } | Freed::File { ino, .. } => {
                    scan.touched.insert(ino);
                }
            }
        }
    }

    /// One slice of the scan (the tick's): up to [`SLICE`] inodes and
    /// directory blocks read, or the end. Returns whether a scan is still
    /// running.
    pub fn leak_scan_step(&mut self) -> Result<bool> {
        let Some(mut scan) = self.leak_scan.take() else { return Ok(false) };
        let of = self.sb.geometry.ninodes();
        let mut budget = SLICE;
        while budget > 0 && scan.next < of {
            let ino = scan.next;
            scan.next += 1;
            if !self.is_allocated(ino) {
                continue;
            }
            match self.slot_is_blank(ino).and_then(|blank| {
                if blank {
                    scan.blank.push(ino);
                    Ok(1)
                } else {
                    self.scan_inode(&mut scan, ino)
                }
            }) {
                Ok(cost) => budget = budget.saturating_sub(cost),
                Err(e) => {
                    self.leak_report.state =
                        LeakScanState::Stopped(format!("inode {ino} could not be read: {e}"));
                    return Ok(false);
                }
            }
        }
        if scan.next < of {
            self.leak_report.state = LeakScanState::Running { next: scan.next, of };
            self.leak_scan = Some(scan);
            return Ok(true);
        }
        self.free_leaks(scan)?;
        self.leak_report.state = LeakScanState::Done;
        Ok(false)
    }

    /// Reads inode `ino`: claims what it points at, and for a directory
    /// counts the names it holds. Returns the reads it cost.
    fn scan_inode(&mut self, scan: &mut LeakScan, ino: Ino) -> Result<u64> {
        let inode = *self.cached_inode(ino)?;
        let tree = self.tree;
        let mut walk = Pointers::new(self, ino);
        bmap::walk(&tree, &inode, &mut walk);
        let found = walk.finish()?;
        let geo = self.sb.geometry;
        let mut holds = 0;
        for &(lbn, addr) in &found {
            let frags = self.frags_at(&inode, lbn, &found);
            scan.claim(&geo, addr.get(), frags);
            holds += frags * self.frag_size() / 512;
        }
        let mut cost = 1;
        let mut dir = None;
        if inode.attr.is_dir() {
            let bs = self.block_size();
            let blocks = inode.attr.size.div_ceil(bs as u64);
            let mut parent = 0;
            let mut holds_more = false;
            let mut block = vec![0u8; bs];
            for lbn in 0..blocks {
                self.read_file_block(ino, lbn as Lbn, &mut block)?;
                for (c, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                    let offset = lbn * bs as u64 + (c * DIRBLKSIZ) as u64;
                    for e in parse_chunk(chunk, ino, offset)? {
                        match (e.ino, e.name) {
                            (0, _) => {}
                            (_, b".") => {}
                            (parent_ino, b"..") => parent = parent_ino,
                            (named, _) => {
                                holds_more = true;
                                scan.names.entry(named).or_default().push(ino);
                            }
                        }
                    }
                }
            }
            cost += blocks;
            dir = Some((parent, holds_more));
        }
        scan.seen.insert(ino, Seen { nlink: inode.attr.nlink, blocks: inode.blocks, holds, dir });
        Ok(cost)
    }

    /// The fragments pointer `lbn` of `inode` holds: a tail's (the last
    /// direct block, partly covered by the size, with nothing after it),
    /// else a whole block.
    pub(super) fn frags_at(&self, inode: &Inode, lbn: Lbn, pointers: &[(Lbn, Daddr)]) -> u64 {
        let fpb = self.frags_per_block();
        let bs = self.block_size() as u64;
        let size = inode.attr.size;
        let is_tail = (0..NDADDR as Lbn).contains(&lbn)
            && lbn as u64 == size / bs
            && !size.is_multiple_of(bs)
            && !pointers.iter().any(|&(other, _)| other > lbn);
        if is_tail {
            (size % bs).div_ceil(self.frag_size())
        } else {
            fpb
        }
    }

    /// The end of the scan (module comment): frees what nothing uses, then
    /// lowers counts.
    fn free_leaks(&mut self, scan: LeakScan) -> Result<()> {
        let geo = self.sb.geometry;
        for (cg, map) in scan.unclaimed.iter().enumerate() {
            let base = geo.group_base(cg as u32);
            let mut f = 0;
            while let Some(start) = map.find_in(f, map.len(), true) {
                // A run inside one block, as the groups free them.
                let block_end = (start / geo.frags_per_block + 1) * geo.frags_per_block;
                let end =
                    map.find_in(start, block_end.min(map.len()), false).unwrap_or(block_end.min(map.len()));
                if self.frags_still_in_use(cg, start, end) {
                    self.alloc.free(base + u64::from(start), end - start)?;
                    self.leak_report.frags_freed += u64::from(end - start);
                }
                f = end;
            }
        }
        self.free_blank_slots(&scan)?;
        // Directories a rename cut off, and every directory that may be
        // their parent: fsck decides.
        let mut unsure: HashSet<Ino> = HashSet::new();
        for (&ino, seen) in &scan.seen {
            let (Some((dotdot, _)), Some(parents)) = (seen.dir, scan.names.get(&ino)) else { continue };
            if parents.len() > 1 || parents.first() != Some(&dotdot) {
                unsure.insert(ino);
                unsure.insert(dotdot);
                unsure.extend(parents.iter().copied());
                if !scan.touched.contains(&ino) {
                    self.leak_report.left_for_fsck += 1;
                }
            }
        }
        let judged = |ino: &Ino| !scan.touched.contains(ino) && !unsure.contains(ino);
        let mut unnamed: Vec<Ino> = scan
            .seen
            .keys()
            .copied()
            .filter(|&ino| ino != ROOT_INO && judged(&ino) && !scan.names.contains_key(&ino))
            .collect();
        unnamed.sort_unstable();
        let mut freed = HashSet::new();
        for ino in unnamed {
            if self.orphans.contains(&ino) || !self.is_allocated(ino) {
                continue;
            }
            if scan.seen.get(&ino).and_then(|s| s.dir).is_some_and(|(_, holds_more)| holds_more) {
                self.leak_report.left_for_fsck += 1;
                continue;
            }
            let ((), ticket) = transaction(self, TxSpec::new(TxKind::Reclaim), |s| {
                s.free_blocks(ino, 0, u64::MAX)?;
                s.free_xattr(ino)?;
                s.vfree(ino)
            })?;
            ticket.wait()?;
            freed.insert(ino);
            self.leak_report.inodes_freed += 1;
        }
        if !freed.is_empty() {
            self.sync_all()?;
        }
        let mut children: HashMap<Ino, u32> = HashMap::new();
        for (&ino, seen) in &scan.seen {
            if let Some((parent, _)) = seen.dir {
                if parent != ino && !freed.contains(&ino) {
                    *children.entry(parent).or_default() += 1;
                }
            }
        }
        let mut high: Vec<(Ino, u32)> = Vec::new();
        for (&ino, seen) in &scan.seen {
            if freed.contains(&ino) || !judged(&ino) || self.orphans.contains(&ino) {
                continue;
            }
            let names = scan.names.get(&ino).map_or(0, |dirs| dirs.len() as u32);
            let expected = match seen.dir {
                // A directory's name, its `.`, and each child's `..`.
                Some(_) => {
                    names.max(u32::from(ino == ROOT_INO)) + 1 + children.get(&ino).copied().unwrap_or(0)
                }
                None => names,
            };
            if expected > 0 && seen.nlink > expected {
                high.push((ino, expected));
            }
        }
        high.sort_unstable();
        let mut wrong_blocks: Vec<(Ino, u64, u64)> = scan
            .seen
            .iter()
            .filter(|&(ino, s)| s.blocks != s.holds && !freed.contains(ino) && !scan.touched.contains(ino))
            .map(|(&ino, s)| (ino, s.blocks, s.holds))
            .collect();
        wrong_blocks.sort_unstable();
        for (ino, recorded, holds) in wrong_blocks {
            // Any change to the count since it was read touched the inode;
            // the same count read again is a second guard.
            if self.is_allocated(ino) && self.cached_inode(ino)?.blocks == recorded {
                self.cached_inode(ino)?.blocks = holds;
                self.mark_inode_dirty(ino)?;
                self.leak_report.block_counts_set += 1;
            }
        }
        for (ino, nlink) in high {
            if !self.is_allocated(ino) {
                continue;
            }
            let ((), ticket) = transaction(self, TxSpec::new(TxKind::SetAttr), |s| {
                let mut attr = s.vget(ino)?.attr;
                attr.nlink = nlink;
                s.hint(Hint::LinkCount { ino, nlink })?;
                s.update(ino, &attr)
            })?;
            ticket.wait()?;
            self.leak_report.links_lowered += 1;
        }
        Ok(())
    }

    /// Frees the inodes in use whose slots hold none. Their groups may
    /// count them as directories (a group reached the disk before the
    /// directory's slot, or the slot's clearing before the group): each
    /// group's count above the directories its other inodes hold is how
    /// many of its blank slots are freed as directories.
    fn free_blank_slots(&mut self, scan: &LeakScan) -> Result<()> {
        let geo = self.sb.geometry;
        let mut by_group: HashMap<u32, Vec<Ino>> = HashMap::new();
        for &ino in &scan.blank {
            if !scan.touched.contains(&ino) && !scan.names.contains_key(&ino) {
                by_group.entry(geo.ino_group(ino)).or_default().push(ino);
            }
        }
        let mut groups: Vec<(u32, Vec<Ino>)> = by_group.into_iter().collect();
        groups.sort_unstable();
        for (cg, blanks) in groups {
            let first = Ino::from(cg) * Ino::from(geo.ipg);
            let mut directories = 0u32;
            for ino in first.max(ROOT_INO)..first + Ino::from(geo.ipg) {
                if self.is_allocated(ino) && !blanks.contains(&ino) && !self.slot_is_blank(ino)? {
                    directories += u32::from(self.cached_inode(ino)?.attr.is_dir());
                }
            }
            let counted = self.alloc.groups().get(cg as usize).map_or(0, |g| g.counts().directories);
            let mut as_directories = counted.saturating_sub(directories);
            for ino in blanks {
                if !self.is_allocated(ino) || !self.slot_is_blank(ino)? {
                    continue;
                }
                let is_dir = as_directories > 0;
                as_directories -= u32::from(is_dir);
                self.inodes.remove(ino);
                self.alloc.vfree(ino, is_dir)?;
                self.leak_report.inodes_freed += 1;
            }
        }
        Ok(())
    }

    /// Whether fragments `start..end` of group `cg` are all still in use
    /// (a leak found unclaimed is; a guard against freeing twice).
    fn frags_still_in_use(&self, cg: usize, start: u32, end: u32) -> bool {
        self.alloc.groups().get(cg).is_some_and(|g| (start..end).all(|f| !g.is_frag_free(f)))
    }
}
