//! The FFS storage manager under the namespace, on a memory disk: files of
//! every shape (fragment tails, indirect blocks), growth and truncation
//! moving tails, remounts, space accounting, and every integrity mode.

use disk::{BlockDevice, CountingDisk, MemDisk};
use fslab::ffs::{Ffs, Integrity, MkfsOptions, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem, SetAttr};
use std::sync::Arc;

const ME: Creds = Creds { uid: 0, gid: 0 };

fn options(integrity: Integrity) -> MountOptions {
    MountOptions { cache_bytes: 1 << 20, integrity, ..MountOptions::default() }
}

/// A fresh FFS of `bytes` with 8 KiB blocks and 1 KiB fragments.
fn fresh(bytes: u64, integrity: Integrity) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    fresh_with(bytes, options(integrity))
}

/// [`fresh`], mounted with `mount`.
fn fresh_with(bytes: u64, mount: MountOptions) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    let disk = Arc::new(MemDisk::new(bytes));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    // A journal for the journal's modes; the others leave it alone.
    let journal = fslab::ffs::JournalKind::File;
    let mkfs = MkfsOptions { group_size: 4 << 20, journal, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let fs = FileSystem::new(Ffs::mount(dev, mount).expect("mount"));
    (disk, fs)
}

fn remount(disk: &Arc<MemDisk>, fs: FileSystem<Ffs>, integrity: Integrity) -> FileSystem<Ffs> {
    let mut fs = fs;
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    FileSystem::new(Ffs::mount(dev, options(integrity)).expect("mount again"))
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed as usize * 31 + i * 7 + i / 4096) as u8 | 1).collect()
}

fn create(fs: &mut FileSystem<Ffs>, name: &str) -> Ino {
    fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, ME).expect("create").ino
}

/// The space the groups' bitmaps say is free must equal what was given
/// out: every group recounts to its counts.
fn check_groups(fs: &mut FileSystem<Ffs>) {
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn files_of_every_size_read_back_after_a_remount() {
    for integrity in Integrity::ALL {
        let (disk, mut fs) = fresh(64 << 20, integrity);
        let sizes =
            [0usize, 1, 1000, 1024, 1025, 8191, 8192, 8193, 20_000, 96 << 10, (96 << 10) + 1, 3 << 20];
        let mut inos = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let ino = create(&mut fs, &format!("f{i}"));
            fs.write(ino, 0, &pattern(i as u64, size)).expect("write");
            inos.push(ino);
        }
        check_groups(&mut fs);
        let mut fs = remount(&disk, fs, integrity);
        for (i, &size) in sizes.iter().enumerate() {
            let got = fs.read(inos[i], 0, size + 10).expect("read");
            assert!(got == pattern(i as u64, size), "{integrity:?}: file of {size} bytes");
            let blocks = fs.getattr(inos[i]).expect("getattr").blocks;
            let data_frags = (size as u64).div_ceil(1024);
            assert!(
                blocks * 512 >= data_frags * 1024,
                "{integrity:?}: {size} bytes held in {blocks} sectors"
            );
        }
        let small = fs.getattr(inos[2]).expect("getattr");
        assert_eq!(small.blocks, 2, "1000 bytes live in one 1 KiB fragment, not a block");
        check_groups(&mut fs);
        fs.unmount().expect("unmount");
    }
}

#[test]
fn a_growing_tail_extends_or_moves_and_a_truncate_shrinks_it() {
    let (disk, mut fs) = fresh(32 << 20, Integrity::Async);
    let a = create(&mut fs, "a");
    let b = create(&mut fs, "b");
    // Interleaved appends: each tail grows past its neighbour's fragments.
    let mut want_a = Vec::new();
    let mut want_b = Vec::new();
    for step in 0..12u64 {
        let chunk = pattern(step, 700);
        fs.write(a, want_a.len() as u64, &chunk).expect("append a");
        want_a.extend_from_slice(&chunk);
        let chunk = pattern(step + 100, 900);
        fs.write(b, want_b.len() as u64, &chunk).expect("append b");
        want_b.extend_from_slice(&chunk);
        check_groups(&mut fs);
    }
    assert_eq!(fs.read(a, 0, 1 << 20).expect("read a"), want_a);
    assert_eq!(fs.read(b, 0, 1 << 20).expect("read b"), want_b);
    // Truncate into the first block: the tail shrinks to its fragments.
    fs.setattr(a, &SetAttr { size: Some(1500), ..SetAttr::default() }).expect("truncate");
    want_a.truncate(1500);
    assert_eq!(fs.getattr(a).expect("a").blocks, 4, "1500 bytes: two fragments");
    check_groups(&mut fs);
    // Extend with a hole: the old tail becomes a whole block.
    fs.setattr(a, &SetAttr { size: Some(50_000), ..SetAttr::default() }).expect("extend");
    want_a.resize(50_000, 0);
    check_groups(&mut fs);
    let mut fs = remount(&disk, fs, Integrity::Async);
    assert_eq!(fs.read(a, 0, 1 << 20).expect("read a"), want_a);
    assert_eq!(fs.read(b, 0, 1 << 20).expect("read b"), want_b);
    fs.unmount().expect("unmount");
}

#[test]
fn deleting_everything_gives_every_fragment_back() {
    let (disk, mut fs) = fresh(32 << 20, Integrity::Sync);
    let before = fs.statfs().expect("statfs");
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    for i in 0..50u64 {
        let name = format!("f{i}");
        let ino = fs.mknod(d, name.as_bytes(), kind::REG | 0o644, 0, ME).expect("create").ino;
        fs.write(ino, 0, &pattern(i, (i as usize * 4099) % 200_000)).expect("write");
    }
    fs.setxattr(ROOT_INO, b"user.x", b"1", 0).expect("setxattr");
    let mut fs = remount(&disk, fs, Integrity::Sync);
    for i in 0..50u64 {
        fs.unlink(d, format!("f{i}").as_bytes()).expect("unlink");
    }
    fs.rmdir(ROOT_INO, b"d").expect("rmdir");
    fs.removexattr(ROOT_INO, b"user.x").expect("removexattr");
    check_groups(&mut fs);
    let after = fs.statfs().expect("statfs");
    assert_eq!((after.free_blocks, after.free_inodes), (before.free_blocks, before.free_inodes));
    fs.unmount().expect("unmount");
}

#[test]
fn an_image_not_unmounted_is_refused_until_repaired() {
    let (disk, mut fs) = fresh(16 << 20, Integrity::Sync);
    create(&mut fs, "x");
    drop(fs);
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let e = Ffs::mount(dev, options(Integrity::Sync)).err().expect("refused");
    assert_eq!(e.errno(), libc::EUCLEAN, "{e}");
}

#[test]
fn sync_mode_writes_a_create_before_it_returns_and_async_does_not() {
    for (integrity, expect_sync) in [(Integrity::Sync, true), (Integrity::Async, false)] {
        let (_disk, mut fs) = fresh(16 << 20, integrity);
        let before = fs.storage().stats().sync_writes;
        create(&mut fs, "x");
        let after = fs.storage().stats().sync_writes;
        assert_eq!(after > before, expect_sync, "{integrity:?}: {before} -> {after} synchronous writes");
        if expect_sync {
            assert_eq!(after - before, 2, "the inode, then the directory block (4.4BSD's two)");
        }
    }
}

#[test]
fn a_full_disk_refuses_data_but_not_unlink() {
    let (_disk, mut fs) = fresh(8 << 20, Integrity::Async);
    let f = create(&mut fs, "big");
    let chunk = vec![7u8; 64 << 10];
    let mut at = 0u64;
    loop {
        match fs.write(f, at, &chunk) {
            Ok(n) if n == chunk.len() => at += n as u64,
            Ok(n) => {
                at += n as u64;
                break;
            }
            Err(e) => {
                assert_eq!(e.errno(), libc::ENOSPC, "{e}");
                break;
            }
        }
    }
    assert!(at > 4 << 20, "only {at} bytes fit on an 8 MiB disk");
    assert_eq!(fs.statfs().expect("statfs").free_blocks, 0);
    let g = create(&mut fs, "small");
    fs.unlink(ROOT_INO, b"small").expect("unlink on a full disk");
    let _ = g;
    fs.unlink(ROOT_INO, b"big").expect("unlink the big file");
    check_groups(&mut fs);
}

/// Regression: a tail grown to a whole block by a truncate upwards kept the
/// bytes the disk held past its fragments (the block was reread at its new
/// size once the inode already had the new one).
#[test]
fn a_tail_grown_by_extending_the_size_reads_zeros_past_the_old_end() {
    let (disk, mut fs) = fresh(16 << 20, Integrity::Async);
    // Leave non-zero bytes on disk where the next file's tail will live.
    let junk = create(&mut fs, "junk");
    fs.write(junk, 0, &vec![0xbd; 256 << 10]).expect("write junk");
    fs.sync().expect("sync");
    fs.unlink(ROOT_INO, b"junk").expect("unlink");
    fs.sync().expect("sync");
    let f = create(&mut fs, "f");
    fs.write(f, 0, &pattern(1, 1500)).expect("write a tail");
    fs.sync().expect("sync");
    let mut fs = remount(&disk, fs, Integrity::Async);
    fs.setattr(f, &SetAttr { size: Some(20_000), ..SetAttr::default() }).expect("extend");
    let mut want = pattern(1, 1500);
    want.resize(20_000, 0);
    assert!(fs.read(f, 0, 30_000).expect("read") == want, "old disk bytes showed past the end");
    let mut fs = remount(&disk, fs, Integrity::Async);
    assert!(fs.read(f, 0, 30_000).expect("read") == want, "after a remount");
}

/// Regression: a write covering whole blocks of a file read each block
/// from the disk first when it was not cached (a read-modify-write that
/// 4.4BSD's ffs_write does only for a write shorter than a block), which
/// halved FFS's bandwidth for overwrites larger than the cache.
#[test]
fn overwriting_whole_blocks_reads_none_of_them() {
    let disk = Arc::new(CountingDisk::new(MemDisk::new(64 << 20)));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 4 << 20, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    // A cache that holds the whole file: with a smaller one, blocks still
    // being written back may push the indirect block out, and its re-reads
    // (as many as the write-back thread's timing makes) are not the point.
    let options = MountOptions { cache_bytes: 8 << 20, ..options(Integrity::Async) };
    let mut fs = FileSystem::new(Ffs::mount(dev.clone(), options.clone()).expect("mount"));
    let ino = create(&mut fs, "big");
    let size = 2 << 20;
    fs.write(ino, 0, &pattern(1, size)).expect("write");
    fs.unmount().expect("unmount");

    // Nothing of the file is cached now.
    let mut fs = FileSystem::new(Ffs::mount(dev, options).expect("mount again"));
    let before = disk.bytes_read();
    fs.write(ino, 0, &pattern(2, size)).expect("overwrite");
    let read = disk.bytes_read() - before;
    // The inode and the indirect block may be read; no data block is.
    assert!(read <= 4 * 8192, "{read} bytes read to overwrite {size} bytes of whole blocks");
    assert_eq!(fs.read(ino, 0, size).expect("read"), pattern(2, size));
}

/// Regression: an inode in an inode-table block that lazy initialisation
/// had just zeroed reached the disk (a create in sync mode, an fsync in
/// async mode) while the cylinder group on disk still said that block was
/// never initialised. fsck reads no slot past that mark, so after a power
/// cut the new file's entry named a "free" inode and the file was lost,
/// though the create (or the fsync) had returned.
#[test]
fn an_inode_on_disk_is_always_below_its_groups_initialised_mark_on_disk() {
    for integrity in Integrity::ALL {
        let (disk, mut fs) = fresh(16 << 20, integrity);
        // Root is slot 2 of the first table block (32 inodes of 256 bytes);
        // the 40th file opens the second block.
        let mut last = 0;
        for i in 0..40 {
            last = create(&mut fs, &format!("f{i}"));
        }
        fs.write(last, 0, b"durable").expect("write");
        if integrity != Integrity::Sync {
            fs.fsync(last, false).expect("fsync");
        }
        drop(fs);
        let mut sb = fslab::ffs::mkfs::read_superblock(disk.as_ref()).expect("superblock");
        if matches!(integrity, Integrity::Journal | Integrity::JournalSync) {
            // The journal's inode is in the log: home once replayed, as
            // the next mount (or fsck) replays it.
            fslab::ffs::journal::replay(disk.as_ref(), &sb).expect("replay");
            sb = fslab::ffs::mkfs::read_superblock(disk.as_ref()).expect("superblock");
        }
        let geo = sb.geometry;
        let mut block = vec![0u8; geo.block_size as usize];
        disk.read_at(geo.byte_offset(geo.inode_block_addr(last)), &mut block).expect("read");
        let at = geo.inode_offset_in_block(last);
        let on_disk =
            fslab::format::inode::Inode::decode(&block[at..at + 256]).expect("the inode is on disk");
        assert_eq!(on_disk.ino, last, "{integrity:?}");
        let group = fslab::ffs::mkfs::read_group(disk.as_ref(), &sb, geo.ino_group(last)).expect("group");
        assert!(
            group.initialised_inodes() > geo.ino_slot(last),
            "{integrity:?}: inode {last} was written but its group on disk has initialised only {} slots",
            group.initialised_inodes()
        );
    }
}

/// Regression: in sync mode a tail that had to move to grow (4.4BSD
/// `ffs_realloccg`) gave its old fragments back at once, before the inode
/// pointing at the new place was on the disk; the same write could take
/// them for another block and an fdatasync write there, so a power cut
/// left the file's synced tail overwritten. Every crash state of the
/// sequence must show the tail as synced.
#[test]
fn a_moved_tail_keeps_its_old_fragments_until_the_inode_has_left_them() {
    let (crash, mut fs) = sync_fs_on_a_crash_disk();
    let ino = create(&mut fs, "foo");
    let old = pattern(1, 12_000);
    fs.write(ino, 0, &old).expect("write");
    // Something after foo's tail, so that it cannot grow in place.
    let other = create(&mut fs, "other");
    fs.write(other, 0, &pattern(2, 3000)).expect("write");
    fs.sync().expect("sync");
    let synced = crash.events();
    fs.write(ino, 40_000, &pattern(3, 3000)).expect("write");
    fs.fsync(ino, true).expect("fdatasync");
    drop(fs);
    for state in crash.crash_states(200, 7).filter(|s| s.cut >= synced) {
        let image = state.disk;
        let (geo, inode) = inode_on(&image, ino);
        let mut tail = vec![0u8; 12_000 - 8192];
        image.read_at(geo.byte_offset(inode.direct[1].get()), &mut tail).expect("read");
        assert!(tail == old[8192..], "{}: foo's synced bytes 8192..12000 are overwritten", state.description);
    }
}

/// A 4 MiB FFS with 1 MiB groups in sync mode, on a disk that records
/// every write for crash states.
fn sync_fs_on_a_crash_disk() -> (disk::CrashDisk, FileSystem<Ffs>) {
    let crash = disk::CrashDisk::over(MemDisk::new(4 << 20));
    let dev: Arc<dyn BlockDevice> = Arc::new(crash.clone());
    let mkfs = MkfsOptions { group_size: 1 << 20, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    (crash, FileSystem::new(Ffs::mount(dev, options(Integrity::Sync)).expect("mount")))
}

/// The geometry of `image` and inode `ino` as it is on it.
fn inode_on(image: &MemDisk, ino: Ino) -> (fslab::ffs::geometry::Geometry, fslab::format::inode::Inode) {
    let geo = fslab::ffs::mkfs::read_superblock(image).expect("superblock").geometry;
    let mut slot = [0u8; 256];
    let at = geo.byte_offset(geo.inode_block_addr(ino)) + geo.inode_offset_in_block(ino) as u64;
    image.read_at(at, &mut slot).expect("read");
    (geo, fslab::format::inode::Inode::decode(&slot).expect("inode"))
}

/// Regression: in sync mode a truncate that left a file's last block a
/// shorter tail gave the fragments past the new tail back (when the size
/// changed, in `update`) without the inode that no longer holds them
/// reaching the disk first; another file took them and an fsync wrote
/// there, so a power cut left the first file's synced bytes overwritten
/// by the second's.
#[test]
fn a_tail_shrunk_by_a_truncate_keeps_its_fragments_until_the_inode_has_left_them() {
    let (crash, mut fs) = sync_fs_on_a_crash_disk();
    let ino = create(&mut fs, "foo");
    let old = pattern(1, 12_000);
    fs.write(ino, 0, &old).expect("write");
    fs.sync().expect("sync");
    let synced = crash.events();
    fs.setattr(ino, &SetAttr { size: Some(1000), ..SetAttr::default() }).expect("truncate");
    let other = create(&mut fs, "new");
    fs.write(other, 0, &pattern(2, 6000)).expect("write");
    fs.fsync(other, false).expect("fsync");
    drop(fs);
    for state in crash.crash_states(300, 7).filter(|s| s.cut >= synced) {
        let image = state.disk;
        let (geo, inode) = inode_on(&image, ino);
        let mut first = vec![0u8; (inode.attr.size as usize).min(8192)];
        image.read_at(geo.byte_offset(inode.direct[0].get()), &mut first).expect("read");
        let bad = first.iter().enumerate().position(|(o, &b)| b != old[o] && b != 0);
        assert_eq!(bad, None, "{}: foo's synced block 0 holds another file's bytes", state.description);
    }
}

/// Regression: a journal logged a block freed and made again under the
/// same name within one transaction as a diff against the freed block's
/// old contents, though the new block lives elsewhere: replay patched
/// those bytes into whatever the new place held. Here a directory's second
/// block empties (its only entry removed), is freed, and is made again at
/// another address by the next create, which returns durable; after a
/// crash the replayed directory must hold the new name (its block was
/// garbage but for the bytes that differed: the name was lost).
#[test]
fn a_directory_block_freed_and_made_again_replays_whole() {
    for integrity in [Integrity::JournalSync, Integrity::Journal] {
        let (disk, mut fs) = fresh(16 << 20, integrity);
        let dir = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
        // One 250-byte name to a 512-byte chunk: 16 fill the first block,
        // the 17th opens the second.
        let long = |c: char| -> Vec<u8> { std::iter::repeat_n(c as u8, 250).collect() };
        for c in ('a'..='z').take(17) {
            fs.mknod(dir, &long(c), kind::REG | 0o644, 0, ME).expect("create");
        }
        fs.sync().expect("sync");
        fs.unlink(dir, &long('q')).expect("unlink the second block's only name");
        let new = fs.mknod(dir, &long('z'), kind::REG | 0o644, 0, ME).expect("create").ino;
        fs.fsync(new, false).expect("fsync");
        drop(fs); // a crash: what the cache held is gone
        let dev: Arc<dyn BlockDevice> = disk.clone();
        let mut fs = FileSystem::new(Ffs::mount(dev, options(integrity)).expect("replay and mount"));
        let found = fs.lookup(dir, &long('z')).unwrap_or_else(|e| panic!("{integrity:?}: {e}"));
        assert_eq!(found.ino, new, "{integrity:?}");
        for c in ('a'..='p').chain(std::iter::once('z')) {
            fs.lookup(dir, &long(c)).unwrap_or_else(|e| panic!("{integrity:?}: name {c}: {e}"));
        }
        check_groups(&mut fs);
    }
}

/// The same for an indirect block: a file cut to nothing and written again
/// past its direct blocks in one transaction gets a new indirect block at
/// another address, which replay must rebuild whole (its sector checksums
/// included), not patch into that address's old bytes.
#[test]
fn an_indirect_block_freed_and_made_again_replays_whole() {
    for integrity in [Integrity::JournalSync, Integrity::Journal] {
        let (disk, mut fs) = fresh(16 << 20, integrity);
        let f = create(&mut fs, "f");
        let size = 20 * 8192;
        fs.write(f, 0, &pattern(1, size)).expect("write");
        fs.sync().expect("sync");
        fs.setattr(f, &SetAttr { size: Some(0), ..SetAttr::default() }).expect("truncate");
        fs.write(f, 0, &pattern(2, size)).expect("write again");
        let g = create(&mut fs, "g");
        fs.fsync(g, false).expect("fsync");
        drop(fs); // a crash
        let dev: Arc<dyn BlockDevice> = disk.clone();
        let mut fs = FileSystem::new(Ffs::mount(dev, options(integrity)).expect("replay and mount"));
        // The data blocks were never written (a journal orders no data),
        // so only the map is checked: every block readable, none damaged.
        let read = fs.read(f, 0, size).unwrap_or_else(|e| panic!("{integrity:?}: {e}"));
        assert_eq!(read.len(), size, "{integrity:?}");
        check_groups(&mut fs);
    }
}

/// With `journal_data=ordered` (the default) a file's new blocks are
/// durable before the transaction that gives them to it: after a crash
/// the file holds what was written, never what a deleted file left in
/// those blocks. `writeback` (the 2000 paper's journals) shows the old
/// bytes: the check can fail.
#[test]
fn an_ordered_journal_never_shows_a_deleted_files_bytes_after_a_crash() {
    use fslab::ffs::JournalData;
    for integrity in [Integrity::JournalSync, Integrity::Journal] {
        for data in [JournalData::Ordered, JournalData::Writeback] {
            let disk = Arc::new(MemDisk::new(16 << 20));
            let dev: Arc<dyn BlockDevice> = disk.clone();
            let journal = fslab::ffs::JournalKind::File;
            let mkfs = MkfsOptions { group_size: 4 << 20, journal, ..MkfsOptions::default() };
            fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
            let mount = MountOptions { journal_data: data, ..options(integrity) };
            let mut fs = FileSystem::new(Ffs::mount(dev.clone(), mount.clone()).expect("mount"));
            let size = 64 << 10;
            let old = create(&mut fs, "old");
            fs.write(old, 0, &pattern(9, size)).expect("write");
            fs.sync().expect("sync");
            fs.unlink(ROOT_INO, b"old").expect("unlink");
            fs.sync().expect("sync: its blocks free on the disk");
            let new = create(&mut fs, "new");
            fs.write(new, 0, &pattern(1, size)).expect("write");
            let other = create(&mut fs, "other");
            fs.fsync(other, false).expect("fsync: the log holds the new file's blocks");
            drop(fs); // a crash
            let mut fs = FileSystem::new(Ffs::mount(dev, mount).expect("replay and mount"));
            let got = fs.read(new, 0, size).expect("read");
            let stale =
                (0..size).step_by(4096).any(|at| got[at..at + 4096] == pattern(9, size)[at..at + 4096]);
            match data {
                JournalData::Ordered => {
                    assert!(got == pattern(1, size), "{integrity:?}: the file does not hold what was written")
                }
                JournalData::Writeback => assert!(stale, "{integrity:?}: writeback showed no old bytes"),
            }
        }
    }
}

/// A shared stat (`getattr_cached`) answers for a file whose clean inode
/// the inode cache dropped, from the cached inode-table block, what the
/// exclusive stat answers; and not for a file removed. In every mode.
#[test]
fn a_shared_stat_answers_for_an_inode_the_cache_dropped() {
    const FILES: usize = 64;
    for integrity in Integrity::ALL {
        let (_disk, mut fs) = fresh_with(16 << 20, MountOptions { clean_inodes: 8, ..options(integrity) });
        let inos: Vec<Ino> = (0..FILES)
            .map(|i| {
                let ino = create(&mut fs, &format!("f{i}"));
                fs.write(ino, 0, &pattern(i as u64, 100 + i)).expect("write");
                ino
            })
            .collect();
        fs.sync().expect("sync");
        // A new inode after the others were written makes the cache
        // drop all but a few of their clean inodes.
        create(&mut fs, "last");
        let shared: Vec<_> = inos.iter().map(|&ino| fs.getattr_cached(ino)).collect();
        let answered = shared.iter().filter(|a| a.is_some()).count();
        assert_eq!(answered, FILES, "{integrity:?}: shared stats answered");
        for (&ino, answer) in inos.iter().zip(shared) {
            assert_eq!(answer, Some(fs.getattr(ino).expect("getattr")), "{integrity:?}: inode {ino}");
        }
        fs.unlink(ROOT_INO, b"f0").expect("unlink");
        assert_eq!(fs.getattr_cached(inos[0]), None, "{integrity:?}: a removed file");
        fs.unmount().expect("unmount");
    }
}

/// The bytes the buffer cache holds and its buffers.
fn cached_blocks(fs: &FileSystem<Ffs>) -> (u64, u64) {
    let blocks = fs.memory().into_iter().find(|m| m.what == "buffer cache: blocks").expect("blocks counted");
    (blocks.bytes, blocks.entries)
}

#[test]
fn small_files_cached_as_their_fragments_read_and_change_as_whole_blocks() {
    // Tails of one to seven fragments of 8 KiB blocks, and a file with a
    // whole block before its tail.
    let sizes = [1000usize, 2048, 3000, 4096, 5000, 7000, 8191, 8192 + 3000];
    for integrity in Integrity::ALL {
        let (disk, mut fs) =
            fresh_with(16 << 20, MountOptions { cache_bytes: 4 << 20, ..options(integrity) });
        let inos: Vec<Ino> = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                let ino = create(&mut fs, &format!("f{i}"));
                fs.write(ino, 0, &pattern(i as u64, size)).expect("write");
                ino
            })
            .collect();
        fs.sync().expect("sync");
        let (bytes, buffers) = cached_blocks(&fs);
        assert!(
            bytes < buffers * 8192,
            "{integrity:?}: written tails kept whole ({bytes} bytes in {buffers})"
        );
        let mut want: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &s)| pattern(i as u64, s)).collect();
        for (i, &ino) in inos.iter().enumerate() {
            let shared = fs.read_cached(ino, 0, 1 << 16, fslab::ufs::Access::NoAtime);
            assert_eq!(shared.as_ref(), Some(&want[i]), "{integrity:?}: shared read of file {i}");
            assert_eq!(fs.read(ino, 0, 1 << 16).expect("read"), want[i], "{integrity:?}: file {i}");
        }

        // Changed in the middle, appended past the tail's fragments, and
        // extended with a hole: the zeros a short buffer stands for must
        // be there, and nothing past them.
        for (i, &ino) in inos.iter().enumerate() {
            let w = &mut want[i];
            fs.write(ino, 100, b"middle").expect("overwrite");
            w[100..106].copy_from_slice(b"middle");
            let end = w.len() as u64;
            fs.write(ino, end + 700, b"after a gap").expect("append");
            w.resize(w.len() + 700, 0);
            w.extend_from_slice(b"after a gap");
            assert_eq!(fs.read(ino, 0, 1 << 16).expect("read"), *w, "{integrity:?}: file {i} changed");
        }
        fs.sync().expect("sync");
        let mut fs = remount(&disk, fs, integrity);
        for (i, &ino) in inos.iter().enumerate() {
            // Read from the device: cached as fragments, then grown.
            assert_eq!(fs.read(ino, 0, 1 << 16).expect("read"), want[i], "{integrity:?}: file {i} remounted");
            let size = want[i].len() as u64;
            fs.setattr(ino, &SetAttr { size: Some(size + 3000), ..SetAttr::default() }).expect("extend");
            want[i].resize(size as usize + 3000, 0);
            assert_eq!(fs.read(ino, 0, 1 << 16).expect("read"), want[i], "{integrity:?}: file {i} extended");
        }
        check_groups(&mut fs);
        let mut fs = remount(&disk, fs, integrity);
        for (i, &ino) in inos.iter().enumerate() {
            assert_eq!(
                fs.read(ino, 0, 1 << 16).expect("read"),
                want[i],
                "{integrity:?}: file {i} at the end"
            );
        }
        fs.unmount().expect("unmount");
    }
}
