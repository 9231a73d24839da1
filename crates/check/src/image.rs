//! The checker's view of the image: phase 1 (superblock copies and the
//! checkpoint), bounded block reads, and the segment-summary walk that tells
//! which file block each disk address holds.
//!
//! The summary walk (per segment, cached): partial segments chain front to
//! back — summary, its `nblocks` blocks, the next summary — from the
//! segment's first block (its second if it holds a superblock copy). The
//! walk stops at the first summary that does not decode, belongs to another
//! file system, runs past the segment, or does not carry a higher serial
//! than the one before it (an older partial left from before the segment was
//! last made clean). Each address of a walked partial gets a [`Role`].

use crate::tree::{InodeInfo, Namespace, Target};
use crate::{Counts, Fatal, Fix, Kind, Options, Progress, Report, Severity};
use disk::BlockDevice;
use fslab::format::blockno::Geometry;
use fslab::format::codec::crc32c_append;
use fslab::format::{Daddr, Ino, Lbn, ROOT_INO};
use fslab::lfs::inspect::superblock_copies;
use fslab::lfs::layout::{CleanerInfo, ImapEntry, SegUse, Summary, Superblock, SB_CLEAN, SB_DAMAGED};
use fslab::Error;
use std::collections::{HashMap, HashSet};

/// Summary-walk entries kept in memory before the cache is emptied.
const MAX_CACHED_ROLES: usize = 1 << 22;
/// Bytes read at once when checking a partial segment's data checksum.
const CRC_READ_BYTES: usize = 4 << 20;

/// What one disk address holds according to its segment summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Not in any walked partial segment.
    Nothing,
    /// A summary block.
    Summary,
    /// Block `lbn` of inode `ino` at version `version`.
    Block { partial: u32, ino: u32, version: u32, lbn: Lbn },
    /// An inode block.
    Inodes { partial: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Crc {
    Unchecked,
    Good,
    Bad,
}

/// One partial segment found by the walk.
#[derive(Debug, Clone)]
struct Partial {
    start: Daddr,
    nblocks: u32,
    serial: u64,
    data_crc: u32,
    crc: Crc,
}

/// The walk of one segment.
#[derive(Debug, Clone)]
pub(crate) struct SegMap {
    roles: Vec<Role>,
    partials: Vec<Partial>,
}

/// An ifile block that failed its trailer, to be rebuilt.
#[derive(Debug, Clone)]
pub(crate) struct LostBlock {
    /// Its logical block in the ifile.
    pub lbn: u64,
    /// Where it lies.
    pub daddr: Daddr,
    /// What the check said of it.
    pub why: String,
}

/// Live data counted for one segment while walking inodes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SegCount {
    /// Partial summaries of the checkpoint found in the segment.
    pub nsums: u32,
    /// Inode blocks in those partials.
    pub ninos: u32,
}

/// How opening went.
pub(crate) enum Opened<'a> {
    Ready(Box<Checker<'a>>),
    /// No checkpoint can be checked; the report says why.
    Unusable(Report),
}

/// The whole state of one check (see the crate map for the phases).
pub(crate) struct Checker<'a> {
    pub dev: &'a dyn BlockDevice,
    pub sb: Superblock,
    pub bs: usize,
    pub bps: u64,
    pub total_blocks: u64,
    pub geometry: Geometry,
    pub report: Report,
    pub progress: Progress<'a>,
    segments: HashMap<u64, SegMap>,
    cached_roles: usize,
    /// Segments walked (for nsums / ninos checks), kept after eviction.
    pub seg_counts: HashMap<u64, SegCount>,
    /// Whether some indirect block could not be read or followed, so that
    /// the blocks below it went uncounted.
    pub unread_trees: bool,
    /// Blocks rebuilt by the check, read in place of what the device
    /// holds (`ifile.rs`): the repair writes them there.
    pub rebuilt_blocks: HashMap<Daddr, Vec<u8>>,
    /// Whether phase 2 may rebuild the checkpoint's ifile inode (only once
    /// no checkpoint's can be read).
    pub rebuild_ifile_inode_allowed: bool,
    /// The inode block holding the checkpoint's ifile inode, if it had to
    /// be rebuilt (`Daddr::NONE` if not).
    pub lost_inode_block: Daddr,
    /// Summaries found lost in a log head's segment, each reported once.
    lost_summaries: HashSet<Daddr>,
    /// Ifile blocks of the checkpoint checked that failed their trailer,
    /// rebuilt in phase 2 (the inode map) or 5 (the rest): `ifile.rs`.
    pub lost_ifile: Vec<LostBlock>,
    /// One bit per block of each segment holding a claimed block.
    claimed: HashMap<u64, Vec<u64>>,
    /// Live bytes recounted per segment.
    pub live: Vec<u64>,
    /// Phase 2: the ifile's tables (`None` where a block was unreadable).
    pub cleaner: Option<CleanerInfo>,
    pub seguse: Vec<Option<SegUse>>,
    pub imap: Vec<Option<ImapEntry>>,
    /// Phase 3: allocated inodes, and directories' data blocks by lbn.
    pub inodes: HashMap<Ino, InodeInfo>,
    /// The inodes on a sound orphan list.
    pub orphans: HashSet<Ino>,
    pub dir_blocks: HashMap<Ino, Vec<(u64, Daddr)>>,
    /// A few inode blocks, by address (many inodes share one).
    pub inode_blocks: HashMap<Daddr, Option<Vec<u8>>>,
}

impl<'a> Checker<'a> {
    /// Phase 1, then phase 2's loading of the ifile from the newest
    /// checkpoint whose ifile inode can be read.
    pub fn open(
        dev: &'a dyn BlockDevice,
        options: &Options,
        sink: &'a mut dyn FnMut(&str),
    ) -> Result<Opened<'a>, Fatal> {
        let mut report = Report::default();
        let copies = superblock_copies(dev);
        let mut valid: Vec<Superblock> = Vec::new();
        let mut foreign = None;
        let copy0_magic = fslab::lfs::probe(dev);
        let mut any_magic = copy0_magic;
        for copy in &copies {
            match &copy.result {
                Ok(sb) => {
                    any_magic = true;
                    valid.push(*sb);
                }
                Err(Error::Foreign(why)) => {
                    any_magic = true;
                    foreign.get_or_insert_with(|| why.clone());
                }
                Err(Error::Io(e)) if copy.offset == 0 => {
                    return Err(Fatal::Io(std::io::Error::new(e.kind(), e.to_string())))
                }
                // Copy 0 without the magic: maybe not an fslab image at all.
                Err(Error::Corrupt { .. }) if copy.offset == 0 && !copy0_magic => {}
                Err(e) => {
                    any_magic = true;
                    report.push(
                        Severity::Damage,
                        Kind::Superblock,
                        None,
                        format!("superblock copy at byte {}: {e}", copy.offset),
                        Some(Fix::RewriteSuperblocks),
                    );
                }
            }
        }
        if valid.is_empty() {
            if let Some(why) = foreign {
                return Err(Fatal::Foreign(why));
            }
            if !any_magic {
                return Err(Fatal::Foreign("not an fslab image (no superblock found)".into()));
            }
            for p in &mut report.problems {
                p.fix = None;
            }
            report.push(
                Severity::Damage,
                Kind::Superblock,
                None,
                "no valid superblock copy: nothing to check".into(),
                None,
            );
            return Ok(Opened::Unusable(report));
        }
        // As mount does: the file system of the newest checkpoint.
        valid.sort_by_key(|s| std::cmp::Reverse(s.checkpoint.serial));
        let best = valid[0];
        for sb in &valid[1..] {
            let same = sb.fs_id == best.fs_id
                && sb.block_size == best.block_size
                && sb.segment_size == best.segment_size
                && sb.nsegments == best.nsegments
                && sb.created == best.created
                && sb.ncopies == best.ncopies
                && sb.sb_segments == best.sb_segments
                && sb.segtab_blocks == best.segtab_blocks;
            if !same {
                report.push(
                    Severity::Damage,
                    Kind::Superblock,
                    None,
                    format!(
                        "superblock copy of checkpoint {} disagrees with the newest copy about the file system's parameters",
                        sb.checkpoint.serial
                    ),
                    Some(Fix::RewriteSuperblocks),
                );
            }
        }
        let fs_bytes = best.nsegments.saturating_mul(best.segment_size as u64);
        if fs_bytes > dev.size() {
            report.push(
                Severity::Damage,
                Kind::Superblock,
                None,
                format!("the file system is {fs_bytes} bytes but the device holds only {}", dev.size()),
                None,
            );
            return Ok(Opened::Unusable(report));
        }
        let bps = best.blocks_per_segment();
        let mut checker = Box::new(Checker {
            dev,
            sb: best,
            bs: best.block_size as usize,
            bps,
            total_blocks: best.nsegments * bps,
            geometry: Geometry::new(best.block_size),
            report,
            progress: Progress::new(sink, options.progress_every),
            segments: HashMap::new(),
            cached_roles: 0,
            seg_counts: HashMap::new(),
            unread_trees: false,
            lost_ifile: Vec::new(),
            lost_summaries: HashSet::new(),
            rebuilt_blocks: HashMap::new(),
            lost_inode_block: Daddr::NONE,
            rebuild_ifile_inode_allowed: false,
            claimed: HashMap::new(),
            live: vec![0; best.nsegments as usize],
            cleaner: None,
            seguse: Vec::new(),
            imap: Vec::new(),
            inodes: HashMap::new(),
            orphans: HashSet::new(),
            dir_blocks: HashMap::new(),
            inode_blocks: HashMap::new(),
        });
        let mut serials: Vec<u64> = Vec::new();
        let before_attempts = checker.report.problems.len();
        for sb in valid.iter().filter(|s| s.fs_id == best.fs_id) {
            if serials.contains(&sb.checkpoint.serial) {
                continue;
            }
            serials.push(sb.checkpoint.serial);
            checker.sb = *sb;
            let found_before = checker.report.problems.len();
            if checker.load_ifile() {
                checker.report.checkpoint_serial = sb.checkpoint.serial;
                checker.report.clean_unmount = sb.checkpoint.flags & SB_CLEAN != 0;
                if let Some(&newest) = serials.first().filter(|&&n| n != sb.checkpoint.serial) {
                    // What a mount does too: say which checkpoint is used,
                    // and what is lost with the newer one.
                    let older = best.checkpoint.time.saturating_sub(sb.checkpoint.time) as f64 / 1e9;
                    checker.report.push(
                        Severity::Damage,
                        Kind::Superblock,
                        None,
                        format!(
                            "checkpoint {newest} cannot be used (above); checked at checkpoint {}, \
                             {older:.0} s older: what was written after it is lost unless the log \
                             after it still holds it (a mount rolls that forward)",
                            sb.checkpoint.serial
                        ),
                        Some(Fix::RewriteSuperblocks),
                    );
                }
                return Ok(Opened::Ready(checker));
            }
            // This checkpoint is not the one checked: a partial segment
            // inside it may lie past the one that is, where a repair must
            // not seal what a crash tore.
            for p in &mut checker.report.problems[found_before..] {
                if matches!(p.fix, Some(Fix::ResealPartial { .. })) {
                    p.fix = None;
                }
            }
            checker.reset_walks();
        }
        // No checkpoint's ifile inode could be read: the newest one's is
        // rebuilt where its block reads whole (`ifile.rs`). Only now, so
        // that an older checkpoint, which a mount would use, is preferred.
        if let Some(newest) =
            valid.iter().filter(|s| s.fs_id == best.fs_id).max_by_key(|s| s.checkpoint.serial)
        {
            checker.sb = *newest;
            checker.rebuild_ifile_inode_allowed = true;
            let found_before = checker.report.problems.len();
            if checker.load_ifile() {
                // What the failed attempts found is found again by this
                // one, or repaired by it.
                checker.report.problems.drain(before_attempts..found_before);
                checker.report.checkpoint_serial = newest.checkpoint.serial;
                checker.report.clean_unmount = newest.checkpoint.flags & SB_CLEAN != 0;
                return Ok(Opened::Ready(checker));
            }
            checker.report.problems.truncate(found_before);
        }
        let mut report = std::mem::take(&mut checker.report);
        report.push(
            Severity::Damage,
            Kind::Ifile,
            None,
            "no checkpoint has a readable ifile: nothing more to check".into(),
            None,
        );
        Ok(Opened::Unusable(report))
    }

    fn reset_walks(&mut self) {
        self.segments.clear();
        self.cached_roles = 0;
        self.seg_counts.clear();
        self.unread_trees = false;
        self.rebuilt_blocks.clear();
        self.lost_inode_block = Daddr::NONE;
        self.claimed.clear();
        self.live.iter_mut().for_each(|l| *l = 0);
        self.inode_blocks.clear();
    }

    /// Runs phases 3 to 6 (phases 1 and 2 ran in `open`).
    pub fn run(&mut self) {
        self.check_inodes();
        self.orphans = crate::orphans::check_list(
            &mut self.report,
            self.sb.checkpoint.orphan_head,
            &self.inodes,
            Severity::Damage,
        );
        crate::tree::check_tree(self);
        self.check_usage();
        self.check_free_list();
        if self.sb.checkpoint.flags & SB_DAMAGED != 0 {
            self.damage(
                Kind::Superblock,
                None,
                "an earlier fsck left damage it could not repair: the image is marked damaged, \
                 and mounts refuse it until fsck finds it clean"
                    .into(),
                Some(Fix::ClearDamaged),
            );
        }
    }

    /// The report, with the counts.
    pub fn finish(mut self) -> Report {
        let counts = Counts { segments_walked: self.seg_counts.len() as u64, ..self.report.counts };
        self.report.counts = counts;
        self.report
    }

    /// Records a problem that is damage ([`Severity::Damage`]).
    pub fn damage(&mut self, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        self.report.push(Severity::Damage, kind, ino, message, fix);
    }

    /// Records a problem that is a leak ([`Severity::Leak`]).
    pub fn leak(&mut self, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        self.report.push(Severity::Leak, kind, ino, message, fix);
    }

    /// Reads block `daddr`, which the caller has checked is on the file system.
    pub fn read_block(&self, daddr: Daddr) -> std::io::Result<Vec<u8>> {
        if let Some(block) = self.rebuilt_blocks.get(&daddr) {
            return Ok(block.clone());
        }
        let mut buf = vec![0u8; self.bs];
        self.dev.read_at(daddr.byte_offset(self.bs as u64), &mut buf)?;
        Ok(buf)
    }

    /// Whether `daddr` is the first block of a segment holding a superblock copy.
    pub fn is_superblock_block(&self, daddr: Daddr) -> bool {
        daddr.get().is_multiple_of(self.bps) && self.superblock_segment(daddr.get() / self.bps)
    }

    /// Whether segment `seg` holds a superblock copy.
    pub fn superblock_segment(&self, seg: u64) -> bool {
        self.sb.sb_segments[..self.sb.ncopies as usize].contains(&seg)
    }

    /// Why `daddr` cannot be a block of a file, if it cannot.
    pub fn bad_address(&self, daddr: Daddr) -> Option<&'static str> {
        if daddr.get() >= self.total_blocks {
            Some("past the end of the file system")
        } else if self.is_superblock_block(daddr) {
            Some("into a superblock copy")
        } else {
            None
        }
    }

    /// Notes that `daddr` is claimed; returns false if it already was.
    pub fn claim(&mut self, daddr: Daddr) -> bool {
        let seg = daddr.get() / self.bps;
        let bit = (daddr.get() % self.bps) as usize;
        let words = (self.bps as usize).div_ceil(64);
        let map = self.claimed.entry(seg).or_insert_with(|| vec![0; words]);
        let (word, mask) = (bit / 64, 1u64 << (bit % 64));
        let fresh = map[word] & mask == 0;
        map[word] |= mask;
        fresh
    }

    /// Adds `bytes` to the recounted live bytes of `daddr`'s segment.
    pub fn add_live(&mut self, daddr: Daddr, bytes: u64) {
        if let Some(l) = self.live.get_mut((daddr.get() / self.bps) as usize) {
            *l += bytes;
        }
    }

    /// The role of `daddr` by its segment's summaries, and whether its partial
    /// segment belongs to the checkpoint (serial below the next one).
    /// Checks the partial's data checksum the first time it is used.
    pub fn role(&mut self, daddr: Daddr) -> (Role, bool) {
        let seg = daddr.get() / self.bps;
        if !self.segments.contains_key(&seg) {
            let map = self.walk_segment(seg);
            if self.cached_roles + map.roles.len() > MAX_CACHED_ROLES {
                self.segments.clear();
                self.cached_roles = 0;
            }
            self.cached_roles += map.roles.len();
            self.segments.insert(seg, map);
        }
        let next_serial = self.sb.checkpoint.next_summary_serial;
        let Some(map) = self.segments.get(&seg) else { return (Role::Nothing, false) };
        let role = map.roles.get((daddr.get() % self.bps) as usize).copied().unwrap_or(Role::Nothing);
        let partial = match role {
            Role::Block { partial, .. } | Role::Inodes { partial } => partial as usize,
            _ => return (role, false),
        };
        let Some(p) = map.partials.get(partial) else { return (role, false) };
        let in_checkpoint = p.serial < next_serial;
        if p.crc == Crc::Unchecked {
            let (start, nblocks, expected) = (p.start, p.nblocks, p.data_crc);
            let good = self.data_crc(start, nblocks) == Some(expected);
            if let Some(p) = self.segments.get_mut(&seg).and_then(|m| m.partials.get_mut(partial)) {
                p.crc = if good { Crc::Good } else { Crc::Bad };
            }
            if !good {
                // Inside the checkpoint, the blocks are the files' as they
                // are: the repair names the files and seals them so. Past
                // it, the partial segment is a write a crash tore, which
                // roll-forward rightly stops at.
                let fix = in_checkpoint.then_some(Fix::ResealPartial { start });
                self.damage(
                    Kind::Summary,
                    None,
                    format!(
                        "partial segment at block {start}: the data checksum does not match its {nblocks} blocks (some are damaged)"
                    ),
                    fix,
                );
            }
        }
        (role, in_checkpoint)
    }

    /// The role of `daddr` and the serial of its partial segment, if that
    /// partial segment belongs to the checkpoint.
    pub fn role_in_checkpoint(&mut self, daddr: Daddr) -> Option<(Role, u64)> {
        self.partial_holding(daddr).map(|(role, partial)| (role, partial.serial))
    }

    /// Where the summary of the checkpoint's partial segment holding
    /// `daddr` lies.
    pub fn partial_of(&mut self, daddr: Daddr) -> Option<Daddr> {
        self.partial_holding(daddr).map(|(_, p)| p.start)
    }

    /// The role of `daddr` and the checkpoint's partial segment holding it.
    fn partial_holding(&mut self, daddr: Daddr) -> Option<(Role, Partial)> {
        let (role, in_checkpoint) = self.role(daddr);
        let partial = match role {
            Role::Block { partial, .. } | Role::Inodes { partial } if in_checkpoint => partial as usize,
            _ => return None,
        };
        let found = self.segments.get(&(daddr.get() / self.bps))?.partials.get(partial).cloned()?;
        Some((role, found))
    }

    /// CRC32C of the `nblocks` blocks after the summary at `start`, read a
    /// few megabytes at a time; `None` if they cannot be read.
    fn data_crc(&self, start: Daddr, nblocks: u32) -> Option<u32> {
        let per_read = (CRC_READ_BYTES / self.bs).max(1) as u64;
        let mut crc = 0;
        let mut at = start + 1;
        let end = start + 1 + nblocks as u64;
        let mut buf = Vec::new();
        while at < end {
            let n = per_read.min(end.units_after(at));
            buf.resize(n as usize * self.bs, 0);
            self.dev.read_at(at.byte_offset(self.bs as u64), &mut buf).ok()?;
            crc = crc32c_append(crc, &buf);
            at += n;
        }
        Some(crc)
    }

    /// The summary at block `offset` of segment `seg`, if one of this file
    /// system lies there that fits in the segment and follows a partial
    /// segment of serial `after`.
    fn summary_at(&self, seg: u64, offset: u64, after: Option<u64>) -> Option<Summary> {
        let daddr = Daddr::new(seg * self.bps + offset);
        let block = self.read_block(daddr).ok()?;
        let summary = Summary::decode(&block, daddr).ok()?;
        let fits = summary.nblocks >= 1 && offset + 1 + summary.nblocks as u64 <= self.bps;
        let follows = after.is_none_or(|s| summary.serial > s);
        (summary.fs_id == self.sb.fs_id && fits && follows).then_some(summary)
    }

    /// A log head's segment whose chain of summaries stops at block
    /// `offset`, before the head at `head_end`: the summary there was lost.
    /// Reports it with the repair that moves the head on to a clean
    /// segment (`Fix::LeaveSegment`): partial segments written after the
    /// break would be found by no walk of this one. (Writing a summary in
    /// the lost one's place, as the repair once did, wrote in place what
    /// the checkpoint had not yet made good: a crash before the repair's
    /// checkpoint left that summary calling the blocks after it inode
    /// blocks, which the file and the ifile pointing at them then lost.)
    /// Returns where the walk goes on, past the blocks the lost summary
    /// covered: the next summary of the checkpoint (`None`: nothing
    /// follows), or `None` if none can be told.
    fn lost_summary(
        &mut self,
        seg: u64,
        offset: u64,
        last: Option<u64>,
        head_end: u64,
    ) -> Option<Option<u64>> {
        let next_serial = self.sb.checkpoint.next_summary_serial;
        let next = (offset + 1..head_end - 1).find_map(|at| {
            self.summary_at(seg, at, last).filter(|s| s.serial < next_serial).map(|s| (at, s.serial))
        });
        let end = next.map_or(head_end, |(at, _)| at);
        // A lost summary had a serial number between those around it.
        let no_room =
            matches!((last, next), (Some(last), Some((_, after))) if after <= last.saturating_add(1));
        if end <= offset + 1 || no_room {
            return None;
        }
        let at = Daddr::new(seg * self.bps + offset);
        if self.lost_summaries.insert(at) {
            self.damage(
                Kind::Summary,
                None,
                format!(
                    "segment {seg}: the summary at block {at} is lost (the chain stops short of the log head); \
                     repair moves the log head on to a clean segment, so that what it writes again is found"
                ),
                Some(Fix::LeaveSegment { segment: seg }),
            );
        }
        Some(next.map(|(at, _)| at))
    }

    /// Walks the partial segments of segment `seg` (see the module comment).
    fn walk_segment(&mut self, seg: u64) -> SegMap {
        let bps = self.bps;
        let mut map = SegMap { roles: vec![Role::Nothing; bps as usize], partials: Vec::new() };
        let mut count = SegCount::default();
        let mut offset = u64::from(self.superblock_segment(seg));
        let mut last_serial = None;
        // In a segment a log head is writing, the checkpoint's log ends at
        // the head: a partial segment found past it is one roll-forward
        // did not take (it followed a partial segment a crash lost, at the
        // other head), and the next write there overwrites it.
        let c = &self.sb.checkpoint;
        let head_end = if seg == c.log_segment {
            c.log_offset
        } else {
            c.cold.filter(|h| h.segment == seg).map_or(bps, |h| h.offset)
        };
        let is_head = seg == c.log_segment || c.cold.is_some_and(|h| h.segment == seg);
        while offset + 1 < bps {
            let daddr = Daddr::new(seg * bps + offset);
            let Some(summary) = self.summary_at(seg, offset, last_serial) else {
                // In a log head's segment everything before the head is the
                // checkpoint's log: a chain that stops short of it lost a
                // summary (`lost_summary`). Elsewhere the chain's end is
                // where it stops, and what a lost summary confirmed is
                // written again at the log's head (`inodes.rs`).
                if !is_head || offset + 1 >= head_end {
                    break;
                }
                let Some(next) = self.lost_summary(seg, offset, last_serial, head_end) else { break };
                count.nsums += 1;
                match next {
                    Some(resume) => {
                        offset = resume;
                        continue;
                    }
                    None => break,
                }
            };
            last_serial = Some(summary.serial);
            let partial = map.partials.len() as u32;
            map.roles[offset as usize] = Role::Summary;
            let mut at = offset as usize + 1;
            for f in &summary.finfos {
                for &lbn in &f.lbns {
                    map.roles[at] = Role::Block { partial, ino: f.ino as u32, version: f.version, lbn };
                    at += 1;
                }
            }
            for _ in 0..summary.ninoblocks {
                map.roles[at] = Role::Inodes { partial };
                at += 1;
            }
            if summary.serial < self.sb.checkpoint.next_summary_serial && offset < head_end {
                count.nsums += 1;
                count.ninos += summary.ninoblocks;
            }
            map.partials.push(Partial {
                start: daddr,
                nblocks: summary.nblocks,
                serial: summary.serial,
                data_crc: summary.data_crc,
                crc: Crc::Unchecked,
            });
            offset += 1 + summary.nblocks as u64;
        }
        self.seg_counts.insert(seg, count);
        map
    }
}

/// LFS's inodes and directories for the namespace phases (its phase 4).
impl Namespace for Checker<'_> {
    fn on_orphan_list(&self, ino: Ino) -> bool {
        self.orphans.contains(&ino)
    }

    fn block_size(&self) -> usize {
        self.bs
    }

    fn inodes(&self) -> &HashMap<Ino, InodeInfo> {
        &self.inodes
    }

    fn dir_blocks(&self) -> &HashMap<Ino, Vec<(u64, Daddr)>> {
        &self.dir_blocks
    }

    fn read_dir_block(&self, addr: Daddr) -> std::io::Result<Vec<u8>> {
        self.read_block(addr)
    }

    /// By the inode map: an entry with an address is allocated; an
    /// unreadable map block says nothing.
    fn target(&self, ino: Ino) -> Target {
        match self.imap.get(ino as usize) {
            _ if ino < ROOT_INO => Target::Impossible,
            None => Target::Impossible,
            Some(None) => Target::Unknown,
            Some(Some(e)) if e.daddr.is_none() => Target::Free,
            Some(Some(_)) => Target::Allocated,
        }
    }

    /// A new root only where the old one's number is free or is being
    /// freed (`ClearInode`): `create_root` takes the lowest free number,
    /// and an inode that only could not be read keeps its number.
    fn root_fix(&self) -> Option<Fix> {
        let clearing = self.report.problems.iter().any(|p| p.fix == Some(Fix::ClearInode { ino: ROOT_INO }));
        let free = matches!(self.target(ROOT_INO), Target::Free);
        (clearing || free).then_some(Fix::CreateRoot)
    }

    fn fills_directory_holes(&self) -> bool {
        false
    }

    fn frees_empty_files(&self) -> bool {
        false
    }

    fn phase_label(&self) -> &'static str {
        "phase 4 (directories)"
    }

    fn report_mut(&mut self) -> &mut Report {
        &mut self.report
    }

    fn tick(&mut self, phase: &str, done: u64, total: u64) {
        self.progress.tick(phase, done, total);
    }
}
