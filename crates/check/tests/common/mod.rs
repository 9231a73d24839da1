//! Shared helpers for the fsck tests: make and populate an image in memory,
//! run the library against it, find structures in it to damage.
//!
//! * [`populated`] — an unmounted image with directories, small and large
//!   files (direct, single and double indirect blocks), a symlink, a hard
//!   link, a device node and an extended attribute ([`populate`], for
//!   either layout).
//! * [`with_fs`] — mount, run a closure on the namespace, unmount (or, with
//!   `crash`, drop without unmounting); [`run_on`] for any layout.
//! * [`ffs`] — the same for FFS images, and where their structures lie.
//! * [`cases`] — the tests that are the same on both layouts.
//! * [`check`] / [`repair`] — run fsck read-only or repairing.
//! * [`inode_slot`], [`ifile_block`] — where inode `ino` and ifile block
//!   `lbn` of the newest checkpoint are, by the public decoders.

#![allow(dead_code)]

pub mod cases;
pub mod ffs;

use disk::{BlockDevice, MemDisk};
use fslab::format::codec::{crc32c_skipping, Decoder};
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::{crc32c, Daddr, Ino, ROOT_INO};
use fslab::lfs::layout::{imap_entries_per_block, ImapEntry, Summary, Superblock, IMAP_BYTES};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem};
use fslab_check::{Options, Outcome, Report};
use std::sync::Arc;

/// Bytes per block of the test images.
pub const BS: usize = 4096;

/// A fresh, empty image of `bytes` bytes with 64 KiB segments.
pub fn fresh(bytes: u64) -> Arc<MemDisk> {
    let dev = Arc::new(MemDisk::new(bytes));
    let options = MkfsOptions { block_size: BS as u32, segment_size: 64 << 10 };
    fslab::mkfs_lfs(dev.clone(), &options, Creds::default()).expect("mkfs");
    dev
}

/// Mounts `dev`, runs `body`, then unmounts — or with `crash`, drops the
/// file system without unmounting (everything after the last checkpoint is
/// as a power cut would leave it).
pub fn with_fs<T>(dev: &Arc<MemDisk>, crash: bool, body: impl FnOnce(&mut FileSystem<Lfs>) -> T) -> T {
    let lfs = Lfs::mount(dev.clone(), MountOptions { cache_bytes: 32 << 20, ..MountOptions::default() })
        .expect("mount");
    run_on(lfs, crash, body)
}

/// Runs `body` on the namespace over `storage`, then unmounts — or with
/// `crash`, drops it without unmounting.
pub fn run_on<S: StorageManager, T>(
    storage: S,
    crash: bool,
    body: impl FnOnce(&mut FileSystem<S>) -> T,
) -> T {
    let mut fs = FileSystem::new(storage);
    let value = body(&mut fs);
    if !crash {
        fs.unmount().expect("unmount");
    }
    value
}

/// Bytes `0..len` of a file, deterministic.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Names of what [`populated`] makes, for the tests to find again.
pub struct Tree {
    pub docs: Ino,
    pub small: Ino,
    pub medium: Ino,
    pub large: Ino,
    pub deep: Ino,
    pub link: Ino,
}

/// A populated, cleanly unmounted 24 MiB image.
pub fn populated() -> (Arc<MemDisk>, Tree) {
    <cases::Lfs as cases::Layout>::populated()
}

/// Makes [`Tree`]'s files in an empty file system of either layout:
/// directories three deep, small files, a 200 KiB file with an xattr, a
/// sparse file reaching its double indirect tree, a symlink, a hard link
/// and a FIFO.
pub fn populate<S: StorageManager>(fs: &mut FileSystem<S>) -> Tree {
    let c = Creds::default();
    let bs = fs.block_size() as u64;
    let nindir = (bs - 8) / 4;
    let docs = fs.mkdir(ROOT_INO, b"docs", 0o755, c).expect("mkdir").ino;
    let deep = fs.mkdir(docs, b"deep", 0o755, c).expect("mkdir").ino;
    fs.mkdir(deep, b"deeper", 0o755, c).expect("mkdir");
    let small = fs.mknod(docs, b"small", 0o644, 0, c).expect("create").ino;
    fs.write(small, 0, b"hello, world\n").expect("write");
    let medium = fs.mknod(ROOT_INO, b"medium", 0o644, 0, c).expect("create").ino;
    fs.write(medium, 0, &pattern(200 << 10, 1)).expect("write");
    let large = fs.mknod(deep, b"large", 0o644, 0, c).expect("create").ino;
    fs.write(large, 0, &pattern(64 << 10, 2)).expect("write");
    // Past the single indirect tree: a double indirect block.
    fs.write(large, (12 + nindir + 3) * bs, &pattern(bs as usize, 3)).expect("write");
    let link = fs.symlink(ROOT_INO, b"link", b"docs/small", c).expect("symlink").ino;
    fs.link(small, ROOT_INO, b"small-again").expect("link");
    fs.mknod(ROOT_INO, b"fifo", libc::S_IFIFO | 0o644, 0, c).expect("mkfifo");
    fs.setxattr(medium, b"user.note", b"kept", 0).expect("setxattr");
    for i in 0..40 {
        let f = fs.mknod(docs, format!("file{i:02}").as_bytes(), 0o644, 0, c).expect("create").ino;
        fs.write(f, 0, &pattern(1000 + i * 300, i as u8)).expect("write");
    }
    Tree { docs, small, medium, large, deep, link }
}

/// A read-only check.
pub fn check(dev: &Arc<MemDisk>) -> Report {
    fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {}).expect("check runs")
}

/// fsck with repair.
pub fn repair(dev: &Arc<MemDisk>) -> Outcome {
    let options = Options { repair: true, ..Options::default() };
    fslab_check::fsck(dev.clone(), &options, &mut |_| {}).expect("fsck runs")
}

/// Every problem, one per line, for assertion messages.
pub fn listing(report: &Report) -> String {
    report.problems.iter().map(|p| format!("  {:?}: {p}\n", p.kind)).collect()
}

fn read(dev: &dyn BlockDevice, daddr: Daddr) -> Vec<u8> {
    let mut buf = vec![0u8; BS];
    dev.read_at(daddr.byte_offset(BS as u64), &mut buf).expect("read");
    buf
}

/// The newest valid superblock.
pub fn superblock(dev: &dyn BlockDevice) -> Superblock {
    let copies = fslab::lfs::inspect::superblock_copies(dev);
    copies
        .into_iter()
        .filter_map(|c| c.result.ok())
        .max_by_key(|s| s.checkpoint.serial)
        .expect("a valid superblock")
}

/// The slot of inode `ino` (1 = the ifile) in block `daddr`.
fn slot_in(dev: &dyn BlockDevice, daddr: Daddr, ino: Ino) -> (Daddr, usize, Inode) {
    let block = read(dev, daddr);
    for (i, slot) in block.chunks_exact(INODE_SIZE).enumerate() {
        if let Ok(inode) = Inode::decode(slot) {
            if inode.ino == ino {
                return (daddr, i * INODE_SIZE, inode);
            }
        }
    }
    panic!("inode {ino} is not in block {daddr}");
}

/// Address of ifile block `lbn` of the newest checkpoint (direct blocks only).
pub fn ifile_block(dev: &dyn BlockDevice, lbn: usize) -> Daddr {
    let sb = superblock(dev);
    let (_, _, ifile) = slot_in(dev, sb.checkpoint.ifile_daddr, 1);
    ifile.direct[lbn]
}

/// Where inode `ino` of the newest checkpoint lives: (block, byte offset, inode).
pub fn inode_slot(dev: &dyn BlockDevice, ino: Ino) -> (Daddr, usize, Inode) {
    let sb = superblock(dev);
    let per = imap_entries_per_block(sb.block_size) as u64;
    let lbn = 1 + sb.segtab_blocks as u64 + ino / per;
    let block = read(dev, ifile_block(dev, lbn as usize));
    let entry = ImapEntry::decode(&block, (ino % per) as usize * IMAP_BYTES).expect("entry");
    assert!(entry.daddr.is_some(), "inode {ino} is allocated");
    slot_in(dev, entry.daddr, ino)
}

/// Rewrites inode `ino` in place after `change`, with a valid checksum
/// and its partial segment's data checksum recomputed: damage every
/// checksum passes, as a bug in the writer would leave.
pub fn rewrite_inode(dev: &dyn BlockDevice, ino: Ino, change: impl FnOnce(&mut Inode)) {
    let (daddr, offset, mut inode) = inode_slot(dev, ino);
    change(&mut inode);
    let mut block = read(dev, daddr);
    inode.encode(&mut block[offset..offset + INODE_SIZE]).expect("pointers fit");
    dev.write_at(daddr.byte_offset(BS as u64), &block).expect("write");
    reseal_partial_of(dev, daddr);
}

/// Recomputes the data checksum (and so the summary's own) of the partial
/// segment holding block `daddr`, found by walking its segment's summaries.
pub fn reseal_partial_of(dev: &dyn BlockDevice, daddr: Daddr) {
    let at = summary_of(dev, daddr);
    let mut summary = read(dev, at);
    let n = Summary::decode(&summary, at).expect("a summary").nblocks as usize;
    let mut data = vec![0u8; n * BS];
    dev.read_at((at + 1).byte_offset(BS as u64), &mut data).expect("read");
    summary[8..12].copy_from_slice(&crc32c(&data).to_le_bytes());
    let crc = crc32c_skipping(&summary, 4);
    summary[4..8].copy_from_slice(&crc.to_le_bytes());
    dev.write_at(at.byte_offset(BS as u64), &summary).expect("write");
}

/// The summary of the partial segment holding block `daddr`.
pub fn summary_of(dev: &dyn BlockDevice, daddr: Daddr) -> Daddr {
    let sb = superblock(dev);
    let bps = sb.blocks_per_segment();
    let seg = daddr.get() / bps;
    let holds_superblock = fslab::lfs::inspect::superblock_segments(sb.nsegments).contains(&seg);
    let mut at = seg * bps + u64::from(holds_superblock);
    while at < (seg + 1) * bps {
        let n = Summary::decode(&read(dev, Daddr::new(at)), Daddr::new(at))
            .expect("a summary on the chain")
            .nblocks as u64;
        if (at + 1..=at + n).contains(&daddr.get()) {
            return Daddr::new(at);
        }
        at += 1 + n;
    }
    panic!("block {} is in no partial segment of segment {seg}", daddr.get());
}

/// Flips the bits of `len` bytes at byte `at` of block `daddr`.
pub fn flip(dev: &dyn BlockDevice, daddr: Daddr, at: usize, len: usize) {
    let mut block = read(dev, daddr);
    for b in &mut block[at..at + len] {
        *b ^= 0xff;
    }
    dev.write_at(daddr.byte_offset(BS as u64), &block).expect("write");
}

/// The u32 at byte `at` of block `daddr`.
pub fn peek_u32(dev: &dyn BlockDevice, daddr: Daddr, at: usize) -> u32 {
    Decoder::new(&read(dev, daddr)).u32(at).expect("in block")
}
