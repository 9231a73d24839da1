//! Soft updates (`Integrity::Softdep`) on a memory disk: nothing a namespace
//! operation does is written before it returns, everything is after a sync,
//! and an image a crash left behind mounts without fsck.

use disk::{BlockDevice, CountingDisk, MemDisk};
use fslab::ffs::{Ffs, Integrity, MkfsOptions, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

const ME: Creds = Creds { uid: 0, gid: 0 };

fn options() -> MountOptions {
    MountOptions { cache_bytes: 1 << 20, integrity: Integrity::Softdep, ..MountOptions::default() }
}

fn fresh(bytes: u64) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    let disk = Arc::new(MemDisk::new(bytes));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 4 << 20, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount"));
    (disk, fs)
}

fn create(fs: &mut FileSystem<Ffs>, dir: Ino, name: &str) -> Ino {
    fs.mknod(dir, name.as_bytes(), kind::REG | 0o644, 0, ME).expect("create").ino
}

#[test]
fn files_and_directories_made_and_removed_read_back_after_a_remount() {
    let (disk, mut fs) = fresh(32 << 20);
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    for i in 0..200u32 {
        let ino = create(&mut fs, d, &format!("f{i}"));
        fs.write(ino, 0, &vec![i as u8 | 1; 1000 + i as usize * 97]).expect("write");
    }
    for i in (0..200u32).step_by(3) {
        fs.unlink(d, format!("f{i}").as_bytes()).expect("unlink");
    }
    fs.rename(d, b"f1", ROOT_INO, b"moved", Default::default()).expect("rename");
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount again"));
    let moved = fs.lookup(ROOT_INO, b"moved").expect("moved").ino;
    let buf = fs.read(moved, 0, 4096).expect("read");
    assert_eq!(buf.len(), 1097);
    assert!(buf.iter().all(|&b| b == 1));
    for i in 2..200u32 {
        let found = fs.lookup(d, format!("f{i}").as_bytes());
        assert_eq!(found.is_ok(), i % 3 != 0, "f{i}");
        if let Ok(found) = found {
            let buf = fs.read(found.ino, 0, 1 << 20).expect("read");
            assert_eq!(buf.len(), 1000 + i as usize * 97, "f{i} size");
            assert!(buf.iter().all(|&b| b == i as u8 | 1), "f{i} contents");
        }
    }
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_create_writes_nothing_before_it_returns() {
    let disk = Arc::new(MemDisk::new(16 << 20));
    let counting = Arc::new(CountingDisk::new(disk));
    let dev: Arc<dyn BlockDevice> = counting.clone();
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), ME).expect("mkfs");
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount"));
    let before = counting.writes().len();
    for i in 0..50 {
        create(&mut fs, ROOT_INO, &format!("f{i}"));
    }
    assert_eq!(counting.writes().len(), before, "creates are delayed");
    fs.sync().expect("sync");
    assert!(counting.writes().len() > before);
}

/// Through FUSE every file the kernel has looked up is an orphan between
/// its unlink and the kernel's forget: syncs in between settle, and the
/// space comes back at the last unpin.
#[test]
fn files_unlinked_while_in_use_sync_and_are_freed_at_their_last_unpin() {
    let (disk, mut fs) = fresh(32 << 20);
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    fs.sync().expect("sync");
    let free_before = fs.statfs().expect("statfs").free_blocks;
    let mut inos = Vec::new();
    for i in 0..120u32 {
        let ino = create(&mut fs, d, &format!("f{i}"));
        fs.write(ino, 0, &vec![7u8; 3000 + i as usize * 50]).expect("write");
        fs.pin(ino);
        inos.push(ino);
    }
    fs.sync().expect("sync");
    for i in 0..120u32 {
        fs.unlink(d, format!("f{i}").as_bytes()).expect("unlink");
        if i % 40 == 39 {
            fs.sync().expect("sync with orphans");
        }
    }
    for (i, &ino) in inos.iter().enumerate() {
        fs.unpin(ino, 1).expect("unpin");
        if i % 30 == 29 {
            fs.sync().expect("sync while orphans are freed");
        }
    }
    fs.sync().expect("sync");
    assert_eq!(fs.statfs().expect("statfs").free_blocks, free_before);
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount again"));
    assert_eq!(fs.statfs().expect("statfs").free_blocks, free_before);
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
}

/// A removed tree clears on the disk one level a round (a directory's slot
/// only once its own name is gone there): a sync of a deep one goes on as
/// long as each round settles more.
#[test]
fn a_deep_tree_removed_syncs_and_gives_its_space_back() {
    let (disk, mut fs) = fresh(32 << 20);
    fs.sync().expect("sync");
    let free_before = fs.statfs().expect("statfs").free_blocks;
    let mut chain = vec![ROOT_INO];
    for depth in 0..40 {
        let parent = *chain.last().expect("a parent");
        let d = fs.mkdir(parent, format!("d{depth}").as_bytes(), 0o755, ME).expect("mkdir").ino;
        let f = create(&mut fs, d, "f");
        fs.write(f, 0, &[depth as u8; 2000]).expect("write");
        chain.push(d);
    }
    fs.sync().expect("sync");
    for depth in (0..40).rev() {
        let (parent, dir) = (chain[depth], chain[depth + 1]);
        fs.unlink(dir, b"f").expect("unlink");
        fs.rmdir(parent, format!("d{depth}").as_bytes()).expect("rmdir");
    }
    fs.sync().expect("a sync of a removed deep tree settles");
    assert_eq!(fs.statfs().expect("statfs").free_blocks, free_before);
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount again"));
    assert_eq!(fs.statfs().expect("statfs").free_blocks, free_before);
}

/// More removed inodes than write-back keeps in memory: each write-back
/// stored them all, rolled back (their removals not yet durable), and left
/// them dirty for the next — a write of every inode block at every call.
/// Write-back now settles them with a sync; the writes stay a few per file.
#[test]
fn removing_more_files_than_write_back_holds_writes_each_block_a_few_times() {
    let disk = Arc::new(MemDisk::new(256 << 20));
    let counting = Arc::new(CountingDisk::new(disk));
    let dev: Arc<dyn BlockDevice> = counting.clone();
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), ME).expect("mkfs");
    let options = MountOptions { cache_bytes: 8 << 20, ..options() };
    let mut fs = FileSystem::new(Ffs::mount(dev, options).expect("mount"));
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    const FILES: u32 = 17_500;
    for i in 0..FILES {
        create(&mut fs, d, &format!("{i}"));
    }
    fs.sync().expect("sync");
    let before = counting.writes().len();
    for i in 0..FILES {
        fs.unlink(d, format!("{i}").as_bytes()).expect("unlink");
    }
    fs.sync().expect("sync");
    let writes = counting.writes().len() - before;
    assert!(writes < FILES as usize, "{writes} writes to remove {FILES} files");
}

/// Soft updates keep a link count raised on the disk while a removal is
/// not yet durable, so the count on the disk may pass the effective one.
/// `link` is judged by the effective count (FreeBSD, whose on-disk field is
/// 16 bits, answers EMLINK there): the on-disk field has 32 bits, so a
/// name removed and another made at LINK_MAX works, and only the effective
/// count's limit is EMLINK.
#[test]
fn at_link_max_a_name_removed_makes_room_for_another_before_the_removal_is_durable() {
    let (disk, mut fs) = fresh(64 << 20);
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    let f = create(&mut fs, d, "f0");
    let max = fslab::ufs::LINK_MAX;
    for i in 1..max {
        fs.link(f, d, format!("f{i}").as_bytes()).expect("link");
    }
    fs.sync().expect("sync");
    let errno = |r: fslab::Result<fslab::format::inode::Inode>| r.expect_err("EMLINK").errno();
    assert_eq!(errno(fs.link(f, d, b"one-too-many")), libc::EMLINK);
    fs.unlink(d, b"f7").expect("unlink");
    fs.link(f, d, b"again").expect("a link where a removal is not yet durable");
    assert_eq!(errno(fs.link(f, d, b"one-too-many")), libc::EMLINK);
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount again"));
    assert_eq!(fs.getattr(f).expect("getattr").attr.nlink, max);
    assert!(fs.lookup(d, b"again").is_ok() && fs.lookup(d, b"f7").is_err());
}

#[test]
fn a_file_rename_writes_nothing_and_renames_of_renames_and_exchanges_still_settle() {
    let disk = Arc::new(CountingDisk::new(MemDisk::new(32 << 20)));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 4 << 20, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount"));
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    for i in 0..100 {
        create(&mut fs, d, &format!("old{i}"));
    }
    fs.sync().expect("sync");
    // A pack: every file to a new name, each taking the space the last
    // one's old name left. No rename of a file writes before it returns
    // (the old name is held back on the disk by rollbacks, not by syncs).
    disk.clear_writes();
    let flushes = disk.flushes();
    for i in 0..100 {
        fs.rename(d, format!("old{i}").as_bytes(), d, format!("{i}").as_bytes(), Default::default())
            .expect("rename");
    }
    assert!(disk.flushes() - flushes < 100, "renames settled by syncs: {} flushes", disk.flushes() - flushes);
    // A rename of a name not yet durable, a rename back, an exchange of a
    // name not yet durable, and a rename over a file just made.
    fs.rename(d, b"1", d, b"one", Default::default()).expect("rename again");
    fs.rename(d, b"one", d, b"1", Default::default()).expect("rename back");
    let exchange = fslab::ufs::RenameFlags { exchange: true, ..Default::default() };
    fs.rename(d, b"2", d, b"3", exchange).expect("exchange");
    create(&mut fs, d, "fresh");
    fs.rename(d, b"4", d, b"fresh", Default::default()).expect("rename over a new file");
    fs.sync().expect("every rename settles");
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount again"));
    let names: Vec<Vec<u8>> = fs.readdir(d, 0, 1000).expect("readdir").into_iter().map(|e| e.name).collect();
    assert_eq!(names.len(), 2 + 100, "{} names", names.len());
    assert!(names.contains(&b"fresh".to_vec()) && !names.contains(&b"4".to_vec()));
    assert!(names.contains(&b"1".to_vec()) && !names.contains(&b"one".to_vec()));
    assert!(!names.iter().any(|n| n.starts_with(b"old")));
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

#[test]
fn an_fsync_writes_its_files_chain_not_everything_dirty() {
    let mem = Arc::new(MemDisk::new(64 << 20));
    let disk = Arc::new(CountingDisk::new(mem.clone()));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 4 << 20, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount"));
    let busy = fs.mkdir(ROOT_INO, b"busy", 0o755, ME).expect("mkdir").ino;
    for i in 0..300 {
        let f = create(&mut fs, busy, &format!("f{i}"));
        fs.write(f, 0, &[7u8; 3000]).expect("write");
    }
    let quiet = fs.mkdir(ROOT_INO, b"quiet", 0o755, ME).expect("mkdir").ino;
    let f = create(&mut fs, quiet, "kept");
    fs.write(f, 0, b"kept by fsync").expect("write");
    disk.clear_writes();
    fs.fsync(f, false).expect("fsync");
    let writes = disk.writes().len();
    // The file, its inode, its directory and that one's name in the root,
    // their inodes and the groups, a few rounds over: not 300 files' data
    // and inodes.
    assert!(writes < 60, "{writes} writes for one fsync");
    // What fsync covered survives a crash now.
    std::mem::forget(fs);
    let image: Arc<dyn BlockDevice> = Arc::new(MemDisk::from_bytes(mem.snapshot()));
    let mut fs = FileSystem::new(Ffs::mount(image, options()).expect("mount the crash image"));
    let quiet = fs.lookup(ROOT_INO, b"quiet").expect("quiet").ino;
    let f = fs.lookup(quiet, b"kept").expect("kept").ino;
    assert_eq!(fs.read(f, 0, 100).expect("read"), b"kept by fsync");
}

/// A truncated file's inode (or indirect block) reaches the disk still
/// naming a block the truncate freed, after a sound file in the same inode
/// block is fsynced; the freed block, once reused by a new file and
/// fsynced, must not be named by the truncated one on disk (a crash then
/// mounts with one block in two files). Whole: pointers in the inode (the
/// case that failed); to 13 blocks: pointers in an indirect block that
/// was clean.
#[test]
fn a_block_freed_by_a_truncate_is_not_named_on_disk_when_it_is_reused() {
    for (blocks, keep) in [(2u64, 0u64), (40, 13)] {
        let (mem, mut fs) = fresh(32 << 20);
        let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
        let f = create(&mut fs, d, "f");
        fs.write(f, 0, &vec![1u8; blocks as usize * 4096]).expect("write");
        let g = create(&mut fs, d, "g");
        fs.write(g, 0, &[2u8; 100]).expect("write");
        fs.sync().expect("sync");
        let size = Some(keep * 4096);
        fs.setattr(f, &fslab::ufs::SetAttr { size, ..Default::default() }).expect("truncate");
        fs.fsync(g, false).expect("fsync g");
        for _ in 0..3 {
            fs.tick().expect("tick");
        }
        // As many blocks as the truncate freed, up to eight: the allocator
        // finds them there.
        let h_bytes = (blocks - keep).min(8) as usize * 4096;
        let h = create(&mut fs, d, "h");
        fs.write(h, 0, &vec![3u8; h_bytes]).expect("write h");
        fs.fsync(h, false).expect("fsync h");
        std::mem::forget(fs);
        let image: Arc<dyn BlockDevice> = Arc::new(MemDisk::from_bytes(mem.snapshot()));
        let mut fs = FileSystem::new(Ffs::mount(image, options()).expect("mount the crash image"));
        let d = fs.lookup(ROOT_INO, b"d").expect("d").ino;
        let f = fs.lookup(d, b"f").expect("f");
        let got = fs.read(f.ino, 0, 1 << 20).expect("read f");
        // Its old bytes, or zeros where the truncate took them: never h's.
        assert!(got.iter().all(|&b| b != 3), "{blocks} blocks to {keep}: f holds another file's bytes");
        let h = fs.lookup(d, b"h").expect("h").ino;
        assert_eq!(fs.read(h, 0, 1 << 20).expect("read h"), vec![3u8; h_bytes]);
        fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A link count raised by `link` must be on disk before the new name is:
/// here the inode was stored (by a truncate) before the link raised its
/// count, and a later fsync writes its inode block and the directory's.
/// Two names with a count of one would free the file at the first unlink.
#[test]
fn a_new_name_never_reaches_the_disk_before_the_link_count_that_counts_it() {
    let (mem, mut fs) = fresh(32 << 20);
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    let f = create(&mut fs, d, "f");
    fs.write(f, 0, &[1u8; 3 * 4096]).expect("write");
    fs.sync().expect("sync");
    fs.setattr(f, &fslab::ufs::SetAttr { size: Some(4096), ..Default::default() }).expect("truncate");
    fs.link(f, d, b"g").expect("link");
    let h = create(&mut fs, d, "h");
    fs.fsync(h, false).expect("fsync h");
    std::mem::forget(fs);
    let image: Arc<dyn BlockDevice> = Arc::new(MemDisk::from_bytes(mem.snapshot()));
    let mut fs = FileSystem::new(Ffs::mount(image, options()).expect("mount the crash image"));
    let d = fs.lookup(ROOT_INO, b"d").expect("d").ino;
    let names = [b"f".as_slice(), b"g"].iter().filter(|n| fs.lookup(d, n).is_ok()).count() as u32;
    let nlink = fs.getattr(f).expect("f").attr.nlink;
    assert!(nlink >= names, "{names} names on disk, a link count of {nlink}");
}
