//! The kernel's FUSE protocol: requests in (decoded and checked,
//! [`request`]), replies and notifications out (encoded into a caller's
//! buffer, [`reply`]), and the framing of FUSE over io_uring ([`ring`]) —
//! `include/uapi/linux/fuse.h`, ABI 7.42 (PRUNE from 7.45).
//!
//! Both transports frame the same bytes: [`device`], the `/dev/fuse` read
//! and write loop, and [`queue`], one queue of FUSE over io_uring, whose
//! answers that must wait go to worker threads (`waits`). Each serves any
//! [`Serve`]: fslab's adapter, and `examples/fuse_floor_uring.rs`
//! (decision 0025).
//!
//! Decoding is validating: bytes from the kernel become a
//! [`request::Request`] only through its decoders, which check every length
//! they rely on and say which structure was short; no input makes them
//! panic. Everything is native-endian, as the kernel writes it.

pub mod device;
pub mod queue;
pub mod reply;
pub mod request;
pub mod ring;
mod waits;

use std::fmt;

/// A file system as a transport sees it: one decoded request in, its
/// reply's bytes (after the out header) written into `reply`, and the
/// answer saying how many, or the errno, or that the kernel expects none.
/// Called from several threads at once (one per device reader or ring
/// queue).
pub trait Serve: Sync {
    /// Answers `request`.
    fn serve(&self, request: &request::Request, reply: &mut [u8]) -> reply::Answer;

    /// Answers `request` as [`Serve::serve`] does, except that what the
    /// answer still waits for (its durability, a read from the device) may
    /// be handed back as a [`Finish`] instead of waited for: the transport
    /// runs it on another thread and sends the answer it returns. A
    /// transport whose one thread serves every caller of a CPU (a ring
    /// queue) calls this; the default finishes every answer at once, as
    /// `serve` does.
    fn serve_later(&self, request: &request::Request, reply: &mut [u8]) -> (reply::Answer, Option<Finish>) {
        (self.serve(request, reply), None)
    }
}

/// The rest of an answer, run on another thread: given the reply buffer
/// (holding what the answer so far wrote) and that answer, it returns the
/// answer to send, having written into the buffer what that one carries.
pub type Finish = Box<dyn FnOnce(&mut [u8], reply::Answer) -> reply::Answer + Send>;

/// The protocol's major version; the kernel and the server must agree.
pub const KERNEL_VERSION: u32 = 7;
/// The minor version a server answers with: 7.42 is the first with FUSE
/// over io_uring (`FUSE_OVER_IO_URING` and the `fuse_uring_*` structures).
pub const KERNEL_MINOR_VERSION: u32 = 42;

/// Operation codes (`enum fuse_opcode`).
pub mod opcode {
    #![allow(missing_docs)]
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const READLINK: u32 = 5;
    pub const SYMLINK: u32 = 6;
    pub const MKNOD: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const UNLINK: u32 = 10;
    pub const RMDIR: u32 = 11;
    pub const RENAME: u32 = 12;
    pub const LINK: u32 = 13;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const SETXATTR: u32 = 21;
    pub const GETXATTR: u32 = 22;
    pub const LISTXATTR: u32 = 23;
    pub const REMOVEXATTR: u32 = 24;
    pub const FLUSH: u32 = 25;
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const ACCESS: u32 = 34;
    pub const CREATE: u32 = 35;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const BATCH_FORGET: u32 = 42;
    pub const FALLOCATE: u32 = 43;
    pub const READDIRPLUS: u32 = 44;
    pub const RENAME2: u32 = 45;
    pub const LSEEK: u32 = 46;
    pub const COPY_FILE_RANGE: u32 = 47;
}

/// FUSE_INIT flags (`flags | flags2 << 32`).
pub mod init_flag {
    #![allow(missing_docs)]
    pub const ASYNC_READ: u64 = 1 << 0;
    pub const BIG_WRITES: u64 = 1 << 5;
    pub const EXPORT_SUPPORT: u64 = 1 << 4;
    pub const DO_READDIRPLUS: u64 = 1 << 13;
    pub const READDIRPLUS_AUTO: u64 = 1 << 14;
    pub const WRITEBACK_CACHE: u64 = 1 << 16;
    pub const NO_OPEN_SUPPORT: u64 = 1 << 17;
    pub const PARALLEL_DIROPS: u64 = 1 << 18;
    pub const HANDLE_KILLPRIV: u64 = 1 << 19;
    pub const MAX_PAGES: u64 = 1 << 22;
    pub const NO_OPENDIR_SUPPORT: u64 = 1 << 24;
    pub const HANDLE_KILLPRIV_V2: u64 = 1 << 28;
    pub const INIT_EXT: u64 = 1 << 30;
    pub const DIRECT_IO_ALLOW_MMAP: u64 = 1 << 36;
    pub const OVER_IO_URING: u64 = 1 << 41;
}

/// `fuse_open_out.open_flags`.
pub mod open_flag {
    #![allow(missing_docs)]
    pub const DIRECT_IO: u32 = 1 << 0;
    pub const KEEP_CACHE: u32 = 1 << 1;
}

/// `fuse_setattr_in.valid`: which of its fields a SETATTR sets.
pub mod setattr_valid {
    #![allow(missing_docs)]
    pub const MODE: u32 = 1 << 0;
    pub const UID: u32 = 1 << 1;
    pub const GID: u32 = 1 << 2;
    pub const SIZE: u32 = 1 << 3;
    pub const ATIME: u32 = 1 << 4;
    pub const MTIME: u32 = 1 << 5;
    pub const FH: u32 = 1 << 6;
    pub const ATIME_NOW: u32 = 1 << 7;
    pub const MTIME_NOW: u32 = 1 << 8;
    pub const CTIME: u32 = 1 << 10;
    pub const KILL_SUIDGID: u32 = 1 << 11;
}

/// Notification codes (`enum fuse_notify_code`), sent in the out header's
/// error field of a message whose `unique` is 0.
pub mod notify {
    /// Drop cached attributes (and pages in a range) of an inode.
    pub const INVAL_INODE: i32 = 2;
    /// Let go of the inodes named, those nothing holds (7.45).
    pub const PRUNE: i32 = 9;
}

/// `struct fuse_in_header`.
pub const IN_HEADER_SIZE: usize = 40;
/// `struct fuse_out_header`.
pub const OUT_HEADER_SIZE: usize = 16;
/// `struct fuse_init_out` as of 7.23 and later.
pub const INIT_OUT_SIZE: usize = 64;
/// The smallest read buffer `/dev/fuse` accepts (`FUSE_MIN_READ_BUFFER`).
pub const MIN_READ_BUFFER: usize = 8192;

/// Bytes from the kernel that do not form the structure they should.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The structure that was short or inconsistent.
    pub what: &'static str,
    /// Bytes needed.
    pub needed: usize,
    /// Bytes there were.
    pub had: usize,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {}: needs {} bytes, has {}", self.what, self.needed, self.had)
    }
}

impl std::error::Error for Malformed {}

/// `bytes[at..at + N]`, or which structure was short.
fn field<const N: usize>(bytes: &[u8], at: usize, what: &'static str) -> Result<[u8; N], Malformed> {
    bytes.get(at..at.saturating_add(N)).and_then(|b| b.try_into().ok()).ok_or(Malformed {
        what,
        needed: at.saturating_add(N),
        had: bytes.len(),
    })
}

fn u32_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u32, Malformed> {
    field::<4>(bytes, at, what).map(u32::from_ne_bytes)
}

fn u64_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u64, Malformed> {
    field::<8>(bytes, at, what).map(u64::from_ne_bytes)
}

#[cfg(test)]
mod tests;
