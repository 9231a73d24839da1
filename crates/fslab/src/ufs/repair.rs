//! Repairs for fsck (`fslab fsck`): directory and link-count changes that the
//! ordinary operations refuse because they keep invariants a damaged image
//! has already lost. Each runs as one transaction and leaves link
//! counts alone unless it says otherwise; fsck recounts them afterwards.
//!
//! * [`FileSystem::repair_add_entry`] — name an existing inode (lost+found).
//! * [`FileSystem::repair_retarget_entry`] — point an entry (`.`, `..`, or one
//!   with the wrong type) at an inode, with that inode's type.
//! * [`FileSystem::repair_remove_entry`] — drop an entry whatever it names.
//! * [`FileSystem::repair_remove_entry_at`] — drop the entry at one place
//!   (a name listed twice).
//! * [`FileSystem::repair_reset_chunk`] — replace an unreadable directory chunk.
//! * [`FileSystem::repair_set_nlink`] — set a link count.
//! * [`FileSystem::repair_free_inode`] — free an inode nothing names.

use super::dir::Slot;
use super::{FileSystem, Ns};
use crate::error::errno;
use crate::format::dirent::{dt, dt_from_mode, init_chunk, new_dir_block, DIRBLKSIZ};
use crate::format::{Ino, Lbn};
use crate::storage::{Hint, StorageManager, TxKind};
use crate::Result;

impl<S: StorageManager> Ns<'_, S> {
    fn dtype_for(&mut self, ino: Ino) -> Result<u8> {
        let attr = self.s.vget(ino)?.attr;
        Ok(if attr.is_dir() { dt::DIR } else { dt_from_mode(attr.mode) })
    }
}

impl<S: StorageManager> FileSystem<S> {
    /// Adds the entry `name` → `ino` to directory `dir`, typed from `ino`'s
    /// mode. Fails with EEXIST if `dir` already holds `name`.
    pub fn repair_add_entry(&mut self, dir: Ino, name: &[u8], ino: Ino) -> Result<()> {
        super::check_name(name)?;
        self.tx(TxKind::Link, |ns| {
            ns.dir_inode(dir)?;
            if ns.dir_lookup(dir, name)?.is_some() {
                return Err(errno(libc::EEXIST, "name exists"));
            }
            let dtype = ns.dtype_for(ino)?;
            let offset = ns.dir_add(dir, name, ino, dtype)?;
            ns.s.hint(Hint::EntryAdded { dir, offset, ino })
        })
    }

    /// Points the existing entry `name` of directory `dir` at `ino`, typed
    /// from `ino`'s mode (fixes a wrong `.`, `..` or entry type).
    pub fn repair_retarget_entry(&mut self, dir: Ino, name: &[u8], ino: Ino) -> Result<()> {
        self.tx(TxKind::Rename, |ns| {
            ns.dir_inode(dir)?;
            let dtype = ns.dtype_for(ino)?;
            let old = ns.dir_retarget(dir, name, ino, dtype)?;
            ns.s.hint(Hint::EntryChanged { dir, offset: old.offset, old: old.ino, ino })
        })
    }

    /// Removes the entry `name` of directory `dir`, whatever it names (a
    /// free or unreadable inode): no inode is touched.
    pub fn repair_remove_entry(&mut self, dir: Ino, name: &[u8]) -> Result<()> {
        self.tx(TxKind::Unlink, |ns| {
            ns.dir_inode(dir)?;
            let slot = ns.dir_remove(dir, name)?;
            ns.s.hint(Hint::EntryRemoved { dir, offset: slot.offset, ino: slot.ino })
        })
    }

    /// Removes the entry `name` → `ino` at byte `offset` of directory
    /// `dir`, whatever it names; no inode is touched. For a name listed
    /// twice, where [`repair_remove_entry`](Self::repair_remove_entry)
    /// could take either entry: fsck keeps the first and removes the later
    /// ones by their place. Fails with ENOENT unless that entry is there.
    pub fn repair_remove_entry_at(&mut self, dir: Ino, name: &[u8], offset: u64, ino: Ino) -> Result<()> {
        self.tx(TxKind::Unlink, |ns| {
            let attr = ns.dir_inode(dir)?.attr;
            if offset >= attr.size {
                return Err(errno(libc::ENOENT, "no such entry"));
            }
            // A hash built over a directory that lists a name twice holds
            // one of the two entries at most: the blocks are the truth.
            ns.st.dirs.forget(dir);
            let slot = ns.dir_remove_slot(dir, name, Slot { offset, ino })?;
            ns.s.hint(Hint::EntryRemoved { dir, offset: slot.offset, ino: slot.ino })
        })
    }

    /// Replaces the 512-byte chunk at byte `offset` of directory `dir` with
    /// an empty one — or, for the first chunk, one holding `.` and `..`
    /// (naming `parent`). The entries it held are lost; fsck reconnects the
    /// inodes they named.
    pub fn repair_reset_chunk(&mut self, dir: Ino, offset: u64, parent: Ino) -> Result<()> {
        self.tx(TxKind::Unlink, |ns| {
            let attr = ns.dir_inode(dir)?.attr;
            let bs = ns.s.block_size() as u64;
            if !offset.is_multiple_of(DIRBLKSIZ as u64) || offset >= attr.size {
                return Err(errno(libc::EINVAL, "no such directory chunk"));
            }
            let mut chunk = vec![0u8; DIRBLKSIZ];
            if offset == 0 {
                chunk.copy_from_slice(&new_dir_block(DIRBLKSIZ, dir, parent));
            } else {
                init_chunk(&mut chunk);
            }
            ns.st.dirs.forget(dir);
            ns.s.write_block(dir, (offset / bs) as Lbn, (offset % bs) as usize, &chunk)
        })
    }

    /// Sets the link count of `ino`.
    pub fn repair_set_nlink(&mut self, ino: Ino, nlink: u32) -> Result<()> {
        self.tx(TxKind::SetAttr, |ns| {
            ns.modify(ino, |a| a.nlink = nlink)?;
            ns.s.hint(Hint::LinkCount { ino, nlink })
        })
    }

    /// Frees inode `ino` and every block it holds, whatever its link count:
    /// for an inode no directory names (an orphan left by a crash).
    pub fn repair_free_inode(&mut self, ino: Ino) -> Result<()> {
        self.state.pins().remove(&ino);
        self.tx(TxKind::Reclaim, |ns| {
            ns.s.vget(ino)?;
            ns.destroy(ino)
        })
    }
}
