//! Phase 1, blocks and sizes (1993 paper Table 2: traverse inodes, validate
//! every block pointer, record each inode's state and type and the blocks
//! of every directory), and phase 1b (every claimant of a duplicate).
//!
//! Which inodes are in use is read from the inode tables, never from the
//! bitmaps (stale after a crash): every slot of every group below the
//! group's initialised mark. A slot is in use when its mode is non-zero and
//! it carries its own inode number; one that also passes its checksum is
//! taken as it is. One that fails its checksum but carries its number and a
//! known file type is kept and checked like any other — fsck_ffs does the
//! same with an inode whose check-hash fails — and repair recomputes its
//! checksum; anything else there is cleared.
//!
//! Each in-use inode's pointers come from the block-map engine's walk
//! (`bmap::walk`): the direct blocks, the indirect trees (an indirect block
//! followed only when its trailer binds it to this file and position, so a
//! wild pointer costs one report and a loop of indirect blocks ends), the
//! extended-attribute block. Every block is a whole block at a block
//! boundary in some group's data area, except a file's tail: the last
//! block, when it is direct, the size does not end on a block boundary and
//! no block after it is allocated, which holds just enough fragments and
//! may start anywhere inside one block (`ffs/blocks.rs`). A pointer that
//! breaks this, leads to an unsound indirect block or a damaged
//! extended-attribute block is cleared by repair.
//!
//! A fragment claimed twice is found when the second claim is made; phase
//! 1b walks the in-use inodes again to find every claimant. As in fsck_ffs
//! the duplicated fragments go to no file — which one is right cannot be
//! told — except to an indirect block, whose trailer names its file and
//! position, and to a pointer from an inode that passes its checksum when
//! every other claimant's inode fails it (a flipped pointer in a damaged
//! inode must not cost a sound file its block); but only the pointers to
//! them are cleared (holes), not, as
//! fsck_ffs does, every inode that holds one, so the rest of each file is
//! kept. Giving each claimant a copy instead (e2fsck) would show one file's
//! data in another's.

use super::{Checker, GroupScan};
use crate::tree::InodeInfo;
use crate::{Fix, Kind, Severity};
use fslab::bmap;
use fslab::ffs::bitmap::Bitmap;
use fslab::ffs::cg::CylinderGroup;
use fslab::ffs::Frag;
use fslab::format::blockno::{is_indirect, Parent, INDIRECT_SECTOR, NDADDR, POINTERS_PER_SECTOR, XATTR_LBN};
use fslab::format::dirent::{dt, dt_from_mode};
use fslab::format::inode::{Inode, InodeError, INODE_SIZE};
use fslab::format::{Daddr, Ino, Lbn, ROOT_INO};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Problems reported for one inode before the rest are only counted.
const MAX_PROBLEMS_PER_INODE: u32 = 16;

/// What an inode slot holds.
enum Slot {
    /// Zeros, or an inode freed (mode 0, sound).
    Free,
    /// An inode; `sealed` is false when it fails its checksum.
    InUse { inode: Box<Inode>, sealed: bool },
    /// Nothing usable, and why.
    Garbage(String),
}

/// What slot `ino` holds (see the module comment).
fn classify(slot: &[u8], ino: Ino) -> Slot {
    if slot.iter().all(|&b| b == 0) {
        return Slot::Free;
    }
    match Inode::decode(slot) {
        Ok(inode) if inode.ino != ino => Slot::Garbage(format!("it holds inode {}", inode.ino)),
        Ok(inode) if inode.attr.mode == 0 => Slot::Free,
        Ok(inode) => Slot::InUse { inode: Box::new(inode), sealed: true },
        Err(InodeError::Truncated) => Slot::Garbage("short slot".into()),
        Err(InodeError::Checksum) => match Inode::decode_unsealed(slot) {
            Some(inode) if inode.ino == ino && dt_from_mode(inode.attr.mode) != dt::UNKNOWN => {
                Slot::InUse { inode: Box::new(inode), sealed: false }
            }
            Some(inode) if inode.ino == ino && inode.attr.mode == 0 => {
                Slot::Garbage("a free slot that fails its checksum".into())
            }
            _ => Slot::Garbage("checksum mismatch".into()),
        },
    }
}

/// Whether `inode` has no block pointer at all.
/// Whether `inode` points to a data block (its xattr block aside).
fn holds_no_pointer(inode: &Inode) -> bool {
    inode.direct.iter().chain(&inode.indirect).chain(std::iter::once(&inode.xattr)).all(|a| a.is_none())
}

/// Which walk of an inode this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Only the highest data block with a pointer (for a size out of range).
    Survey,
    /// Phase 1: validate and claim.
    Claim,
    /// Phase 1b: note every claim of a duplicated fragment.
    FindDups,
}

/// A claim of a duplicated fragment, found by phase 1b.
#[derive(Debug, Clone)]
struct Claimant {
    ino: Ino,
    lbn: Lbn,
    start: Frag,
    frags: u32,
    /// The indirect block holding the pointer (`None`: the inode).
    parent: Option<Frag>,
    /// A sound indirect block: it is provably this file's.
    indirect: bool,
    dir: bool,
}

/// The walk of one inode: what `bmap::walk` reports, judged.
struct Walk<'c, 'a> {
    checker: &'c mut Checker<'a>,
    pass: Pass,
    ino: Ino,
    dir: bool,
    /// Direct pointers, judged after the walk (the tail depends on what
    /// follows them).
    direct: Vec<(Lbn, Frag)>,
    /// Whether a data block past the direct ones stays.
    later_data: bool,
    /// Addresses of the sound indirect blocks, by block number.
    indirect_at: HashMap<Lbn, Frag>,
    /// The indirect block the engine is about to read.
    pending: Option<Lbn>,
    /// Indirect blocks with some sectors that fail their checksums (and
    /// some that pass), and those sectors: the pointers there are cleared,
    /// the rest of the tree kept.
    bad_sectors: HashMap<Lbn, Vec<usize>>,
    found: Walked,
}

impl Walk<'_, '_> {
    /// The indirect block holding the pointer to `lbn`, if any.
    fn parent_of(&self, lbn: Lbn) -> Option<Frag> {
        match self.checker.tree.parent(lbn) {
            Some(Parent::Meta { meta, .. }) => self.indirect_at.get(&meta).copied(),
            _ => None,
        }
    }

    fn bad(&mut self, lbn: Lbn, why: String) {
        if self.pass == Pass::Claim {
            let parent = self.parent_of(lbn);
            self.found.bad.push((lbn, parent, why));
        }
    }

    /// Block `lbn` lives in the `frags` fragments at `start`, which passed
    /// the checks: claim them (or, in phase 1b, note a claim of a duplicate).
    fn claim(&mut self, lbn: Lbn, start: Frag, frags: u32) {
        let c = &mut *self.checker;
        if lbn >= 0 {
            self.found.last_data = self.found.last_data.max(Some(lbn as u64));
            if self.dir {
                self.found.data.push((lbn as u64, Daddr::new(start)));
            }
        }
        match self.pass {
            Pass::Survey => {}
            Pass::Claim => {
                c.report.counts.blocks += 1;
                self.found.held += frags as u64 * c.geo.frag_size as u64;
                for f in start..start + frags as u64 {
                    let g = c.geo.group_of(f);
                    let fpg = c.geo.fpg;
                    let map = c.model.claims.entry(g).or_insert_with(|| Bitmap::new(fpg));
                    let at = c.geo.within_group(f);
                    if map.get(at) {
                        c.dups.insert(f);
                    } else {
                        map.set(at);
                    }
                }
            }
            Pass::FindDups => {
                if (start..start + frags as u64).any(|f| c.dups.contains(&f)) {
                    let parent = self.parent_of(lbn);
                    self.found.claimants.push(Claimant {
                        ino: self.ino,
                        lbn,
                        start,
                        frags,
                        parent,
                        indirect: is_indirect(lbn),
                        dir: self.dir,
                    });
                }
            }
        }
    }

    /// Why the `frags` fragments at `start` cannot be a block of a file
    /// (a whole block when `frags` is a block), if they cannot.
    fn bad_run(&self, start: Frag, frags: u32) -> Option<String> {
        let geo = &self.checker.geo;
        let fpb = geo.frags_per_block as u64;
        let end = start.checked_add(frags as u64)?;
        if end > geo.total_frags {
            return Some(format!("points past the end of the file system ({} fragments)", geo.total_frags));
        }
        let g = geo.group_of(start);
        if geo.within_group(start) < geo.data_offset() {
            return Some(format!("points into the metadata of cylinder group {g}"));
        }
        if frags as u64 == fpb && !start.is_multiple_of(fpb) {
            return Some("is not at a block boundary (only a file's tail may be a fragment run)".into());
        }
        if start % fpb + frags as u64 > fpb {
            return Some(format!("runs {frags} fragments across a block boundary"));
        }
        None
    }

    /// Judges the direct pointers once the walk has seen everything after
    /// them: the tail is a run of its fragments, every other block whole.
    fn finish_direct(&mut self, size: u64) {
        let geo = self.checker.geo;
        let bs = geo.block_size as u64;
        let fpb = geo.frags_per_block;
        let candidate =
            (!self.dir && !size.is_multiple_of(bs) && size / bs < NDADDR as u64).then_some(size / bs);
        let tail = candidate.filter(|&t| {
            !self.later_data
                && !self.direct.iter().any(|&(j, f)| j as u64 > t && self.bad_run(f, fpb).is_none())
        });
        for (lbn, start) in std::mem::take(&mut self.direct) {
            let frags = match tail {
                Some(t) if t == lbn as u64 => geo.frags_for(size - t * bs) as u32,
                _ => fpb,
            };
            match self.bad_run(start, frags) {
                Some(why) => self.bad(lbn, format!("block {lbn} at {start} {why}")),
                None => self.claim(lbn, start, frags),
            }
        }
    }

    /// Reads the extended-attribute block at `start` and checks its magic
    /// and checksum.
    fn xattr_damage(&mut self, start: Frag) -> Option<String> {
        let block = match self.checker.read_at(start, self.checker.bs) {
            Ok(block) => block,
            Err(e) => {
                // Counted as an indirect block's failed read is: a device
                // that fails reads gets no repair, which would drop the
                // attributes for what may be a passing fault.
                self.checker.model.io_errors += 1;
                return Some(format!("cannot be read: {e}"));
            }
        };
        crate::xattr_block_damage(&block).map(str::to_string)
    }
}

impl bmap::Visitor for Walk<'_, '_> {
    fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool {
        let start = addr.get();
        let fpb = self.checker.geo.frags_per_block;
        if (0..NDADDR as Lbn).contains(&lbn) {
            self.direct.push((lbn, start));
            return false;
        }
        if let Some(Parent::Meta { meta, index }) = self.checker.tree.parent(lbn) {
            let sector = index / POINTERS_PER_SECTOR;
            if self.bad_sectors.get(&meta).is_some_and(|bad| bad.contains(&sector)) {
                self.bad(
                    lbn,
                    format!("block {lbn}: its pointer is in sector {sector} of indirect block {meta}, which fails its checksum"),
                );
                return false;
            }
        }
        if let Some(why) = self.bad_run(start, fpb) {
            self.bad(lbn, format!("block {lbn} at {start} {why}"));
            return false;
        }
        if is_indirect(lbn) {
            self.pending = Some(lbn);
            return true;
        }
        if lbn == XATTR_LBN && self.pass != Pass::Survey {
            if let Some(why) = self.xattr_damage(start) {
                self.bad(
                    lbn,
                    format!("extended-attribute block at {start} {why}; repair drops the attributes"),
                );
                return false;
            }
        }
        if lbn >= 0 {
            self.later_data = true;
        }
        self.claim(lbn, start, fpb);
        false
    }

    fn read(&mut self, addr: Daddr) -> fslab::Result<Vec<u8>> {
        let lbn = self.pending.take().unwrap_or(0);
        let mut block = self.checker.read_at(addr.get(), self.checker.bs).map_err(|e| {
            self.checker.model.io_errors += 1;
            fslab::Error::from(e)
        })?;
        if let Err(e) = self.checker.tree.check(&block, self.ino, lbn, addr) {
            // Each 512-byte sector carries its own checksum so that one
            // bad sector costs only its own pointers, not the tree below
            // the whole block.
            let bad = self.checker.tree.bad_sectors(&block, self.ino, lbn);
            if bad.is_empty() || bad.len() == block.len() / INDIRECT_SECTOR {
                return Err(e);
            }
            self.bad_sectors.insert(lbn, bad);
            // Sealed in memory so that the walk follows the good sectors;
            // `pointer` stops at every slot of the bad ones.
            self.checker.tree.seal(&mut block, self.ino, lbn);
        }
        self.claim(lbn, addr.get(), self.checker.geo.frags_per_block);
        self.indirect_at.insert(lbn, addr.get());
        // A bad sector of zeros (the rest of a torn write of a new block)
        // has no pointer for `pointer` to stop at; the repair must still
        // seal it, so one clear of its first slot stands for it.
        let empty: Vec<usize> = self.bad_sectors.get(&lbn).map_or_else(Vec::new, |bad| {
            bad.iter()
                .copied()
                .filter(|&s| {
                    block[s * INDIRECT_SECTOR..(s + 1) * INDIRECT_SECTOR - 4].iter().all(|&b| b == 0)
                })
                .collect()
        });
        for s in empty {
            if let Some(child) = self.checker.tree.child_lbn(lbn, s * POINTERS_PER_SECTOR) {
                self.bad(
                    child,
                    format!("sector {s} of indirect block {lbn} fails its checksum (no pointer in it)"),
                );
            }
        }
        Ok(block)
    }

    fn unreadable(&mut self, lbn: Lbn, addr: Daddr, error: fslab::Error) {
        let why = match error {
            fslab::Error::Io(e) => format!("indirect block {lbn} at {addr} cannot be read: {e}"),
            e => e.to_string(),
        };
        self.bad(lbn, why);
    }
}

/// What the walk of one inode found.
#[derive(Default)]
struct Walked {
    /// Bytes held by the pointers that stay.
    held: u64,
    /// The highest data block with a pointer that stays.
    last_data: Option<u64>,
    /// A directory's data blocks (lbn, address).
    data: Vec<(u64, Daddr)>,
    /// Pointers to clear: block, the indirect block holding the pointer, why.
    bad: Vec<(Lbn, Option<Frag>, String)>,
    /// Phase 1b: the claims of duplicated fragments.
    claimants: Vec<Claimant>,
}

impl Checker<'_> {
    /// Phase 1 and 1b (see the module comment).
    pub(crate) fn check_inodes(&mut self) {
        let ncg = self.geo.ncg;
        for g in 0..ncg {
            self.progress.tick("phase 1 (blocks and sizes)", g as u64, ncg as u64);
            let (mut scan, table) = self.scan_group(g);
            let base = g as Ino * self.geo.ipg as Ino;
            for (s, slot) in table.chunks_exact(INODE_SIZE).enumerate() {
                let ino = base + s as Ino;
                if ino >= ROOT_INO {
                    self.check_slot(ino, slot, &mut scan);
                }
            }
            self.model.groups.push(scan);
        }
        if !self.dups.is_empty() {
            self.resolve_duplicates();
        }
        self.check_block_counts();
    }

    /// Reads group `g`'s area and its inode table up to the mark.
    fn scan_group(&mut self, g: u32) -> (GroupScan, Vec<u8>) {
        let geo = self.geo;
        let area = self.read_at(geo.cg_addr(g), geo.cg_blocks() as usize * self.bs);
        let on_disk = match &area {
            Ok(bytes) => {
                CylinderGroup::decode(bytes, &geo, g, self.model.sb.fs_id).map_err(|e| e.to_string())
            }
            Err(e) => Err(format!("cylinder group {g} cannot be read: {e}")),
        };
        let mark = match &on_disk {
            Ok(cg) => cg.initialised_inodes(),
            Err(_) => area
                .ok()
                .and_then(|bytes| CylinderGroup::salvage_initialised_inodes(&bytes, &geo))
                .unwrap_or(geo.ipg),
        };
        let table_at = geo.group_base(g) + geo.inode_table_offset() as Frag;
        let (table, table_readable) = match self.read_at(table_at, mark as usize * INODE_SIZE) {
            Ok(table) => (table, true),
            Err(e) => {
                self.model.io_errors += 1;
                self.damage(
                    Kind::CylinderGroup,
                    None,
                    format!("cylinder group {g}: its inode table cannot be read: {e}"),
                    None,
                );
                (Vec::new(), false)
            }
        };
        let scan =
            GroupScan { on_disk, mark, table_readable, inodes_used: Bitmap::new(geo.ipg), directories: 0 };
        (scan, table)
    }

    /// Plans to clear inode `ino`'s slot, for `why`: damage, or a leak
    /// for an inode that holds nothing and has no links (an entry still
    /// naming it is reported, as damage, where the entries are checked).
    fn plan_clear(&mut self, ino: Ino, why: String, severity: Severity) {
        self.report.push(
            severity,
            Kind::Inode,
            Some(ino),
            format!("inode {ino}: {why}; repair clears it"),
            Some(Fix::ClearInode { ino }),
        );
        self.repair_of(ino).clear = true;
    }

    /// Checks the inode in `slot` (number `ino`) and, if it stays in use,
    /// records it in `scan` and for the later phases.
    fn check_slot(&mut self, ino: Ino, slot: &[u8], scan: &mut GroupScan) {
        let (inode, sealed) = match classify(slot, ino) {
            Slot::Free => return,
            Slot::Garbage(why) => {
                return self.plan_clear(
                    ino,
                    format!("its slot holds no valid inode ({why})"),
                    Severity::Damage,
                )
            }
            Slot::InUse { inode, sealed } => (*inode, sealed),
        };
        self.report.counts.inodes += 1;
        let a = inode.attr;
        let bs = self.bs as u64;
        if a.is_dir() && a.nlink == 0 && holds_no_pointer(&inode) {
            // What rmdir leaves when a crash comes after the directory's
            // blocks were freed and before its inode was.
            let why = "a directory with no links and no blocks (removed, then a crash)";
            return self.plan_clear(ino, why.into(), Severity::Leak);
        }
        let why_clear = if dt_from_mode(a.mode) == dt::UNKNOWN {
            Some(format!("mode {:#o} names no file type", a.mode))
        } else if ino == ROOT_INO && !a.is_dir() {
            Some("the root inode is not a directory (a new root is made)".into())
        } else if a.is_symlink() && (a.size == 0 || a.size > bs) {
            Some(format!("impossible size {} for a symbolic link", a.size))
        } else if a.is_node() && (a.size != 0 || inode.holds_data_pointer()) {
            // mknod makes them empty and nothing writes to them: a type
            // garbled from a file's (a salvaged checksum) cannot be trusted.
            Some(format!("a device, FIFO or socket with data (size {})", a.size))
        } else {
            None
        };
        if let Some(why) = why_clear {
            return self.plan_clear(ino, why, Severity::Damage);
        }
        if !sealed {
            self.damage(
                Kind::Inode,
                Some(ino),
                format!("inode {ino}: checksum mismatch; repair recomputes it (its fields are checked as any inode's)"),
                Some(Fix::SealInode { ino }),
            );
            self.repair_of(ino).seal = true;
        }
        let max_size = self.tree.max_blocks().saturating_mul(bs);
        let mut size = a.size;
        if !a.is_dir() && size > max_size {
            let last = self.walk(ino, &inode, size, Pass::Survey).last_data;
            size = last.map_or(0, |l| (l + 1) * bs);
        }
        let walked = self.walk(ino, &inode, size, Pass::Claim);
        self.report_bad_pointers(ino, &walked.bad);
        if a.is_dir() {
            size = walked.last_data.map_or(bs, |l| (l + 1) * bs);
            self.report.counts.directories += 1;
            self.dir_blocks.insert(ino, walked.data);
            scan.directories += 1;
        }
        if size != a.size {
            self.damage(
                Kind::Inode,
                Some(ino),
                format!(
                    "inode {ino}: impossible size {} for its type and blocks; repair sets it to {size}",
                    a.size
                ),
                Some(Fix::SetSize { ino, size }),
            );
            self.repair_of(ino).size = Some(size);
            self.sizes.insert(ino, size);
        }
        self.held.insert(ino, walked.held);
        scan.inodes_used.set(self.geo.ino_slot(ino));
        self.inodes.insert(
            ino,
            InodeInfo {
                mode: a.mode,
                nlink: a.nlink,
                size,
                blocks: inode.blocks,
                readable: true,
                next_orphan: inode.next_orphan,
            },
        );
    }

    /// Reports the pointers of `ino` repair clears, a few one by one.
    fn report_bad_pointers(&mut self, ino: Ino, bad: &[(Lbn, Option<Frag>, String)]) {
        for (i, (lbn, parent, why)) in bad.iter().enumerate() {
            let (lbn, parent) = (*lbn, *parent);
            self.repair_of(ino).clear_pointers.push((lbn, parent));
            if i < MAX_PROBLEMS_PER_INODE as usize {
                self.damage(
                    Kind::BlockPointer,
                    Some(ino),
                    format!("inode {ino}: {why}; repair clears the pointer"),
                    Some(Fix::ClearPointer { ino, lbn }),
                );
            }
        }
        if let Some((lbn, _, _)) = bad.get(MAX_PROBLEMS_PER_INODE as usize) {
            let more = bad.len() - MAX_PROBLEMS_PER_INODE as usize;
            self.damage(
                Kind::BlockPointer,
                Some(ino),
                format!("inode {ino}: {more} more bad block pointers; repair clears them"),
                Some(Fix::ClearPointer { ino, lbn: *lbn }),
            );
        }
    }

    /// Walks every pointer of `inode` (whose size, as repaired, is `size`).
    fn walk(&mut self, ino: Ino, inode: &Inode, size: u64, pass: Pass) -> Walked {
        let tree = self.tree;
        let mut w = Walk {
            checker: self,
            pass,
            ino,
            dir: inode.attr.is_dir(),
            direct: Vec::new(),
            later_data: false,
            indirect_at: HashMap::new(),
            pending: None,
            bad_sectors: HashMap::new(),
            found: Walked::default(),
        };
        bmap::walk(&tree, inode, &mut w);
        if pass == Pass::Survey {
            for (lbn, _) in std::mem::take(&mut w.direct) {
                w.found.last_data = w.found.last_data.max(Some(lbn as u64));
            }
        } else {
            w.finish_direct(size);
        }
        w.found
    }

    /// Phase 1b: every claim of a duplicated fragment, then who keeps it
    /// (see the module comment).
    fn resolve_duplicates(&mut self) {
        let mut claimants = Vec::new();
        for g in 0..self.geo.ncg {
            self.progress.tick("phase 1b (duplicate blocks)", g as u64, self.geo.ncg as u64);
            let Some(mark) = self.model.groups.get(g as usize).filter(|s| s.table_readable).map(|s| s.mark)
            else {
                continue;
            };
            let table_at = self.geo.group_base(g) + self.geo.inode_table_offset() as Frag;
            let Ok(table) = self.read_at(table_at, mark as usize * INODE_SIZE) else { continue };
            let base = g as Ino * self.geo.ipg as Ino;
            for (s, slot) in table.chunks_exact(INODE_SIZE).enumerate() {
                let ino = base + s as Ino;
                if !self.inodes.contains_key(&ino) {
                    continue;
                }
                let Slot::InUse { inode, sealed } = classify(slot, ino) else { continue };
                let size = self.sizes.get(&ino).copied().unwrap_or(inode.attr.size);
                let found = self.walk(ino, &inode, size, Pass::FindDups).claimants;
                claimants.extend(found.into_iter().map(|c| (c, sealed)));
            }
        }
        let mut owners: BTreeMap<Frag, Vec<Ino>> = BTreeMap::new();
        let mut kept: HashSet<Frag> = HashSet::new();
        // Per duplicated fragment, the claims from inodes that pass their
        // checksum, other than indirect blocks' (kept anyway).
        let mut sealed_claims: HashMap<Frag, u32> = HashMap::new();
        for (c, sealed) in &claimants {
            for f in c.start..c.start + c.frags as u64 {
                if self.dups.contains(&f) {
                    owners.entry(f).or_default().push(c.ino);
                    if c.indirect {
                        kept.insert(f);
                    } else if *sealed {
                        *sealed_claims.entry(f).or_default() += 1;
                    }
                }
            }
        }
        // A sealed claim keeps its fragments when it is the only sealed
        // one on each and no indirect block holds any of them.
        let dup_frags = |c: &Claimant| (c.start..c.start + c.frags as u64).filter(|f| self.dups.contains(f));
        let keeps = |c: &Claimant, sealed: bool| {
            sealed
                && !c.indirect
                && dup_frags(c).all(|f| !kept.contains(&f) && sealed_claims.get(&f) == Some(&1))
        };
        let keepers: Vec<bool> = claimants.iter().map(|(c, sealed)| keeps(c, *sealed)).collect();
        for ((c, _), _) in claimants.iter().zip(&keepers).filter(|(_, &k)| k) {
            kept.extend(c.start..c.start + c.frags as u64);
        }
        let claimants: Vec<Claimant> =
            claimants.into_iter().zip(keepers).filter(|(_, k)| !k).map(|((c, _), _)| c).collect();
        for c in claimants.iter().filter(|c| !c.indirect) {
            let mut others: Vec<Ino> = (c.start..c.start + c.frags as u64)
                .filter_map(|f| owners.get(&f))
                .flatten()
                .copied()
                .filter(|&o| o != c.ino)
                .collect();
            others.sort_unstable();
            others.dedup();
            let with = if others.is_empty() {
                "another block of the same file".to_string()
            } else {
                format!("inode {}", others.iter().map(|o| o.to_string()).collect::<Vec<_>>().join(", "))
            };
            let (ino, lbn, start) = (c.ino, c.lbn, c.start);
            self.damage(
                Kind::DuplicateBlock,
                Some(ino),
                format!("inode {ino}: block {lbn} at {start} shares fragments with {with}; repair clears the pointer"),
                Some(Fix::ClearPointer { ino, lbn }),
            );
            self.repair_of(ino).clear_pointers.push((lbn, c.parent));
            let bytes = c.frags as u64 * self.geo.frag_size as u64;
            if let Some(h) = self.held.get_mut(&ino) {
                *h = h.saturating_sub(bytes);
            }
            if c.dir {
                if let Some(blocks) = self.dir_blocks.get_mut(&ino) {
                    blocks.retain(|&(l, _)| l != lbn as u64);
                }
            }
            for f in c.start..c.start + c.frags as u64 {
                if !self.dups.contains(&f) {
                    self.unclaim(f);
                }
            }
        }
        let lost: Vec<Frag> = self.dups.iter().copied().filter(|f| !kept.contains(f)).collect();
        for f in lost {
            self.unclaim(f);
        }
    }

    /// Fragment `f` is claimed by no pointer that stays.
    fn unclaim(&mut self, f: Frag) {
        let (g, at) = (self.geo.group_of(f), self.geo.within_group(f));
        if let Some(map) = self.model.claims.get_mut(&g) {
            map.clear(at);
        }
    }

    /// Each in-use inode's count of blocks held against its pointers that stay.
    fn check_block_counts(&mut self) {
        let mut inos: Vec<Ino> = self.inodes.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let held = self.held.get(&ino).copied().unwrap_or(0) / 512;
            let Some(info) = self.inodes.get_mut(&ino) else { continue };
            if info.blocks == held {
                continue;
            }
            let recorded = std::mem::replace(&mut info.blocks, held);
            // Either way a leak: the count is only reported (stat's
            // blocks), and nothing is allocated or freed by it.
            self.leak(
                Kind::Inode,
                Some(ino),
                format!(
                    "inode {ino}: records {recorded} blocks of 512 bytes but holds {held}; repair sets it"
                ),
                Some(Fix::SetBlocks { ino, blocks: held }),
            );
            self.repair_of(ino).blocks = Some(held);
        }
    }
}
