//! The floor itself: names and sizes in memory, and one function,
//! `Serve::serve`, that answers a decoded request into a reply buffer,
//! whichever transport brought it.
//!
//! It answers as `examples/fuse_floor.rs` does through fuser, operation by
//! operation (same attributes, lifetimes, open flags, negative entries,
//! ENOSYS where that floor leaves fuser's default ENOSYS), so that the two
//! floors differ in their transport only.

use crate::abi::{self, Answer, Attr, Entry, Op, Out, Request};
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The root's inode number in the FUSE protocol.
pub const ROOT: u64 = 1;

/// How long the kernel may keep names and attributes: fslab's [`TTL`].
///
/// [`TTL`]: fslab_fuse::TTL
fn ttl() -> std::time::Duration {
    fslab_fuse::TTL
}

/// An entry for `attr` that the kernel may keep for [`ttl`].
fn entry(attr: Attr) -> Entry {
    Entry { attr, generation: 0, entry_valid: ttl(), attr_valid: ttl() }
}

struct Node {
    is_dir: bool,
    perm: u16,
    size: u64,
    nlink: u32,
    uid: u32,
    gid: u32,
    /// Its every timestamp, fixed at creation.
    time: SystemTime,
}

/// Every node by inode number, and every name by (parent, name).
#[derive(Default)]
struct Tree {
    nodes: HashMap<u64, Node>,
    names: HashMap<(u64, OsString), u64>,
    next_ino: u64,
}

impl Tree {
    fn attr(&self, ino: u64) -> Option<Attr> {
        let n = self.nodes.get(&ino)?;
        // As fuser converts a `SystemTime`: before the epoch counts as it.
        let since = n.time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let kind = if n.is_dir { libc::S_IFDIR } else { libc::S_IFREG };
        Some(Attr {
            ino,
            size: n.size,
            blocks: n.size.div_ceil(512),
            atime: (since.as_secs(), since.subsec_nanos()),
            mtime: (since.as_secs(), since.subsec_nanos()),
            ctime: (since.as_secs(), since.subsec_nanos()),
            mode: kind | u32::from(n.perm),
            nlink: n.nlink,
            uid: n.uid,
            gid: n.gid,
            blksize: 4096,
            ..Attr::default()
        })
    }

    fn make(
        &mut self,
        parent: u64,
        name: &[u8],
        is_dir: bool,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, i32> {
        if !self.nodes.contains_key(&parent) {
            return Err(libc::ENOENT);
        }
        let key = (parent, std::ffi::OsStr::from_bytes(name).to_os_string());
        if self.names.contains_key(&key) {
            return Err(libc::EEXIST);
        }
        self.next_ino += 1;
        let ino = self.next_ino;
        let nlink = if is_dir { 2 } else { 1 };
        let node =
            Node { is_dir, perm: (mode & 0o7777) as u16, size: 0, nlink, uid, gid, time: SystemTime::now() };
        self.nodes.insert(ino, node);
        self.names.insert(key, ino);
        self.attr(ino).ok_or(libc::EIO)
    }

    fn remove(&mut self, parent: u64, name: &[u8], want_dir: bool) -> Result<(), i32> {
        let key = (parent, std::ffi::OsStr::from_bytes(name).to_os_string());
        let ino = *self.names.get(&key).ok_or(libc::ENOENT)?;
        let is_dir = self.nodes.get(&ino).is_some_and(|n| n.is_dir);
        match (want_dir, is_dir) {
            (true, false) => return Err(libc::ENOTDIR),
            (false, true) => return Err(libc::EISDIR),
            (true, true) if self.names.keys().any(|(p, _)| *p == ino) => return Err(libc::ENOTEMPTY),
            _ => {}
        }
        self.names.remove(&key);
        self.nodes.remove(&ino);
        Ok(())
    }
}

/// The file system: one lock around the tree, as the fuser floor has.
pub struct Floor {
    tree: Mutex<Tree>,
    /// The kernel offered FUSE_NO_OPEN_SUPPORT: OPEN is answered ENOSYS,
    /// after which the kernel opens files without asking.
    zero_message_open: bool,
}

/// The floor answers every request the same way, whichever transport
/// brought it.
impl fslab_fuse::kernel::Serve for Floor {
    fn serve(&self, request: &Request, out: &mut [u8]) -> Answer {
        abi::answer(request, out, |out| self.answer(request, out))
    }
}

impl Floor {
    /// An empty file system whose root belongs to `uid`:`gid`.
    pub fn new(uid: u32, gid: u32, zero_message_open: bool) -> Floor {
        let mut tree = Tree { next_ino: ROOT, ..Tree::default() };
        let root = Node { is_dir: true, perm: 0o755, size: 0, nlink: 2, uid, gid, time: SystemTime::now() };
        tree.nodes.insert(ROOT, root);
        Floor { tree: Mutex::new(tree), zero_message_open }
    }

    fn with<T>(&self, op: impl FnOnce(&mut Tree) -> Result<T, i32>) -> Result<T, i32> {
        let mut tree = self.tree.lock().map_err(|_| libc::EIO)?;
        op(&mut tree)
    }

    fn answer(&self, request: &Request, out: &mut Out) -> Result<(), i32> {
        let h = &request.header;
        match request.op {
            Op::Lookup { name } => {
                let key = (h.nodeid, std::ffi::OsStr::from_bytes(name).to_os_string());
                let found = self.with(|t| Ok(t.names.get(&key).and_then(|&ino| t.attr(ino))))?;
                // Not found: a negative entry the kernel may keep, as fslab answers.
                abi::put_entry(out, &entry(found.unwrap_or_default()))?;
            }
            Op::Getattr { .. } => {
                let attr = self.with(|t| t.attr(h.nodeid).ok_or(libc::ENOENT))?;
                abi::put_attr_out(out, &attr, ttl())?;
            }
            Op::Mkdir { mode, umask, name } => {
                let attr = self.with(|t| t.make(h.nodeid, name, true, mode & !umask, h.uid, h.gid))?;
                abi::put_entry(out, &entry(attr))?;
            }
            Op::Create { flags, mode, umask, name } => {
                // As fslab does: a handle that cannot read bypasses the page cache.
                let how = if flags as i32 & libc::O_ACCMODE == libc::O_WRONLY {
                    abi::open_flag::DIRECT_IO
                } else {
                    abi::open_flag::KEEP_CACHE
                };
                let attr = self.with(|t| t.make(h.nodeid, name, false, mode & !umask, h.uid, h.gid))?;
                abi::put_entry(out, &entry(attr))?;
                abi::put_open(out, 0, how)?;
            }
            Op::Open { .. } if self.zero_message_open => return Err(libc::ENOSYS),
            Op::Open { .. } => abi::put_open(out, 0, abi::open_flag::KEEP_CACHE)?,
            Op::Write { offset, data, .. } => {
                self.with(|t| {
                    let node = t.nodes.get_mut(&h.nodeid).ok_or(libc::ENOENT)?;
                    node.size = node.size.max(offset + data.len() as u64);
                    Ok(())
                })?;
                abi::put_write(out, data.len() as u32)?;
            }
            Op::Read { offset, size, .. } => {
                let len = self.with(|t| t.nodes.get(&h.nodeid).map(|n| n.size).ok_or(libc::ENOENT))?;
                let n = len.saturating_sub(offset).min(size.into()) as usize;
                out.zeros(n.min(out.room()))?;
            }
            Op::Unlink { name } => self.with(|t| t.remove(h.nodeid, name, false))?,
            Op::Rmdir { name } => self.with(|t| t.remove(h.nodeid, name, true))?,
            Op::Opendir { .. } => abi::put_open(out, 0, 0)?,
            Op::Readdir { offset, size, .. } => {
                if offset == 0 {
                    let dir = u32::from(libc::DT_DIR);
                    abi::put_dirent(out, size as usize, h.nodeid, 1, dir, b".")?;
                }
            }
            Op::Release { .. } | Op::Releasedir { .. } | Op::Fsyncdir { .. } | Op::Destroy => {}
            Op::Statfs => {
                // fuser's default: all counts zero, 512-byte blocks, 255-byte names.
                let statfs = abi::Statfs { bsize: 512, namelen: 255, ..abi::Statfs::default() };
                abi::put_statfs(out, &statfs)?;
            }
            Op::Forget { .. } | Op::BatchForget { .. } => {}
            // Everything else the fuser floor leaves to fuser's ENOSYS.
            _ => return Err(libc::ENOSYS),
        }
        Ok(())
    }
}
