//! What the fuzz targets share: turning arbitrary bytes into a device,
//! optionally recomputing every checksum in it, walking a mounted file
//! system, running fsck, and building the valid images that seed the corpus.
//!
//! Map:
//! * [`image`] — bytes → a `MemDisk` of [`MIN_IMAGE`] to [`MAX_IMAGE`] bytes;
//! * [`reseal`] — recompute every checksum of every structure it recognises
//!   (superblocks, summaries with their data checksums, inode blocks and
//!   indirect blocks named by summaries, ifile blocks, directory chunks,
//!   xattr blocks), so that mutations get past validation into the code
//!   behind it;
//! * [`mount_and_walk`] — the `mount` targets' body: mount, walk everything
//!   the namespace serves, unmount;
//! * [`fsck_image`] — the `fsck` targets' body: check, repair, check again;
//! * [`seed_images`] — small valid images for `fuzz/corpus/<target>/`
//!   (written by `cargo run --example seed`);
//! * [`ffs`] — the same for FFS images (the `fsck_ffs` targets).
//!
//! Every loop and read here is bounded, whatever the image says, so a hang or
//! a huge allocation found by the fuzzer is the library's.

use disk::{BlockDevice, MemDisk};
use fslab::format::blockno::{is_indirect, seal_indirect};
use fslab::format::codec::{crc32c_append, crc32c_skipping};
use fslab::format::crc32c;
use fslab::format::dirent::{seal_chunk, CHUNK_MAGIC, DIRBLKSIZ};
use fslab::format::inode::INODE_SIZE;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::layout::{seal_ifile_block, Superblock, FINFO_HEADER, IFILE_MAGIC, SUMMARY_MAGIC};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem};
use fslab_check::Options;
use std::collections::HashSet;
use std::sync::Arc;

pub mod ffs;

/// Bytes per block of the seed images (the only size [`reseal`] knows).
pub const BS: usize = 4096;
/// Bytes per segment of the seed images.
pub const SEGMENT: u32 = 64 << 10;
/// Smallest device: 8 segments of 64 KiB, the least mkfs accepts.
pub const MIN_IMAGE: usize = 512 << 10;
/// Size of the seed images: 16 segments. On fewer the reserves a writer
/// must leave (a checkpoint's, the cleaner's, the share of the operations
/// that free space, the metadata's) leave no room for the populated tree.
pub const SEED_IMAGE: usize = 1 << 20;
/// Largest device.
pub const MAX_IMAGE: usize = 4 << 20;
/// Magic of an extended-attribute block (`docs/FORMAT.md`).
pub(crate) const XATTR_MAGIC: u32 = 0x5841_5454;
/// Bytes of one file a walk reads at most.
const MAX_FILE_READ: u64 = 1 << 20;
/// Bytes all files of one walk read at most.
const MAX_WALK_READ: u64 = 8 << 20;
/// Directories one walk visits at most.
const MAX_DIRS: usize = 500;
/// Largest directory a walk looks names up in: a lookup indexes the whole
/// directory, so this keeps each fuzz run short (the library itself refuses
/// directories larger than the file system).
const MAX_LOOKUP_DIR: u64 = 16 << 20;
/// Directory entries one walk looks at, at most.
const MAX_ENTRIES: usize = 20_000;

/// The device `data` describes: its bytes, zero-padded to at least
/// [`MIN_IMAGE`] and to a whole number of segments, cut at [`MAX_IMAGE`].
pub fn image(data: &[u8], resealed: bool) -> Arc<MemDisk> {
    let len = data.len().max(MIN_IMAGE).next_multiple_of(SEGMENT as usize).min(MAX_IMAGE);
    let mut bytes = vec![0u8; len];
    let n = data.len().min(len);
    bytes[..n].copy_from_slice(&data[..n]);
    if resealed {
        reseal(&mut bytes);
    }
    Arc::new(MemDisk::from_bytes(bytes))
}

pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

pub(crate) fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Recomputes the checksums of everything in `image` (4 KiB blocks) that
/// carries a structure's magic: directory chunks, xattr blocks, ifile
/// blocks, the inode blocks and indirect blocks each summary names (an
/// indirect block's checksum covers its file and position, which only the
/// summary's FINFO records say: format version 3), then each summary's
/// data checksum and its own, then superblock copies.
pub fn reseal(image: &mut [u8]) {
    let nblocks = image.len() / BS;
    let mut summaries = Vec::new();
    for b in 0..nblocks {
        let blk = &mut image[b * BS..(b + 1) * BS];
        if Superblock::has_magic(blk) {
            continue;
        }
        if u32_at(blk, 0) == SUMMARY_MAGIC {
            summaries.push(b);
            continue;
        }
        if u32_at(blk, BS - 4) == IFILE_MAGIC {
            seal_ifile_block(blk);
        } else if u32_at(blk, 0) == XATTR_MAGIC {
            let crc = crc32c_skipping(blk, 4);
            put_u32(blk, 4, crc);
        } else {
            for chunk in blk.chunks_exact_mut(DIRBLKSIZ) {
                if u32_at(chunk, DIRBLKSIZ - 4) == CHUNK_MAGIC {
                    seal_chunk(chunk);
                }
            }
        }
    }
    for &s in &summaries {
        let header = &image[s * BS..(s + 1) * BS];
        let n = u32_at(header, 16) as usize;
        let ninos = (u32_at(header, 20) as usize).min(n);
        if n == 0 || s + 1 + n > nblocks {
            continue;
        }
        for b in s + 1 + n - ninos..s + 1 + n {
            for slot in image[b * BS..(b + 1) * BS].chunks_exact_mut(INODE_SIZE) {
                if slot.iter().any(|&x| x != 0) {
                    let crc = crc32c_skipping(slot, INODE_SIZE - 4);
                    put_u32(slot, INODE_SIZE - 4, crc);
                }
            }
        }
        for (k, (ino, lbn)) in finfo_blocks(&image[s * BS..(s + 1) * BS]).into_iter().enumerate() {
            let b = s + 1 + k;
            if k < n - ninos && is_indirect(lbn) {
                seal_indirect(&mut image[b * BS..(b + 1) * BS], ino, lbn);
            }
        }
    }
    for &s in summaries.iter().rev() {
        let n = u32_at(&image[s * BS..], 16) as usize;
        if n > 0 && s + 1 + n <= nblocks {
            let crc = crc32c(&image[(s + 1) * BS..(s + 1 + n) * BS]);
            put_u32(&mut image[s * BS..], 8, crc);
        }
        let blk = &mut image[s * BS..(s + 1) * BS];
        let crc = crc32c_skipping(blk, 4);
        put_u32(blk, 4, crc);
    }
    for b in 0..nblocks {
        let blk = &mut image[b * BS..b * BS + 4096];
        if Superblock::has_magic(blk) {
            let crc = crc32c_skipping(blk, 12);
            put_u32(blk, 12, crc);
        }
    }
}

/// The (inode number, logical block number) of each block a summary's
/// FINFO records name, in the order of the blocks after the summary; reads
/// only what lies inside the block, however the counts are mangled.
pub fn finfo_blocks(summary: &[u8]) -> Vec<(Ino, i64)> {
    let mut out = Vec::new();
    let count = u32_at(summary, 24) as usize;
    let mut at = 64;
    for _ in 0..count.min(BS / FINFO_HEADER) {
        if at + FINFO_HEADER > BS {
            break;
        }
        let ino = u32_at(summary, at) as Ino;
        let n = u32_at(summary, at + 8) as usize;
        at += FINFO_HEADER;
        for _ in 0..n.min((BS - at) / 8) {
            let lbn = i64::from_le_bytes(summary[at..at + 8].try_into().unwrap_or([0; 8]));
            out.push((ino, lbn));
            at += 8;
        }
    }
    out
}

/// Mount options for fuzzing: a small cache.
pub fn mount_options() -> MountOptions {
    MountOptions { cache_bytes: 8 << 20, ..MountOptions::default() }
}

/// The `mount` targets: mount `dev`; if it mounts, walk it and unmount.
pub fn mount_and_walk(dev: Arc<MemDisk>) {
    if let Ok(lfs) = Lfs::mount(dev, mount_options()) {
        let mut fs = FileSystem::new(lfs);
        walk(&mut fs);
        let _ = fs.unmount();
    }
}

/// The `fsck` targets: a read-only check, then a repair and, if it ran, a
/// check of the result, which must be clean after exit status 0 or 1 and
/// report only problems the repair's last check reported after 4. Returns
/// the repair's exit status (8 if it could not run).
pub fn fsck_image(dev: Arc<MemDisk>) -> u8 {
    let _ = fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {});
    let repair = Options { repair: true, ..Options::default() };
    let Ok(outcome) = fslab_check::fsck(dev.clone(), &repair, &mut |_| {}) else { return 8 };
    let again = fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {})
        .expect("fsck ran, so a check of its result runs too");
    let left: HashSet<(fslab_check::Kind, &str)> =
        outcome.last.problems.iter().map(|p| (p.kind, p.message.as_str())).collect();
    let code = outcome.exit_code();
    for p in &again.problems {
        assert!(
            code == 4 && left.contains(&(p.kind, p.message.as_str())),
            "fsck exited {code} (repaired {:?}, failed {:?}) but a check right after reports {:?}: {p}",
            outcome.repaired,
            outcome.failed,
            p.kind
        );
    }
    code
}

/// Reads everything the namespace serves from the root down — readdir,
/// lookup and getattr of every entry, file contents, symlink targets, every
/// xattr — with every call allowed to fail. Returns how many entries it saw.
pub fn walk<S: StorageManager>(fs: &mut FileSystem<S>) -> usize {
    let mut stack: Vec<Ino> = vec![ROOT_INO];
    let mut seen: HashSet<Ino> = HashSet::new();
    let mut read_budget = MAX_WALK_READ;
    let mut entries_seen = 0;
    xattrs(fs, ROOT_INO);
    while let Some(dir) = stack.pop() {
        if seen.len() >= MAX_DIRS || !seen.insert(dir) {
            continue;
        }
        let dir_size = fs.getattr(dir).map_or(0, |i| i.attr.size);
        let mut offset = 0;
        while let Ok(entries) = fs.readdir(dir, offset, 128) {
            let Some(last) = entries.last() else { break };
            if last.next_offset <= offset {
                break;
            }
            offset = last.next_offset;
            for e in entries {
                entries_seen += 1;
                if entries_seen > MAX_ENTRIES {
                    return entries_seen;
                }
                if e.name == b"." || e.name == b".." {
                    continue;
                }
                if dir_size <= MAX_LOOKUP_DIR {
                    let _ = fs.lookup(dir, &e.name);
                }
                let Ok(inode) = fs.getattr(e.ino) else { continue };
                let a = inode.attr;
                if a.is_dir() {
                    stack.push(e.ino);
                } else if a.is_reg() {
                    let limit = a.size.min(MAX_FILE_READ).min(read_budget);
                    let mut at = 0u64;
                    let mut crc = 0;
                    while at < limit {
                        match fs.read(e.ino, at, (64 << 10).min(limit - at) as usize) {
                            Ok(bytes) if !bytes.is_empty() => {
                                crc = crc32c_append(crc, &bytes);
                                at += bytes.len() as u64;
                            }
                            _ => break,
                        }
                    }
                    std::hint::black_box(crc);
                    read_budget -= at.min(read_budget);
                } else if a.is_symlink() {
                    let _ = fs.readlink(e.ino);
                }
                xattrs(fs, e.ino);
            }
        }
    }
    entries_seen
}

/// Lists and reads every xattr of `ino`.
fn xattrs<S: StorageManager>(fs: &mut FileSystem<S>, ino: Ino) {
    let _ = fs.getxattr(ino, b"user.note");
    if let Ok(names) = fs.listxattr(ino) {
        for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()).take(64) {
            let _ = fs.getxattr(ino, name);
        }
    }
}

/// Bytes `0..len` of a file, deterministic.
pub(crate) fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// A fresh file system on a [`SEED_IMAGE`] device.
fn fresh() -> fslab::Result<Arc<MemDisk>> {
    let dev = Arc::new(MemDisk::new(SEED_IMAGE as u64));
    let options = MkfsOptions { block_size: BS as u32, segment_size: SEGMENT };
    fslab::mkfs_lfs(dev.clone(), &options, Creds::default())?;
    Ok(dev)
}

/// Directories, files of several sizes (`big` bytes in the largest, so
/// that it has an indirect block; twenty more, `step` bytes apart), a
/// symlink, a hard link, a FIFO and xattrs: the seed images of every layout.
pub(crate) fn populate<S: StorageManager>(
    fs: &mut FileSystem<S>,
    big: usize,
    step: usize,
) -> fslab::Result<()> {
    let c = Creds::default();
    let docs = fs.mkdir(ROOT_INO, b"docs", 0o755, c)?.ino;
    let deep = fs.mkdir(docs, b"deep", 0o755, c)?.ino;
    let small = fs.mknod(docs, b"small", 0o644, 0, c)?.ino;
    fs.write(small, 0, b"hello, world\n")?;
    let bigfile = fs.mknod(deep, b"big", 0o644, 0, c)?.ino;
    fs.write(bigfile, 0, &pattern(big, 1))?;
    fs.setxattr(bigfile, b"user.note", b"kept", 0)?;
    fs.setxattr(docs, b"user.dir", b"on a directory", 0)?;
    fs.symlink(ROOT_INO, b"link", b"docs/small", c)?;
    fs.link(small, ROOT_INO, b"small-again")?;
    fs.mknod(ROOT_INO, b"fifo", libc::S_IFIFO | 0o644, 0, c)?;
    for i in 0..20usize {
        let f = fs.mknod(docs, format!("f{i:02}").as_bytes(), 0o644, 0, c)?.ino;
        fs.write(f, 0, &pattern(100 + i * step, i as u8))?;
    }
    Ok(())
}

/// Small valid images, by name: `fresh` (mkfs only), `populated` (unmounted
/// cleanly), `tail` (populated, then changes fsynced after the checkpoint
/// and never unmounted), `churned` (populated, then deletes, a rename and a
/// truncate, unmounted cleanly).
pub fn seed_images() -> fslab::Result<Vec<(&'static str, Vec<u8>)>> {
    let mut out = Vec::new();
    let dev = fresh()?;
    out.push(("fresh", dev.snapshot()));

    let mount = |dev: &Arc<MemDisk>| -> fslab::Result<FileSystem<Lfs>> {
        Ok(FileSystem::new(Lfs::mount(dev.clone() as Arc<dyn BlockDevice>, mount_options())?))
    };
    let mut fs = mount(&dev)?;
    populate(&mut fs, 60 << 10, 300)?;
    fs.unmount()?;
    let populated = dev.snapshot();
    out.push(("populated", populated.clone()));

    let mut fs = mount(&dev)?;
    let docs = fs.lookup(ROOT_INO, b"docs")?.ino;
    let small = fs.lookup(docs, b"small")?.ino;
    fs.write(small, 5, b" again")?;
    fs.fsync(small, false)?;
    let late = fs.mknod(docs, b"late", 0o644, 0, Creds::default())?.ino;
    fs.write(late, 0, &pattern(9000, 7))?;
    fs.setxattr(late, b"user.late", b"after the checkpoint", 0)?;
    fs.fsync(late, false)?;
    drop(fs);
    out.push(("tail", dev.snapshot()));

    let dev = Arc::new(MemDisk::from_bytes(populated));
    let mut fs = mount(&dev)?;
    churn(&mut fs)?;
    out.push(("churned", dev.snapshot()));
    Ok(out)
}

/// The changes of the `churned` seed images, on a [`populate`]d file
/// system of either layout: deletes, a rename and a truncate, then an
/// unmount.
pub(crate) fn churn<S: StorageManager>(fs: &mut FileSystem<S>) -> fslab::Result<()> {
    let docs = fs.lookup(ROOT_INO, b"docs")?.ino;
    for i in (0..20).step_by(3) {
        fs.unlink(docs, format!("f{i:02}").as_bytes())?;
    }
    fs.rename(docs, b"f01", ROOT_INO, b"moved", Default::default())?;
    let deep = fs.lookup(docs, b"deep")?.ino;
    let big = fs.lookup(deep, b"big")?.ino;
    fs.setattr(big, &fslab::ufs::SetAttr { size: Some(5000), ..Default::default() })?;
    fs.unmount()?;
    Ok(())
}
