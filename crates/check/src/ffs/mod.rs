//! fsck for FFS images: the five phases of Table 2 of the 1993 paper, as
//! 4.4BSD's fsck_ffs runs them, after the superblock.
//!
//! * `superblock` — the primary validated and the copies in the groups
//!   compared with it; a damaged primary is found again from a copy.
//! * `inodes` — phase 1, blocks and sizes: every inode slot of every group
//!   below the group's initialised-inode mark (the bitmaps are not trusted:
//!   after a crash they are stale), each in-use inode's pointers through the
//!   block-map engine's walk, the fragment-tail rule, block counts, sizes;
//!   phase 1b finds every claimant of a fragment claimed twice.
//! * phases 2–4, pathnames, connectivity and reference counts, are the
//!   crate's `tree`, shared with LFS through [`Namespace`].
//! * `groups` — phase 5: each group's bitmaps, counts and summaries as the
//!   inodes say they must be, compared with the group on disk; the totals.
//! * `repair` — `fsck --repair`: what only fsck can write (inodes, indirect
//!   blocks, groups, superblocks) directly, then the namespace through
//!   `ufs::FileSystem<Ffs>` once the image mounts.
//!
//! The checker's findings outlive it as a [`Model`]: the image as it will
//! be once the planned repairs of phase 1 are made, which is what phase 5
//! and the repair rebuild the groups from.

mod groups;
mod inodes;
mod repair;
mod superblock;

pub(crate) use repair::fsck;
pub(crate) use superblock::has_copy;

use crate::tree::{InodeInfo, Namespace, Target};
use crate::{Counts, Fatal, Fix, Kind, Layout, Options, Progress, Report, Severity};
use disk::BlockDevice;
use fslab::ffs::bitmap::Bitmap;
use fslab::ffs::cg::CylinderGroup;
use fslab::ffs::geometry::Geometry;
use fslab::ffs::{Frag, Superblock, Totals};
use fslab::format::{blockno, Daddr, Ino, Lbn, ROOT_INO};
use std::collections::{BTreeMap, HashMap, HashSet};

/// What the check of one group's area and inode table found.
#[derive(Debug, Clone)]
pub(crate) struct GroupScan {
    /// The group as decoded, or why it could not be.
    pub on_disk: Result<CylinderGroup, String>,
    /// Inode slots read: the initialised mark (the salvaged one, or every
    /// slot, when the area is damaged).
    pub mark: u32,
    /// Whether the inode table up to `mark` could be read.
    pub table_readable: bool,
    /// Slots in use once phase 1's repairs are made.
    pub inodes_used: Bitmap,
    /// Directories among them.
    pub directories: u32,
}

/// How phase 1 repairs one inode (each change also a problem's fix).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct InodeRepair {
    /// Clear the slot.
    pub clear: bool,
    /// The slot failed its checksum (rewriting it recomputes it).
    pub seal: bool,
    /// A new size.
    pub size: Option<u64>,
    /// A new count of 512-byte units held.
    pub blocks: Option<u64>,
    /// Pointers to clear: (block, address of the indirect block holding the
    /// pointer, or `None` when the inode holds it).
    pub clear_pointers: Vec<(Lbn, Option<Frag>)>,
}

/// The image as it will be once phase 1's repairs are made: what phase 5
/// compares the groups with and what repair rebuilds them from.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    /// The superblock checked (the primary, or the copy it is restored from).
    pub sb: Superblock,
    /// Where the superblock came from: `None` the primary, else the group
    /// whose copy stands in for a damaged primary.
    pub from_copy: Option<u32>,
    /// Groups whose superblock copy is damaged or disagrees.
    pub bad_copies: Vec<u32>,
    /// Per group.
    pub groups: Vec<GroupScan>,
    /// Fragments claimed by a pointer that stays, per group (relative).
    pub claims: HashMap<u32, Bitmap>,
    /// Repairs of inodes and of the pointers they hold.
    pub repairs: BTreeMap<Ino, InodeRepair>,
    /// The totals of the rebuilt groups (phase 5).
    pub totals: Totals,
    /// Device reads that failed: what the unread blocks claim is unknown,
    /// so no group is rebuilt.
    pub io_errors: u64,
}

impl Model {
    /// Group `g` as phase 5 rebuilds it: its in-use inodes and directories
    /// from phase 1, every data fragment no pointer claims free, its
    /// initialised mark the slots phase 1 read (every slot below it now
    /// holds an inode or zeros fsck vouched for), its rotors kept.
    pub fn rebuilt_group(&self, g: u32) -> Result<CylinderGroup, String> {
        let geo = &self.sb.geometry;
        let scan = self.groups.get(g as usize).ok_or("no such group")?;
        if self.io_errors > 0 {
            return Err(format!("{} device reads failed, so what is free is not known", self.io_errors));
        }
        if !scan.table_readable {
            return Err("its inode table could not be read".into());
        }
        let mut inodes_used = scan.inodes_used.clone();
        if g == 0 {
            inodes_used.set(0);
            inodes_used.set(1);
        }
        let mut frags_free = Bitmap::new(geo.fpg);
        let claimed = self.claims.get(&g);
        for f in geo.data_offset()..geo.group_frags(g) {
            if !claimed.is_some_and(|c| c.get(f)) {
                frags_free.set(f);
            }
        }
        // A `file` journal's log lies in a group's data area, in use though
        // no inode names it.
        let j = &self.sb.journal;
        if j.kind == fslab::ffs::JournalKind::File {
            // Only the part of the log in this group: a range as long as
            // the disk, walked once per group, made a damaged image's
            // check quadratic in its groups.
            let group = geo.group_base(g)..geo.group_base(g) + u64::from(geo.group_frags(g));
            let end = j.start.saturating_add(j.bytes.div_ceil(geo.frag_size as u64)).min(geo.total_frags);
            for f in j.start.max(group.start)..end.min(group.end) {
                frags_free.clear(geo.within_group(f));
            }
        }
        let (time, rotors) = match &scan.on_disk {
            Ok(cg) => (cg.time, cg.rotors()),
            Err(_) => (fslab::format::now_ns(), [0; 3]),
        };
        CylinderGroup::rebuilt(geo, g, time, inodes_used, frags_free, scan.directories, scan.mark, rotors)
    }
}

/// How opening went.
pub(crate) enum Opened<'a> {
    Ready(Box<Checker<'a>>),
    /// No superblock can be used; the report says why.
    Unusable(Report),
}

/// The whole state of one FFS check (see the module comment).
pub(crate) struct Checker<'a> {
    pub dev: &'a dyn BlockDevice,
    pub geo: Geometry,
    pub tree: blockno::Geometry,
    pub bs: usize,
    pub report: Report,
    pub progress: Progress<'a>,
    pub model: Model,
    /// Phase 1: allocated inodes (as repaired), and directories' data blocks.
    pub inodes: HashMap<Ino, InodeInfo>,
    /// The inodes on a sound orphan list.
    pub orphans: HashSet<Ino>,
    pub dir_blocks: HashMap<Ino, Vec<(u64, Daddr)>>,
    /// Fragments claimed more than once (phase 1b finds their claimants).
    pub dups: HashSet<Frag>,
    /// Bytes each in-use inode holds in pointers that stay.
    pub held: HashMap<Ino, u64>,
    /// Sizes phase 1 sets (the walk's tail rule goes by them).
    pub sizes: HashMap<Ino, u64>,
}

/// Checks the FFS image on `dev` (the crate's `check` for FFS).
pub(crate) fn check(
    dev: &dyn BlockDevice,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, Fatal> {
    Ok(check_keeping_model(dev, options, progress)?.0)
}

/// Checks the image, and keeps what phase 1 found for a repair (`None`
/// when no superblock could be used).
pub(crate) fn check_keeping_model(
    dev: &dyn BlockDevice,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<(Report, Option<Model>), Fatal> {
    let mut checker = match Checker::open(dev, options, progress)? {
        Opened::Ready(checker) => checker,
        Opened::Unusable(report) => return Ok((report, None)),
    };
    checker.check_inodes();
    let head = checker.model.sb.orphan_head;
    // Soft updates write the list in no order (`orphans`).
    let broken = if checker.model.sb.flags & fslab::ffs::layout::SB_SOFTDEP != 0 {
        Severity::Leak
    } else {
        Severity::Damage
    };
    checker.orphans = crate::orphans::check_list(&mut checker.report, head, &checker.inodes, broken);
    crate::tree::check_tree(checker.as_mut());
    checker.check_groups();
    let Checker { mut report, model, .. } = *checker;
    report.counts = Counts { segments_walked: 0, ..report.counts };
    Ok((report, Some(model)))
}

impl<'a> Checker<'a> {
    /// A checker of the file system `sb` describes (read from the primary,
    /// or from the copy in group `from_copy`).
    pub fn new(
        dev: &'a dyn BlockDevice,
        sb: Superblock,
        from_copy: Option<u32>,
        report: Report,
        progress: Progress<'a>,
    ) -> Checker<'a> {
        let geo = sb.geometry;
        Checker {
            dev,
            geo,
            tree: sb.indirect_geometry(),
            bs: geo.block_size as usize,
            report: Report { layout: Layout::Ffs, ..report },
            progress,
            model: Model {
                sb,
                from_copy,
                bad_copies: Vec::new(),
                groups: Vec::new(),
                claims: HashMap::new(),
                repairs: BTreeMap::new(),
                totals: Totals::default(),
                io_errors: 0,
            },
            inodes: HashMap::new(),
            orphans: HashSet::new(),
            dir_blocks: HashMap::new(),
            dups: HashSet::new(),
            held: HashMap::new(),
            sizes: HashMap::new(),
        }
    }

    /// Records a problem that is damage ([`Severity::Damage`]).
    pub fn damage(&mut self, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        self.report.push(Severity::Damage, kind, ino, message, fix);
    }

    /// Records a problem that is a leak ([`Severity::Leak`]).
    pub fn leak(&mut self, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        self.report.push(Severity::Leak, kind, ino, message, fix);
    }

    /// The repair record of inode `ino`, made if new.
    pub fn repair_of(&mut self, ino: Ino) -> &mut InodeRepair {
        self.model.repairs.entry(ino).or_default()
    }

    /// Reads `len` bytes at fragment `addr`, which the caller has checked
    /// lie on the file system.
    pub fn read_at(&self, addr: Frag, len: usize) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.dev.read_at(self.geo.byte_offset(addr), &mut buf)?;
        Ok(buf)
    }
}

/// FFS's inodes and directories for the namespace phases (2 to 4).
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
        self.read_at(addr.get(), self.bs)
    }

    /// By phase 1: what it found in use (and keeps) is allocated; a slot in
    /// a table that could not be read is unknown.
    fn target(&self, ino: Ino) -> Target {
        if ino < ROOT_INO || ino >= self.geo.ninodes() {
            return Target::Impossible;
        }
        let Some(scan) = self.model.groups.get(self.geo.ino_group(ino) as usize) else {
            return Target::Unknown;
        };
        if !scan.table_readable {
            Target::Unknown
        } else if self.inodes.contains_key(&ino) {
            Target::Allocated
        } else {
            Target::Free
        }
    }

    fn root_fix(&self) -> Option<Fix> {
        Some(Fix::CreateRoot)
    }

    fn fills_directory_holes(&self) -> bool {
        true
    }

    fn frees_empty_files(&self) -> bool {
        true
    }

    fn phase_label(&self) -> &'static str {
        "phase 2 (pathnames)"
    }

    fn report_mut(&mut self) -> &mut Report {
        &mut self.report
    }

    fn tick(&mut self, phase: &str, done: u64, total: u64) {
        self.progress.tick(phase, done, total);
    }
}
