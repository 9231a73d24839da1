//! [`FuseAdapter`]: each kernel request becomes one `ufs` call under the
//! file-system lock, and one reply.
//!
//! Lookup counting: every reply that hands the kernel an entry (lookup,
//! create, mknod, mkdir, symlink, link) pins the inode in the same locked
//! call that produced it; `forget` unpins by the kernel's count. That is what
//! keeps an open-but-unlinked file readable until the kernel lets it go.
//!
//! Every request runs through [`FuseAdapter::run`], which names the request
//! and its inode: damage it meets is reported to the mount's log
//! (`damage`). A request whose reply carries no attributes but may change
//! some the kernel keeps runs through [`FuseAdapter::changing`], which
//! tells the kernel to drop them (`stale`).

use crate::caller::Caller;
use crate::convert::{dirent_type, file_attr, file_type, from_fuse, time_set, to_fuse};
use crate::damage::DamageLog;
use crate::kernel::reply::{inval_inode_message, prune_message, Attr, Entry, PRUNE_BATCH};
use crate::kernel::request::Setattr;
use crate::reply::{absent_entry, entry, Created, DirItem, DirItemPlus, XattrAnswer, DIRECT_HANDLE};
use crate::shared::Shared;
use crate::stale::{kept, Dropped};
use fslab::error::errno;
use fslab::format::inode::{kind, Inode};
use fslab::format::{Ino, ROOT_INO};
use fslab::storage::{StatFs, StorageManager};
use fslab::ufs::{BlockCopies, Creds, DirEntry, FileSystem, Privilege, RenameFlags, SetAttr};
use fslab::Result;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

mod serve;
mod unlocked_io;

pub(crate) use serve::init_reply;

/// The largest read or write the kernel sends in one request (1 MiB).
pub(crate) const MAX_IO: u32 = 1 << 20;

/// Directory entries fetched per `readdir` request; those that do not fit
/// the kernel's buffer are fetched again by the next request.
const READDIR_BATCH: usize = 256;

/// Bytes of READDIRPLUS entries gathered per request: what the largest
/// buffer the kernel asks with holds (a `getdents` buffer of 32 KiB, as
/// `ls` and `find` use). Each entry's attributes are read and its lookup
/// counted, so fetching more than fits would read and pin for nothing.
const READDIRPLUS_BYTES: usize = 32 << 10;

/// Bytes of one READDIRPLUS entry before its name (`fuse_entry_out` and
/// `fuse_dirent`); the name is padded to 8 bytes.
const DIRENTPLUS_HEADER: usize = 128 + 24;

/// The largest `copy_file_range` done in one request: the whole request
/// holds the file system, so every other request waits for it (a copy of
/// 64 MiB takes a fraction of a second; one of 1 GiB took seconds). A
/// partial copy is allowed, and `cp` and the C library's loop go on.
const MAX_COPY: u64 = 64 << 20;

/// Inodes a FORGET unpins under one hold of the file system's lock.
const FORGETS_PER_HOLD: usize = 64;

/// The FUSE side of a mounted file system.
///
/// Holds the file system behind one reader-writer lock (`Shared`): a
/// request that can be answered from memory (GETATTR, LOOKUP, READDIR,
/// GETXATTR and READ of what is cached) holds it shared, beside others;
/// every other request, and one that finds something missing, holds it
/// exclusively.
/// File handles are stateless (0, or `DIRECT_HANDLE`): every operation
/// names its inode. Each request is answered by `serve` (the
/// [`crate::kernel::Serve`] impl), whichever transport brought it.
pub struct FuseAdapter<S: StorageManager> {
    shared: Arc<Shared<S>>,
    /// The file system's block size, to copy a write's whole blocks before
    /// taking the lock ([`BlockCopies`]).
    block_size: u32,
    /// The kernel can open files and directories without asking (answering
    /// ENOSYS to the first open tells it to stop sending OPEN and RELEASE).
    zero_message_open: bool,
    zero_message_opendir: bool,
    /// The kernel drops other handles' cached pages of a file written
    /// through a direct-I/O handle (Linux 6.6 on, told by its offering
    /// `FUSE_DIRECT_IO_ALLOW_MMAP`, which came with that change): only
    /// then may a write-only new file be served with direct I/O.
    direct_io_coherent: bool,
    /// The connection (`/dev/fuse`), to tell the kernel to drop cached
    /// attributes: notifications go there whichever transport serves.
    device: Arc<OwnedFd>,
    /// The rate limits of damage reports (shared with the waits a ring
    /// queue runs on other threads).
    damage: Arc<Mutex<DamageLog>>,
}

impl<S: StorageManager> FuseAdapter<S> {
    /// An adapter over `shared`, whose block size is `block_size`, for the
    /// connection `device`, whose kernel offered the FUSE_INIT flags
    /// `offered`.
    pub(crate) fn new(shared: Arc<Shared<S>>, block_size: u32, device: Arc<OwnedFd>, offered: u64) -> Self {
        use crate::kernel::init_flag;
        FuseAdapter {
            shared,
            block_size,
            zero_message_open: offered & init_flag::NO_OPEN_SUPPORT != 0,
            zero_message_opendir: offered & init_flag::NO_OPENDIR_SUPPORT != 0,
            direct_io_coherent: offered & init_flag::DIRECT_IO_ALLOW_MMAP != 0,
            device,
            damage: Arc::new(Mutex::new(DamageLog::default())),
        }
    }

    /// Runs request `op` on node `ino` under the file system's lock.
    fn run<T>(
        &self,
        op: &'static str,
        ino: u64,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<T>,
    ) -> Result<T> {
        self.reported(op, ino, self.shared.with_as(op, call))
    }

    /// `result` of request `op` on node `ino`, after an error that is
    /// damage (a corrupt structure, a failing device) has been reported to
    /// the mount's log, rate-limited: the program sees only the errno.
    fn reported<T>(&self, op: &'static str, ino: u64, result: Result<T>) -> Result<T> {
        if let Err(e) = &result {
            report_damage(&self.damage, op, ino, e);
        }
        result
    }

    /// Runs request `op` on node `ino`, whose reply carries no attributes
    /// and after which the kernel drops only `dropped` of its cached
    /// attributes; if `call` changed any other (a write clearing
    /// set-user-ID), tells the kernel to drop them all. The notification
    /// goes out before the reply, so the caller never sees the old value
    /// once its call has returned.
    fn changing<T>(
        &self,
        op: &'static str,
        ino: u64,
        dropped: Dropped,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<T>,
    ) -> Result<T> {
        let target = from_fuse(ino);
        let outcome = self.shared.with_as(op, |fs| {
            let before = fs.getattr(target).map(|inode| kept(&inode, dropped));
            let result = call(fs);
            let after = fs.getattr(target).map(|inode| kept(&inode, dropped));
            Ok((result, matches!((before, after), (Ok(b), Ok(a)) if a != b)))
        });
        let (result, stale) = outcome.unwrap_or_else(|e| (Err(e), false));
        if stale {
            self.drop_cached_attributes(ino);
        }
        self.reported(op, ino, result)
    }

    /// Tells the kernel to drop its cached attributes of `ino` (not its
    /// cached pages: a negative offset leaves them, and taking their locks
    /// here could deadlock with the request being served). Best effort: an
    /// inode the kernel no longer caches answers ENOENT, which is success.
    fn drop_cached_attributes(&self, ino: u64) {
        let message = inval_inode_message(ino, -1, 0);
        let _ = crate::kernel::device::write_message(self.device.as_fd(), &[&message]);
    }

    /// The kernel's attributes of whatever inode `call` returns.
    fn attr(
        &self,
        op: &'static str,
        ino: u64,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<Inode>,
    ) -> Result<Attr> {
        self.run(op, ino, |fs| {
            let inode = call(fs)?;
            file_attr(&inode, fs.storage().block_size())
        })
    }

    /// GETATTR of `ino`: from memory, holding the file system shared, if
    /// its inode is cached.
    fn getattr(&self, ino: u64) -> Result<Attr> {
        let target = from_fuse(ino);
        let block_size = self.block_size;
        let cached =
            self.shared.try_shared(|fs| fs.getattr_cached(target).map(|inode| file_attr(&inode, block_size)));
        match cached {
            Some(attr) => self.reported("getattr", ino, attr),
            None => self.attr("getattr", ino, |fs| fs.getattr(target)),
        }
    }

    /// An entry for the inode `call` returns, pinned for the kernel.
    fn entry(
        &self,
        op: &'static str,
        ino: u64,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<Inode>,
    ) -> Result<Entry> {
        self.run(op, ino, |fs| {
            let inode = call(fs)?;
            let attr = file_attr(&inode, fs.storage().block_size())?;
            fs.pin(inode.ino);
            Ok(entry(attr, u64::from(inode.generation)))
        })
    }

    /// LOOKUP of `name` in `parent`: its entry, or for a name that is not
    /// there a negative entry ([`absent_entry`]).
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Entry> {
        // A path walk resolves "." and ".." in the kernel; they come here
        // only from file handles (FUSE_EXPORT_SUPPORT): "." for a node the
        // kernel has forgotten, ".." to join a directory to the tree.
        let dir = from_fuse(parent);
        let found = match name {
            b"." => self.entry("lookup", parent, |fs| fs.by_handle(dir)),
            b".." => self.entry("lookup", parent, |fs| fs.parent(dir)),
            name => {
                let block_size = self.block_size;
                let cached = self.shared.try_shared(|fs| {
                    let found = fs.lookup_cached(dir, name)?;
                    Some(found.and_then(|inode| {
                        let attr = file_attr(&inode, block_size)?;
                        fs.pin(inode.ino);
                        Ok(entry(attr, u64::from(inode.generation)))
                    }))
                });
                match cached {
                    Some(found) => self.reported("lookup", parent, found),
                    None => self.entry("lookup", parent, |fs| fs.lookup(dir, name)),
                }
            }
        };
        match found {
            Err(e) if e.errno() == libc::ENOENT && name != b"." && name != b".." => Ok(absent_entry()),
            found => found,
        }
    }

    /// FORGET of `nodes` (node id, lookups): the kernel's counts unpinned,
    /// [`FORGETS_PER_HOLD`] under each hold of the lock, since the last
    /// unpin of a file unlinked while open frees it (a batch of a thousand
    /// at unmount held the lock 61 ms). No reply carries an error; the
    /// library reports its own damage.
    fn forget(&self, nodes: impl Iterator<Item = (u64, u64)>) {
        let mut nodes = nodes.peekable();
        while nodes.peek().is_some() {
            let held = self.shared.with_as("forget", |fs| {
                for (node, nlookup) in nodes.by_ref().take(FORGETS_PER_HOLD) {
                    let _ = fs.unpin(from_fuse(node), nlookup);
                }
                Ok(())
            });
            // Unmounted or broken: nothing is left to unpin.
            if held.is_err() {
                break;
            }
        }
    }

    /// SETATTR of `ino` by `caller`.
    fn setattr(&self, ino: u64, caller: Caller, set: &Setattr) -> Result<Attr> {
        let ctime = set.ctime.map(crate::convert::time_ns);
        let mut change = SetAttr {
            mode: set.mode,
            uid: set.uid,
            gid: set.gid,
            size: set.size,
            atime: set.atime.map(time_set),
            mtime: set.mtime.map(time_set),
            ctime,
            ..SetAttr::default()
        };
        // With HANDLE_KILLPRIV the kernel strips ATTR_KILL_SUID/SGID and the
        // mode it computed, and sends what is left: for chown(f, -1, -1),
        // and for a write by a caller without CAP_FSETID, nothing at all.
        // Such a request is only ever sent to clear the bits. With V2 it may
        // say so (FATTR_KILL_SUIDGID); with a size, the truncate clears them
        // by the caller's privilege anyway.
        let kill = set.valid & crate::kernel::setattr_valid::KILL_SUIDGID != 0 && set.size.is_none();
        change.kill_privileges = change == SetAttr::default() || kill;
        self.attr("setattr", ino, |fs| {
            if set.size.is_some() || set.uid.is_some() || set.gid.is_some() || change.kill_privileges {
                change.who = privilege(fs, ino, caller)?;
            }
            fs.setattr(from_fuse(ino), &change)
        })
    }

    /// CREATE of `name` in `parent`, opened with `flags`.
    fn create(
        &self,
        parent: u64,
        name: &[u8],
        mode: u32,
        umask: u32,
        flags: u32,
        creds: Creds,
    ) -> Result<Created> {
        let mode = kind::REG | masked(mode & 0o7777, umask);
        // A handle that cannot read needs no page cache: its writes go
        // straight from the writer's buffer to this process, a copy fewer
        // (and no cache to fill and reclaim) for `dd`, `cp` and shell
        // redirections writing a new file. It cannot be mmapped either, so
        // nothing is given up; a kernel from 6.6 on drops other handles'
        // cached pages on each direct write, which keeps them coherent. An
        // older one keeps them (a reader of a growing log would see zeros
        // where it had read the end before), so there the handle is cached
        // like any other.
        let direct_io = self.direct_io_coherent && flags as i32 & libc::O_ACCMODE == libc::O_WRONLY;
        let entry = self.entry("create", parent, |fs| fs.mknod(from_fuse(parent), name, mode, 0, creds))?;
        Ok(Created { entry, direct_io })
    }

    /// WRITE of `data` at `offset` through handle `fh` opened with `flags`.
    fn write(&self, ino: u64, fh: u64, offset: u64, data: &[u8], flags: u32, caller: Caller) -> Result<u32> {
        // Copying the data into block buffers is a good part of a large
        // write's work; done here, it overlaps a segment being written
        // behind under the lock.
        let copies = BlockCopies::of(offset, data, self.block_size);
        let written = self.write_data(ino, offset, data, copies, caller)?;
        // O_SYNC, O_DSYNC and RWF_(D)SYNC arrive as these flags. On a
        // handle whose writes go straight through (direct I/O: a new file
        // opened write-only) the kernel sends no fsync after the write, as
        // it does for cached ones, so the write is made durable here.
        let flags = flags as i32;
        if fh == DIRECT_HANDLE && flags & libc::O_DSYNC != 0 {
            let datasync = flags & libc::O_SYNC != libc::O_SYNC;
            self.run("write", ino, |fs| fs.fsync(from_fuse(ino), datasync))?;
        }
        // A write is at most MAX_IO bytes, so the count fits in 32 bits.
        Ok(written as u32)
    }

    /// FSYNCDIR. Linux does not pass sync(2) or syncfs(2) on to a FUSE
    /// server, so fsync of the mount's root directory stands in for them
    /// (it is what `fslab sync` does): a checkpoint, everything durable —
    /// more than the directory's own entries, which fsync promises.
    fn fsyncdir(&self, ino: u64, datasync: bool) -> Result<()> {
        let target = from_fuse(ino);
        self.run(
            "fsyncdir",
            ino,
            |fs| if target == ROOT_INO { fs.sync() } else { fs.fsync(target, datasync) },
        )
    }

    /// SETXATTR (`flags`: XATTR_CREATE or XATTR_REPLACE).
    fn setxattr(&self, ino: u64, name: &[u8], value: &[u8], flags: u32) -> Result<()> {
        self.changing("setxattr", ino, Dropped::Ctime, |fs| {
            fs.setxattr(from_fuse(ino), name, value, flags as i32)
        })
    }

    /// GETXATTR into a caller's buffer of `size` bytes: from memory,
    /// holding the file system shared, if the inode and its attributes are
    /// cached (the kernel asks for `security.capability` before every
    /// cached write).
    fn getxattr(&self, ino: u64, name: &[u8], size: u32) -> Result<XattrAnswer> {
        let target = from_fuse(ino);
        let value = match self.shared.try_shared(|fs| fs.getxattr_cached(target, name)) {
            Some(value) => value,
            None => self.run("getxattr", ino, |fs| fs.getxattr(target, name)),
        }?;
        xattr_answer(value, size)
    }

    /// LISTXATTR into a caller's buffer of `size` bytes.
    fn listxattr(&self, ino: u64, size: u32, caller: Caller) -> Result<XattrAnswer> {
        let list = self.run("listxattr", ino, |fs| fs.listxattr(from_fuse(ino)))?;
        // As ext4 and tmpfs list them: `trusted.*` only to CAP_SYS_ADMIN,
        // which the kernel asks before it reads or sets one.
        let trusted = list.split(|&b| b == 0).any(|n| n.starts_with(b"trusted."));
        let list = if trusted && !caller.sys_admin() { without_trusted(&list) } else { list };
        xattr_answer(list, size)
    }

    /// FALLOCATE of `length` bytes at `offset` with `mode`'s flags.
    fn fallocate(&self, ino: u64, offset: u64, length: u64, mode: u32, caller: Caller) -> Result<()> {
        self.changing("fallocate", ino, Dropped::Contents, |fs| {
            let who = privilege(fs, ino, caller)?;
            fs.fallocate_by(from_fuse(ino), offset, length, mode as i32, who)
        })
    }

    /// COPY_FILE_RANGE: at most [`MAX_COPY`] bytes, which `cp` and the C
    /// library's loop continue.
    fn copy_file_range(&self, from: (u64, u64), to: (u64, u64), len: u64, caller: Caller) -> Result<u32> {
        let ((ino_in, offset_in), (ino_out, offset_out)) = (from, to);
        self.changing("copy_file_range", ino_out, Dropped::Contents, |fs| {
            let who = privilege(fs, ino_out, caller)?;
            let (ino_in, ino_out) = (from_fuse(ino_in), from_fuse(ino_out));
            fs.copy_file_range_by(ino_in, offset_in, ino_out, offset_out, len.min(MAX_COPY), who)
        })
        .map(|n| n.min(MAX_COPY) as u32)
    }

    /// READDIRPLUS's entries from `offset`, with their attributes, each
    /// but `.` and `..` pinned as a lookup the kernel will count: from
    /// memory, holding the file system shared, if the listing and every
    /// inode in it are cached.
    fn readdirplus_items(&self, ino: u64, offset: u64) -> Result<Vec<DirItemPlus>> {
        let dir = from_fuse(ino);
        let block_size = self.block_size;
        let cached = self.shared.try_shared(|fs| {
            let entries = fs.readdir_cached(dir, offset, READDIR_BATCH)?;
            let items = plus_items(entries, block_size, |ino| fs.getattr_cached(ino).map(Ok))?;
            pin_counted(&items, |ino| fs.pin(ino));
            Some(items)
        });
        if let Some(items) = cached {
            return Ok(items);
        }
        self.run("readdirplus", ino, |fs| {
            let entries = fs.readdir(dir, offset, READDIR_BATCH)?;
            let items = plus_items(entries, block_size, |ino| Some(fs.getattr(ino))).unwrap_or_default();
            pin_counted(&items, |ino| fs.pin(ino));
            Ok(items)
        })
    }

    /// Unpins READDIRPLUS entries that were pinned but never sent: the
    /// kernel counts no lookup of them to forget.
    fn unpin_unsent(&self, ino: u64, unsent: &[u64]) {
        if !unsent.is_empty() {
            let _ = self.run("readdirplus", ino, |fs| {
                unsent.iter().try_for_each(|&node| fs.unpin(from_fuse(node), 1))
            });
        }
    }

    /// READDIR's entries from `offset`: from memory, holding the file
    /// system shared, if the listing is cached (and the inode of any entry
    /// whose type the directory does not record).
    fn readdir_items(&self, ino: u64, offset: u64) -> Result<Vec<DirItem>> {
        let dir = from_fuse(ino);
        let cached = self.shared.try_shared(|fs| {
            let entries = fs.readdir_cached(dir, offset, READDIR_BATCH)?;
            items(entries, |ino| fs.getattr_cached(ino).map(Ok))
        });
        if let Some(items) = cached {
            return Ok(items);
        }
        self.run("readdir", ino, |fs| {
            let entries = fs.readdir(dir, offset, READDIR_BATCH)?;
            Ok(items(entries, |ino| Some(fs.getattr(ino))).unwrap_or_default())
        })
    }

    /// STATFS.
    fn statfs(&self, ino: u64) -> Result<StatFs> {
        self.run("statfs", ino, |fs| fs.statfs())
    }

    /// Asks the kernel to let go of inodes it holds beyond `budget`
    /// (`FUSE_NOTIFY_PRUNE`), taking the pinned from `*from` on and moving
    /// `*from` past them; returns how many were named. The kernel keeps
    /// those in use and forgets the rest, which unpins them: the lookup
    /// table, a map entry an inode the kernel caches, stays near `budget`.
    /// Fails with the kernel's refusal (a kernel before 7.45: EINVAL).
    pub(crate) fn prune_kernel_inodes(&self, budget: usize, from: &mut usize) -> std::io::Result<usize> {
        // Shared: reading the pins changes nothing, and the check runs
        // often (`start_pruner`).
        let over = self.shared.try_shared(|fs| {
            let excess = fs.pinned().saturating_sub(budget);
            // A little below the budget, so that the next few lookups do
            // not start another round; at most 65,536 a round (a few
            // milliseconds to gather).
            let wanted = if excess == 0 { 0 } else { (excess + budget / 16).min(128 * PRUNE_BATCH) };
            Some(fs.pinned_from(*from, wanted))
        });
        let Some(nodes) = over else { return Ok(0) };
        *from = from.wrapping_add(nodes.len());
        let nodes: Vec<u64> = nodes.into_iter().filter(|&ino| ino != ROOT_INO).map(to_fuse).collect();
        for batch in nodes.chunks(PRUNE_BATCH) {
            let message = prune_message(batch);
            crate::kernel::device::write_message(self.device.as_fd(), &[&message])?;
        }
        Ok(nodes.len())
    }

    /// Unmounts: the final checkpoint (DESTROY, or the end of serving).
    fn destroy(&self) {
        // The result is kept in `Shared` for whoever runs the mount.
        let _ = self.shared.shutdown();
    }
}

/// Reports `error`, met by request `op` on node `ino`, to the mount's log
/// if it is damage (a corrupt structure, a failing device) and `damage`'s
/// rate limits allow; written without the log's lock.
fn report_damage(damage: &Mutex<DamageLog>, op: &'static str, ino: u64, error: &fslab::Error) {
    let line = damage.lock().unwrap_or_else(PoisonError::into_inner).report(
        op,
        from_fuse(ino),
        error,
        Instant::now(),
    );
    if let Some(line) = line {
        crate::report_line(&line);
    }
}

/// The type bits a directory entry of `kind` lists: its own, or where the
/// entry's type byte names none (a damaged or rolled-back entry: Linux's
/// `DT_UNKNOWN`, which FUSE cannot send), those of its inode, `inode`; a
/// regular file where neither can be told (`inode` is an error: damage,
/// which the kernel's next look at it meets). Failing the request instead
/// lost every entry from there on, since the kernel asks again from the
/// same place.
fn entry_type(kind: u32, inode: &Result<Inode>) -> u32 {
    file_type(kind)
        .ok()
        .or_else(|| inode.as_ref().ok().and_then(|inode| file_type(inode.attr.mode).ok()))
        .unwrap_or(kind::REG)
}

/// READDIR's items for `entries`; `inode_of` gives an entry's inode where
/// its directory does not record its type (`None`: only an exclusive
/// caller can, and the listing is declined).
fn items(
    entries: Vec<DirEntry>,
    mut inode_of: impl FnMut(Ino) -> Option<Result<Inode>>,
) -> Option<Vec<DirItem>> {
    entries
        .into_iter()
        .map(|e| {
            let bits = match file_type(e.kind) {
                Ok(bits) => bits,
                Err(_) => entry_type(e.kind, &inode_of(e.ino)?),
            };
            Some(DirItem {
                ino: to_fuse(e.ino),
                next_offset: e.next_offset,
                kind: dirent_type(bits),
                name: e.name,
            })
        })
        .collect()
}

/// READDIRPLUS's items for `entries`, as many as its reply holds, each
/// with the attributes of the inode `inode_of` gives (`None`: only an
/// exclusive caller can, and the listing is declined). A damaged inode
/// still lists, as READDIR lists it, and the kernel's next look at it
/// meets the error.
fn plus_items(
    entries: Vec<DirEntry>,
    block_size: u32,
    mut inode_of: impl FnMut(Ino) -> Option<Result<Inode>>,
) -> Option<Vec<DirItemPlus>> {
    let mut items = Vec::with_capacity(entries.len());
    let mut bytes = 0;
    for e in entries {
        bytes += DIRENTPLUS_HEADER + e.name.len().next_multiple_of(8);
        if bytes > READDIRPLUS_BYTES && !items.is_empty() {
            break;
        }
        let inode = inode_of(e.ino)?;
        let type_bits = entry_type(e.kind, &inode);
        let entry = match inode
            .and_then(|inode| Ok(entry(file_attr(&inode, block_size)?, u64::from(inode.generation))))
        {
            Ok(entry) => entry,
            Err(_) => Entry {
                attr: Attr { ino: to_fuse(e.ino), mode: type_bits, nlink: 1, ..Attr::default() },
                generation: 0,
                entry_valid: Duration::ZERO,
                attr_valid: Duration::ZERO,
            },
        };
        let counted = e.name != b"." && e.name != b"..";
        let item = DirItem {
            ino: to_fuse(e.ino),
            next_offset: e.next_offset,
            kind: dirent_type(type_bits),
            name: e.name,
        };
        items.push(DirItemPlus { item, entry, counted });
    }
    Some(items)
}

/// Pins, with `pin`, every item of a READDIRPLUS the kernel will count as
/// a lookup.
fn pin_counted(items: &[DirItemPlus], mut pin: impl FnMut(Ino)) {
    for item in items.iter().filter(|item| item.counted) {
        pin(from_fuse(item.item.ino));
    }
}

/// How Linux's rules see `caller` changing `ino`; worked out (which may
/// read /proc) only for a file with set-user-ID or set-group-ID to lose.
fn privilege<S: StorageManager>(fs: &mut FileSystem<S>, ino: u64, caller: Caller) -> Result<Privilege> {
    let attr = fs.getattr(from_fuse(ino))?.attr;
    Ok(if attr.mode & (libc::S_ISUID | libc::S_ISGID) != 0 {
        caller.privilege(attr.gid)
    } else {
        Privilege::default()
    })
}

/// `mode` with the permission bits `umask` removes taken out (the kernel
/// usually has done it already; doing it twice changes nothing).
fn masked(mode: u32, umask: u32) -> u32 {
    mode & !(umask & 0o7777)
}

/// A name list (names each ending in NUL) without its `trusted.*` names.
fn without_trusted(list: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.len());
    for name in list.split_inclusive(|&b| b == 0) {
        if !name.starts_with(b"trusted.") {
            out.extend_from_slice(name);
        }
    }
    out
}

/// The size or the bytes of an xattr value or name list, as the caller's
/// buffer size asks: 0 asks for the size, too small a buffer is ERANGE.
fn xattr_answer(data: Vec<u8>, size: u32) -> Result<XattrAnswer> {
    let len = u32::try_from(data.len()).map_err(|_| errno(libc::E2BIG, "extended attribute too large"))?;
    match size {
        0 => Ok(XattrAnswer::Size(len)),
        s if len > s => Err(errno(libc::ERANGE, "buffer too small for the extended attribute")),
        _ => Ok(XattrAnswer::Data(data)),
    }
}

/// RENAME2's flags: only NOREPLACE and EXCHANGE (WHITEOUT is for overlay
/// file systems, which fslab does not serve).
fn rename_flags(flags: u32) -> Result<RenameFlags> {
    const NOREPLACE: u32 = libc::RENAME_NOREPLACE;
    const EXCHANGE: u32 = libc::RENAME_EXCHANGE;
    if flags & !(NOREPLACE | EXCHANGE) != 0 {
        return Err(errno(libc::EINVAL, "unsupported rename flags"));
    }
    Ok(RenameFlags { noreplace: flags & NOREPLACE != 0, exchange: flags & EXCHANGE != 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xattr_size_zero_asks_for_the_size_and_a_short_buffer_is_erange() {
        assert!(matches!(xattr_answer(b"abc".to_vec(), 0), Ok(XattrAnswer::Size(3))));
        assert!(matches!(xattr_answer(b"abc".to_vec(), 3), Ok(XattrAnswer::Data(_))));
        assert_eq!(xattr_answer(b"abc".to_vec(), 2).err().map(|e| e.errno()), Some(libc::ERANGE));
    }

    #[test]
    fn rename_accepts_noreplace_and_exchange_only() {
        let both = libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE;
        assert_eq!(rename_flags(both).ok(), Some(RenameFlags { noreplace: true, exchange: true }));
        assert_eq!(rename_flags(0).ok(), Some(RenameFlags::default()));
        assert_eq!(rename_flags(libc::RENAME_WHITEOUT).err().map(|e| e.errno()), Some(libc::EINVAL));
    }

    #[test]
    fn a_name_list_without_trusted_names_keeps_every_other_name_whole() {
        let list = b"user.a\0trusted.b\0security.c\0trusted.\0".to_vec();
        assert_eq!(without_trusted(&list), b"user.a\0security.c\0".to_vec());
        assert_eq!(without_trusted(b""), Vec::<u8>::new());
    }

    #[test]
    fn an_entry_of_no_known_type_lists_with_its_inodes_type() {
        use fslab::storage::MemStorage;
        let mut fs = FileSystem::new(MemStorage::new(4096));
        let root = fslab::format::ROOT_INO;
        let d = fs.mkdir(root, b"d", 0o755, Creds::default()).expect("mkdir").ino;
        assert_eq!(entry_type(0, &fs.getattr(d)), kind::DIR, "the inode's type");
        assert_eq!(entry_type(kind::LNK, &fs.getattr(d)), kind::LNK, "the entry's own");
        assert_eq!(entry_type(0, &fs.getattr(9999)), kind::REG, "neither can be told");
    }

    #[test]
    fn a_batch_forget_unpins_every_node_a_few_dozen_under_each_hold() {
        use fslab::storage::MemStorage;
        let mut fs = FileSystem::new(MemStorage::new(4096));
        let root = fslab::format::ROOT_INO;
        let mut nodes = Vec::new();
        for i in 0..200 {
            let name = format!("f{i}");
            let ino =
                fs.mknod(root, name.as_bytes(), kind::REG | 0o644, 0, Creds::default()).expect("mknod").ino;
            fs.pin(ino);
            // Every other one unlinked while the kernel holds it: the
            // forget frees it.
            if i % 2 == 0 {
                fs.unlink(root, name.as_bytes()).expect("unlink");
            }
            nodes.push((crate::convert::to_fuse(ino), 1));
        }
        assert_eq!(fs.orphans().len(), 100);
        let shared = Arc::new(Shared::new(fs));
        let device = Arc::new(OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null")));
        let adapter = FuseAdapter::new(shared.clone(), 4096, device, 0);
        let before = shared.lock_stats().exclusive;
        adapter.forget(nodes.into_iter());
        assert_eq!(shared.lock_stats().exclusive - before, 200u64.div_ceil(FORGETS_PER_HOLD as u64));
        let left = shared.try_shared(|fs| Some((fs.pinned(), fs.orphans().len())));
        assert_eq!(left, Some((0, 0)), "every node unpinned, every orphan freed");
    }

    #[test]
    fn umask_removes_permission_bits_only() {
        assert_eq!(masked(kind::REG | 0o666, 0o022), kind::REG | 0o644);
    }
}
