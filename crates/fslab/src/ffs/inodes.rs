//! Inodes of a mounted FFS: each lives at a fixed place in its cylinder
//! group's inode table (1993 paper §2.1: "inodes are allocated at file
//! system creation time"), found by arithmetic from its number.
//!
//! An inode is read through its inode-table block, held in the buffer cache
//! by device address, and kept decoded in `Ffs::inodes`. A changed inode is
//! encoded back into its block by [`Ffs::store_inode`] — the one place an
//! inode's bytes change — which leaves the block dirty for write-back (or
//! for an integrity mode to write at once).

use super::freed::Freed;
use super::fs::Ffs;
use crate::cache::{block_of, device_addr, device_key, BlockKey};
use crate::error::{errno, Error, Location};
use crate::format::inode::{Inode, InodeError, INODE_SIZE};
use crate::format::{Daddr, Ino, ROOT_INO};
use crate::Result;
use disk::AlignedBytes;
use std::sync::Arc;

impl Ffs {
    /// The inode-table block holding `ino`: its address and cache key.
    fn inode_block(&self, ino: Ino) -> (Daddr, BlockKey) {
        let addr = Daddr::new(self.sb.geometry.inode_block_addr(ino));
        (addr, device_key(addr))
    }

    /// Makes sure the inode-table block holding `ino` is cached; returns
    /// its key.
    fn load_inode_block(&mut self, ino: Ino) -> Result<BlockKey> {
        let (addr, key) = self.inode_block(ino);
        if !self.cache.contains(key) {
            let mut buf = AlignedBytes::zeroed(self.block_size());
            self.read_at(addr, &mut buf)?;
            self.cache.insert(key, Arc::new(buf), false);
        }
        Ok(key)
    }

    /// Whether the slot of `ino` holds no inode at all, whatever the
    /// bitmap says: never written (zeros), or cleared by a free, with no
    /// type and no pointers. What a crash leaves where a group reached the
    /// disk before the inode block (soft updates allow both).
    pub(super) fn slot_is_blank(&mut self, ino: Ino) -> Result<bool> {
        if let Some(inode) = self.inodes.get(ino) {
            return Ok(is_cleared(inode));
        }
        let key = self.load_inode_block(ino)?;
        let at = self.sb.geometry.inode_offset_in_block(ino);
        let block = self.cache.get(key).ok_or_else(|| errno(libc::EIO, "inode block evicted"))?;
        let slot = &block[at..at + INODE_SIZE];
        Ok(slot.iter().all(|&b| b == 0)
            || Inode::decode(slot).is_ok_and(|inode| inode.ino == ino && is_cleared(&inode)))
    }

    /// Whether the inode bitmap says `ino` is in use, and no free of it
    /// waits (`frees`): a freed inode is gone at once, whenever its bit
    /// clears.
    pub(super) fn is_allocated(&self, ino: Ino) -> bool {
        let geo = &self.sb.geometry;
        !self.is_free_pending(ino)
            && ino >= ROOT_INO
            && ino < geo.ninodes()
            && self
                .alloc
                .groups()
                .get(geo.ino_group(ino) as usize)
                .is_some_and(|g| g.is_inode_used(geo.ino_slot(ino)))
    }

    /// Reads inode `ino` from its block. ENOENT for a number not in use; a
    /// slot that fails its checksum, or holds another inode, is corrupt.
    fn read_inode(&mut self, ino: Ino) -> Result<Inode> {
        if !self.is_allocated(ino) {
            return Err(errno(libc::ENOENT, "inode is not allocated"));
        }
        let key = self.load_inode_block(ino)?;
        let block = self.cache.get(key).ok_or_else(|| errno(libc::EIO, "inode block evicted"))?;
        Self::inode_in_block(&self.sb.geometry, block, ino)
    }

    /// Inode `ino` from its slot in `block`, its inode-table block: a slot
    /// that fails its checksum, or holds another inode, is corrupt.
    fn inode_in_block(geo: &super::geometry::Geometry, block: &[u8], ino: Ino) -> Result<Inode> {
        let at = geo.inode_offset_in_block(ino);
        let bad = |why: &str| Error::corrupt_at("inode", Location::Inode(ino), why.to_string());
        let slot = block.get(at..at + INODE_SIZE).ok_or_else(|| bad("short slot"))?;
        match Inode::decode(slot) {
            Ok(inode) if inode.ino == ino => Ok(inode),
            Ok(other) => Err(bad(&format!("its slot holds inode {}", other.ino))),
            Err(InodeError::Checksum) => Err(bad("checksum mismatch")),
            Err(InodeError::Truncated) => Err(bad("short slot")),
        }
    }

    /// Inode `ino` decoded from its inode-table block, if that block is
    /// cached, without keeping it: for a call that holds the file system
    /// shared, when the inode cache has dropped the inode (it drops only
    /// clean ones, whose block holds what they hold). `None` where
    /// [`Ffs::read_inode`] would read the device or report an error.
    pub(super) fn peek_inode_in_block(&self, ino: Ino) -> Option<Inode> {
        if !self.is_allocated(ino) {
            return None;
        }
        let (_, key) = self.inode_block(ino);
        Self::inode_in_block(&self.sb.geometry, self.cache.peek(key)?, ino).ok()
    }

    /// The inode of `ino` as held in memory, read if needed.
    pub(super) fn cached_inode(&mut self, ino: Ino) -> Result<&mut Inode> {
        if self.inodes.get(ino).is_none() {
            let inode = self.read_inode(ino)?;
            self.inodes.insert(inode, false);
        }
        self.inodes.get_mut(ino).ok_or_else(|| errno(libc::ENOENT, "inode vanished from the cache"))
    }

    /// Marks inode `ino` changed in memory.
    pub(super) fn mark_inode_dirty(&mut self, ino: Ino) -> Result<()> {
        self.cached_inode(ino)?;
        self.inodes.mark_dirty(ino);
        Ok(())
    }

    /// Whether `inode`'s tail, by the size it has in memory, is a fragment
    /// run the inode points at in a block wholly past `before` bytes.
    fn tail_past(&mut self, ino: Ino, inode: &Inode, before: u64) -> Result<bool> {
        let bs = self.block_size() as u64;
        let Some((lbn, bytes)) = self.tail_of(ino, inode.attr.size)? else { return Ok(false) };
        let pointed = inode.direct.get(lbn as usize).is_some_and(|a| !a.is_none());
        Ok(pointed && (bytes as u64) < bs && lbn * bs >= before)
    }

    /// Encodes inode `ino`, if changed, into its inode-table block, which
    /// becomes dirty. Returns the block's key.
    pub(super) fn store_inode(&mut self, ino: Ino) -> Result<BlockKey> {
        let key = self.load_inode_block(ino)?;
        if !self.inodes.is_dirty(ino) {
            return Ok(key);
        }
        let Some(inode) = self.inodes.get(ino) else { return Ok(key) };
        let mut inode = *inode;
        // A size the open operation raised and has not confirmed (a write
        // in the middle of placing its blocks, `Ffs::size_before`) is not
        // one the file has had: the slot keeps the size before it, and the
        // inode stays changed for the store after the operation. (Soft
        // updates, stored mid-write by a realloc's free, rolled a crash
        // image back to such a slot: a file 24,576 bytes long that was
        // only ever 17,000 and 43,000.)
        let unconfirmed = self.size_before.get(&ino).copied().filter(|&before| before < inode.attr.size);
        if let Some(before) = unconfirmed {
            // Unless the write has given its last block a fragment run
            // wholly past that size: with it, the run would be a whole
            // block past the end, which fsck calls damage (a run not on a
            // block boundary) or reads as fragments not the file's. The
            // size reached is then the write's own (only its last block
            // is a tail), one the file has once it returns.
            if !self.tail_past(ino, &inode, before)? {
                inode.attr.size = before;
            }
        }
        let mut slot = [0u8; INODE_SIZE];
        inode.encode(&mut slot)?;
        let at = self.sb.geometry.inode_offset_in_block(ino);
        if unconfirmed.is_none() {
            self.inodes.mark_clean(ino);
        } else if self.cache.get(key).is_some_and(|b| b[at..at + INODE_SIZE] == slot) {
            // Stored so already: a sync's rounds find it changed still.
            return Ok(key);
        }
        let mode = self.mode();
        let block = self.cache.get_mut_dirty(key).ok_or_else(|| errno(libc::EIO, "inode block evicted"))?;
        if let Some(addr) = device_addr(key) {
            mode.inode_storing(ino, addr, at, &block[at..at + INODE_SIZE]);
        }
        block[at..at + INODE_SIZE].copy_from_slice(&slot);
        Ok(key)
    }

    /// Stores every changed inode in its block.
    pub(super) fn store_dirty_inodes(&mut self) -> Result<()> {
        let dirty: Vec<Ino> = self.inodes.dirty().iter().copied().collect();
        for ino in dirty {
            self.store_inode(ino)?;
        }
        Ok(())
    }

    /// The link count of `ino` as last stored in its block (what the disk
    /// will hold once the block is written), if the slot holds it.
    pub(super) fn stored_nlink(&mut self, ino: Ino) -> Result<Option<u32>> {
        Ok(self.stored_inode(ino)?.map(|i| i.attr.nlink))
    }

    /// Inode `ino` as last stored in its inode-table block (what the disk
    /// holds, or will once that block is written), `None` if the slot
    /// holds another inode or none.
    pub(super) fn stored_inode(&mut self, ino: Ino) -> Result<Option<Inode>> {
        let key = self.load_inode_block(ino)?;
        let at = self.sb.geometry.inode_offset_in_block(ino);
        let block = self.cache.get(key).ok_or_else(|| errno(libc::EIO, "inode block evicted"))?;
        Ok(Inode::decode(&block[at..at + INODE_SIZE]).ok().filter(|i| i.ino == ino))
    }

    /// Allocates an inode for a node of type `mode` in directory `parent`
    /// (placement by `Allocator::valloc`: the parent's group for a file,
    /// dirpref's group for a directory). Inode-table blocks never written
    /// before are zeroed in the cache first (lazy initialisation). The new
    /// inode's generation is one more than its slot's last.
    pub(super) fn alloc_inode(&mut self, parent: Ino, mode: u32) -> Result<Inode> {
        let is_dir = mode & crate::format::inode::kind::MASK == crate::format::inode::kind::DIR;
        let grant = self.with_frees_released(|fs| fs.alloc.valloc(parent, is_dir))?;
        let fpb = self.frags_per_block();
        for b in 0..grant.init_blocks as u64 {
            let addr = Daddr::new(grant.init_addr + b * fpb);
            self.cache.insert(device_key(addr), block_of(&vec![0u8; self.block_size()]), true);
            self.fresh_inode_blocks.insert(addr);
        }
        let ino = grant.ino;
        self.leak_scan_touch(ino);
        self.mode().inode_allocated(self, ino);
        let key = self.load_inode_block(ino)?;
        let at = self.sb.geometry.inode_offset_in_block(ino);
        let previous = self
            .cache
            .get(key)
            .and_then(|b| Inode::decode(&b[at..at + INODE_SIZE]).ok())
            .filter(|i| i.ino == ino)
            .map_or(0, |i| i.generation);
        let inode = Inode { ino, generation: previous.wrapping_add(1).max(1), ..Inode::default() };
        // The cached copy knows its type from the start: a create that
        // fails before it gives the inode attributes (a new directory's
        // first block refused with ENOSPC) frees it by its type, and the
        // group's count of directories must come back down.
        let mut typed = inode;
        typed.attr.mode = mode & crate::format::inode::kind::MASK;
        self.inodes.insert(typed, true);
        Ok(inode)
    }

    /// Frees inode `ino`, which holds no blocks any more: its bitmap bit,
    /// and its slot cleared — so that fsck, which trusts no bitmap after a
    /// crash, does not find it — keeping the generation for the next use.
    ///
    /// A file whose last name's removal the mode holds back keeps its slot
    /// until that removal is durable (`FreeWhen::NamesGone`); a directory's
    /// slot is cleared at once (its `..` counts in its parent until the
    /// disk shows it free, which the mode orders).
    pub(super) fn free_inode(&mut self, ino: Ino) -> Result<()> {
        let inode = *self.cached_inode(ino)?;
        if self.frees_when_names_gone(ino, inode.attr.is_dir()) {
            return self.free_file_later(ino);
        }
        for key in self.cache.keys_in(ino, i64::MIN..=i64::MAX) {
            self.cache.remove(key);
        }
        self.free_or_defer(ino, Freed::Inode { ino, is_dir: inode.attr.is_dir() })?;
        let cleared = Inode { ino, generation: inode.generation, ..Inode::default() };
        self.inodes.insert(cleared, true);
        self.store_inode(ino)?;
        self.inodes.remove(ino);
        Ok(())
    }
}

/// Whether `inode` is a slot a free cleared: no type, no pointers.
fn is_cleared(inode: &Inode) -> bool {
    inode.attr.mode == 0
        && inode.direct.iter().chain(inode.indirect.iter()).all(|a| a.is_none())
        && inode.xattr.is_none()
}
