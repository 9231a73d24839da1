//! FFS's `realloc` (McKusick's `ffs_reallocblks`; Smith and Seltzer
//! 1997): two files written a block at a time in turn, whose blocks FFS
//! alone lays out alternating, each end contiguous with it on, in every
//! integrity mode — their contents unchanged, fsck clean — and stay
//! alternating with it off. The mkfs choice reaches the superblock, and a
//! mount overrides it.

use disk::MemDisk;
use fslab::ffs::mkfs::read_superblock;
use fslab::ffs::{Ffs, Integrity, JournalKind, MkfsOptions, MountOptions, WriteMode};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

const BLOCK: usize = 8192;
/// Blocks each file gets: all direct (a run never crosses to the indirect
/// blocks, where realloc leaves it).
const BLOCKS: usize = 10;

fn fresh(integrity: Integrity, realloc: bool) -> Arc<MemDisk> {
    fresh_with(integrity, realloc, MkfsOptions::default().minfree)
}

fn fresh_with(integrity: Integrity, realloc: bool, minfree: u32) -> Arc<MemDisk> {
    let dev = Arc::new(MemDisk::new(32 << 20));
    let journal = match integrity {
        Integrity::Journal | Integrity::JournalSync => JournalKind::File,
        _ => JournalKind::None,
    };
    let mkfs = MkfsOptions { group_size: 8 << 20, journal, realloc, minfree, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    dev
}

fn mount(dev: &Arc<MemDisk>, integrity: Integrity, realloc: Option<bool>) -> FileSystem<Ffs> {
    let options = MountOptions {
        cache_bytes: 32 << 20,
        integrity,
        writes: WriteMode::Inline,
        realloc,
        ..MountOptions::default()
    };
    FileSystem::new(Ffs::mount(dev.clone(), options).expect("mount"))
}

fn block_of(file: u8, lbn: usize) -> Vec<u8> {
    (0..BLOCK).map(|i| (i % 253) as u8 ^ file.wrapping_mul(37) ^ lbn as u8).collect()
}

/// Creates `a` and `b` and writes their blocks in turn, a whole block a
/// write: with nothing between them on a fresh disk, each block FFS gives
/// one file is taken by the other's next.
fn write_in_turn(fs: &mut FileSystem<Ffs>) -> [Ino; 2] {
    let mut inos = [0; 2];
    for (i, name) in [b"a", b"b"].iter().enumerate() {
        inos[i] = fs.mknod(ROOT_INO, *name, kind::REG | 0o644, 0, Creds::default()).expect("create").ino;
    }
    for lbn in 0..BLOCKS {
        for (file, &ino) in inos.iter().enumerate() {
            let data = block_of(file as u8, lbn);
            assert_eq!(fs.write(ino, (lbn * BLOCK) as u64, &data).expect("write"), BLOCK);
        }
    }
    inos
}

/// Blocks of `ino` that do not follow the one before on the disk.
fn breaks(fs: &mut FileSystem<Ffs>, ino: Ino) -> usize {
    let placements = fs.storage().file_placements().expect("placements");
    let file = placements.iter().find(|p| p.ino == ino).expect("the file is placed");
    let data: Vec<_> = file.blocks.iter().filter(|b| b.lbn >= 0).collect();
    assert_eq!(data.len(), BLOCKS, "{data:?}");
    data.windows(2).filter(|w| w[1].addr != w[0].addr + u64::from(w[0].frags)).count()
}

fn assert_contents(fs: &mut FileSystem<Ffs>, inos: [Ino; 2]) {
    for (file, &ino) in inos.iter().enumerate() {
        let got = fs.read(ino, 0, BLOCKS * BLOCK).expect("read");
        let want: Vec<u8> = (0..BLOCKS).flat_map(|lbn| block_of(file as u8, lbn)).collect();
        assert!(got == want, "file {file} reads back changed");
    }
}

/// Writes the two files in turn on a fresh image (realloc as mkfs says,
/// or as `mount_realloc` overrides), syncs, and returns each file's
/// breaks and the runs moved — after checking that both files read back
/// unchanged, before and after a remount, and that fsck finds the image
/// clean.
fn run(integrity: Integrity, mkfs_realloc: bool, mount_realloc: Option<bool>) -> ([usize; 2], u64) {
    let dev = fresh(integrity, mkfs_realloc);
    let mut fs = mount(&dev, integrity, mount_realloc);
    let inos = write_in_turn(&mut fs);
    assert_contents(&mut fs, inos);
    fs.sync().expect("sync");
    let moved = fs.storage().reallocations();
    let found = [breaks(&mut fs, inos[0]), breaks(&mut fs, inos[1])];
    fs.unmount().expect("unmount");
    testkit::subject::fsck_clean(dev.as_ref(), false).unwrap_or_else(|e| panic!("{integrity:?}: {e}"));
    let mut fs = mount(&dev, integrity, mount_realloc);
    assert_contents(&mut fs, inos);
    fs.unmount().expect("unmount");
    (found, moved)
}

#[test]
fn files_written_in_turn_end_contiguous_with_realloc_in_every_integrity_mode() {
    for integrity in Integrity::ALL {
        let (breaks, moved) = run(integrity, true, None);
        assert_eq!(breaks, [0, 0], "{integrity:?}: each file's blocks should follow one another");
        assert!(moved > 0, "{integrity:?}: nothing moved");
    }
}

#[test]
fn files_written_in_turn_stay_interleaved_without_realloc() {
    for integrity in [Integrity::Sync, Integrity::Softdep, Integrity::Journal] {
        let (breaks, moved) = run(integrity, false, None);
        assert_eq!(moved, 0, "{integrity:?}");
        assert!(
            breaks.iter().all(|&b| b >= BLOCKS - 2),
            "{integrity:?}: {breaks:?} breaks; FFS alone alternates"
        );
    }
}

#[test]
fn a_mount_option_overrides_what_mkfs_recorded() {
    let (breaks, moved) = run(Integrity::Async, true, Some(false));
    assert_eq!(moved, 0);
    assert!(breaks.iter().all(|&b| b >= BLOCKS - 2), "{breaks:?}");
    let (breaks, moved) = run(Integrity::Async, false, Some(true));
    assert!(moved > 0);
    assert_eq!(breaks, [0, 0]);
}

#[test]
fn mkfs_records_realloc_in_the_superblock_flags_and_a_mount_keeps_it() {
    for on in [false, true] {
        let dev = fresh(Integrity::Sync, on);
        assert_eq!(read_superblock(dev.as_ref()).expect("superblock").realloc(), on);
        let mut fs = mount(&dev, Integrity::Sync, None);
        assert_eq!(fs.storage().realloc(), on);
        fs.unmount().expect("unmount");
        let sb = read_superblock(dev.as_ref()).expect("superblock");
        assert_eq!(sb.realloc(), on, "unmount keeps the choice");
        assert_eq!(sb.flags & fslab::ffs::layout::SB_REALLOC != 0, on);
    }
}

/// A block written to the disk (here by an fsync) before the file's next
/// block lands elsewhere keeps its place: moving it would cost a write.
#[test]
fn a_run_with_a_block_already_on_the_disk_is_not_moved() {
    let dev = fresh(Integrity::Softdep, true);
    let mut fs = mount(&dev, Integrity::Softdep, None);
    let inos = write_in_turn_with_fsync(&mut fs);
    fs.sync().expect("sync");
    assert_eq!(fs.storage().reallocations(), 0);
    assert!(breaks(&mut fs, inos[1]) >= BLOCKS - 2);
    assert_contents(&mut fs, inos);
    fs.unmount().expect("unmount");
    testkit::subject::fsck_clean(dev.as_ref(), false).expect("fsck");
}

/// [`write_in_turn`], each block fsynced as soon as it is written.
fn write_in_turn_with_fsync(fs: &mut FileSystem<Ffs>) -> [Ino; 2] {
    let mut inos = [0; 2];
    for (i, name) in [b"a", b"b"].iter().enumerate() {
        inos[i] = fs.mknod(ROOT_INO, *name, kind::REG | 0o644, 0, Creds::default()).expect("create").ino;
    }
    for lbn in 0..BLOCKS {
        for (file, &ino) in inos.iter().enumerate() {
            fs.write(ino, (lbn * BLOCK) as u64, &block_of(file as u8, lbn)).expect("write");
            fs.fsync(ino, false).expect("fsync");
        }
    }
    inos
}

/// A block fsynced and then written again is dirty once more, but its
/// first contents are on the disk where the inode names them: its run is
/// never moved (`Run::written`), though every block of it is dirty.
#[test]
fn a_run_with_a_block_written_and_then_rewritten_is_not_moved() {
    let dev = fresh(Integrity::Softdep, true);
    let mut fs = mount(&dev, Integrity::Softdep, None);
    let creat = |fs: &mut FileSystem<Ffs>, name: &[u8]| {
        fs.mknod(ROOT_INO, name, kind::REG | 0o644, 0, Creds::default()).expect("create").ino
    };
    let (a, b) = (creat(&mut fs, b"a"), creat(&mut fs, b"b"));
    fs.write(b, 0, &block_of(1, 0)).expect("write");
    fs.fsync(b, false).expect("fsync");
    fs.write(b, 0, &block_of(1, 9)).expect("rewrite");
    // The block after b's first is a's now: b's second lands elsewhere.
    fs.write(a, 0, &block_of(0, 0)).expect("write");
    fs.write(b, BLOCK as u64, &block_of(1, 1)).expect("write");
    assert_eq!(fs.storage().reallocations(), 0);
    fs.sync().expect("sync");
    assert_eq!(fs.read(b, 0, 2 * BLOCK).expect("read"), [block_of(1, 9), block_of(1, 1)].concat());
    fs.unmount().expect("unmount");
    testkit::subject::fsck_clean(dev.as_ref(), false).expect("fsck");
}

/// An `fallocate` of all the space `statfs` reports available gets it
/// with realloc on, in every mode, with no `minfree` reserve, on a disk
/// whose free space is single blocks between another file's and
/// fragments beside small files' tails: a move takes its new blocks
/// before the old ones are free again (after the operation, where a mode
/// defers frees), so none is made while space is promised.
#[test]
fn fallocate_of_all_that_is_available_succeeds_with_realloc_on() {
    for integrity in Integrity::ALL {
        let dev = fresh_with(integrity, true, 0);
        let mut fs = mount(&dev, integrity, Some(false));
        let creat = |fs: &mut FileSystem<Ffs>, name: &[u8]| {
            fs.mknod(ROOT_INO, name, kind::REG | 0o644, 0, Creds::default()).expect("create").ino
        };
        for i in 0..300usize {
            let f = creat(&mut fs, format!("small{i}").as_bytes());
            fs.write(f, 0, &vec![i as u8 | 1; 700 + (i * 37) % 9000]).expect("write");
        }
        let (a, b) = (creat(&mut fs, b"a"), creat(&mut fs, b"b"));
        for lbn in 0..400 {
            for (file, ino) in [(0, a), (1, b)] {
                fs.write(ino, (lbn * BLOCK) as u64, &block_of(file, lbn)).expect("write");
            }
        }
        fs.unlink(ROOT_INO, b"a").expect("unlink");
        for i in (0..300usize).step_by(3) {
            fs.unlink(ROOT_INO, format!("small{i}").as_bytes()).expect("unlink");
        }
        fs.unmount().expect("unmount");
        let mut fs = mount(&dev, integrity, None);
        let avail = fs.statfs().expect("statfs");
        let bytes = avail.free_blocks * u64::from(avail.block_size);
        let c = creat(&mut fs, b"c");
        if let Err(e) = fs.fallocate(c, 0, bytes, 0) {
            panic!("{integrity:?}: fallocate of the {bytes} bytes statfs reports available: {e}");
        }
        fs.unmount().expect("unmount");
        testkit::subject::fsck_clean(dev.as_ref(), false).unwrap_or_else(|e| panic!("{integrity:?}: {e}"));
    }
}

/// A file written alone on one cylinder group: its first indirect block
/// goes right after the twelve direct blocks, and the thirteenth block
/// after it. The run of direct blocks and the thirteenth would cross into
/// the indirect blocks, which FreeBSD never moves ("indirect blocks are
/// usually initially laid out in a position between the data blocks"):
/// nothing moves, and the indirect block stays between them.
#[test]
fn a_run_crossing_into_the_indirect_blocks_is_not_moved() {
    let dev = Arc::new(MemDisk::new(8 << 20));
    let mkfs = MkfsOptions { group_size: 8 << 20, realloc: true, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    let mut fs = mount(&dev, Integrity::Async, None);
    let f = fs.mknod(ROOT_INO, b"f", kind::REG | 0o644, 0, Creds::default()).expect("create").ino;
    for lbn in 0..14 {
        fs.write(f, (lbn * BLOCK) as u64, &block_of(0, lbn)).expect("write");
    }
    fs.sync().expect("sync");
    assert_eq!(fs.storage().reallocations(), 0);
    let placements = fs.storage().file_placements().expect("placements");
    let file = placements.iter().find(|p| p.ino == f).expect("placed");
    let at = |lbn: i64| file.blocks.iter().find(|b| b.lbn == lbn).expect("block").addr;
    let fpb = 8;
    assert_eq!(at(11), at(0) + 11 * fpb, "the direct blocks follow one another: {:?}", file.blocks);
    assert_ne!(
        at(12),
        at(11) + fpb,
        "the thirteenth block was moved to follow the twelfth: {:?}",
        file.blocks
    );
    fs.unmount().expect("unmount");
    testkit::subject::fsck_clean(dev.as_ref(), false).expect("fsck");
}
