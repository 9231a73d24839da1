//! Replying once: each kind of kernel reply takes a `fslab::Result` and sends
//! either the value or the error's errno (STYLE item 12).

use fslab::storage::StatFs;
use fslab::Result;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyStatfs,
    ReplyWrite, ReplyXattr,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

/// How long the kernel may cache attributes and names without asking again.
/// Safe to be long because every change passes through this mount, and the
/// kernel drops what each change touches (a directory's attributes after an
/// entry changes, a file's after a write). With one second, deleting 10,000
/// files just created sent a LOOKUP before every UNLINK to revalidate the
/// name, a third of the requests.
pub const TTL: Duration = Duration::from_secs(3600);

/// A name the kernel may cache: the attributes of the inode it names.
pub struct Entry {
    /// The attributes.
    pub attr: FileAttr,
    /// The inode's generation (tells a reused inode number from the old one).
    pub generation: Generation,
}

/// One directory entry ready for the kernel.
pub struct DirItem {
    /// Its kernel inode number.
    pub ino: INodeNo,
    /// The offset that continues the listing after it.
    pub next_offset: u64,
    /// Its type.
    pub kind: FileType,
    /// Its name.
    pub name: Vec<u8>,
}

/// One directory entry with the attributes of what it names, for
/// READDIRPLUS: the kernel caches both as if it had looked the name up,
/// and counts that lookup for every entry but `.` and `..`.
pub struct DirItemPlus {
    /// The entry.
    pub item: DirItem,
    /// What it names: its attributes, or, where they could not be read
    /// (damage), the node's number and type alone with no time to live, so
    /// that the kernel asks again and meets the error then.
    pub entry: Entry,
    /// How long the kernel may keep the name and attributes.
    pub ttl: Duration,
    /// Whether the kernel counts a lookup of it (all but `.` and `..`).
    pub counted: bool,
}

/// Adds `items` to `reply` until the kernel's buffer is full and sends it;
/// returns the counted entries that did not fit, whose lookups the kernel
/// never saw.
pub fn send_dir_plus(mut reply: ReplyDirectoryPlus, items: Vec<DirItemPlus>) -> Vec<INodeNo> {
    let mut unsent = Vec::new();
    let mut full = false;
    for p in items {
        if !full {
            let name = OsStr::from_bytes(&p.item.name);
            full = reply.add(p.item.ino, p.item.next_offset, name, &p.ttl, &p.entry.attr, p.entry.generation);
        }
        if full && p.counted {
            unsent.push(p.item.ino);
        }
    }
    reply.ok();
    unsent
}

/// The answer to `getxattr` / `listxattr`: the size the caller must allow,
/// or the bytes themselves.
pub enum XattrAnswer {
    /// The caller asked for the size only.
    Size(u32),
    /// The value (or the list of names).
    Data(Vec<u8>),
}

/// A kernel reply that can be sent from a `Result`: the value, or the errno.
pub trait Answer<T> {
    /// Sends `result` to the kernel.
    fn answer(self, result: Result<T>);
}

fn errno(e: &fslab::Error) -> Errno {
    Errno::from_i32(e.errno())
}

impl Answer<Entry> for ReplyEntry {
    fn answer(self, result: Result<Entry>) {
        match result {
            Ok(entry) => self.entry(&TTL, &entry.attr, entry.generation),
            Err(e) => self.error(errno(&e)),
        }
    }
}

/// The answer to a LOOKUP: the entry, or, for a name that is not there, an
/// entry for node 0, which the kernel keeps as a negative entry for [`TTL`]
/// (a plain ENOENT is forgotten at once). Programs look for the same missing
/// names again and again — a search path, `.git` files, headers — and each
/// look would be a round trip; a later create, rename or link of the name
/// passes through the kernel, which replaces the negative entry.
pub fn lookup_answer(reply: ReplyEntry, result: Result<Entry>) {
    match result {
        Err(e) if e.errno() == libc::ENOENT => reply.entry(&TTL, &absent_attr(), Generation(0)),
        result => reply.answer(result),
    }
}

/// The attributes of node 0: a LOOKUP answered with them leaves the kernel
/// a negative entry for the name, kept for [`TTL`].
pub fn absent_attr() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: std::time::UNIX_EPOCH,
        mtime: std::time::UNIX_EPOCH,
        ctime: std::time::UNIX_EPOCH,
        crtime: std::time::UNIX_EPOCH,
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

/// The handle of a file created with direct I/O (every other handle is 0):
/// its writes are the ones the kernel follows with no fsync of its own.
pub const DIRECT_HANDLE: u64 = 1;

/// A file just created and opened: its entry and how the kernel is to do
/// the handle's reads and writes.
pub struct Created {
    /// The new file's entry.
    pub entry: Entry,
    /// Whether the handle bypasses the kernel's page cache.
    pub direct_io: bool,
}

impl Answer<Created> for ReplyCreate {
    fn answer(self, result: Result<Created>) {
        match result {
            Ok(Created { entry, direct_io }) => {
                let flags =
                    if direct_io { FopenFlags::FOPEN_DIRECT_IO } else { FopenFlags::FOPEN_KEEP_CACHE };
                let handle = FileHandle(if direct_io { DIRECT_HANDLE } else { 0 });
                self.created(&TTL, &entry.attr, entry.generation, handle, flags)
            }
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<FileAttr> for ReplyAttr {
    fn answer(self, result: Result<FileAttr>) {
        match result {
            Ok(attr) => self.attr(&TTL, &attr),
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<()> for ReplyEmpty {
    fn answer(self, result: Result<()>) {
        match result {
            Ok(()) => self.ok(),
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<Vec<u8>> for ReplyData {
    fn answer(self, result: Result<Vec<u8>>) {
        match result {
            Ok(data) => self.data(&data),
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<u32> for ReplyWrite {
    fn answer(self, result: Result<u32>) {
        match result {
            Ok(written) => self.written(written),
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<i64> for ReplyLseek {
    fn answer(self, result: Result<i64>) {
        match result {
            Ok(offset) => self.offset(offset),
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<XattrAnswer> for ReplyXattr {
    fn answer(self, result: Result<XattrAnswer>) {
        match result {
            Ok(XattrAnswer::Size(size)) => self.size(size),
            Ok(XattrAnswer::Data(data)) => self.data(&data),
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<StatFs> for ReplyStatfs {
    fn answer(self, result: Result<StatFs>) {
        match result {
            Ok(s) => self.statfs(
                s.total_blocks,
                s.free_blocks,
                s.free_blocks,
                s.total_inodes,
                s.free_inodes,
                s.block_size,
                s.name_max,
                s.block_size,
            ),
            Err(e) => self.error(errno(&e)),
        }
    }
}

impl Answer<Vec<DirItem>> for ReplyDirectory {
    /// Adds entries until the kernel's buffer is full; the kernel asks again
    /// from the last entry's offset for the ones that did not fit.
    fn answer(mut self, result: Result<Vec<DirItem>>) {
        match result {
            Ok(items) => {
                for item in items {
                    if self.add(item.ino, item.next_offset, item.kind, OsStr::from_bytes(&item.name)) {
                        break;
                    }
                }
                self.ok()
            }
            Err(e) => self.error(errno(&e)),
        }
    }
}
