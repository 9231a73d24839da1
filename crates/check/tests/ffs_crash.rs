//! FFS after a power cut. The crash explorer's workloads (`testkit::crash`:
//! one or two core namespace and data operations with persistence points,
//! after a synced setup) run on a `CrashDisk` under `Ffs` in each integrity
//! mode; for a sample of the crash states each can leave (unflushed writes
//! dropped, reordered, torn at sectors), `fsck --repair` must:
//!
//! 1. run and end with exit status 0 or 1, a clean report, and an image a
//!    fresh check calls clean and `Ffs::mount` accepts;
//! 2. leave a consistent tree (testkit's walk: every entry's inode readable
//!    and of its type, `.` and `..` right, link counts matching names);
//! 3. in `sync` mode, keep every namespace operation that returned before
//!    the cut: each path (outside `/lost+found`) is as after those
//!    operations, or, for a path the operation running at the cut changes,
//!    as after it;
//! 4. in every mode, keep every file covered by an acknowledged fsync (or
//!    sync) and alive to the end of the workload, with its contents as of
//!    then or of a later step (found by inode number, anywhere in the tree);
//! 5. in `sync` mode, a file the run held open when its last name went
//!    (`Op::UnlinkOpen`), once that unlink returned before the cut, is no
//!    damage: the first check finds it on the orphan list, pending reclaim,
//!    and reports no problem about it.
//!
//! Before any repair, on the raw crash image (rules 6 to 10 read it as
//! fsck's phase 1 and pathname phase do: inodes from the tables, not the
//! bitmaps; each rule's reader is its own, not fsck's):
//!
//! 6. in `sync` and `softdep` modes, no pointer on the disk (in an inode or
//!    an indirect block) names an indirect block, or a block of a
//!    directory or symbolic link, that was not written after it was given
//!    to that file: a pointer the setup image lacks must reach fragments
//!    whose bytes differ from the setup image's, and a tail the setup
//!    image held over fewer fragments must differ on those added (4.4BSD
//!    `ffs_balloc` writes a new indirect block before the pointer to it,
//!    so that "indirect blocks never point at garbage", and a directory's
//!    blocks go before its inode). fsck finds an unwritten indirect block
//!    of zeros, but an old one of the same inode number and position would
//!    pass its checks and hand the file another file's blocks. In
//!    `softdep` mode the same holds for a regular file's data blocks (soft
//!    updates roll a pointer back until the block it names is written:
//!    "no pointer to stale data"), except that a block reading as zeros
//!    where some version of the file holds zeros passes, a zero written
//!    and a zero left being the same bytes. `sync` mode does not order
//!    data (rule 4 says what that allows). When a run ends with `sync()`,
//!    every such pointer in the image of all its writes must pass, in any
//!    mode: a check of the check;
//! 7. in `sync` and `softdep` modes, a read-only check of the image finds
//!    only leaks (`fslab_check::Severity`): blocks, inodes and counts held
//!    that nothing uses, what `fsck -p` repairs unasked — 4.4BSD's ordered
//!    writes leave nothing else, torn writes included, since indirect
//!    blocks are checksummed per sector, and neither do soft updates. fsck
//!    calls damage an entry naming a free or uninitialised inode, a block
//!    claimed twice, and (for an inode its walk reaches) a link count lower
//!    than the names; rules 8 and 9 cover what it calls a leak or does not
//!    look at;
//! 8. in `softdep` mode, every inode in use and every fragment a pointer
//!    holds (a tail's run as the inode's size gives it) is marked in use in
//!    its group's bitmaps on the disk. fsck calls "in use but marked free"
//!    a leak on an image not unmounted cleanly — today's mount refuses
//!    such an image until fsck rebuilds the groups — but a soft-updates
//!    image mounts without fsck, and would hand those out again. This
//!    also covers a size that reaches fragments past those its last
//!    direct block was given, which fsck's walk claims for it. `sync` mode
//!    writes its groups at sync only, so its bitmaps are stale;
//! 9. in `sync` and `softdep` modes, no inode in use has a link count lower
//!    than the entries naming it in all the directories on the disk,
//!    reachable or not (fsck compares counts only for the inodes its walk
//!    from the root reaches; a directory cut off by a crash would hide
//!    damage under it until the repair reconnects it);
//! 10. in `sync` and `softdep` modes, every `Op::Rename` that began before
//!     the cut (returned, or running at it) leaves the inode it moved
//!     reachable from the root by the old name or the new one or both,
//!     never neither — until a later operation begun before the cut
//!     changes what either name (or a directory above it) names. `sync`
//!     mode's operations are durable once they return, so every such
//!     rename is checked; in `softdep` mode only those whose old name was
//!     on the disk from the setup image on;
//! 11. in `sync` and `softdep` modes, and in the journal's (whose log
//!     preening replays first), preening a copy (`fsck -p`, which
//!     repairs only leaks and refuses when a round finds damage) ends with
//!     exit status 0 or 1, no refusal, an image a fresh check calls clean
//!     and one that mounts;
//! 12. in `softdep` mode, a copy of the raw image mounts as it is, without
//!     fsck or `allow_unclean`, and every entry reached from the root names
//!     an inode that reads, of the entry's type, whose contents read, with
//!     a link count no lower than the names found — unless the crash tore a
//!     cylinder-group area (one checksum per area), when mount refuses with
//!     EUCLEAN and fsck -p repairs it (rule 11; decision 0006). The
//!     mount starts the background leak scan, which, ticked to its end,
//!     must free every leak: after it and an unmount, a check finds the
//!     image clean (or only leaks, if the scan left a directory nothing
//!     names but that holds entries, for fsck to reconnect).
//! 13. in the journal's modes (`journal` on a `wafs` log, `journal-sync`
//!     on a `file` one, and each on a log device of its own, whose power
//!     fails with the file system's), a copy of the raw image mounts, replaying the log;
//!     the namespace found is one the run passed through (operations are
//!     whole: a rename has one name, never both, never neither) — with
//!     `journal-sync`, one holding every operation that returned before
//!     the cut — and after an unmount a check finds nothing at all, not a
//!     leak. Rules 1 to 5 hold after `fsck --repair`, which replays first.
//! 14. in the journal's modes, with `journal_data=ordered` (the default),
//!     rule 6's check of regular files' data blocks holds on a copy of the
//!     image after replay: no pointer the log made durable names a block
//!     not written since it was allocated (after a crash no file shows what
//!     a deleted file left in its blocks).
//!
//! After the repair, the image fsck calls clean must pass rules 8 and 9 as
//! well (a check of those checks).
//!
//! Each mode runs as mounted and with an adversarial write-back
//! (`MountOptions::adversary`: a random part of what is dirty written at
//! every point write-back may run), whose crash states must keep the same
//! rules. `async` mode orders nothing and promises only rules 1, 2 and 4
//! (for files unchanged since made durable); every other rule is still
//! checked there, and each must fire in some of its states, which shows
//! that each can fail. `softdep` runs a third time with
//! `MountOptions::disorder` (soft updates keeping no order), which must
//! break some rule in some state, and a fourth with the adversary in a
//! starved cache (16 buffers: most blocks go out rolled back, many times).
//! `journal` (whose transactions gather up to 64 operations each unless
//! told otherwise) runs again with each operation its own transaction, as
//! the lab's journals log them, with the adversary, with it in a starved
//! cache, once more with the write-ahead rule switched off (`disorder`),
//! which must break rule 13 somewhere, and once ordering no file data
//! (`journal_data=writeback`), which must break rule 14 somewhere. Every run prints, per
//! rule, how many states broke it, promised or not.
//!
//! A sample: every `STRIDE`th workload, `STATES` crash states each (seeded),
//! and every one of the workloads that give a file indirect blocks
//! ([`indirect_workloads`]), chains of renames ([`rename_workloads`]) and
//! writes into part of a block not read ([`partial_block_workloads`]),
//! `INDIRECT_STATES` states each.
//! `FSLAB_FFS_CRASH_STRIDE` and `FSLAB_FFS_CRASH_STATES` change them.
//!
//! All of that runs on the test layout (8 KiB blocks, 1 KiB fragments).
//! One more test runs every mode, as mounted, on other layouts
//! ([`SHAPES`]: 4 KiB blocks of 512-byte fragments and unfragmented, 16
//! KiB blocks of 2 KiB and 4 KiB fragments, 64 KiB blocks of 8 KiB
//! fragments), a thin sample of each ([`Budget::thin`]), under the same
//! rules: code that takes a fragment for 1 KiB or a block for 8 KiB
//! fails there. The two variables ask for the full sample there too.

mod common;

use disk::{BlockDevice, CrashChoice, MemDisk};
use fslab::bmap::{walk as walk_pointers, Visitor};
use fslab::ffs::cg::CylinderGroup;
use fslab::ffs::geometry::Geometry;
use fslab::ffs::layout::SB_CLEAN;
use fslab::ffs::mkfs::{read_group, read_superblock};
use fslab::ffs::{
    Ffs, Integrity, JournalData, JournalKind, LeakReport, LeakScanState, MountOptions, WriteMode,
};
use fslab::format::blockno::{is_indirect, NDADDR, XATTR_LBN};
use fslab::format::dirent::{parse_chunk, DIRBLKSIZ};
use fslab::format::inode::{kind, Inode, INODE_SIZE};
use fslab::format::{Daddr, Ino, Lbn, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use fslab_check::{Options, Severity};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use testkit::crash::{
    build, persist_options, record_on, setup_image_on, walk, workloads, Body, Coverage, Observed, Op,
    Persist, Recorded, Step, Tree, Workload,
};
use testkit::harness::env_or;

const DISK: u64 = 4 << 20;
/// The log device of the runs with one (the least journal and its header).
const LOG_DEVICE: u64 = (1 << 20) + 4096;
const STRIDE: u64 = 7;
const STATES: u64 = 6;
const INDIRECT_STATES: usize = 40;
/// The thin sample of each mode on each other layout ([`Budget::thin`]):
/// every `THIN_STRIDE`th workload, `THIN_STATES` crash states each, and
/// `THIN_SPECIAL_STATES` of each indirect and rename workload.
const THIN_STRIDE: usize = 90;
const THIN_STATES: usize = 3;
const THIN_SPECIAL_STATES: usize = 3;
/// The other layouts the modes run on: the smallest blocks and fragments,
/// blocks without fragments, 2 KiB fragments, the largest blocks and
/// fragments (too large for a journal), and the largest fragments a
/// journal takes in larger blocks.
const SHAPES: [Shape; 5] = [
    Shape { block: 4096, frag: 512 },
    Shape { block: 4096, frag: 4096 },
    Shape { block: 16384, frag: 2048 },
    Shape { block: 65536, frag: 8192 },
    Shape { block: 16384, frag: 4096 },
];

/// Workloads that give a file its first indirect block (the test layout's
/// 8 KiB blocks put byte 98 304 past the twelve direct blocks), then do
/// what writes that file's inode at once in `sync` mode (a link, a rename)
/// or at a persistence point: an existing file appended past its direct
/// blocks, and a new file written across them. And one that fsyncs a file
/// reaching through its indirect block, then appends and fsyncs again, so
/// that the indirect block is rewritten in place: a write of it torn at
/// sectors must not cost the pointers the first fsync made durable.
fn indirect_workloads() -> Vec<Workload> {
    let s = |x: &str| x.to_string();
    let far = Op::Write { path: s("A/foo"), offset: 100_000, len: 3_000, tag: 15 };
    let across = Op::Write { path: s("A/new"), offset: 90_000, len: 20_000, tag: 16 };
    let link = Op::Link(s("A/foo"), s("A/foolink"));
    let link_new = Op::Link(s("A/new"), s("B/newlink"));
    let rename = Op::Rename(s("A/foo"), s("B/foo"));
    let mut out = Vec::new();
    let mut add = |core: &[(&Op, Option<Persist>)]| {
        let name = format!("indirect-{:02}", out.len());
        if let Some(w) = build(name, core) {
            out.push(w);
        }
    };
    let big = Op::Write { path: s("A/foo"), offset: 0, len: 160_000, tag: 21 };
    let more = Op::Write { path: s("A/foo"), offset: 160_000, len: 8_192, tag: 22 };
    add(&[(&big, Some(Persist::Fsync(s("A/foo")))), (&more, Some(Persist::Fsync(s("A/foo"))))]);
    for (write, file, then) in
        [(&far, "A/foo", &link), (&far, "A/foo", &rename), (&across, "A/new", &link_new)]
    {
        for p in persist_options(write) {
            add(&[(write, Some(p))]);
        }
        for p in persist_options(then) {
            add(&[(write, None), (then, Some(p))]);
        }
        add(&[(write, Some(Persist::Fdatasync(s(file)))), (then, Some(Persist::Sync))]);
    }
    out
}

/// Workloads that write whole fragments into a block the fresh mount has
/// not read (the first of `A/foo`'s 8 KiB blocks): FFS stores them without
/// the rest of the block, outside the journal's mode, and writes back only
/// them. Each persistence point after it, then a second write that touches
/// the first (still only part of the block), a truncation that makes that
/// block the file's tail, an append past the old tail, and a write that is
/// not whole fragments (which reads the block and merges the two).
fn partial_block_workloads() -> Vec<Workload> {
    let s = |x: &str| x.to_string();
    let w = |offset: u64, len: usize, tag: u8| Op::Write { path: s("A/foo"), offset, len, tag };
    let part = w(4_096, 2_048, 17);
    let then = [w(0, 4_096, 18), Op::Truncate(s("A/foo"), 5_000), w(12_000, 5_000, 19), w(100, 300, 20)];
    let mut out = Vec::new();
    let mut add = |core: &[(&Op, Option<Persist>)]| {
        let name = format!("part-{:02}", out.len());
        if let Some(w) = build(name, core) {
            out.push(w);
        }
    };
    for p in persist_options(&part) {
        add(&[(&part, Some(p))]);
    }
    for next in &then {
        add(&[(&part, None), (next, Some(Persist::Fsync(s("A/foo"))))]);
    }
    // Crash states after the fsync that leave `A/foo` alone from there on:
    // the modes that order no data check its bytes only then.
    let elsewhere = [Op::Create(s("B/new")), Op::Write { path: s("A/bar"), offset: 0, len: 2_000, tag: 21 }];
    for next in &elsewhere {
        add(&[(&part, Some(Persist::Fsync(s("A/foo")))), (next, Some(Persist::Sync))]);
    }
    out
}

/// Renames in chains and runs, beyond the pairs of the sampled families:
/// a name renamed again before the first rename is durable, renamed back,
/// renamed and then removed, a create renamed over, a run of renames
/// in one directory (the MH folder's pack), two names swapped, and
/// directories renamed and
/// moved: soft updates keep each old name on the disk until its new one is
/// there, a rename of a rename hands that wait on, and a moved directory's
/// `..` waits for its new parent's count.
fn rename_workloads() -> Vec<Workload> {
    let s = |x: &str| x.to_string();
    let r = |a: &str, b: &str| Op::Rename(s(a), s(b));
    let chains: Vec<Vec<Op>> = vec![
        vec![r("A/foo", "A/x"), r("A/x", "A/y"), r("A/y", "B/z")],
        vec![r("A/foo", "A/bar"), r("A/bar", "A/foo")],
        vec![r("A/foo", "A/x"), Op::Unlink(s("A/x"))],
        vec![Op::Create(s("A/n1")), r("A/n1", "A/n2"), r("A/foo", "A/n1")],
        vec![r("A/foo", "B/foo"), Op::Create(s("A/foo")), r("A/bar", "A/foo")],
        vec![r("A/foo", "A/p1"), r("A/bar", "A/p2"), r("B/baz", "A/p3"), r("A/p1", "A/foo")],
        // Two files swap names through a temporary one; a file takes the
        // name another's rename has just left: renames of names not yet
        // durable whose new names wait for each other's old images.
        vec![r("A/foo", "A/t"), r("A/bar", "A/foo"), r("A/t", "A/bar")],
        vec![r("A/bar", "A/t1"), r("A/foo", "A/t2"), r("A/t1", "A/foo")],
        // A directory: renamed in its parent, then given a file; moved and
        // moved back; moved, its old name taken by a new directory; moved
        // over an empty directory; moved and removed.
        vec![r("A/sub", "A/sub2"), Op::Create(s("A/sub2/n"))],
        vec![r("A/sub", "B/sub"), r("B/sub", "A/sub")],
        vec![r("A/sub", "B/sub"), Op::Mkdir(s("A/sub"))],
        vec![Op::Mkdir(s("B/empty")), r("A/sub", "B/empty")],
        vec![Op::Mkdir(s("A/sub/deep")), r("A/sub/deep", "B/deep"), Op::Rmdir(s("B/deep"))],
    ];
    let mut out = Vec::new();
    for chain in &chains {
        for last in [None, Some(Persist::FsyncDir(s("A"))), Some(Persist::Sync)] {
            let mut core: Vec<(&Op, Option<Persist>)> = chain.iter().map(|op| (op, None)).collect();
            if let Some(step) = core.last_mut() {
                step.1 = last.clone();
            }
            let name = format!("renames-{:02}", out.len());
            if let Some(w) = build(name, &core) {
                out.push(w);
            }
        }
    }
    out
}

/// What a pointer on the disk reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// An indirect block.
    Indirect,
    /// A data block of a directory or symbolic link.
    Namespace,
    /// A data block of a regular file.
    Data,
    /// The extended-attribute block.
    Xattr,
}

/// One pointer on the disk (in an inode or an indirect block): block `lbn`
/// of inode `ino` is the `frags` fragments at `addr` — a whole block, or
/// for a file's tail the run its size gives it, by fsck's rule (the last
/// block when it is direct, the size does not end on a block boundary and
/// no block after it is allocated).
#[derive(Debug, Clone, Copy)]
struct Pointer {
    ino: Ino,
    lbn: Lbn,
    addr: u64,
    frags: u64,
    held: Held,
}

/// A raw image as fsck's phase 1 reads it, before any repair: every inode
/// in use (a slot below its group's initialised mark that decodes, passes
/// its checksum, carries its own number and a mode), every pointer those
/// hold (indirect blocks followed only when sound), and each group as on
/// the disk (`None`: it does not decode).
struct Scan {
    geo: Geometry,
    inodes: BTreeMap<Ino, Inode>,
    pointers: Vec<Pointer>,
    groups: Vec<Option<CylinderGroup>>,
}

impl Scan {
    /// The scan of the image on `dev`; `None` if no superblock decodes.
    fn read(dev: &dyn BlockDevice) -> Option<Scan> {
        let sb = read_superblock(dev).ok()?;
        let geo = sb.geometry;
        let tree = sb.indirect_geometry();
        let groups = (0..geo.ncg).map(|g| read_group(dev, &sb, g).ok()).collect();
        let mut scan = Scan { geo, inodes: BTreeMap::new(), pointers: Vec::new(), groups };
        for g in 0..geo.ncg {
            let mark = scan.groups[g as usize].as_ref().map_or(geo.ipg, CylinderGroup::initialised_inodes);
            let mut table = vec![0u8; mark as usize * INODE_SIZE];
            let at = geo.byte_offset(geo.group_base(g) + geo.inode_table_offset() as u64);
            if dev.read_at(at, &mut table).is_err() {
                continue;
            }
            for (s, slot) in table.chunks_exact(INODE_SIZE).enumerate() {
                let ino = g as Ino * geo.ipg as Ino + s as Ino;
                let Ok(inode) = Inode::decode(slot) else { continue };
                if ino < ROOT_INO || inode.ino != ino || inode.attr.mode == 0 {
                    continue;
                }
                scan.add_pointers(dev, &tree, &inode);
                scan.inodes.insert(ino, inode);
            }
        }
        Some(scan)
    }

    /// Adds the pointers `inode` holds.
    fn add_pointers(
        &mut self,
        dev: &dyn BlockDevice,
        tree: &fslab::format::blockno::Geometry,
        inode: &Inode,
    ) {
        struct Collect<'a> {
            dev: &'a dyn BlockDevice,
            frag: u64,
            block: usize,
            found: Vec<(Lbn, u64)>,
        }
        impl Visitor for Collect<'_> {
            fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool {
                self.found.push((lbn, addr.get()));
                is_indirect(lbn)
            }
            fn read(&mut self, addr: Daddr) -> fslab::Result<Vec<u8>> {
                let mut buf = vec![0u8; self.block];
                self.dev.read_at(addr.byte_offset(self.frag), &mut buf)?;
                Ok(buf)
            }
            fn unreadable(&mut self, _lbn: Lbn, _addr: Daddr, _error: fslab::Error) {}
        }
        let geo = self.geo;
        let mut c =
            Collect { dev, frag: geo.frag_size as u64, block: geo.block_size as usize, found: Vec::new() };
        walk_pointers(tree, inode, &mut c);
        let (bs, fpb, a) = (geo.block_size as u64, geo.frags_per_block as u64, inode.attr);
        let direct = NDADDR as Lbn;
        let tail = (!a.is_dir() && a.size % bs != 0 && a.size / bs < direct as u64)
            .then_some(a.size / bs)
            .filter(|&t| !c.found.iter().any(|&(l, _)| l >= 0 && l as u64 > t));
        for &(lbn, addr) in &c.found {
            let held = match lbn {
                l if is_indirect(l) => Held::Indirect,
                XATTR_LBN => Held::Xattr,
                _ if a.is_reg() => Held::Data,
                _ => Held::Namespace,
            };
            let frags = match tail {
                Some(t) if lbn >= 0 && lbn as u64 == t => geo.frags_for(a.size - t * bs),
                _ => fpb,
            };
            self.pointers.push(Pointer { ino: inode.ino, lbn, addr, frags, held });
        }
    }
}

/// What each crash state is compared with: the setup image, and how many
/// fragments of each of its pointers' blocks it covered.
struct Setup {
    disk: MemDisk,
    covered: BTreeMap<(Ino, Lbn, u64), u64>,
}

impl Setup {
    fn new(image: Vec<u8>) -> Setup {
        let disk = MemDisk::from_bytes(image);
        let scan = Scan::read(&disk).expect("the setup image has a superblock");
        let covered = scan.pointers.iter().map(|p| ((p.ino, p.lbn, p.addr), p.frags)).collect();
        Setup { disk, covered }
    }
}

/// Every version each inode number's file had during a run (by inode
/// number: what a block of it may rightly hold).
struct Versions(BTreeMap<Ino, Vec<Vec<u8>>>);

impl Versions {
    fn of(rec: &Recorded) -> Versions {
        let mut all: BTreeMap<Ino, Vec<Vec<u8>>> = BTreeMap::new();
        for node in rec.states.iter().flat_map(|s| s.nodes.values()) {
            if let Body::File(data) = &node.body {
                let v = all.entry(node.ino).or_default();
                if !v.contains(data) {
                    v.push(data.clone());
                }
            }
        }
        Versions(all)
    }

    /// Whether some version of `ino` reaches byte `start` and holds zeros
    /// from there to `end` (or to its end): then zeros there may have been
    /// written, not left.
    fn zeros_allowed(&self, ino: Ino, start: u64, end: u64) -> bool {
        self.0.get(&ino).is_some_and(|vs| {
            vs.iter().any(|v| {
                let len = v.len() as u64;
                len > start && v[start as usize..end.min(len) as usize].iter().all(|&b| b == 0)
            })
        })
    }
}

/// Rule 6 (see the module comment): every pointer in `crash` whose kind
/// `held` selects, and that the setup image did not hold, reaches
/// fragments written since — bytes that differ from the setup image's
/// there. A pointer the setup image held over fewer fragments (a tail
/// extended in place) is checked on the fragments added. A regular file's
/// block that reads as zeros where some version of the file holds zeros
/// passes (a zero written cannot be told from a zero left).
fn check_pointed_blocks_written(
    setup: &Setup,
    crash: &MemDisk,
    scan: &Scan,
    held: &[Held],
    versions: &Versions,
) -> Result<(), String> {
    let geo = scan.geo;
    let (fs, bs) = (geo.frag_size as u64, geo.block_size as u64);
    for p in scan.pointers.iter().filter(|p| held.contains(&p.held)) {
        let from = setup.covered.get(&(p.ino, p.lbn, p.addr)).copied().unwrap_or(0);
        if p.frags <= from || p.addr.saturating_add(p.frags) > geo.total_frags {
            continue;
        }
        let at = geo.byte_offset(p.addr + from);
        let len = ((p.frags - from) * fs) as usize;
        let (mut before, mut now) = (vec![0u8; len], vec![0u8; len]);
        if setup.disk.read_at(at, &mut before).is_err()
            || crash.read_at(at, &mut now).is_err()
            || before != now
        {
            continue;
        }
        if p.held == Held::Data && now.iter().all(|&b| b == 0) {
            let start = p.lbn as u64 * bs + from * fs;
            if versions.zeros_allowed(p.ino, start, start + len as u64) {
                continue;
            }
        }
        let what = match p.held {
            Held::Indirect => "indirect block",
            Held::Namespace => "directory or symbolic link block",
            Held::Data => "data block",
            Held::Xattr => "extended-attribute block",
        };
        return Err(format!(
            "inode {} on disk points at its {what} {} at fragment {} (fragments {from}..{} of it), which were not written since they were allocated",
            p.ino, p.lbn, p.addr, p.frags
        ));
    }
    Ok(())
}

/// Rule 8 (see the module comment): every inode in use and every fragment
/// a pointer holds is marked in use in its group's bitmaps on the disk.
fn check_bitmaps(scan: &Scan) -> Result<(), String> {
    let geo = scan.geo;
    for &ino in scan.inodes.keys() {
        let Some(Some(cg)) = scan.groups.get(geo.ino_group(ino) as usize) else { continue };
        if !cg.is_inode_used(geo.ino_slot(ino)) {
            return Err(format!("inode {ino} is in use, but its group's bitmap on disk marks it free"));
        }
    }
    for p in &scan.pointers {
        for f in p.addr..p.addr.saturating_add(p.frags).min(geo.total_frags) {
            let Some(Some(cg)) = scan.groups.get(geo.group_of(f) as usize) else { continue };
            let within = geo.within_group(f);
            if within < cg.frags() && cg.is_frag_free(within) {
                return Err(format!(
                    "inode {} holds fragment {f} (its block {}, {} fragments at {}), which its group's bitmap on disk marks free",
                    p.ino, p.lbn, p.frags, p.addr
                ));
            }
        }
    }
    Ok(())
}

/// One entry of a directory on the disk: the chunk's byte offset in the
/// directory, the entry's place in its chunk, its name and inode number.
struct RawEntry {
    offset: u64,
    k: usize,
    name: Vec<u8>,
    ino: Ino,
}

impl Scan {
    /// The entries of every directory in use, from the chunks that parse
    /// in the blocks its size covers, as fsck's pathname phase reads them.
    fn entries(&self, dev: &MemDisk) -> BTreeMap<Ino, Vec<RawEntry>> {
        let geo = self.geo;
        let bs = geo.block_size as u64;
        let mut out: BTreeMap<Ino, Vec<RawEntry>> = BTreeMap::new();
        let mut block = vec![0u8; bs as usize];
        for p in self.pointers.iter().filter(|p| p.held == Held::Namespace && p.lbn >= 0) {
            let dir = p.ino;
            let Some(size) = self.inodes.get(&dir).filter(|i| i.attr.is_dir()).map(|i| i.attr.size) else {
                continue;
            };
            if p.lbn as u64 >= size / bs || dev.read_at(geo.byte_offset(p.addr), &mut block).is_err() {
                continue;
            }
            for (c, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let offset = p.lbn as u64 * bs + (c * DIRBLKSIZ) as u64;
                let Ok(entries) = parse_chunk(chunk, dir, offset) else { continue };
                let raw = entries.iter().enumerate().filter(|(_, e)| e.ino != 0);
                out.entry(dir).or_default().extend(raw.map(|(k, e)| RawEntry {
                    offset,
                    k,
                    name: e.name.to_vec(),
                    ino: e.ino,
                }));
            }
        }
        out
    }

    /// The inode in use `path` leads to from the root, through entries
    /// naming inodes in use, as fsck's walk follows them.
    fn resolve(&self, entries: &BTreeMap<Ino, Vec<RawEntry>>, path: &str) -> Option<Ino> {
        let mut at = ROOT_INO;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            let found = entries.get(&at)?.iter().find(|e| {
                e.name == part.as_bytes()
                    && e.name != b"."
                    && e.name != b".."
                    && self.inodes.contains_key(&e.ino)
            });
            at = found?.ino;
        }
        Some(at)
    }
}

/// Rule 9 (see the module comment): no inode in use has a link count lower
/// than the entries naming it in every directory on the disk, reachable
/// or not — counted as fsck counts them (a directory's `.`, its
/// subdirectories' `..`, entries naming inodes in use; chunks that parse).
fn check_link_counts(scan: &Scan, entries: &BTreeMap<Ino, Vec<RawEntry>>) -> Result<(), String> {
    let mut refs: BTreeMap<Ino, u64> = BTreeMap::new();
    let is_dir = |ino: Ino| scan.inodes.get(&ino).is_some_and(|i| i.attr.is_dir());
    for (&dir, list) in entries {
        for e in list {
            let counted = match (e.offset == 0 && e.k < 2, e.name.as_slice()) {
                (true, b".") => e.ino == dir,
                (true, b"..") => is_dir(e.ino),
                (_, b"." | b"..") => false,
                _ => scan.inodes.contains_key(&e.ino),
            };
            if counted {
                *refs.entry(e.ino).or_default() += 1;
            }
        }
    }
    for (ino, names) in refs {
        let nlink = scan.inodes.get(&ino).map_or(0, |i| u64::from(i.attr.nlink));
        if nlink < names {
            return Err(format!(
                "inode {ino} has link count {nlink}, but {names} entries on the disk name it"
            ));
        }
    }
    Ok(())
}

/// A rename of a run, for rule 10: operation `op` moved inode `ino` from
/// `from` to `to`.
struct RenameCase {
    op: usize,
    from: String,
    to: String,
    ino: Ino,
    /// Device events when it began.
    start: usize,
    /// Device events when the first later operation that changes what
    /// either name or a directory above them names began (`usize::MAX`:
    /// none): past that cut the rule says nothing.
    until: usize,
    /// Whether `from` and the directories above it named the same inodes
    /// from the setup image to the rename, so that the old name was on
    /// the disk whatever a lazy mode wrote of the operations before.
    since_setup: bool,
}

impl RenameCase {
    /// Whether rule 10 checks this rename at `cut` in `integrity` mode.
    fn due(&self, cut: usize, integrity: Integrity) -> bool {
        self.start < cut && cut <= self.until && (integrity == Integrity::Sync || self.since_setup)
    }
}

/// `path` and the directories above it (the root left out).
fn path_and_parents(path: &str) -> Vec<&str> {
    let mut out = vec![path];
    let mut p = path;
    while let Some(i) = p.rfind('/') {
        p = &p[..i];
        out.push(p);
    }
    out
}

/// The renames of a run, for rule 10.
fn renames(rec: &Recorded) -> Vec<RenameCase> {
    let (mut starts, mut ops) = (Vec::new(), Vec::new());
    let (mut end, mut done, mut points) = (0, 0, 1);
    for step in &rec.steps {
        match step {
            Step::Op(op) => {
                starts.push(end);
                ops.push(op);
                end = rec.op_events[done];
                done += 1;
            }
            Step::Persist(_) => {
                end = rec.points[points].events;
                points += 1;
            }
        }
    }
    let names: Vec<BTreeMap<String, (u32, Ino)>> = rec.states.iter().map(Tree::namespace).collect();
    let binding = |state: usize, path: &str| -> Vec<Option<(u32, Ino)>> {
        path_and_parents(path).into_iter().map(|p| names[state].get(p).copied()).collect()
    };
    let mut out = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        let Op::Rename(from, to) = op else { continue };
        let Some(&(_, ino)) = names[k].get(from.as_str()) else { continue };
        let since_setup = (0..k).all(|j| binding(j, from) == binding(k, from));
        let changes = |j: usize| {
            binding(j + 1, from) != binding(k + 1, from) || binding(j + 1, to) != binding(k + 1, to)
        };
        let until = (k + 1..ops.len()).find(|&j| changes(j)).map_or(usize::MAX, |j| starts[j]);
        out.push(RenameCase {
            op: k,
            from: from.clone(),
            to: to.clone(),
            ino,
            start: starts[k],
            until,
            since_setup,
        });
    }
    out
}

/// Options for a mount of a copy of a crash image: no writer thread, a
/// small cache.
fn raw_options(integrity: Integrity) -> MountOptions {
    MountOptions { cache_bytes: 1 << 20, integrity, writes: WriteMode::Inline, ..MountOptions::default() }
}

/// Rule 10 (see the module comment): every rename of the run that began
/// before the cut left its inode reachable by the old name or the new one
/// on the raw image, read as fsck's walk reads it (a read-only mount
/// would trust the groups' stale bitmaps). `sync` mode's operations are
/// durable once they return, so every such rename is checked there; in
/// the lazy modes only those whose old name was on the disk from the
/// setup image on.
fn check_renames(
    renames: &[RenameCase],
    scan: &Scan,
    entries: &BTreeMap<Ino, Vec<RawEntry>>,
    cut: usize,
    integrity: Integrity,
) -> Result<(), String> {
    for r in renames.iter().filter(|r| r.due(cut, integrity)) {
        let names_it = |path: &str| scan.resolve(entries, path) == Some(r.ino);
        if !names_it(&r.from) && !names_it(&r.to) {
            return Err(format!(
                "rename({} -> {}), operation {} of the run, begun before the cut: inode {} is named by neither",
                r.from, r.to, r.op, r.ino
            ));
        }
    }
    Ok(())
}

fn mount(dev: Arc<dyn BlockDevice>, integrity: Integrity) -> fslab::Result<FileSystem<Ffs>> {
    mount_with(dev, integrity, Drive::default(), 0)
}

/// A mount driven as `drive` says: an adversarial write-back (seeded by
/// `seed`) writes a random part of what is dirty at every point it may
/// run (`MountOptions::adversary`); soft updates with `disorder` keep no
/// order; a starved cache holds the fewest buffers the cache allows (16),
/// so that write-back runs at nearly every call and most blocks it writes
/// carry rollbacks.
fn mount_with(
    dev: Arc<dyn BlockDevice>,
    integrity: Integrity,
    drive: Drive,
    seed: u64,
) -> fslab::Result<FileSystem<Ffs>> {
    let options = MountOptions {
        cache_bytes: if drive.starved { 16 * 8192 } else { 1 << 20 },
        integrity,
        adversary: drive.adversary.then_some(seed),
        disorder: drive.disorder,
        journal_batch: if drive.unbatched { 1 } else { fslab::ffs::DEFAULT_JOURNAL_BATCH },
        realloc: drive.realloc.then_some(true),
        realloc_always: drive.realloc,
        journal_data: if drive.writeback_data { JournalData::Writeback } else { JournalData::Ordered },
        ..MountOptions::default()
    };
    Ok(FileSystem::new(Ffs::mount(dev, options)?))
}

/// Whether `integrity` is one of the journal's modes.
fn is_journal(integrity: Integrity) -> bool {
    matches!(integrity, Integrity::Journal | Integrity::JournalSync)
}

/// Rule 13 (see the module comment): a copy of the raw image mounts,
/// replaying the log; its namespace is one the run passed through — with
/// `journal-sync`, one holding every operation that returned before the
/// cut — and after an unmount a check finds nothing at all.
fn check_replay(rec: &Recorded, dev: &Arc<MemDisk>, cut: usize, integrity: Integrity) -> Result<(), String> {
    let image = Arc::new(MemDisk::from_bytes(dev.snapshot()));
    let (copy, split) = as_devices(&image)?;
    let mounted = Ffs::mount(copy, raw_options(integrity))
        .map_err(|e| format!("the crash image does not mount, replaying its journal: {e}"))?;
    let mut fs = FileSystem::new(mounted);
    let seen = walk(&mut fs)?;
    let found: BTreeMap<String, (u32, Ino)> = seen
        .namespace
        .iter()
        .filter(|(p, _)| !p.starts_with("lost+found"))
        .map(|(p, v)| (p.clone(), *v))
        .collect();
    let k = rec.op_events.iter().filter(|&&e| e <= cut).count();
    let first = if integrity == Integrity::JournalSync { k } else { 0 };
    if !(first..=k + 1).filter_map(|j| rec.states.get(j)).any(|s| s.namespace() == found) {
        let before = rec.states[k].namespace();
        let only_found: Vec<_> = found.iter().filter(|(p, v)| before.get(*p) != Some(v)).collect();
        let only_before: Vec<_> = before.iter().filter(|(p, v)| found.get(*p) != Some(v)).collect();
        return Err(format!(
            "after replay the namespace is no state the run passed through from op {first} to op {}: \
             found but not before op {k}: {only_found:?}; before op {k} but not found: {only_before:?}",
            k + 1
        ));
    }
    fs.unmount().map_err(|e| format!("unmount after replay: {e}"))?;
    if let Some(split) = split {
        split.join_into(&image).map_err(|e| format!("joining the devices again: {e}"))?;
    }
    let after = common::check(&image);
    if !after.is_clean() {
        return Err(format!("after replay and an unmount, a check reports:\n{}", common::listing(&after)));
    }
    Ok(())
}

/// Rule 14 (see the module comment): rule 6's data check on a copy of the
/// raw image with its log replayed (replay alone, as mount and fsck begin).
fn check_replayed_data(setup: &Setup, dev: &Arc<MemDisk>, versions: &Versions) -> Result<(), String> {
    let image = Arc::new(MemDisk::from_bytes(dev.snapshot()));
    let (copy, split) = as_devices(&image)?;
    let sb = read_superblock(copy.as_ref()).map_err(|e| format!("the crash image's superblock: {e}"))?;
    if fslab::ffs::journal::needs_replay(&sb) {
        fslab::ffs::journal::replay(copy.as_ref(), &sb).map_err(|e| format!("replay: {e}"))?;
    }
    drop(copy);
    if let Some(split) = split {
        split.join_into(&image).map_err(|e| format!("joining the devices again: {e}"))?;
    }
    let scan = Scan::read(&image).ok_or("no superblock after replay")?;
    check_pointed_blocks_written(setup, &image, &scan, &[Held::Data], versions)
        .map_err(|e| format!("after replay: {e}"))
}

/// The synced setup image and its model. The journal's modes get a log:
/// `journal` a `wafs` one at the end of the disk, `journal-sync` a `file`
/// one in the one group of the disk (a log of 1 MiB, the least, does not
/// fit the other modes' 1 MiB groups). With `log_device`, the log is on a
/// device of its own, and the image is the pair's address space: the
/// file system's device, then (at the log device's base) the log device,
/// so that the crash disk records the two devices' writes in one order and
/// a cut takes the power from both at once.
/// With `shape`, the file system has that shape's blocks and fragments
/// instead of the test layout's.
fn setup(integrity: Integrity, log_device: bool, shape: Option<Shape>) -> (Vec<u8>, Tree) {
    let (group_size, journal) = match integrity {
        Integrity::Journal => (1 << 20, JournalKind::Wafs),
        Integrity::JournalSync => (4 << 20, JournalKind::File),
        _ => (1 << 20, JournalKind::None),
    };
    let mut layout = common::ffs::mkfs_options();
    let mut group_size: u64 = group_size;
    if let Some(shape) = shape {
        layout.block_size = shape.block;
        layout.fragment_size = shape.frag;
        // A group of 1 MiB holds 16 blocks of 64 KiB, too few for its
        // metadata and data; 32 blocks keep two groups on the disk.
        group_size = group_size.max(32 * u64::from(shape.block));
    }
    if !log_device {
        return setup_image_on(DISK, |dev| {
            let mkfs = fslab::ffs::MkfsOptions { group_size, journal, ..layout };
            fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default())?;
            mount(dev, integrity)
        });
    }
    let mkfs = fslab::ffs::MkfsOptions { group_size, journal: JournalKind::Device, ..layout };
    let sb = fslab::ffs::plan_with_log(DISK, Some(LOG_DEVICE), &mkfs).expect("plan");
    let base = fslab::ffs::log_device::log_device_base(&sb.geometry);
    setup_image_on(base + LOG_DEVICE, |dev| {
        let (data, log) = (Arc::new(MemDisk::new(DISK)), Arc::new(MemDisk::new(LOG_DEVICE)));
        fslab::mkfs_ffs_with_log(data.clone(), log.clone(), "log", &mkfs, Creds::default())?;
        dev.write_at(0, &data.snapshot())?;
        dev.write_at(base, &log.snapshot())?;
        mount(dev, integrity)
    })
}

/// A crash image of the pair (see `setup`) as the two devices it stands
/// for, attached again as a mount would attach them, and a way to put
/// what was written on them back into the image; any other image as it is.
fn as_devices(image: &Arc<MemDisk>) -> Result<(Arc<dyn BlockDevice>, Option<Split>), String> {
    let sb = read_superblock(image.as_ref()).map_err(|e| format!("the crash image's superblock: {e}"))?;
    if sb.journal.kind != JournalKind::Device {
        return Ok((image.clone(), None));
    }
    let bytes = image.snapshot();
    let base = fslab::ffs::log_device::log_device_base(&sb.geometry);
    let data = Arc::new(MemDisk::from_bytes(bytes[..DISK as usize].to_vec()));
    let log = Arc::new(MemDisk::from_bytes(bytes[base as usize..].to_vec()));
    let pair = fslab::ffs::log_device::attach(data.clone(), Some(log.clone()))
        .map_err(|e| format!("the log device does not attach: {e}"))?;
    Ok((pair, Some(Split { data, log, base })))
}

/// The two devices a crash image of the pair was split into.
struct Split {
    data: Arc<MemDisk>,
    log: Arc<MemDisk>,
    base: u64,
}

impl Split {
    /// Writes both devices back into `image`, at their places in the pair.
    fn join_into(&self, image: &MemDisk) -> std::io::Result<()> {
        image.write_at(0, &self.data.snapshot())?;
        image.write_at(self.base, &self.log.snapshot())
    }
}

/// Rule 3 (see the module comment).
fn check_acknowledged_names(rec: &Recorded, cut: usize, seen: &Observed) -> Result<(), String> {
    let k = rec.op_events.iter().filter(|&&e| e <= cut).count();
    let before = rec.states[k].namespace();
    let during = rec.states.get(k + 1).map_or_else(|| before.clone(), Tree::namespace);
    let found: BTreeMap<_, _> = seen.namespace.iter().filter(|(p, _)| !p.starts_with("lost+found")).collect();
    let paths: BTreeSet<&String> = before.keys().chain(during.keys()).chain(found.keys().copied()).collect();
    for path in paths {
        let (f, b, d) = (found.get(path).copied(), before.get(path), during.get(path));
        if f != b && f != d {
            return Err(format!(
                "/{path} is {f:?} after the {k} operations that returned; expected {b:?} (or {d:?} from the one running)"
            ));
        }
    }
    Ok(())
}

/// Rule 4 (see the module comment), with what FFS does not promise left
/// out:
/// * FFS frees a truncated file's blocks (writing the inode that no longer
///   points at them) before its new size reaches the disk, so during a
///   truncate the file may show zeros where the shorter size will end it:
///   a byte may be zero wherever some allowed version is shorter;
/// * no mode writes a file's data before the inode that points at it (nor
///   did 4.4BSD's), so past the shortest length the file has had since it
///   was made durable a block given to it since may show what the disk
///   held there (a truncate frees blocks below the durable length, and a
///   write past the new end is given blocks again);
/// * `async` mode orders nothing: a file changed after it was made durable
///   may have given up and lost fragments to the change (a tail moved), so
///   only files unchanged since are checked there.
///
/// Inside those limits every byte is one some version since had, and the
/// size one of theirs.
fn check_durable_files(
    rec: &Recorded,
    cut: usize,
    seen: &Observed,
    integrity: Integrity,
) -> Result<(), String> {
    let last = rec.states.len() - 1;
    let mut covered: BTreeMap<usize, usize> = BTreeMap::new();
    for p in rec.points.iter().filter(|p| p.events <= cut) {
        let ids: Vec<usize> = match (&p.persist, p.node) {
            (Persist::Sync, _) => rec.states[p.state].nodes.keys().copied().collect(),
            (_, Some(id)) => vec![id],
            _ => Vec::new(),
        };
        for id in ids {
            let from = covered.entry(id).or_insert(p.state);
            *from = (*from).max(p.state);
        }
    }
    for (id, from) in covered {
        let Some(node) = rec.states[last].nodes.get(&id).filter(|n| n.body.kind() == kind::REG) else {
            continue;
        };
        let ino = node.ino;
        let Some(found) = seen.inodes.get(&ino) else {
            return Err(format!("file #{ino}, made durable after op {from}, is gone"));
        };
        let versions: Vec<&[u8]> = rec.states[from..]
            .iter()
            .filter_map(|s| match s.nodes.get(&id).map(|n| &n.body) {
                Some(Body::File(data)) => Some(data.as_slice()),
                _ => None,
            })
            .collect();
        let Some(&first) = versions.first() else { continue };
        // Neither `async` nor a journal orders data before metadata (2000
        // paper §6): a file rewritten since it was made durable may show
        // any of its versions' sizes over any mix of their bytes.
        let unordered = matches!(integrity, Integrity::Async | Integrity::Journal | Integrity::JournalSync);
        if unordered && versions.iter().any(|v| *v != first) {
            continue;
        }
        // Below the shortest length since, no block was freed and given again.
        let durable = versions.iter().map(|v| v.len()).min().unwrap_or(0);
        let data = &found.data;
        if !versions.iter().any(|v| v.len() == data.len()) {
            return Err(format!(
                "file #{ino} (durable after op {from}) has size {}, never one of its sizes since",
                data.len()
            ));
        }
        let explained = |o: usize, b: u8| versions.iter().any(|v| v.get(o).map_or(b == 0, |&x| x == b));
        if let Some(o) = (0..data.len().min(durable)).find(|&o| !explained(o, data[o])) {
            return Err(format!(
                "file #{ino} (durable after op {from}) holds byte {:#04x} at offset {o}, which no version of it since had",
                data[o]
            ));
        }
    }
    Ok(())
}

/// Rule 7 (see the module comment): what a read-only check of the raw
/// crash image finds that is not a leak, if anything.
fn damage_before_repair(dev: &Arc<MemDisk>) -> Result<(), String> {
    let raw = common::check(dev);
    if raw.only_leaks() {
        return Ok(());
    }
    let damage: Vec<String> =
        raw.problems.iter().filter(|p| p.severity != Severity::Leak).map(|p| format!("  {p}\n")).collect();
    Err(format!("before repair, the image holds damage, not only leaks:\n{}", damage.concat()))
}

/// Rule 11 (see the module comment): preening a copy of the raw image
/// (`fsck -p`: leaks only) leaves an image a check calls clean and that
/// mounts.
fn check_preen(dev: &Arc<MemDisk>, integrity: Integrity) -> Result<(), String> {
    let copy = Arc::new(MemDisk::from_bytes(dev.snapshot()));
    let options = Options { repair: true, preen: true, ..Options::default() };
    let outcome = fslab_check::fsck(copy.clone(), &options, &mut |_| {})
        .map_err(|e| format!("fsck -p could not run: {e}"))?;
    if outcome.exit_code() > 1 || !outcome.failed.is_empty() {
        return Err(format!(
            "fsck -p exited {}; found:\n{}failed: {:?}",
            outcome.exit_code(),
            common::listing(&outcome.first),
            outcome.failed
        ));
    }
    let again = common::check(&copy);
    if !again.is_clean() {
        return Err(format!("a check after fsck -p reports:\n{}", common::listing(&again)));
    }
    let mut fs = FileSystem::new(
        Ffs::mount(copy, raw_options(integrity))
            .map_err(|e| format!("the preened image does not mount: {e}"))?,
    );
    fs.unmount().map_err(|e| format!("unmount after fsck -p: {e}"))
}

thread_local! {
    /// What the leak scans of one exploration freed, summed (rule 12).
    static SCANNED: std::cell::RefCell<LeakReport> = std::cell::RefCell::new(LeakReport::default());
}

/// Rule 12 (see the module comment): a copy of the raw image mounts as it
/// is, without fsck, and every entry reached from the root names an inode
/// that reads, of the entry's type, whose contents read, and whose link
/// count is no lower than the names found; the leak scan, run to its end,
/// leaves an image fsck calls clean.
fn check_mounts_without_fsck(dev: &Arc<MemDisk>, integrity: Integrity) -> Result<(), String> {
    let image = Arc::new(MemDisk::from_bytes(dev.snapshot()));
    let unclean = read_superblock(image.as_ref()).is_ok_and(|sb| sb.flags & SB_CLEAN == 0);
    let copy: Arc<dyn BlockDevice> = image.clone();
    let mounted = match Ffs::mount(copy, raw_options(integrity)) {
        // The one refusal decision 0006 allows: a group area the crash tore
        // (it carries one checksum), which fsck -p rebuilds (rule 11).
        Err(e) if e.errno() == libc::EUCLEAN && e.to_string().contains("torn by the crash") => return Ok(()),
        other => other,
    };
    let mut fs =
        FileSystem::new(mounted.map_err(|e| format!("the crash image does not mount without fsck: {e}"))?);
    let mut names: BTreeMap<Ino, (u32, u32)> = BTreeMap::new();
    let mut dirs = BTreeSet::from([ROOT_INO]);
    let mut stack = vec![(String::new(), ROOT_INO)];
    while let Some((path, dir)) = stack.pop() {
        let (mut offset, mut entries) = (0, Vec::new());
        loop {
            let page =
                fs.readdir(dir, offset, 64).map_err(|e| format!("readdir of /{path} (#{dir}): {e}"))?;
            let Some(last) = page.last() else { break };
            offset = last.next_offset;
            entries.extend(page);
            if entries.len() > 10_000 {
                return Err(format!("directory /{path} does not end"));
            }
        }
        for e in entries.into_iter().filter(|e| e.name != b"." && e.name != b"..") {
            let child = format!("{path}/{}", String::from_utf8_lossy(&e.name));
            let inode = fs
                .getattr(e.ino)
                .map_err(|err| format!("{child} names inode {} that does not read: {err}", e.ino))?;
            let (k, a) = (inode.attr.mode & kind::MASK, inode.attr);
            if k != e.kind {
                return Err(format!("{child}: the entry's type is {:#o}, inode {}'s {k:#o}", e.kind, e.ino));
            }
            names.entry(e.ino).or_insert((a.nlink, 0)).1 += 1;
            match k {
                kind::REG => {
                    let data = fs
                        .read(e.ino, 0, a.size as usize + 1)
                        .map_err(|err| format!("read {child}: {err}"))?;
                    if data.len() as u64 != a.size {
                        return Err(format!("{child}: size {} but {} bytes read", a.size, data.len()));
                    }
                }
                kind::LNK => {
                    fs.readlink(e.ino).map_err(|err| format!("readlink {child}: {err}"))?;
                }
                kind::DIR if dirs.insert(e.ino) => stack.push((child, e.ino)),
                _ => {}
            }
        }
    }
    for (ino, (nlink, found)) in names {
        if !dirs.contains(&ino) && nlink < found {
            return Err(format!("inode {ino} has link count {nlink}, but {found} names reach it"));
        }
    }
    // The background scan, run to its end, frees every leak: fsck then
    // finds nothing, unless the scan left a directory nothing names but
    // that holds entries (fsck reconnects it).
    if unclean && !matches!(fs.storage().leak_report().state, LeakScanState::Running { .. }) {
        return Err(format!("no leak scan runs on the crash image: {:?}", fs.storage().leak_report()));
    }
    for _ in 0..1_000 {
        fs.tick().map_err(|e| format!("a tick of the leak scan: {e}"))?;
        if !matches!(fs.storage().leak_report().state, LeakScanState::Running { .. }) {
            break;
        }
    }
    let report = fs.storage().leak_report().clone();
    SCANNED.with(|s| {
        let mut s = s.borrow_mut();
        s.frags_freed += report.frags_freed;
        s.inodes_freed += report.inodes_freed;
        s.links_lowered += report.links_lowered;
        s.block_counts_set += report.block_counts_set;
        s.left_for_fsck += report.left_for_fsck;
    });
    if unclean && report.state != LeakScanState::Done {
        return Err(format!("the leak scan did not end: {report:?}"));
    }
    fs.unmount().map_err(|e| format!("unmount of the crash image: {e}"))?;
    let after = common::check(&image);
    let only_leaks = after.problems.iter().all(|p| p.severity == Severity::Leak);
    if !(after.is_clean() || report.left_for_fsck > 0 && only_leaks) {
        return Err(format!(
            "after the leak scan ({report:?}) and an unmount, a check reports:\n{}",
            common::listing(&after)
        ));
    }
    Ok(())
}

/// The rules a crash state is held to (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rule {
    /// Rules 1 to 5: the repair and what it keeps.
    Repair,
    /// Rule 6: indirect, directory and symbolic-link blocks written before
    /// a pointer names them.
    Ordered,
    /// Rule 6 for `softdep`: regular files' data blocks too.
    Data,
    /// Rule 7: only leaks before repair.
    Leaks,
    /// Rule 8: what is in use marked in use in the groups on disk.
    Bitmaps,
    /// Rule 9: no link count lower than the entries on the disk.
    LinkCounts,
    /// Rule 10: a renamed inode keeps the old name or the new one.
    Rename,
    /// Rule 11: preening makes the image clean.
    Preen,
    /// Rule 12: the image mounts without fsck.
    Mount,
    /// Rule 13: the journal's replay leaves a clean image holding whole
    /// operations.
    Replay,
    /// Rule 14: after replay, no pointer names a data block not written
    /// since it was allocated.
    ReplayedData,
}

impl Rule {
    /// Whether `integrity` promises this rule.
    fn binds(self, integrity: Integrity) -> bool {
        use Integrity::{Softdep, Sync};
        match self {
            Rule::Repair => true,
            Rule::Ordered | Rule::Leaks | Rule::LinkCounts | Rule::Rename => {
                matches!(integrity, Sync | Softdep)
            }
            Rule::Preen => matches!(integrity, Sync | Softdep) || is_journal(integrity),
            Rule::Data | Rule::Bitmaps | Rule::Mount => integrity == Softdep,
            Rule::Replay | Rule::ReplayedData => is_journal(integrity),
        }
    }
}

/// What one workload's run gives every crash state of it.
struct Run {
    rec: Recorded,
    versions: Versions,
    renames: Vec<RenameCase>,
}

/// Checks one crash image: rules 6 to 12 on the raw image (each on its own
/// copy where it writes; rule 12 only in `softdep` mode, which alone
/// mounts an image not unmounted cleanly), then repairs it and checks
/// rules 1 to 5. Returns every rule the state broke, with what broke it —
/// whether or not `integrity` promises the rule, so that a run shows the
/// checks firing on a mode that does not keep them.
fn check_state(
    run: &Run,
    setup: &Setup,
    disk: MemDisk,
    cut: usize,
    integrity: Integrity,
) -> Vec<(Rule, String)> {
    let mut broken = Vec::new();
    let mut note = |rule: Rule, result: Result<(), String>| {
        if let Err(what) = result {
            broken.push((rule, what));
        }
    };
    if let Some(scan) = Scan::read(&disk) {
        let held = [Held::Indirect, Held::Namespace];
        note(Rule::Ordered, check_pointed_blocks_written(setup, &disk, &scan, &held, &run.versions));
        note(Rule::Data, check_pointed_blocks_written(setup, &disk, &scan, &[Held::Data], &run.versions));
        note(Rule::Bitmaps, check_bitmaps(&scan));
        let entries = scan.entries(&disk);
        note(Rule::LinkCounts, check_link_counts(&scan, &entries));
        note(Rule::Rename, check_renames(&run.renames, &scan, &entries, cut, integrity));
    }
    let dev = Arc::new(disk);
    note(Rule::Leaks, damage_before_repair(&dev));
    note(Rule::Preen, check_preen(&dev, integrity));
    if integrity == Integrity::Softdep {
        note(Rule::Mount, check_mounts_without_fsck(&dev, integrity));
    }
    if is_journal(integrity) {
        note(Rule::Replay, check_replay(&run.rec, &dev, cut, integrity));
        note(Rule::ReplayedData, check_replayed_data(setup, &dev, &run.versions));
    }
    note(Rule::Repair, repair_and_check(&run.rec, dev, cut, integrity));
    broken
}

/// Rules 1 to 5 (see the module comment) on the image on `dev`, which
/// they repair.
fn repair_and_check(
    rec: &Recorded,
    dev: Arc<MemDisk>,
    cut: usize,
    integrity: Integrity,
) -> Result<(), String> {
    let outcome =
        fslab_check::fsck(dev.clone(), &Options { repair: true, ..Options::default() }, &mut |_| {})
            .map_err(|e| format!("fsck could not run: {e}"))?;
    let listing = |r: &fslab_check::Report| common::listing(r);
    if integrity == Integrity::Sync {
        for (&ino, &orphaned) in &rec.orphans {
            let about: Vec<String> =
                outcome.first.problems.iter().filter(|p| p.ino == Some(ino)).map(|p| p.to_string()).collect();
            if orphaned <= cut && !about.is_empty() {
                return Err(format!(
                    "the orphan {ino}, unlinked before the cut, is reported as damage: {about:?}"
                ));
            }
        }
    }
    if outcome.exit_code() > 1 {
        return Err(format!(
            "fsck --repair exited {}; found:\n{}left:\n{}failed: {:?}",
            outcome.exit_code(),
            listing(&outcome.first),
            listing(&outcome.last),
            outcome.failed
        ));
    }
    let again = common::check(&dev);
    if !again.is_clean() {
        return Err(format!("a check after the repair reports:\n{}", listing(&again)));
    }
    // What fsck calls clean, rules 8 and 9 must too (a check of the checks).
    let scan = Scan::read(dev.as_ref()).ok_or("the repaired image has no superblock")?;
    let entries = scan.entries(&dev);
    check_bitmaps(&scan)
        .map_err(|e| format!("rule 8 fails on the repaired image, which fsck calls clean: {e}"))?;
    check_link_counts(&scan, &entries)
        .map_err(|e| format!("rule 9 fails on the repaired image, which fsck calls clean: {e}"))?;
    let mut fs = mount(dev, integrity).map_err(|e| format!("the repaired image does not mount: {e}"))?;
    let seen = walk(&mut fs)?;
    if integrity == Integrity::Sync {
        check_acknowledged_names(rec, cut, &seen)?;
    }
    check_durable_files(rec, cut, &seen, integrity)?;
    fs.unmount().map_err(|e| format!("unmount: {e}"))
}

/// A check of rule 6's check: when a run ends with `sync()`, every block
/// it gave a file is written, so in the image of every write the run made
/// no pointer may reach a block rule 6 calls unwritten, in any mode.
fn check_after_final_sync(run: &Run, setup: &Setup) -> Result<(), String> {
    if run.rec.steps.last() != Some(&Step::Persist(Persist::Sync)) {
        return Ok(());
    }
    let disk =
        run.rec.crash.crash_image(run.rec.events, &CrashChoice::AllPersisted).map_err(|e| e.to_string())?;
    let scan = Scan::read(&disk).ok_or("no superblock")?;
    let all = [Held::Indirect, Held::Namespace, Held::Data, Held::Xattr];
    check_pointed_blocks_written(setup, &disk, &scan, &all, &run.versions)
}

/// How a mode's writes are driven during the workloads.
#[derive(Debug, Clone, Copy, Default)]
struct Drive {
    /// An adversarial write-back (`MountOptions::adversary`).
    adversary: bool,
    /// Soft updates keeping no order (`MountOptions::disorder`).
    disorder: bool,
    /// A cache of 16 buffers (see `mount_with`).
    starved: bool,
    /// The journal's log on a device of its own (see `setup`).
    log_device: bool,
    /// The journal logs each operation as its own transaction
    /// (`MountOptions::journal_batch` 1), as the lab's journals do.
    unbatched: bool,
    /// `realloc` on, moving a file's run at every block where a move is
    /// allowed (`MountOptions::realloc_always`).
    realloc: bool,
    /// The journal orders no file data (`journal_data=writeback`, the 2000
    /// paper's), which must break rule 14 somewhere.
    writeback_data: bool,
    /// Blocks and fragments other than the test layout's (see `setup`).
    shape: Option<Shape>,
}

/// An FFS layout's block and fragment sizes, in bytes: the crash rules
/// must hold whatever the layout, and code that takes a metadata buffer
/// for a whole block, or a fragment for 1 KiB, fails only on other ones.
#[derive(Debug, Clone, Copy)]
struct Shape {
    block: u32,
    frag: u32,
}

/// How much of the crash space a run samples: every `stride`th workload of
/// the sampled family, starting at the `offset`th, `states` crash states
/// each, and every one of the indirect, rename and partial-block
/// workloads, `special` states each.
#[derive(Debug, Clone, Copy)]
struct Budget {
    stride: usize,
    offset: usize,
    states: usize,
    special: usize,
}

impl Budget {
    /// The budget of the runs on the test layout (see the module comment):
    /// `FSLAB_FFS_CRASH_STRIDE` and `FSLAB_FFS_CRASH_STATES` change it.
    fn full() -> Budget {
        Budget {
            stride: env_or("FSLAB_FFS_CRASH_STRIDE", STRIDE).max(1) as usize,
            offset: 0,
            states: env_or("FSLAB_FFS_CRASH_STATES", STATES) as usize,
            special: INDIRECT_STATES,
        }
    }

    /// The budget of one of many runs (a mode on another layout), each
    /// starting at its own `offset` so that together they cover more
    /// workloads than each alone: a thin sample, unless
    /// `FSLAB_FFS_CRASH_STRIDE` or `FSLAB_FFS_CRASH_STATES` is set, when
    /// each run takes the full budget they give.
    fn thin(offset: usize) -> Budget {
        let told = ["FSLAB_FFS_CRASH_STRIDE", "FSLAB_FFS_CRASH_STATES"]
            .iter()
            .any(|name| std::env::var_os(name).is_some());
        let budget = if told {
            Budget::full()
        } else {
            Budget { stride: THIN_STRIDE, offset: 0, states: THIN_STATES, special: THIN_SPECIAL_STATES }
        };
        Budget { offset: offset % budget.stride, ..budget }
    }
}

/// What a run of the explorer found.
struct Explored {
    checked: usize,
    /// What the leak scans freed, summed (`softdep`, rule 12).
    scanned: LeakReport,
    /// Crash states that broke a rule their mode promises, described.
    violations: Vec<String>,
    /// Per rule, the crash states that broke it (promised or not).
    fired: BTreeMap<Rule, usize>,
    /// Crash states with no write torn that held damage before repair.
    damaged: usize,
    /// Crash states in which rule 10 checked a rename.
    renames: usize,
}

impl Explored {
    fn fired(&self, rule: Rule) -> usize {
        self.fired.get(&rule).copied().unwrap_or(0)
    }

    /// Requires that no crash state broke a rule its mode promises.
    #[track_caller]
    fn assert_kept(&self) {
        assert!(
            self.violations.is_empty(),
            "{} of {} crash states broke a rule; the first:\n{}",
            self.violations.len(),
            self.checked,
            self.violations[..self.violations.len().min(3)].join("\n")
        );
    }
}

/// Explores the sampled crash states of `integrity`.
fn explore(integrity: Integrity) -> Explored {
    explore_with(integrity, Drive::default())
}

/// [`explore`], with the workloads' writes driven as `drive` says.
fn explore_with(integrity: Integrity, drive: Drive) -> Explored {
    let found = explore_within(integrity, drive, Budget::full());
    assert!(found.checked > 100, "too few crash states to mean anything: {}", found.checked);
    found
}

/// [`explore_with`], sampling as `budget` says.
fn explore_within(integrity: Integrity, drive: Drive, budget: Budget) -> Explored {
    let (image, setup_tree) = setup(integrity, drive.log_device, drive.shape);
    let base = Setup::new(image.clone());
    let sampled = workloads(Coverage::Default)
        .into_iter()
        .skip(budget.offset)
        .step_by(budget.stride)
        .map(|w| (w, budget.states));
    let list: Vec<(Workload, usize)> = sampled
        .chain(
            indirect_workloads()
                .into_iter()
                .chain(rename_workloads())
                .chain(partial_block_workloads())
                .map(|w| (w, budget.special)),
        )
        .collect();
    let mut out = Explored {
        checked: 0,
        scanned: LeakReport::default(),
        violations: Vec::new(),
        fired: BTreeMap::new(),
        damaged: 0,
        renames: 0,
    };
    for (i, (workload, states)) in list.iter().enumerate() {
        let seed = 0xadad_0000 ^ i as u64;
        let rec = record_on(workload, &image, &setup_tree, |dev| mount_with(dev, integrity, drive, seed));
        let run = Run { versions: Versions::of(&rec), renames: renames(&rec), rec };
        if let Err(what) = check_after_final_sync(&run, &base) {
            out.violations.push(format!("{workload}\n  after its final sync: {what}"));
        }
        for state in run.rec.crash.crash_states(*states, 0xffc5 ^ i as u64) {
            out.checked += 1;
            out.renames += usize::from(run.renames.iter().any(|r| r.due(state.cut, integrity)));
            let torn = state.description.contains("torn");
            let broken = check_state(&run, &base, state.disk, state.cut, integrity);
            let rules: BTreeSet<Rule> = broken.iter().map(|(rule, _)| *rule).collect();
            for &rule in &rules {
                *out.fired.entry(rule).or_default() += 1;
            }
            out.damaged += usize::from(rules.contains(&Rule::Leaks) && !torn);
            let promised: Vec<String> = broken
                .iter()
                .filter(|(rule, _)| rule.binds(integrity))
                .map(|(rule, what)| format!("  {rule:?}: {what}"))
                .collect();
            if !promised.is_empty() {
                out.violations.push(format!(
                    "{workload}\n  crash state: {} (cut {})\n{}",
                    state.description,
                    state.cut,
                    promised.join("\n")
                ));
            }
        }
    }
    let how = [
        (drive.adversary, "adversarial write-back"),
        (drive.disorder, "disorder"),
        (drive.starved, "starved cache"),
        (drive.log_device, "log device"),
        (drive.unbatched, "each operation its own transaction"),
        (drive.realloc, "realloc at every block"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| *name)
    .collect::<Vec<_>>()
    .join(", ");
    let how = if how.is_empty() { how } else { format!(" ({how})") };
    let on = drive.shape.map_or(String::new(), |s| format!(" on {}/{}", s.block, s.frag));
    eprintln!(
        "ffs {integrity:?}{on}{how}: {} workloads, {} crash states checked ({} with a rename checked), {} untorn \
         with damage before repair, {} broke a promised rule; states breaking each rule (promised or not): {:?}",
        list.len(),
        out.checked,
        out.renames,
        out.damaged,
        out.violations.len(),
        out.fired
    );
    let scanned = SCANNED.with(|s| s.take());
    if integrity == Integrity::Softdep {
        eprintln!(
            "  leak scans freed {} fragments and {} inodes, lowered {} link counts, set {} block counts, \
             left {} directories for fsck",
            scanned.frags_freed,
            scanned.inodes_freed,
            scanned.links_lowered,
            scanned.block_counts_set,
            scanned.left_for_fsck
        );
    }
    out.scanned = scanned;
    out
}

#[test]
fn every_sampled_crash_state_of_ffs_sync_repairs_to_a_clean_image_keeping_what_returned() {
    explore(Integrity::Sync).assert_kept();
}

/// Blocks written at every moment write-back could send them, not only
/// when the cache is full: `sync` mode's order must hold whatever the
/// cache does between its ordered writes.
#[test]
fn every_sampled_crash_state_of_ffs_sync_under_an_adversarial_write_back_holds_only_leaks() {
    explore_with(Integrity::Sync, Drive { adversary: true, ..Drive::default() }).assert_kept();
}

/// `async` promises only what fsync and sync covered: that holds whatever
/// the cache writes when.
#[test]
fn every_sampled_crash_state_of_ffs_async_under_an_adversarial_write_back_keeps_what_was_fsynced() {
    let found = explore_with(Integrity::Async, Drive { adversary: true, ..Drive::default() });
    found.assert_kept();
    assert!(found.damaged > 0, "async orders nothing, yet no crash state held damage");
}

/// `async` orders nothing, so each check of the raw image (rules 6 to 11)
/// must fire on some of its crash states: that shows each can fail.
#[test]
fn every_sampled_crash_state_of_ffs_async_repairs_to_a_clean_image_keeping_what_was_fsynced() {
    let found = explore(Integrity::Async);
    found.assert_kept();
    assert!(found.damaged > 0, "async orders nothing, yet no crash state held damage: rule 7 could not fail");
    for rule in [Rule::Ordered, Rule::Data, Rule::Bitmaps, Rule::LinkCounts, Rule::Rename, Rule::Preen] {
        assert!(
            found.fired(rule) > 0,
            "async orders nothing, yet no crash state broke {rule:?}: it could not fail"
        );
    }
}

/// Soft updates: whatever reaches the disk, only leaks, no pointer to a
/// block not yet written (data included), bitmaps that cover what is in
/// use, renames that keep a name, and an image that mounts without fsck.
#[test]
fn every_sampled_crash_state_of_ffs_softdep_holds_only_leaks_and_mounts_without_fsck() {
    let out = explore(Integrity::Softdep);
    // The leak scans had leaks to free: rule 12's clean check after them
    // means something.
    let s = &out.scanned;
    assert!(
        s.frags_freed > 0 && s.links_lowered > 0 && s.inodes_freed > 0,
        "the leak scans freed nothing: {s:?}"
    );
    out.assert_kept();
}

/// [`every_sampled_crash_state_of_ffs_softdep_holds_only_leaks_and_mounts_without_fsck`]
/// with blocks written at every moment write-back could send them: the
/// rollbacks must hold whatever the cache writes when.
#[test]
fn every_sampled_crash_state_of_ffs_softdep_under_an_adversarial_write_back_holds_only_leaks() {
    explore_with(Integrity::Softdep, Drive { adversary: true, ..Drive::default() }).assert_kept();
}

/// The adversarial write-back in a cache of 16 buffers: write-back runs at
/// nearly every call, so most blocks go to the disk rolled back, many
/// times over, before their dependencies are durable.
#[test]
fn every_sampled_crash_state_of_ffs_softdep_in_a_starved_cache_holds_only_leaks() {
    explore_with(Integrity::Softdep, Drive { adversary: true, starved: true, ..Drive::default() })
        .assert_kept();
}

/// Soft updates that keep no order (`MountOptions::disorder`) must break
/// the rules in some crash state: the checks can fail on `softdep`.
///
/// (The journal's tests follow it.)
#[test]
fn every_sampled_crash_state_of_ffs_softdep_keeping_no_order_breaks_a_rule_somewhere() {
    let found = explore_with(Integrity::Softdep, Drive { disorder: true, ..Drive::default() });
    assert!(
        !found.violations.is_empty(),
        "soft updates that keep no order, yet every crash state kept the rules"
    );
}

/// Rule 13 on `journal` (asynchronous commits, a `wafs` log): every crash
/// state replays to a clean image of whole operations, keeping what
/// fsync and sync covered.
#[test]
fn every_sampled_crash_state_of_ffs_journal_replays_to_a_clean_image_of_whole_operations() {
    explore(Integrity::Journal).assert_kept();
}

/// Rule 13 on `journal` with each operation its own transaction, as the
/// 2000 paper's journals (and the lab's) log them.
#[test]
fn every_sampled_crash_state_of_ffs_journal_logging_each_operation_alone_replays_clean() {
    explore_with(Integrity::Journal, Drive { unbatched: true, ..Drive::default() }).assert_kept();
}

/// Rule 13 on `journal-sync` (a `file` log): and every namespace
/// operation that returned before the cut is there.
#[test]
fn every_sampled_crash_state_of_ffs_journal_sync_replays_to_a_clean_image_keeping_what_returned() {
    explore(Integrity::JournalSync).assert_kept();
}

/// The journal under an adversarial write-back: blocks sent home at every
/// moment the cache could send them, mid-operation too.
#[test]
fn every_sampled_crash_state_of_ffs_journal_under_an_adversarial_write_back_replays_clean() {
    explore_with(Integrity::Journal, Drive { adversary: true, ..Drive::default() }).assert_kept();
}

/// The journal in a starved cache (16 buffers): write-back runs for room
/// at nearly every call, and holds back what its log has not yet made
/// durable (the superblock with its checkpoint among them).
#[test]
fn every_sampled_crash_state_of_ffs_journal_in_a_starved_cache_replays_clean() {
    explore_with(Integrity::Journal, Drive { adversary: true, starved: true, ..Drive::default() })
        .assert_kept();
}

/// Rule 13 with the log on a device of its own (LFFS-wafs-2): the power
/// fails on both devices at once; each crash image is split into the two
/// devices and attached again before the replay.
#[test]
fn every_sampled_crash_state_of_ffs_journal_sync_on_a_log_device_replays_clean_keeping_what_returned() {
    explore_with(Integrity::JournalSync, Drive { log_device: true, ..Drive::default() }).assert_kept();
}

/// The same under an adversarial write-back, commits asynchronous.
#[test]
fn every_sampled_crash_state_of_ffs_journal_on_a_log_device_under_an_adversarial_write_back_replays_clean() {
    explore_with(Integrity::Journal, Drive { adversary: true, log_device: true, ..Drive::default() })
        .assert_kept();
}

/// With the write-ahead rule switched off, rule 13 fails somewhere: the
/// checks can fail on the journal.
#[test]
fn every_sampled_crash_state_of_ffs_journal_without_the_write_ahead_rule_breaks_rule_13_somewhere() {
    let found =
        explore_with(Integrity::Journal, Drive { adversary: true, disorder: true, ..Drive::default() });
    assert!(found.fired(Rule::Replay) > 0, "no crash state broke rule 13 with the write-ahead rule off");
}

/// With the journal ordering no file data (`journal_data=writeback`, as
/// the 2000 paper's LFFS), rule 14 fails somewhere: its check can fail.
#[test]
fn every_sampled_crash_state_of_ffs_journal_ordering_no_data_breaks_rule_14_somewhere() {
    let found = explore_with(Integrity::Journal, Drive { writeback_data: true, ..Drive::default() });
    assert!(found.fired(Rule::ReplayedData) > 0, "no crash state broke rule 14 with file data unordered");
}

/// `realloc` moving runs of blocks never written at every block where a
/// move is allowed, under an adversarial write-back: the old places are
/// freed only once the pointer to the new ones is durable, so `sync`
/// still leaves only leaks.
#[test]
fn every_sampled_crash_state_of_ffs_sync_moving_runs_at_every_block_holds_only_leaks() {
    explore_with(Integrity::Sync, Drive { adversary: true, realloc: true, ..Drive::default() }).assert_kept();
}

/// The same for soft updates: a moved block's new place is a new
/// allocation (no pointer to it before its contents and bitmap are
/// durable), its old place a deferred free.
#[test]
fn every_sampled_crash_state_of_ffs_softdep_moving_runs_at_every_block_holds_only_leaks() {
    explore_with(Integrity::Softdep, Drive { adversary: true, realloc: true, ..Drive::default() })
        .assert_kept();
}

/// The same for the journal: the pointers' change and the old places'
/// free are logged in the write's transaction.
#[test]
fn every_sampled_crash_state_of_ffs_journal_moving_runs_at_every_block_replays_clean() {
    explore_with(Integrity::Journal, Drive { adversary: true, realloc: true, ..Drive::default() })
        .assert_kept();
}

/// Every mode on each of the other layouts ([`SHAPES`]), a thin sample of
/// each ([`Budget::thin`]; `FSLAB_FFS_CRASH_STRIDE` and
/// `FSLAB_FFS_CRASH_STATES` ask for the full one): the rules each mode
/// promises hold whatever the sizes of blocks and fragments. The journal's
/// modes are left out where mkfs refuses a journal (fragments larger than
/// the log's block). Each run starts at its own workload, so that the thin
/// samples together cover more of the family.
#[test]
fn every_mode_on_other_geometries_keeps_the_crash_rules() {
    let modes =
        [Integrity::Sync, Integrity::Async, Integrity::Softdep, Integrity::Journal, Integrity::JournalSync];
    let mut failed = Vec::new();
    let mut runs = 0;
    for shape in SHAPES {
        for integrity in modes {
            if is_journal(integrity) && shape.frag > fslab::ffs::layout::LOG_BLOCK {
                continue;
            }
            let drive = Drive { shape: Some(shape), ..Drive::default() };
            let found = explore_within(integrity, drive, Budget::thin(runs));
            runs += 1;
            if !found.violations.is_empty() {
                failed.push(format!(
                    "{integrity:?} on {}/{}: {} of {} crash states broke a rule; the first:\n{}",
                    shape.block,
                    shape.frag,
                    found.violations.len(),
                    found.checked,
                    found.violations[..found.violations.len().min(2)].join("\n")
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{} of {runs} runs broke a rule:\n{}", failed.len(), failed.join("\n"));
}
