//! Leak or damage, and what preening does with each, on both layouts.
//!
//! An image with only leaks — a link count one higher than the names, a
//! file no name reaches, space marked in use that nothing holds, counts
//! that disagree — checks as all leaks; preening repairs it unasked and a
//! second check is clean. An image with damage — a link count lower than
//! the names, a block in use that the file system would hand out again —
//! checks as damage among its problems, and preening refuses, naming the
//! damage, and leaves the image byte for byte as it was.

mod common;

use common::cases::{Ffs, Layout, Lfs};
use common::{check, inode_slot, listing, pattern, Tree};
use disk::MemDisk;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use fslab_check::{Kind, Options, Outcome, Problem, Report, Severity};
use std::sync::Arc;

/// fsck as fsck(8)'s `-p` runs it.
fn preen(dev: &Arc<MemDisk>) -> Outcome {
    let options = Options { repair: true, preen: true, ..Options::default() };
    fslab_check::fsck(dev.clone(), &options, &mut |_| {}).expect("fsck runs")
}

/// The problem of `kind` about `ino`, which the check must have found.
#[track_caller]
fn problem_about(report: &Report, kind: Kind, ino: Ino) -> Problem {
    match report.problems.iter().find(|p| p.kind == kind && p.ino == Some(ino)) {
        Some(p) => p.clone(),
        None => panic!("no {kind:?} problem about inode {ino}:\n{}", listing(report)),
    }
}

/// The problem whose message holds `text`, which the check must have found.
#[track_caller]
fn problem_saying(report: &Report, text: &str) -> Problem {
    match report.problems.iter().find(|p| p.message.contains(text)) {
        Some(p) => p.clone(),
        None => panic!("no problem saying '{text}':\n{}", listing(report)),
    }
}

/// Requires `report` to hold problems, every one a leak and said to be one.
#[track_caller]
fn assert_only_leaks(report: &Report) {
    assert!(!report.is_clean(), "leaks expected");
    for p in &report.problems {
        assert_eq!(p.severity, Severity::Leak, "{p}\nin:\n{}", listing(report));
        assert!(p.to_string().starts_with("leak: "), "{p}");
    }
    assert!(report.only_leaks());
}

/// Preens `dev`, which holds only leaks, and requires them repaired
/// without a failure and a second check clean.
#[track_caller]
fn assert_preened_to_clean(dev: &Arc<MemDisk>) {
    let outcome = preen(dev);
    assert!(outcome.failed.is_empty(), "{:?}", outcome.failed);
    common::cases::assert_repaired_to_clean(dev, &outcome);
}

/// Requires `damage` to be classified damage, and preening of `dev` to
/// refuse with status 4, naming it, with the image unchanged.
#[track_caller]
fn assert_preening_refuses(dev: &Arc<MemDisk>, damage: &Problem) {
    assert_eq!(damage.severity, Severity::Damage, "{damage}");
    assert!(damage.to_string().starts_with("damage: "), "{damage}");
    let before = dev.snapshot();
    let outcome = preen(dev);
    assert_eq!(outcome.exit_code(), 4, "repaired: {:?}", outcome.repaired);
    assert!(!outcome.first.only_leaks());
    assert!(outcome.repaired.is_empty(), "{:?}", outcome.repaired);
    assert!(
        outcome.failed.iter().any(|f| f.contains("damage: ") && f.contains("run the repair without -p")),
        "{:?}",
        outcome.failed
    );
    assert!(dev.snapshot() == before, "preening changed an image with damage");
}

/// The leaks both layouts share, made through the library: `medium`'s
/// link count one higher than its names, and a file of 3000 bytes that no
/// name reaches (its entry removed, its link count left at 1). Returns the
/// unnamed file.
fn shared_leaks<L: Layout>(dev: &Arc<MemDisk>, tree: &Tree) -> Ino {
    L::with_fs(dev, false, |fs| {
        set_nlink(fs, tree.medium, 2);
        let c = Creds::default();
        let lost = fs.mknod(ROOT_INO, b"unnamed", 0o100644, 0, c).expect("create").ino;
        fs.write(lost, 0, &pattern(3000, 7)).expect("write");
        fs.repair_remove_entry(ROOT_INO, b"unnamed").expect("remove the entry");
        lost
    })
}

/// Requires the shared leaks found, and after preening the unnamed file
/// kept in `/lost+found` and `medium` counting one link.
#[track_caller]
fn assert_shared_leaks_found(report: &Report, tree: &Tree, lost: Ino) {
    let nlink = problem_about(report, Kind::LinkCount, tree.medium);
    assert!(nlink.message.contains("link count 2 but 1 entry"), "{nlink}");
    problem_about(report, Kind::Unreachable, lost);
}

#[track_caller]
fn assert_shared_leaks_repaired<L: Layout>(dev: &Arc<MemDisk>, tree: &Tree, lost: Ino) {
    L::with_fs(dev, false, |fs| {
        assert_eq!(fs.getattr(tree.medium).expect("getattr").attr.nlink, 1);
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        let kept = fs.lookup(lf, format!("#{lost}").as_bytes()).expect("reconnected").ino;
        assert_eq!(fs.read(kept, 0, 3000).expect("read"), pattern(3000, 7), "no byte lost");
    });
}

/// Sets the link count of `ino` through the storage manager, as a crash
/// between writing an inode and a directory can leave it.
fn set_nlink<S: fslab::storage::StorageManager>(fs: &mut FileSystem<S>, ino: Ino, nlink: u32) {
    let mut attr = fs.getattr(ino).expect("getattr").attr;
    attr.nlink = nlink;
    fs.storage().update(ino, &attr).expect("update");
}

/// `small` (already named twice: `populate` makes a hard link) given a
/// third name, with a link count of 1: removing any name would free the
/// file while the others still name it.
fn link_count_too_low<L: Layout>() -> (Arc<MemDisk>, Tree) {
    let (dev, tree) = L::populated();
    L::with_fs(&dev, false, |fs| {
        fs.link(tree.small, ROOT_INO, b"second name").expect("link");
        set_nlink(fs, tree.small, 1);
    });
    (dev, tree)
}

fn a_link_count_too_low_is_damage_preening_leaves<L: Layout>() {
    let (dev, tree) = link_count_too_low::<L>();
    let report = check(&dev);
    let damage = problem_about(&report, Kind::LinkCount, tree.small);
    assert!(damage.message.contains("link count 1 but 3 entries"), "{damage}");
    assert_preening_refuses(&dev, &damage);
    // A person's repair still mends it.
    let outcome = common::repair(&dev);
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
}

#[test]
fn lfs_a_link_count_too_low_is_damage_preening_leaves() {
    a_link_count_too_low_is_damage_preening_leaves::<Lfs>();
}

#[test]
fn ffs_a_link_count_too_low_is_damage_preening_leaves() {
    a_link_count_too_low_is_damage_preening_leaves::<Ffs>();
}

/// LFS leaks: the shared ones, and a segment counting more live bytes
/// than it holds.
#[test]
fn lfs_an_image_with_only_leaks_is_preened_to_clean() {
    let (dev, tree) = Lfs::populated();
    let lost = shared_leaks::<Lfs>(&dev, &tree);
    let (_, _, large) = inode_slot(dev.as_ref(), tree.large);
    let segment = large.direct[0].get() / 16;
    common::with_fs(&dev, false, |fs| fs.storage().repair_set_live_bytes(segment, 64 << 10).expect("set"));
    let report = check(&dev);
    assert_shared_leaks_found(&report, &tree, lost);
    let live = problem_saying(&report, &format!("segment {segment}: the table says 65536 live bytes"));
    assert!(live.message.contains("too high"), "{live}");
    assert_only_leaks(&report);
    assert_preened_to_clean(&dev);
    assert_shared_leaks_repaired::<Lfs>(&dev, &tree, lost);
}

/// Fewer live bytes than a segment holds is damage: a segment counted
/// empty is reused without cleaning, over the blocks still in it.
#[test]
fn lfs_live_bytes_too_low_are_damage_preening_leaves() {
    let (dev, tree) = Lfs::populated();
    let (_, _, large) = inode_slot(dev.as_ref(), tree.large);
    let segment = large.direct[0].get() / 16;
    common::with_fs(&dev, false, |fs| fs.storage().repair_set_live_bytes(segment, 4096).expect("set"));
    let report = check(&dev);
    let damage = problem_saying(&report, &format!("segment {segment}: the table says 4096 live bytes"));
    assert!(damage.message.contains("too low"), "{damage}");
    assert_preening_refuses(&dev, &damage);
}

/// FFS leaks: the shared ones, a free block marked in use, and
/// superblock totals that disagree with the groups, on an image marked
/// clean.
#[test]
fn ffs_an_image_with_only_leaks_is_preened_to_clean() {
    use common::ffs::{geometry, group, superblock, write_group, write_superblock};
    let (dev, tree) = Ffs::populated();
    let lost = shared_leaks::<Ffs>(&dev, &tree);
    let geo = geometry(dev.as_ref());
    let g = geo.group_of(common::ffs::inode(dev.as_ref(), tree.medium).direct[0].get());
    let mut cg = group(dev.as_ref(), g);
    let spare = (0..cg.frags() / 8).rev().find(|&b| cg.is_block_free(b)).expect("a free block");
    cg.alloc_block(Some(spare * 8)).expect("free");
    write_group(dev.as_ref(), g, &cg);
    let mut sb = superblock(dev.as_ref());
    sb.totals.free_blocks += 100;
    write_superblock(dev.as_ref(), &sb);
    let report = check(&dev);
    assert!(report.clean_unmount);
    assert_shared_leaks_found(&report, &tree, lost);
    problem_saying(&report, "free fragments are marked in use");
    problem_saying(&report, "the superblock counts");
    assert_only_leaks(&report);
    assert_preened_to_clean(&dev);
    assert_shared_leaks_repaired::<Ffs>(&dev, &tree, lost);
    Ffs::after_repair(&dev);
}

/// A block a file holds, marked free in a group of an image marked
/// clean: a mount would hand it out again.
#[test]
fn ffs_a_referenced_block_marked_free_is_damage_preening_leaves() {
    use common::ffs::{geometry, group, write_group};
    let (dev, tree) = Ffs::populated();
    let geo = geometry(dev.as_ref());
    let medium = common::ffs::inode(dev.as_ref(), tree.medium).direct[2].get();
    let g = geo.group_of(medium);
    let mut cg = group(dev.as_ref(), g);
    cg.free(geo.within_group(medium), 8).expect("in use");
    write_group(dev.as_ref(), g, &cg);
    let report = check(&dev);
    assert!(report.clean_unmount);
    let damage = problem_saying(&report, "in use are marked free");
    assert_preening_refuses(&dev, &damage);
}

/// After a crash, FFS's groups are as the last sync left them: a file
/// made and fsynced since is in use but marked free. The image is marked
/// unclean, so no mount allocates from those groups before fsck rebuilds
/// them: a leak, which preening repairs, keeping the file.
#[test]
fn ffs_groups_a_crash_left_stale_are_leaks_preening_rebuilds() {
    let dev = Ffs::fresh(24 << 20);
    let ino = Ffs::with_fs(&dev, true, |fs| {
        let ino = fs.mknod(ROOT_INO, b"kept", 0o100644, 0, Creds::default()).expect("create").ino;
        fs.write(ino, 0, &pattern(5000, 3)).expect("write");
        fs.fsync(ino, false).expect("fsync");
        ino
    });
    let report = check(&dev);
    assert!(!report.clean_unmount);
    problem_saying(&report, "in use is marked free");
    assert_only_leaks(&report);
    assert_preened_to_clean(&dev);
    Ffs::after_repair(&dev);
    Ffs::with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(ino, 0, 5000).expect("read"), pattern(5000, 3));
    });
}

/// A directory rename a crash cut short, made through the library: `d`
/// moving from `a` to `b`, its new entry added and its old one not yet
/// removed, with the link counts raised first as a rename raises them
/// (`d` counts the new name, `b` the `..` to come). Returns (a, b, d).
fn rename_cut_short(dev: &Arc<MemDisk>, crash: bool) -> (Ino, Ino, Ino) {
    Ffs::with_fs(dev, crash, |fs| {
        let c = Creds::default();
        let a = fs.mkdir(ROOT_INO, b"a", 0o755, c).expect("mkdir").ino;
        let b = fs.mkdir(ROOT_INO, b"b", 0o755, c).expect("mkdir").ino;
        let d = fs.mkdir(a, b"d", 0o755, c).expect("mkdir").ino;
        fs.sync().expect("sync");
        fs.repair_set_nlink(d, 3).expect("d's new name");
        fs.repair_set_nlink(b, 3).expect("b's `..` to come");
        fs.repair_add_entry(b, b"d", d).expect("the new entry");
        fs.sync().expect("sync");
        (a, b, d)
    })
}

/// What a crash leaves of a directory rename — two names, `..` naming
/// the parent of one — is a leak when the image was not unmounted
/// cleanly: `..` changes last, so the name where it points is the old
/// one, and preening completes the rename (the new name may have replaced
/// another: it must stay), pointing `..` at the new parent. Nothing is
/// lost.
#[test]
fn ffs_a_directory_rename_a_crash_cut_short_is_a_leak_preening_completes() {
    let dev = Ffs::fresh(24 << 20);
    let (a, b, d) = rename_cut_short(&dev, true);
    let report = check(&dev);
    assert!(!report.clean_unmount);
    let second = problem_about(&report, Kind::Directory, d);
    assert!(second.message.contains("second name"), "{second}");
    assert_only_leaks(&report);
    assert_preened_to_clean(&dev);
    Ffs::after_repair(&dev);
    Ffs::with_fs(&dev, false, |fs| {
        assert_eq!(fs.lookup(b, b"d").expect("the new name kept").ino, d);
        assert!(fs.lookup(a, b"d").is_err(), "the old name is gone");
        assert_eq!(fs.lookup(d, b"..").expect("..").ino, b, "`..` names the new parent");
        assert_eq!(fs.getattr(a).expect("getattr").attr.nlink, 2);
        assert_eq!(fs.getattr(b).expect("getattr").attr.nlink, 3);
    });
}

/// The same on an image marked clean is no crash's doing: damage, which
/// preening leaves to a person.
#[test]
fn ffs_a_directory_with_two_names_on_a_clean_image_is_damage_preening_leaves() {
    let dev = Ffs::fresh(24 << 20);
    let (_, _, d) = rename_cut_short(&dev, false);
    let report = check(&dev);
    assert!(report.clean_unmount);
    let damage = problem_about(&report, Kind::Directory, d);
    assert_preening_refuses(&dev, &damage);
}

/// A superblock copy that fails its checksum is damage, even after a
/// crash: no crash writes the copies (mkfs and repair do), so a bad one
/// is a device's doing. Preening leaves it to a person.
#[test]
fn ffs_a_damaged_superblock_copy_is_damage_preening_leaves() {
    use common::ffs::{flip_bytes, geometry};
    let (dev, _) = Ffs::populated();
    let geo = geometry(dev.as_ref());
    flip_bytes(dev.as_ref(), geo.byte_offset(geo.group_base(1)) + 200, 4);
    let report = check(&dev);
    let damage = problem_saying(&report, "superblock copy in group 1");
    assert_preening_refuses(&dev, &damage);
}

/// The mark an earlier fsck leaves on an LFS it could not fully repair
/// says a person must look: preening never clears it.
#[test]
fn lfs_the_damage_mark_is_damage_preening_leaves() {
    let (dev, _) = Lfs::populated();
    common::with_fs(&dev, false, |fs| fs.storage().set_damaged(true));
    let report = check(&dev);
    let damage = report
        .problems
        .iter()
        .find(|p| p.fix == Some(fslab_check::Fix::ClearDamaged))
        .cloned()
        .unwrap_or_else(|| panic!("no problem about the damage mark:\n{}", listing(&report)));
    assert_preening_refuses(&dev, &damage);
}

/// A directory whose name a crash kept off the disk (its inode and its
/// `..` written, the entry in its parent not): a leak, and preening
/// reconnects it into `/lost+found` — whose link count must count the
/// directory's `..` at once, or the next round finds it one lower than
/// its names, damage that preening refuses.
fn an_unnamed_directory_is_preened_into_lost_and_found<L: Layout>() {
    let (dev, _) = L::populated();
    let dir = L::with_fs(&dev, false, |fs| {
        let c = Creds::default();
        let dir = fs.mkdir(ROOT_INO, b"unnamed", 0o755, c).expect("mkdir").ino;
        fs.mknod(dir, b"inside", 0o100644, 0, c).expect("create");
        fs.repair_remove_entry(ROOT_INO, b"unnamed").expect("remove the entry");
        dir
    });
    let report = check(&dev);
    problem_about(&report, Kind::Unreachable, dir);
    assert_only_leaks(&report);
    assert_preened_to_clean(&dev);
    L::with_fs(&dev, false, |fs| {
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        let kept = fs.lookup(lf, format!("#{dir}").as_bytes()).expect("reconnected").ino;
        assert_eq!(kept, dir);
        fs.lookup(dir, b"inside").expect("what it held is kept");
    });
}

#[test]
fn lfs_an_unnamed_directory_is_preened_into_lost_and_found() {
    an_unnamed_directory_is_preened_into_lost_and_found::<Lfs>();
}

#[test]
fn ffs_an_unnamed_directory_is_preened_into_lost_and_found() {
    an_unnamed_directory_is_preened_into_lost_and_found::<Ffs>();
}
