//! Replies and notifications: the `fuse_out_header` and each answer's
//! structure, written into a caller's buffer. A reply that would not fit
//! is an error ([`Overflow`]), never a panic.

use super::{notify, INIT_OUT_SIZE, KERNEL_MINOR_VERSION, KERNEL_VERSION, OUT_HEADER_SIZE};
use std::time::Duration;

/// A server's answer to one request, its bytes already in the reply buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Success with this many bytes of reply (after the out header).
    Reply(usize),
    /// Failure with this errno (positive).
    Error(i32),
    /// No reply (FORGET, BATCH_FORGET).
    Nothing,
}

/// The answer to `request`: nothing to a request that takes no reply,
/// else the reply `write` puts into `buf` (its length), or the errno it
/// fails with. What every server does around its own answers.
pub fn answer(
    request: &super::request::Request,
    buf: &mut [u8],
    write: impl FnOnce(&mut Out) -> Result<(), i32>,
) -> Answer {
    if request.op.is_noreply() {
        return Answer::Nothing;
    }
    let mut out = Out::new(buf);
    match write(&mut out) {
        Ok(()) => Answer::Reply(out.len()),
        Err(errno) => Answer::Error(errno),
    }
}

/// Writes `fuse_out_header` for `answer` to request `unique` into `out`.
pub fn put_out_header(out: &mut [u8; OUT_HEADER_SIZE], unique: u64, answer: Answer) {
    let (len, error) = match answer {
        Answer::Reply(n) => (OUT_HEADER_SIZE + n, 0),
        Answer::Error(errno) => (OUT_HEADER_SIZE, -errno),
        Answer::Nothing => (OUT_HEADER_SIZE, 0),
    };
    out[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    out[4..8].copy_from_slice(&error.to_ne_bytes());
    out[8..16].copy_from_slice(&unique.to_ne_bytes());
}

/// A reply being written into a caller's buffer.
pub struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

/// The reply buffer was too small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

/// A reply too large for its buffer fails its request with ERANGE, as a
/// caller's too-small buffer fails `getxattr(2)`.
impl From<Overflow> for i32 {
    fn from(_: Overflow) -> i32 {
        libc::ERANGE
    }
}

impl<'a> Out<'a> {
    /// An empty reply in `buf`.
    pub fn new(buf: &'a mut [u8]) -> Out<'a> {
        Out { buf, len: 0 }
    }

    /// Bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room left.
    pub fn room(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Appends `bytes`.
    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), Overflow> {
        let end = self.len.checked_add(bytes.len()).ok_or(Overflow)?;
        self.buf.get_mut(self.len..end).ok_or(Overflow)?.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// Appends `n` zero bytes.
    pub fn zeros(&mut self, n: usize) -> Result<(), Overflow> {
        let end = self.len.checked_add(n).ok_or(Overflow)?;
        self.buf.get_mut(self.len..end).ok_or(Overflow)?.fill(0);
        self.len = end;
        Ok(())
    }

    /// Appends a native-endian `u16`.
    pub fn u16(&mut self, v: u16) -> Result<(), Overflow> {
        self.bytes(&v.to_ne_bytes())
    }

    /// Appends a native-endian `u32`.
    pub fn u32(&mut self, v: u32) -> Result<(), Overflow> {
        self.bytes(&v.to_ne_bytes())
    }

    /// Appends a native-endian `u64`.
    pub fn u64(&mut self, v: u64) -> Result<(), Overflow> {
        self.bytes(&v.to_ne_bytes())
    }
}

/// A time as `struct fuse_attr` carries it: seconds and nanoseconds.
pub type Time = (u64, u32);

/// A node's attributes as `struct fuse_attr` carries them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Attr {
    pub ino: u64,
    pub size: u64,
    /// 512-byte units.
    pub blocks: u64,
    pub atime: Time,
    pub mtime: Time,
    pub ctime: Time,
    /// File type and permission bits.
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u32,
    pub blksize: u32,
    pub flags: u32,
}

/// `struct fuse_attr` (88 bytes).
pub fn put_attr(out: &mut Out, a: &Attr) -> Result<(), Overflow> {
    out.u64(a.ino)?;
    out.u64(a.size)?;
    out.u64(a.blocks)?;
    for t in [a.atime, a.mtime, a.ctime] {
        out.u64(t.0)?;
    }
    for t in [a.atime, a.mtime, a.ctime] {
        out.u32(t.1)?;
    }
    for v in [a.mode, a.nlink, a.uid, a.gid, a.rdev, a.blksize, a.flags] {
        out.u32(v)?;
    }
    Ok(())
}

/// A lifetime as the protocol carries it: seconds and nanoseconds.
fn put_valid_pair(out: &mut Out, first: Duration, second: Duration) -> Result<(), Overflow> {
    out.u64(first.as_secs())?;
    out.u64(second.as_secs())?;
    out.u32(first.subsec_nanos())?;
    out.u32(second.subsec_nanos())
}

/// An entry the kernel may cache: a node, its generation, how long the
/// name and the attributes stay valid, and the attributes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Entry {
    /// The node's attributes; `attr.ino` is its node id (0 makes a
    /// negative entry, a name known not to exist).
    pub attr: Attr,
    /// The node's generation (with the node id, a file handle).
    pub generation: u64,
    /// How long the name stays valid.
    pub entry_valid: Duration,
    /// How long the attributes stay valid.
    pub attr_valid: Duration,
}

/// `struct fuse_entry_out` (128 bytes).
pub fn put_entry(out: &mut Out, e: &Entry) -> Result<(), Overflow> {
    out.u64(e.attr.ino)?;
    out.u64(e.generation)?;
    put_valid_pair(out, e.entry_valid, e.attr_valid)?;
    put_attr(out, &e.attr)
}

/// `struct fuse_attr_out` (104 bytes).
pub fn put_attr_out(out: &mut Out, attr: &Attr, valid: Duration) -> Result<(), Overflow> {
    out.u64(valid.as_secs())?;
    out.u32(valid.subsec_nanos())?;
    out.u32(0)?;
    put_attr(out, attr)
}

/// `struct fuse_open_out` (16 bytes).
pub fn put_open(out: &mut Out, fh: u64, open_flags: u32) -> Result<(), Overflow> {
    out.u64(fh)?;
    out.u32(open_flags)?;
    out.u32(0) // backing_id
}

/// `struct fuse_write_out` (8 bytes): WRITE's and COPY_FILE_RANGE's reply.
pub fn put_write(out: &mut Out, size: u32) -> Result<(), Overflow> {
    out.u32(size)?;
    out.u32(0)
}

/// `struct fuse_getxattr_out` (8 bytes): the size GETXATTR or LISTXATTR
/// would return, to a request that asked with size 0.
pub fn put_xattr_size(out: &mut Out, size: u32) -> Result<(), Overflow> {
    out.u32(size)?;
    out.u32(0)
}

/// `struct fuse_lseek_out` (8 bytes).
pub fn put_lseek(out: &mut Out, offset: u64) -> Result<(), Overflow> {
    out.u64(offset)
}

/// `struct fuse_kstatfs`'s fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Statfs {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub bsize: u32,
    pub namelen: u32,
    pub frsize: u32,
}

/// `struct fuse_statfs_out` (80 bytes).
pub fn put_statfs(out: &mut Out, s: &Statfs) -> Result<(), Overflow> {
    for v in [s.blocks, s.bfree, s.bavail, s.files, s.ffree] {
        out.u64(v)?;
    }
    out.u32(s.bsize)?;
    out.u32(s.namelen)?;
    out.u32(s.frsize)?;
    out.zeros(4 + 6 * 4) // padding, spare
}

/// The bytes one `struct fuse_dirent` with a name of `name_len` bytes
/// takes, padded to 8.
pub fn dirent_size(name_len: usize) -> usize {
    (24 + name_len).next_multiple_of(8)
}

/// One `struct fuse_dirent` and its padded name; `false` (and nothing
/// written) when it does not fit in `limit` bytes of reply.
pub fn put_dirent(
    out: &mut Out,
    limit: usize,
    ino: u64,
    next: u64,
    kind: u32,
    name: &[u8],
) -> Result<bool, Overflow> {
    let size = dirent_size(name.len());
    if out.len() + size > limit {
        return Ok(false);
    }
    put_dirent_body(out, ino, next, kind, name)?;
    Ok(true)
}

fn put_dirent_body(out: &mut Out, ino: u64, next: u64, kind: u32, name: &[u8]) -> Result<(), Overflow> {
    out.u64(ino)?;
    out.u64(next)?;
    out.u32(u32::try_from(name.len()).map_err(|_| Overflow)?)?;
    out.u32(kind)?;
    out.bytes(name)?;
    out.zeros(dirent_size(name.len()) - 24 - name.len())
}

/// One `struct fuse_direntplus` (an entry and a dirent) and its padded
/// name; `false` (and nothing written) when it does not fit in `limit`.
pub fn put_direntplus(
    out: &mut Out,
    limit: usize,
    entry: &Entry,
    next: u64,
    kind: u32,
    name: &[u8],
) -> Result<bool, Overflow> {
    let size = 128 + dirent_size(name.len());
    if out.len() + size > limit {
        return Ok(false);
    }
    put_entry(out, entry)?;
    put_dirent_body(out, entry.attr.ino, next, kind, name)?;
    Ok(true)
}

/// `struct fuse_init_out`'s fields a server sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct InitOut {
    pub max_readahead: u32,
    /// `flags | flags2 << 32`.
    pub flags: u64,
    pub max_background: u16,
    pub congestion_threshold: u16,
    pub max_write: u32,
    /// Time granularity in nanoseconds.
    pub time_gran: u32,
    pub max_pages: u16,
}

/// `struct fuse_init_out` (64 bytes).
pub fn put_init(out: &mut Out, init: &InitOut) -> Result<(), Overflow> {
    out.u32(KERNEL_VERSION)?;
    out.u32(KERNEL_MINOR_VERSION)?;
    out.u32(init.max_readahead)?;
    out.u32(init.flags as u32)?;
    out.u16(init.max_background)?;
    out.u16(init.congestion_threshold)?;
    out.u32(init.max_write)?;
    out.u32(init.time_gran)?;
    out.u16(init.max_pages)?;
    out.u16(0)?; // map_alignment
    out.u32((init.flags >> 32) as u32)?;
    out.u32(0)?; // max_stack_depth
    out.zeros(INIT_OUT_SIZE - 40) // request_timeout, unused
}

/// The whole message (header and `fuse_notify_inval_inode_out`) telling
/// the kernel to drop its cached attributes of `ino` and, for `offset`
/// 0 or more, its cached pages from there for `len` bytes (0: to the end).
pub fn inval_inode_message(ino: u64, offset: i64, len: i64) -> [u8; OUT_HEADER_SIZE + 24] {
    const LEN: usize = OUT_HEADER_SIZE + 24;
    let mut message = [0; LEN];
    message[0..4].copy_from_slice(&(LEN as u32).to_ne_bytes());
    message[4..8].copy_from_slice(&notify::INVAL_INODE.to_ne_bytes());
    // unique 0: a notification, not a reply.
    message[16..24].copy_from_slice(&ino.to_ne_bytes());
    message[24..32].copy_from_slice(&offset.to_ne_bytes());
    message[32..40].copy_from_slice(&len.to_ne_bytes());
    message
}

/// The most node ids one PRUNE notification carries here (the kernel
/// reads them in batches of 512).
pub const PRUNE_BATCH: usize = 512;

/// The whole message (header, `fuse_notify_prune_out` and the node ids)
/// asking the kernel to let go of `nodes`, each if nothing holds it (no
/// open file, no working directory): it forgets them as it forgets any
/// inode it evicts (FORGET). At most [`PRUNE_BATCH`] nodes.
pub fn prune_message(nodes: &[u64]) -> Vec<u8> {
    let nodes = &nodes[..nodes.len().min(PRUNE_BATCH)];
    let len = OUT_HEADER_SIZE + 16 + 8 * nodes.len();
    let mut message = Vec::with_capacity(len);
    message.extend_from_slice(&(len as u32).to_ne_bytes());
    message.extend_from_slice(&notify::PRUNE.to_ne_bytes());
    message.extend_from_slice(&0u64.to_ne_bytes()); // unique 0: a notification
    message.extend_from_slice(&(nodes.len() as u32).to_ne_bytes());
    message.extend_from_slice(&[0; 4 + 8]); // padding, spare
    for node in nodes {
        message.extend_from_slice(&node.to_ne_bytes());
    }
    message
}
