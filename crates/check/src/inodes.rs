//! Phases 2 and 3: the ifile, then every allocated inode and its block tree.
//!
//! A file's blocks are found from its inode: 12 direct pointers, the single,
//! double and triple indirect trees (an indirect block at level `L` whose
//! first data block is `d` is logical block `-d - (L - 1)`, 1993 paper
//! Fig. 6), and the extended-attribute block (logical block −1). Each
//! pointer must lie on the file system, outside the superblock copies, be
//! claimed once, and be confirmed by its partial segment's summary: a FINFO
//! naming this inode, this logical block and the inode map's current version.
//! An indirect block is only followed when confirmed, so a wild pointer costs
//! one report, not a tree of garbage.

use crate::image::{Checker, LostBlock, Role};
use crate::tree::InodeInfo;
use crate::{Fix, Kind};
use fslab::bmap;
use fslab::format::blockno::XATTR_LBN;
use fslab::format::codec::Decoder;
use fslab::format::dirent::{dt, dt_from_mode};
use fslab::format::inode::{kind, Inode, INODE_SIZE};
use fslab::format::{Daddr, Ino, Lbn, IFILE_INO, ROOT_INO};
use fslab::lfs::layout::{
    check_ifile_block, imap_entries_per_block, segtab_entries_per_block, CleanerInfo, ImapEntry, SegUse,
    IMAP_BYTES, SEGUSE_BYTES,
};

/// Problems reported for one inode before the rest are only counted.
const MAX_PROBLEMS_PER_INODE: u32 = 16;
/// Inode blocks kept decoded at once.
const INODE_BLOCK_CACHE: usize = 256;

/// The blocks of one file, as found by [`Checker::walk_file`].
struct FileWalk {
    ino: Ino,
    version: u32,
    /// Data blocks (lbn, address), if asked for.
    data: Option<Vec<(u64, Daddr)>>,
    /// Pointers found (data, indirect, xattr), confirmed or not.
    held: u64,
    problems: u32,
}

/// Why an inode is not where the inode map says, and what repair does.
enum Missing {
    /// Its block cannot be read: no repair, since the device may answer
    /// next time.
    Unreadable(String),
    /// Its slot fails only its checksum, and its type is one a file can
    /// have: repair seals it again (`Fix::SealInode`); its other fields
    /// are checked as any inode's. The inode as if sealed.
    Seal(String, Box<Inode>),
    /// The block holds no sound inode of that number, or the address lies
    /// off the log: repair frees the number (`Fix::ClearInode`).
    Clear(String),
}

impl Checker<'_> {
    /// Phase 2: reads the ifile of the checkpoint in `self.sb`. Returns false
    /// if this checkpoint's ifile cannot be used at all.
    pub(crate) fn load_ifile(&mut self) -> bool {
        let c = self.sb.checkpoint;
        let serial = c.serial;
        let at = c.ifile_daddr;
        let (role, in_checkpoint) = self.role(at);
        if !matches!(role, Role::Inodes { .. }) || !in_checkpoint {
            // Where no summary speaks of it (one was lost), the repair's
            // checkpoint writes the inode again, with a summary.
            let fix = matches!(role, Role::Nothing).then_some(Fix::RewriteInode { ino: IFILE_INO });
            self.damage(
                Kind::Summary,
                Some(IFILE_INO),
                format!("checkpoint {serial}: block {at}, named as the ifile inode's, is not an inode block of the log"),
                fix,
            );
        }
        let mut rebuilt = false;
        let inode = match self.find_inode(at, IFILE_INO) {
            Ok(inode) => inode,
            Err(why) => match self
                .read_block(at)
                .ok()
                .filter(|_| self.rebuild_ifile_inode_allowed)
                .and_then(|_| self.rebuild_ifile_inode(at))
            {
                // The block reads whole but not as written: rebuilt
                // (`ifile.rs`), its problem reported once the map says
                // what else it held.
                Some(inode) => {
                    rebuilt = true;
                    inode
                }
                None => {
                    self.damage(
                        Kind::Ifile,
                        Some(IFILE_INO),
                        format!("checkpoint {serial}: ifile inode: {why}"),
                        None,
                    );
                    return false;
                }
            },
        };
        self.add_live(at, INODE_SIZE as u64);
        let bs = self.bs as u64;
        let segtab = self.sb.segtab_blocks as u64;
        let size = inode.attr.size;
        let nblocks = size / bs;
        if !size.is_multiple_of(bs) || nblocks < 1 + segtab || nblocks > self.total_blocks {
            self.damage(
                Kind::Ifile,
                Some(IFILE_INO),
                format!("checkpoint {serial}: impossible ifile size {size}"),
                None,
            );
            return false;
        }
        let walk = self.walk_file(IFILE_INO, 0, &inode, true);
        let data = walk.data.unwrap_or_default();
        let mut by_lbn: Vec<Option<Daddr>> = Vec::new();
        if data.len() as u64 >= nblocks {
            by_lbn = vec![None; nblocks as usize];
            for &(lbn, daddr) in &data {
                if let Some(slot) = by_lbn.get_mut(lbn as usize) {
                    *slot = Some(daddr);
                }
            }
        }
        if by_lbn.iter().filter(|d| d.is_some()).count() as u64 != nblocks {
            self.damage(
                Kind::Ifile,
                Some(IFILE_INO),
                format!("checkpoint {serial}: the ifile is {nblocks} blocks long but has holes"),
                None,
            );
            return false;
        }
        self.check_held(IFILE_INO, &inode, walk.held);
        self.decode_tables(&by_lbn);
        if rebuilt {
            self.finish_inode_block();
        }
        true
    }

    /// Decodes the cleaner info, segment usage table and inode map block by
    /// block; an unreadable block leaves its entries unknown (`None`).
    fn decode_tables(&mut self, by_lbn: &[Option<Daddr>]) {
        let segtab = self.sb.segtab_blocks as usize;
        let nsegments = self.sb.nsegments as usize;
        let per_seg = segtab_entries_per_block(self.sb.block_size);
        let per_ino = imap_entries_per_block(self.sb.block_size);
        self.lost_ifile.clear();
        let mut lost_maps = Vec::new();
        for (lbn, daddr) in by_lbn.iter().enumerate() {
            self.progress.tick("phase 2 (ifile)", lbn as u64, by_lbn.len() as u64);
            let read = daddr.map(|d| (d, self.read_block(d)));
            let block = match read.map(|(d, r)| (d, r.map(|b| (check_ifile_block(&b, lbn as u64), b)))) {
                Some((_, Ok((Ok(()), block)))) => Some(block),
                Some((daddr, Ok((Err(e), _)))) => {
                    // Read whole but not what was written: rebuilt (`ifile.rs`).
                    let why = match e {
                        fslab::Error::Corrupt { why, .. } => format!("fails its check ({why})"),
                        _ => "fails its check".to_string(),
                    };
                    let lost = LostBlock { lbn: lbn as u64, daddr, why };
                    if lbn > segtab {
                        // Rebuilt below, every such block from one walk of
                        // the log; unknown meanwhile.
                        lost_maps.push((lost, self.imap.len() as Ino));
                        self.imap.resize(self.imap.len() + per_ino, None);
                        continue;
                    }
                    self.lost_ifile.push(lost);
                    None
                }
                _ => {
                    self.damage(
                        Kind::Ifile,
                        Some(IFILE_INO),
                        format!("ifile block {lbn} cannot be read"),
                        None,
                    );
                    None
                }
            };
            if lbn == 0 {
                self.cleaner = block.as_deref().and_then(|b| CleanerInfo::decode(b).ok());
            } else if lbn <= segtab {
                for i in 0..per_seg {
                    if self.seguse.len() == nsegments {
                        break;
                    }
                    let entry = block.as_deref().and_then(|b| SegUse::decode(b, i * SEGUSE_BYTES));
                    self.seguse.push(entry);
                }
            } else {
                for j in 0..per_ino {
                    let entry = block.as_deref().and_then(|b| ImapEntry::decode(b, j * IMAP_BYTES));
                    self.imap.push(entry);
                }
            }
        }
        if !lost_maps.is_empty() {
            self.rebuild_imap_blocks(lost_maps, per_ino);
        }
        if let Some(cleaner) = self.cleaner {
            if cleaner.ninodes != self.imap.len() as u64 {
                self.damage(
                    Kind::Ifile,
                    None,
                    format!(
                        "cleaner info counts {} inode numbers but the inode map holds {}",
                        cleaner.ninodes,
                        self.imap.len()
                    ),
                    None,
                );
            }
        }
    }

    /// Finds inode `ino` in the inode block at `daddr`: the slot holding that
    /// number with a valid checksum.
    pub(crate) fn find_inode(&mut self, daddr: Daddr, ino: Ino) -> Result<Inode, String> {
        self.find_inode_or_fix(daddr, ino).map_err(|missing| match missing {
            Missing::Unreadable(why) | Missing::Clear(why) | Missing::Seal(why, _) => why,
        })
    }

    /// As [`find_inode`](Self::find_inode), saying when it is not found
    /// what repair would do (see [`Missing`]).
    fn find_inode_or_fix(&mut self, daddr: Daddr, ino: Ino) -> Result<Inode, Missing> {
        if let Some(why) = self.bad_address(daddr) {
            return Err(Missing::Clear(format!("its block address {daddr} points {why}")));
        }
        if !self.inode_blocks.contains_key(&daddr) {
            if self.inode_blocks.len() >= INODE_BLOCK_CACHE {
                self.inode_blocks.clear();
            }
            let block = self.read_block(daddr).ok();
            self.inode_blocks.insert(daddr, block);
        }
        let Some(Some(block)) = self.inode_blocks.get(&daddr) else {
            return Err(Missing::Unreadable(format!("inode block {daddr} cannot be read")));
        };
        let mut unsealed = None;
        for slot in block.chunks_exact(INODE_SIZE) {
            let number = Decoder::new(slot).u64(0).unwrap_or(0);
            if number != ino {
                continue;
            }
            match Inode::decode(slot) {
                Ok(inode) => return Ok(inode),
                Err(_) => {
                    unsealed =
                        unsealed
                            .or(Inode::decode_unsealed(slot)
                                .filter(|i| dt_from_mode(i.attr.mode) != dt::UNKNOWN));
                }
            }
        }
        Err(match unsealed {
            Some(inode) => Missing::Seal(
                format!(
                    "inode block {daddr}: the inode's checksum does not match; repair recomputes it \
                     (its fields are checked as any inode's)"
                ),
                Box::new(inode),
            ),
            None => Missing::Clear(format!(
                "inode block {daddr} holds no sound inode of that number; repair clears it"
            )),
        })
    }

    /// Phase 3 (see the module comment).
    pub(crate) fn check_inodes(&mut self) {
        for ino in 0..self.imap.len().min(2) {
            if self.imap[ino].is_some_and(|e| e.daddr.is_some()) {
                self.damage(
                    Kind::Ifile,
                    None,
                    format!("inode map entry {ino} (not an inode) has an address"),
                    None,
                );
            }
        }
        let n = self.imap.len() as u64;
        for ino in 2..n {
            self.progress.tick("phase 3 (inodes and blocks)", ino, n);
            let Some(entry) = self.imap[ino as usize] else { continue };
            if entry.daddr.is_none() {
                continue;
            }
            self.report.counts.inodes += 1;
            self.check_inode(ino, entry);
        }
    }

    fn check_inode(&mut self, ino: Ino, entry: ImapEntry) {
        let unreadable = InodeInfo { mode: 0, nlink: 0, size: 0, blocks: 0, readable: false, next_orphan: 0 };
        let (role, in_checkpoint) = if self.bad_address(entry.daddr).is_none() {
            self.role(entry.daddr)
        } else {
            (Role::Nothing, true)
        };
        let found = self.find_inode_or_fix(entry.daddr, ino);
        if !matches!(role, Role::Inodes { .. }) || !in_checkpoint {
            let at = entry.daddr;
            let what =
                format!("inode {ino}: block {at}, named by the inode map, is not an inode block of the log");
            // As a block no summary speaks of (`visit`): an inode found
            // sound where its summary was lost is kept, written again.
            let (what, fix) = if matches!(role, Role::Nothing) && found.is_ok() {
                (
                    format!("{what}; repair writes the inode again at the log's head"),
                    Some(Fix::RewriteInode { ino }),
                )
            } else {
                (what, None)
            };
            self.damage(Kind::Summary, Some(ino), what, fix);
        }
        let inode = match found {
            Ok(inode) => inode,
            Err(Missing::Seal(why, unsealed)) => {
                self.damage(
                    Kind::Inode,
                    Some(ino),
                    format!("inode {ino}: {why}"),
                    Some(Fix::SealInode { ino }),
                );
                *unsealed
            }
            Err(missing) => {
                let (why, fix) = match missing {
                    Missing::Clear(why) => (why, Some(Fix::ClearInode { ino })),
                    Missing::Unreadable(why) | Missing::Seal(why, _) => (why, None),
                };
                self.damage(Kind::Inode, Some(ino), format!("inode {ino}: {why}"), fix);
                self.inodes.insert(ino, unreadable);
                return;
            }
        };
        self.add_live(entry.daddr, INODE_SIZE as u64);
        let a = inode.attr;
        if inode.generation != entry.version {
            self.damage(
                Kind::Inode,
                Some(ino),
                format!(
                    "inode {ino}: generation {} differs from the inode map's version {}",
                    inode.generation, entry.version
                ),
                None,
            );
        }
        let why_clear = if dt_from_mode(a.mode) == dt::UNKNOWN {
            Some(format!("mode {:#o} names no file type", a.mode))
        } else if ino == ROOT_INO && !a.is_dir() {
            Some("the root inode is not a directory (a new root is made)".to_string())
        } else if a.is_node() && (a.size != 0 || inode.holds_data_pointer()) {
            // mknod makes them empty and nothing writes to them: a type
            // garbled from a file's (a salvaged checksum) cannot be trusted.
            Some(format!("a device, FIFO or socket with data (size {})", a.size))
        } else {
            None
        };
        if let Some(why) = why_clear {
            self.damage(
                Kind::Inode,
                Some(ino),
                format!("inode {ino}: {why}; repair clears it"),
                Some(Fix::ClearInode { ino }),
            );
            self.inodes.insert(ino, unreadable);
            return;
        }
        let bs = self.bs as u64;
        let max_size = self.geometry.max_blocks().saturating_mul(bs);
        let bad_size = match a.kind() {
            kind::DIR => a.size == 0 || !a.size.is_multiple_of(bs),
            kind::LNK => a.size == 0 || a.size > bs,
            _ => a.size > max_size,
        };
        if bad_size {
            self.damage(
                Kind::Inode,
                Some(ino),
                format!("inode {ino}: impossible size {} for its type", a.size),
                None,
            );
        }
        let walk = self.walk_file(ino, entry.version, &inode, a.is_dir());
        self.check_held(ino, &inode, walk.held);
        if let Some(data) = walk.data {
            self.report.counts.directories += 1;
            self.dir_blocks.insert(ino, data);
        }
        self.inodes.insert(
            ino,
            InodeInfo {
                mode: a.mode,
                nlink: a.nlink,
                size: a.size,
                blocks: inode.blocks,
                readable: true,
                next_orphan: inode.next_orphan,
            },
        );
    }

    /// Compares the inode's count of blocks held with the pointers found.
    fn check_held(&mut self, ino: Ino, inode: &Inode, held: u64) {
        let units = held * (self.bs as u64 / 512);
        if inode.blocks != units {
            // Either way a leak: the count is only reported (stat's
            // blocks), and nothing is allocated or freed by it.
            self.leak(
                Kind::Inode,
                Some(ino),
                format!(
                    "inode {ino}: records {} blocks of 512 bytes but holds {held} blocks ({units})",
                    inode.blocks
                ),
                Some(Fix::SetBlocks { ino, blocks: units }),
            );
        }
    }

    /// Walks every block pointer of `inode` (see the module comment) with
    /// the block-map engine's walk.
    fn walk_file(&mut self, ino: Ino, version: u32, inode: &Inode, want_data: bool) -> FileWalk {
        let w = FileWalk { ino, version, data: want_data.then(Vec::new), held: 0, problems: 0 };
        let geometry = self.geometry;
        let mut visitor = WalkVisitor { checker: self, w };
        bmap::walk(&geometry, inode, &mut visitor);
        let w = visitor.w;
        if w.problems > MAX_PROBLEMS_PER_INODE {
            let more = w.problems - MAX_PROBLEMS_PER_INODE;
            self.damage(
                Kind::BlockPointer,
                Some(ino),
                format!("inode {ino}: {more} more bad block pointers"),
                None,
            );
        }
        w
    }

    /// Reports a problem with one of the walked file's pointers. Those
    /// repair cannot mend are capped per file (a garbled inode would bury
    /// the report); each one with a fix is reported, since a fix left out
    /// would not be made, and there are no more of them than the file has
    /// blocks.
    fn walk_problem(&mut self, w: &mut FileWalk, kind: Kind, what: String, fix: Option<Fix>) {
        if fix.is_none() {
            w.problems += 1;
            if w.problems > MAX_PROBLEMS_PER_INODE {
                return;
            }
        }
        let ino = w.ino;
        self.damage(kind, Some(ino), format!("inode {ino}: {what}"), fix);
    }

    /// Checks one pointer: block `lbn` of the walked file at `daddr`. Returns
    /// whether the block is the file's (in range and confirmed), so that
    /// it may be read and followed.
    fn visit(&mut self, w: &mut FileWalk, lbn: Lbn, daddr: Daddr) -> bool {
        let ino = w.ino;
        // Pointers the repair clears are not counted as held, so that the
        // count it sets is the one it leaves.
        w.held += 1;
        if let Some(why) = self.bad_address(daddr) {
            w.held -= 1;
            self.walk_problem(
                w,
                Kind::BlockPointer,
                format!("block {lbn} at {daddr} points {why}; repair clears the pointer"),
                Some(Fix::ClearPointer { ino, lbn }),
            );
            return false;
        }
        self.report.counts.blocks += 1;
        if !self.claim(daddr) {
            // No fix of its own: the claimer its summary does not confirm
            // is reported below, and its pointer cleared.
            self.walk_problem(
                w,
                Kind::DuplicateBlock,
                format!("block {lbn} at {daddr} is also claimed by another pointer"),
                None,
            );
        }
        let (role, in_checkpoint) = self.role(daddr);
        let ok = match role {
            Role::Block { ino, version, lbn: l, .. } => {
                ino as Ino == w.ino && version == w.version && l == lbn && in_checkpoint
            }
            _ => false,
        };
        if ok {
            self.add_live(daddr, self.bs as u64);
            if lbn == XATTR_LBN {
                // Read like any block (a failed read gets no repair: the
                // device may answer next time, and the attributes stay).
                let damage = match self.read_block(daddr) {
                    Ok(block) => crate::xattr_block_damage(&block),
                    Err(_) => None,
                };
                if let Some(why) = damage {
                    self.damage(
                        Kind::BlockPointer,
                        Some(ino),
                        format!("inode {ino}: extended-attribute block at {daddr} {why}; repair drops the attributes"),
                        Some(Fix::ClearPointer { ino, lbn: XATTR_LBN }),
                    );
                }
            }
            return true;
        }
        let found = match role {
            Role::Nothing => "no partial segment holds it".to_string(),
            Role::Summary => "it is a segment summary".to_string(),
            Role::Inodes { .. } => "it is an inode block".to_string(),
            Role::Block { ino, version, lbn, .. } if in_checkpoint => {
                format!("the summary names inode {ino} version {version} block {lbn}")
            }
            Role::Block { .. } => "its partial segment was written after the checkpoint".to_string(),
        };
        // Unconfirmed, yet a file reaches it: the block stays live, so
        // that no repair makes its segment clean and the log writes over
        // what may still be the file's data (a destroyed summary leaves
        // every block of its partial segment unconfirmed, contents
        // intact). Too high a count only keeps a segment from cleaning.
        if !matches!(role, Role::Summary) {
            self.add_live(daddr, self.bs as u64);
        }
        // Where no summary says anything of the block (one was lost), it
        // is most likely still the file's: repair writes it again as it
        // reads, and an indirect block is followed (its trailer must name
        // this file and place). Where a summary gives it to something
        // else, the log has written over it since: the pointer goes.
        let (fix, how, follow) = match role {
            Role::Nothing => (
                Some(Fix::RewriteBlock { ino, lbn }),
                "repair writes it again at the log's head, as it reads",
                true,
            ),
            // The ifile has no holes to give.
            _ if ino == IFILE_INO => (None, "the ifile cannot do without it", false),
            _ => {
                w.held -= 1;
                (Some(Fix::ClearPointer { ino, lbn }), "repair clears the pointer", false)
            }
        };
        let expected = w.version;
        self.walk_problem(
            w,
            Kind::Summary,
            format!(
                "block {lbn} at {daddr} is not confirmed by its segment summary (version {expected} expected; {found}); {how}"
            ),
            fix,
        );
        follow
    }
}

/// What the walk of one file reports to the checker.
struct WalkVisitor<'c, 'd> {
    checker: &'c mut Checker<'d>,
    w: FileWalk,
}

impl bmap::Visitor for WalkVisitor<'_, '_> {
    fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool {
        let ok = self.checker.visit(&mut self.w, lbn, addr);
        if ok && lbn >= 0 {
            if let Some(data) = self.w.data.as_mut() {
                data.push((lbn as u64, addr));
            }
        }
        ok
    }

    fn read(&mut self, addr: Daddr) -> fslab::Result<Vec<u8>> {
        Ok(self.checker.read_block(addr)?)
    }

    /// A read that failed gets no repair (the device may answer next
    /// time); a block read whole that is not this file's indirect block
    /// at this place is cleared, a hole where its tree was.
    fn unreadable(&mut self, lbn: Lbn, addr: Daddr, error: fslab::Error) {
        self.checker.unread_trees = true;
        let ino = self.w.ino;
        let (what, fix) = match error {
            fslab::Error::Io(_) => (format!("indirect block {lbn} at {addr} cannot be read"), None),
            e => {
                self.w.held -= 1;
                (format!("{e}; repair clears the pointer"), Some(Fix::ClearPointer { ino, lbn }))
            }
        };
        self.checker.walk_problem(&mut self.w, Kind::BlockPointer, what, fix);
    }
}
