//! Names: creating nodes (mknod, mkdir, symlink), link, unlink and rmdir.
//!
//! Each runs inside one transaction opened by `FileSystem`. The order
//! inside is 4.4BSD's, which a layout writing synchronously needs (2000
//! paper §2): validate everything that can fail with an errno; raise a link
//! count before the entry that it counts exists (for a new directory, its
//! parent's, which its `..` will count); initialise a new inode before the
//! entry that names it; remove an entry before the link count it counted
//! drops. Each change is reported as a hint after it is made. A failure
//! after allocation frees the new inode again.

use super::{check_name, is_dot, Creds, Ns, LINK_MAX};
use crate::error::errno;
use crate::format::dirent::{dt, dt_from_mode, new_dir_block};
use crate::format::inode::{kind, Inode, InodeAttr};
use crate::format::{Ino, ROOT_INO};
use crate::storage::{Hint, StorageManager};
use crate::Result;

/// What a new node holds besides its attributes.
enum Body<'t> {
    Empty,
    Directory,
    Symlink(&'t [u8]),
}

impl<S: StorageManager> Ns<'_, S> {
    pub(super) fn mknod(
        &mut self,
        parent: Ino,
        name: &[u8],
        mode: u32,
        rdev: u64,
        creds: Creds,
    ) -> Result<Inode> {
        // As Linux's may_mknod: type 0 means a regular file; a directory is EPERM.
        let mode = match mode & kind::MASK {
            0 => mode | kind::REG,
            kind::REG | kind::FIFO | kind::SOCK | kind::CHR | kind::BLK => mode,
            kind::DIR => return Err(errno(libc::EPERM, "mknod cannot make a directory")),
            _ => return Err(errno(libc::EINVAL, "mknod of an unknown type")),
        };
        let is_device = matches!(mode & kind::MASK, kind::CHR | kind::BLK);
        self.create(parent, name, mode, if is_device { rdev } else { 0 }, creds, Body::Empty)
    }

    pub(super) fn mkdir(&mut self, parent: Ino, name: &[u8], mode: u32, creds: Creds) -> Result<Inode> {
        self.create(parent, name, kind::DIR | (mode & 0o7777), 0, creds, Body::Directory)
    }

    pub(super) fn symlink(&mut self, parent: Ino, name: &[u8], target: &[u8], creds: Creds) -> Result<Inode> {
        if target.is_empty() {
            return Err(errno(libc::ENOENT, "empty symlink target"));
        }
        // PATH_MAX counts the terminating NUL: a longer target could not
        // be read back through the kernel (FUSE's readlink gives 4,095
        // bytes at most), nor made through it.
        if target.len() > (self.s.block_size() as usize).min(libc::PATH_MAX as usize - 1) {
            return Err(errno(libc::ENAMETOOLONG, "symlink target longer than a block or PATH_MAX - 1"));
        }
        if target.contains(&0) {
            return Err(errno(libc::EINVAL, "symlink target contains NUL"));
        }
        self.create(parent, name, kind::LNK | 0o777, 0, creds, Body::Symlink(target))
    }

    /// Validates the parent and name, then makes the node.
    fn create(
        &mut self,
        parent: Ino,
        name: &[u8],
        mode: u32,
        rdev: u64,
        creds: Creds,
        body: Body,
    ) -> Result<Inode> {
        check_name(name)?;
        if is_dot(name) {
            return Err(errno(libc::EEXIST, "'.' and '..' always exist"));
        }
        let p = self.dir_inode(parent)?.attr;
        if p.nlink == 0 {
            return Err(errno(libc::ENOENT, "parent directory was removed"));
        }
        if self.dir_lookup(parent, name)?.is_some() {
            return Err(errno(libc::EEXIST, "name exists"));
        }
        let is_dir = matches!(body, Body::Directory);
        if is_dir && p.nlink >= LINK_MAX {
            return Err(errno(libc::EMLINK, "parent has too many subdirectories"));
        }
        let now = self.s.now();
        let mut attr = InodeAttr {
            mode,
            nlink: if is_dir { 2 } else { 1 },
            uid: creds.uid,
            gid: creds.gid,
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            rdev,
            ..InodeAttr::default()
        };
        // BSD group semantics under a set-group-ID directory (as Linux does it).
        if p.mode & libc::S_ISGID != 0 {
            attr.gid = p.gid;
            if is_dir {
                attr.mode |= libc::S_ISGID;
            }
        }
        let ino = self.s.valloc(parent, mode)?.ino;
        self.st.dirs.forget(ino);
        // The parent's link for the new directory's `..` comes first.
        if is_dir {
            self.add_links(parent, now, 1)?;
        }
        if let Err(e) = self.fill_new_node(parent, name, ino, &mut attr, body) {
            // Best effort: the entry was not added, so nothing names the
            // inode, and the parent's link goes back.
            let _ = self.destroy(ino);
            if is_dir {
                let _ = self.add_links(parent, now, -1);
            }
            return Err(e);
        }
        self.touch_dir(parent, now, 0)?;
        self.s.vget(ino)
    }

    fn fill_new_node(
        &mut self,
        parent: Ino,
        name: &[u8],
        ino: Ino,
        attr: &mut InodeAttr,
        body: Body,
    ) -> Result<()> {
        let bs = self.s.block_size() as usize;
        match body {
            Body::Empty => {}
            Body::Directory => {
                self.s.write_block(ino, 0, 0, &new_dir_block(bs, ino, parent))?;
                attr.size = bs as u64;
            }
            Body::Symlink(target) => {
                self.s.write_block(ino, 0, 0, target)?;
                attr.size = target.len() as u64;
            }
        }
        self.s.update(ino, attr)?;
        let offset = self.dir_add(parent, name, ino, dt_from_mode(attr.mode))?;
        self.s.hint(Hint::EntryAdded { dir: parent, offset, ino })
    }

    pub(super) fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Inode> {
        check_name(new_name)?;
        if is_dot(new_name) {
            return Err(errno(libc::EEXIST, "'.' and '..' always exist"));
        }
        let target = self.s.vget(ino)?.attr;
        if target.is_dir() {
            return Err(errno(libc::EPERM, "hard links to directories are not allowed"));
        }
        if target.nlink == 0 {
            return Err(errno(libc::ENOENT, "the file has been removed"));
        }
        if target.nlink >= LINK_MAX {
            return Err(errno(libc::EMLINK, "too many links"));
        }
        if self.dir_inode(new_parent)?.attr.nlink == 0 {
            return Err(errno(libc::ENOENT, "parent directory was removed"));
        }
        if self.dir_lookup(new_parent, new_name)?.is_some() {
            return Err(errno(libc::EEXIST, "name exists"));
        }
        let now = self.s.now();
        self.add_links(ino, now, 1)?;
        match self.dir_add(new_parent, new_name, ino, dt_from_mode(target.mode)) {
            Ok(offset) => self.s.hint(Hint::EntryAdded { dir: new_parent, offset, ino })?,
            Err(e) => {
                let _ = self.add_links(ino, now, -1);
                return Err(e);
            }
        }
        self.touch_dir(new_parent, now, 0)?;
        self.s.vget(ino)
    }

    pub(super) fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<()> {
        check_name(name)?;
        if is_dot(name) {
            return Err(errno(libc::EISDIR, "cannot unlink '.' or '..'"));
        }
        self.dir_inode(parent)?;
        let slot = self.dir_lookup(parent, name)?.ok_or(errno(libc::ENOENT, "no such entry"))?;
        if self.s.vget(slot.ino)?.attr.is_dir() {
            return Err(errno(libc::EISDIR, "unlink of a directory"));
        }
        self.dir_remove(parent, name)?;
        self.s.hint(Hint::EntryRemoved { dir: parent, offset: slot.offset, ino: slot.ino })?;
        let now = self.s.now();
        let attr = self.add_links(slot.ino, now, -1)?;
        self.touch_dir(parent, now, 0)?;
        if attr.nlink == 0 {
            self.release(slot.ino)?;
        }
        Ok(())
    }

    pub(super) fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<()> {
        check_name(name)?;
        if name == b"." {
            return Err(errno(libc::EINVAL, "rmdir of '.'"));
        }
        if name == b".." {
            return Err(errno(libc::ENOTEMPTY, "rmdir of '..'"));
        }
        self.dir_inode(parent)?;
        let slot = self.dir_lookup(parent, name)?.ok_or(errno(libc::ENOENT, "no such entry"))?;
        if !self.s.vget(slot.ino)?.attr.is_dir() {
            return Err(errno(libc::ENOTDIR, "rmdir of a non-directory"));
        }
        if slot.ino == ROOT_INO {
            return Err(errno(libc::EBUSY, "rmdir of the root"));
        }
        if !self.dir_is_empty(slot.ino)? {
            return Err(errno(libc::ENOTEMPTY, "directory not empty"));
        }
        self.dir_remove(parent, name)?;
        self.s.hint(Hint::EntryRemoved { dir: parent, offset: slot.offset, ino: slot.ino })?;
        let now = self.s.now();
        self.modify(slot.ino, |a| {
            a.nlink = 0;
            a.ctime = now;
        })?;
        self.s.hint(Hint::LinkCount { ino: slot.ino, nlink: 0 })?;
        self.touch_dir(parent, now, -1)?;
        self.release(slot.ino)
    }
}

/// The `DT_*` type of an inode (rename needs it for retargeted entries).
pub(super) fn dtype_of(attr: &InodeAttr) -> u8 {
    if attr.is_dir() {
        dt::DIR
    } else {
        dt_from_mode(attr.mode)
    }
}
