//! fsck finds each kind of damage it claims to, repairs what it claims to,
//! and calls a healthy image clean. Images are built through the library
//! (mkfs, `ufs::FileSystem` over `Lfs`, on a memory disk), then damaged
//! either through the library (states a crash or a bug could leave) or by
//! changing bytes.

mod common;

use common::cases::{assert_resets_chunk, repaired_to_clean, shared_cases, Lfs};
use common::*;
use fslab::format::{Daddr, Ino, ROOT_INO};
use fslab::ufs::Creds;
use fslab_check::{Fix, Kind};
use std::sync::Arc;

shared_cases!(Lfs);

#[test]
fn an_image_after_deletes_truncates_and_a_crash_is_clean() {
    let (dev, tree) = populated();
    with_fs(&dev, true, |fs| {
        fs.unlink(tree.docs, b"file07").expect("unlink");
        fs.rmdir(tree.deep, b"deeper").expect("rmdir");
        fs.setattr(tree.large, &fslab::ufs::SetAttr { size: Some(5000), ..Default::default() })
            .expect("truncate");
        fs.sync().expect("sync");
        // Written after the last checkpoint, then lost in the crash.
        fs.write(tree.medium, 0, b"lost").expect("write");
    });
    let report = check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
    assert!(!report.clean_unmount);
}

#[test]
fn a_wrong_entry_type_and_dotdot_are_repaired() {
    let (dev, tree) = populated();
    with_fs(&dev, false, |fs| {
        // `small-again` now names a directory with a file's type; deep's `..` names the root.
        fs.repair_remove_entry(ROOT_INO, b"small-again").expect("remove");
        let c = Creds::default();
        let other = fs.mknod(ROOT_INO, b"other", 0o644, 0, c).expect("create").ino;
        fs.repair_retarget_entry(ROOT_INO, b"other", tree.small).expect("retarget");
        let _ = other;
        fs.repair_retarget_entry(tree.deep, b"..", ROOT_INO).expect("retarget");
    });
    let report = check(&dev);
    assert!(report.has(Kind::Directory), "'..' problem expected:\n{}", listing(&report));
    let outcome = repair(&dev);
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
    assert!(check(&dev).is_clean());
}

/// A flipped bit in an inode's access time: its checksum fails and
/// nothing else. The repair seals it again and the file keeps its data.
#[test]
fn an_inode_whose_checksum_fails_but_whose_fields_hold_is_resealed_and_kept() {
    let (dev, tree) = populated();
    let (daddr, offset, _) = inode_slot(dev.as_ref(), tree.medium);
    flip(dev.as_ref(), daddr, offset + 40, 1);
    let report = check(&dev);
    let about: Vec<_> =
        report.problems.iter().filter(|p| p.ino == Some(tree.medium)).map(|p| p.fix.clone()).collect();
    assert_eq!(about, vec![Some(Fix::SealInode { ino: tree.medium })], "problems:\n{}", listing(&report));
    repaired_to_clean::<Lfs>(&dev);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1));
    });
}

/// A slot that holds no sound inode of the number the inode map names
/// there (its number overwritten): the repair frees the number and, in the
/// next round, removes the entry naming it; the image ends clean, mounts,
/// and everything else reads back.
#[test]
fn an_inode_that_cannot_be_found_is_cleared_and_its_entry_removed() {
    let (dev, tree) = populated();
    let (daddr, offset, _) = inode_slot(dev.as_ref(), tree.medium);
    flip(dev.as_ref(), daddr, offset, 8);
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.fix == Some(Fix::ClearInode { ino: tree.medium })),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Lfs>(&dev);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.lookup(ROOT_INO, b"medium").map(|e| e.ino).map_err(|e| e.errno()), Err(libc::ENOENT));
        assert_eq!(fs.read(tree.large, 0, 16).expect("read"), pattern(16, 2));
        fs.mknod(ROOT_INO, b"new", 0o644, 0, Creds::default()).expect("the image takes new files");
    });
}

#[test]
fn a_root_inode_that_cannot_be_found_is_made_again_and_its_files_reconnected() {
    let (dev, tree) = populated();
    let (daddr, offset, _) = inode_slot(dev.as_ref(), ROOT_INO);
    flip(dev.as_ref(), daddr, offset, 8);
    repaired_to_clean::<Lfs>(&dev);
    with_fs(&dev, false, |fs| {
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        let medium = fs.lookup(lf, format!("#{}", tree.medium).as_bytes()).expect("medium reconnected").ino;
        assert_eq!(fs.read(medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1));
    });
}

/// An extended-attribute block damaged on the medium: found, and the
/// repair drops the attributes (every attribute call on the file failed
/// until then), keeping the file's data.
#[test]
fn a_damaged_attribute_block_is_found_and_its_attributes_dropped() {
    let (dev, tree) = populated();
    let (_, _, medium) = inode_slot(dev.as_ref(), tree.medium);
    assert!(medium.xattr.is_some(), "medium has an attribute block");
    flip(dev.as_ref(), medium.xattr, 40, 4);
    let report = check(&dev);
    let fix = Fix::ClearPointer { ino: tree.medium, lbn: fslab::format::blockno::XATTR_LBN };
    assert!(report.problems.iter().any(|p| p.fix == Some(fix.clone())), "problems:\n{}", listing(&report));
    repaired_to_clean::<Lfs>(&dev);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.listxattr(tree.medium).expect("listxattr"), b"");
        fs.setxattr(tree.medium, b"user.again", b"1", 0).expect("setxattr");
        assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1));
    });
}

/// An inode that cannot be read may hold blocks the check cannot count:
/// no segment's live count is lowered while one exists (a segment made to
/// look empty would be marked clean at the repair's checkpoint and that
/// file's blocks overwritten).
#[test]
fn no_live_count_is_lowered_while_an_inode_cannot_be_read() {
    let (dev, tree) = populated();
    let (daddr, offset, _) = inode_slot(dev.as_ref(), tree.medium);
    flip(dev.as_ref(), daddr, offset, 8);
    let report = check(&dev);
    let lowering: Vec<_> = report
        .problems
        .iter()
        .filter(|p| p.kind == Kind::SegmentUsage && p.message.contains("too high") && p.fix.is_some())
        .collect();
    assert!(lowering.is_empty(), "planned: {lowering:?}\nproblems:\n{}", listing(&report));
    assert!(
        report.problems.iter().any(|p| p.kind == Kind::SegmentUsage && p.message.contains("cannot be read")),
        "the count the check could not make is reported:\n{}",
        listing(&report)
    );
}

/// An ifile block damaged on the medium — the cleaner info, the segment
/// usage table, the inode map — left an image no mount would take, not
/// even read-only. The repair rebuilds the block (the map from the
/// newest copy of each inode in the log, the table from the live data
/// counted), and every file is there again. A file removed before the
/// damage comes back from its last copy in the log, into `/lost+found`:
/// nothing in the log says it was removed.
#[test]
fn a_damaged_ifile_block_is_rebuilt_and_every_file_kept() {
    let (_, tree) = populated();
    let segtab = superblock(populated().0.as_ref()).segtab_blocks as usize;
    for (what, lbn) in [("cleaner info", 0), ("segment usage", 1), ("inode map", 1 + segtab)] {
        let (dev, _) = populated();
        let removed = with_fs(&dev, false, |fs| {
            let gone = fs.mknod(ROOT_INO, b"gone", 0o644, 0, Creds::default()).expect("create").ino;
            fs.write(gone, 0, b"removed before the damage").expect("write");
            fs.sync().expect("sync");
            fs.unlink(ROOT_INO, b"gone").expect("unlink");
            gone
        });
        flip(dev.as_ref(), ifile_block(dev.as_ref(), lbn), 100, 8);
        assert!(
            fslab::lfs::Lfs::mount(dev.clone(), fslab::lfs::MountOptions::default()).is_err(),
            "{what}: a mount refuses the damaged ifile"
        );
        let report = check(&dev);
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.kind == Kind::Ifile && matches!(p.fix, Some(Fix::RewriteIfileBlock { .. }))),
            "{what}: problems:\n{}",
            listing(&report)
        );
        let outcome = repair(&dev);
        assert_eq!(outcome.exit_code(), 1, "{what}: left:\n{}", listing(&outcome.last));
        assert!(check(&dev).is_clean(), "{what}: after:\n{}", listing(&check(&dev)));
        with_fs(&dev, false, |fs| {
            common::cases::assert_tree_kept(fs, &tree, what);
            let f = fs.mknod(ROOT_INO, b"after", 0o644, 0, Creds::default()).expect("create").ino;
            fs.write(f, 0, b"written after the repair").expect("write");
            if lbn == 1 + segtab {
                let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
                let back =
                    fs.lookup(lf, format!("#{removed}").as_bytes()).expect("the removed file is back").ino;
                assert_eq!(fs.read(back, 0, 25).expect("read"), b"removed before the damage");
            }
        });
        assert!(check(&dev).is_clean(), "{what}: after use:\n{}", listing(&check(&dev)));
    }
}

/// The inode block holding the checkpoint's ifile inode, damaged: no
/// checkpoint had an ifile to read, and no mount took the image. The
/// repair writes the block again — the ifile's inode from the newest
/// copies of its blocks in the log, the other inodes the map places there
/// from their newest older copies — and the image is whole again.
#[test]
fn the_block_of_the_ifiles_inode_is_rebuilt_and_the_image_mounts_again() {
    let (dev, tree) = populated();
    let at = superblock(dev.as_ref()).checkpoint.ifile_daddr;
    flip(dev.as_ref(), at, 0, BS);
    assert!(fslab::lfs::Lfs::mount(dev.clone(), fslab::lfs::MountOptions::default()).is_err());
    let report = check(&dev);
    assert!(
        report
            .problems
            .iter()
            .any(|p| matches!(&p.fix, Some(Fix::RewriteIfileBlock { daddr, .. }) if *daddr == at)),
        "problems:\n{}",
        listing(&report)
    );
    let outcome = repair(&dev);
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
    assert!(check(&dev).is_clean(), "after:\n{}", listing(&check(&dev)));
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1));
        assert_eq!(fs.read(tree.large, 0, 64 << 10).expect("read"), pattern(64 << 10, 2));
        let f = fs.mknod(ROOT_INO, b"after", 0o644, 0, Creds::default()).expect("create").ino;
        fs.write(f, 0, b"written after the repair").expect("write");
    });
    assert!(check(&dev).is_clean(), "after use:\n{}", listing(&check(&dev)));
}

#[test]
fn a_block_pointer_out_of_range_or_into_a_superblock_is_found() {
    let (dev, tree) = populated();
    rewrite_inode(dev.as_ref(), tree.medium, |inode| inode.direct[3] = Daddr::new(0x7fff_0000));
    rewrite_inode(dev.as_ref(), tree.large, |inode| inode.direct[0] = Daddr::NONE);
    rewrite_inode(dev.as_ref(), tree.small, |inode| {
        inode.direct[0] = Daddr::new(superblock(dev.as_ref()).sb_segments[1] * 16)
    });
    let report = check(&dev);
    let pointer_problems: Vec<Ino> =
        report.problems.iter().filter(|p| p.kind == Kind::BlockPointer).filter_map(|p| p.ino).collect();
    assert_eq!(pointer_problems, vec![tree.small, tree.medium], "problems:\n{}", listing(&report));
    // The hole punched in `large` by hand leaves its block count wrong.
    assert!(report.problems.iter().any(|p| p.kind == Kind::Inode && p.ino == Some(tree.large)));
}

#[test]
fn a_block_claimed_by_two_files_is_found() {
    let (dev, tree) = populated();
    let (_, _, medium) = inode_slot(dev.as_ref(), tree.medium);
    rewrite_inode(dev.as_ref(), tree.small, |inode| inode.direct[0] = medium.direct[0]);
    let report = check(&dev);
    assert!(report.has(Kind::DuplicateBlock), "problems:\n{}", listing(&report));
    assert!(report.has(Kind::Summary), "the summary names medium, not small:\n{}", listing(&report));
}

/// A segment whose table says nothing is live, though something is: the
/// repair's mount makes it clean, and the repair must make it dirty again
/// before anything it writes can land there (it was saved as clean with
/// live bytes, which no later repair could undo).
#[test]
fn a_segment_said_empty_but_holding_live_data_is_repaired_dirty() {
    let (dev, tree) = populated();
    let (daddr, _, _) = inode_slot(dev.as_ref(), tree.medium);
    let segment = daddr.get() / 16;
    with_fs(&dev, false, |fs| fs.storage().repair_set_live_bytes(segment, 0).expect("set"));
    let report = check(&dev);
    assert!(report.has(Kind::SegmentUsage), "problems:\n{}", listing(&report));
    let outcome = repair(&dev);
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
    assert!(check(&dev).is_clean(), "after the repair:\n{}", listing(&check(&dev)));
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1));
    });
}

#[test]
fn wrong_segment_usage_is_found_and_repaired() {
    let (dev, tree) = populated();
    let (daddr, _, _) = inode_slot(dev.as_ref(), tree.medium);
    let segment = daddr.get() / 16;
    with_fs(&dev, false, |fs| fs.storage().repair_set_live_bytes(segment, 12345).expect("set"));
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.kind == Kind::SegmentUsage && p.message.contains("12345")),
        "problems:\n{}",
        listing(&report)
    );
    let outcome = repair(&dev);
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
    assert!(check(&dev).is_clean());
}

#[test]
fn a_damaged_superblock_copy_is_found_and_rewritten() {
    let (dev, _) = populated();
    let sb = superblock(dev.as_ref());
    flip(dev.as_ref(), Daddr::new(sb.sb_segments[2] * 16), 130, 2);
    let report = check(&dev);
    assert!(report.has(Kind::Superblock), "problems:\n{}", listing(&report));
    assert_eq!(repair(&dev).exit_code(), 1);
    assert!(check(&dev).is_clean());
}

#[test]
fn a_corrupted_directory_chunk_is_emptied_and_its_files_reconnected() {
    let (dev, tree) = populated();
    let (_, _, docs) = inode_slot(dev.as_ref(), tree.docs);
    // The second chunk of docs' first block holds some of its files.
    flip(dev.as_ref(), docs.direct[0], 512 + 40, 4);
    let report = check(&dev);
    assert_resets_chunk(&report, tree.docs, 512);
    assert!(report.has(Kind::Summary), "the flip also breaks the partial segment's data checksum");
    // The directory is repaired, and the partial segment's data checksum
    // recomputed over its blocks as they are: the image is whole again.
    let outcome = repair(&dev);
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
    assert!(check(&dev).is_clean(), "after:\n{}", listing(&check(&dev)));
    run_on(
        fslab::lfs::Lfs::mount(dev.clone(), fslab::lfs::MountOptions::default()).expect("mount"),
        false,
        |fs| {
            let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
            let moved = fs.readdir(lf, 0, 100).expect("readdir");
            assert!(moved.len() > 2, "the files of the lost chunk are in lost+found");
            assert!(
                fs.lookup(tree.docs, b"file00").is_ok() || moved.iter().any(|e| e.name.starts_with(b"#"))
            );
        },
    );
}

/// A flipped byte in a file's data breaks only its partial segment's data
/// checksum: the repair names the file, recomputes the checksum over the
/// blocks as they are (the damaged bytes stay: nothing else holds the
/// right ones), and the image mounts and takes writes again — where it
/// used to be marked damaged for good, refused by every mount that writes.
#[test]
fn a_damaged_data_block_is_named_and_the_image_is_whole_again() {
    let (dev, tree) = populated();
    let (_, _, medium) = inode_slot(dev.as_ref(), tree.medium);
    flip(dev.as_ref(), medium.direct[0], 100, 1);
    let report = check(&dev);
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == Kind::Summary && matches!(p.fix, Some(Fix::ResealPartial { .. }))),
        "problems:\n{}",
        listing(&report)
    );
    let outcome = repair(&dev);
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
    let named = format!("{}", tree.medium);
    assert!(
        outcome.repaired.iter().any(|r| r.message.contains("damaged bytes") && r.message.contains(&named)),
        "the file is not named: {:?}",
        outcome.repaired
    );
    assert!(check(&dev).is_clean());
    let mut expected = pattern(200 << 10, 1);
    expected[100] ^= 0xff;
    run_on(
        fslab::lfs::Lfs::mount(dev.clone(), fslab::lfs::MountOptions::default()).expect("mount"),
        false,
        |fs| {
            assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), expected);
            let f = fs.mknod(ROOT_INO, b"after", 0o644, 0, Creds::default()).expect("create").ino;
            fs.write(f, 0, b"written after the repair").expect("write");
        },
    );
    assert!(check(&dev).is_clean());
}

/// Preening (fsck(8)'s `-p`) repairs what a crash leaves and nothing that
/// loses or guesses: an emptied directory chunk needs a person, so preening
/// changes nothing and says why; the repair without it then runs.
#[test]
fn preening_leaves_a_repair_that_loses_names_to_a_person() {
    let (dev, tree) = populated();
    let (_, _, docs) = inode_slot(dev.as_ref(), tree.docs);
    flip(dev.as_ref(), docs.direct[0], 512 + 40, 4);
    let before = dev.snapshot();
    let preen = fslab_check::Options { repair: true, preen: true, ..fslab_check::Options::default() };
    let outcome = fslab_check::fsck(dev.clone(), &preen, &mut |_| {}).expect("fsck runs");
    assert_eq!(outcome.exit_code(), 4);
    assert!(outcome.repaired.is_empty(), "{:?}", outcome.repaired);
    assert!(outcome.failed.iter().any(|f| f.contains("run the repair without -p")), "{:?}", outcome.failed);
    assert!(dev.snapshot() == before, "preening changed the image");
    let outcome = repair(&dev);
    assert!(outcome.repaired.iter().any(|r| r.message.contains("emptied")), "{:?}", outcome.repaired);
}

/// An inode whose count of blocks held disagrees with its tree (as a
/// cleaner's move written just before a crash can leave it: the inode
/// counts a block whose pointer was still only in memory) is repaired, and
/// preening may do it: the count is bookkeeping, no block changes hands.
#[test]
fn a_wrong_count_of_blocks_held_is_repaired() {
    let (dev, tree) = populated();
    rewrite_inode(dev.as_ref(), tree.small, |inode| inode.blocks += 8);
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.fix == Some(Fix::SetBlocks { ino: tree.small, blocks: 8 })),
        "{}",
        listing(&report)
    );
    let preen = fslab_check::Options { repair: true, preen: true, ..fslab_check::Options::default() };
    let outcome = fslab_check::fsck(dev.clone(), &preen, &mut |_| {}).expect("fsck runs");
    assert_eq!(outcome.exit_code(), 1, "{:?} {:?}", outcome.repaired, outcome.failed);
    assert!(check(&dev).is_clean());
}

/// What a crash leaves — a wrong link count here — is preened unasked.
#[test]
fn preening_repairs_a_link_count() {
    let (dev, tree) = populated();
    rewrite_inode(dev.as_ref(), tree.small, |inode| inode.attr.nlink += 1);
    let preen = fslab_check::Options { repair: true, preen: true, ..fslab_check::Options::default() };
    let outcome = fslab_check::fsck(dev.clone(), &preen, &mut |_| {}).expect("fsck runs");
    assert_eq!(outcome.exit_code(), 1, "{:?} {:?}", outcome.repaired, outcome.failed);
}

/// A damaged newest checkpoint: the check falls back to the older one, as
/// a mount does, and says which and what may be lost; the repair writes a
/// checkpoint anew and the image then checks clean.
#[test]
fn a_damaged_newest_checkpoint_is_checked_at_the_older_one_and_repaired() {
    let dev = fresh(8 << 20);
    with_fs(&dev, true, |fs| {
        let ino = fs.mknod(ROOT_INO, b"f", 0o100644, 0, Creds::default()).expect("create").ino;
        fs.write(ino, 0, b"first").expect("write");
        fs.sync().expect("the older checkpoint");
        fs.write(ino, 0, b"second").expect("write");
        fs.sync().expect("the newest checkpoint");
    });
    let newest = superblock(dev.as_ref()).checkpoint;
    disk::BlockDevice::write_at(dev.as_ref(), newest.ifile_daddr.get() * BS as u64, &[0xA5; BS])
        .expect("damage");
    let report = check(&dev);
    let fallback = report.problems.iter().find(|p| p.message.contains("cannot be used (above)"));
    let fallback = fallback.unwrap_or_else(|| panic!("no word of the fallback:\n{}", listing(&report)));
    assert!(fallback.message.contains(&format!("checkpoint {} cannot be used", newest.serial)), "{fallback}");
    let outcome = repair(&dev);
    assert!(outcome.last.is_clean(), "after repair:\n{}", listing(&outcome.last));
}

#[test]
fn not_an_image_is_an_operational_error() {
    let dev = std::sync::Arc::new(disk::MemDisk::new(4 << 20));
    let result = fslab_check::check(dev.as_ref(), &fslab_check::Options::default(), &mut |_| {});
    assert!(matches!(result, Err(fslab_check::Fatal::Foreign(_))));
}

/// A device that held fslab and was made into another file system keeps
/// fslab's superblock copies further in: a check or repair from them, or a
/// mount, would write over the new file system. Here its first block takes
/// an ext4 superblock's magic, revision and block size, as mkfs.ext4 would
/// write them.
#[test]
fn a_device_made_into_another_file_system_is_foreign_despite_old_copies() {
    use disk::BlockDevice;
    let (dev, _) = populated();
    let image = dev.snapshot();
    let mut head = vec![0u8; 4096];
    head[1080..1082].copy_from_slice(&[0x53, 0xEF]);
    head[1024 + 76] = 1;
    head[1024 + 24] = 2;
    dev.write_at(0, &head).expect("write");
    let before = dev.snapshot();
    for repair in [false, true] {
        let options = fslab_check::Options { repair, ..fslab_check::Options::default() };
        let result = fslab_check::check(dev.as_ref(), &options, &mut |_| {});
        assert!(
            matches!(&result, Err(fslab_check::Fatal::Foreign(why)) if why.contains("ext2/3/4")),
            "repair {repair}: {:?}",
            result.map(|r| r.problems.len())
        );
    }
    let mounted = fslab::lfs::Lfs::mount(dev.clone(), fslab::lfs::MountOptions::default());
    assert!(matches!(mounted, Err(fslab::Error::Foreign(_))), "the old copies are not mounted");
    assert!(dev.snapshot() == before, "nothing was written");
    // Without the other file system's signature, the copies still serve: a
    // damaged primary superblock is what they are for.
    dev.write_at(0, &image).expect("write");
    dev.write_at(0, &[0xA5u8; 512]).expect("write");
    assert!(fslab::lfs::Lfs::mount(dev.clone(), fslab::lfs::MountOptions::default()).is_ok());
}

/// Mounts `dev` (rolling forward what a crash left after the checkpoint),
/// unmounts cleanly, and returns what fsck finds then.
fn recover_and_check(dev: &std::sync::Arc<disk::MemDisk>) -> fslab_check::Report {
    with_fs(dev, false, |fs| assert!(fs.storage().recovery().applied > 0, "roll-forward applied the log"));
    check(dev)
}

/// Regression: blocks freed after the last checkpoint (a truncate, then
/// fsync, then a crash) stayed counted as live once roll-forward had run,
/// and fsck after recovery and a clean unmount said "the table says 90624
/// live bytes, the checkpoint holds 74240 (too high)" until `--repair`.
#[test]
fn a_truncate_fsynced_before_a_crash_leaves_exact_live_bytes_after_recovery() {
    let dev = fresh(8 << 20);
    let c = Creds::default();
    with_fs(&dev, true, |fs| {
        let file = fs.mknod(ROOT_INO, b"six", 0o644, 0, c).expect("create").ino;
        fs.write(file, 0, &pattern(6 * BS, 1)).expect("write");
        fs.sync().expect("checkpoint");
        fs.setattr(file, &fslab::ufs::SetAttr { size: Some(0), ..Default::default() }).expect("truncate");
        fs.fsync(file, false).expect("fsync");
    });
    let report = recover_and_check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
}

/// The same with indirect blocks (single and double), a partial truncate,
/// an overwrite and an extended attribute removed, all fsynced after the
/// checkpoint: every block the old inodes held and the new ones do not must
/// stop counting.
#[test]
fn blocks_that_indirect_trees_and_overwrites_free_after_the_checkpoint_stop_counting_after_recovery() {
    let (dev, tree) = populated();
    with_fs(&dev, true, |fs| {
        let to = |size| fslab::ufs::SetAttr { size: Some(size), ..Default::default() };
        fs.setattr(tree.large, &to(5 * BS as u64 + 7)).expect("truncate across the indirect trees");
        fs.fsync(tree.large, false).expect("fsync");
        fs.write(tree.medium, 3 * BS as u64, &pattern(2 * BS, 9)).expect("overwrite");
        fs.removexattr(tree.medium, b"user.note").expect("removexattr");
        fs.fsync(tree.medium, false).expect("fsync");
        fs.setattr(tree.medium, &to(20 * BS as u64)).expect("truncate below the single indirect");
        fs.fsync(tree.medium, true).expect("fdatasync");
    });
    let report = recover_and_check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
    with_fs(&dev, false, |fs| {
        let mut want = pattern(200 << 10, 1);
        want[3 * BS..5 * BS].copy_from_slice(&pattern(2 * BS, 9));
        want.truncate(20 * BS);
        assert_eq!(fs.read(tree.medium, 0, 300 << 10).expect("read"), want);
        assert_eq!(fs.read(tree.large, 0, 1 << 20).expect("read"), pattern(64 << 10, 2)[..5 * BS + 7]);
    });
}

#[test]
fn collapsing_and_inserting_ranges_leaves_an_image_fsck_calls_clean() {
    // The moved blocks are rewritten under their new block numbers and
    // their old copies counted dead: a block left counted live, or an
    // indirect block left pointing nowhere, would show here.
    let (dev, tree) = populated();
    let bs = BS as u64;
    let expect = with_fs(&dev, false, |fs| {
        let (collapse, insert) = (libc::FALLOC_FL_COLLAPSE_RANGE, libc::FALLOC_FL_INSERT_RANGE);
        fs.sync().expect("sync");
        fs.fallocate(tree.large, 2 * bs, 1024 * bs, insert).expect("insert across the trees");
        fs.sync().expect("sync");
        fs.fallocate(tree.large, 5 * bs, 700 * bs, collapse).expect("collapse");
        fs.fallocate(tree.medium, 0, bs, insert).expect("insert at the start");
        let size = fs.getattr(tree.large).expect("getattr").attr.size;
        fs.read(tree.large, 0, size as usize).expect("read")
    });
    let report = check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(tree.large, 0, expect.len()).expect("read"), expect, "the same after a remount");
    });
}

/// Regression: a file unlinked while open stayed allocated, with its
/// blocks, after a crash, until `fslab fsck --repair` freed it. Mount now
/// frees every orphan: those on the checkpoint's list (`early`) and those
/// only roll-forward brings back (`late`, unlinked after the checkpoint and
/// made durable by another file's fsync).
#[test]
fn orphans_left_by_a_crash_are_freed_at_mount() {
    let dev = fresh(16 << 20);
    let c = Creds::default();
    let (early, late) = with_fs(&dev, true, |fs| {
        let early = fs.mknod(ROOT_INO, b"early", 0o644, 0, c).expect("create").ino;
        fs.write(early, 0, &pattern(20 * BS, 1)).expect("write");
        fs.pin(early);
        fs.unlink(ROOT_INO, b"early").expect("unlink");
        fs.sync().expect("checkpoint");
        let late = fs.mknod(ROOT_INO, b"late", 0o644, 0, c).expect("create").ino;
        fs.write(late, 0, &pattern(3 * BS, 2)).expect("write");
        fs.pin(late);
        fs.unlink(ROOT_INO, b"late").expect("unlink");
        let other = fs.mknod(ROOT_INO, b"other", 0o644, 0, c).expect("create").ino;
        fs.fsync(other, false).expect("fsync");
        (early, late)
    });
    with_fs(&dev, false, |fs| {
        let report = fs.storage().orphan_report().clone();
        assert_eq!(report.reclaimed, 2, "{report:?}");
        assert_eq!(report.damage, None);
        assert!(fs.storage().orphan_list().is_empty());
        assert!(fs.getattr(early).is_err() && fs.getattr(late).is_err(), "both orphans are freed");
        assert!(fs.lookup(ROOT_INO, b"other").is_ok(), "the fsynced file is there");
    });
    let report = check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
}

/// The list names each orphan through its inode until its last close: a
/// checkpoint taken while three are open names all three, and after two
/// closes (the middle one first) only the third.
#[test]
fn the_checkpoint_names_the_orphans_open_at_that_moment() {
    let dev = fresh(16 << 20);
    let c = Creds::default();
    with_fs(&dev, false, |fs| {
        let mut files = Vec::new();
        for name in [&b"a"[..], b"b", b"c"] {
            let ino = fs.mknod(ROOT_INO, name, 0o644, 0, c).expect("create").ino;
            fs.pin(ino);
            fs.unlink(ROOT_INO, name).expect("unlink");
            files.push(ino);
        }
        fs.sync().expect("checkpoint");
        assert_eq!(fs.storage().superblock().checkpoint.orphan_head, files[2], "the newest orphan heads it");
        assert_eq!(fs.storage().orphan_list(), &[files[2], files[1], files[0]]);
        fs.unpin(files[1], 1).expect("close");
        fs.unpin(files[2], 1).expect("close");
        fs.sync().expect("checkpoint");
        assert_eq!(fs.storage().superblock().checkpoint.orphan_head, files[0]);
        use fslab::storage::StorageManager;
        assert_eq!(fs.storage().vget(files[0]).expect("inode").next_orphan, 0);
    });
    assert!(check(&dev).is_clean());
}

/// An indirect block damaged on the medium (its trailer no longer names
/// its file): the repair clears the pointer to it, a hole where its
/// blocks were, and the image is whole again and takes writes — where it
/// used to stay marked damaged, refused by every mount that writes.
#[test]
fn a_damaged_indirect_block_is_cleared_and_the_image_is_whole_again() {
    let (dev, tree) = populated();
    let (_, _, medium) = inode_slot(dev.as_ref(), tree.medium);
    assert!(medium.indirect[0].is_some(), "medium reaches its single indirect tree");
    flip(dev.as_ref(), medium.indirect[0], BS - 16, 16);
    let report = check(&dev);
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.ino == Some(tree.medium)
                && matches!(p.fix, Some(Fix::ClearPointer { lbn, .. }) if lbn < 0)),
        "problems:\n{}",
        listing(&report)
    );
    let outcome = repaired_to_clean::<Lfs>(&dev);
    // The count of blocks held is set once, to what the file keeps.
    let set_blocks: Vec<_> = outcome
        .repaired
        .iter()
        .filter(|r| matches!(r.fix, Some(Fix::SetBlocks { ino, .. }) if ino == tree.medium))
        .collect();
    assert_eq!(set_blocks.len(), 1, "{:?}", outcome.repaired);
    let direct = 12 * BS;
    let mut expected = pattern(200 << 10, 1);
    expected[direct..].fill(0);
    run_on(
        fslab::lfs::Lfs::mount(dev.clone(), fslab::lfs::MountOptions::default()).expect("mount"),
        false,
        |fs| {
            assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), expected);
            fs.write(tree.medium, direct as u64, b"the hole takes writes").expect("write");
            assert_eq!(fs.read(tree.large, 0, 16).expect("read"), pattern(16, 2));
        },
    );
    assert!(check(&dev).is_clean(), "after:\n{}", listing(&check(&dev)));
}

/// Pointers off the log (past the end, into a superblock copy): each is
/// cleared, a hole where it pointed, and the rest of the file is kept.
#[test]
fn a_block_pointer_out_of_range_or_into_a_superblock_is_cleared() {
    let (dev, tree) = populated();
    rewrite_inode(dev.as_ref(), tree.medium, |inode| inode.direct[3] = Daddr::new(0x7fff_0000));
    rewrite_inode(dev.as_ref(), tree.small, |inode| {
        inode.direct[0] = Daddr::new(superblock(dev.as_ref()).sb_segments[1] * 16)
    });
    repaired_to_clean::<Lfs>(&dev);
    let mut expected = pattern(200 << 10, 1);
    expected[3 * BS..4 * BS].fill(0);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), expected);
        assert_eq!(fs.read(tree.small, 0, 13).expect("read"), vec![0; 13]);
    });
    assert!(check(&dev).is_clean(), "after:\n{}", listing(&check(&dev)));
}

/// A block two files claim, which its summary confirms as one's: the
/// other's pointer is cleared, and the owner keeps its data.
#[test]
fn a_block_claimed_by_two_files_goes_to_the_one_its_summary_names() {
    let (dev, tree) = populated();
    let (_, _, medium) = inode_slot(dev.as_ref(), tree.medium);
    rewrite_inode(dev.as_ref(), tree.small, |inode| inode.direct[0] = medium.direct[0]);
    repaired_to_clean::<Lfs>(&dev);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1));
        assert_eq!(fs.read(tree.small, 0, 13).expect("read"), vec![0; 13]);
        fs.write(tree.small, 0, b"hello again\n").expect("write");
    });
    assert!(check(&dev).is_clean(), "after:\n{}", listing(&check(&dev)));
}

/// A segment summary destroyed: the log no longer confirms the blocks
/// and inodes of its partial segment (and of those after it in its
/// segment), though they are intact. The repair writes each again at the
/// log's head, as it reads, and every file is kept whole. Tried under a
/// summary of data blocks, of the inode blocks, of the double indirect
/// tree, and of the last partial segment before the log head (the ifile
/// and its inode): in the head's segment the repair first moves the head
/// on to a clean segment, or the chain would stop at the lost summary and
/// never reach what the repair itself writes after it.
#[test]
fn blocks_a_destroyed_summary_no_longer_confirms_are_written_again_and_kept() {
    let (_, tree) = populated();
    type Target = fn(&dyn disk::BlockDevice, &common::Tree) -> Daddr;
    let targets: [(&str, Target); 4] = [
        ("data", |dev, tree| inode_slot(dev, tree.medium).2.direct[5]),
        ("inodes", |dev, tree| inode_slot(dev, tree.large).0),
        ("double indirect", |dev, tree| inode_slot(dev, tree.large).2.indirect[1]),
        ("before the log head", |dev, _| superblock(dev).checkpoint.ifile_daddr),
    ];
    for (what, target) in targets {
        let (dev, _) = populated();
        let summary = summary_of(dev.as_ref(), target(dev.as_ref(), &tree));
        flip(dev.as_ref(), summary, 0, 64);
        let report = check(&dev);
        let rewrites = report
            .problems
            .iter()
            .filter(|p| matches!(p.fix, Some(Fix::RewriteBlock { .. } | Fix::RewriteInode { .. })))
            .count();
        assert!(rewrites > 0, "{what}: problems:\n{}", listing(&report));
        let sb = superblock(dev.as_ref());
        let in_head_segment = summary.get() / sb.blocks_per_segment() == sb.checkpoint.log_segment;
        let leaves = report.problems.iter().any(|p| matches!(p.fix, Some(Fix::LeaveSegment { .. })));
        assert_eq!(leaves, in_head_segment, "{what}: problems:\n{}", listing(&report));
        let outcome = repair(&dev);
        assert_eq!(outcome.exit_code(), 1, "{what}: left:\n{}", listing(&outcome.last));
        with_fs(&dev, false, |fs| {
            common::cases::assert_tree_kept(fs, &tree, what);
            fs.write(tree.small, 13, b"more").expect("write");
        });
        assert!(check(&dev).is_clean(), "{what}: after:\n{}", listing(&check(&dev)));
    }
}

/// Garbage over any one block the log has written — a summary, a file's
/// data or indirect block, an inode block, the ifile, a superblock copy —
/// repairs to an image that checks clean, mounts read-write, takes a new
/// file and checks clean again: each block of the populated image in
/// turn. (Until the ifile, lost summaries and bad pointers were repaired,
/// such damage left an image marked damaged for good, or one no mount
/// would take at all.)
#[test]
fn garbage_over_any_one_block_repairs_to_an_image_that_takes_writes() {
    let (dev, _) = populated();
    let sb = superblock(dev.as_ref());
    let head = sb.checkpoint.log_segment * sb.blocks_per_segment() + sb.checkpoint.log_offset;
    common::cases::garbage_at_each_offset_repairs_to_an_image_that_takes_writes::<Lfs>(
        &dev.snapshot(),
        (0..head).map(|block| block * BS as u64),
        BS,
    );
}

/// The inode `name` names in the root of the image on `dev`.
fn dev_lookup(dev: &Arc<disk::MemDisk>, name: &[u8]) -> Ino {
    with_fs(dev, false, |fs| fs.lookup(ROOT_INO, name).expect("lookup").ino)
}

/// The power cut during a repair, after each of its writes in turn (and,
/// for every other one, with the first sectors of the next write landed,
/// torn): the next fsck finishes the repair, and every file the damage
/// left is kept, with its contents. The repairs cut here write in place
/// what no mount writes there (a rebuilt ifile block and the summary of
/// its partial segment) before the mount's own segments and checkpoint.
/// (A summary lost before the log head was once mended by writing one in
/// its place: cut before the repair's checkpoint, that left an image no
/// repair could mend, decision 0033.)
#[test]
fn a_repair_cut_after_any_of_its_writes_is_finished_by_the_next_fsck() {
    type Damage = fn(&Arc<disk::MemDisk>);
    let damages: [(&str, Damage); 3] = [
        ("the summary of a file's data", |dev| {
            let medium = dev_lookup(dev, b"medium");
            let summary = summary_of(dev.as_ref(), inode_slot(dev.as_ref(), medium).2.direct[5]);
            flip(dev.as_ref(), summary, 0, 64);
        }),
        ("an inode map block", |dev| {
            let segtab = superblock(dev.as_ref()).segtab_blocks as usize;
            flip(dev.as_ref(), ifile_block(dev.as_ref(), 1 + segtab), 100, 8);
        }),
        ("the summary before the log head", |dev| {
            let summary = summary_of(dev.as_ref(), superblock(dev.as_ref()).checkpoint.ifile_daddr);
            flip(dev.as_ref(), summary, 0, 64);
        }),
    ];
    for (what, damage) in damages {
        let (dev, tree) = populated();
        damage(&dev);
        let writes = common::cases::a_repair_cut_after_any_write_is_finished_by_the_next::<Lfs>(
            &dev.snapshot(),
            |fs, at| common::cases::assert_tree_kept(fs, &tree, &format!("{what}, {at}")),
        );
        assert!(writes > 2, "{what}: the repair wrote only {writes} times");
    }
}
