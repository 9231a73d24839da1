//! The journal (`Integrity::Journal`, `JournalSync`) on a memory disk:
//! what it logs, replay after a crash, and the log's space reused.

use disk::{BlockDevice, MemDisk};
use fslab::ffs::{Ffs, Integrity, JournalData, JournalKind, MkfsOptions, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

const ME: Creds = Creds { uid: 0, gid: 0 };

fn options(integrity: Integrity) -> MountOptions {
    MountOptions { cache_bytes: 1 << 20, integrity, ..MountOptions::default() }
}

fn fresh(bytes: u64, journal: JournalKind, integrity: Integrity) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    fresh_with(bytes, journal, options(integrity))
}

fn fresh_with(bytes: u64, journal: JournalKind, options: MountOptions) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    let disk = Arc::new(MemDisk::new(bytes));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 4 << 20, journal, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let fs = FileSystem::new(Ffs::mount(dev, options).expect("mount"));
    (disk, fs)
}

fn create(fs: &mut FileSystem<Ffs>, dir: Ino, name: &str) -> Ino {
    fs.mknod(dir, name.as_bytes(), kind::REG | 0o644, 0, ME).expect("create").ino
}

/// The image as a crash now would leave it if every write issued reached
/// the disk: a copy of the disk, the mount forgotten.
fn crash(disk: &MemDisk, fs: FileSystem<Ffs>) -> Arc<MemDisk> {
    std::mem::forget(fs);
    Arc::new(MemDisk::from_bytes(disk.snapshot()))
}

#[test]
fn a_crash_after_fsync_replays_to_the_files_made() {
    for journal in [JournalKind::File, JournalKind::Wafs] {
        let (disk, mut fs) = fresh(16 << 20, journal, Integrity::Journal);
        let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
        let f = create(&mut fs, d, "f");
        fs.write(f, 0, b"hello").expect("write");
        fs.fsync(f, false).expect("fsync");
        let image = crash(&disk, fs);
        let sb = fslab::ffs::mkfs::read_superblock(image.as_ref()).expect("superblock");
        eprintln!("{}", fslab::ffs::journal::describe(image.as_ref(), &sb).expect("describe"));
        let dev: Arc<dyn BlockDevice> = image.clone();
        let mut fs = FileSystem::new(Ffs::mount(dev, options(Integrity::Journal)).expect("mount replays"));
        let d = fs.lookup(ROOT_INO, b"d").expect("d").ino;
        let f = fs.lookup(d, b"f").expect("f").ino;
        assert_eq!(fs.read(f, 0, 100).expect("read"), b"hello");
        fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
        fs.unmount().expect("unmount");
    }
}

#[test]
fn the_log_wraps_many_times_and_a_crash_at_the_end_replays_to_the_last_fsync() {
    // Each operation its own transaction: about 300 bytes logged per
    // create and as many per remove, so 20,000 operations go round a 1 MiB
    // log several times.
    // With ordered data each file's 100 bytes are written and durable
    // before the log that names them is; with `writeback` nothing orders
    // them. Either way the log fills until checkpoints must make room.
    for data in [JournalData::Ordered, JournalData::Writeback] {
        the_log_wraps_with(data);
    }
}

fn the_log_wraps_with(data: JournalData) {
    let unbatched = MountOptions { journal_batch: 1, journal_data: data, ..options(Integrity::Journal) };
    let (disk, mut fs) = fresh_with(24 << 20, JournalKind::Wafs, unbatched);
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    for round in 0..10u32 {
        for i in 0..1000u32 {
            let f = create(&mut fs, d, &format!("r{round}-{i}"));
            fs.write(f, 0, &[round as u8 + 1; 100]).expect("write");
        }
        if round > 0 {
            for i in 0..1000u32 {
                fs.unlink(d, format!("r{}-{i}", round - 1).as_bytes()).expect("unlink");
            }
        }
    }
    let stats = fs.storage().journal_stats().expect("a journal mount");
    assert!(stats.bytes_logged > 4 << 20, "the log went round: {stats:?}");
    assert!(stats.checkpoints > 0, "{data:?}: checkpoints made room: {stats:?}");
    assert_eq!(stats.data_logged, 0, "{data:?}: an asynchronous commit logs no data: {stats:?}");
    let last = fs.lookup(d, b"r9-999").expect("last").ino;
    fs.fsync(last, false).expect("fsync");
    let image = crash(&disk, fs);
    let dev: Arc<dyn BlockDevice> = image.clone();
    let mut fs = FileSystem::new(
        Ffs::mount(dev, MountOptions { journal_data: data, ..options(Integrity::Journal) })
            .expect("mount replays"),
    );
    let names = fs.readdir(d, 0, 5000).expect("readdir");
    let files: Vec<_> = names.iter().filter(|e| e.name != b"." && e.name != b"..").collect();
    assert_eq!(files.len(), 1000, "the last round's files, and only those");
    assert!(files.iter().all(|e| e.name.starts_with(b"r9-")));
    let f = fs.lookup(d, b"r9-500").expect("r9-500").ino;
    assert_eq!(fs.read(f, 0, 200).expect("read"), vec![10u8; 100]);
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

#[test]
fn journal_sync_makes_a_create_durable_when_it_returns() {
    let (disk, mut fs) = fresh(16 << 20, JournalKind::File, Integrity::JournalSync);
    create(&mut fs, ROOT_INO, "made");
    fs.mkdir(ROOT_INO, b"dir", 0o755, ME).expect("mkdir");
    fs.rename(ROOT_INO, b"made", ROOT_INO, b"moved", Default::default()).expect("rename");
    let image = crash(&disk, fs);
    let dev: Arc<dyn BlockDevice> = image.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options(Integrity::JournalSync)).expect("mount replays"));
    assert!(fs.lookup(ROOT_INO, b"moved").is_ok(), "the renamed file");
    assert!(fs.lookup(ROOT_INO, b"made").is_err(), "under one name only");
    assert!(fs.lookup(ROOT_INO, b"dir").is_ok(), "the directory");
    fs.unmount().expect("unmount");
}

#[test]
fn a_journal_mount_of_an_image_without_a_journal_is_refused_by_name() {
    let disk = Arc::new(MemDisk::new(16 << 20));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), ME).expect("mkfs");
    let before = disk.snapshot();
    let err = Ffs::mount(dev.clone(), options(Integrity::Journal)).err().expect("refused");
    assert!(err.to_string().contains("no journal") && err.to_string().contains("--journal"), "{err}");
    // The refusal wrote nothing: the image is not left marked in use, and
    // the next mount, of a mode it has, takes it as cleanly unmounted.
    assert!(disk.snapshot() == before, "the refused mount changed the image");
    FileSystem::new(Ffs::mount(dev, options(Integrity::Sync)).expect("a plain mount"))
        .unmount()
        .expect("unmount");
}

#[test]
fn mkfs_refuses_a_journal_that_does_not_fit_and_a_size_without_a_journal() {
    let too_big = MkfsOptions {
        group_size: 4 << 20,
        journal: JournalKind::File,
        journal_bytes: Some(8 << 20),
        ..MkfsOptions::default()
    };
    let err = fslab::ffs::plan(64 << 20, &too_big).expect_err("refused");
    assert!(err.to_string().contains("does not fit in a cylinder group"), "{err}");
    let tiny =
        MkfsOptions { journal: JournalKind::Wafs, journal_bytes: Some(4096), ..MkfsOptions::default() };
    let err = fslab::ffs::plan(64 << 20, &tiny).expect_err("refused");
    assert!(err.to_string().contains("smaller than the least"), "{err}");
    let stray = MkfsOptions { journal_bytes: Some(1 << 20), ..MkfsOptions::default() };
    assert!(fslab::ffs::plan(64 << 20, &stray).is_err(), "a size needs a journal");
    // The default size (1% of the device) shrinks to fit its group.
    let default = MkfsOptions { journal: JournalKind::File, ..MkfsOptions::default() };
    let sb = fslab::ffs::plan(4 << 30, &default).expect("a default journal on 4 GiB of 32 MiB groups");
    assert!(sb.journal.bytes < 32 << 20 && sb.journal.bytes >= 30 << 20, "{:?}", sb.journal);
}

#[test]
fn a_crash_of_another_mode_on_a_journaled_image_still_asks_for_fsck() {
    let (disk, mut fs) = fresh(16 << 20, JournalKind::File, Integrity::Async);
    create(&mut fs, ROOT_INO, "lost-maybe");
    let image = crash(&disk, fs);
    let dev: Arc<dyn BlockDevice> = image.clone();
    let err = Ffs::mount(dev, options(Integrity::Journal)).err().expect("refused");
    assert_eq!(err.errno(), libc::EUCLEAN, "{err}");
}

#[test]
fn a_superblock_whose_log_lies_over_the_groups_is_refused() {
    let (disk, fs) = fresh(16 << 20, JournalKind::File, Integrity::Journal);
    let mut fs = fs;
    fs.unmount().expect("unmount");
    let mut sb = fslab::ffs::mkfs::read_superblock(disk.as_ref()).expect("superblock");
    // The log moved onto group 0's inode table: a damaged superblock whose
    // checksum still holds must not lead the journal to write there.
    sb.journal.start = sb.geometry.frags_per_block as u64 * 2;
    disk.write_at(0, &sb.encode()).expect("write");
    let err = fslab::ffs::mkfs::read_superblock(disk.as_ref()).expect_err("refused");
    assert!(err.to_string().contains("not where that kind of log lies"), "{err}");
    sb.journal.start = u64::MAX / 2;
    disk.write_at(0, &sb.encode()).expect("write");
    assert!(fslab::ffs::mkfs::read_superblock(disk.as_ref()).is_err(), "a region past the device");
}

#[test]
fn removing_a_file_many_times_the_logs_size_fits_one_transaction() {
    // A 1 MiB log holds 65,536 free records: a 600 MiB file has 76,800
    // blocks, each freed on its own by the truncate.
    let disk = Arc::new(MemDisk::new(768 << 20));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs =
        MkfsOptions { journal: JournalKind::Wafs, journal_bytes: Some(1 << 20), ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let mut fs = FileSystem::new(Ffs::mount(dev, options(Integrity::Journal)).expect("mount"));
    let f = create(&mut fs, ROOT_INO, "big");
    let chunk = vec![7u8; 1 << 20];
    for i in 0..600u64 {
        fs.write(f, i << 20, &chunk).expect("write");
    }
    let free_before = fs.statfs().expect("statfs").free_blocks;
    fs.unlink(ROOT_INO, b"big").expect("a removal larger than the log");
    fs.sync().expect("sync");
    let image = crash(&disk, fs);
    let dev: Arc<dyn BlockDevice> = image.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options(Integrity::Journal)).expect("mount replays"));
    assert!(fs.lookup(ROOT_INO, b"big").is_err());
    assert!(fs.statfs().expect("statfs").free_blocks > free_before + 70_000, "the space came back");
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

/// A file system of `bytes` with its journal on a log device of
/// `log_bytes`; returns both memory disks and the mount.
fn fresh_with_log(
    bytes: u64,
    log_bytes: u64,
    integrity: Integrity,
) -> (Arc<MemDisk>, Arc<MemDisk>, FileSystem<Ffs>) {
    let (data, log) = (Arc::new(MemDisk::new(bytes)), Arc::new(MemDisk::new(log_bytes)));
    let mkfs = MkfsOptions { group_size: 4 << 20, journal: JournalKind::Device, ..MkfsOptions::default() };
    let pair = fslab::mkfs_ffs_with_log(data.clone(), log.clone(), "/dev/log", &mkfs, ME).expect("mkfs");
    let fs = FileSystem::new(Ffs::mount(pair, options(integrity)).expect("mount"));
    (data, log, fs)
}

#[test]
fn a_log_on_its_own_device_takes_the_logs_writes_and_replays_after_a_crash() {
    let (data, log, mut fs) = fresh_with_log(16 << 20, 2 << 20, Integrity::JournalSync);
    let sb = fs.storage().superblock();
    assert_eq!(sb.journal.kind, JournalKind::Device);
    assert_eq!(sb.journal.device.path(), "/dev/log");
    assert_eq!(sb.journal.bytes, (2 << 20) - 4096, "the device after its header");
    let before = log.snapshot();
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir");
    create(&mut fs, d.ino, "f");
    assert_ne!(log.snapshot(), before, "journal=sync logged the creates on the log device");
    // The power fails on both devices at once, with everything issued on
    // them: the data device alone holds no trace of the creates yet.
    std::mem::forget(fs);
    let (data, log) =
        (Arc::new(MemDisk::from_bytes(data.snapshot())), Arc::new(MemDisk::from_bytes(log.snapshot())));
    let alone = Ffs::mount(data.clone(), options(Integrity::JournalSync)).err().expect("no log, no mount");
    assert!(
        alone.to_string().contains("journal_device") && alone.to_string().contains("/dev/log"),
        "{alone}"
    );
    let pair = fslab::ffs::log_device::attach(data, Some(log)).expect("attach");
    let mut fs = FileSystem::new(Ffs::mount(pair, options(Integrity::JournalSync)).expect("mount replays"));
    let d = fs.lookup(ROOT_INO, b"d").expect("d").ino;
    fs.lookup(d, b"f").expect("f");
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

#[test]
fn a_log_device_that_is_not_the_file_systems_is_refused() {
    let (data, _, mut fs) = fresh_with_log(16 << 20, 2 << 20, Integrity::Journal);
    fs.unmount().expect("unmount");
    // Another file system's log device: a different identity.
    let (_, other_log, mut other) = fresh_with_log(16 << 20, 2 << 20, Integrity::Journal);
    other.unmount().expect("unmount");
    let err = fslab::ffs::log_device::attach(data.clone(), Some(other_log)).err().expect("refused");
    assert!(err.to_string().contains("not the file system's log device"), "{err}");
    // A blank device, and a log given to an image without one.
    let err =
        fslab::ffs::log_device::attach(data, Some(Arc::new(MemDisk::new(2 << 20)))).err().expect("refused");
    assert!(err.to_string().contains("not an fslab log device"), "{err}");
    let (plain, _) = fresh(16 << 20, JournalKind::Wafs, Integrity::Journal);
    let err =
        fslab::ffs::log_device::attach(plain, Some(Arc::new(MemDisk::new(2 << 20)))).err().expect("refused");
    assert!(err.to_string().contains("no journal on a log device"), "{err}");
    // A file system that does not fill its device: the log device sits
    // after the file system, over the device's unused end.
    let (_, _, mut odd) = fresh_with_log((18 << 20) + 12_288, 2 << 20, Integrity::JournalSync);
    odd.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir");
    odd.unmount().expect("unmount");
    // mkfs: a log device too small for the least journal.
    let mkfs = MkfsOptions { journal: JournalKind::Device, ..MkfsOptions::default() };
    let err = fslab::ffs::plan_with_log(16 << 20, Some(512 << 10), &mkfs).expect_err("too small");
    assert!(err.to_string().contains("does not fit the log device"), "{err}");
    assert!(fslab::ffs::plan(16 << 20, &mkfs).is_err(), "a device journal needs its device");
}

/// Operations that need not be durable share a transaction (up to
/// `journal_batch` of them), logged once for all; a crash keeps a batch
/// whole or not at all, and what fsync covered survives.
#[test]
fn a_batch_of_operations_is_one_transaction_kept_whole_by_a_crash() {
    let run = |batch: u32| {
        let options = MountOptions { journal_batch: batch, ..options(Integrity::Journal) };
        let (disk, mut fs) = fresh_with(16 << 20, JournalKind::Wafs, options.clone());
        let before = fs.storage().journal_stats().expect("a journal mount");
        for i in 0..32 {
            create(&mut fs, ROOT_INO, &format!("kept{i}"));
        }
        fs.fsync(ROOT_INO, false).expect("fsync");
        let kept = fs.storage().journal_stats().expect("a journal mount");
        // Fewer than a batch: no transaction is logged until a commit
        // point, so a crash keeps none of them.
        for i in 0..(batch.min(64) - 1) {
            create(&mut fs, ROOT_INO, &format!("lost{i}"));
        }
        let image = crash(&disk, fs);
        let dev: Arc<dyn BlockDevice> = image;
        let mut fs = FileSystem::new(Ffs::mount(dev, options).expect("mount replays"));
        for i in 0..32 {
            fs.lookup(ROOT_INO, format!("kept{i}").as_bytes()).expect("what fsync covered survives");
        }
        let lost = (0..(batch.min(64) - 1))
            .filter(|i| fs.lookup(ROOT_INO, format!("lost{i}").as_bytes()).is_ok())
            .count();
        fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
        fs.unmount().expect("unmount");
        (kept.transactions - before.transactions, lost)
    };
    let (one_each, _) = run(1);
    let (batched, lost) = run(16);
    assert!(one_each >= 32, "each create its own transaction: {one_each} transactions");
    assert!(batched <= 3, "32 creates in batches of 16 made {batched} transactions");
    assert_eq!(lost, 0, "a crash kept {lost} creates of a batch never committed");
}

#[test]
fn a_background_write_back_leaves_logged_inode_blocks_for_the_sync() {
    // 240 files of 64 KiB in 8 directories: several write-behind rounds
    // past their 4 MiB threshold.
    let disk = Arc::new(disk::CountingDisk::new(MemDisk::new(64 << 20)));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 8 << 20, journal: JournalKind::File, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let clock = Arc::new(disk::VirtualClock::new());
    // Data unordered, so that it waits in the cache for write-behind (an
    // ordered journal writes it at each commit, before write-behind is due).
    let roomy = MountOptions {
        cache_bytes: 32 << 20,
        clock: fslab::time::TimeSource::virtual_clock(clock.clone()),
        journal_data: fslab::ffs::JournalData::Writeback,
        ..options(Integrity::Journal)
    };
    let mut fs = FileSystem::new(Ffs::mount(dev, roomy).expect("mount"));
    let geo = fs.storage().superblock().geometry;
    let in_inode_table = |offset: u64, len: u64| {
        (0..geo.ncg).any(|cg| {
            let start = geo.byte_offset(geo.group_base(cg) + u64::from(geo.inode_table_offset()));
            let end = start + u64::from(geo.inode_table_blocks()) * u64::from(geo.block_size);
            offset < end && start < offset + len
        })
    };
    let dirs: Vec<Ino> = (0..8)
        .map(|d| fs.mkdir(ROOT_INO, format!("d{d}").as_bytes(), 0o755, ME).expect("mkdir").ino)
        .collect();
    fs.sync().expect("sync");
    disk.clear_writes();
    let mut rounds = 0;
    for i in 0..240 {
        let f = create(&mut fs, dirs[i % 8], &format!("f{i}"));
        fs.write(f, 0, &[i as u8; 64 << 10]).expect("write");
        if i % 10 == 9 {
            // A second passes: the tick's commit makes the inode blocks
            // durable in the log, and free to go home.
            clock.advance(1_000_000_000);
            fs.tick().expect("tick");
        }
        if fs.write_behind_due() {
            fs.write_behind().expect("write behind");
            rounds += 1;
        }
    }
    let writes = disk.writes();
    assert!(rounds >= 2, "{rounds} write-behind rounds");
    let home: Vec<_> = writes.iter().filter(|&&(o, l)| in_inode_table(o, l)).collect();
    assert!(writes.len() > 10, "the data went out: {} writes", writes.len());
    assert!(home.is_empty(), "inode blocks written by write-behind (the log has them): {home:?}");
    // The sync writes them home, and a crash after it needs nothing from the log.
    fs.sync().expect("sync");
    assert!(disk.writes().iter().any(|&(o, l)| in_inode_table(o, l)));
    for (i, &d) in dirs.iter().enumerate() {
        assert_eq!(fs.readdir(d, 0, usize::MAX).expect("readdir").len(), 2 + 30, "d{i}");
    }
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

/// On a fresh image the first transaction is number 0, and the blocks a
/// remove frees in it wait for it to be durable like any other: released
/// before (here by a tick within its first second), a new file's indirect
/// block took one of them, and replay, finding the free logged after the
/// new contents in the same transaction, dropped them.
#[test]
fn blocks_freed_in_the_first_transaction_wait_for_it_to_be_durable() {
    let (disk, mut fs) = fresh(16 << 20, JournalKind::File, Integrity::Journal);
    let a = create(&mut fs, ROOT_INO, "a");
    fs.write(a, 0, &vec![1u8; 1 << 20]).expect("write a");
    fs.unlink(ROOT_INO, b"a").expect("unlink a");
    fs.tick().expect("tick");
    let b = create(&mut fs, ROOT_INO, "b");
    let data: Vec<u8> = (0..1u32 << 20).map(|i| (i / 4096) as u8 ^ 0x5a).collect();
    fs.write(b, 0, &data).expect("write b");
    fs.fsync(b, false).expect("fsync b");
    let image = crash(&disk, fs);
    let dev: Arc<dyn BlockDevice> = image;
    let mut fs = FileSystem::new(Ffs::mount(dev, options(Integrity::Journal)).expect("mount replays"));
    let b = fs.lookup(ROOT_INO, b"b").expect("b").ino;
    assert!(fs.read(b, 0, 1 << 20).expect("read b") == data, "b's contents after replay");
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

/// An FFS of `bytes` with 4 KiB blocks and fragments and a 1 MiB log in
/// its own region, mounted `integrity=journal` with realloc off (so two
/// files written in turn keep their blocks interleaved).
fn small_log(bytes: u64) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    let disk = Arc::new(MemDisk::new(bytes));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions {
        block_size: 4096,
        fragment_size: 4096,
        journal: JournalKind::Wafs,
        journal_bytes: Some(1 << 20),
        ..MkfsOptions::default()
    };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let options = MountOptions { realloc: Some(false), ..options(Integrity::Journal) };
    (disk, FileSystem::new(Ffs::mount(dev, options).expect("mount")))
}

/// Mounts `image` again after a crash (replaying the log) and checks its
/// groups.
fn replayed(image: Arc<MemDisk>) -> FileSystem<Ffs> {
    let dev: Arc<dyn BlockDevice> = image;
    let mut fs = FileSystem::new(Ffs::mount(dev, options(Integrity::Journal)).expect("mount replays"));
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs
}

fn largest_transaction(fs: &mut FileSystem<Ffs>) -> u64 {
    fs.storage().journal_stats().expect("a journal").largest_transaction
}

#[test]
fn a_fragmented_file_larger_than_the_log_is_truncated_and_removed_in_steps() {
    // Two files written a block each in turn share no run of blocks, so
    // each of their 66,000 blocks is a free record of its own: 1 MiB of
    // them, more than the log holds in one transaction.
    const BLOCKS: u64 = 66_000;
    let (disk, mut fs) = small_log(640 << 20);
    let (a, b) = (create(&mut fs, ROOT_INO, "a"), create(&mut fs, ROOT_INO, "b"));
    let block = vec![5u8; 4096];
    for i in 0..BLOCKS {
        fs.write(a, i * 4096, &block).expect("write a");
        fs.write(b, i * 4096, &block).expect("write b");
    }
    fs.sync().expect("sync");
    let free_before = fs.statfs().expect("statfs").free_blocks;
    let truncate = fslab::ufs::SetAttr { size: Some(0), ..Default::default() };
    fs.setattr(a, &truncate).expect("a truncate of more blocks than the log holds records for");
    fs.unlink(ROOT_INO, b"b").expect("a removal of as many");
    fs.mknod(ROOT_INO, b"after", kind::REG | 0o644, 0, ME).expect("the journal still takes operations");
    fs.sync().expect("sync");
    assert!(largest_transaction(&mut fs) <= 512 << 10, "every transaction fits half the log");
    let mut fs = replayed(crash(&disk, fs));
    assert_eq!(fs.getattr(a).expect("a").attr.size, 0);
    assert!(fs.lookup(ROOT_INO, b"b").is_err() && fs.lookup(ROOT_INO, b"after").is_ok());
    assert!(
        fs.statfs().expect("statfs").free_blocks >= free_before + 2 * BLOCKS - 100,
        "the space came back"
    );
    fs.unmount().expect("unmount");
}

#[test]
fn a_crash_between_the_steps_of_a_removal_leaves_an_orphan_that_mount_frees() {
    let (disk, mut fs) = small_log(128 << 20);
    let f = create(&mut fs, ROOT_INO, "big");
    let chunk = vec![3u8; 1 << 20];
    for i in 0..40u64 {
        fs.write(f, i << 20, &chunk).expect("write");
    }
    fs.sync().expect("sync");
    let free_before = fs.statfs().expect("statfs").free_blocks;
    // Open, so that the removal leaves an orphan; then the steps that free
    // all but the last 16 MiB, made durable; then the crash.
    fs.pin(f);
    fs.unlink(ROOT_INO, b"big").expect("unlink");
    let before = fs.storage().journal_stats().expect("journal").transactions;
    fslab::storage::free_blocks_in_steps(fs.storage(), f).expect("steps").wait().expect("wait");
    let steps = fs.storage().journal_stats().expect("journal").transactions - before;
    assert!(steps >= 2, "40 MiB in steps of 16 MiB: {steps} transactions");
    fs.sync().expect("sync");
    let mut fs = replayed(crash(&disk, fs));
    assert!(fs.lookup(ROOT_INO, b"big").is_err());
    assert!(fs.statfs().expect("statfs").free_blocks >= free_before + 40 * 256, "mount freed the rest");
    fs.unmount().expect("unmount");
}

#[test]
fn a_fallocate_larger_than_one_transaction_is_logged_in_steps_and_a_large_collapse_refused() {
    let (disk, mut fs) = small_log(256 << 20);
    let f = create(&mut fs, ROOT_INO, "f");
    let before = fs.storage().journal_stats().expect("journal").transactions;
    fs.fallocate(f, 0, 100 << 20, 0).expect("fallocate of 100 MiB through a 1 MiB log");
    let steps = fs.storage().journal_stats().expect("journal").transactions - before;
    assert!(steps >= 7, "100 MiB in steps of 16 MiB: {steps} transactions");
    assert!(largest_transaction(&mut fs) <= 512 << 10);
    let err = fs.fallocate(f, 0, 4096, libc::FALLOC_FL_COLLAPSE_RANGE).expect_err("moves 25,600 blocks");
    assert_eq!(err.errno(), libc::EFBIG);
    fs.sync().expect("sync");
    let mut fs = replayed(crash(&disk, fs));
    assert_eq!(fs.getattr(f).expect("f").attr.size, 100 << 20, "nothing collapsed");
    fs.unmount().expect("unmount");
}

/// A 32 MiB image with a `file` journal on a disk that counts its writes
/// and flushes, mounted with `integrity`.
fn counted(integrity: Integrity) -> (Arc<disk::CountingDisk<MemDisk>>, FileSystem<Ffs>) {
    let disk = Arc::new(disk::CountingDisk::new(MemDisk::new(32 << 20)));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 8 << 20, journal: JournalKind::File, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let fs = FileSystem::new(Ffs::mount(dev, options(integrity)).expect("mount"));
    (disk, fs)
}

/// A small file's new blocks go into the log with the transaction that
/// gives them to it (decision 0022): a `journal=sync` create after another
/// file's write waits for one flush, not two (the data's, then the log's),
/// and after a crash the written file holds its bytes, replayed from the log.
#[test]
fn a_small_files_new_blocks_are_logged_and_a_create_after_it_waits_for_one_flush() {
    let (disk, mut fs) = counted(Integrity::JournalSync);
    let mut flushes = Vec::new();
    for i in 0..20u8 {
        let f = create(&mut fs, ROOT_INO, &format!("f{i}"));
        fs.write(f, 0, &[i + 1; 1024]).expect("write");
        let before = disk.flushes();
        create(&mut fs, ROOT_INO, &format!("g{i}"));
        flushes.push(disk.flushes() - before);
    }
    assert!(flushes.iter().all(|&n| n == 1), "flushes per create after a write: {flushes:?}");
    let stats = fs.storage().journal_stats().expect("a journal");
    assert!(stats.data_logged >= 20 * 1024, "the files' bytes in the log: {stats:?}");
    let image = crash(disk.inner(), fs);
    let mut fs = replayed(image);
    for i in 0..20u8 {
        let f = fs.lookup(ROOT_INO, format!("f{i}").as_bytes()).expect("f").ino;
        assert_eq!(fs.read(f, 0, 2048).expect("read"), vec![i + 1; 1024], "f{i}");
    }
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
}

/// A block whose image the log holds is logged again at every change
/// until the checkpoint passes that image: otherwise replay would write
/// the older image over newer bytes an fsync had made durable at home.
#[test]
fn a_logged_block_changed_in_place_replays_to_its_newest_bytes() {
    for integrity in [Integrity::JournalSync, Integrity::Journal] {
        let (disk, mut fs) = fresh(16 << 20, JournalKind::File, integrity);
        let f = create(&mut fs, ROOT_INO, "f");
        fs.write(f, 0, &[1; 1024]).expect("write");
        fs.fsync(f, false).expect("fsync: the log holds the block");
        // Now the block goes home as logged, then changes in place.
        fs.fsync(f, false).expect("fsync: the block at home");
        fs.write(f, 0, &[2; 512]).expect("overwrite");
        fs.fsync(f, false).expect("fsync: the change durable");
        let image = crash(&disk, fs);
        let mut fs = replayed(image);
        let mut want = vec![2u8; 512];
        want.extend_from_slice(&[1; 512]);
        assert_eq!(fs.read(f, 0, 2048).expect("read"), want, "{integrity:?}");
    }
}

/// A logged tail cut shorter (a truncate inside its block) frees the
/// run's last fragments: replay still writes the fragments the file keeps,
/// which never reached home, rather than dropping the whole image.
#[test]
fn a_logged_tail_cut_shorter_keeps_its_first_fragments_after_a_crash() {
    let (disk, mut fs) = fresh(16 << 20, JournalKind::File, Integrity::JournalSync);
    let f = create(&mut fs, ROOT_INO, "f");
    fs.write(f, 0, &[5; 5120]).expect("write");
    create(&mut fs, ROOT_INO, "g");
    let cut = fslab::ufs::SetAttr { size: Some(2048), ..fslab::ufs::SetAttr::default() };
    fs.setattr(f, &cut).expect("truncate");
    create(&mut fs, ROOT_INO, "h");
    let image = crash(&disk, fs);
    let mut fs = replayed(image);
    assert_eq!(fs.read(f, 0, 8192).expect("read"), vec![5; 2048]);
}

/// An inserted range gives a logged block another number in its file at
/// the same place: it stays logged under the new one, so a later change
/// made durable in place is not undone by replay of the older image.
#[test]
fn a_logged_block_moved_by_an_insert_range_replays_to_its_newest_bytes() {
    let (disk, mut fs) = fresh(16 << 20, JournalKind::File, Integrity::Journal);
    let f = create(&mut fs, ROOT_INO, "f");
    fs.write(f, 0, &[1; 8192]).expect("write");
    fs.fsync(f, false).expect("fsync: the log holds the block");
    fs.fsync(f, false).expect("fsync: the block at home");
    fs.fallocate(f, 0, 8192, libc::FALLOC_FL_INSERT_RANGE).expect("insert");
    fs.fsync(f, false).expect("fsync: the insert committed");
    fs.write(f, 8192, &[2; 8192]).expect("overwrite the moved block");
    fs.fsync(f, false).expect("fsync: the change durable");
    let image = crash(&disk, fs);
    let mut fs = replayed(image);
    let got = fs.read(f, 0, 16384).expect("read");
    assert_eq!(got.len(), 16384);
    assert!(got[..8192].iter().all(|&b| b == 0), "the inserted range reads as zeros");
    assert!(got[8192..].iter().all(|&b| b == 2), "the moved block holds its newest bytes");
}

/// An fsync of a small new file writes the log once, its data in it, and
/// one flush covers it: the block goes home later, not also under the
/// lock (decision 0022). After a crash the file holds what was written.
#[test]
fn an_fsync_of_a_small_new_file_is_one_log_write_and_one_flush() {
    let (disk, mut fs) = counted(Integrity::Journal);
    for i in 0..10u8 {
        let f = create(&mut fs, ROOT_INO, &format!("f{i}"));
        fs.write(f, 0, &[i + 1; 3000]).expect("write");
        disk.clear_writes();
        let flushes = disk.flushes();
        fs.fsync(f, false).expect("fsync");
        assert_eq!(disk.flushes() - flushes, 1, "f{i}: flushes");
        assert_eq!(disk.writes().len(), 1, "f{i}: writes {:?}", disk.writes());
    }
    let image = crash(disk.inner(), fs);
    let mut fs = replayed(image);
    for i in 0..10u8 {
        let f = fs.lookup(ROOT_INO, format!("f{i}").as_bytes()).expect("f").ino;
        assert_eq!(fs.read(f, 0, 4096).expect("read"), vec![i + 1; 3000], "f{i}");
    }
}
