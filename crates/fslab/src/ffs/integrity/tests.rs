//! Deferred frees under a mode that defers them, as soft updates and the
//! journal will: what a transaction frees is not allocatable until the
//! blocks that pointed at it are durable without the pointer, is counted
//! free all along, and is released at once when an allocation needs it.

use super::{IntegrityMode, WriteContext};
use crate::cache::{BlockData, BlockKey, Seq, Ticket, WriteAs};
use crate::ffs::freed::{FreeWhen, Freed};
use crate::ffs::{Ffs, Integrity, MkfsOptions, MountOptions};
use crate::format::inode::{kind, InodeAttr};
use crate::format::{Daddr, Ino, Lbn, ROOT_INO};
use crate::storage::{Hint, StorageManager, TxKind, TxSpec};
use crate::Result;
use disk::MemDisk;
use std::sync::Arc;

/// `async`, but every free waits for the file's inode block and dirty
/// indirect blocks — which no longer hold the pointer — to be durable.
struct Deferring {
    inner: Arc<dyn IntegrityMode<Ffs>>,
}

impl IntegrityMode<Ffs> for Deferring {
    fn on_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        self.inner.on_hint(fs, hint)
    }
    fn indirect_allocated(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        self.inner.indirect_allocated(fs, ino, lbn, addr)
    }
    fn blocks_freed(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        self.inner.blocks_freed(fs, ino)
    }
    fn block_moving(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn) -> Result<()> {
        self.inner.block_moving(fs, ino, lbn)
    }
    fn orphan_link_changed(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        self.inner.orphan_link_changed(fs, ino)
    }
    fn orphan_head_changed(&self, fs: &mut Ffs) -> Result<()> {
        self.inner.orphan_head_changed(fs)
    }
    fn commit(&self, fs: &mut Ffs) -> Result<Ticket> {
        self.inner.commit(fs)
    }
    fn fsync(&self, fs: &mut Ffs, ino: Ino) -> Result<Ticket> {
        self.inner.fsync(fs, ino)
    }
    fn free_when(&self, fs: &mut Ffs, ino: Ino, _what: Freed) -> Result<FreeWhen> {
        Ok(FreeWhen::Durable(fs.blocks_without_pointers(ino)?))
    }
    fn write_starting(
        &self,
        key: BlockKey,
        addr: Daddr,
        data: &BlockData,
        ctx: &WriteContext,
    ) -> Result<WriteAs> {
        self.inner.write_starting(key, addr, data, ctx)
    }
    fn write_done(&self, key: BlockKey, addr: Daddr, seq: Seq) {
        self.inner.write_done(key, addr, seq)
    }
}

/// An FFS of `mib` MiB, mounted with [`Deferring`].
fn deferring_ffs(mib: u64) -> Ffs {
    let dev = Arc::new(MemDisk::new(mib << 20));
    crate::mkfs_ffs(dev.clone(), &MkfsOptions::default(), Default::default()).expect("mkfs");
    let options = MountOptions { integrity: Integrity::Async, ..MountOptions::default() };
    let mut ffs = Ffs::mount(dev, options.clone()).expect("mount");
    ffs.mode = Arc::new(Deferring { inner: Ffs::mode_for(&options) });
    ffs
}

/// A new regular file with `blocks` full blocks, or as many as fit
/// before ENOSPC; returns it and the blocks written.
fn file_of(ffs: &mut Ffs, blocks: u64) -> (Ino, u64) {
    let bs = ffs.block_size();
    ffs.begin(TxKind::Create.into()).expect("begin");
    let ino = ffs.valloc(ROOT_INO, kind::REG).expect("valloc").ino;
    let mut attr = InodeAttr { mode: kind::REG | 0o644, nlink: 1, ..InodeAttr::default() };
    ffs.update(ino, &attr).expect("update");
    ffs.commit().expect("commit");
    ffs.begin(TxSpec::dirtying(TxKind::Write, blocks)).expect("begin");
    let mut written = 0;
    for lbn in 0..blocks {
        if ffs.write_block(ino, lbn as Lbn, 0, &vec![lbn as u8; bs]).is_err() {
            break;
        }
        written += 1;
        attr.size = written * bs as u64;
        ffs.update(ino, &attr).expect("update");
    }
    ffs.commit().expect("commit");
    (ino, written)
}

/// Frees every block of `ino` and the inode.
fn remove(ffs: &mut Ffs, ino: Ino) {
    ffs.begin(TxKind::Unlink.into()).expect("begin");
    ffs.free_blocks(ino, 0, u64::MAX).expect("free");
    let attr = InodeAttr { nlink: 0, ..ffs.vget(ino).expect("vget").attr };
    ffs.update(ino, &InodeAttr { size: 0, ..attr }).expect("update");
    ffs.vfree(ino).expect("vfree");
    ffs.commit().expect("commit");
}

#[test]
fn a_deferred_free_waits_for_its_pointers_removal_to_be_durable_and_counts_as_free() {
    let mut ffs = deferring_ffs(32);
    let (ino, written) = file_of(&mut ffs, 20);
    assert_eq!(written, 20);
    ffs.sync().expect("sync");
    let (free_blocks, free_inodes) = (ffs.alloc.totals().free_blocks, ffs.alloc.totals().free_inodes);
    let statfs = ffs.statfs().expect("statfs");

    remove(&mut ffs, ino);
    let fpb = ffs.frags_per_block();
    // 20 data blocks and the single indirect block past the 12 direct ones.
    assert_eq!(ffs.pending_frees(), (21 * fpb, 1), "freed, waiting");
    assert_eq!(ffs.alloc.totals().free_blocks, free_blocks, "nothing is allocatable yet");
    assert_eq!(ffs.alloc.totals().free_inodes, free_inodes);
    let now = ffs.statfs().expect("statfs");
    assert_eq!(now.free_blocks, statfs.free_blocks + 21, "but statfs counts them free");
    assert_eq!(now.free_inodes, statfs.free_inodes + 1);

    // The space goes to no one else meanwhile.
    let (other, _) = file_of(&mut ffs, 4);
    assert_eq!(ffs.release_durable_frees().expect("release"), 0, "the inode block is not written yet");
    assert_ne!(other, ino, "the inode is not reused");
    assert_eq!(ffs.pending_frees().1, 1);

    ffs.sync().expect("sync");
    assert_eq!(ffs.pending_frees(), (0, 0), "durable: released at the sync");
    assert_eq!(ffs.alloc.totals().free_blocks, free_blocks + 21 - 4);
    assert_eq!(ffs.alloc.totals().free_inodes, free_inodes + 1 - 1);
    ffs.check_groups().expect("groups agree with their bitmaps");
    ffs.unmount().expect("unmount");
}

#[test]
fn an_allocation_short_of_space_releases_pending_frees_first() {
    let mut ffs = deferring_ffs(8);
    let (first, filled) = file_of(&mut ffs, u64::MAX);
    assert!(filled > 100, "a disk of 8 MiB holds more than {filled} blocks");
    ffs.sync().expect("sync");
    remove(&mut ffs, first);
    assert!(ffs.pending_frees().0 > 0);
    let flushes = ffs.queue.flushes();
    let (_, again) = file_of(&mut ffs, filled);
    assert_eq!(again, filled, "the space freed is given again, all of it");
    assert!(ffs.queue.flushes() > flushes, "after the removal was made durable");
    assert_eq!(ffs.pending_frees(), (0, 0));
    ffs.sync().expect("sync");
    ffs.check_groups().expect("groups agree with their bitmaps");
    ffs.unmount().expect("unmount");
}

/// An inode stored in the middle of a write that gave a block wholly past
/// the size before it a fragment run (a new file's first bytes) carries
/// the size the write reached, which makes that run its tail: with the
/// size before it, fsck would read the run as a whole block past the end
/// (damage when it is not on a block boundary). A sync in the middle of
/// a write stored such a slot: with 64 KiB blocks, a write to a new file
/// filled the cache of 16 buffers.
#[test]
fn an_inode_stored_in_the_middle_of_a_write_keeps_a_size_that_makes_its_new_tail_a_tail() {
    let mut ffs = deferring_ffs(32);
    let (ino, _) = file_of(&mut ffs, 0);
    ffs.sync().expect("sync");
    let fs = ffs.frag_size();
    ffs.begin(TxSpec::dirtying(TxKind::Write, 1)).expect("begin");
    ffs.write_block(ino, 0, 0, &[7u8; 600]).expect("write");
    ffs.store_inode(ino).expect("store");
    let stored = ffs.stored_inode(ino).expect("read").expect("stored");
    assert_ne!(stored.direct[0], Daddr::NONE, "the slot points at the new fragment");
    let size = stored.attr.size;
    assert!((1..=fs).contains(&size), "the slot's size {size} makes block 0 a tail of one fragment");
    let attr = InodeAttr { size: 600, ..ffs.vget(ino).expect("vget").attr };
    ffs.update(ino, &attr).expect("update");
    ffs.commit().expect("commit");
    ffs.sync().expect("sync");
    assert_eq!(ffs.stored_inode(ino).expect("read").expect("stored").attr.size, 600);
    ffs.unmount().expect("unmount");
}

/// An inode stored in the middle of a write (a free's blocks stored it,
/// say) carries the size the file had before the write, never the size
/// the write has reached so far; the size the write confirms is stored
/// after it, and a sync settles with the inode stored only so far.
#[test]
fn an_inode_stored_in_the_middle_of_a_write_keeps_the_size_before_it() {
    let mut ffs = deferring_ffs(32);
    let (ino, _) = file_of(&mut ffs, 2);
    ffs.sync().expect("sync");
    let bs = ffs.block_size();
    let before = 2 * bs as u64;
    ffs.begin(TxSpec::dirtying(TxKind::Write, 2)).expect("begin");
    ffs.write_block(ino, 2, 0, &vec![7u8; bs]).expect("write");
    assert_eq!(ffs.cached_inode(ino).expect("inode").attr.size, 3 * bs as u64, "reached, not confirmed");
    ffs.store_inode(ino).expect("store");
    let stored = ffs.stored_inode(ino).expect("read").expect("stored");
    assert_eq!(stored.attr.size, before, "the slot holds a size the file had");
    assert_ne!(stored.direct[2], Daddr::NONE, "and the block it now points at");
    ffs.sync().expect("a sync in the middle of the write settles");
    let attr = InodeAttr { size: 3 * bs as u64, ..ffs.vget(ino).expect("vget").attr };
    ffs.update(ino, &attr).expect("update");
    ffs.commit().expect("commit");
    ffs.sync().expect("sync");
    assert_eq!(ffs.stored_inode(ino).expect("read").expect("stored").attr.size, 3 * bs as u64);
    ffs.unmount().expect("unmount");
}
