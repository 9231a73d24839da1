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
use crate::convert::{file_attr, file_type, from_fuse, time_ns, time_set, to_fuse};
use crate::damage::DamageLog;
use crate::reply::{
    lookup_answer, send_dir_plus, Answer, Created, DirItem, DirItemPlus, Entry, XattrAnswer, DIRECT_HANDLE,
    TTL,
};
use crate::shared::Shared;
use crate::stale::{kept, Dropped};
use fslab::error::errno;
use fslab::format::inode::{kind, Inode};
use fslab::format::ROOT_INO;
use fslab::storage::StorageManager;
use fslab::ufs::{Access, BlockCopies, Creds, FileSystem, Privilege, RenameFlags as UfsRenameFlags, SetAttr};
use fslab::Result;
use fuser::{
    AccessFlags, BsdFileFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FileType, Filesystem,
    FopenFlags, Generation, INodeNo, InitFlags, KernelConfig, LockOwner, Notifier, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Instant, SystemTime};

mod unlocked_io;

/// The largest read or write the kernel sends in one request (1 MiB).
const MAX_IO: u32 = 1 << 20;

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

/// The FUSE side of a mounted file system.
///
/// Holds the file system behind one lock ([`Shared`]); the library is
/// single-threaded by design, so the kernel's worker threads take turns.
/// File handles are stateless (always 0): every operation names its inode.
pub struct FuseAdapter<S: StorageManager> {
    shared: Arc<Shared<S>>,
    writeback_cache: bool,
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
    /// The way to the kernel's caches, set once the session exists.
    notifier: Arc<OnceLock<Notifier>>,
    /// The rate limits of damage reports.
    damage: Mutex<DamageLog>,
}

impl<S: StorageManager> FuseAdapter<S> {
    /// An adapter over `shared`; `writeback_cache` asks the kernel to cache
    /// writes (safe: the kernel is the only writer to this file system);
    /// `block_size` is the file system's; `notifier` will hold the
    /// session's notifier.
    pub(crate) fn new(
        shared: Arc<Shared<S>>,
        writeback_cache: bool,
        block_size: u32,
        notifier: Arc<OnceLock<Notifier>>,
    ) -> FuseAdapter<S> {
        FuseAdapter {
            shared,
            writeback_cache,
            block_size,
            zero_message_open: false,
            zero_message_opendir: false,
            direct_io_coherent: false,
            notifier,
            damage: Mutex::new(DamageLog::default()),
        }
    }

    /// Runs request `op` on inode `ino` under the file system's lock.
    fn run<T>(
        &self,
        op: &'static str,
        ino: INodeNo,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<T>,
    ) -> Result<T> {
        self.reported(op, ino, self.shared.with(call))
    }

    /// `result` of request `op` on inode `ino`, after an error that is
    /// damage (a corrupt structure, a failing device) has been reported to
    /// the mount's log, rate-limited: the program sees only the errno.
    fn reported<T>(&self, op: &'static str, ino: INodeNo, result: Result<T>) -> Result<T> {
        if let Err(e) = &result {
            let mut damage = self.damage.lock().unwrap_or_else(PoisonError::into_inner);
            let line = damage.report(op, from_fuse(ino), e, Instant::now());
            drop(damage);
            if let Some(line) = line {
                crate::report_line(&line);
            }
        }
        result
    }

    /// Runs request `op` on inode `ino`, whose reply carries no attributes
    /// and after which the kernel drops only `dropped` of its cached
    /// attributes; if `call` changed any other (a write clearing
    /// set-user-ID), tells the kernel to drop them all. The notification
    /// goes out before the reply, so the caller never sees the old value
    /// once its call has returned.
    fn changing<T>(
        &self,
        op: &'static str,
        ino: INodeNo,
        dropped: Dropped,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<T>,
    ) -> Result<T> {
        let target = from_fuse(ino);
        let outcome = self.shared.with(|fs| {
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
    fn drop_cached_attributes(&self, ino: INodeNo) {
        if let Some(notifier) = self.notifier.get() {
            let _ = notifier.inval_inode(ino, -1, 0);
        }
    }

    /// The kernel's attributes of whatever inode `call` returns.
    fn attr(
        &self,
        op: &'static str,
        ino: INodeNo,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<Inode>,
    ) -> Result<FileAttr> {
        self.run(op, ino, |fs| {
            let inode = call(fs)?;
            file_attr(&inode, fs.storage().block_size())
        })
    }

    /// An entry for the inode `call` returns, pinned for the kernel.
    fn entry(
        &self,
        op: &'static str,
        ino: INodeNo,
        call: impl FnOnce(&mut FileSystem<S>) -> Result<Inode>,
    ) -> Result<Entry> {
        self.run(op, ino, |fs| {
            let inode = call(fs)?;
            let attr = file_attr(&inode, fs.storage().block_size())?;
            fs.pin(inode.ino);
            Ok(Entry { attr, generation: Generation(u64::from(inode.generation)) })
        })
    }

    /// READDIRPLUS's entries from `offset`, with their attributes, each
    /// but `.` and `..` pinned as a lookup the kernel will count.
    fn readdirplus_items(&self, ino: INodeNo, offset: u64) -> Result<Vec<DirItemPlus>> {
        self.run("readdirplus", ino, |fs| {
            let entries = fs.readdir(from_fuse(ino), offset, READDIR_BATCH)?;
            let block_size = fs.storage().block_size();
            let mut items = Vec::with_capacity(entries.len());
            let mut bytes = 0;
            for e in entries {
                bytes += DIRENTPLUS_HEADER + e.name.len().next_multiple_of(8);
                if bytes > READDIRPLUS_BYTES && !items.is_empty() {
                    break;
                }
                let kind = entry_type(fs, e.ino, e.kind);
                let (entry, ttl) = match fs.getattr(e.ino).and_then(|inode| {
                    let attr = file_attr(&inode, block_size)?;
                    Ok(Entry { attr, generation: Generation(u64::from(inode.generation)) })
                }) {
                    Ok(entry) => (entry, TTL),
                    // Damage: the name still lists, as READDIR lists it,
                    // and the kernel's next look at it meets the error.
                    Err(_) => {
                        let attr =
                            FileAttr { ino: to_fuse(e.ino), kind, nlink: 1, ..crate::reply::absent_attr() };
                        (Entry { attr, generation: Generation(0) }, std::time::Duration::ZERO)
                    }
                };
                let counted = e.name != b"." && e.name != b"..";
                if counted {
                    fs.pin(e.ino);
                }
                let item = DirItem { ino: to_fuse(e.ino), next_offset: e.next_offset, kind, name: e.name };
                items.push(DirItemPlus { item, entry, ttl, counted });
            }
            Ok(items)
        })
    }

    fn readdir_items(&self, ino: INodeNo, offset: u64) -> Result<Vec<DirItem>> {
        self.run("readdir", ino, |fs| {
            let entries = fs.readdir(from_fuse(ino), offset, READDIR_BATCH)?;
            Ok(entries
                .into_iter()
                .map(|e| DirItem {
                    ino: to_fuse(e.ino),
                    next_offset: e.next_offset,
                    kind: entry_type(fs, e.ino, e.kind),
                    name: e.name,
                })
                .collect())
        })
    }
}

/// The type a directory entry lists: its own, or where the entry's type
/// byte names none (a damaged or rolled-back entry: Linux's `DT_UNKNOWN`,
/// which FUSE cannot send), its inode's; a regular file where neither can
/// be told. Failing the request instead lost every entry from there on,
/// since the kernel asks again from the same place.
fn entry_type<S: StorageManager>(fs: &mut FileSystem<S>, ino: fslab::format::Ino, kind: u32) -> FileType {
    file_type(kind)
        .or_else(|_| fs.getattr(ino).and_then(|inode| file_type(inode.attr.mode)))
        .unwrap_or(FileType::RegularFile)
}

/// Who creates a node: the caller of the request.
fn creds(req: &Request) -> Creds {
    Creds { uid: req.uid(), gid: req.gid() }
}

/// The ids of the caller of a request.
fn caller(req: &Request) -> Caller {
    Caller { uid: req.uid(), gid: req.gid(), pid: req.pid() }
}

/// How Linux's rules see `caller` changing `ino`; worked out (which may
/// read /proc) only for a file with set-user-ID or set-group-ID to lose.
fn privilege<S: StorageManager>(fs: &mut FileSystem<S>, ino: INodeNo, caller: Caller) -> Result<Privilege> {
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

fn rename_flags(flags: RenameFlags) -> Result<UfsRenameFlags> {
    if !(RenameFlags::RENAME_NOREPLACE | RenameFlags::RENAME_EXCHANGE).contains(flags) {
        return Err(errno(libc::EINVAL, "unsupported rename flags"));
    }
    Ok(UfsRenameFlags {
        noreplace: flags.contains(RenameFlags::RENAME_NOREPLACE),
        exchange: flags.contains(RenameFlags::RENAME_EXCHANGE),
    })
}

impl<S: StorageManager + 'static> Filesystem for FuseAdapter<S> {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Each setter answers a refusal with the nearest value it accepts.
        if let Err(nearest) = config.set_max_write(MAX_IO) {
            let _ = config.set_max_write(nearest);
        }
        if let Err(nearest) = config.set_max_readahead(MAX_IO) {
            let _ = config.set_max_readahead(nearest);
        }
        let _ = config.set_max_background(64);
        let mut wanted = InitFlags::FUSE_ASYNC_READ
            | InitFlags::FUSE_BIG_WRITES
            | InitFlags::FUSE_MAX_PAGES
            | InitFlags::FUSE_PARALLEL_DIROPS
            // ufs clears set-user-ID and set-group-ID on write, truncate,
            // fallocate and chown itself (with the caller's privilege,
            // `caller`), so the kernel need not ask for
            // security.capability before every write.
            | InitFlags::FUSE_HANDLE_KILLPRIV
            // A file handle is the node id (the inode number) and the
            // generation, both on disk: the kernel may ask for nodes it
            // has forgotten (`lookup` of "." and ".."), and handles work
            // across remounts, so the mount can be exported over NFS.
            | InitFlags::FUSE_EXPORT_SUPPORT
            // `ls -l` and `find` of a directory the kernel has not cached
            // get its names and attributes in one request per buffer, not
            // a LOOKUP per name; the kernel decides per directory whether
            // its callers look names up (READDIRPLUS_AUTO).
            | InitFlags::FUSE_DO_READDIRPLUS
            | InitFlags::FUSE_READDIRPLUS_AUTO;
        if self.writeback_cache {
            wanted |= InitFlags::FUSE_WRITEBACK_CACHE;
        }
        // Ask only for what this kernel offers; an old kernel still mounts.
        let _ = config.add_capabilities(wanted & config.capabilities());
        // Handles are stateless, so OPEN, OPENDIR and their releases carry
        // nothing: where the kernel can skip them, a small-file create or
        // read saves two round trips each.
        self.zero_message_open = config.capabilities().contains(InitFlags::FUSE_NO_OPEN_SUPPORT);
        self.zero_message_opendir = config.capabilities().contains(InitFlags::FUSE_NO_OPENDIR_SUPPORT);
        self.direct_io_coherent = config.capabilities().contains(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        Ok(())
    }

    fn destroy(&mut self) {
        // The result is kept in `Shared` for whoever runs the session.
        let _ = self.shared.shutdown();
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        // A path walk resolves "." and ".." in the kernel; they come here
        // only from file handles (FUSE_EXPORT_SUPPORT): "." for a node the
        // kernel has forgotten, ".." to join a directory to the tree.
        match name.as_bytes() {
            b"." => reply.answer(self.entry("lookup", parent, |fs| fs.by_handle(from_fuse(parent)))),
            b".." => reply.answer(self.entry("lookup", parent, |fs| fs.parent(from_fuse(parent)))),
            name => {
                lookup_answer(reply, self.entry("lookup", parent, |fs| fs.lookup(from_fuse(parent), name)))
            }
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        // No reply to carry an error; the library reports its own damage.
        let _ = self.run("forget", ino, |fs| fs.unpin(from_fuse(ino), nlookup));
    }

    // `batch_forget` keeps fuser's default, which calls `forget` per inode
    // (fuser 0.18 does not export the element type needed to override it).

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        reply.answer(self.attr("getattr", ino, |fs| fs.getattr(from_fuse(ino))));
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let caller = caller(req);
        let mut change = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime: atime.map(time_set),
            mtime: mtime.map(time_set),
            ctime: ctime.map(time_ns),
            btime: crtime.map(time_ns),
            flags: flags.map(|f| f.bits()),
            kill_privileges: false,
            who: Privilege::default(),
        };
        // With HANDLE_KILLPRIV the kernel strips ATTR_KILL_SUID/SGID and the
        // mode it computed, and sends what is left: for chown(f, -1, -1),
        // and for a write by a caller without CAP_FSETID, nothing at all.
        // Such a request is only ever sent to clear the bits.
        change.kill_privileges = change == SetAttr::default();
        reply.answer(self.attr("setattr", ino, |fs| {
            if size.is_some() || uid.is_some() || gid.is_some() || change.kill_privileges {
                change.who = privilege(fs, ino, caller)?;
            }
            fs.setattr(from_fuse(ino), &change)
        }));
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        reply.answer(self.run("readlink", ino, |fs| fs.readlink(from_fuse(ino))));
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let (mode, creds) = (masked(mode, umask), creds(req));
        reply.answer(self.entry("mknod", parent, |fs| {
            fs.mknod(from_fuse(parent), name.as_bytes(), mode, rdev.into(), creds)
        }));
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let (mode, creds) = (masked(mode, umask), creds(req));
        reply.answer(
            self.entry("mkdir", parent, |fs| fs.mkdir(from_fuse(parent), name.as_bytes(), mode, creds)),
        );
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.answer(self.run("unlink", parent, |fs| fs.unlink(from_fuse(parent), name.as_bytes())));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.answer(self.run("rmdir", parent, |fs| fs.rmdir(from_fuse(parent), name.as_bytes())));
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let (target, creds) = (target.as_os_str().as_bytes(), creds(req));
        reply.answer(self.entry("symlink", parent, |fs| {
            fs.symlink(from_fuse(parent), link_name.as_bytes(), target, creds)
        }));
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.answer(rename_flags(flags).and_then(|flags| {
            self.run("rename", parent, |fs| {
                fs.rename(from_fuse(parent), name.as_bytes(), from_fuse(newparent), newname.as_bytes(), flags)
            })
        }));
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        reply.answer(
            self.entry("link", ino, |fs| fs.link(from_fuse(ino), from_fuse(newparent), newname.as_bytes())),
        );
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.zero_message_open {
            reply.error(Errno::ENOSYS);
            return;
        }
        // Stateless: O_TRUNC arrives as a separate setattr. The kernel's page
        // cache stays valid across opens because all writes come through it.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE);
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.zero_message_opendir {
            reply.error(Errno::ENOSYS);
            return;
        }
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        // The kernel passes the descriptor's flags with every read, and
        // refused O_NOATIME at open to all but the owner.
        let access = if flags.0 & libc::O_NOATIME != 0 { Access::NoAtime } else { Access::Touch };
        reply.answer(self.read_data(ino, offset, size as usize, access));
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        // Copying the data into block buffers is a good part of a large
        // write's work; done here, it overlaps a segment being written
        // behind under the lock.
        let copies = BlockCopies::of(offset, data, self.block_size);
        let mut written = self.write_data(ino, offset, data, copies, caller(req));
        // O_SYNC, O_DSYNC and RWF_(D)SYNC arrive as these flags. On a
        // handle whose writes go straight through (direct I/O: a new file
        // opened write-only) the kernel sends no fsync after the write, as
        // it does for cached ones, so the write is made durable here.
        if written.is_ok() && fh.0 == DIRECT_HANDLE && flags.0 & libc::O_DSYNC != 0 {
            let datasync = flags.0 & libc::O_SYNC != libc::O_SYNC;
            if let Err(e) = self.run("write", ino, |fs| fs.fsync(from_fuse(ino), datasync)) {
                written = Err(e);
            }
        }
        // A write is at most MAX_IO bytes, so the count fits in 32 bits.
        reply.answer(written.map(|n| n as u32));
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(2) promises nothing about durability; fsync does. ENOSYS
        // tells the kernel to stop sending FLUSH at every close.
        reply.error(Errno::ENOSYS);
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        reply.answer(self.run("fsync", ino, |fs| fs.fsync(from_fuse(ino), datasync)));
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, reply: ReplyDirectory) {
        reply.answer(self.readdir_items(ino, offset));
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectoryPlus,
    ) {
        match self.readdirplus_items(ino, offset) {
            Err(e) => reply.error(Errno::from_i32(e.errno())),
            Ok(items) => {
                // Entries past the kernel's buffer were pinned but never
                // sent: the kernel counts no lookup of them to forget.
                let unsent = send_dir_plus(reply, items);
                if !unsent.is_empty() {
                    let _ = self.run("readdirplus", ino, |fs| {
                        unsent.iter().try_for_each(|&node| fs.unpin(from_fuse(node), 1))
                    });
                }
            }
        }
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        // Linux does not pass sync(2) or syncfs(2) on to a FUSE server, so
        // fsync of the mount's root directory stands in for them (it is what
        // `fslab sync` does): a checkpoint, everything durable — more than
        // the directory's own entries, which fsync promises.
        let target = from_fuse(ino);
        reply.answer(self.run("fsyncdir", ino, |fs| {
            if target == ROOT_INO {
                fs.sync()
            } else {
                fs.fsync(target, datasync)
            }
        }));
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        reply.answer(self.run("statfs", ino, |fs| fs.statfs()));
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        position: u32,
        reply: ReplyEmpty,
    ) {
        reply.answer(match position {
            0 => self.changing("setxattr", ino, Dropped::Ctime, |fs| {
                fs.setxattr(from_fuse(ino), name.as_bytes(), value, flags)
            }),
            _ => Err(errno(libc::EINVAL, "xattr position is macOS-only")),
        });
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        reply.answer(
            self.run("getxattr", ino, |fs| fs.getxattr(from_fuse(ino), name.as_bytes()))
                .and_then(|v| xattr_answer(v, size)),
        );
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let names = self.run("listxattr", ino, |fs| fs.listxattr(from_fuse(ino)));
        // As ext4 and tmpfs list them: `trusted.*` only to CAP_SYS_ADMIN,
        // which the kernel asks before it reads or sets one.
        let names = names.map(|list| {
            let trusted = list.split(|&b| b == 0).any(|n| n.starts_with(b"trusted."));
            if trusted && !caller(req).sys_admin() {
                without_trusted(&list)
            } else {
                list
            }
        });
        reply.answer(names.and_then(|v| xattr_answer(v, size)));
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.answer(self.changing("removexattr", ino, Dropped::Ctime, |fs| {
            fs.removexattr(from_fuse(ino), name.as_bytes())
        }));
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        // Only reached without `default_permissions`: the inode must exist.
        reply.answer(self.run("access", ino, |fs| fs.getattr(from_fuse(ino)).map(|_| ())));
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let (mode, creds) = (kind::REG | masked(mode & 0o7777, umask), creds(req));
        // A handle that cannot read needs no page cache: its writes go
        // straight from the writer's buffer to this process, a copy fewer
        // (and no cache to fill and reclaim) for `dd`, `cp` and shell
        // redirections writing a new file. It cannot be mmapped either, so
        // nothing is given up; a kernel from 6.6 on drops other handles'
        // cached pages on each direct write, which keeps them coherent. An
        // older one keeps them (a reader of a growing log would see zeros
        // where it had read the end before), so there the handle is cached
        // like any other.
        let direct_io = self.direct_io_coherent && flags & libc::O_ACCMODE == libc::O_WRONLY;
        let entry =
            self.entry("create", parent, |fs| fs.mknod(from_fuse(parent), name.as_bytes(), mode, 0, creds));
        reply.answer(entry.map(|entry| Created { entry, direct_io }));
    }

    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let caller = caller(req);
        reply.answer(self.changing("fallocate", ino, Dropped::Contents, |fs| {
            let who = privilege(fs, ino, caller)?;
            fs.fallocate_by(from_fuse(ino), offset, length, mode, who)
        }));
    }

    fn lseek(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        reply.answer(
            self.run("lseek", ino, |fs| fs.lseek(from_fuse(ino), offset, whence)).map(|found| found as i64),
        );
    }

    fn copy_file_range(
        &self,
        req: &Request,
        ino_in: INodeNo,
        _fh_in: FileHandle,
        offset_in: u64,
        ino_out: INodeNo,
        _fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        let caller = caller(req);
        reply.answer(if flags.is_empty() {
            self.changing("copy_file_range", ino_out, Dropped::Contents, |fs| {
                let who = privilege(fs, ino_out, caller)?;
                fs.copy_file_range_by(
                    from_fuse(ino_in),
                    offset_in,
                    from_fuse(ino_out),
                    offset_out,
                    len.min(MAX_COPY),
                    who,
                )
            })
            .map(|n| n.min(MAX_COPY) as u32)
        } else {
            Err(errno(libc::EINVAL, "unsupported copy_file_range flags"))
        });
    }
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
        let both = RenameFlags::RENAME_NOREPLACE | RenameFlags::RENAME_EXCHANGE;
        assert_eq!(rename_flags(both).ok(), Some(UfsRenameFlags { noreplace: true, exchange: true }));
        assert_eq!(rename_flags(RenameFlags::empty()).ok(), Some(UfsRenameFlags::default()));
        assert_eq!(rename_flags(RenameFlags::RENAME_WHITEOUT).err().map(|e| e.errno()), Some(libc::EINVAL));
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
        assert_eq!(entry_type(&mut fs, d, 0), FileType::Directory, "the inode's type");
        assert_eq!(entry_type(&mut fs, d, kind::LNK), FileType::Symlink, "the entry's own");
        assert_eq!(entry_type(&mut fs, 9999, 0), FileType::RegularFile, "neither can be told");
    }

    #[test]
    fn umask_removes_permission_bits_only() {
        assert_eq!(masked(kind::REG | 0o666, 0o022), kind::REG | 0o644);
    }
}
