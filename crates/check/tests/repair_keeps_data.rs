//! Repair never makes a file worse, on either layout. An image holding
//! small files and a large one is damaged over a range of bytes at a time
//! (64 KiB of random contents, once over every range the image uses, then
//! at random offsets: summaries, data, inodes, the ifile, cylinder groups,
//! directories, indirect blocks). For every file whose bytes read back
//! before the repair, they must read back the same after it; and, where the
//! image may be written again, after a fragment in each was overwritten
//! from a fresh mount (a write into a block not yet read, which FFS keeps
//! without reading the block) and the disk was filled and emptied twice
//! (so that the log goes round the whole disk, or FFS allocates from every
//! group) and remounted: the overwritten bytes read as written, the rest
//! as before.
//!
//! A repair that leaves damage leaves an image a plain mount refuses: LFS
//! marks it damaged (a writer would reuse as clean the space a damaged file
//! may still hold — a segment whose summary was destroyed looks empty,
//! though its blocks are still there); FFS does not mark it clean (its
//! bitmaps cannot be trusted). For LFS the files are then also filled and
//! emptied through the mount fsck itself uses, so that the recount of live
//! bytes is what keeps them; for FFS they are read through a read-only
//! mount.
//!
//! `FSLAB_REPAIR_DAMAGE` sets the number of damaged copies per layout
//! (default 48).

use disk::{BlockDevice, MemDisk, ReadOnlyOverlay};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem};
use fslab_check::Options;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

const CREDS: Creds = Creds { uid: 0, gid: 0 };
const DAMAGE: usize = 64 << 10;

/// How a test makes and mounts one layout.
trait Layout {
    type S: StorageManager;
    /// An empty 16 MiB image.
    fn mkfs() -> Arc<MemDisk>;
    /// A plain mount, as `fslab mount` makes it.
    fn mount(dev: Arc<dyn BlockDevice>) -> fslab::Result<Self::S>;
    /// A mount of an image a repair left damaged: for LFS the mount fsck
    /// itself uses, which writes; for FFS, none that writes (`None`).
    fn mount_damaged(dev: Arc<dyn BlockDevice>) -> Option<fslab::Result<Self::S>>;
    /// A mount that writes nothing to the image, whatever state it is in.
    fn mount_read_only(dev: Arc<dyn BlockDevice>) -> fslab::Result<Self::S>;
}

struct Lfs;

impl Layout for Lfs {
    type S = fslab::lfs::Lfs;
    fn mkfs() -> Arc<MemDisk> {
        let dev = Arc::new(MemDisk::new(16 << 20));
        let options = fslab::lfs::MkfsOptions { block_size: 4096, segment_size: 256 << 10 };
        fslab::mkfs_lfs(dev.clone(), &options, CREDS).expect("mkfs");
        dev
    }
    fn mount(dev: Arc<dyn BlockDevice>) -> fslab::Result<Self::S> {
        fslab::lfs::Lfs::mount(dev, lfs_options(false))
    }
    fn mount_damaged(dev: Arc<dyn BlockDevice>) -> Option<fslab::Result<Self::S>> {
        Some(fslab::lfs::Lfs::mount(dev, lfs_options(true)))
    }
    fn mount_read_only(dev: Arc<dyn BlockDevice>) -> fslab::Result<Self::S> {
        fslab::lfs::Lfs::mount(Arc::new(ReadOnlyOverlay::new(dev)), lfs_options(true))
    }
}

fn lfs_options(allow_damaged: bool) -> fslab::lfs::MountOptions {
    fslab::lfs::MountOptions { cache_bytes: 8 << 20, allow_damaged, ..fslab::lfs::MountOptions::default() }
}

struct Ffs;

impl Layout for Ffs {
    type S = fslab::ffs::Ffs;
    fn mkfs() -> Arc<MemDisk> {
        let dev = Arc::new(MemDisk::new(16 << 20));
        let options = fslab::ffs::MkfsOptions { group_size: 4 << 20, ..fslab::ffs::MkfsOptions::default() };
        fslab::mkfs_ffs(dev.clone(), &options, CREDS).expect("mkfs");
        dev
    }
    fn mount(dev: Arc<dyn BlockDevice>) -> fslab::Result<Self::S> {
        fslab::ffs::Ffs::mount(dev, ffs_options(false))
    }
    fn mount_damaged(_dev: Arc<dyn BlockDevice>) -> Option<fslab::Result<Self::S>> {
        None
    }
    fn mount_read_only(dev: Arc<dyn BlockDevice>) -> fslab::Result<Self::S> {
        fslab::ffs::Ffs::mount(Arc::new(ReadOnlyOverlay::new(dev)), ffs_options(true))
    }
}

fn ffs_options(allow_unclean: bool) -> fslab::ffs::MountOptions {
    fslab::ffs::MountOptions { cache_bytes: 8 << 20, allow_unclean, ..fslab::ffs::MountOptions::default() }
}

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen()).collect()
}

/// 40 files of 20 KiB in two directories, then one of 3 MiB, unmounted
/// cleanly; the image's bytes.
fn image<L: Layout>() -> Vec<u8> {
    let dev = L::mkfs();
    let mut fs = FileSystem::new(L::mount(dev.clone()).expect("mount"));
    for d in 0..2u64 {
        let dir = fs.mkdir(ROOT_INO, format!("d{d}").as_bytes(), 0o755, CREDS).expect("mkdir").ino;
        for f in 0..20u64 {
            let ino =
                fs.mknod(dir, format!("f{f}").as_bytes(), kind::REG | 0o644, 0, CREDS).expect("create").ino;
            fs.write(ino, 0, &bytes(d * 100 + f, 20 << 10)).expect("write");
        }
    }
    let big = fs.mknod(ROOT_INO, b"big", kind::REG | 0o644, 0, CREDS).expect("create").ino;
    fs.write(big, 0, &bytes(999, 3 << 20)).expect("write");
    fs.unmount().expect("unmount");
    dev.snapshot()
}

/// Every regular file reachable from the root whose bytes all read, by
/// inode number (a repair may move a file to `/lost+found`).
fn readable_files<S: StorageManager>(fs: &mut FileSystem<S>) -> BTreeMap<Ino, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![ROOT_INO];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs.readdir(dir, 0, usize::MAX) else { continue };
        for e in entries {
            if e.name == b"." || e.name == b".." {
                continue;
            }
            let Ok(node) = fs.lookup(dir, &e.name) else { continue };
            match node.attr.mode & kind::MASK {
                kind::DIR => dirs.push(node.ino),
                kind::REG => {
                    if let Ok(data) = fs.read(node.ino, 0, node.attr.size as usize) {
                        files.insert(node.ino, data);
                    }
                }
                _ => {}
            }
        }
    }
    files
}

/// What differs between `before` and the same files read through `fs`.
fn worse<S: StorageManager>(
    fs: &mut FileSystem<S>,
    before: &BTreeMap<Ino, Vec<u8>>,
    when: &str,
) -> Result<(), String> {
    let mut changed = Vec::new();
    for (&ino, want) in before {
        match fs.getattr(ino).and_then(|node| fs.read(ino, 0, node.attr.size as usize)) {
            Ok(got) if got == *want => {}
            Ok(got) => {
                changed.push(format!("inode {ino}: {}", testkit::harness::first_difference(want, &got)))
            }
            Err(e) => changed.push(format!("inode {ino}: {e}")),
        }
    }
    if changed.is_empty() {
        Ok(())
    } else {
        Err(format!("files read differently {when}: {}", changed.join("; ")))
    }
}

/// Fills the disk with one file to ENOSPC, removes it, and syncs; twice,
/// so that the log goes round the whole disk (a fill stops short of the
/// reserves, which lie ahead of it).
fn fill_and_empty<S: StorageManager>(fs: &mut FileSystem<S>) -> fslab::Result<()> {
    let block = vec![0xeeu8; 64 << 10];
    for _ in 0..2 {
        let ino = fs.mknod(ROOT_INO, b"filler", kind::REG | 0o644, 0, CREDS)?.ino;
        for b in 0.. {
            match fs.write(ino, b * block.len() as u64, &block) {
                Ok(_) => {}
                Err(e) if e.errno() == libc::ENOSPC => break,
                Err(e) => return Err(e),
            }
        }
        fs.sync()?;
        fs.unlink(ROOT_INO, b"filler")?;
        fs.sync()?;
    }
    Ok(())
}

/// Overwrites 1 KiB of each file in `before` longer than 3 KiB, at 2 KiB
/// and in the middle (in an indirect block's range for the large file):
/// fragment-aligned writes into blocks a fresh mount has not read. Returns
/// what each file must then hold; a write refused with an error must leave
/// its file as it was.
fn overwrite_fragments<S: StorageManager>(
    fs: &mut FileSystem<S>,
    before: &BTreeMap<Ino, Vec<u8>>,
) -> BTreeMap<Ino, Vec<u8>> {
    const PIECE: usize = 1 << 10;
    let mut expected = before.clone();
    for (&ino, data) in expected.iter_mut() {
        if data.len() < 3 * PIECE {
            continue;
        }
        let middle = (data.len() / 2) / PIECE * PIECE;
        for at in [2 * PIECE, middle.max(2 * PIECE)] {
            let piece = bytes(ino ^ at as u64, PIECE.min(data.len() - at));
            if fs.write(ino, at as u64, &piece).is_ok() {
                data[at..at + piece.len()].copy_from_slice(&piece);
            }
        }
    }
    expected
}

/// Overwrites a fragment of each file, fills and empties the disk through
/// `fs`, then checks the files read as expected from the disk again
/// (remounted with `remount`).
fn fill_empty_and_compare<S: StorageManager>(
    mut fs: FileSystem<S>,
    before: &BTreeMap<Ino, Vec<u8>>,
    remount: impl FnOnce() -> fslab::Result<S>,
) -> Result<(), String> {
    let before = &overwrite_fragments(&mut fs, before);
    match fill_and_empty(&mut fs) {
        Ok(()) => {}
        // Damage left in the root directory: no file can be made there.
        Err(fslab::Error::Corrupt { .. }) => return Ok(()),
        Err(e) => return Err(format!("fill and empty after repair: {e}")),
    }
    fs.unmount().map_err(|e| format!("unmount: {e}"))?;
    let mut fs = FileSystem::new(remount().map_err(|e| format!("remount: {e}"))?);
    worse(&mut fs, before, "after a fill and empty")?;
    fs.unmount().map_err(|e| format!("unmount: {e}"))
}

/// One damaged copy: what it broke, if anything.
fn round<L: Layout>(image: &[u8], at: usize, seed: u64) -> Result<(), String> {
    let mut damaged = image.to_vec();
    let end = (at + DAMAGE).min(damaged.len());
    damaged[at..end].copy_from_slice(&bytes(seed, end - at));
    // What a user could read before the repair, through a mount that
    // writes nothing to the image fsck gets.
    let before = match L::mount_read_only(Arc::new(MemDisk::from_bytes(damaged.clone()))) {
        Ok(s) => readable_files(&mut FileSystem::new(s)),
        Err(_) => BTreeMap::new(),
    };
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::from_bytes(damaged));
    let outcome =
        fslab_check::fsck(dev.clone(), &Options { repair: true, ..Options::default() }, &mut |_| {})
            .map_err(|e| format!("fsck could not run: {e:?}"))?;
    if outcome.exit_code() == 4 {
        if L::mount(dev.clone()).is_ok() {
            return Err("a repair left damage, yet a plain mount took the image".into());
        }
        let mut fs = match L::mount_read_only(dev.clone()) {
            Ok(s) => FileSystem::new(s),
            // Nothing could be read before either: nothing was made worse.
            Err(_) if before.is_empty() => return Ok(()),
            Err(e) => return Err(format!("no read-only mount after repair: {e}")),
        };
        worse(&mut fs, &before, "after repair")?;
        drop(fs);
        return match L::mount_damaged(dev.clone()) {
            Some(Ok(s)) => fill_empty_and_compare(FileSystem::new(s), &before, || {
                L::mount_damaged(dev.clone()).unwrap_or_else(|| L::mount(dev))
            }),
            Some(Err(e)) => Err(format!("the mount fsck uses refused the image: {e}")),
            None => Ok(()),
        };
    }
    let mut fs = match L::mount(dev.clone()) {
        Ok(s) => FileSystem::new(s),
        Err(_) if before.is_empty() => return Ok(()),
        Err(e) => return Err(format!("no mount after a repair that left the image clean: {e}")),
    };
    worse(&mut fs, &before, "after repair")?;
    // Written from a fresh mount, so that no block written in part was read.
    fs.unmount().map_err(|e| format!("unmount: {e}"))?;
    let fs = FileSystem::new(L::mount(dev.clone()).map_err(|e| format!("remount after repair: {e}"))?);
    fill_empty_and_compare(fs, &before, || L::mount(dev))
}

fn repair_never_makes_a_readable_file_read_differently<L: Layout>(seed: u64) {
    let image = image::<L>();
    let used: Vec<usize> = image
        .chunks_exact(DAMAGE)
        .enumerate()
        .filter(|(_, b)| b.iter().any(|&x| x != 0))
        .map(|(i, _)| i * DAMAGE)
        .collect();
    let copies = testkit::harness::env_or("FSLAB_REPAIR_DAMAGE", 48) as usize;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut broken = Vec::new();
    for n in 0..copies {
        // Every used range once (in a scattered order), then random
        // offsets (not block-aligned) within the used ones.
        let at = if n < used.len() {
            used[(n * 7919) % used.len()]
        } else {
            used[rng.gen_range(0..used.len())] + rng.gen_range(0..DAMAGE / 2)
        };
        if let Err(why) = round::<L>(&image, at, n as u64) {
            broken.push(format!("damage at byte {at}: {why}"));
        }
    }
    assert!(broken.is_empty(), "{} of {copies} damaged copies:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn lfs_repair_never_makes_a_readable_file_read_differently() {
    repair_never_makes_a_readable_file_read_differently::<Lfs>(0x5eed_da7a);
}

#[test]
fn ffs_repair_never_makes_a_readable_file_read_differently() {
    repair_never_makes_a_readable_file_read_differently::<Ffs>(0x5eed_0ff5);
}
