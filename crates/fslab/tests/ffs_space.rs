//! FFS's space as users see it, through the namespace on a memory disk:
//! what `statfs` reports available can be had, all of it, by one
//! `fallocate`; and a disk filled to ENOSPC empties again to the space it
//! had when new, every way of deleting working on the full disk.

use disk::{BlockDevice, MemDisk};
use fslab::ffs::{Ffs, Integrity, MkfsOptions, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

const ME: Creds = Creds { uid: 0, gid: 0 };
const MODES: [Integrity; 5] = Integrity::ALL;

fn options(integrity: Integrity) -> MountOptions {
    MountOptions { cache_bytes: 1 << 20, integrity, ..MountOptions::default() }
}

/// A fresh FFS of `bytes` with 8 KiB blocks of 1 KiB fragments in 4 MiB
/// groups, `minfree` percent kept back.
fn fresh(bytes: u64, minfree: u32, integrity: Integrity) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    let disk = Arc::new(MemDisk::new(bytes));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let journal = match integrity {
        Integrity::Journal | Integrity::JournalSync => fslab::ffs::JournalKind::File,
        _ => fslab::ffs::JournalKind::None,
    };
    let mkfs = MkfsOptions { group_size: 4 << 20, minfree, journal, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let fs = FileSystem::new(Ffs::mount(dev, options(integrity)).expect("mount"));
    (disk, fs)
}

fn remount(disk: &Arc<MemDisk>, mut fs: FileSystem<Ffs>, integrity: Integrity) -> FileSystem<Ffs> {
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    FileSystem::new(Ffs::mount(dev, options(integrity)).expect("mount again"))
}

fn create(fs: &mut FileSystem<Ffs>, dir: Ino, name: &str) -> fslab::Result<Ino> {
    Ok(fs.mknod(dir, name.as_bytes(), kind::REG | 0o644, 0, ME)?.ino)
}

/// What `statfs` says a user can still have, in bytes.
fn available(fs: &mut FileSystem<Ffs>) -> u64 {
    let s = fs.statfs().expect("statfs");
    s.free_blocks * s.block_size as u64
}

/// Fills part of `fs`: small files whose tails leave partly used blocks,
/// and a few files with indirect blocks.
fn fill_partly(fs: &mut FileSystem<Ffs>) {
    for i in 0..300u64 {
        let f = create(fs, ROOT_INO, &format!("small{i}")).expect("create");
        fs.write(f, 0, &vec![i as u8 | 1; 700 + (i as usize * 37) % 9000]).expect("write");
    }
    for i in 0..3u64 {
        let f = create(fs, ROOT_INO, &format!("large{i}")).expect("create");
        fs.write(f, 0, &vec![7u8; (200 << 10) + i as usize * 3000]).expect("write");
    }
    for i in (0..300u64).step_by(3) {
        fs.unlink(ROOT_INO, format!("small{i}").as_bytes()).expect("unlink");
    }
}

/// `statfs`'s available space is exactly what one file can be given: an
/// `fallocate` of all of it succeeds (its indirect blocks came out of the
/// promise for its data once, which left the last blocks without space),
/// and nothing is available after it. On a new and on a partly filled
/// disk, with the default 10% `minfree` and with none (where the
/// indirect blocks and the fragments of partly used blocks must come out
/// of what is reported).
#[test]
fn fallocate_of_exactly_what_statfs_reports_available_succeeds() {
    for integrity in MODES {
        for minfree in [10, 0] {
            for partly in [false, true] {
                let what = format!("{integrity:?}, minfree {minfree}%, partly filled {partly}");
                let (disk, mut fs) = fresh(48 << 20, minfree, integrity);
                if partly {
                    fill_partly(&mut fs);
                    fs = remount(&disk, fs, integrity);
                }
                let avail = available(&mut fs);
                assert!(avail > 16 << 20, "{what}: only {avail} bytes available");
                let f = create(&mut fs, ROOT_INO, "all").expect("create");
                if let Err(e) = fs.fallocate(f, 0, avail, 0) {
                    panic!("{what}: fallocate of the {avail} bytes statfs reports available: {e}");
                }
                assert_eq!(available(&mut fs), 0, "{what}: space left after taking all there was");
                assert_eq!(fs.getattr(f).expect("getattr").attr.size, avail, "{what}");
                fs.storage().check_groups().unwrap_or_else(|e| panic!("{what}: {e}"));
                fs.unmount().expect("unmount");
            }
        }
    }
}

/// A promise of space `fallocate` did not need (the partial blocks a
/// punched hole zeroes in place, which allocate nothing) is not kept
/// after it returns: `statfs` shows as much available as before.
#[test]
fn space_promised_and_not_used_is_available_again() {
    for integrity in MODES {
        let (_disk, mut fs) = fresh(24 << 20, 10, integrity);
        let f = create(&mut fs, ROOT_INO, "f").expect("create");
        fs.write(f, 0, &vec![5u8; 40_000]).expect("write");
        let before = available(&mut fs);
        for i in 0..20u64 {
            let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            fs.fallocate(f, 100 + i * 1000, 300, punch).expect("punch");
        }
        assert_eq!(available(&mut fs), before, "{integrity:?}");
        fs.unmount().expect("unmount");
    }
}

/// A fallocate past a fragment tail on a disk with one whole block left:
/// the tail is made a whole block first (moved, since the next file's
/// fragment follows it), then the block after it finds no space. The
/// refusal leaves the tail two fragments again (where it moved) and every
/// fragment free that was: grown, it stayed a whole block under a size
/// that makes it two fragments, six of them counted and never freed.
#[test]
fn a_refused_allocation_past_a_tail_leaves_the_tail_as_it_was() {
    let (_disk, mut fs) = fresh(24 << 20, 0, Integrity::Sync);
    let f = create(&mut fs, ROOT_INO, "f").expect("create f");
    fs.write(f, 0, &[1u8; 2048]).expect("write f");
    let g = create(&mut fs, ROOT_INO, "g").expect("create g");
    fs.write(g, 0, &[2u8; 1024]).expect("write g");
    let filler = create(&mut fs, ROOT_INO, "filler").expect("create filler");
    let whole_blocks_left = |fs: &mut FileSystem<Ffs>| -> u64 {
        fs.storage().free_space_by_group().iter().map(|g| u64::from(g.free_blocks)).sum()
    };
    let left = whole_blocks_left(&mut fs);
    fs.fallocate(filler, 0, (left - 16) * 8192, 0).expect("fill all but a few blocks");
    for i in 0.. {
        if whole_blocks_left(&mut fs) <= 1 {
            break;
        }
        let one = create(&mut fs, ROOT_INO, &format!("one{i}")).expect("create");
        fs.write(one, 0, &[3u8; 8192]).expect("a block");
    }
    assert_eq!(whole_blocks_left(&mut fs), 1, "one whole block left");
    let free_frags = |fs: &mut FileSystem<Ffs>| -> u64 {
        let groups = fs.storage().free_space_by_group();
        groups.iter().map(|g| u64::from(g.free_blocks) * 8 + u64::from(g.free_frags)).sum()
    };
    let frags_before = free_frags(&mut fs);
    let blocks_before = fs.getattr(f).expect("getattr").blocks;
    let keep = libc::FALLOC_FL_KEEP_SIZE;
    let refused = fs.fallocate(f, 8192, 8192, keep).err().map(|e| e.errno());
    assert_eq!(refused, Some(libc::ENOSPC));
    let inode = fs.getattr(f).expect("getattr");
    assert_eq!((inode.attr.size, inode.blocks), (2048, blocks_before), "the tail as it was");
    assert_eq!(free_frags(&mut fs), frags_before, "no fragment kept by the refused call");
    assert_eq!(fs.read(f, 0, 4096).expect("read f"), vec![1u8; 2048]);
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
    fs.unmount().expect("unmount");
}
