//! FFS after a power cut. The crash explorer's workloads (`testkit::crash`:
//! one or two core namespace and data operations with persistence points,
//! after a synced setup) run on a `CrashDisk` under `Ffs` in both integrity
//! modes; for a sample of the crash states each can leave (unflushed writes
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
//! 4. in both modes, keep every file covered by an acknowledged fsync (or
//!    sync) and alive to the end of the workload, with its contents as of
//!    then or of a later step (found by inode number, anywhere in the tree);
//! 5. in `sync` mode, a file the run held open when its last name went
//!    (`Op::UnlinkOpen`), once that unlink returned before the cut, is no
//!    damage: the first check finds it on the orphan list, pending reclaim,
//!    and reports no problem about it;
//! 6. in `sync` mode, before any repair, no pointer on the disk (in an
//!    inode or an indirect block) names an indirect block, or a block of a
//!    directory or symbolic link, that was not written after it was given
//!    to that file: a pointer the setup image lacks must reach a block
//!    whose bytes differ from the setup image's (4.4BSD `ffs_balloc`
//!    writes a new indirect block before the pointer to it, so that
//!    "indirect blocks never point at garbage", and a directory's blocks
//!    go before its inode). fsck finds an unwritten indirect block of
//!    zeros, but an old one of the same inode number and position would
//!    pass its checks and hand the file another file's blocks. A regular
//!    file's data blocks are not ordered (rule 4 says what that allows);
//! 7. in `sync` mode, before any repair, a read-only check of the image
//!    finds only leaks (`fslab_check::Severity`): blocks, inodes and
//!    counts held that nothing uses, what `fsck -p` repairs unasked —
//!    4.4BSD's ordered writes leave nothing else, torn writes included,
//!    since indirect blocks are checksummed per sector. `async` mode
//!    orders nothing, and the same check finds damage in some of its
//!    untorn states (which shows the check can fail).
//!
//! Each mode runs twice: as mounted, and with an adversarial write-back
//! (`MountOptions::adversary`: a random part of what is dirty written at
//! every point write-back may run), whose crash states must keep the same
//! rules.
//!
//! A sample: every `STRIDE`th workload, `STATES` crash states each (seeded),
//! and every one of the workloads that give a file indirect blocks
//! ([`indirect_workloads`]), `INDIRECT_STATES` states each.
//! `FSLAB_FFS_CRASH_STRIDE` and `FSLAB_FFS_CRASH_STATES` change them.

mod common;

use disk::{BlockDevice, MemDisk};
use fslab::bmap::{walk as walk_pointers, Visitor};
use fslab::ffs::mkfs::read_superblock;
use fslab::ffs::{Ffs, Integrity, MountOptions};
use fslab::format::blockno::is_indirect;
use fslab::format::inode::{kind, Inode, INODE_SIZE};
use fslab::format::{Daddr, Ino, Lbn, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use fslab_check::{Options, Severity};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use testkit::crash::{
    build, persist_options, record_on, setup_image_on, walk, workloads, Body, Coverage, Observed, Op,
    Persist, Recorded, Tree, Workload,
};
use testkit::harness::env_or;

const DISK: u64 = 4 << 20;
const STRIDE: u64 = 7;
const STATES: u64 = 6;
const INDIRECT_STATES: usize = 40;

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

/// Every pointer the image on `dev` holds (in an inode or an indirect
/// block) to a block `sync` mode writes before it — an indirect block, or
/// a block of a directory or symbolic link: (inode, block name, address).
/// Slots that do not decode as the inode they are the home of are
/// skipped.
fn ordered_pointers(dev: &dyn BlockDevice) -> BTreeSet<(Ino, Lbn, u64)> {
    struct Pointers<'a> {
        dev: &'a dyn BlockDevice,
        frag: u64,
        block: usize,
        ino: Ino,
        namespace: bool,
        found: BTreeSet<(Ino, Lbn, u64)>,
    }
    impl Visitor for Pointers<'_> {
        fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool {
            if is_indirect(lbn) || (self.namespace && lbn >= 0) {
                self.found.insert((self.ino, lbn, addr.get()));
            }
            true
        }
        fn read(&mut self, addr: Daddr) -> fslab::Result<Vec<u8>> {
            let mut buf = vec![0u8; self.block];
            self.dev.read_at(addr.byte_offset(self.frag), &mut buf)?;
            Ok(buf)
        }
        fn unreadable(&mut self, _lbn: Lbn, _addr: Daddr, _error: fslab::Error) {}
    }
    let Ok(sb) = read_superblock(dev) else { return BTreeSet::new() };
    let geo = sb.geometry;
    let tree = sb.indirect_geometry();
    let mut v = Pointers {
        dev,
        frag: geo.frag_size as u64,
        block: geo.block_size as usize,
        ino: 0,
        namespace: false,
        found: BTreeSet::new(),
    };
    for ino in ROOT_INO..geo.ninodes() {
        let mut slot = [0u8; INODE_SIZE];
        let at = geo.byte_offset(geo.inode_block_addr(ino)) + geo.inode_offset_in_block(ino) as u64;
        if dev.read_at(at, &mut slot).is_err() {
            continue;
        }
        let Ok(inode) = Inode::decode(&slot) else { continue };
        if inode.ino != ino || inode.attr.mode == 0 {
            continue;
        }
        v.ino = ino;
        v.namespace = !inode.attr.is_reg();
        walk_pointers(&tree, &inode, &mut v);
    }
    v.found
}

/// Rule 6 (see the module comment): every pointer of [`ordered_pointers`]
/// in `crash` that the setup image did not hold reaches a block written
/// since.
fn check_pointed_blocks_written(
    setup: &MemDisk,
    setup_pointers: &BTreeSet<(Ino, Lbn, u64)>,
    crash: &MemDisk,
) -> Result<(), String> {
    let Ok(sb) = read_superblock(crash) else { return Ok(()) };
    let geo = sb.geometry;
    let (mut before, mut now) = (vec![0u8; geo.block_size as usize], vec![0u8; geo.block_size as usize]);
    for &(ino, lbn, addr) in ordered_pointers(crash).difference(setup_pointers) {
        let at = geo.byte_offset(addr);
        if setup.read_at(at, &mut before).is_err() || crash.read_at(at, &mut now).is_err() {
            continue;
        }
        if before == now {
            return Err(format!(
                "inode {ino} on disk points at its block {lbn} at fragment {addr}, which was not written since it was allocated"
            ));
        }
    }
    Ok(())
}

fn mount(dev: Arc<dyn BlockDevice>, integrity: Integrity) -> fslab::Result<FileSystem<Ffs>> {
    mount_with(dev, integrity, None)
}

/// A mount whose write-back, with `adversary`, writes a random part of
/// what is dirty at every point it may run (`MountOptions::adversary`).
fn mount_with(
    dev: Arc<dyn BlockDevice>,
    integrity: Integrity,
    adversary: Option<u64>,
) -> fslab::Result<FileSystem<Ffs>> {
    let options = MountOptions { cache_bytes: 1 << 20, integrity, adversary, ..MountOptions::default() };
    Ok(FileSystem::new(Ffs::mount(dev, options)?))
}

/// The synced setup image and its model.
fn setup(integrity: Integrity) -> (Vec<u8>, Tree) {
    setup_image_on(DISK, |dev| {
        let mkfs = fslab::ffs::MkfsOptions { group_size: 1 << 20, ..common::ffs::mkfs_options() };
        fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default())?;
        mount(dev, integrity)
    })
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
///   did 4.4BSD's), so past the length the file had when made durable a
///   block given to it since may show what the disk held there;
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
        if integrity == Integrity::Async && versions.iter().any(|v| *v != first) {
            continue;
        }
        let durable = first.len();
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

/// What each crash state is compared with: the setup image and its
/// [`ordered_pointers`].
struct Setup {
    disk: MemDisk,
    pointers: BTreeSet<(Ino, Lbn, u64)>,
}

/// Rule 7 (see the module comment): what a read-only check of the raw
/// crash image finds that is not a leak, if anything.
fn damage_before_repair(dev: &Arc<MemDisk>) -> Option<String> {
    let raw = common::check(dev);
    (!raw.only_leaks()).then(|| {
        let damage: Vec<String> = raw
            .problems
            .iter()
            .filter(|p| p.severity != Severity::Leak)
            .map(|p| format!("  {p}\n"))
            .collect();
        format!("before repair, the image holds damage, not only leaks:\n{}", damage.concat())
    })
}

/// Checks rules 6 and 7 on one crash image, then repairs it and checks
/// rules 1-5. Returns whether the raw image held damage (allowed in
/// `async` mode only).
fn check_state(
    rec: &Recorded,
    setup: &Setup,
    disk: MemDisk,
    cut: usize,
    integrity: Integrity,
) -> Result<bool, String> {
    if integrity == Integrity::Sync {
        check_pointed_blocks_written(&setup.disk, &setup.pointers, &disk)?;
    }
    let dev = Arc::new(disk);
    let damage = damage_before_repair(&dev);
    if let (Integrity::Sync, Some(what)) = (integrity, &damage) {
        return Err(what.clone());
    }
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
    let mut fs = mount(dev, integrity).map_err(|e| format!("the repaired image does not mount: {e}"))?;
    let seen = walk(&mut fs)?;
    if integrity == Integrity::Sync {
        check_acknowledged_names(rec, cut, &seen)?;
    }
    check_durable_files(rec, cut, &seen, integrity)?;
    fs.unmount().map_err(|e| format!("unmount: {e}"))?;
    Ok(damage.is_some())
}

/// Explores the sampled crash states of `integrity`; returns how many
/// held damage before repair with no write torn.
fn explore(integrity: Integrity) -> usize {
    explore_with(integrity, false)
}

/// [`explore`], with an adversarial write-back during the workloads when
/// `adversary` is set.
fn explore_with(integrity: Integrity, adversary: bool) -> usize {
    let stride = env_or("FSLAB_FFS_CRASH_STRIDE", STRIDE).max(1) as usize;
    let states = env_or("FSLAB_FFS_CRASH_STATES", STATES) as usize;
    let (image, setup_tree) = setup(integrity);
    let disk = MemDisk::from_bytes(image.clone());
    let base = Setup { pointers: ordered_pointers(&disk), disk };
    let sampled = workloads(Coverage::Default).into_iter().step_by(stride).map(|w| (w, states));
    let list: Vec<(Workload, usize)> =
        sampled.chain(indirect_workloads().into_iter().map(|w| (w, INDIRECT_STATES))).collect();
    let (mut checked, mut violations, mut damaged) = (0, Vec::new(), 0);
    for (i, (workload, states)) in list.iter().enumerate() {
        let seed = adversary.then_some(0xadad_0000 ^ i as u64);
        let rec = record_on(workload, &image, &setup_tree, |dev| mount_with(dev, integrity, seed));
        for state in rec.crash.crash_states(*states, 0xffc5 ^ i as u64) {
            checked += 1;
            let torn = state.description.contains("torn");
            match check_state(&rec, &base, state.disk, state.cut, integrity) {
                Ok(held_damage) => damaged += usize::from(held_damage && !torn),
                Err(what) => violations.push(format!(
                    "{workload}\n  crash state: {} (cut {})\n  {what}",
                    state.description, state.cut
                )),
            }
        }
    }
    eprintln!(
        "ffs {integrity:?}{}: {} workloads, {checked} crash states repaired and checked, {damaged} untorn with damage before",
        if adversary { " (adversarial write-back)" } else { "" },
        list.len()
    );
    assert!(checked > 100, "too few crash states to mean anything: {checked}");
    assert!(
        violations.is_empty(),
        "{} of {checked} crash states broke a rule; the first:\n{}",
        violations.len(),
        violations[..violations.len().min(3)].join("\n")
    );
    damaged
}

#[test]
fn every_sampled_crash_state_of_ffs_sync_repairs_to_a_clean_image_keeping_what_returned() {
    assert_eq!(explore(Integrity::Sync), 0, "sync: damage before repair (rule 7)");
}

/// Blocks written at every moment write-back could send them, not only
/// when the cache is full: `sync` mode's order must hold whatever the
/// cache does between its ordered writes.
#[test]
fn every_sampled_crash_state_of_ffs_sync_under_an_adversarial_write_back_holds_only_leaks() {
    assert_eq!(explore_with(Integrity::Sync, true), 0, "sync: damage before repair (rule 7)");
}

/// `async` promises only what fsync and sync covered: that holds whatever
/// the cache writes when.
#[test]
fn every_sampled_crash_state_of_ffs_async_under_an_adversarial_write_back_keeps_what_was_fsynced() {
    let damaged = explore_with(Integrity::Async, true);
    assert!(damaged > 0, "async orders nothing, yet no crash state held damage");
}

#[test]
fn every_sampled_crash_state_of_ffs_async_repairs_to_a_clean_image_keeping_what_was_fsynced() {
    let damaged = explore(Integrity::Async);
    assert!(damaged > 0, "async orders nothing, yet no crash state held damage: rule 7 could not fail");
}
