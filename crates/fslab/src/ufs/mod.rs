//! The namespace (UFS): names, directories, links, rename, file I/O by byte
//! offset, attributes and extended attributes, over any
//! [`StorageManager`](crate::storage::StorageManager).
//!
//! This layer knows no segment and no cylinder group. It reads and writes
//! whole logical blocks through the storage manager and brackets every
//! operation that changes more than one inode with a directory-operation
//! guard ([`crate::storage::dirop`]).

use crate::format::inode::Inode;
use crate::format::{Ino, TimeNs};
use crate::storage::{StatFs, StorageManager};
use crate::Result;

/// A change of attributes (`setattr`): each `Some` field is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits (the type bits are ignored).
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New length: truncates or extends with a hole.
    pub size: Option<u64>,
    /// New access time.
    pub atime: Option<TimeSet>,
    /// New modification time.
    pub mtime: Option<TimeSet>,
    /// New status-change time (otherwise set to now by any change).
    pub ctime: Option<TimeNs>,
    /// New birth time.
    pub btime: Option<TimeNs>,
    /// New BSD file flags.
    pub flags: Option<u32>,
}

/// A timestamp to set: the current time, or a given one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSet {
    /// The time of the call.
    Now,
    /// This time.
    At(TimeNs),
}

/// Who is creating a node: the owner and group it starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Creds {
    /// The caller's user id.
    pub uid: u32,
    /// The caller's group id.
    pub gid: u32,
}

/// How `rename` treats an existing target (Linux `renameat2` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenameFlags {
    /// Fail with EEXIST if the target exists.
    pub noreplace: bool,
    /// Swap source and target, which must both exist.
    pub exchange: bool,
}

/// One directory entry as `readdir` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The inode it names.
    pub ino: Ino,
    /// The file type bits (`format::inode::kind`).
    pub kind: u32,
    /// The name.
    pub name: Vec<u8>,
    /// The offset to pass to `readdir` to continue after this entry.
    pub next_offset: u64,
}

/// The file system: a namespace over a storage manager.
///
/// Lifecycle: [`FileSystem::new`] over a mounted storage manager; calls in
/// any order; [`FileSystem::unmount`] last. Callers serialize calls (the FUSE
/// adapter holds one lock around the whole file system).
///
/// Inodes whose link count reaches zero while pinned (an open file, or one the
/// kernel still knows) are freed when the last pin goes: see [`FileSystem::pin`].
pub struct FileSystem<S: StorageManager> {
    storage: S,
}

impl<S: StorageManager> FileSystem<S> {
    /// A namespace over `storage`.
    pub fn new(storage: S) -> FileSystem<S> {
        FileSystem { storage }
    }

    /// The storage manager underneath.
    pub fn storage(&mut self) -> &mut S {
        &mut self.storage
    }

    /// The attributes of the entry `name` in directory `parent`.
    pub fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Inode> {
        let _ = (parent, name);
        todo!()
    }

    /// The attributes of `ino`.
    pub fn getattr(&mut self, ino: Ino) -> Result<Inode> {
        let _ = ino;
        todo!()
    }

    /// Changes attributes; a size change truncates or extends.
    pub fn setattr(&mut self, ino: Ino, change: &SetAttr) -> Result<Inode> {
        let _ = (ino, change);
        todo!()
    }

    /// Creates a node of any non-directory kind (`mode` holds type and
    /// permission bits; `rdev` is used for devices).
    pub fn mknod(&mut self, parent: Ino, name: &[u8], mode: u32, rdev: u64, creds: Creds) -> Result<Inode> {
        let _ = (parent, name, mode, rdev, creds);
        todo!()
    }

    /// Creates a directory.
    pub fn mkdir(&mut self, parent: Ino, name: &[u8], mode: u32, creds: Creds) -> Result<Inode> {
        let _ = (parent, name, mode, creds);
        todo!()
    }

    /// Removes a non-directory entry.
    pub fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<()> {
        let _ = (parent, name);
        todo!()
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<()> {
        let _ = (parent, name);
        todo!()
    }

    /// Creates a symbolic link holding `target`.
    pub fn symlink(&mut self, parent: Ino, name: &[u8], target: &[u8], creds: Creds) -> Result<Inode> {
        let _ = (parent, name, target, creds);
        todo!()
    }

    /// The target of a symbolic link.
    pub fn readlink(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let _ = ino;
        todo!()
    }

    /// Renames `parent/name` to `new_parent/new_name`.
    pub fn rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
        flags: RenameFlags,
    ) -> Result<()> {
        let _ = (parent, name, new_parent, new_name, flags);
        todo!()
    }

    /// Adds the name `new_parent/new_name` for `ino`.
    pub fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Inode> {
        let _ = (ino, new_parent, new_name);
        todo!()
    }

    /// Reads up to `len` bytes at `offset`; fewer at end of file.
    pub fn read(&mut self, ino: Ino, offset: u64, len: usize) -> Result<Vec<u8>> {
        let _ = (ino, offset, len);
        todo!()
    }

    /// Writes `data` at `offset`; returns the bytes written.
    pub fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        let _ = (ino, offset, data);
        todo!()
    }

    /// `fallocate(2)`: `mode` holds the `FALLOC_FL_*` flags.
    pub fn fallocate(&mut self, ino: Ino, offset: u64, len: u64, mode: i32) -> Result<()> {
        let _ = (ino, offset, len, mode);
        todo!()
    }

    /// `lseek(2)` for SEEK_DATA and SEEK_HOLE (`whence` as in libc).
    pub fn lseek(&mut self, ino: Ino, offset: u64, whence: i32) -> Result<u64> {
        let _ = (ino, offset, whence);
        todo!()
    }

    /// `copy_file_range(2)`: returns the bytes copied.
    pub fn copy_file_range(
        &mut self,
        from: Ino,
        from_offset: u64,
        to: Ino,
        to_offset: u64,
        len: u64,
    ) -> Result<u64> {
        let _ = (from, from_offset, to, to_offset, len);
        todo!()
    }

    /// Entries of directory `ino` from `offset` (0 = the start), at most `max`.
    pub fn readdir(&mut self, ino: Ino, offset: u64, max: usize) -> Result<Vec<DirEntry>> {
        let _ = (ino, offset, max);
        todo!()
    }

    /// Makes `ino` durable.
    pub fn fsync(&mut self, ino: Ino, datasync: bool) -> Result<()> {
        self.storage.fsync(ino, datasync)
    }

    /// Makes everything durable.
    pub fn sync(&mut self) -> Result<()> {
        self.storage.sync()
    }

    /// Space and inode counts.
    pub fn statfs(&mut self) -> Result<StatFs> {
        self.storage.statfs()
    }

    /// Sets extended attribute `name` (`flags`: XATTR_CREATE / XATTR_REPLACE).
    pub fn setxattr(&mut self, ino: Ino, name: &[u8], value: &[u8], flags: i32) -> Result<()> {
        let _ = (ino, name, value, flags);
        todo!()
    }

    /// The value of extended attribute `name`.
    pub fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        let _ = (ino, name);
        todo!()
    }

    /// The names of all extended attributes, each followed by a NUL byte.
    pub fn listxattr(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let _ = ino;
        todo!()
    }

    /// Removes extended attribute `name`.
    pub fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        let _ = (ino, name);
        todo!()
    }

    /// Notes one more user of `ino` (a kernel lookup, an open file).
    pub fn pin(&mut self, ino: Ino) {
        let _ = ino;
        todo!()
    }

    /// Drops `count` users of `ino`; frees it if it has no links and no users.
    pub fn unpin(&mut self, ino: Ino, count: u64) -> Result<()> {
        let _ = (ino, count);
        todo!()
    }

    /// Periodic work (checkpoints); call about once a second.
    pub fn tick(&mut self) -> Result<()> {
        self.storage.tick()
    }

    /// Frees unlinked inodes still pinned, makes everything durable and
    /// leaves a clean image.
    pub fn unmount(&mut self) -> Result<()> {
        self.storage.unmount()
    }
}
