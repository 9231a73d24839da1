//! The FUSE floor: a file system that keeps names and sizes in memory and
//! nothing else, mounted the way `fslab mount` mounts (same kernel
//! options, same worker threads, same attribute lifetimes). Whatever it
//! cannot beat, no FUSE file system on this machine can: its rates are the
//! cost of the kernel's round trips alone. `scripts/bench-basic` runs the
//! small-file test on it beside fslab, so that the gap between fslab and
//! kernel ext4 can be split into what fslab spends and what FUSE does.
//!
//! Usage: fuse_floor MOUNTPOINT   (serves in the foreground until unmounted)
//!
//! Files read back as zeros of their size; only what the small-file test
//! uses is implemented (lookup, getattr, mkdir, create, write, read,
//! unlink, rmdir, readdir, fsync of a directory).

use fslab_fuse::TTL;
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, Session, SessionACL, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The root's inode number in the FUSE protocol.
const ROOT: u64 = 1;

struct Node {
    kind: FileType,
    perm: u16,
    size: u64,
    nlink: u32,
    uid: u32,
    gid: u32,
    /// Its every timestamp, fixed at creation as fslab's are between
    /// changes.
    time: SystemTime,
}

#[derive(Default)]
struct Tree {
    nodes: HashMap<u64, Node>,
    names: HashMap<(u64, OsString), u64>,
    next_ino: u64,
}

impl Tree {
    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let n = self.nodes.get(&ino)?;
        Some(FileAttr {
            ino: INodeNo(ino),
            size: n.size,
            blocks: n.size.div_ceil(512),
            atime: n.time,
            mtime: n.time,
            ctime: n.time,
            crtime: n.time,
            kind: n.kind,
            perm: n.perm,
            nlink: n.nlink,
            uid: n.uid,
            gid: n.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn make(
        &mut self,
        req: &Request,
        parent: u64,
        name: &OsStr,
        kind: FileType,
        mode: u32,
    ) -> Result<FileAttr, Errno> {
        if !self.nodes.contains_key(&parent) {
            return Err(Errno::ENOENT);
        }
        let key = (parent, name.to_os_string());
        if self.names.contains_key(&key) {
            return Err(Errno::EEXIST);
        }
        self.next_ino += 1;
        let ino = self.next_ino;
        let nlink = if kind == FileType::Directory { 2 } else { 1 };
        let node = Node {
            kind,
            perm: (mode & 0o7777) as u16,
            size: 0,
            nlink,
            uid: req.uid(),
            gid: req.gid(),
            time: SystemTime::now(),
        };
        self.nodes.insert(ino, node);
        self.names.insert(key, ino);
        self.attr(ino).ok_or(Errno::EIO)
    }

    fn remove(&mut self, parent: u64, name: &OsStr, want_dir: bool) -> Result<(), Errno> {
        let key = (parent, name.to_os_string());
        let ino = *self.names.get(&key).ok_or(Errno::ENOENT)?;
        let is_dir = self.nodes.get(&ino).is_some_and(|n| n.kind == FileType::Directory);
        match (want_dir, is_dir) {
            (true, false) => return Err(Errno::ENOTDIR),
            (false, true) => return Err(Errno::EISDIR),
            (true, true) if self.names.keys().any(|(p, _)| *p == ino) => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        self.names.remove(&key);
        self.nodes.remove(&ino);
        Ok(())
    }
}

struct Floor {
    tree: Mutex<Tree>,
    zero_message_open: bool,
}

impl Floor {
    fn with<T>(&self, op: impl FnOnce(&mut Tree) -> Result<T, Errno>) -> Result<T, Errno> {
        let mut tree = self.tree.lock().map_err(|_| Errno::EIO)?;
        op(&mut tree)
    }
}

fn entry(reply: ReplyEntry, result: Result<FileAttr, Errno>) {
    match result {
        Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
        Err(e) => reply.error(e),
    }
}

impl Filesystem for Floor {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // The capabilities fslab's adapter asks for, so that the kernel
        // sends the same requests.
        let wanted = InitFlags::FUSE_ASYNC_READ
            | InitFlags::FUSE_BIG_WRITES
            | InitFlags::FUSE_MAX_PAGES
            | InitFlags::FUSE_PARALLEL_DIROPS
            | InitFlags::FUSE_HANDLE_KILLPRIV;
        let _ = config.add_capabilities(wanted & config.capabilities());
        self.zero_message_open = config.capabilities().contains(InitFlags::FUSE_NO_OPEN_SUPPORT);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = self.with(|t| {
            let ino = t.names.get(&(parent.0, name.to_os_string())).copied();
            Ok(ino.and_then(|ino| t.attr(ino)))
        });
        match found {
            Ok(Some(attr)) => reply.entry(&TTL, &attr, Generation(0)),
            // A negative entry the kernel may keep, as fslab answers.
            Ok(None) => reply.entry(&TTL, &absent_attr(), Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.with(|t| t.attr(ino.0).ok_or(Errno::ENOENT)) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        entry(reply, self.with(|t| t.make(req, parent.0, name, FileType::Directory, mode & !umask)));
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
        // As fslab does: a handle that cannot read bypasses the page cache.
        let how = if flags & libc::O_ACCMODE == libc::O_WRONLY {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        };
        match self.with(|t| t.make(req, parent.0, name, FileType::RegularFile, mode & !umask)) {
            Ok(attr) => reply.created(&TTL, &attr, Generation(0), FileHandle(0), how),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.zero_message_open {
            reply.error(Errno::ENOSYS);
        } else {
            reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE);
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let written = self.with(|t| {
            let node = t.nodes.get_mut(&ino.0).ok_or(Errno::ENOENT)?;
            node.size = node.size.max(offset + data.len() as u64);
            Ok(data.len() as u32)
        });
        match written {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.with(|t| t.nodes.get(&ino.0).map(|n| n.size).ok_or(Errno::ENOENT)) {
            Ok(len) => reply.data(&vec![0; len.saturating_sub(offset).min(size.into()) as usize]),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _owner: LockOwner, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.with(|t| t.remove(parent.0, name, false)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.with(|t| t.remove(parent.0, name, true)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if offset == 0 {
            let _ = reply.add(ino, 1, FileType::Directory, ".");
        }
        reply.ok();
    }

    fn fsyncdir(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        reply.ok();
    }
}

fn main() {
    let Some(mountpoint) = std::env::args_os().nth(1) else {
        eprintln!("usage: fuse_floor MOUNTPOINT");
        std::process::exit(2);
    };
    let mut tree = Tree { next_ino: ROOT, ..Tree::default() };
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let root =
        Node { kind: FileType::Directory, perm: 0o755, size: 0, nlink: 2, uid, gid, time: SystemTime::now() };
    tree.nodes.insert(ROOT, root);
    let floor = Floor { tree: Mutex::new(tree), zero_message_open: false };
    let mut config = Config::default();
    config.mount_options =
        vec![MountOption::FSName("fuse-floor".to_string()), MountOption::DefaultPermissions];
    config.acl = SessionACL::Owner;
    config.n_threads = Some(fslab_fuse::MountConfig::default().threads);
    let served = Session::new(floor, &mountpoint, &config).and_then(|session| session.run());
    if let Err(e) = served {
        eprintln!("fuse_floor: {e}");
        std::process::exit(1);
    }
}

/// The attributes of node 0: a LOOKUP answered with them leaves the kernel
/// a negative entry for the name.
fn absent_attr() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: FileType::RegularFile,
        perm: 0,
        nlink: 0,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 0,
        flags: 0,
    }
}
