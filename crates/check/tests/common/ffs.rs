//! FFS images for the fsck tests: made and populated through the library
//! on a memory disk, and their structures found by the public decoders and
//! the geometry's arithmetic, to damage.
//!
//! * [`fresh`], [`populated`] — 8 KiB blocks of 1 KiB fragments in 4 MiB
//!   cylinder groups, so that there are several groups and superblock
//!   copies; [`with_fs`] mounts one.
//! * [`superblock`], [`inode`], [`rewrite_inode`], [`group_area`],
//!   [`write_group`] — read and change them in place.

use super::{run_on, Tree};
use disk::{BlockDevice, MemDisk};
use fslab::ffs::cg::CylinderGroup;
use fslab::ffs::geometry::Geometry;
use fslab::ffs::mkfs::{read_group, read_superblock};
use fslab::ffs::{Ffs, Frag, Integrity, MkfsOptions, MountOptions, Superblock};
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::Ino;
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

/// The test layout: 8 KiB blocks, 1 KiB fragments, 4 MiB groups.
pub fn mkfs_options() -> MkfsOptions {
    MkfsOptions { group_size: 4 << 20, ..MkfsOptions::default() }
}

/// A fresh, empty FFS of `bytes` bytes.
pub fn fresh(bytes: u64) -> Arc<MemDisk> {
    let dev = Arc::new(MemDisk::new(bytes));
    fslab::mkfs_ffs(dev.clone(), &mkfs_options(), Creds::default()).expect("mkfs");
    dev
}

/// A fresh, empty FFS of `bytes` bytes for `integrity`: with a `file`
/// journal for the journal's modes.
pub fn fresh_for(bytes: u64, integrity: Integrity) -> Arc<MemDisk> {
    if !matches!(integrity, Integrity::Journal | Integrity::JournalSync) {
        return fresh(bytes);
    }
    let dev = Arc::new(MemDisk::new(bytes));
    let mkfs = MkfsOptions { journal: fslab::ffs::JournalKind::File, ..mkfs_options() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    dev
}

/// Mounts `dev` in `integrity` mode, runs `body`, then unmounts — or with
/// `crash`, drops the file system without unmounting.
pub fn with_fs_in<T>(
    dev: &Arc<MemDisk>,
    integrity: Integrity,
    crash: bool,
    body: impl FnOnce(&mut FileSystem<Ffs>) -> T,
) -> T {
    // Timestamps from a clock that stands still, and write-back inline:
    // the same workload makes the same image, byte for byte (a journal's
    // log among them), so that tests damaging it at seeded places damage
    // the same bytes every run.
    let clock = fslab::time::TimeSource::virtual_clock(Arc::new(disk::VirtualClock::new()));
    let options = MountOptions { cache_bytes: 32 << 20, integrity, ..MountOptions::deterministic(clock) };
    run_on(Ffs::mount(dev.clone(), options).expect("mount"), crash, body)
}

/// [`with_fs_in`] in sync mode.
pub fn with_fs<T>(dev: &Arc<MemDisk>, crash: bool, body: impl FnOnce(&mut FileSystem<Ffs>) -> T) -> T {
    with_fs_in(dev, Integrity::Sync, crash, body)
}

/// A populated (the crate's [`populate`](super::populate)), cleanly
/// unmounted 24 MiB FFS.
pub fn populated() -> (Arc<MemDisk>, Tree) {
    <super::cases::Ffs as super::cases::Layout>::populated()
}

/// The primary superblock.
pub fn superblock(dev: &dyn BlockDevice) -> Superblock {
    read_superblock(dev).expect("a valid primary superblock")
}

/// The geometry.
pub fn geometry(dev: &dyn BlockDevice) -> Geometry {
    superblock(dev).geometry
}

/// Reads `len` bytes at fragment `addr`.
pub fn read_frags(dev: &dyn BlockDevice, addr: Frag, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    dev.read_at(geometry(dev).byte_offset(addr), &mut buf).expect("read");
    buf
}

/// Writes `bytes` at fragment `addr`.
pub fn write_frags(dev: &dyn BlockDevice, addr: Frag, bytes: &[u8]) {
    dev.write_at(geometry(dev).byte_offset(addr), bytes).expect("write");
}

/// Byte offset on the device of inode `ino`'s slot.
pub fn inode_offset(dev: &dyn BlockDevice, ino: Ino) -> u64 {
    let geo = geometry(dev);
    geo.byte_offset(geo.inode_block_addr(ino)) + geo.inode_offset_in_block(ino) as u64
}

/// Inode `ino` as its slot holds it (with a valid checksum).
pub fn inode(dev: &dyn BlockDevice, ino: Ino) -> Inode {
    let mut slot = [0u8; INODE_SIZE];
    dev.read_at(inode_offset(dev, ino), &mut slot).expect("read");
    let inode = Inode::decode(&slot).expect("a sound inode");
    assert_eq!(inode.ino, ino);
    inode
}

/// Rewrites inode `ino` in its slot after `change` (with a valid checksum).
pub fn rewrite_inode(dev: &dyn BlockDevice, ino: Ino, change: impl FnOnce(&mut Inode)) {
    let mut inode = inode(dev, ino);
    change(&mut inode);
    let mut slot = [0u8; INODE_SIZE];
    inode.encode(&mut slot).expect("pointers fit");
    dev.write_at(inode_offset(dev, ino), &slot).expect("write");
}

/// Flips every bit of `len` bytes at byte `at` of the device.
pub fn flip_bytes(dev: &dyn BlockDevice, at: u64, len: usize) {
    let mut bytes = vec![0u8; len];
    dev.read_at(at, &mut bytes).expect("read");
    bytes.iter_mut().for_each(|b| *b ^= 0xff);
    dev.write_at(at, &bytes).expect("write");
}

/// Cylinder group `g` as decoded.
pub fn group(dev: &dyn BlockDevice, g: u32) -> CylinderGroup {
    read_group(dev, &superblock(dev), g).expect("a valid group")
}

/// Byte offset of group `g`'s area.
pub fn group_area(dev: &dyn BlockDevice, g: u32) -> u64 {
    let geo = geometry(dev);
    geo.byte_offset(geo.cg_addr(g))
}

/// Writes `cg` as group `g`'s area (encoded, with a valid checksum).
pub fn write_group(dev: &dyn BlockDevice, g: u32, cg: &CylinderGroup) {
    let sb = superblock(dev);
    dev.write_at(group_area(dev, g), &cg.encode(&sb.geometry, sb.fs_id)).expect("write");
}

/// Writes `sb` as the primary superblock.
pub fn write_superblock(dev: &dyn BlockDevice, sb: &Superblock) {
    dev.write_at(0, &sb.encode()).expect("write");
}
