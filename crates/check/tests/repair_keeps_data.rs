//! Repair never makes a file worse. An LFS image holding small files and a
//! large one is damaged over a range of bytes at a time (64 KiB, random
//! contents, anywhere the image holds anything: summaries, data, inodes,
//! the ifile, directories). For every file whose bytes read back before the
//! repair, they must read back the same after it — through a mount made to
//! repair, whatever the repair left — and, when the repair left the image
//! clean, again after the disk was filled and emptied. A repair that leaves
//! damage marks the image, and a plain mount refuses it: a writer would
//! reuse as clean the space a damaged file may still hold (a segment whose
//! summary was destroyed looks empty, though its blocks are still there).
//!
//! `FSLAB_REPAIR_DAMAGE` sets the number of damaged copies (default 48).

use disk::{BlockDevice, MemDisk};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{Creds, FileSystem};
use fslab_check::Options;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

const CREDS: Creds = Creds { uid: 0, gid: 0 };
const BLOCK: usize = 4096;
const DAMAGE: usize = 64 << 10;

fn options(repairing: bool) -> MountOptions {
    MountOptions { cache_bytes: 8 << 20, allow_damaged: repairing, ..MountOptions::default() }
}

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen()).collect()
}

/// A 16 MiB image with 256 KiB segments: 40 files of 20 KiB in two
/// directories, then one of 3 MiB, unmounted cleanly.
fn image() -> Vec<u8> {
    let dev = Arc::new(MemDisk::new(16 << 20));
    fslab::mkfs_lfs(dev.clone(), &MkfsOptions { block_size: BLOCK as u32, segment_size: 256 << 10 }, CREDS)
        .expect("mkfs");
    let mut fs = FileSystem::new(Lfs::mount(dev.clone(), options(false)).expect("mount"));
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
fn readable_files(fs: &mut FileSystem<Lfs>) -> BTreeMap<Ino, Vec<u8>> {
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
fn worse(fs: &mut FileSystem<Lfs>, before: &BTreeMap<Ino, Vec<u8>>) -> Vec<String> {
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
    changed
}

/// Fills the disk with one file to ENOSPC, removes it, and checkpoints;
/// twice, so that the log goes round the whole disk (a fill stops short
/// of the reserves, which lie ahead of it).
fn fill_and_empty(fs: &mut FileSystem<Lfs>) -> fslab::Result<()> {
    let block = vec![0xeeu8; BLOCK];
    for _ in 0..2 {
        let ino = fs.mknod(ROOT_INO, b"filler", kind::REG | 0o644, 0, CREDS)?.ino;
        for b in 0.. {
            match fs.write(ino, b * BLOCK as u64, &block) {
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

/// One damaged copy: what it broke, if anything.
fn round(image: &[u8], at: usize, seed: u64) -> Result<(), String> {
    let mut damaged = image.to_vec();
    let end = (at + DAMAGE).min(damaged.len());
    damaged[at..end].copy_from_slice(&bytes(seed, end - at));
    // What a user could read before the repair (from a copy: nothing the
    // reading does may reach the image fsck gets).
    let before = match Lfs::mount(Arc::new(MemDisk::from_bytes(damaged.clone())), options(false)) {
        Ok(lfs) => readable_files(&mut FileSystem::new(lfs)),
        Err(_) => BTreeMap::new(),
    };
    let dev = Arc::new(MemDisk::from_bytes(damaged));
    let outcome =
        fslab_check::fsck(dev.clone(), &Options { repair: true, ..Options::default() }, &mut |_| {})
            .map_err(|e| format!("fsck could not run: {e:?}"))?;
    let left = outcome.exit_code() == 4;
    let shared: Arc<dyn BlockDevice> = dev.clone();
    let dev: Arc<dyn BlockDevice> = dev;
    if left && Lfs::mount(shared.clone(), options(false)).is_ok() {
        return Err("a repair left damage, yet a plain mount took the image".into());
    }
    // Through the mount fsck itself uses where damage was left (which
    // writes as any mount does): a repair that let a file's blocks count
    // as free would show here, once a fill reuses them.
    let mut fs = match Lfs::mount(shared, options(left)) {
        Ok(lfs) => FileSystem::new(lfs),
        // Nothing could be read before either: nothing was made worse.
        Err(_) if before.is_empty() => return Ok(()),
        Err(e) => return Err(format!("no mount after repair: {e}")),
    };
    let changed = worse(&mut fs, &before);
    if !changed.is_empty() {
        return Err(format!("files read differently after repair: {}", changed.join("; ")));
    }
    match fill_and_empty(&mut fs) {
        Ok(()) => {}
        // Damage left in the root directory: no file can be made there.
        Err(fslab::Error::Corrupt { .. }) if left => return Ok(()),
        Err(e) => return Err(format!("fill and empty after repair: {e}")),
    }
    // Read from the disk again, not from the cache.
    fs.unmount().map_err(|e| format!("unmount: {e}"))?;
    let mut fs = FileSystem::new(Lfs::mount(dev, options(left)).map_err(|e| format!("remount: {e}"))?);
    let changed = worse(&mut fs, &before);
    if !changed.is_empty() {
        return Err(format!("files read differently after a fill and empty: {}", changed.join("; ")));
    }
    fs.unmount().map_err(|e| format!("unmount: {e}"))
}

#[test]
fn repair_never_makes_a_readable_file_read_differently() {
    let image = image();
    let used: Vec<usize> = image
        .chunks_exact(DAMAGE)
        .enumerate()
        .filter(|(_, b)| b.iter().any(|&x| x != 0))
        .map(|(i, _)| i * DAMAGE)
        .collect();
    let copies = testkit::harness::env_or("FSLAB_REPAIR_DAMAGE", 48) as usize;
    let mut rng = SmallRng::seed_from_u64(0x5eed_da7a);
    let mut broken = Vec::new();
    for n in 0..copies {
        // Every used range once (in a random order), then random offsets
        // (not block-aligned) within the used ones.
        let at = if n < used.len() {
            used[(n * 7919) % used.len()]
        } else {
            used[rng.gen_range(0..used.len())] + rng.gen_range(0..DAMAGE / 2)
        };
        if let Err(why) = round(&image, at, n as u64) {
            broken.push(format!("damage at byte {at}: {why}"));
        }
    }
    assert!(broken.is_empty(), "{} of {copies} damaged copies:\n{}", broken.len(), broken.join("\n"));
}
