//! The boundary between the namespace (`ufs`) and a storage manager (LFS,
//! FFS): the operations of Table 4 of the 1993 BSD-LFS paper (§4.1).
//!
//! | paper   | here                                   |
//! |---------|----------------------------------------|
//! | valloc  | [`StorageManager::valloc`]             |
//! | vfree   | [`StorageManager::vfree`]              |
//! | vget    | [`StorageManager::vget`]               |
//! | update  | [`StorageManager::update`]             |
//! | blkatoff / bmap | [`StorageManager::read_block`], [`StorageManager::next_data`] |
//! | truncate | [`StorageManager::free_blocks`]       |
//! | bwrite  | [`StorageManager::write_block`]        |
//!
//! The namespace never sees a disk address. It names blocks by inode number
//! and logical block number (negative numbers are reserved for the storage
//! manager's indirect blocks, except [`XATTR_LBN`]), and it owns the inode's
//! attributes ([`InodeAttr`]) while the storage manager owns the block map.
//!
//! Every operation that changes more than one block or field runs inside a
//! transaction with dependency hints (`tx`: [`TxKind`], [`Hint`],
//! [`transaction`]), so that LFS can write it in one atomic batch (§4.3),
//! FFS can order its writes, and soft updates or a journal can track it.

mod fetch;
pub mod mem;
pub mod orphans;
mod tx;

pub use crate::durable::Ticket;
pub use crate::format::blockno::XATTR_LBN;
use crate::format::inode::{Inode, InodeAttr};
use crate::format::{Ino, Lbn};
use crate::Result;
use disk::AlignedBytes;
pub use fetch::{Fetch, Fetches};
pub use mem::MemStorage;
pub(crate) use tx::blocks_held;
pub use tx::{
    free_blocks_in_steps, free_blocks_past_in_steps, transaction, Hint, OverBound, TxKind, TxLog, TxSpec,
};

/// Copies bytes `offset .. offset + buf.len()` of a block of
/// `block_size` bytes into `buf`, from `held`, its first bytes (the rest
/// are zeros: a buffer the cache keeps short,
/// [`crate::cache::BufferCache::mark_written_holding`]);
/// EINVAL if they pass the block's end.
pub(crate) fn copy_part(held: &[u8], block_size: usize, offset: usize, buf: &mut [u8]) -> Result<()> {
    let end = offset
        .checked_add(buf.len())
        .filter(|&end| end <= block_size)
        .ok_or_else(|| crate::error::errno(libc::EINVAL, "read past the end of the block"))?;
    let part = held.get(offset..end.min(held.len())).unwrap_or_default();
    buf[..part.len()].copy_from_slice(part);
    buf[part.len()..].fill(0);
    Ok(())
}

/// Copies a block into `buf` (one block) from `held`, its first bytes;
/// the rest are zeros (see [`copy_part`]).
pub(crate) fn copy_block(held: &[u8], buf: &mut [u8]) {
    let n = held.len().min(buf.len());
    buf[..n].copy_from_slice(&held[..n]);
    buf[n..].fill(0);
}

/// What `statfs` reports, in blocks of [`StatFs::block_size`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatFs {
    /// The block size.
    pub block_size: u32,
    /// Blocks the file system could ever hold data in.
    pub total_blocks: u64,
    /// Blocks a user can still write (what `df` shows as available).
    pub free_blocks: u64,
    /// Inodes in use plus those that could still be created.
    pub total_inodes: u64,
    /// Inodes that could still be created.
    pub free_inodes: u64,
    /// The longest name.
    pub name_max: u32,
}

/// A storage manager: where blocks and inodes live on the device.
///
/// Every method may fail with `Error::Errno(ENOSPC)` when an accepted change
/// could not be stored, and with `Error::Corrupt` or `Error::Io` when the
/// device fails or holds bad bytes. A method that fails leaves the file system
/// as it was before the call, except that `write_block` over several calls may
/// have stored some blocks and not others.
///
/// `Sync`, so that callers holding the file system shared may use the
/// `peek_*` methods, which change nothing a reader could see (DESIGN.md,
/// "Locks").
pub trait StorageManager: Send + Sync {
    /// Bytes in a block.
    fn block_size(&self) -> u32;

    /// The time for timestamps, by the mount's clock (the host's calendar
    /// unless the mount runs on simulated time: `TimeSource::calendar_ns`).
    fn now(&self) -> crate::format::TimeNs {
        crate::format::now_ns()
    }

    /// The largest file size this layout can represent, in bytes.
    fn max_file_size(&self) -> u64;

    /// The most file blocks one transaction should allocate, free or
    /// move, if this storage manager bounds it (`None`, the default: no
    /// bound). A write-ahead journal must hold a whole transaction in its
    /// log, so the namespace splits a truncate, the reclaim of a removed
    /// file, a fallocate or a copy larger than this into several
    /// transactions, each of which leaves the file whole, as ext4 restarts
    /// a handle that would outgrow its journal.
    fn blocks_per_tx(&self) -> Option<u64> {
        None
    }

    /// Allocates an inode number for a new node of type `mode` (the
    /// `S_IFMT` bits matter) in directory `parent`, and returns the new
    /// inode, zeroed but for its number and a generation different from any
    /// earlier use of that number. It is stored once `update` gives it
    /// attributes. FFS places it by `parent` and `mode` (a file near its
    /// directory, a new directory in a group chosen by dirpref).
    fn valloc(&mut self, parent: Ino, mode: u32) -> Result<Inode>;

    /// Frees inode `ino`, which must have no blocks left (see `free_blocks`).
    fn vfree(&mut self, ino: Ino) -> Result<()>;

    /// The current inode `ino`. Fails with ENOENT (as `Error::Errno`) for an
    /// inode number that is not allocated.
    fn vget(&mut self, ino: Ino) -> Result<Inode>;

    /// Inode `ino` if it is in memory and allocated, found without
    /// changing anything: what [`StorageManager::vget`] would return. `None`
    /// when it would have to be read, or freed, or when only `vget` can say
    /// (the default); the caller then asks `vget` with the file system held
    /// exclusively.
    fn peek_inode(&self, _ino: Ino) -> Option<Inode> {
        None
    }

    /// The contents of block `lbn` of `ino` if the buffer cache holds them
    /// (as [`StorageManager::read_block`] would fill it, but fewer bytes
    /// than a block when the rest are zeros, as FFS keeps a file's tail),
    /// found changing nothing but the cache's note that the block was used.
    /// `None` when it would have to be read, is a hole, or when only
    /// `read_block` can say (the default).
    fn peek_block(&self, _ino: Ino, _lbn: Lbn) -> Option<&[u8]> {
        None
    }

    /// Replaces the attributes of `ino`; its block map is left alone.
    fn update(&mut self, ino: Ino, attr: &InodeAttr) -> Result<()>;

    /// Reads block `lbn` of `ino` into `buf` (exactly one block long). A hole
    /// reads as zeros.
    fn read_block(&mut self, ino: Ino, lbn: Lbn, buf: &mut [u8]) -> Result<()>;

    /// Reads bytes `offset .. offset + buf.len()` of block `lbn` of `ino`
    /// (inside the one block). The default reads the whole block; a storage
    /// manager with a buffer cache copies only the part, which is what a
    /// dirhash lookup needs to confirm one entry (a random lookup in a
    /// large directory otherwise copies a cold block for 512 bytes).
    fn read_block_part(&mut self, ino: Ino, lbn: Lbn, offset: usize, buf: &mut [u8]) -> Result<()> {
        let mut block = vec![0u8; self.block_size() as usize];
        self.read_block(ino, lbn, &mut block)?;
        copy_part(&block, block.len(), offset, buf)
    }

    /// Reads the consecutive blocks `first ..` of `ino` into `buf` (a whole
    /// number of blocks). The default reads them one by one; a storage
    /// manager that knows where they lie reads neighbours on disk in one I/O
    /// (read clustering: LFS for data written together, FFS for its
    /// clusters).
    fn read_blocks(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<()> {
        let bs = self.block_size() as usize;
        if bs == 0 || !buf.len().is_multiple_of(bs) {
            return Err(crate::error::errno(libc::EINVAL, "read buffer is not whole blocks"));
        }
        for (i, block) in buf.chunks_exact_mut(bs).enumerate() {
            self.read_block(ino, first + i as Lbn, block)?;
        }
        Ok(())
    }

    /// [`StorageManager::read_blocks`], except that device transfers may be
    /// left undone, in the [`Fetches`] returned, for the caller to run
    /// after letting go of the file system's lock (module `fetch`). The
    /// default does them all now and returns `None`.
    fn read_blocks_later(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<Option<Fetches>> {
        self.read_blocks(ino, first, buf)?;
        Ok(None)
    }

    /// Caches the single blocks of `fetches` (run into `buf`, the read's
    /// buffer) that are not cached and still lie where they were read
    /// from. Only a hint: the default caches nothing.
    fn adopt_fetched(&mut self, _ino: Ino, _fetches: &Fetches, _buf: &[u8]) {}

    /// Stores `data` at byte `offset` inside block `lbn` of `ino`; the rest
    /// of the block keeps its contents (zeros for a hole). Fails with ENOSPC
    /// before changing anything if the block could not be stored.
    fn write_block(&mut self, ino: Ino, lbn: Lbn, offset: usize, data: &[u8]) -> Result<()>;

    /// Whether [`StorageManager::write_block`] of `len` bytes at `offset`
    /// of block `lbn` of `ino` would store them without the rest of the
    /// block, so that nobody need read it first (a write that changes a
    /// block in part reads it beforehand, without the lock, when this
    /// says no). The default: no.
    fn writes_part_unread(&mut self, _ino: Ino, _lbn: Lbn, _offset: usize, _len: usize) -> Result<bool> {
        Ok(false)
    }

    /// Stores `block`, the whole new contents of block `lbn` of `ino`, as
    /// [`StorageManager::write_block`] does. The caller copied it into its
    /// own buffer, possibly before taking the lock around the file system,
    /// and a storage manager that caches blocks keeps that buffer rather
    /// than copying again.
    fn write_whole_block(&mut self, ino: Ino, lbn: Lbn, block: AlignedBytes) -> Result<()> {
        self.write_block(ino, lbn, 0, &block)
    }

    /// The first data block at or after `lbn` that holds data, if any: how
    /// SEEK_DATA and SEEK_HOLE find their way through sparse files (they
    /// stop at the file's size), and how fallocate finds what it need not
    /// allocate again — past the size too, where `FALLOC_FL_KEEP_SIZE`
    /// put blocks.
    fn next_data(&mut self, ino: Ino, lbn: u64) -> Result<Option<u64>>;

    /// Frees data blocks `first ..= last` of `ino` (they become holes), along
    /// with indirect blocks left with nothing to point at. Truncation is
    /// `free_blocks(ino, first_gone, u64::MAX)`; punching a hole is a range.
    fn free_blocks(&mut self, ino: Ino, first: u64, last: u64) -> Result<()>;

    /// Moves data blocks `from .. from + count` of `ino` to `to .. to +
    /// count` (`bmap::move_blocks`): block `to + i` becomes what block
    /// `from + i` was — a hole stays a hole, and what `to + i` held is
    /// freed — and the blocks of the source range outside the destination
    /// become holes. What collapsing or inserting a range of a file is
    /// made of. Block pointers move, not data, where the layout allows it:
    /// FFS moves pointers; LFS rewrites each moved block that is on disk,
    /// since its segment summaries name every block by (inode, block
    /// number) and the cleaner judges a block live by that name. The
    /// file's size must be a multiple of the block size while its blocks
    /// move (FFS keeps a partial last block in fragments, which cannot
    /// move as a block): EINVAL otherwise. Fails with ENOSPC before moving
    /// anything when the blocks the move needs (indirect blocks; in LFS
    /// the rewritten blocks too) have no room.
    fn move_blocks(&mut self, ino: Ino, from: u64, to: u64, count: u64) -> Result<()>;

    /// Frees the extended-attribute block of `ino`, if it has one.
    fn free_xattr(&mut self, ino: Ino) -> Result<()>;

    /// Frees inode `ino`, which no name and no open file holds any more,
    /// with everything it holds: its blocks, its extended attributes, the
    /// inode. The inode is gone for `vget` once this returns; what it
    /// held may be freed later (soft updates' background deletes, 2000
    /// paper §4), provided `statfs` counts it as free meanwhile and a
    /// `sync` finishes the job.
    fn free_file(&mut self, ino: Ino) -> Result<()> {
        self.free_blocks(ino, 0, u64::MAX)?;
        self.free_xattr(ino)?;
        self.vfree(ino)
    }

    /// Guarantees that the next `blocks` writes of data blocks (new ones,
    /// or overwrites, which take a new block in a log) will not fail for
    /// lack of space, or fails with ENOSPC: lets `fallocate` promise space,
    /// and check for all of it before it changes anything.
    fn reserve_blocks(&mut self, blocks: u64) -> Result<()>;

    /// [`StorageManager::reserve_blocks`] for a step of an operation made
    /// in several transactions ([`StorageManager::blocks_per_tx`]) whose
    /// first transaction made sure of room for the whole: the promise
    /// carries on, as the namespace holds the file system between the
    /// steps. The default checks again; a storage manager whose check
    /// would refuse a step of a call that fits as a whole overrides it.
    fn reserve_promised_blocks(&mut self, blocks: u64) -> Result<()> {
        self.reserve_blocks(blocks)
    }

    /// Whether rewriting part of a block that holds data takes space: in
    /// a log it does (the block is written anew elsewhere); a layout that
    /// writes in place (FFS) says no, so that a hole punched on a full
    /// disk, which zeroes its partial end blocks in place, asks for no
    /// space it would not use.
    fn rewrites_take_space(&self) -> bool {
        true
    }

    /// Whether the 512-byte chunk of directory `dir` at byte `offset`
    /// should take no new entry now: the storage manager must still write
    /// it as it was before a change (soft updates keep a renamed file's
    /// old name on the disk, in that chunk's image, until its new name is
    /// durable), and an entry placed there could not reach the disk until
    /// that change has. The directory puts a new entry elsewhere if it
    /// can. No chunk is held by default.
    fn dir_chunk_held(&mut self, dir: Ino, offset: u64) -> bool {
        let _ = (dir, offset);
        false
    }

    /// The byte offset of the 512-byte chunk of directory `dir` that the
    /// disk may still show holding an entry `name` naming `ino`, gone in
    /// memory (soft updates keep a renamed file's old name until its new
    /// one is durable), if any: a file renamed back to that name goes
    /// there if it has room, so that one sector's write replaces the one
    /// entry by the other and the disk never shows the name twice. None
    /// by default.
    fn dir_chunk_keeping(&mut self, dir: Ino, name: &[u8], ino: Ino) -> Option<u64> {
        let _ = (dir, name, ino);
        None
    }

    /// Opens a transaction (see `tx`), or nests inside the open one.
    /// `spec` says what it is and bounds what it may dirty: a storage
    /// manager that must reserve room for it up front (a journal's log
    /// space, a log's reserve) does so here. May fail before anything
    /// changed: ENOSPC, EIO on an unmounted file system.
    fn begin(&mut self, spec: TxSpec) -> Result<()>;

    /// Reports a change the open transaction made (see [`Hint`]). May
    /// write: a layout that orders its writes does so here.
    fn hint(&mut self, hint: Hint) -> Result<()>;

    /// Ends the transaction begun last; the outermost one's end may write.
    /// Returns what the caller waits for before the operation is done as
    /// the storage manager promises it (a synchronous mount's durability;
    /// nothing for most): waiting on the ticket needs no access to the
    /// storage manager, so a caller can wait after letting others in, and
    /// operations waiting for the same flush share it.
    fn commit(&mut self) -> Result<Ticket>;

    /// Starts making the contents and attributes of `ino` durable
    /// (`datasync`: the attributes only as far as needed to read the data
    /// back): writes what it must, and returns the ticket that says when
    /// that is durable.
    fn start_fsync(&mut self, ino: Ino, datasync: bool) -> Result<Ticket>;

    /// Transactions since mount that dirtied more file blocks than
    /// `begin` was told ([`TxLog::over_bound`]); tests fail on any.
    fn tx_over_bound(&self) -> Option<OverBound> {
        None
    }

    /// Checks the invariants written on the storage manager's types (what
    /// the buffer cache counts, the sums an allocator or a segment usage
    /// table keeps beside its entries, a free list); says which one fails.
    /// Costs a walk of what is in memory: the model tests call it after
    /// every operation, and debug builds assert it at every sync. An error
    /// here is a bug in the storage manager, never damage on the disk.
    fn check_invariants(&self) -> std::result::Result<(), String>;

    /// Makes the contents and attributes of `ino` durable: `start_fsync`,
    /// then a wait on its ticket.
    fn fsync(&mut self, ino: Ino, datasync: bool) -> Result<()> {
        self.start_fsync(ino, datasync)?.wait()
    }

    /// Makes everything durable.
    fn sync(&mut self) -> Result<()>;

    /// Work that must happen with time: periodic checkpoints. Called about
    /// once a second by whoever drives the file system.
    fn tick(&mut self) -> Result<()>;

    /// Whether enough written data waits in memory that writing it now, on
    /// a thread of its own, would spare the next request from writing it:
    /// a driver with such a thread then calls [`write_behind`]. Cheap
    /// enough to ask after every request. The default: never.
    ///
    /// [`write_behind`]: StorageManager::write_behind
    fn write_behind_due(&self) -> bool {
        false
    }

    /// Writes out the data [`write_behind_due`] found waiting; nothing if
    /// nothing is due any more.
    ///
    /// [`write_behind_due`]: StorageManager::write_behind_due
    fn write_behind(&mut self) -> Result<()> {
        Ok(())
    }

    /// What this storage manager's memory is spent on, structure by
    /// structure (`fslab stat`). The default: nothing reported.
    fn memory(&self) -> Vec<crate::memory::MemoryUse> {
        Vec::new()
    }

    /// Space and inode counts.
    fn statfs(&mut self) -> Result<StatFs>;

    /// The blocks the device holds: a bound no file's size can pass, for
    /// checks on sizes read from disk. Cheaper than `statfs`, which counts
    /// free space (the default asks it).
    fn device_blocks(&mut self) -> Result<u64> {
        Ok(self.statfs()?.total_blocks)
    }

    /// Makes everything durable and leaves the image clean; the storage
    /// manager must not be used afterwards.
    fn unmount(&mut self) -> Result<()>;
}
