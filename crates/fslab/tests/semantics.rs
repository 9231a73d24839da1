//! Promises of docs/SEMANTICS.md that no other test checked, through the
//! library on a small in-memory image: each test is named as the promise.

use disk::MemDisk;
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{AtimeOptions, AtimePolicy, Creds, FileSystem, RenameFlags, SetAttr, TimeSet};
use std::sync::Arc;

const CREDS: Creds = Creds { uid: 0, gid: 0 };

/// A fresh 16 MiB image with 64 KiB segments, mounted without a cleaner.
fn fresh() -> (Arc<MemDisk>, FileSystem<Lfs>) {
    let dev = Arc::new(MemDisk::new(16 << 20));
    let options = MkfsOptions { block_size: 4096, segment_size: 64 << 10 };
    fslab::mkfs_lfs(dev.clone(), &options, CREDS).expect("mkfs");
    let fs = mount(&dev);
    (dev, fs)
}

fn mount(dev: &Arc<MemDisk>) -> FileSystem<Lfs> {
    FileSystem::new(Lfs::mount(dev.clone(), MountOptions::default()).expect("mount"))
}

/// "Half a segment of the reserve is kept for metadata only: unlink,
/// rmdir, rename, mkdir still work when file data has filled the disk."
#[test]
fn names_still_change_when_file_data_has_filled_the_disk() {
    let (_dev, mut fs) = fresh();
    let dir = fs.mkdir(ROOT_INO, b"d", 0o755, CREDS).expect("mkdir").ino;
    let block = vec![7u8; 4096];
    let mut files = Vec::new();
    'fill: for n in 0.. {
        let ino =
            fs.mknod(ROOT_INO, format!("f{n}").as_bytes(), kind::REG | 0o644, 0, CREDS).expect("create").ino;
        files.push(ino);
        for b in 0..64u64 {
            match fs.write(ino, b * 4096, &block) {
                Ok(_) => {}
                Err(e) if e.errno() == libc::ENOSPC => break 'fill,
                Err(e) => panic!("write: {e}"),
            }
        }
    }
    assert!(files.len() > 10, "the disk filled after {} files", files.len());
    fs.mkdir(ROOT_INO, b"made-when-full", 0o755, CREDS).expect("mkdir on a full disk");
    fs.rename(ROOT_INO, b"f0", dir, b"moved", RenameFlags::default()).expect("rename on a full disk");
    fs.rmdir(ROOT_INO, b"made-when-full").expect("rmdir on a full disk");
    fs.unlink(dir, b"moved").expect("unlink on a full disk");
    fs.unmount().expect("unmount");
}

/// "Timestamps have nanosecond resolution. With `noatime`, reads do not
/// update atime."
#[test]
fn times_keep_their_nanoseconds_and_noatime_reads_leave_atime_alone() {
    let (dev, mut fs) = fresh();
    fs.set_atime_options(AtimeOptions::NOATIME);
    let ino = fs.mknod(ROOT_INO, b"f", kind::REG | 0o644, 0, CREDS).expect("create").ino;
    fs.write(ino, 0, b"data").expect("write");
    let at = 1_700_000_000_123_456_789;
    let change =
        SetAttr { atime: Some(TimeSet::At(at)), mtime: Some(TimeSet::At(at + 1)), ..SetAttr::default() };
    fs.setattr(ino, &change).expect("utimensat");
    fs.read(ino, 0, 4).expect("read");
    fs.unmount().expect("unmount");
    let mut fs = mount(&dev);
    fs.read(ino, 0, 4).expect("read after remount");
    let attr = fs.getattr(ino).expect("stat").attr;
    assert_eq!((attr.atime, attr.mtime), (at, at + 1), "nanoseconds kept, atime untouched by reads");
    fs.unmount().expect("unmount");
}

/// "With `relatime` a read updates an access time that is not after the
/// last modification or change (or is a day old), with `strictatime` every
/// read; the new access time is an ordinary inode change, kept by the next
/// checkpoint."
#[test]
fn reads_update_atime_as_relatime_and_strictatime_say_and_it_survives_a_remount() {
    let (dev, mut fs) = fresh();
    fs.set_atime_options(AtimeOptions::RELATIME);
    let ino = fs.mknod(ROOT_INO, b"f", kind::REG | 0o644, 0, CREDS).expect("create").ino;
    fs.write(ino, 0, b"data").expect("write");
    let old = 1_600_000_000_000_000_000;
    let change = SetAttr { atime: Some(TimeSet::At(old)), ..SetAttr::default() };
    fs.setattr(ino, &change).expect("utimensat");
    let atime = |fs: &mut FileSystem<Lfs>| fs.getattr(ino).expect("stat").attr;
    fs.read(ino, 0, 4).expect("read");
    let first = atime(&mut fs);
    assert!(first.atime > first.ctime && first.atime > first.mtime, "relatime: an old atime is updated");
    fs.read(ino, 0, 4).expect("read again");
    assert_eq!(atime(&mut fs).atime, first.atime, "relatime: an atime after the last change stays");
    fs.readdir(ROOT_INO, 0, 100).expect("readdir");
    assert_eq!(atime(&mut fs).atime, first.atime, "a listing of the root is not a read of the file");
    fs.set_atime_options(AtimeOptions { policy: AtimePolicy::Always, directories: true });
    fs.read(ino, 0, 4).expect("read with strictatime");
    let strict = atime(&mut fs).atime;
    assert!(strict > first.atime, "strictatime: every read");
    fs.unmount().expect("unmount");
    let mut fs = mount(&dev);
    assert_eq!(fs.getattr(ino).expect("stat").attr.atime, strict, "kept across a remount");
    fs.unmount().expect("unmount");
}

/// "fallocate allocates only the holes of its range": blocks a
/// `FALLOC_FL_KEEP_SIZE` call put past the end of the file are not
/// allocated again by a second call or by `posix_fallocate` (mode 0) over
/// the same range, which take no space and cannot fail for want of it —
/// on either layout.
#[test]
fn fallocate_over_blocks_kept_past_the_end_takes_no_more_space() {
    fn run<S: fslab::storage::StorageManager>(mut fs: FileSystem<S>, what: &str) {
        let f = fs.mknod(ROOT_INO, b"f", kind::REG | 0o644, 0, CREDS).expect("create").ino;
        let st = fs.statfs().expect("statfs");
        let (free, bs) = (st.free_blocks, u64::from(st.block_size));
        // Most of what is free: twice would not fit.
        let len = free * 6 / 10 * bs;
        fs.fallocate(f, 0, len, libc::FALLOC_FL_KEEP_SIZE).expect("first");
        let after = fs.statfs().expect("statfs").free_blocks;
        assert!(after < free - free / 2, "{what}: the first call took {} of {free} blocks", free - after);
        fs.fallocate(f, 0, len, libc::FALLOC_FL_KEEP_SIZE).unwrap_or_else(|e| panic!("{what}: again: {e}"));
        fs.fallocate(f, 0, len, 0).unwrap_or_else(|e| panic!("{what}: mode 0: {e}"));
        assert_eq!(fs.getattr(f).expect("getattr").attr.size, len, "{what}");
        let last = fs.statfs().expect("statfs").free_blocks;
        assert!(
            last + 8 >= after,
            "{what}: {} more blocks taken by calls that had none to allocate",
            after - last
        );
        assert_eq!(fs.read(f, len - bs, bs as usize).expect("read"), vec![0u8; bs as usize], "{what}");
        fs.unmount().expect("unmount");
    }
    let (_dev, lfs) = fresh();
    run(lfs, "LFS");
    let dev = Arc::new(MemDisk::new(16 << 20));
    fslab::mkfs_ffs(dev.clone(), &fslab::ffs::MkfsOptions::default(), CREDS).expect("mkfs");
    let ffs = fslab::ffs::Ffs::mount(dev, fslab::ffs::MountOptions::default()).expect("mount");
    run(FileSystem::new(ffs), "FFS");
}

/// "A call refused for want of space changes nothing": a preallocation of
/// the largest file there can be, far past the disk, is refused with
/// ENOSPC before anything is allocated (and before any list of its blocks
/// is made: a terabyte-sized range once ran the daemon out of memory).
#[test]
fn fallocate_of_the_largest_file_is_refused_for_space_at_once() {
    let (_dev, mut fs) = fresh();
    let f = fs.mknod(ROOT_INO, b"f", kind::REG | 0o644, 0, CREDS).expect("create").ino;
    let free = fs.statfs().expect("statfs").free_blocks;
    let largest = fslab::storage::StorageManager::max_file_size(fs.storage());
    for mode in [0, libc::FALLOC_FL_KEEP_SIZE, libc::FALLOC_FL_ZERO_RANGE] {
        let refused = fs.fallocate(f, 0, largest, mode).expect_err("a range past the disk");
        assert_eq!(refused.errno(), libc::ENOSPC, "mode {mode:#x}: {refused}");
    }
    assert_eq!(fs.statfs().expect("statfs").free_blocks, free);
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 0);
    fs.unmount().expect("unmount");
}

/// "A device error makes the mount read-only; what was synced is safe":
/// a checkpoint whose superblock write fails counts as such an error. A
/// file fsynced after it must either fail to sync or survive a crash; it
/// used to sync, into log that the checkpoint on disk did not lead to.
#[test]
fn a_failed_checkpoint_makes_the_mount_read_only_and_loses_no_later_fsync() {
    let dev = Arc::new(MemDisk::new(16 << 20));
    let options = MkfsOptions { block_size: 4096, segment_size: 64 << 10 };
    fslab::mkfs_lfs(dev.clone(), &options, CREDS).expect("mkfs");
    let faulty = Arc::new(disk::FaultyDisk::new(dev.clone()));
    let mut fs = FileSystem::new(Lfs::mount(faulty.clone(), MountOptions::default()).expect("mount"));
    let sb = fs.storage().superblock();
    let next = ((sb.checkpoint.serial + 1) % u64::from(sb.ncopies).min(2)) as usize;
    let at = sb.copy_offset(next);
    faulty.fail_writes(at..at + 512, 1);
    let a = fs.mknod(ROOT_INO, b"a", kind::REG | 0o644, 0, CREDS).expect("create a").ino;
    fs.write(a, 0, b"before").expect("write a");
    assert!(fs.sync().is_err(), "the superblock write failed");
    assert!(
        fs.storage().writer_failure().is_some(),
        "the mount carries on as if the checkpoint were written"
    );
    let b = fs
        .mknod(ROOT_INO, b"b", kind::REG | 0o644, 0, CREDS)
        .and_then(|b| fs.write(b.ino, 0, b"after").map(|_| b.ino))
        .and_then(|b| fs.fsync(b, false).map(|_| b));
    std::mem::forget(fs);
    let image = Arc::new(MemDisk::from_bytes(dev.snapshot()));
    let mut fs = mount(&image);
    if b.is_ok() {
        let b = fs.lookup(ROOT_INO, b"b").expect("b was fsynced").ino;
        assert_eq!(fs.read(b, 0, 100).expect("read b"), b"after");
    }
    fs.unmount().expect("unmount");
}

/// "Every acknowledged write can be written": overwrites accepted until a
/// full disk (no cleaner) refuses the next, then every file fsynced on its
/// own — each fsync a partial segment with a summary and an inode block of
/// its own — all succeed, and the data is there after a remount.
#[test]
fn fsyncing_file_after_file_on_a_full_disk_writes_every_acknowledged_write() {
    let (dev, mut fs) = fresh();
    let mut files = Vec::new();
    for i in 0..700 {
        let f =
            fs.mknod(ROOT_INO, format!("f{i}").as_bytes(), kind::REG | 0o644, 0, CREDS).expect("create").ino;
        fs.write(f, 0, &[1u8; 8192]).expect("write");
        files.push(f);
    }
    // The rest of the disk filled, then 900 blocks of it (whole segments:
    // no cleaner is needed to reuse them) given back.
    let filler = fs.mknod(ROOT_INO, b"filler", kind::REG | 0o644, 0, CREDS).expect("create").ino;
    let mut blocks = 0u64;
    while fs.write(filler, blocks * 4096, &[9u8; 4096]).is_ok() {
        blocks += 1;
    }
    fs.sync().expect("sync");
    let keep = blocks.saturating_sub(900) * 4096;
    fs.setattr(filler, &SetAttr { size: Some(keep), ..SetAttr::default() }).expect("truncate");
    fs.sync().expect("sync");
    let mut accepted = 0;
    for &f in &files {
        match fs.write(f, 0, &[2u8; 4096]) {
            Ok(_) => accepted += 1,
            Err(e) if e.errno() == libc::ENOSPC => break,
            Err(e) => panic!("overwrite: {e}"),
        }
    }
    assert!(accepted > 300, "only {accepted} overwrites before ENOSPC");
    let mut expected = Vec::new();
    for &f in &files {
        fs.fsync(f, false).unwrap_or_else(|e| panic!("fsync after {accepted} overwrites: {e}"));
        expected.push(fs.read(f, 0, 1).expect("read")[0]);
    }
    fs.unmount().expect("unmount");
    let mut fs = mount(&dev);
    for (i, &f) in files.iter().enumerate() {
        assert_eq!(fs.read(f, 0, 1).expect("read")[0], expected[i], "f{i}");
    }
    fs.unmount().expect("unmount");
}

/// "A full disk can always be emptied": changes of attributes repeated on
/// a full disk with no cleaner (chmod and fsync, file after file) stop for
/// want of space before they take what unlink needs.
#[test]
fn attribute_changes_on_a_full_disk_leave_room_to_empty_it() {
    let (_dev, mut fs) = fresh();
    let mut files = Vec::new();
    for i in 0.. {
        let name = format!("f{i}");
        let made = fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, CREDS);
        let Ok(f) = made else { break };
        files.push(name);
        if fs.write(f.ino, 0, &[3u8; 4096]).is_err() {
            break;
        }
    }
    fs.sync().expect("sync");
    'churn: for round in 0..20u32 {
        for name in &files {
            let Ok(f) = fs.lookup(ROOT_INO, name.as_bytes()) else { continue };
            let mode = SetAttr { mode: Some(0o600 + round % 2 * 0o44), ..SetAttr::default() };
            match fs.setattr(f.ino, &mode).and_then(|_| fs.fsync(f.ino, false)) {
                Ok(_) => {}
                Err(e) if e.errno() == libc::ENOSPC => break 'churn,
                Err(e) => panic!("chmod: {e}"),
            }
        }
    }
    for name in &files {
        fs.unlink(ROOT_INO, name.as_bytes()).unwrap_or_else(|e| panic!("unlink {name}: {e}"));
    }
    fs.sync().expect("sync");
    fs.unmount().expect("unmount");
}

/// "A call refused for want of space changes nothing": fallocate of
/// everything statfs shows free either allocates it all or fails at once,
/// never halfway with blocks written past the end of the file.
#[test]
fn fallocate_of_what_statfs_shows_free_succeeds_whole_or_changes_nothing() {
    let (_dev, mut fs) = fresh();
    let f = fs.mknod(ROOT_INO, b"f", kind::REG | 0o644, 0, CREDS).expect("create").ino;
    let st = fs.statfs().expect("statfs");
    let len = st.free_blocks * u64::from(st.block_size);
    match fs.fallocate(f, 0, len, 0) {
        Ok(()) => assert_eq!(fs.getattr(f).expect("getattr").attr.size, len),
        Err(e) => {
            assert_eq!(e.errno(), libc::ENOSPC, "{e}");
            assert_eq!(fs.getattr(f).expect("getattr").attr.size, 0);
            assert_eq!(
                fs.statfs().expect("statfs").free_blocks,
                st.free_blocks,
                "blocks taken by a refused call"
            );
        }
    }
    fs.unmount().expect("unmount");
}

/// Roll-forward bounds the inode numbers it takes from the log by the
/// inode map's size; a newer ifile met on the way (a directory
/// operation's write, no checkpoint) may have grown the map. A file
/// numbered past the checkpoint's map, fsynced after that write, keeps its
/// data across a crash.
#[test]
fn an_inode_numbered_past_the_checkpoints_map_is_rolled_forward() {
    let disk = Arc::new(MemDisk::new(32 << 20));
    let c = Creds::default();
    fslab::mkfs_lfs(disk.clone(), &MkfsOptions { block_size: 4096, segment_size: 64 << 10 }, c)
        .expect("mkfs");
    let lfs = Lfs::mount(disk.clone(), MountOptions { cache_bytes: 32 << 20, ..MountOptions::default() })
        .expect("mount");
    let mut fs = FileSystem::new(lfs);
    // The mount's first write checkpoints (its serial numbers' jump);
    // none follows.
    let a = fs.mknod(ROOT_INO, b"a", kind::REG | 0o644, 0, c).expect("create").ino;
    fs.fsync(a, false).expect("fsync");
    let checkpoints = fs.storage().stats().checkpoints;
    let many = 2000;
    for i in 0..many {
        fs.mknod(ROOT_INO, format!("f{i}").as_bytes(), kind::REG | 0o644, 0, c).expect("create");
    }
    let z = fs.mknod(ROOT_INO, b"z", kind::REG | 0o644, 0, c).expect("create").ino;
    assert!(z > many, "z's number {z} lies past the first map block");
    for i in 0..many {
        fs.unlink(ROOT_INO, format!("f{i}").as_bytes()).expect("unlink");
    }
    fs.fsync(ROOT_INO, false).expect("fsync the directory");
    fs.write(z, 0, b"fsynced").expect("write");
    fs.fsync(z, false).expect("fsync");
    assert_eq!(fs.storage().stats().checkpoints, checkpoints, "no checkpoint since the creates");
    let crashed = Arc::new(MemDisk::from_bytes(disk.snapshot()));
    drop(fs);
    let mut fs =
        FileSystem::new(Lfs::mount(crashed, MountOptions::default()).expect("mount the crash image"));
    let found = fs.lookup(ROOT_INO, b"z").expect("z").ino;
    assert_eq!(found, z);
    assert_eq!(fs.read(z, 0, 100).expect("read"), b"fsynced");
}
