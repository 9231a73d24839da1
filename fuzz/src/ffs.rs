//! The FFS side of the fuzz targets: bytes → an FFS-sized device,
//! resealing an FFS image, and the FFS seed images. fsck itself tells the
//! layouts apart, so the targets' body is the crate's `fsck_image`; after a
//! repair that left the image clean, it is mounted and walked here.
//!
//! * [`image`] — bytes → a `MemDisk` of [`MIN_IMAGE`] to [`MAX_IMAGE`];
//! * [`reseal`] — every checksum of every FFS structure it recognises
//!   recomputed: superblock copies, group areas, inode slots of the inode
//!   tables, indirect blocks (by walking each inode's tree, each block
//!   resealed as the block it is reached as, once), directory chunks and
//!   extended-attribute blocks;
//! * [`fsck_and_walk`] — the targets' body;
//! * [`seed_images`] — small valid FFS images for the corpus.
//!
//! Every loop and read here is bounded, whatever the image says.

use crate::{churn, pattern, populate, put_u32, u32_at, walk, XATTR_MAGIC};
use disk::{BlockDevice, MemDisk};
use fslab::bmap;
use fslab::ffs::geometry::Geometry;
use fslab::ffs::layout::{CG_MAGIC, SUPERBLOCK_BYTES};
use fslab::ffs::{Ffs, Integrity, MkfsOptions, MountOptions, Superblock};
use fslab::format::blockno::{self, is_indirect, INDIRECT_MAGIC};
use fslab::format::codec::crc32c_skipping;
use fslab::format::dirent::{seal_chunk, CHUNK_MAGIC, DIRBLKSIZ};
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::{Daddr, Ino, Lbn, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use std::collections::HashSet;
use std::sync::Arc;

/// Bytes per block of the seed images (the only size [`reseal`] knows).
pub const BS: usize = 8192;
/// Smallest device, and the size of the seeds (what `scripts/fuzz`'s
/// `-max_len` lets through).
pub const MIN_IMAGE: usize = 768 << 10;
/// Largest device.
pub const MAX_IMAGE: usize = 4 << 20;
/// Indirect blocks one reseal walks at most.
const MAX_RESEALED_INDIRECT: usize = 4096;

/// The device `data` describes: its bytes, zero-padded to at least
/// [`MIN_IMAGE`] and to whole blocks, cut at [`MAX_IMAGE`].
pub fn image(data: &[u8], resealed: bool) -> Arc<MemDisk> {
    let len = data.len().max(MIN_IMAGE).next_multiple_of(BS).min(MAX_IMAGE);
    let mut bytes = vec![0u8; len];
    let n = data.len().min(len);
    bytes[..n].copy_from_slice(&data[..n]);
    if resealed {
        reseal(&mut bytes);
    }
    Arc::new(MemDisk::from_bytes(bytes))
}

/// Recomputes the checksum at `field` of `bytes`.
fn seal(bytes: &mut [u8], field: usize) {
    let crc = crc32c_skipping(bytes, field);
    put_u32(bytes, field, crc);
}

/// Recomputes every checksum of `image` it can place (module comment).
pub fn reseal(image: &mut [u8]) {
    for at in (0..image.len().saturating_sub(SUPERBLOCK_BYTES - 1)).step_by(4096) {
        let sb = &mut image[at..at + SUPERBLOCK_BYTES];
        if Superblock::has_magic(sb) {
            seal(sb, 12);
        }
    }
    for block in image.chunks_exact_mut(BS) {
        if u32_at(block, 0) == XATTR_MAGIC {
            seal(block, 4);
        } else if u32_at(block, 0) != CG_MAGIC {
            for chunk in block.chunks_exact_mut(DIRBLKSIZ) {
                if u32_at(chunk, DIRBLKSIZ - 4) == CHUNK_MAGIC {
                    seal_chunk(chunk);
                }
            }
        }
    }
    let Ok(sb) = Superblock::decode(&image[..SUPERBLOCK_BYTES], 0) else { return };
    let geo = sb.geometry;
    if geo.block_size as usize != BS || geo.byte_offset(geo.total_frags) > image.len() as u64 {
        return;
    }
    let end = geo.cg_sections().end;
    let mut inodes = Vec::new();
    for g in 0..geo.ncg {
        let area = geo.byte_offset(geo.cg_addr(g)) as usize;
        if u32_at(image, area) == CG_MAGIC {
            seal(&mut image[area..area + end], 4);
        }
        let mark = u32_at(image, area + 60).min(geo.ipg) as usize;
        let table = geo.byte_offset(geo.group_base(g) + geo.inode_table_offset() as u64) as usize;
        for (s, slot) in image[table..table + mark * INODE_SIZE].chunks_exact_mut(INODE_SIZE).enumerate() {
            if slot.iter().any(|&b| b != 0) {
                seal(slot, INODE_SIZE - 4);
                let ino = g as Ino * geo.ipg as Ino + s as Ino;
                if let Ok(inode) = Inode::decode(slot).map(Box::new) {
                    if inode.ino == ino && inode.attr.mode != 0 {
                        inodes.push(inode);
                    }
                }
            }
        }
    }
    let tree = sb.indirect_geometry();
    let mut resealer = Resealer { image, geo, tree, ino: 0, pending: None, seen: HashSet::new() };
    for inode in inodes {
        resealer.ino = inode.ino;
        bmap::walk(&tree, &inode, &mut resealer);
    }
}

/// A walk that reseals each indirect block as the block it is reached as,
/// the first time it is reached.
struct Resealer<'i> {
    image: &'i mut [u8],
    geo: Geometry,
    /// How the image's indirect blocks are laid out.
    tree: blockno::Geometry,
    ino: Ino,
    pending: Option<Lbn>,
    seen: HashSet<u64>,
}

impl bmap::Visitor for Resealer<'_> {
    fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool {
        self.pending = Some(lbn);
        is_indirect(lbn) && self.seen.len() < MAX_RESEALED_INDIRECT && self.seen.insert(addr.get())
    }

    fn read(&mut self, addr: Daddr) -> fslab::Result<Vec<u8>> {
        let at = self.geo.byte_offset(addr.get()) as usize;
        let block = self
            .image
            .get_mut(at..at + BS)
            .ok_or_else(|| fslab::Error::corrupt("indirect block", addr, "past the image"))?;
        // A trailer's magic says the block was an indirect block; a
        // sectored one has none, and is resealed as what it is reached as.
        let sealable = self.tree.sectored || u32_at(block, BS - 4) == INDIRECT_MAGIC;
        if let Some(lbn) = self.pending.take().filter(|_| sealable) {
            self.tree.seal(block, self.ino, lbn);
        }
        Ok(block.to_vec())
    }

    fn unreadable(&mut self, _lbn: Lbn, _addr: Daddr, _error: fslab::Error) {}
}

/// Mount options for fuzzing: a small cache.
fn mount_options() -> MountOptions {
    MountOptions { cache_bytes: 8 << 20, integrity: Integrity::Async, ..MountOptions::default() }
}

/// The FFS targets: fsck as the LFS ones run it (`fsck_image`), then, when
/// the image ended clean, a mount and a walk of everything it serves,
/// which must not fail to mount.
pub fn fsck_and_walk(dev: Arc<MemDisk>) {
    if crate::fsck_image(dev.clone()) <= 1 {
        let ffs = Ffs::mount(dev, mount_options()).expect("fsck left the image clean, so it mounts");
        let mut fs = FileSystem::new(ffs);
        walk(&mut fs);
        let _ = fs.unmount();
    }
}

/// A fresh FFS on a [`MIN_IMAGE`] device: 8 KiB blocks, 1 KiB fragments,
/// three groups of 256 KiB.
fn fresh() -> fslab::Result<Arc<MemDisk>> {
    let dev = Arc::new(MemDisk::new(MIN_IMAGE as u64));
    let options = MkfsOptions { group_size: 256 << 10, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &options, Creds::default())?;
    Ok(dev)
}

/// Small valid FFS images, by name: `ffs-fresh`, `ffs-populated`
/// (unmounted cleanly), `ffs-crashed` (populated, then changes in sync mode
/// and no unmount: unclean, stale groups) and `ffs-churned` (deletes, a
/// rename and a truncate, unmounted cleanly).
pub fn seed_images() -> fslab::Result<Vec<(&'static str, Vec<u8>)>> {
    let mount = |dev: &Arc<MemDisk>, integrity| -> fslab::Result<FileSystem<Ffs>> {
        let options = MountOptions { integrity, ..mount_options() };
        Ok(FileSystem::new(Ffs::mount(dev.clone() as Arc<dyn BlockDevice>, options)?))
    };
    let mut out = Vec::new();
    let dev = fresh()?;
    out.push(("ffs-fresh", dev.snapshot()));
    let mut fs = mount(&dev, Integrity::Sync)?;
    // Past the twelve direct 8 KiB blocks, and tails of every fragment count.
    populate(&mut fs, 130 << 10, 700)?;
    fs.unmount()?;
    let populated = dev.snapshot();
    out.push(("ffs-populated", populated.clone()));

    let mut fs = mount(&dev, Integrity::Sync)?;
    let docs = fs.lookup(ROOT_INO, b"docs")?.ino;
    let late = fs.mknod(docs, b"late", 0o644, 0, Creds::default())?.ino;
    fs.write(late, 0, &pattern(9000, 7))?;
    fs.unlink(docs, b"f03")?;
    drop(fs);
    out.push(("ffs-crashed", dev.snapshot()));

    let dev = Arc::new(MemDisk::from_bytes(populated));
    let mut fs = mount(&dev, Integrity::Async)?;
    churn(&mut fs)?;
    out.push(("ffs-churned", dev.snapshot()));
    Ok(out)
}
