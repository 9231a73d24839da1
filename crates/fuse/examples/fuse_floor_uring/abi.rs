//! The kernel's FUSE ABI, as much of it as the floor speaks: request
//! headers and per-operation arguments in (decoded and checked), replies
//! out (encoded into a caller's buffer), and the io_uring framing of
//! FUSE over io_uring (`include/uapi/linux/fuse.h`, ABI 7.42).
//!
//! Decoding is validating: bytes from the kernel become a [`Request`] only
//! through [`Request::decode`], which checks every length it relies on and
//! says which structure was short. Everything is native-endian, as the
//! kernel writes it.

use std::fmt;

/// The protocol's major version; the kernel and the floor must agree.
pub const KERNEL_VERSION: u32 = 7;
/// The minor version the floor answers with: 7.42 is the first with FUSE
/// over io_uring (`FUSE_OVER_IO_URING` and the `fuse_uring_*` structures).
pub const KERNEL_MINOR_VERSION: u32 = 42;

/// Operation codes (`enum fuse_opcode`).
pub mod opcode {
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const MKDIR: u32 = 9;
    pub const UNLINK: u32 = 10;
    pub const RMDIR: u32 = 11;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const FLUSH: u32 = 25;
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const CREATE: u32 = 35;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const BATCH_FORGET: u32 = 42;
}

/// `FUSE_INIT` flags (64 bits: `flags` | `flags2 << 32` once `INIT_EXT` is set).
pub mod init_flag {
    pub const ASYNC_READ: u64 = 1 << 0;
    pub const BIG_WRITES: u64 = 1 << 5;
    pub const NO_OPEN_SUPPORT: u64 = 1 << 17;
    pub const PARALLEL_DIROPS: u64 = 1 << 18;
    pub const HANDLE_KILLPRIV: u64 = 1 << 19;
    pub const MAX_PAGES: u64 = 1 << 22;
    pub const INIT_EXT: u64 = 1 << 30;
    /// Requests may be served over io_uring (flags2 bit 9).
    pub const OVER_IO_URING: u64 = 1 << 41;
}

/// `FOPEN_*` flags of an open or create reply.
pub mod open_flag {
    pub const DIRECT_IO: u32 = 1 << 0;
    pub const KEEP_CACHE: u32 = 1 << 1;
}

/// `struct fuse_in_header`.
pub const IN_HEADER_SIZE: usize = 40;
/// `struct fuse_out_header`.
pub const OUT_HEADER_SIZE: usize = 16;
/// `struct fuse_init_out` as of 7.23 and later.
pub const INIT_OUT_SIZE: usize = 64;
/// The smallest read buffer `/dev/fuse` accepts (`FUSE_MIN_READ_BUFFER`).
pub const MIN_READ_BUFFER: usize = 8192;

/// Sizes of the fixed per-operation argument that leads a request (the
/// kernel's `in_args[0]`), which FUSE over io_uring puts in the header's
/// `op_in` and `/dev/fuse` puts right after the `fuse_in_header`. Zero for
/// operations whose first argument is a name (the kernel's empty
/// `fuse_zero_header`) or that have none; `None` for operations the floor
/// does not decode.
pub fn op_in_size(opcode: u32) -> Option<usize> {
    use opcode::*;
    Some(match opcode {
        LOOKUP | UNLINK | RMDIR | STATFS | DESTROY => 0,
        FORGET => 8,                // fuse_forget_in
        BATCH_FORGET => 8,          // fuse_batch_forget_in
        GETATTR => 16,              // fuse_getattr_in
        SETATTR => 88,              // fuse_setattr_in
        MKDIR => 8,                 // fuse_mkdir_in
        CREATE => 16,               // fuse_create_in
        OPEN | OPENDIR => 8,        // fuse_open_in
        READ | READDIR => 40,       // fuse_read_in
        WRITE => 40,                // fuse_write_in
        RELEASE | RELEASEDIR => 24, // fuse_release_in
        FLUSH => 24,                // fuse_flush_in
        FSYNC | FSYNCDIR => 16,     // fuse_fsync_in
        INTERRUPT => 8,             // fuse_interrupt_in
        INIT => 64,                 // fuse_init_in
        _ => return None,
    })
}

/// Bytes from the kernel that do not form the structure they should.
#[derive(Debug)]
pub struct Malformed {
    /// The structure that was short or inconsistent.
    pub what: &'static str,
    /// Bytes needed, and bytes there were.
    pub needed: usize,
    pub had: usize,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {}: needs {} bytes, has {}", self.what, self.needed, self.had)
    }
}

/// `bytes[at..at + N]`, or which structure was short.
fn field<const N: usize>(bytes: &[u8], at: usize, what: &'static str) -> Result<[u8; N], Malformed> {
    bytes.get(at..at + N).and_then(|b| b.try_into().ok()).ok_or(Malformed {
        what,
        needed: at + N,
        had: bytes.len(),
    })
}

fn u32_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u32, Malformed> {
    field::<4>(bytes, at, what).map(u32::from_ne_bytes)
}

fn u64_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u64, Malformed> {
    field::<8>(bytes, at, what).map(u64::from_ne_bytes)
}

/// `struct fuse_in_header`, the fields the floor uses.
#[derive(Debug, Clone, Copy)]
pub struct InHeader {
    pub opcode: u32,
    pub unique: u64,
    pub nodeid: u64,
    pub uid: u32,
    pub gid: u32,
}

impl InHeader {
    pub fn decode(bytes: &[u8]) -> Result<InHeader, Malformed> {
        const WHAT: &str = "fuse_in_header";
        if bytes.len() < IN_HEADER_SIZE {
            return Err(Malformed { what: WHAT, needed: IN_HEADER_SIZE, had: bytes.len() });
        }
        Ok(InHeader {
            opcode: u32_at(bytes, 4, WHAT)?,
            unique: u64_at(bytes, 8, WHAT)?,
            nodeid: u64_at(bytes, 16, WHAT)?,
            uid: u32_at(bytes, 24, WHAT)?,
            gid: u32_at(bytes, 28, WHAT)?,
        })
    }
}

/// One request's operation with its arguments, borrowed from the buffer it
/// arrived in.
#[derive(Debug)]
pub enum Op<'a> {
    Lookup {
        name: &'a [u8],
    },
    /// FORGET and BATCH_FORGET: the floor keeps no lookup counts.
    Forget,
    Getattr,
    Setattr,
    Mkdir {
        mode: u32,
        umask: u32,
        name: &'a [u8],
    },
    Create {
        flags: u32,
        mode: u32,
        umask: u32,
        name: &'a [u8],
    },
    Open,
    Read {
        offset: u64,
        size: u32,
    },
    Write {
        offset: u64,
        data: &'a [u8],
    },
    Statfs,
    Release,
    Flush,
    Fsync,
    Opendir,
    Readdir {
        offset: u64,
        size: u32,
    },
    Releasedir,
    Fsyncdir,
    Unlink {
        name: &'a [u8],
    },
    Rmdir {
        name: &'a [u8],
    },
    Interrupt,
    Destroy,
    /// FUSE_INIT after the handshake, or any operation the floor does not
    /// implement: answered ENOSYS.
    Unsupported,
}

impl Op<'_> {
    /// Whether the kernel expects no reply (`FORGET`, `BATCH_FORGET`).
    pub fn is_noreply(&self) -> bool {
        matches!(self, Op::Forget)
    }
}

/// A request: its header and its operation.
#[derive(Debug)]
pub struct Request<'a> {
    pub header: InHeader,
    pub op: Op<'a>,
}

/// A name argument: the bytes before its terminating NUL.
fn name<'a>(payload: &'a [u8], what: &'static str) -> Result<&'a [u8], Malformed> {
    match payload.iter().position(|&b| b == 0) {
        Some(end) => Ok(&payload[..end]),
        None => Err(Malformed { what, needed: payload.len() + 1, had: payload.len() }),
    }
}

impl<'a> Request<'a> {
    /// Decodes a request from its three parts: the `fuse_in_header`, the
    /// fixed argument (`op_in`, at least [`op_in_size`] bytes) and what
    /// follows it (`payload`: names, written data).
    pub fn decode(header: &[u8], op_in: &'a [u8], payload: &'a [u8]) -> Result<Request<'a>, Malformed> {
        use opcode::*;
        let header = InHeader::decode(header)?;
        let fixed = op_in_size(header.opcode).unwrap_or(0);
        if op_in.len() < fixed {
            return Err(Malformed { what: "request arguments", needed: fixed, had: op_in.len() });
        }
        let op = match header.opcode {
            LOOKUP => Op::Lookup { name: name(payload, "LOOKUP name")? },
            FORGET | BATCH_FORGET => Op::Forget,
            GETATTR => Op::Getattr,
            SETATTR => Op::Setattr,
            MKDIR => Op::Mkdir {
                mode: u32_at(op_in, 0, "fuse_mkdir_in")?,
                umask: u32_at(op_in, 4, "fuse_mkdir_in")?,
                name: name(payload, "MKDIR name")?,
            },
            CREATE => Op::Create {
                flags: u32_at(op_in, 0, "fuse_create_in")?,
                mode: u32_at(op_in, 4, "fuse_create_in")?,
                umask: u32_at(op_in, 8, "fuse_create_in")?,
                name: name(payload, "CREATE name")?,
            },
            OPEN => Op::Open,
            READ => Op::Read {
                offset: u64_at(op_in, 8, "fuse_read_in")?,
                size: u32_at(op_in, 16, "fuse_read_in")?,
            },
            WRITE => {
                let size = u32_at(op_in, 16, "fuse_write_in")? as usize;
                let data = payload.get(..size).ok_or(Malformed {
                    what: "WRITE data",
                    needed: size,
                    had: payload.len(),
                })?;
                Op::Write { offset: u64_at(op_in, 8, "fuse_write_in")?, data }
            }
            STATFS => Op::Statfs,
            RELEASE => Op::Release,
            FLUSH => Op::Flush,
            FSYNC => Op::Fsync,
            OPENDIR => Op::Opendir,
            READDIR => Op::Readdir {
                offset: u64_at(op_in, 8, "fuse_read_in")?,
                size: u32_at(op_in, 16, "fuse_read_in")?,
            },
            RELEASEDIR => Op::Releasedir,
            FSYNCDIR => Op::Fsyncdir,
            UNLINK => Op::Unlink { name: name(payload, "UNLINK name")? },
            RMDIR => Op::Rmdir { name: name(payload, "RMDIR name")? },
            INTERRUPT => Op::Interrupt,
            DESTROY => Op::Destroy,
            _ => Op::Unsupported,
        };
        Ok(Request { header, op })
    }

    /// Decodes a request read whole from `/dev/fuse`: header, fixed
    /// argument and payload back to back.
    pub fn decode_message(message: &'a [u8]) -> Result<Request<'a>, Malformed> {
        let header = message.get(..IN_HEADER_SIZE).ok_or(Malformed {
            what: "fuse_in_header",
            needed: IN_HEADER_SIZE,
            had: message.len(),
        })?;
        let opcode = InHeader::decode(header)?.opcode;
        let body = &message[IN_HEADER_SIZE..];
        let fixed = op_in_size(opcode).unwrap_or(0);
        if body.len() < fixed {
            return Err(Malformed { what: "request arguments", needed: fixed, had: body.len() });
        }
        let (op_in, payload) = body.split_at(fixed);
        Request::decode(header, op_in, payload)
    }
}

/// `struct fuse_init_in`, the fields the floor uses.
#[derive(Debug, Clone, Copy)]
pub struct InitIn {
    pub major: u32,
    pub minor: u32,
    pub max_readahead: u32,
    /// `flags | flags2 << 32` (flags2 only when `INIT_EXT` is offered).
    pub flags: u64,
}

impl InitIn {
    pub fn decode(op_in: &[u8]) -> Result<InitIn, Malformed> {
        const WHAT: &str = "fuse_init_in";
        let low = u64::from(u32_at(op_in, 12, WHAT)?);
        // flags2 exists from 7.36; an older kernel sends a shorter struct.
        let high = if low & init_flag::INIT_EXT != 0 { u64::from(u32_at(op_in, 16, WHAT)?) } else { 0 };
        Ok(InitIn {
            major: u32_at(op_in, 0, WHAT)?,
            minor: u32_at(op_in, 4, WHAT)?,
            max_readahead: u32_at(op_in, 8, WHAT)?,
            flags: low | high << 32,
        })
    }
}

/// The floor's answer to one request, its bytes already in the caller's
/// reply buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Success with this many bytes of reply (after the out header).
    Reply(usize),
    /// Failure with this errno (positive).
    Error(i32),
    /// No reply (FORGET, BATCH_FORGET).
    Nothing,
}

/// Writes `fuse_out_header` for `answer` to `unique` into `out` (16 bytes).
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

/// A reply being written into a caller's buffer; a reply that would not
/// fit is an error (ERANGE), never a panic.
pub struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

/// The reply buffer was too small.
#[derive(Debug)]
pub struct Overflow;

impl<'a> Out<'a> {
    pub fn new(buf: &'a mut [u8]) -> Out<'a> {
        Out { buf, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Room left.
    pub fn room(&self) -> usize {
        self.buf.len() - self.len
    }

    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), Overflow> {
        let end = self.len + bytes.len();
        self.buf.get_mut(self.len..end).ok_or(Overflow)?.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    pub fn zeros(&mut self, n: usize) -> Result<(), Overflow> {
        let end = self.len + n;
        self.buf.get_mut(self.len..end).ok_or(Overflow)?.fill(0);
        self.len = end;
        Ok(())
    }

    pub fn u16(&mut self, v: u16) -> Result<(), Overflow> {
        self.bytes(&v.to_ne_bytes())
    }

    pub fn u32(&mut self, v: u32) -> Result<(), Overflow> {
        self.bytes(&v.to_ne_bytes())
    }

    pub fn u64(&mut self, v: u64) -> Result<(), Overflow> {
        self.bytes(&v.to_ne_bytes())
    }
}

/// A node's attributes as `struct fuse_attr` carries them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Attr {
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    /// Seconds and nanoseconds since the epoch, for atime, mtime and ctime.
    pub time: (u64, u32),
    /// File type and permission bits.
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub blksize: u32,
}

/// `struct fuse_attr` (88 bytes).
pub fn put_attr(out: &mut Out, a: &Attr) -> Result<(), Overflow> {
    out.u64(a.ino)?;
    out.u64(a.size)?;
    out.u64(a.blocks)?;
    for _ in 0..3 {
        out.u64(a.time.0)?;
    }
    for _ in 0..3 {
        out.u32(a.time.1)?;
    }
    out.u32(a.mode)?;
    out.u32(a.nlink)?;
    out.u32(a.uid)?;
    out.u32(a.gid)?;
    out.u32(0)?; // rdev
    out.u32(a.blksize)?;
    out.u32(0) // flags
}

/// `struct fuse_entry_out` (128 bytes): `attr.ino` as the node id (0 makes
/// a negative entry), both lifetimes `ttl_secs`.
pub fn put_entry(out: &mut Out, attr: &Attr, ttl_secs: u64) -> Result<(), Overflow> {
    out.u64(attr.ino)?;
    out.u64(0)?; // generation
    out.u64(ttl_secs)?; // entry_valid
    out.u64(ttl_secs)?; // attr_valid
    out.u32(0)?;
    out.u32(0)?;
    put_attr(out, attr)
}

/// `struct fuse_attr_out` (104 bytes).
pub fn put_attr_out(out: &mut Out, attr: &Attr, ttl_secs: u64) -> Result<(), Overflow> {
    out.u64(ttl_secs)?;
    out.u32(0)?;
    out.u32(0)?;
    put_attr(out, attr)
}

/// `struct fuse_open_out` (16 bytes).
pub fn put_open(out: &mut Out, fh: u64, open_flags: u32) -> Result<(), Overflow> {
    out.u64(fh)?;
    out.u32(open_flags)?;
    out.u32(0) // backing_id
}

/// One `struct fuse_dirent` and its name padded to 8 bytes; `false` (and
/// nothing written) when it does not fit in `limit` bytes of reply.
pub fn put_dirent(
    out: &mut Out,
    limit: usize,
    ino: u64,
    next: u64,
    kind: u32,
    name: &[u8],
) -> Result<bool, Overflow> {
    let size = (24 + name.len()).next_multiple_of(8);
    if out.len() + size > limit {
        return Ok(false);
    }
    out.u64(ino)?;
    out.u64(next)?;
    out.u32(name.len() as u32)?;
    out.u32(kind)?;
    out.bytes(name)?;
    out.zeros(size - 24 - name.len())?;
    Ok(true)
}

/// `struct fuse_init_out` (64 bytes).
pub struct InitOut {
    pub max_readahead: u32,
    pub flags: u64,
    pub max_background: u16,
    pub congestion_threshold: u16,
    pub max_write: u32,
    pub time_gran: u32,
    pub max_pages: u16,
}

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

/// FUSE over io_uring: the per-entry header buffer (`iov[0]`), commands and
/// the SQE command area.
pub mod ring {
    /// `struct fuse_uring_req_header`: `in_out` holds the `fuse_in_header`
    /// on fetch and the `fuse_out_header` on commit; `op_in` the fixed
    /// per-operation argument; `ring_ent_in_out` the commit id and the
    /// payload size in either direction.
    #[repr(C, align(8))]
    pub struct ReqHeader {
        pub in_out: [u8; 128],
        pub op_in: [u8; 128],
        /// `struct fuse_uring_ent_in_out`: flags (u64), commit_id (u64),
        /// payload_sz (u32), padding (u32), reserved (u64).
        pub ent_in_out: [u8; 32],
    }

    impl ReqHeader {
        pub const fn zeroed() -> ReqHeader {
            ReqHeader { in_out: [0; 128], op_in: [0; 128], ent_in_out: [0; 32] }
        }

        /// The request's `unique`, to quote in COMMIT_AND_FETCH.
        pub fn commit_id(&self) -> u64 {
            let mut b = [0; 8];
            b.copy_from_slice(&self.ent_in_out[8..16]);
            u64::from_ne_bytes(b)
        }

        /// Bytes of payload the kernel wrote (fetch) or is to read (commit).
        pub fn payload_size(&self) -> u32 {
            let mut b = [0; 4];
            b.copy_from_slice(&self.ent_in_out[16..20]);
            u32::from_ne_bytes(b)
        }

        pub fn set_payload_size(&mut self, size: u32) {
            self.ent_in_out[16..20].copy_from_slice(&size.to_ne_bytes());
        }
    }

    /// `FUSE_IO_URING_CMD_REGISTER`: hand the kernel an entry's buffers.
    pub const CMD_REGISTER: u32 = 1;
    /// `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`: reply, and wait for the next.
    pub const CMD_COMMIT_AND_FETCH: u32 = 2;

    /// `struct fuse_uring_cmd_req` in the SQE's 80-byte command area:
    /// flags (u64, 0), commit_id (u64), qid (u16), padding.
    pub fn cmd_req(commit_id: u64, qid: u16) -> [u8; 80] {
        let mut cmd = [0; 80];
        cmd[8..16].copy_from_slice(&commit_id.to_ne_bytes());
        cmd[16..18].copy_from_slice(&qid.to_ne_bytes());
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_header(opcode: u32) -> [u8; IN_HEADER_SIZE] {
        let mut h = [0; IN_HEADER_SIZE];
        h[0..4].copy_from_slice(&(IN_HEADER_SIZE as u32).to_ne_bytes());
        h[4..8].copy_from_slice(&opcode.to_ne_bytes());
        h[8..16].copy_from_slice(&7u64.to_ne_bytes());
        h[16..24].copy_from_slice(&1u64.to_ne_bytes());
        h
    }

    #[test]
    fn header_layout_is_the_kernels() {
        assert_eq!(std::mem::size_of::<ring::ReqHeader>(), 288);
    }

    #[test]
    fn replies_have_the_kernels_sizes() {
        let mut buf = [0; 256];
        let attr = Attr::default();
        let sizes: [(usize, fn(&mut Out, &Attr)); 3] = [
            (88, |o, a| put_attr(o, a).expect("fits")),
            (104, |o, a| put_attr_out(o, a, 1).expect("fits")),
            (128, |o, a| put_entry(o, a, 1).expect("fits")),
        ];
        for (size, put) in sizes {
            let mut out = Out::new(&mut buf);
            put(&mut out, &attr);
            assert_eq!(out.len(), size);
        }
        let mut out = Out::new(&mut buf);
        let init = InitOut {
            max_readahead: 0,
            flags: 0,
            max_background: 0,
            congestion_threshold: 0,
            max_write: 0,
            time_gran: 0,
            max_pages: 0,
        };
        put_init(&mut out, &init).expect("fits");
        assert_eq!(out.len(), INIT_OUT_SIZE);
    }

    #[test]
    fn a_name_without_its_nul_is_malformed() {
        let header = in_header(opcode::LOOKUP);
        assert!(Request::decode(&header, &[], b"name").is_err());
        let request = Request::decode(&header, &[], b"name\0").expect("well formed");
        assert!(matches!(request.op, Op::Lookup { name: b"name" }));
    }

    #[test]
    fn a_write_shorter_than_it_says_is_malformed() {
        let header = in_header(opcode::WRITE);
        let mut write_in = [0; 40];
        write_in[16..20].copy_from_slice(&10u32.to_ne_bytes());
        assert!(Request::decode(&header, &write_in, &[0; 9]).is_err());
        assert!(Request::decode(&header, &write_in, &[0; 10]).is_ok());
        assert!(Request::decode(&header, &write_in[..20], &[0; 10]).is_err());
    }

    #[test]
    fn a_device_message_splits_at_the_fixed_argument() {
        let mut message = in_header(opcode::MKDIR).to_vec();
        message.extend_from_slice(&0o755u32.to_ne_bytes());
        message.extend_from_slice(&0o022u32.to_ne_bytes());
        message.extend_from_slice(b"d\0");
        let request = Request::decode_message(&message).expect("well formed");
        assert!(matches!(request.op, Op::Mkdir { mode: 0o755, umask: 0o022, name: b"d" }));
        assert!(Request::decode_message(&message[..IN_HEADER_SIZE + 4]).is_err());
        assert!(Request::decode_message(&message[..20]).is_err());
    }
}
