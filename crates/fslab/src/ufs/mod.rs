//! The namespace (UFS): names, directories, links, rename, file I/O by byte
//! offset, attributes and extended attributes, over any
//! [`StorageManager`](crate::storage::StorageManager).
//!
//! This layer knows no segment and no cylinder group. It reads and writes
//! whole logical blocks through the storage manager, runs every operation
//! that changes more than one block or field as one transaction
//! ([`crate::storage::transaction`]) and reports what it changed as
//! dependency hints ([`crate::storage::Hint`]), each after the change.
//!
//! Parts: `names` (create, link, unlink, rmdir), `rename`, `dir` (entries in
//! directory blocks), `dirhash` (the in-memory hashes that make large
//! directories fast), `file` (read, write, truncate, fallocate, lseek,
//! copy), `shift` (collapsing and inserting a range of a file), `xattr`
//! (the extended-attribute block).
//! Permission checks are left to the kernel (`default_permissions`); reads
//! update access times as `atime` says (not at all, unless set).

mod atime;
mod dir;
mod dirhash;
mod file;
mod names;
mod rename;
mod repair;
mod shared;
mod shift;
#[cfg(test)]
mod tests;
mod xattr;

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::error::errno;
use crate::format::inode::{Inode, InodeAttr};
use crate::format::{Ino, TimeNs, NAME_MAX};
use crate::storage::{Hint, StatFs, StorageManager, Ticket, TxKind, TxSpec};
use crate::Result;

pub use atime::{AtimeOptions, AtimePolicy};
pub use dirhash::{DirhashOptions, DirhashStats};
use file::Room;
pub use file::{BlockCopies, PendingRead, ReadStart};
pub use xattr::{XATTR_MAGIC, XATTR_VALUE_MAX};

/// The most links an inode may have (BSD `LINK_MAX`); past it, EMLINK.
pub const LINK_MAX: u32 = 32767;

/// Whether a read updates the file's access time (as the mount's atime
/// options say) or leaves it alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// As the mount's options say.
    Touch,
    /// Never: a read through a descriptor opened `O_NOATIME` (Linux's
    /// `file_accessed()` skips those).
    NoAtime,
}

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
    /// Clear set-user-ID and set-group-ID as a change of owner does, with
    /// nothing else changed: the kernel's request, sent as a SETATTR with
    /// no field when a file system handles privilege removal itself
    /// (FUSE's `HANDLE_KILLPRIV`), by `chown(f, -1, -1)` and by a write of
    /// a caller without `CAP_FSETID`.
    pub kill_privileges: bool,
    /// Who asks: decides which of set-user-ID and set-group-ID a truncate
    /// or a change of owner clears.
    pub who: Privilege,
}

/// The caller of a change to a file, as Linux's rules for clearing
/// set-user-ID and set-group-ID see it (`setattr_should_drop_suidgid`,
/// `setattr_should_drop_sgid` in fs/attr.c).
///
/// The default is an unprivileged member of the file's group, which clears
/// the least a caller without `CAP_FSETID` can clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Privilege {
    /// The caller holds `CAP_FSETID`: a write, truncate or fallocate clears
    /// nothing, and a change of owner keeps a set-group-ID bit that marks
    /// mandatory locking (group-execute clear).
    pub fsetid: bool,
    /// The caller is in the file's group (before a change of owner):
    /// otherwise set-group-ID goes even where group-execute is clear.
    pub in_group: bool,
}

impl Default for Privilege {
    fn default() -> Privilege {
        Privilege { fsetid: false, in_group: true }
    }
}

impl Privilege {
    /// A caller with every privilege (root with `CAP_FSETID`).
    pub const ROOT: Privilege = Privilege { fsetid: true, in_group: true };
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
/// any order; [`FileSystem::unmount`] last. Callers serialize the calls on
/// `&mut self`; the `*_cached` calls on `&self` may run beside each other
/// (the FUSE adapter holds a reader-writer lock around the whole file
/// system, exclusively for the first, shared for the second).
///
/// Inodes whose link count reaches zero while pinned (an open file, or one the
/// kernel still knows) are freed when the last pin goes: see [`FileSystem::pin`].
/// An inode's life: allocated by a create (nlink ≥ 1) → linked and unlinked
/// any number of times → nlink 0: freed at once if unpinned, else an
/// *orphan* until its last unpin or unmount.
///
/// Durability: a call whose storage manager promises durability (fsync; a
/// synchronous mount's namespace operations) waits for it before it
/// returns — unless [`FileSystem::wait_outside`] was set, when it leaves
/// the wait to its caller ([`FileSystem::take_ticket`]).
pub struct FileSystem<S: StorageManager> {
    storage: S,
    state: State,
    /// Waits left to the caller, joined.
    pending: Ticket,
    /// Whether the caller waits ([`FileSystem::wait_outside`]).
    wait_outside: bool,
}

/// The namespace's memory: nothing here is the truth about the disk except
/// pins and orphans, which exist only in memory by nature.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Directory hashes (may be dropped at any time).
    dirs: dirhash::Dirhash,
    /// Users of each inode (kernel lookups, open files). Behind a lock of
    /// its own, so that a lookup holding the file system shared can add
    /// one ([`FileSystem::pin`]); everything else holds the file system
    /// exclusively and reaches it through [`State::pins`].
    pins: Mutex<HashMap<Ino, u64>>,
    /// Inodes with no links that are still pinned, or whose blocks are
    /// too many for one transaction (`StorageManager::blocks_per_tx`).
    orphans: HashSet<Ino>,
    /// Orphans with no pin, to be freed in steps once the transaction
    /// that took their last name has ended.
    unpinned_orphans: Vec<Ino>,
    /// When reads update access times (a mount option).
    atime: AtimeOptions,
    /// Whether every change is refused (a read-only mount).
    read_only: bool,
}

impl State {
    /// The pins, to a caller holding the file system exclusively.
    fn pins(&mut self) -> &mut HashMap<Ino, u64> {
        self.pins.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// The pins, to a caller holding the file system shared.
    fn pins_shared(&self) -> MutexGuard<'_, HashMap<Ino, u64>> {
        self.pins.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One call's view of the file system: the storage manager (inside a
/// transaction, the one `transaction` hands over) and the namespace state.
pub(crate) struct Ns<'a, S: StorageManager> {
    s: &'a mut S,
    st: &'a mut State,
}

/// Checks a name for use in a directory, as Linux's path walk would:
/// empty → ENOENT, too long → ENAMETOOLONG, `/` or NUL → EINVAL.
pub(crate) fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() {
        Err(errno(libc::ENOENT, "empty name"))
    } else if name.len() > NAME_MAX {
        Err(errno(libc::ENAMETOOLONG, "name longer than 255 bytes"))
    } else if name.iter().any(|&b| b == b'/' || b == 0) {
        Err(errno(libc::EINVAL, "name contains '/' or NUL"))
    } else {
        Ok(())
    }
}

/// Whether `name` is `.` or `..`.
pub(crate) fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

impl<S: StorageManager> Ns<'_, S> {
    /// Inode `ino`, which must be a directory (ENOTDIR otherwise).
    fn dir_inode(&mut self, ino: Ino) -> Result<Inode> {
        let inode = self.s.vget(ino)?;
        if !inode.attr.is_dir() {
            return Err(errno(libc::ENOTDIR, "not a directory"));
        }
        Ok(inode)
    }

    /// Reads, changes and writes back the attributes of `ino`.
    fn modify(&mut self, ino: Ino, change: impl FnOnce(&mut InodeAttr)) -> Result<InodeAttr> {
        let mut attr = self.s.vget(ino)?.attr;
        change(&mut attr);
        self.s.update(ino, &attr)?;
        Ok(attr)
    }

    /// Sets mtime and ctime of directory `dir` to `now` and adds `links` to
    /// its link count.
    fn touch_dir(&mut self, dir: Ino, now: TimeNs, links: i32) -> Result<()> {
        self.modify(dir, |a| {
            a.mtime = now;
            a.ctime = now;
            a.nlink = a.nlink.saturating_add_signed(links);
        })?;
        if links != 0 {
            self.hint_nlink(dir)?;
        }
        Ok(())
    }

    /// Adds `links` to the link count of `ino` (and sets its ctime to
    /// `now`), and reports the new count.
    fn add_links(&mut self, ino: Ino, now: TimeNs, links: i32) -> Result<InodeAttr> {
        let attr = self.modify(ino, |a| {
            a.nlink = a.nlink.saturating_add_signed(links);
            a.ctime = now;
        })?;
        self.s.hint(Hint::LinkCount { ino, nlink: attr.nlink })?;
        Ok(attr)
    }

    /// Reports the link count `ino` has now.
    fn hint_nlink(&mut self, ino: Ino) -> Result<()> {
        let nlink = self.s.vget(ino)?.attr.nlink;
        self.s.hint(Hint::LinkCount { ino, nlink })
    }

    /// `ino` lost its last link: free it now, or at its last unpin (an
    /// orphan until then).
    fn release(&mut self, ino: Ino) -> Result<()> {
        let pinned = self.st.pins().get(&ino).is_some_and(|&n| n > 0);
        if !pinned && !self.too_large_for_one_tx(ino)? {
            return self.destroy(ino);
        }
        // On the orphan list in the transaction that takes the last name,
        // so that a crash before the last step leaves it for mount.
        if !pinned {
            self.st.unpinned_orphans.push(ino);
        }
        self.st.orphans.insert(ino);
        self.s.hint(Hint::Orphaned { ino })
    }

    /// Whether freeing `ino` takes more than one transaction
    /// (`StorageManager::blocks_per_tx`).
    fn too_large_for_one_tx(&mut self, ino: Ino) -> Result<bool> {
        let Some(limit) = self.s.blocks_per_tx() else { return Ok(false) };
        Ok(crate::storage::blocks_held(self.s, ino)? > limit)
    }

    /// Frees an inode and everything it holds.
    fn destroy(&mut self, ino: Ino) -> Result<()> {
        if self.st.orphans.remove(&ino) {
            self.s.hint(Hint::Reclaimed { ino })?;
        }
        self.st.dirs.forget(ino);
        self.s.free_file(ino)
    }
}

impl<S: StorageManager> FileSystem<S> {
    /// A namespace over `storage`.
    pub fn new(storage: S) -> FileSystem<S> {
        FileSystem { storage, state: State::default(), pending: Ticket::none(), wait_outside: false }
    }

    /// Leaves every wait for durability to the caller: a call that would
    /// wait returns at once and adds what it waits for to
    /// [`FileSystem::take_ticket`]. A caller that serializes calls with a
    /// lock takes the ticket before it lets go and waits after, so that
    /// calls finishing together share one flush of the device (group
    /// commit) and no call waits for a flush while holding the others up.
    pub fn wait_outside(&mut self, on: bool) {
        self.wait_outside = on;
    }

    /// What the calls since the last take left to wait for (with
    /// [`FileSystem::wait_outside`]); a ticket of nothing otherwise.
    pub fn take_ticket(&mut self) -> Ticket {
        std::mem::take(&mut self.pending)
    }

    /// Waits for `ticket` now, or leaves it to the caller.
    fn settle(&mut self, ticket: Ticket) -> Result<()> {
        if self.wait_outside {
            self.pending = std::mem::take(&mut self.pending).join(ticket);
            return Ok(());
        }
        ticket.wait()
    }

    /// Creates the root directory of a new file system: the storage
    /// manager must hand out [`ROOT_INO`](crate::format::ROOT_INO) as its
    /// first inode. `mode` holds the permission bits.
    pub fn create_root(&mut self, mode: u32, creds: Creds) -> Result<Inode> {
        use crate::format::dirent::new_dir_block;
        use crate::format::inode::{kind, InodeAttr};
        use crate::format::ROOT_INO;
        let (root, ticket) = crate::storage::transaction(&mut self.storage, TxKind::Create.into(), |s| {
            let inode = s.valloc(ROOT_INO, kind::DIR)?;
            if inode.ino != ROOT_INO {
                return Err(crate::Error::Foreign(format!(
                    "the first inode of a new file system is {}, not the root's {ROOT_INO}",
                    inode.ino
                )));
            }
            let bs = s.block_size() as usize;
            s.write_block(ROOT_INO, 0, 0, &new_dir_block(bs, ROOT_INO, ROOT_INO))?;
            let now = s.now();
            let attr = InodeAttr {
                mode: kind::DIR | (mode & 0o7777),
                nlink: 2,
                uid: creds.uid,
                gid: creds.gid,
                size: bs as u64,
                atime: now,
                mtime: now,
                ctime: now,
                btime: now,
                ..InodeAttr::default()
            };
            s.update(ROOT_INO, &attr)?;
            s.vget(ROOT_INO)
        })?;
        self.settle(ticket)?;
        Ok(root)
    }

    /// Refuses every change from now on with EROFS, or takes them again.
    /// A read-only mount sets it: the kernel's read-only flag alone would
    /// let a remount that bypasses fslab's helper (`mount -i -o
    /// remount,rw`, a program calling mount(2)) write to a mount whose
    /// changes go nowhere.
    pub fn set_read_only(&mut self, read_only: bool) {
        self.state.read_only = read_only;
    }

    /// The storage manager underneath.
    pub fn storage(&mut self) -> &mut S {
        &mut self.storage
    }

    fn ns(&mut self) -> Ns<'_, S> {
        Ns { s: &mut self.storage, st: &mut self.state }
    }

    /// Runs `body` as one transaction (STYLE.md item 11), and waits for
    /// what its commit promises ([`FileSystem::settle`]).
    fn tx<T>(
        &mut self,
        spec: impl Into<TxSpec>,
        body: impl FnOnce(&mut Ns<'_, S>) -> Result<T>,
    ) -> Result<T> {
        self.writable()?;
        let st = &mut self.state;
        let (value, ticket) =
            crate::storage::transaction(&mut self.storage, spec.into(), |s| body(&mut Ns { s, st }))?;
        self.settle(ticket)?;
        for ino in std::mem::take(&mut self.state.unpinned_orphans) {
            // The operation is done whether or not this works: a file left
            // on the orphan list is freed at unmount, or by the next mount.
            let _ = self.reclaim(ino);
        }
        Ok(value)
    }

    /// Frees orphan `ino`: its blocks in as many transactions as the
    /// storage manager needs (`StorageManager::blocks_per_tx`), then the
    /// rest, and the inode, in one.
    fn reclaim(&mut self, ino: Ino) -> Result<()> {
        self.writable()?;
        let ticket = crate::storage::free_blocks_in_steps(&mut self.storage, ino)?;
        self.settle(ticket)?;
        self.tx(TxKind::Reclaim, |ns| ns.destroy(ino))
    }

    /// A write transaction of the blocks `len` bytes from `offset` cover,
    /// and the file's last block, whose bytes past the end are zeroed when
    /// a write begins beyond it.
    fn write_spec(&self, offset: u64, len: u64) -> TxSpec {
        let bs = u64::from(self.storage.block_size().max(1));
        let covered = if len == 0 { 0 } else { (offset.saturating_add(len) - 1) / bs - offset / bs + 1 };
        TxSpec::dirtying(TxKind::Write, covered + 1)
    }

    /// The attributes of the entry `name` in directory `parent`.
    pub fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Inode> {
        check_name(name)?;
        let mut ns = self.ns();
        ns.dir_inode(parent)?;
        let slot = ns.dir_lookup(parent, name)?.ok_or(errno(libc::ENOENT, "no such entry"))?;
        ns.s.vget(slot.ino)
    }

    /// The inode a file handle names (`open_by_handle_at(2)`, an NFS
    /// export): `ino` itself while it is a file of the namespace with a
    /// link; ESTALE for a number never allocated, freed, unlinked, or
    /// outside the namespace (the ifile), as ext4's `ext4_nfs_get_inode`.
    /// The caller compares the generation the handle holds.
    pub fn by_handle(&mut self, ino: Ino) -> Result<Inode> {
        let stale = || errno(libc::ESTALE, "no file has this handle any more");
        if ino < crate::format::ROOT_INO {
            return Err(stale());
        }
        match self.storage.vget(ino) {
            Ok(inode) if inode.attr.nlink > 0 => Ok(inode),
            Ok(_) => Err(stale()),
            Err(e) if e.errno() == libc::ENOENT => Err(stale()),
            Err(e) => Err(e),
        }
    }

    /// The parent of directory `ino`, which a file handle names (its `..`
    /// entry; the root is its own parent): how a directory found by handle
    /// is joined to the tree again. ESTALE as [`FileSystem::by_handle`].
    pub fn parent(&mut self, ino: Ino) -> Result<Inode> {
        self.by_handle(ino)?;
        let mut ns = self.ns();
        ns.dir_inode(ino)?;
        let slot = ns.dir_lookup(ino, b"..")?.ok_or(errno(libc::ESTALE, "directory without '..'"))?;
        ns.s.vget(slot.ino)
    }

    /// The attributes of `ino`.
    pub fn getattr(&mut self, ino: Ino) -> Result<Inode> {
        self.storage.vget(ino)
    }

    /// Changes attributes; a size change truncates or extends.
    pub fn setattr(&mut self, ino: Ino, change: &SetAttr) -> Result<Inode> {
        if change.size.is_some() || change.uid.is_some() || change.gid.is_some() || change.kill_privileges {
            self.drop_capability(ino)?;
        }
        if let Some(size) = change.size {
            self.shrink_in_steps(ino, size, change.who)?;
        }
        let kind = if change.size.is_some() { TxKind::Truncate } else { TxKind::SetAttr };
        self.tx(kind, |ns| ns.setattr(ino, change))
    }

    /// The most blocks, and bytes of file, one transaction may allocate,
    /// free or move (`StorageManager::blocks_per_tx`), if bounded.
    fn tx_span(&self) -> Option<(u64, u64)> {
        let blocks = self.storage.blocks_per_tx()?.max(1);
        Some((blocks, blocks.saturating_mul(u64::from(self.storage.block_size().max(1)))))
    }

    /// Brings a truncate of a regular file to `size` down to one that one
    /// transaction can hold (`StorageManager::blocks_per_tx`): the blocks
    /// past the end first (a `fallocate` with `KEEP_SIZE` leaves them),
    /// then the size falls from the end in steps, each its own
    /// transaction, so that a crash between them leaves the file cut at a
    /// block boundary above `size`, its data before that whole.
    fn shrink_in_steps(&mut self, ino: Ino, size: u64, who: Privilege) -> Result<()> {
        let Some((limit, _)) = self.tx_span() else { return Ok(()) };
        self.writable()?;
        let bs = u64::from(self.storage.block_size().max(1));
        let inode = self.storage.vget(ino)?;
        if !inode.attr.is_reg()
            || size >= inode.attr.size
            || crate::storage::blocks_held(&mut self.storage, ino)? <= limit
        {
            return Ok(());
        }
        let end = inode.attr.size.div_ceil(bs);
        let ticket = crate::storage::free_blocks_past_in_steps(&mut self.storage, ino, end)?;
        self.settle(ticket)?;
        // The cuts: the first block holding data at or after the new end,
        // then the first at least `limit` blocks after each cut, so that
        // no step frees more than `limit` blocks, and holes cost nothing.
        let mut cuts = Vec::new();
        let mut from = size.div_ceil(bs);
        while let Some(lbn) = self.storage.next_data(ino, from)?.filter(|&lbn| lbn < end) {
            cuts.push(lbn);
            from = lbn.saturating_add(limit);
        }
        for &cut in cuts.iter().rev().filter(|&&cut| cut * bs > size) {
            let step = SetAttr { size: Some(cut * bs), who, ..SetAttr::default() };
            self.tx(TxKind::Truncate, |ns| ns.setattr(ino, &step))?;
        }
        Ok(())
    }

    /// EROFS on a read-only file system ([`FileSystem::set_read_only`]).
    fn writable(&self) -> Result<()> {
        if self.state.read_only {
            return Err(errno(libc::EROFS, "read-only file system"));
        }
        Ok(())
    }

    /// Creates a node of any non-directory kind (`mode` holds type and
    /// permission bits; `rdev` is used for devices).
    pub fn mknod(&mut self, parent: Ino, name: &[u8], mode: u32, rdev: u64, creds: Creds) -> Result<Inode> {
        self.tx(TxKind::Create, |ns| ns.mknod(parent, name, mode, rdev, creds))
    }

    /// Creates a directory.
    pub fn mkdir(&mut self, parent: Ino, name: &[u8], mode: u32, creds: Creds) -> Result<Inode> {
        self.tx(TxKind::Create, |ns| ns.mkdir(parent, name, mode, creds))
    }

    /// Removes a non-directory entry.
    pub fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<()> {
        self.tx(TxKind::Unlink, |ns| ns.unlink(parent, name))
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<()> {
        self.tx(TxKind::Unlink, |ns| ns.rmdir(parent, name))
    }

    /// Creates a symbolic link holding `target`.
    pub fn symlink(&mut self, parent: Ino, name: &[u8], target: &[u8], creds: Creds) -> Result<Inode> {
        self.tx(TxKind::Create, |ns| ns.symlink(parent, name, target, creds))
    }

    /// The target of a symbolic link.
    pub fn readlink(&mut self, ino: Ino) -> Result<Vec<u8>> {
        self.ns().readlink(ino)
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
        let kind = if flags.exchange { TxKind::Exchange } else { TxKind::Rename };
        self.tx(kind, |ns| ns.rename(parent, name, new_parent, new_name, flags))
    }

    /// Adds the name `new_parent/new_name` for `ino`.
    pub fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Inode> {
        self.tx(TxKind::Link, |ns| ns.link(ino, new_parent, new_name))
    }

    /// Reads up to `len` bytes at `offset`; fewer at end of file. Updates
    /// the access time as [`FileSystem::set_atime_options`] says.
    pub fn read(&mut self, ino: Ino, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.read_as(ino, offset, len, Access::Touch)
    }

    /// [`FileSystem::read`], updating the access time as `access` says.
    pub fn read_as(&mut self, ino: Ino, offset: u64, len: usize, access: Access) -> Result<Vec<u8>> {
        let data = self.ns().read(ino, offset, len)?;
        if access == Access::Touch {
            self.accessed(ino, false);
        }
        Ok(data)
    }

    /// [`FileSystem::read`], except that the storage manager may leave
    /// the device transfers of blocks it does not cache to the caller
    /// ([`ReadStart::Pending`]), to run after letting go of whatever lock
    /// guards the file system, so that other requests go on meanwhile.
    /// The access time is updated now.
    pub fn read_begin(&mut self, ino: Ino, offset: u64, len: usize) -> Result<ReadStart> {
        self.read_begin_as(ino, offset, len, Access::Touch)
    }

    /// [`FileSystem::read_begin`], updating the access time as `access` says.
    pub fn read_begin_as(&mut self, ino: Ino, offset: u64, len: usize, access: Access) -> Result<ReadStart> {
        let start = self.ns().read_later(ino, offset, len, true)?;
        if access == Access::Touch {
            self.accessed(ino, false);
        }
        Ok(start)
    }

    /// The reads a write of `len` bytes at `offset` would make under the
    /// lock, of the blocks it changes only in part, planned so that the
    /// caller can run their device transfers without it and cache the
    /// blocks ([`FileSystem::adopt_read`]) before the write: 4 KiB writes
    /// into 8 KiB FFS blocks then wait for the disk without holding up
    /// other requests. Empty when the write would read nothing.
    pub fn write_edges_to_fetch(&mut self, ino: Ino, offset: u64, len: usize) -> Result<Vec<PendingRead>> {
        self.ns().write_edges_to_fetch(ino, offset, len)
    }

    /// Caches what `read` fetched, where still current (a hint: nothing
    /// fails).
    pub fn adopt_read(&mut self, read: &PendingRead) {
        read.adopt(&mut self.storage);
    }

    /// Writes `data` at `offset`; returns the bytes written.
    pub fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        self.drop_capability(ino)?;
        let spec = self.write_spec(offset, data.len() as u64);
        self.tx(spec, |ns| ns.write(ino, offset, data, BlockCopies::default(), Privilege::default()))
    }

    /// [`FileSystem::write`], with `copies` made from the same `offset`
    /// and `data` ([`BlockCopies::of`]) beforehand, by a caller `who`.
    pub fn write_copied(
        &mut self,
        ino: Ino,
        offset: u64,
        data: &[u8],
        copies: BlockCopies,
        who: Privilege,
    ) -> Result<usize> {
        self.drop_capability(ino)?;
        let spec = self.write_spec(offset, data.len() as u64);
        self.tx(spec, |ns| ns.write(ino, offset, data, copies, who))
    }

    /// The file system's block size, which [`BlockCopies::of`] needs.
    pub fn block_size(&self) -> u32 {
        self.storage.block_size()
    }

    /// `fallocate(2)`: `mode` holds the `FALLOC_FL_*` flags.
    pub fn fallocate(&mut self, ino: Ino, offset: u64, len: u64, mode: i32) -> Result<()> {
        self.fallocate_by(ino, offset, len, mode, Privilege::default())
    }

    /// [`FileSystem::fallocate`] by a caller `who`.
    pub fn fallocate_by(&mut self, ino: Ino, offset: u64, len: u64, mode: i32, who: Privilege) -> Result<()> {
        self.drop_capability(ino)?;
        let frees = libc::FALLOC_FL_PUNCH_HOLE
            | libc::FALLOC_FL_ZERO_RANGE
            | libc::FALLOC_FL_COLLAPSE_RANGE
            | libc::FALLOC_FL_INSERT_RANGE;
        let moves = libc::FALLOC_FL_COLLAPSE_RANGE | libc::FALLOC_FL_INSERT_RANGE;
        if let Some((_, span)) = self.tx_span().filter(|&(_, span)| len > span && mode & moves == 0) {
            if offset.checked_add(len).is_some_and(|end| end <= self.storage.max_file_size()) {
                return self.fallocate_in_steps(ino, offset, len, mode, who, span);
            }
        }
        let spec = if mode & frees != 0 {
            // Moving a range rewrites the blocks from it to the end.
            TxSpec::dirtying(TxKind::Truncate, u64::MAX)
        } else {
            self.write_spec(offset, len)
        };
        self.tx(spec, |ns| ns.fallocate(ino, offset, len, mode, who, Room::Make))
    }

    /// [`FileSystem::fallocate_by`] of a range larger than one transaction
    /// may hold, in steps of `span` bytes, each its own transaction, once
    /// the whole range is known to fit (a call refused for want of space
    /// changes nothing). A hole punched skips what holds no data: only the
    /// steps with blocks to free, or a partial block to zero, are made.
    fn fallocate_in_steps(
        &mut self,
        ino: Ino,
        offset: u64,
        len: u64,
        mode: i32,
        who: Privilege,
        span: u64,
    ) -> Result<()> {
        self.tx(TxKind::SetAttr, |ns| ns.fallocate(ino, offset, len, mode, who, Room::CheckOnly))?;
        let punch = mode == libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        let bs = u64::from(self.storage.block_size().max(1));
        let end = offset + len;
        let mut at = offset;
        while at < end {
            if punch {
                match self.storage.next_data(ino, at / bs)? {
                    Some(lbn) if lbn.saturating_mul(bs) < end => at = at.max(lbn * bs),
                    _ => break,
                }
            }
            let step_end = (at / span + 1).saturating_mul(span).min(end);
            let spec = self.write_spec(at, step_end - at);
            self.tx(spec, |ns| ns.fallocate(ino, at, step_end - at, mode, who, Room::Made))?;
            at = step_end;
        }
        Ok(())
    }

    /// `lseek(2)` for SEEK_DATA and SEEK_HOLE (`whence` as in libc): ENXIO
    /// at a negative offset or one at or past the end.
    pub fn lseek(&mut self, ino: Ino, offset: i64, whence: i32) -> Result<u64> {
        self.ns().lseek(ino, offset, whence)
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
        self.copy_file_range_by(from, from_offset, to, to_offset, len, Privilege::default())
    }

    /// [`FileSystem::copy_file_range`] by a caller `who`.
    pub fn copy_file_range_by(
        &mut self,
        from: Ino,
        from_offset: u64,
        to: Ino,
        to_offset: u64,
        len: u64,
        who: Privilege,
    ) -> Result<u64> {
        self.drop_capability(to)?;
        let overlapping = file::copy_overlaps(from, from_offset, to, to_offset, len);
        if let Some((_, span)) = self.tx_span().filter(|&(_, span)| len > span && !overlapping) {
            // In steps, each its own transaction; a short step ends the copy.
            let mut done = 0;
            while done < len {
                let step = (len - done).min(span);
                let (src, dst) = (from_offset.saturating_add(done), to_offset.saturating_add(done));
                match self.copy_file_range_by(from, src, to, dst, step, who) {
                    Ok(n) => {
                        done += n;
                        if n < step {
                            break;
                        }
                    }
                    Err(e) if done == 0 => return Err(e),
                    Err(_) => break,
                }
            }
            return Ok(done);
        }
        let spec = self.write_spec(to_offset, len);
        self.tx(spec, |ns| ns.copy_file_range(from, from_offset, to, to_offset, len, who))
    }

    /// Entries of directory `ino` from `offset` (0 = the start), at most
    /// `max`. Updates the access time as [`FileSystem::set_atime_options`] says.
    pub fn readdir(&mut self, ino: Ino, offset: u64, max: usize) -> Result<Vec<DirEntry>> {
        let mut ns = self.ns();
        ns.dir_inode(ino)?;
        let entries = ns.dir_read(ino, offset, max)?;
        self.accessed(ino, true);
        Ok(entries)
    }

    /// Makes `ino` durable.
    pub fn fsync(&mut self, ino: Ino, datasync: bool) -> Result<()> {
        let ticket = self.storage.start_fsync(ino, datasync)?;
        self.settle(ticket)
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
        self.tx(TxKind::Xattr, |ns| ns.setxattr(ino, name, value, flags))
    }

    /// The value of extended attribute `name`.
    pub fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        self.ns().getxattr(ino, name)
    }

    /// The names of all extended attributes, each followed by a NUL byte.
    pub fn listxattr(&mut self, ino: Ino) -> Result<Vec<u8>> {
        self.ns().listxattr(ino)
    }

    /// Removes extended attribute `name`.
    pub fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        self.tx(TxKind::Xattr, |ns| ns.removexattr(ino, name))
    }

    /// Notes one more user of `ino` (a kernel lookup, an open file). Takes
    /// the file system shared: a lookup that found `ino` without the
    /// exclusive lock pins it so.
    pub fn pin(&self, ino: Ino) {
        *self.state.pins_shared().entry(ino).or_insert(0) += 1;
    }

    /// Drops `count` users of `ino`; frees it if it has no links and no users.
    pub fn unpin(&mut self, ino: Ino, count: u64) -> Result<()> {
        let left = match self.state.pins().get_mut(&ino) {
            Some(n) => {
                *n = n.saturating_sub(count);
                *n
            }
            None => 0,
        };
        if left == 0 {
            // A table grown while the kernel held a million inodes keeps
            // its slots after the kernel forgets them (29 MiB at 1,000,000
            // files): let it shrink once three quarters stand empty.
            let pins = self.state.pins();
            pins.remove(&ino);
            if pins.capacity() > 1024 && pins.len() < pins.capacity() / 4 {
                pins.shrink_to(pins.len() * 2);
            }
            if self.state.orphans.contains(&ino) {
                self.reclaim(ino)?;
            }
        }
        Ok(())
    }

    /// How many inodes are pinned (kernel lookups, open files).
    pub fn pinned(&self) -> usize {
        self.state.pins_shared().len()
    }

    /// Up to `n` pinned inodes, from the `from`-th on in the table's own
    /// order (wrapping around): a caller that moves `from` on each time
    /// visits them all.
    pub fn pinned_from(&self, from: usize, n: usize) -> Vec<Ino> {
        let pins = self.state.pins_shared();
        let start = from.checked_rem(pins.len()).unwrap_or(0);
        pins.keys().skip(start).chain(pins.keys().take(start)).take(n).copied().collect()
    }

    /// Inodes with no links kept alive by pins, in no particular order.
    pub fn orphans(&self) -> Vec<Ino> {
        self.state.orphans.iter().copied().collect()
    }

    /// Drops every directory hash; lookups rebuild them from the blocks.
    pub fn drop_dir_indexes(&mut self) {
        self.state.dirs.clear();
    }

    /// Dirhash's settings (the mount options `dirhash`, `dirhash_maxmem`,
    /// `dirhash_minsize`, `dirhash_check`).
    pub fn dirhash_options(&self) -> DirhashOptions {
        self.state.dirs.options()
    }

    /// Changes dirhash's settings; takes effect at once (switching it off,
    /// or a smaller budget, drops hashes).
    pub fn set_dirhash_options(&mut self, options: DirhashOptions) {
        self.state.dirs.set_options(options);
    }

    /// What the file system's memory is spent on: the storage manager's
    /// structures, then the namespace's (directory hashes, the inodes the
    /// kernel and open files hold, orphans).
    pub fn memory(&self) -> Vec<crate::memory::MemoryUse> {
        use crate::memory::{hash_map_bytes, hash_set_bytes, MemoryUse};
        let mut parts = self.storage.memory();
        let dirhash = self.state.dirs.stats();
        parts.push(MemoryUse::new("directory hashes", dirhash.hashes as usize, dirhash.memory));
        let pins = self.state.pins_shared();
        parts.push(MemoryUse::new("inodes in use (kernel, open files)", pins.len(), hash_map_bytes(&pins)));
        drop(pins);
        parts.push(MemoryUse::new("orphans", self.state.orphans.len(), hash_set_bytes(&self.state.orphans)));
        parts
    }

    /// Dirhash's counters since mount and the memory its hashes hold.
    pub fn dirhash_stats(&self) -> DirhashStats {
        self.state.dirs.stats()
    }

    /// Whether the in-memory hash of directory `dir`, if it has one, agrees
    /// with a fresh scan of the directory's blocks (a consistency check for
    /// tests and fsck-style tools).
    pub fn dir_index_matches(&mut self, dir: Ino) -> Result<bool> {
        let mut ns = self.ns();
        ns.dir_inode(dir)?;
        ns.dir_index_matches(dir)
    }

    /// Whether the storage manager has data to write behind the writers'
    /// backs (see [`StorageManager::write_behind_due`]).
    pub fn write_behind_due(&self) -> bool {
        self.storage.write_behind_due()
    }

    /// Writes what [`FileSystem::write_behind_due`] found waiting.
    pub fn write_behind(&mut self) -> Result<()> {
        self.storage.write_behind()
    }

    /// Periodic work (checkpoints); call about once a second.
    pub fn tick(&mut self) -> Result<()> {
        self.storage.tick()
    }

    /// Frees unlinked inodes still pinned, makes everything durable and
    /// leaves a clean image. An unlinked file that cannot be freed (a
    /// damaged block of its own) does not stop the rest: everything else
    /// is still made durable, and then its error is returned (fsck finds
    /// what it left).
    pub fn unmount(&mut self) -> Result<()> {
        let mut orphans: Vec<Ino> = self.state.orphans.iter().copied().collect();
        orphans.sort_unstable();
        let mut failed = None;
        for ino in orphans {
            self.state.pins().remove(&ino);
            if let Err(e) = self.reclaim(ino) {
                failed.get_or_insert(e);
            }
        }
        self.storage.unmount()?;
        failed.map_or(Ok(()), Err)
    }
}
