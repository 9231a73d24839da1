//! Calls that hold the file system shared: `stat`, a lookup, a listing,
//! an extended attribute and a read answered from memory alone, which
//! callers run side by side with each other (DESIGN.md, "Locks").
//!
//! Each answers only when everything it needs is in memory and nothing
//! would change but what is kept atomic (the buffer cache's use bits,
//! dirhash's hints and counters, the pins behind their own lock); it
//! returns `None` otherwise, and the caller asks the exclusive call, which
//! reads what is missing, updates access times and reports damage. So an
//! answer here is the one the exclusive call would have given at the same
//! moment, and never an error of its own.

use super::atime::{needs_update, AtimePolicy};
use super::dir::{entries_from, Slot};
use super::{check_name, is_dot, Access, DirEntry, FileSystem};
use crate::error::errno;
use crate::format::blockno::XATTR_LBN;
use crate::format::inode::Inode;
use crate::format::{Ino, Lbn};
use crate::storage::StorageManager;
use crate::Result;

impl<S: StorageManager> FileSystem<S> {
    /// [`FileSystem::getattr`] from memory: `None` if the inode is not
    /// cached.
    pub fn getattr_cached(&self, ino: Ino) -> Option<Inode> {
        self.storage.peek_inode(ino)
    }

    /// [`FileSystem::lookup`] from memory, by the directory's hash: the
    /// entry's inode, or ENOENT. `None` if the directory has no hash, or a
    /// block or inode it needs is not cached; an invalid name, `.` and
    /// `..` are left to the exclusive call too.
    pub fn lookup_cached(&self, parent: Ino, name: &[u8]) -> Option<Result<Inode>> {
        if check_name(name).is_err() || is_dot(name) {
            return None;
        }
        if !self.storage.peek_inode(parent)?.attr.is_dir() {
            return None;
        }
        match super::dirhash::lookup_cached(&self.state.dirs, &self.storage, parent, name)? {
            Some(Slot { ino, .. }) => self.storage.peek_inode(ino).map(Ok),
            None => Some(Err(errno(libc::ENOENT, "no such entry"))),
        }
    }

    /// [`FileSystem::readdir`] from the buffer cache: `None` if a block it
    /// needs is not cached, the node is not a directory, a block does not
    /// parse (the exclusive call reports it), or the listing would update
    /// the directory's access time.
    pub fn readdir_cached(&self, ino: Ino, offset: u64, max: usize) -> Option<Vec<DirEntry>> {
        let inode = self.storage.peek_inode(ino)?;
        if !inode.attr.is_dir() {
            return None;
        }
        let options = self.state.atime;
        if options.directories
            && options.policy != AtimePolicy::Never
            && needs_update(options.policy, &inode.attr, self.storage.now())
        {
            return None;
        }
        let bs = u64::from(self.storage.block_size());
        let mut out = Vec::new();
        let mut lbn = offset / bs;
        while out.len() < max && lbn * bs < inode.attr.size {
            let block = self.storage.peek_block(ino, Lbn::try_from(lbn).ok()?)?;
            entries_from(block, ino, lbn * bs, offset, max, &mut out).ok()?;
            lbn += 1;
        }
        Some(out)
    }

    /// [`FileSystem::getxattr`] from memory: the value, or ENODATA. `None`
    /// if the inode, or its attribute block where it has one, is not cached,
    /// or the name or the block is bad (the exclusive call reports it). The
    /// kernel asks for `security.capability` before every cached write.
    pub fn getxattr_cached(&self, ino: Ino, name: &[u8]) -> Option<Result<Vec<u8>>> {
        super::xattr::check_name(name).ok()?;
        let inode = self.storage.peek_inode(ino)?;
        // A block not cached and with no address is a hole, no attributes:
        // an attribute block not yet written (LFS places blocks when it
        // writes them) is dirty, and a dirty block stays cached.
        let attrs = match self.storage.peek_block(ino, XATTR_LBN) {
            Some(block) => super::xattr::decode(block, ino).ok()?,
            None if inode.xattr.is_none() => Vec::new(),
            None => return None,
        };
        let found = attrs.into_iter().find(|(n, _)| n == name);
        Some(found.map(|(_, v)| v).ok_or_else(|| errno(libc::ENODATA, "no such attribute")))
    }

    /// [`FileSystem::read_as`] from the buffer cache: `None` if a block of
    /// the range is not cached (or a hole), the node is not a regular file,
    /// or the read would update the access time.
    pub fn read_cached(&self, ino: Ino, offset: u64, len: usize, access: Access) -> Option<Vec<u8>> {
        let inode = self.storage.peek_inode(ino)?;
        if !inode.attr.is_reg() {
            return None;
        }
        let policy = self.state.atime.policy;
        if access == Access::Touch
            && policy != AtimePolicy::Never
            && needs_update(policy, &inode.attr, self.storage.now())
        {
            return None;
        }
        let size = inode.attr.size;
        if offset >= size || len == 0 {
            return Some(Vec::new());
        }
        let end = size.min(offset.saturating_add(len as u64));
        let bs = u64::from(self.storage.block_size());
        let mut data = Vec::with_capacity((end - offset) as usize);
        let mut at = offset;
        while at < end {
            let lbn = at / bs;
            let block = self.storage.peek_block(ino, Lbn::try_from(lbn).ok()?)?;
            let from = (at - lbn * bs) as usize;
            let to = (end.min((lbn + 1) * bs) - lbn * bs) as usize;
            // A buffer shorter than the block holds its first bytes; zeros follow.
            let held = block.get(from..to.min(block.len())).unwrap_or_default();
            data.extend_from_slice(held);
            data.resize(data.len() + (to - from - held.len()), 0);
            at = (lbn + 1) * bs;
        }
        Some(data)
    }
}

/// Compiles only while every file system may be held shared by several
/// threads at once, as the calls above are.
#[allow(dead_code)]
fn shared_by_threads<S: StorageManager>() {
    fn sync<T: Sync>() {}
    sync::<FileSystem<S>>();
}
