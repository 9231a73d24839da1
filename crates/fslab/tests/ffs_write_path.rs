//! The write path under every FFS integrity mode: every write the device
//! sees is one the file system issued through its cache's write-back
//! (cylinder groups and the superblock included, where an integrity mode
//! sees them), and what a synchronous mount promises is left to a ticket
//! its caller waits on.

use disk::{CountingDisk, MemDisk};
use fslab::ffs::{Ffs, Integrity, MkfsOptions, MountOptions};
use fslab::format::ROOT_INO;
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem, SetAttr};
use std::sync::Arc;

/// A fresh FFS image of 32 MiB, as bytes.
fn fresh_image() -> Vec<u8> {
    let dev = Arc::new(MemDisk::new(32 << 20));
    // With a journal, which every mode but the journal's leaves alone.
    let mkfs = MkfsOptions { journal: fslab::ffs::JournalKind::File, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    dev.snapshot()
}

/// Creates, writes past the direct blocks (so indirect blocks come and
/// go), grows a tail, renames, unlinks an open file (the orphan list),
/// fsyncs, syncs and truncates.
fn workload(fs: &mut FileSystem<Ffs>) {
    let creds = Creds::default();
    let dir = fs.mkdir(ROOT_INO, b"d", 0o755, creds).expect("mkdir").ino;
    let big = fs.mknod(dir, b"big", 0o100644, 0, creds).expect("create").ino;
    let block = vec![0x5a_u8; 8192];
    for i in 0..20u64 {
        fs.write(big, i * 8192, &block).expect("write");
    }
    fs.fsync(big, false).expect("fsync");
    let small = fs.mknod(ROOT_INO, b"small", 0o100644, 0, creds).expect("create").ino;
    fs.write(small, 0, b"a tail of a fragment").expect("write");
    fs.write(small, 3000, b"grown to three fragments").expect("write");
    fs.rename(ROOT_INO, b"small", dir, b"moved", Default::default()).expect("rename");
    fs.pin(big);
    fs.unlink(dir, b"big").expect("unlink an open file");
    fs.sync().expect("sync");
    fs.unpin(big, 1).expect("last close");
    fs.setattr(small, &SetAttr { size: Some(3), ..Default::default() }).expect("truncate");
}

#[test]
fn every_write_the_device_sees_went_through_write_back_groups_and_superblock_included() {
    for integrity in Integrity::ALL {
        let disk = Arc::new(CountingDisk::new(MemDisk::from_bytes(fresh_image())));
        let options = MountOptions { integrity, ..MountOptions::default() };
        let mut fs = FileSystem::new(Ffs::mount(disk.clone(), options).expect("mount"));
        let geo = fs.storage().superblock().geometry;
        workload(&mut fs);
        fs.unmount().expect("unmount");
        let writes = disk.writes();
        let stats = fs.storage().stats();
        assert_eq!(
            writes.len() as u64,
            stats.writes,
            "{integrity:?}: {} device writes, {} issued through write-back",
            writes.len(),
            stats.writes
        );
        let wrote = |frag: u64| writes.iter().any(|&(offset, _)| offset == geo.byte_offset(frag));
        assert!(wrote(0), "{integrity:?}: the superblock was written");
        assert!(wrote(geo.cg_addr(0)), "{integrity:?}: the first group was written");
        let mut fs = FileSystem::new(Ffs::mount(disk.clone(), MountOptions::default()).expect("remount"));
        let moved = fs.lookup(ROOT_INO, b"d").and_then(|d| fs.lookup(d.ino, b"moved")).expect("moved");
        assert_eq!(fs.read(moved.ino, 0, 100).expect("read"), b"a t");
        fs.unmount().expect("unmount");
    }
}

#[test]
fn a_synchronous_mount_leaves_what_it_promised_to_a_ticket() {
    let disk = Arc::new(CountingDisk::new(MemDisk::from_bytes(fresh_image())));
    for integrity in Integrity::ALL {
        let options = MountOptions { integrity, ..MountOptions::default() };
        let mut fs = FileSystem::new(Ffs::mount(disk.clone(), options).expect("mount"));
        fs.wait_outside(true);
        let name = format!("{integrity:?}");
        fs.mknod(ROOT_INO, name.as_bytes(), 0o100644, 0, Creds::default()).expect("create");
        let ticket = fs.take_ticket();
        match integrity {
            Integrity::Sync => {
                assert!(ticket.seq() > 0 && !ticket.is_ready(), "the entry's write is left to the caller");
                let before = disk.flushes();
                ticket.wait().expect("durable");
                assert_eq!(disk.flushes(), before + 1, "one barrier makes it durable");
                assert!(ticket.is_ready());
            }
            Integrity::Async => assert!(ticket.is_ready(), "nothing is promised"),
            Integrity::Softdep => {
                assert!(ticket.is_ready(), "soft updates promise nothing synchronous at commit")
            }
            Integrity::Journal => {
                assert!(ticket.is_ready(), "an asynchronous journal promises nothing at commit")
            }
            Integrity::JournalSync => {
                assert!(ticket.seq() > 0 && !ticket.is_ready(), "the log's write is left to the caller");
                let before = disk.flushes();
                ticket.wait().expect("durable");
                assert_eq!(disk.flushes(), before + 1, "one barrier makes it durable");
            }
        }
        fs.wait_outside(false);
        fs.mknod(ROOT_INO, b"waited", 0o100644, 0, Creds::default()).expect("create");
        assert!(fs.take_ticket().is_ready(), "without wait_outside the call waited itself");
        fs.unlink(ROOT_INO, b"waited").expect("unlink");
        fs.unmount().expect("unmount");
    }
}

/// Group commit in `journal=sync`: operations that commit while none of
/// them has waited yet leave their records to the first waiter, which
/// writes the log once and flushes once for all of them; the others find
/// their transactions durable.
#[test]
fn synchronous_journal_operations_committed_together_share_one_log_write_and_one_flush() {
    let disk = Arc::new(CountingDisk::new(MemDisk::from_bytes(fresh_image())));
    let options = MountOptions { integrity: Integrity::JournalSync, ..MountOptions::default() };
    let mut fs = FileSystem::new(Ffs::mount(disk.clone(), options).expect("mount"));
    fs.wait_outside(true);
    let (flushes, writes) = (disk.flushes(), disk.writes().len());
    let tickets: Vec<_> = (0..6)
        .map(|i| {
            fs.mknod(ROOT_INO, format!("f{i}").as_bytes(), 0o100644, 0, Creds::default()).expect("create");
            fs.take_ticket()
        })
        .collect();
    assert!(tickets.iter().all(|t| !t.is_ready()), "each create is left to its waiter");
    for ticket in &tickets {
        ticket.wait().expect("durable");
    }
    assert_eq!(disk.flushes() - flushes, 1, "one flush for the six creates");
    assert_eq!(disk.writes().len() - writes, 1, "one log write for the six creates");
    let stats = fs.storage().journal_stats().expect("a journal mount");
    assert!(stats.transactions >= 6, "each create its own transaction: {stats:?}");
    fs.wait_outside(false);
    fs.unmount().expect("unmount");
}

/// What write-back may not write yet (here the inode-table blocks that new
/// inodes initialised, which wait for their groups) does not make
/// write-behind due again at once: it is due when as much again waits as
/// woke it. Measured from nothing, the held blocks alone kept it due, and
/// every create woke it to scan the cache and write nothing.
#[test]
fn blocks_write_back_must_leave_do_not_keep_write_behind_due() {
    let dev = Arc::new(MemDisk::new(256 << 20));
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), Creds::default()).expect("mkfs");
    let options =
        MountOptions { integrity: Integrity::Async, cache_bytes: 64 << 20, ..MountOptions::default() };
    let mut fs = FileSystem::new(Ffs::mount(dev, options).expect("mount"));
    let creds = Creds::default();
    // 24,000 empty files initialise 750 inode-table blocks (6 MiB of
    // 8 KiB blocks, 32 inodes each), more than the 4 MiB that wakes
    // write-behind.
    let dirs: Vec<_> = (0..24)
        .map(|d| fs.mkdir(ROOT_INO, format!("d{d}").as_bytes(), 0o755, creds).expect("mkdir").ino)
        .collect();
    let mut rounds = 0;
    for i in 0..24_000 {
        fs.mknod(dirs[i % dirs.len()], format!("f{i}").as_bytes(), 0o100644, 0, creds).expect("create");
        if fs.write_behind_due() {
            fs.write_behind().expect("write behind");
            rounds += 1;
        }
    }
    assert!(rounds <= 8, "write-behind ran {rounds} times for 24,000 creates");
    fs.sync().expect("sync");
    assert!(!fs.write_behind_due(), "due after a sync");
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

/// A burst of creates between syncs in a small cache stays within the
/// cache: the inode-table blocks the new inodes initialise go to the disk
/// with their groups once they would hold the cache past its threshold,
/// instead of staying dirty (unevictable) until the next sync while every
/// operation scans the cache for something it may write.
#[test]
fn a_burst_of_creates_in_a_small_cache_stays_within_it() {
    const CACHE: u64 = 4 << 20;
    let mut most = 0;
    creates_sampled(512 << 20, MkfsOptions::default(), CACHE, 40_000, 1000, |fs| {
        most = most.max(memory_of(fs, "buffer cache: blocks").bytes);
    });
    // 40,000 inodes initialise 1,250 inode-table blocks, 10 MiB.
    assert!(most <= 2 * CACHE, "the cache held {most} bytes of blocks with a limit of {CACHE}");
}

/// Makes `files` empty files in 40 directories of a new FFS-async file
/// system on a `disk`-byte device with a `cache`-byte cache, handing the
/// file system to `sample` after every `every` creates; then syncs, checks
/// the cylinder groups and unmounts.
fn creates_sampled(
    disk: u64,
    mkfs: MkfsOptions,
    cache: u64,
    files: usize,
    every: usize,
    mut sample: impl FnMut(&FileSystem<Ffs>),
) {
    let dev = Arc::new(MemDisk::new(disk));
    fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    let options = MountOptions { integrity: Integrity::Async, cache_bytes: cache, ..MountOptions::default() };
    let mut fs = FileSystem::new(Ffs::mount(dev, options).expect("mount"));
    let creds = Creds::default();
    let dirs: Vec<_> = (0..40)
        .map(|d| fs.mkdir(ROOT_INO, format!("d{d}").as_bytes(), 0o755, creds).expect("mkdir").ino)
        .collect();
    for i in 0..files {
        fs.mknod(dirs[i % dirs.len()], format!("f{i}").as_bytes(), 0o100644, 0, creds).expect("create");
        if i % every == every - 1 {
            sample(&fs);
        }
    }
    fs.sync().expect("sync");
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}

/// What `fs` says it spends on `what`.
fn memory_of(fs: &FileSystem<Ffs>, what: &str) -> fslab::memory::MemoryUse {
    fs.memory().into_iter().find(|p| p.what == what).unwrap_or_else(|| panic!("no {what} in memory()"))
}

/// New inode-table blocks that keep the dirty data over the start-write
/// threshold go with their groups then, not once they fill the cache:
/// until they went, every create found the threshold passed and scanned
/// the cache to write nothing (a 256 MiB cache took 10 million creates at
/// 6,600 a second).
#[test]
fn new_inode_blocks_that_hold_write_back_over_its_threshold_go_with_their_groups() {
    // Writes start at 4 MiB dirty; the cache holds 16 MiB.
    let mkfs = MkfsOptions { bytes_per_inode: 4096, ..MkfsOptions::default() };
    let mut most = 0;
    creates_sampled(384 << 20, mkfs, 16 << 20, 80_000, 500, |fs| {
        most = most.max(memory_of(fs, "fresh inode blocks").entries);
    });
    // 80,000 inodes initialise 2,500 blocks of 8 KiB; the threshold is 512.
    assert!(most <= 1024, "{most} new inode-table blocks waited at once");
}

/// A write the device refuses makes the mount read-only until it is
/// mounted again, as LFS's does: later changes fail with EIO rather than
/// pile up in memory where they could never be written, and the tick says
/// so once, not every second.
#[test]
fn a_failed_write_makes_the_mount_read_only() {
    let dev = Arc::new(MemDisk::new(16 << 20));
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), Creds::default()).expect("mkfs");
    let faulty = Arc::new(disk::FaultyDisk::new(dev.clone()));
    let options = MountOptions { cache_bytes: 1 << 20, ..MountOptions::default() };
    let ffs = Ffs::mount(faulty.clone(), options).expect("mount");
    let mut fs = FileSystem::new(ffs);
    let other = fs.mknod(ROOT_INO, b"other", 0o100644, 0, Creds::default()).expect("create").ino;
    fs.write(other, 0, &vec![1u8; 4 << 20]).expect("write other");
    fs.sync().expect("sync");
    let f = fs.mknod(ROOT_INO, b"f", 0o100644, 0, Creds::default()).expect("create").ino;
    fs.write(f, 0, &[7u8; 10_000]).expect("write");
    faulty.fail_writes(0..16 << 20, 1);
    assert!(fs.fsync(f, false).is_err(), "the device refused a write");
    let after = fs.mknod(ROOT_INO, b"g", 0o100644, 0, Creds::default());
    assert_eq!(after.err().map(|e| e.errno()), Some(libc::EIO), "a create after the failure");
    assert!(fs.write(f, 0, b"more").is_err(), "a write after the failure");
    let ticks: Vec<bool> = (0..3).map(|_| fs.tick().is_err()).collect();
    assert!(ticks.iter().filter(|&&e| e).count() <= 1, "ticks: {ticks:?}");
    // Reads go on, and what the device refused is still what they see,
    // however much else passes through the cache: its buffers, marked
    // clean when they were queued, are kept.
    for _ in 0..2 {
        assert_eq!(fs.read(other, 0, 4 << 20).expect("read other"), vec![1u8; 4 << 20]);
    }
    assert_eq!(fs.read(f, 0, 10_000).expect("reads go on"), vec![7u8; 10_000]);
    std::mem::forget(fs);
}

/// A new extended-attribute block, then a link that writes the inode
/// naming it (at once under `sync` and `journal=sync`, later or never
/// under the rest), then a crash: the file has its attribute, or under
/// the lazy modes none, and never unreadable attributes (a block whose
/// contents never reached the disk, or another file's freed one).
#[test]
fn a_crash_after_an_attribute_and_a_link_leaves_the_attribute_or_none() {
    for integrity in Integrity::ALL {
        let mem = Arc::new(MemDisk::from_bytes(fresh_image()));
        let options = MountOptions { integrity, allow_unclean: true, ..MountOptions::default() };
        let mut fs = FileSystem::new(Ffs::mount(mem.clone(), options.clone()).expect("mount"));
        let creds = Creds::default();
        let old = fs.mknod(ROOT_INO, b"old", 0o100644, 0, creds).expect("create").ino;
        fs.setxattr(old, b"user.old", b"the removed file's", 0).expect("setxattr");
        fs.sync().expect("sync");
        fs.unlink(ROOT_INO, b"old").expect("unlink");
        fs.sync().expect("sync");
        let b = fs.mknod(ROOT_INO, b"b", 0o100644, 0, creds).expect("create").ino;
        fs.sync().expect("sync");
        fs.setxattr(b, b"user.new", b"b's own", 0).expect("setxattr");
        fs.link(b, ROOT_INO, b"c").expect("link");
        std::mem::forget(fs);
        let image: Arc<dyn disk::BlockDevice> = Arc::new(MemDisk::from_bytes(mem.snapshot()));
        let mut fs = FileSystem::new(Ffs::mount(image, options).expect("mount the crash image"));
        let b = fs.lookup(ROOT_INO, b"b").expect("b").ino;
        let names = fs.listxattr(b).map_err(|e| format!("{integrity:?}: {e}")).expect("readable attributes");
        let promised = matches!(integrity, Integrity::Sync | Integrity::JournalSync);
        if promised || !names.is_empty() {
            assert_eq!(names, b"user.new\0", "{integrity:?}");
            assert_eq!(fs.getxattr(b, b"user.new").expect("getxattr"), b"b's own", "{integrity:?}");
        }
    }
}

/// Writes of whole fragments into blocks the cache does not hold store
/// their bytes without reading the blocks (every mode but the journal's,
/// whose log diffs whole blocks), and every read after them, a remount's
/// included, finds the bytes written last: among random overwrites large
/// and small, aligned and not, reads, fsyncs, write-behind and truncations
/// that make a block so written the file's tail.
#[test]
fn parts_of_blocks_written_without_reading_them_read_back_as_written() {
    const SIZE: usize = 2 << 20;
    const FRAG: usize = 1024;
    for integrity in Integrity::ALL {
        let disk = Arc::new(MemDisk::from_bytes(fresh_image()));
        let options = MountOptions { integrity, cache_bytes: 256 << 10, ..MountOptions::default() };
        let mut fs = FileSystem::new(Ffs::mount(disk.clone(), options.clone()).expect("mount"));
        let ino = fs.mknod(ROOT_INO, b"f", 0o100644, 0, Creds::default()).expect("create").ino;
        let mut model: Vec<u8> = (0..SIZE).map(|i| (i / FRAG) as u8 ^ 0xa5).collect();
        fs.write(ino, 0, &model).expect("write");
        fs.sync().expect("sync");
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut random = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Aligned writes alone first: what they read is counted.
        let reads_before = fs.storage().stats().reads;
        for i in 0..300 {
            let r = random();
            let at = (r % (SIZE / FRAG) as u64) as usize * FRAG;
            let len = ((1 + (r >> 32) % 6) as usize * FRAG).min(SIZE - at);
            let data = vec![i as u8; len];
            fs.write(ino, at as u64, &data).expect("write");
            model[at..at + len].copy_from_slice(&data);
            if fs.write_behind_due() {
                fs.write_behind().expect("write behind");
            }
        }
        let reads = fs.storage().stats().reads - reads_before;
        if matches!(integrity, Integrity::Journal | Integrity::JournalSync) {
            assert!(reads > 100, "{integrity:?}: {reads} reads: the journal reads what it changes");
        } else {
            assert!(reads <= 10, "{integrity:?}: 300 writes of fragments read {reads} times");
        }
        for i in 0..600 {
            let r = random();
            let at = (r % SIZE as u64) as usize;
            let (at, len) = match (r >> 40) % 8 {
                0 => (at, ((r >> 20) % 5000) as usize + 1),
                _ => (at / FRAG * FRAG, (1 + (r >> 32) % 12) as usize * FRAG),
            };
            let len = len.min(SIZE - at);
            let data = vec![(i as u8).wrapping_mul(7); len];
            fs.write(ino, at as u64, &data).expect("write");
            model[at..at + len].copy_from_slice(&data);
            match (r >> 48) % 16 {
                0 => fs.fsync(ino, false).expect("fsync"),
                1 | 2 => {
                    let from = ((r >> 4) % SIZE as u64) as usize;
                    let len = (((r >> 24) % 40_000) as usize).min(SIZE - from);
                    let got = fs.read(ino, from as u64, len).expect("read");
                    assert!(got == model[from..from + len], "{integrity:?}: bytes {from}.. after write {i}");
                }
                3 => {
                    // A tail where a block was written in part, then the
                    // size back (the bytes between read as zeros).
                    let cut = at + len / 2 + 100;
                    let cut = cut.min(SIZE);
                    fs.setattr(ino, &SetAttr { size: Some(cut as u64), ..Default::default() }).expect("cut");
                    fs.setattr(ino, &SetAttr { size: Some(SIZE as u64), ..Default::default() })
                        .expect("grow");
                    model[cut..].fill(0);
                }
                _ => {}
            }
            if fs.write_behind_due() {
                fs.write_behind().expect("write behind");
            }
        }
        fs.storage().check_invariants().unwrap_or_else(|e| panic!("{integrity:?}: {e}"));
        let got = fs.read(ino, 0, SIZE).expect("read");
        assert!(
            got == model,
            "{integrity:?}: the file differs at byte {:?}",
            got.iter().zip(&model).position(|(a, b)| a != b)
        );
        fs.unmount().expect("unmount");
        let mut fs = FileSystem::new(Ffs::mount(disk.clone(), options).expect("remount"));
        let got = fs.read(ino, 0, SIZE).expect("read");
        assert!(
            got == model,
            "{integrity:?}: after a remount the file differs at byte {:?}",
            got.iter().zip(&model).position(|(a, b)| a != b)
        );
        fs.storage().check_groups().unwrap_or_else(|e| panic!("{integrity:?}: {e}"));
        fs.unmount().expect("unmount");
    }
}
