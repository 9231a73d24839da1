//! fsck on FFS images: a healthy image checks clean, and each kind of
//! damage the five phases look for is found and repaired to a clean image
//! that mounts, keeping what can be kept. Images are built through the
//! library (`fslab::mkfs_ffs`, `ufs::FileSystem<Ffs>`, on a memory disk),
//! then damaged through the library (states a crash or a bug could leave)
//! or by changing bytes, re-encoded with valid checksums where the damage
//! is meant to reach the checks behind them.

mod common;

use common::cases::{
    assert_removes_entry, assert_resets_chunk, held_open_and_unlinked, repaired_to_clean, shared_cases, Ffs,
};
use common::ffs::*;
use common::{check, listing, pattern, repair};
use disk::{BlockDevice, MemDisk};
use fslab::ffs::layout::SB_CLEAN;
use fslab::format::blockno::NDADDR;
use fslab::format::inode::INODE_SIZE;
use fslab::format::{Daddr, Ino, ROOT_INO};
use fslab_check::{Fix, Kind, Layout, Report};
use std::sync::Arc;
use std::time::{Duration, Instant};

shared_cases!(Ffs);

/// Problems of `kind` about inode `ino`.
fn about(report: &Report, kind: Kind, ino: Ino) -> Vec<Option<Fix>> {
    report.problems.iter().filter(|p| p.kind == kind && p.ino == Some(ino)).map(|p| p.fix.clone()).collect()
}

#[test]
fn an_image_left_by_a_crash_is_found_unclean_and_rebuilt_to_mount() {
    let (dev, tree) = populated();
    with_fs(&dev, true, |fs| {
        fs.unlink(tree.docs, b"file07").expect("unlink");
        fs.rmdir(tree.deep, b"deeper").expect("rmdir");
        let c = fslab::ufs::Creds::default();
        let new = fs.mknod(ROOT_INO, b"new", 0o644, 0, c).expect("create").ino;
        fs.write(new, 0, &pattern(30_000, 9)).expect("write");
        fs.setattr(tree.large, &fslab::ufs::SetAttr { size: Some(5000), ..Default::default() })
            .expect("truncate");
    });
    let report = check(&dev);
    assert!(!report.clean_unmount);
    assert!(
        report.problems.iter().any(|p| p.kind == Kind::Superblock && p.fix == Some(Fix::RebuildGroups)),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        assert!(fs.lookup(tree.docs, b"file07").is_err(), "a synchronous unlink stays done");
        assert!(fs.lookup(ROOT_INO, b"new").is_ok(), "a synchronous create stays done");
        fs.storage().check_groups().expect("groups agree with their bitmaps");
    });
}

#[test]
fn bad_block_pointers_are_cleared() {
    let (dev, tree) = populated();
    let geo = geometry(dev.as_ref());
    let medium = inode(dev.as_ref(), tree.medium);
    rewrite_inode(dev.as_ref(), tree.medium, |i| {
        // Past the device; into group 1's inode table; not at a block boundary.
        i.direct[3] = Daddr::new(0x7fff_0000);
        i.direct[4] = Daddr::new(geo.group_base(1) + geo.inode_table_offset() as u64);
        i.direct[5] = Daddr::new(medium.direct[5].get() + 1);
    });
    let report = check(&dev);
    let fixes = about(&report, Kind::BlockPointer, tree.medium);
    for lbn in [3, 4, 5] {
        assert!(
            fixes.contains(&Some(Fix::ClearPointer { ino: tree.medium, lbn })),
            "block {lbn}:\n{}",
            listing(&report)
        );
    }
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        let data = fs.read(tree.medium, 0, 200 << 10).expect("read");
        let bs = 8192;
        assert_eq!(data[..3 * bs], pattern(200 << 10, 1)[..3 * bs], "the blocks before are kept");
        assert!(data[3 * bs..6 * bs].iter().all(|&b| b == 0), "the cleared blocks are holes");
        assert_eq!(data[6 * bs..], pattern(200 << 10, 1)[6 * bs..], "the blocks after are kept");
    });
}

#[test]
fn a_tail_that_is_not_a_run_of_its_own_block_is_cleared() {
    let (dev, tree) = populated();
    // `small` is 13 bytes: one fragment. Moved to the last fragment of a
    // block and made two fragments long by its size, it crosses a block.
    let small = inode(dev.as_ref(), tree.small);
    let block_start = small.direct[0].get() / 8 * 8;
    rewrite_inode(dev.as_ref(), tree.small, |i| {
        i.direct[0] = Daddr::new(block_start + 7);
        i.attr.size = 2000;
    });
    let report = check(&dev);
    assert!(
        about(&report, Kind::BlockPointer, tree.small)
            .contains(&Some(Fix::ClearPointer { ino: tree.small, lbn: 0 })),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
}

#[test]
fn a_fragment_claimed_twice_goes_to_neither_file_and_the_rest_is_kept() {
    let (dev, tree) = populated();
    let medium = inode(dev.as_ref(), tree.medium);
    // small's one fragment now lies in the first fragment of medium's block 0.
    rewrite_inode(dev.as_ref(), tree.small, |i| i.direct[0] = medium.direct[0]);
    let report = check(&dev);
    assert!(
        about(&report, Kind::DuplicateBlock, tree.small)
            .contains(&Some(Fix::ClearPointer { ino: tree.small, lbn: 0 })),
        "problems:\n{}",
        listing(&report)
    );
    assert!(
        about(&report, Kind::DuplicateBlock, tree.medium)
            .contains(&Some(Fix::ClearPointer { ino: tree.medium, lbn: 0 })),
        "phase 1b finds the first claimant too:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        let data = fs.read(tree.medium, 0, 200 << 10).expect("read");
        assert!(data[..8192].iter().all(|&b| b == 0), "the shared block is a hole");
        assert_eq!(data[8192..], pattern(200 << 10, 1)[8192..], "the rest of medium is kept");
    });
}

/// A pointer flipped in an inode that then fails its checksum lands on a
/// sound file's block: the damaged inode loses the pointer, and the sound
/// file, whose inode passes its checksum, keeps its block.
#[test]
fn a_block_claimed_by_a_sound_inode_and_a_damaged_one_stays_with_the_sound_one() {
    let (dev, tree) = populated();
    let medium = inode(dev.as_ref(), tree.medium);
    rewrite_inode(dev.as_ref(), tree.small, |i| i.direct[0] = medium.direct[0]);
    // small's checksum (its slot's last bytes) no longer matches.
    flip_bytes(dev.as_ref(), inode_offset(dev.as_ref(), tree.small) + INODE_SIZE as u64 - 4, 1);
    let report = check(&dev);
    assert!(
        about(&report, Kind::DuplicateBlock, tree.small)
            .contains(&Some(Fix::ClearPointer { ino: tree.small, lbn: 0 })),
        "problems:
{}",
        listing(&report)
    );
    assert!(
        about(&report, Kind::DuplicateBlock, tree.medium).is_empty(),
        "problems:
{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        assert_eq!(
            fs.read(tree.medium, 0, 200 << 10).expect("read"),
            pattern(200 << 10, 1),
            "medium is whole"
        );
    });
}

#[test]
fn a_wrong_block_count_is_set_right() {
    let (dev, tree) = populated();
    let right = inode(dev.as_ref(), tree.large).blocks;
    rewrite_inode(dev.as_ref(), tree.large, |i| i.blocks += 16);
    let report = check(&dev);
    assert_eq!(
        about(&report, Kind::Inode, tree.large),
        vec![Some(Fix::SetBlocks { ino: tree.large, blocks: right })],
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    assert_eq!(inode(dev.as_ref(), tree.large).blocks, right);
}

#[test]
fn an_inode_whose_checksum_fails_but_whose_fields_hold_is_resealed_and_kept() {
    let (dev, tree) = populated();
    // A flipped bit in the access time: the checksum fails, nothing else.
    flip_bytes(dev.as_ref(), inode_offset(dev.as_ref(), tree.medium) + 40, 1);
    let report = check(&dev);
    assert_eq!(
        about(&report, Kind::Inode, tree.medium),
        vec![Some(Fix::SealInode { ino: tree.medium })],
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1));
    });
}

#[test]
fn a_slot_of_garbage_is_cleared_and_entries_naming_it_removed() {
    let (dev, tree) = populated();
    // The symlink's slot: its number overwritten, so it is no inode at all.
    flip_bytes(dev.as_ref(), inode_offset(dev.as_ref(), tree.link), 8);
    let report = check(&dev);
    assert!(
        about(&report, Kind::Inode, tree.link).contains(&Some(Fix::ClearInode { ino: tree.link })),
        "problems:\n{}",
        listing(&report)
    );
    assert_removes_entry(&report, ROOT_INO, b"link");
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| assert!(fs.lookup(ROOT_INO, b"link").is_err()));
}

#[test]
fn an_entry_naming_an_inode_freed_without_its_bitmap_is_removed() {
    let (dev, tree) = populated();
    // The inode freed, as a crash in async mode could leave it: slot cleared.
    rewrite_inode(dev.as_ref(), tree.link, |i| {
        *i = fslab::format::inode::Inode { ino: tree.link, ..Default::default() }
    });
    let report = check(&dev);
    assert_removes_entry(&report, ROOT_INO, b"link");
    assert!(
        report.has(Kind::CylinderGroup),
        "its bit and fragment are still marked in use:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
}

#[test]
fn a_corrupted_directory_chunk_is_emptied_and_its_files_reconnected() {
    let (dev, tree) = populated();
    let docs = inode(dev.as_ref(), tree.docs);
    let at = geometry(dev.as_ref()).byte_offset(docs.direct[0].get());
    flip_bytes(dev.as_ref(), at + 512 + 40, 4);
    let report = check(&dev);
    assert_resets_chunk(&report, tree.docs, 512);
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        assert!(fs.readdir(lf, 0, 100).expect("readdir").len() > 2, "the chunk's files are in lost+found");
    });
}

#[test]
fn a_directory_block_lost_to_a_hole_is_filled_and_its_files_reconnected() {
    let (dev, tree) = populated();
    // deep's only block gone: its '.', '..' and entries with it.
    rewrite_inode(dev.as_ref(), tree.deep, |i| i.direct[0] = Daddr::NONE);
    let report = check(&dev);
    assert_resets_chunk(&report, tree.deep, 0);
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.lookup(tree.deep, b"..").expect("..").ino, tree.docs);
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        let large = fs.lookup(lf, format!("#{}", tree.large).as_bytes()).expect("large reconnected").ino;
        assert_eq!(fs.read(large, 0, 100).expect("read"), pattern(100, 2));
    });
}

#[test]
fn a_lost_root_is_made_again_and_everything_reconnected() {
    let (dev, tree) = populated();
    rewrite_inode(dev.as_ref(), ROOT_INO, |i| {
        *i = fslab::format::inode::Inode { ino: ROOT_INO, ..Default::default() }
    });
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.fix == Some(Fix::CreateRoot)),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        let docs = fs.lookup(lf, format!("#{}", tree.docs).as_bytes()).expect("docs reconnected").ino;
        let small = fs.lookup(docs, b"small").expect("small").ino;
        assert_eq!(fs.read(small, 0, 5).expect("read"), b"hello");
    });
}

#[test]
fn wrong_bitmaps_in_a_sound_group_are_rebuilt() {
    let (dev, tree) = populated();
    let geo = geometry(dev.as_ref());
    let medium = inode(dev.as_ref(), tree.medium).direct[2].get();
    let g = geo.group_of(medium);
    let mut cg = group(dev.as_ref(), g);
    // A block in use marked free (it would be handed out again), and a
    // free one marked in use.
    cg.free(geo.within_group(medium), 8).expect("in use");
    let spare = (0..cg.frags() / 8).rev().find(|&b| cg.is_block_free(b)).expect("a free block");
    cg.alloc_block(Some(spare * 8)).expect("free");
    write_group(dev.as_ref(), g, &cg);
    let report = check(&dev);
    let messages: Vec<&str> = report
        .problems
        .iter()
        .filter(|p| p.kind == Kind::CylinderGroup && p.fix == Some(Fix::RebuildGroups))
        .map(|p| p.message.as_str())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("in use are marked free") || m.contains("in use is marked free")),
        "problems:\n{}",
        listing(&report)
    );
    assert!(
        messages.iter().any(|m| m.contains("free fragments are marked in use")
            || m.contains("free fragment is marked in use")),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| fs.storage().check_groups().expect("groups agree with their bitmaps"));
}

#[test]
fn a_group_whose_summary_disagrees_with_its_bitmap_is_rebuilt() {
    let (dev, _) = populated();
    // frsum[1] += 1, resealed: the area passes its checksum, not its recount.
    let at = group_area(dev.as_ref(), 0);
    let mut area = vec![0u8; 8192];
    dev.read_at(at, &mut area).expect("read");
    area[68] = area[68].wrapping_add(1);
    let end = geometry(dev.as_ref()).cg_sections().end;
    let crc = fslab::format::codec::crc32c_skipping(&area[..end], 4);
    area[4..8].copy_from_slice(&crc.to_le_bytes());
    dev.write_at(at, &area).expect("write");
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.kind == Kind::CylinderGroup
            && p.fix == Some(Fix::RebuildGroups)
            && p.message.contains("free-run")),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
}

#[test]
fn wrong_superblock_totals_are_rewritten() {
    let (dev, _) = populated();
    let mut sb = superblock(dev.as_ref());
    sb.totals.free_blocks += 100;
    write_superblock(dev.as_ref(), &sb);
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.kind == Kind::Superblock && p.fix == Some(Fix::RebuildGroups)),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    assert_eq!(superblock(dev.as_ref()).totals.free_blocks, sb.totals.free_blocks - 100);
}

#[test]
fn a_damaged_primary_superblock_is_restored_from_a_copy() {
    for wipe in [false, true] {
        let (dev, tree) = populated();
        if wipe {
            dev.write_at(0, &[0u8; 4096]).expect("write");
        } else {
            flip_bytes(dev.as_ref(), 100, 2);
        }
        let report = check(&dev);
        assert_eq!(report.layout, Layout::Ffs, "wiped: {wipe}");
        assert!(
            report.problems.iter().any(|p| p.fix == Some(Fix::RestoreSuperblock)),
            "wiped: {wipe}; problems:\n{}",
            listing(&report)
        );
        repaired_to_clean::<Ffs>(&dev);
        with_fs(&dev, false, |fs| assert_eq!(fs.read(tree.small, 0, 5).expect("read"), b"hello"));
    }
}

#[test]
fn a_damaged_superblock_copy_is_rewritten() {
    let (dev, _) = populated();
    let geo = geometry(dev.as_ref());
    flip_bytes(dev.as_ref(), geo.byte_offset(geo.group_base(2)) + 30, 2);
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.kind == Kind::Superblock && p.fix == Some(Fix::RewriteSuperblocks)),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
}

#[test]
fn indirect_blocks_that_repeat_one_block_are_checked_in_bounded_time() {
    let (dev, tree) = populated();
    let large = inode(dev.as_ref(), tree.large);
    // large reaches its double indirect tree: block D there, and its one
    // single indirect block S. Every pointer of S now names S, and every
    // pointer of D names S, each block resealed, so each passes as the
    // block it is read as at one place only.
    let indirect = superblock(dev.as_ref()).indirect_geometry();
    let nindir = indirect.nindir as i64;
    let (d_lbn, s_lbn) = (-(NDADDR as i64 + nindir) - 1, -(NDADDR as i64 + nindir));
    let double = large.indirect[1].get();
    let single = u32::from_le_bytes(read_frags(dev.as_ref(), double, 4).try_into().expect("4 bytes")) as u64;
    assert!(single != 0, "the double tree has a single indirect block");
    for (addr, lbn) in [(single, s_lbn), (double, d_lbn)] {
        let mut block = read_frags(dev.as_ref(), addr, 8192);
        for i in 0..nindir as usize {
            let at = indirect.pointer_offset(i);
            block[at..at + 4].copy_from_slice(&(single as u32).to_le_bytes());
        }
        indirect.seal(&mut block, tree.large, lbn);
        write_frags(dev.as_ref(), addr, &block);
    }
    let started = Instant::now();
    let report = check(&dev);
    assert!(started.elapsed() < Duration::from_secs(10), "check took {:?}", started.elapsed());
    assert!(
        report.has(Kind::BlockPointer) || report.has(Kind::DuplicateBlock),
        "problems:\n{}",
        listing(&report)
    );
    let started = Instant::now();
    let outcome = repair(&dev);
    assert!(started.elapsed() < Duration::from_secs(20), "repair took {:?}", started.elapsed());
    assert_eq!(outcome.exit_code(), 1, "left:\n{}", listing(&outcome.last));
}

#[test]
fn a_repair_that_leaves_problems_leaves_the_image_unmountable() {
    let (dev, tree) = populated();
    // deep's first entry renamed from '.' to 'x' (the chunk resealed):
    // found, and beyond repair.
    let at = geometry(dev.as_ref()).byte_offset(inode(dev.as_ref(), tree.deep).direct[0].get());
    let mut chunk = vec![0u8; 512];
    dev.read_at(at, &mut chunk).expect("read");
    assert_eq!(chunk[8], b'.');
    chunk[8] = b'x';
    fslab::format::dirent::seal_chunk(&mut chunk);
    dev.write_at(at, &chunk).expect("write");
    let report = check(&dev);
    assert!(report.problems.iter().any(|p| p.fix.is_none()), "problems:\n{}", listing(&report));
    // A crash on top, so that repair has something to write.
    with_fs(&dev, true, |fs| {
        let c = fslab::ufs::Creds::default();
        fs.mknod(ROOT_INO, b"late", 0o644, 0, c).expect("create");
    });
    let outcome = repair(&dev);
    assert_eq!(outcome.exit_code(), 4, "left:\n{}", listing(&outcome.last));
    assert_eq!(superblock(dev.as_ref()).flags & SB_CLEAN, 0, "not marked clean");
    let e = fslab::ffs::Ffs::mount(dev.clone(), fslab::ffs::MountOptions::default()).err().expect("refused");
    assert_eq!(e.errno(), libc::EUCLEAN);
}

/// A directory named in two parents with its `..` naming one: the name
/// there is the old one (`..` changes last), so the repair keeps the other
/// name — but only where that parent's count already counts the `..` to
/// come, as a rename raises it first. Here the `..` was pointed at the
/// root by hand, the root's count not raised and the old parent's still
/// counting it: the repair keeps the name in `docs` and points `..` back.
#[test]
fn a_directory_left_with_two_names_by_a_rename_is_settled_by_dotdot_and_the_counts() {
    let (dev, tree) = populated();
    with_fs(&dev, false, |fs| {
        fs.repair_add_entry(ROOT_INO, b"deep", tree.deep).expect("add");
        fs.repair_retarget_entry(tree.deep, b"..", ROOT_INO).expect("retarget");
    });
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.kind == Kind::Directory
            && p.fix == Some(Fix::RemoveEntry { dir: ROOT_INO, name: b"deep".to_vec() })),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        assert!(fs.lookup(ROOT_INO, b"deep").is_err());
        assert_eq!(fs.lookup(tree.docs, b"deep").expect("deep").ino, tree.deep);
        assert_eq!(fs.lookup(tree.deep, b"..").expect("..").ino, tree.docs);
        assert_eq!(fs.getattr(tree.docs).expect("docs").attr.nlink, 3);
    });
}

#[test]
fn the_same_tree_checks_the_same_on_both_layouts() {
    // `populate` makes the same namespace in LFS; both checkers count it alike.
    let lfs = common::populated().0;
    let (ffs, _) = populated();
    let (a, b) = (check(&lfs), check(&ffs));
    assert_eq!((a.counts.inodes, a.counts.directories), (b.counts.inodes, b.counts.directories));
    assert_eq!((a.layout, b.layout), (Layout::Lfs, Layout::Ffs));
}

/// The orphan list as the disk holds it: the superblock's head, then each
/// inode's `next_orphan`, for at most `limit` inodes.
fn orphans_on_disk(dev: &std::sync::Arc<disk::MemDisk>, limit: usize) -> Vec<Ino> {
    let mut list = Vec::new();
    let mut next = superblock(dev.as_ref()).orphan_head;
    while next != 0 && list.len() < limit {
        list.push(next);
        next = inode(dev.as_ref(), next).next_orphan;
    }
    list
}

/// In sync mode the orphan list is on disk the moment a file unlinked
/// while open has lost its name, and a close takes it off before the inode
/// is freed: a crash at any point after leaves the list fsck and mount
/// expect, with no sync.
#[test]
fn sync_mode_keeps_the_orphan_list_on_disk_without_a_sync() {
    let dev = fresh(24 << 20);
    let files = with_fs(&dev, true, |fs| {
        let files = held_open_and_unlinked(fs, &[b"a", b"b", b"c"], 20_000);
        fs.unpin(files[1], 1).expect("close the middle one");
        files
    });
    assert_eq!(orphans_on_disk(&dev, 10), vec![files[2], files[0]]);
}

/// A list left on an image marked clean (a storage user that unmounted
/// with orphans open) is emptied by the next mount, which frees each
/// orphan's inode and blocks.
#[test]
fn mount_frees_the_orphans_on_the_list() {
    let dev = fresh(24 << 20);
    let c = fslab::ufs::Creds::default();
    let (file, free_before) = with_fs(&dev, true, |fs| {
        let free_before = fs.statfs().expect("statfs").free_blocks;
        let file = fs.mknod(ROOT_INO, b"held", 0o644, 0, c).expect("create").ino;
        fs.write(file, 0, &pattern(200_000, 3)).expect("write");
        fs.pin(file);
        fs.unlink(ROOT_INO, b"held").expect("unlink");
        fslab::storage::StorageManager::unmount(fs.storage()).expect("unmount under the namespace");
        (file, free_before)
    });
    assert_eq!(orphans_on_disk(&dev, 10), vec![file]);
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.storage().orphan_report().reclaimed, 1);
        assert!(fs.getattr(file).is_err(), "the orphan is freed");
        assert_eq!(fs.statfs().expect("statfs").free_blocks, free_before, "its space is back");
    });
    assert_eq!(superblock(dev.as_ref()).orphan_head, 0);
    let report = check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
}

/// Free space the superblock of `dev` counts, in fragments.
fn free_frags(dev: &dyn BlockDevice) -> u64 {
    let sb = superblock(dev);
    sb.totals.free_blocks * sb.geometry.frags_per_block as u64 + sb.totals.free_frags
}

/// A block preallocated past the end of a file (`fallocate` with
/// KEEP_SIZE) is whole; once a write makes it the file's last block, the
/// size and the map make it the tail, and it must hold only its
/// fragments: the rest go back to the group. Otherwise the file's block
/// count is a whole block while it holds a fragment, the other fragments
/// are marked in use by nothing, and they stay so after the file goes.
/// Each case: what it does to a new file, and the bytes the file holds
/// after it.
#[test]
fn a_preallocated_block_that_becomes_the_tail_keeps_only_its_fragments() {
    type Case = (&'static str, fn(&mut fslab::ufs::FileSystem<fslab::ffs::Ffs>, Ino), u64);
    let cases: [Case; 4] = [
        (
            "falloc -k 0 3000, pwrite 0 1",
            |fs, f| {
                fs.fallocate(f, 0, 3000, libc::FALLOC_FL_KEEP_SIZE).expect("fallocate");
                fs.write(f, 0, b"x").expect("write");
            },
            1024,
        ),
        (
            "falloc -k 0 20000, pwrite 9000 100",
            |fs, f| {
                fs.fallocate(f, 0, 20_000, libc::FALLOC_FL_KEEP_SIZE).expect("fallocate");
                fs.write(f, 9000, &[7u8; 100]).expect("write");
            },
            3 * 8192,
        ),
        (
            "pwrite 0 1, falloc -k 0 8192, pwrite 1 2000",
            |fs, f| {
                fs.write(f, 0, b"x").expect("write");
                fs.fallocate(f, 0, 8192, libc::FALLOC_FL_KEEP_SIZE).expect("fallocate");
                fs.write(f, 1, &[7u8; 2000]).expect("write");
            },
            2048,
        ),
        (
            "falloc -k 0 16384, zero range -k 8192 8192, pwrite 0 5000",
            |fs, f| {
                fs.fallocate(f, 0, 16384, libc::FALLOC_FL_KEEP_SIZE).expect("fallocate");
                let zero = libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE;
                fs.fallocate(f, 8192, 8192, zero).expect("zero range");
                fs.write(f, 0, &[7u8; 5000]).expect("write");
            },
            2 * 8192,
        ),
    ];
    for integrity in fslab::ffs::Integrity::ALL {
        for (name, ops, bytes) in cases {
            let dev = common::ffs::fresh_for(24 << 20, integrity);
            let empty = free_frags(dev.as_ref());
            let f = with_fs_in(&dev, integrity, false, |fs| {
                let f = fs.mknod(ROOT_INO, b"f", 0o644, 0, fslab::ufs::Creds::default()).expect("create").ino;
                ops(fs, f);
                f
            });
            let report = check(&dev);
            assert!(report.is_clean(), "{integrity:?}, {name}:\n{}", listing(&report));
            assert_eq!(inode(dev.as_ref(), f).blocks * 512, bytes, "{integrity:?}, {name}: space held");
            with_fs_in(&dev, integrity, false, |fs| fs.unlink(ROOT_INO, b"f").expect("unlink"));
            let report = check(&dev);
            assert!(report.is_clean(), "{integrity:?}, {name}, after rm:\n{}", listing(&report));
            assert_eq!(free_frags(dev.as_ref()), empty, "{integrity:?}, {name}: space back after rm");
        }
    }
}

/// Makes a directory under the root and twenty subdirectories in it, each
/// with three small files, then unmounts. Returns the group of the parent
/// and of each subdirectory.
fn directory_tree(dev: &Arc<MemDisk>, integrity: fslab::ffs::Integrity) -> (u32, Vec<u32>) {
    let geo = geometry(dev.as_ref());
    let c = fslab::ufs::Creds::default();
    let (top, subdirs) = with_fs_in(dev, integrity, false, |fs| {
        let top = fs.mkdir(ROOT_INO, b"src", 0o755, c).expect("mkdir").ino;
        let mut subdirs = Vec::new();
        for d in 0..20u8 {
            let dir = fs.mkdir(top, format!("d{d}").as_bytes(), 0o755, c).expect("mkdir").ino;
            for f in 0..3u8 {
                let file = fs.mknod(dir, format!("f{f}").as_bytes(), 0o644, 0, c).expect("create").ino;
                fs.write(file, 0, &pattern(3000, d ^ f)).expect("write");
            }
            subdirs.push(dir);
        }
        (top, subdirs)
    });
    (geo.ino_group(top), subdirs.into_iter().map(|d| geo.ino_group(d)).collect())
}

/// A fresh 64 MiB FFS (sixteen 4 MiB groups) placing directories by
/// `dirpref`, with a `file` journal for the journal's modes.
fn fresh_with_dirpref(dirpref: fslab::ffs::DirPref, integrity: fslab::ffs::Integrity) -> Arc<MemDisk> {
    let dev = Arc::new(MemDisk::new(64 << 20));
    let journal = match integrity {
        fslab::ffs::Integrity::Journal | fslab::ffs::Integrity::JournalSync => fslab::ffs::JournalKind::File,
        _ => fslab::ffs::JournalKind::None,
    };
    let mkfs = fslab::ffs::MkfsOptions { dirpref, journal, ..mkfs_options() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, fslab::ufs::Creds::default()).expect("mkfs");
    dev
}

/// How many of `groups` fall in the one that holds the most.
fn most_in_one_group(groups: &[u32]) -> usize {
    groups.iter().map(|g| groups.iter().filter(|h| *h == g).count()).max().unwrap_or(0)
}

#[test]
fn the_new_dirpref_keeps_a_trees_directories_with_their_parent_and_the_old_one_spreads_them() {
    use fslab::ffs::DirPref;
    for integrity in fslab::ffs::Integrity::ALL {
        let dev = fresh_with_dirpref(DirPref::New, integrity);
        let (parent, groups) = directory_tree(&dev, integrity);
        assert!(
            groups.iter().all(|&g| g == parent),
            "{integrity:?}: parent in {parent}, children in {groups:?}"
        );
        let report = check(&dev);
        assert!(report.is_clean(), "{integrity:?}, new:\n{}", listing(&report));
    }
    let dev = fresh_with_dirpref(DirPref::Old, fslab::ffs::Integrity::Sync);
    let (_, groups) = directory_tree(&dev, fslab::ffs::Integrity::Sync);
    assert!(most_in_one_group(&groups) <= 2, "old: children in {groups:?}");
    let report = check(&dev);
    assert!(report.is_clean(), "old:\n{}", listing(&report));
}

#[test]
fn a_version_5_image_still_mounts_places_directories_by_the_old_policy_and_stays_version_5() {
    let dev = fresh_with_dirpref(fslab::ffs::DirPref::New, fslab::ffs::Integrity::Sync);
    // What a version-5 mkfs wrote: the same superblock without the
    // placement fields, at byte 0 and at the front of every group.
    let sb = superblock(dev.as_ref());
    let v5 = fslab::ffs::Superblock { version: 5, ..sb }.encode();
    for cg in 0..sb.geometry.ncg {
        dev.write_at(sb.geometry.byte_offset(sb.geometry.group_base(cg)), &v5).expect("write");
    }
    let read = superblock(dev.as_ref());
    assert_eq!((read.version, read.policy.dirpref), (5, fslab::ffs::DirPref::Old));
    assert!(check(&dev).is_clean());
    let (_, groups) = directory_tree(&dev, fslab::ffs::Integrity::Sync);
    assert!(most_in_one_group(&groups) <= 2, "spread as the old policy does: {groups:?}");
    assert_eq!(superblock(dev.as_ref()).version, 5, "an image keeps its version");
    let report = check(&dev);
    assert!(report.is_clean(), "{}", listing(&report));
    let dump = fslab::ffs::dump(dev.as_ref()).expect("dump");
    assert!(dump.contains("format version 5") && dump.contains("dirpref           old"), "{dump}");
}

/// An extended-attribute block that cannot be read is reported, and no
/// repair runs on a device that fails reads (it dropped the attributes,
/// where an indirect block's failed read already stopped every repair).
#[test]
fn an_unreadable_attribute_block_stops_the_repair_instead_of_dropping_the_attributes() {
    let (dev, tree) = populated();
    let at = geometry(dev.as_ref()).byte_offset(inode(dev.as_ref(), tree.medium).xattr.get());
    let failing: Arc<dyn BlockDevice> =
        Arc::new(disk::FaultyDisk::new(dev.clone()).failing_reads(at..at + 512));
    let options = fslab_check::Options { repair: true, ..fslab_check::Options::default() };
    let outcome = fslab_check::fsck(failing, &options, &mut |_| {}).expect("fsck runs");
    assert!(
        outcome.last.problems.iter().any(|p| p.message.contains("cannot be read")),
        "reported:\n{}",
        listing(&outcome.last)
    );
    // The fault passes: the next repair finds the attribute block sound.
    repair(&dev);
    assert!(check(&dev).is_clean(), "after:\n{}", listing(&check(&dev)));
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.getxattr(tree.medium, b"user.note").expect("the attribute is kept"), b"kept");
    });
}

/// The power cut right after fsck wrote the inodes, groups and superblock
/// and before it removed the entries naming the inodes it cleared: the
/// image must not be left marked clean (it mounted, an entry naming a
/// free inode, which a later create would take: two names, one inode).
#[test]
fn a_repair_cut_before_its_namespace_step_leaves_the_image_unclean() {
    let (dev, tree) = populated();
    flip_bytes(dev.as_ref(), inode_offset(dev.as_ref(), tree.link), 8);
    let cut: Arc<dyn BlockDevice> = Arc::new(disk::FaultyDisk::new(dev.clone()).cut_after_flushes(3));
    let options = fslab_check::Options { repair: true, ..fslab_check::Options::default() };
    let outcome = fslab_check::fsck(cut, &options, &mut |_| {}).expect("fsck runs");
    assert!(!outcome.failed.is_empty(), "the namespace step could not run");
    let mounted = fslab::ffs::Ffs::mount(dev.clone(), fslab::ffs::MountOptions::default());
    assert_eq!(mounted.err().map(|e| e.errno()), Some(libc::EUCLEAN), "the image is not marked clean");
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| assert!(fs.lookup(ROOT_INO, b"link").is_err()));
}

/// The power cut at each barrier of a repair's direct writes (after the
/// inodes, after the groups): an image that was marked clean before the
/// repair must not mount half repaired, its groups calling free an inode
/// an entry still names.
#[test]
fn a_repair_cut_at_any_barrier_leaves_a_clean_image_unclean() {
    for flushes in 1..=3 {
        let (dev, tree) = populated();
        flip_bytes(dev.as_ref(), inode_offset(dev.as_ref(), tree.link), 8);
        let cut: Arc<dyn BlockDevice> =
            Arc::new(disk::FaultyDisk::new(dev.clone()).cut_after_flushes(flushes));
        let options = fslab_check::Options { repair: true, ..fslab_check::Options::default() };
        let outcome = fslab_check::fsck(cut, &options, &mut |_| {}).expect("fsck runs");
        assert!(!outcome.failed.is_empty(), "cut after {flushes} barriers: the repair could not end");
        let mounted = fslab::ffs::Ffs::mount(dev.clone(), fslab::ffs::MountOptions::default());
        assert_eq!(
            mounted.err().map(|e| e.errno()),
            Some(libc::EUCLEAN),
            "cut after {flushes} barriers: the image is not marked clean"
        );
        repaired_to_clean::<Ffs>(&dev);
        with_fs(&dev, false, |fs| assert!(fs.lookup(ROOT_INO, b"link").is_err()));
    }
}

/// One 512-byte sector of an indirect block fails its checksum: only the
/// pointers in that sector are cleared (127 blocks become a hole), where
/// the whole tree below the block used to go.
#[test]
fn a_bad_sector_of_an_indirect_block_costs_only_its_own_pointers() {
    let (dev, _) = populated();
    let bs = geometry(dev.as_ref()).block_size as usize;
    let per_sector = fslab::format::blockno::POINTERS_PER_SECTOR;
    let blocks = NDADDR + 3 * per_sector;
    let data = pattern(blocks * bs, 9);
    let ino = with_fs(&dev, false, |fs| {
        let f = fs.mknod(ROOT_INO, b"big", 0o644, 0, fslab::ufs::Creds::default()).expect("create").ino;
        fs.write(f, 0, &data).expect("write");
        f
    });
    // A byte of the single indirect block's second sector.
    let indirect = inode(dev.as_ref(), ino).indirect[0].get();
    let at = geometry(dev.as_ref()).byte_offset(indirect) + 512 + 100;
    flip_bytes(dev.as_ref(), at, 1);
    let report = check(&dev);
    let listed = listing(&report);
    assert!(listed.contains("in sector 1 of indirect block -12"), "the sector's pointers:\n{listed}");
    assert!(!listed.contains("corrupt indirect block"), "not the whole block:\n{listed}");
    repaired_to_clean::<Ffs>(&dev);
    with_fs(&dev, false, |fs| {
        let got = fs.read(ino, 0, blocks * bs).expect("read");
        assert_eq!(got.len(), blocks * bs, "the size is kept");
        let hole = (NDADDR + per_sector) * bs..(NDADDR + 2 * per_sector) * bs;
        assert_eq!(got[..hole.start], data[..hole.start], "before the bad sector's blocks");
        assert!(got[hole.clone()].iter().all(|&b| b == 0), "the bad sector's blocks are a hole");
        assert_eq!(got[hole.end..], data[hole.end..], "after them");
    });
}

/// A device error while fsck replays a journal stops it, as it stops a
/// mount, and leaves the log to replay: a repair of the half-replayed
/// image would mark it clean and drop the rest of a log whose
/// transactions were durable. The fault passes; the next fsck replays.
#[test]
fn a_device_error_during_journal_replay_stops_fsck_and_keeps_the_log() {
    use fslab::ffs::Integrity;
    let dev = fresh_for(24 << 20, Integrity::Journal);
    let file = with_fs_in(&dev, Integrity::Journal, true, |fs| {
        let file = fs.mknod(ROOT_INO, b"kept", 0o644, 0, fslab::ufs::Creds::default()).expect("create").ino;
        fs.write(file, 0, &pattern(5000, 3)).expect("write");
        fs.fsync(file, false).expect("fsync");
        file
    });
    let sb = superblock(dev.as_ref());
    assert!(fslab::ffs::journal::needs_replay(&sb), "the crash left a log to replay");
    let log = sb.geometry.byte_offset(sb.journal.start);
    let failing: Arc<dyn BlockDevice> =
        Arc::new(disk::FaultyDisk::new(dev.clone()).failing_reads(log..log + 512));
    let options = fslab_check::Options { repair: true, ..fslab_check::Options::default() };
    let stopped = fslab_check::fsck(failing, &options, &mut |_| {});
    assert!(matches!(stopped, Err(fslab_check::Fatal::Io(_))), "fsck went on past a failed replay");
    assert!(fslab::ffs::journal::needs_replay(&superblock(dev.as_ref())), "the log was dropped");
    let outcome = repair(&dev);
    assert!(outcome.last.is_clean(), "after:\n{}", listing(&outcome.last));
    with_fs(&dev, false, |fs| {
        assert_eq!(fs.lookup(ROOT_INO, b"kept").expect("the fsynced file").ino, file);
        assert_eq!(fs.read(file, 0, 5000).expect("read"), pattern(5000, 3));
    });
}

/// Garbage over any one block the file system holds — a superblock copy,
/// a cylinder group, an inode table block, a directory, a file's data or
/// indirect block — repairs to an image that checks clean, mounts, takes a
/// new file and checks clean again: each non-zero 8 KiB block of the
/// populated image in turn.
#[test]
fn garbage_over_any_one_block_repairs_to_an_image_that_takes_writes() {
    const BLOCK: usize = 8192;
    let image = populated().0.snapshot();
    let used =
        (0..image.len() / BLOCK).filter(|&b| image[b * BLOCK..(b + 1) * BLOCK].iter().any(|&x| x != 0));
    common::cases::garbage_at_each_offset_repairs_to_an_image_that_takes_writes::<common::cases::Ffs>(
        &image,
        used.map(|b| (b * BLOCK) as u64).collect::<Vec<_>>(),
        BLOCK,
    );
}

/// The power cut during a repair, after each of its writes in turn (every
/// other cut tearing the write it falls in): the next fsck finishes the
/// repair, and every file the damage left is kept with its contents. The
/// damages: an inode failing its checksum (cleared, its entry removed), a
/// crash's unclean image (the groups rebuilt), and a group's bitmap that
/// fails its checksum (rebuilt).
#[test]
fn a_repair_cut_after_any_of_its_writes_is_finished_by_the_next_fsck() {
    type Damage = fn(&Arc<MemDisk>, &common::Tree);
    let damages: [(&str, Damage); 3] = [
        ("an inode failing its checksum", |dev, tree| {
            flip_bytes(dev.as_ref(), inode_offset(dev.as_ref(), tree.link), 8)
        }),
        ("a crash's unclean image", |dev, tree| {
            with_fs(dev, true, |fs| {
                fs.unlink(tree.docs, b"file07").expect("unlink");
                let c = fslab::ufs::Creds::default();
                let new = fs.mknod(ROOT_INO, b"new", 0o644, 0, c).expect("create").ino;
                fs.write(new, 0, &pattern(30_000, 9)).expect("write");
            })
        }),
        ("a group's bitmap", |dev, _| flip_bytes(dev.as_ref(), group_area(dev.as_ref(), 0) + 300, 4)),
    ];
    for (what, damage) in damages {
        let (dev, tree) = populated();
        damage(&dev, &tree);
        let writes = common::cases::a_repair_cut_after_any_write_is_finished_by_the_next::<Ffs>(
            &dev.snapshot(),
            |fs, at| common::cases::assert_tree_kept(fs, &tree, &format!("{what}, {at}")),
        );
        assert!(writes > 2, "{what}: the repair wrote only {writes} times");
    }
}

/// A crash image of each mode whose repair writes the most — the journal's
/// (a log to replay first) and soft updates' (leaks to give back) — with
/// the repair cut after each of its writes in turn: the next fsck finishes
/// it, and the populated files and one fsynced after them are kept.
#[test]
fn a_repair_of_a_crash_image_cut_after_any_write_is_finished_by_the_next_fsck() {
    use fslab::ffs::Integrity;
    for integrity in [Integrity::Journal, Integrity::Softdep] {
        let dev = fresh_for(24 << 20, integrity);
        let tree = with_fs_in(&dev, integrity, false, common::populate);
        let kept = with_fs_in(&dev, integrity, true, |fs| {
            let c = fslab::ufs::Creds::default();
            let kept = fs.mknod(ROOT_INO, b"kept", 0o644, 0, c).expect("create").ino;
            fs.write(kept, 0, &pattern(30_000, 4)).expect("write");
            fs.fsync(kept, false).expect("fsync");
            fs.unlink(tree.docs, b"file07").expect("unlink");
            fs.rmdir(tree.deep, b"deeper").expect("rmdir");
            kept
        });
        let writes = common::cases::a_repair_cut_after_any_write_is_finished_by_the_next::<Ffs>(
            &dev.snapshot(),
            |fs, at| {
                let at = format!("{integrity:?}, {at}");
                common::cases::assert_tree_kept(fs, &tree, &at);
                assert_eq!(fs.read(kept, 0, 30_000).expect("read"), pattern(30_000, 4), "{at}");
            },
        );
        assert!(writes > 2, "{integrity:?}: the repair wrote only {writes} times");
    }
}
