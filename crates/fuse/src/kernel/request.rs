//! Requests: the `fuse_in_header` and each operation's arguments.
//!
//! A request arrives in three parts: the header, the fixed argument that
//! leads it (the kernel's `in_args[0]`: `fuse_write_in`, `fuse_mkdir_in`,
//! ...; [`op_in_size`] bytes) and what follows (names, written data,
//! attribute values). `/dev/fuse` delivers them back to back
//! ([`Request::decode_message`]); FUSE over io_uring puts the first two in
//! the entry's header buffer and the rest in its payload buffer
//! ([`Request::decode`]).

use super::{opcode, u32_at, u64_at, Malformed, IN_HEADER_SIZE};

/// Sizes of the fixed per-operation argument. Zero for operations whose
/// first argument is a name (the kernel's empty `fuse_zero_header`) or
/// that have none; `None` for operations this layer does not decode.
/// SETXATTR's is the 8-byte form: a server that does not ask for
/// `FUSE_SETXATTR_EXT` gets `fuse_setxattr_in` without its extended flags.
pub fn op_in_size(opcode: u32) -> Option<usize> {
    use opcode::*;
    Some(match opcode {
        LOOKUP | UNLINK | RMDIR | STATFS | DESTROY | READLINK | SYMLINK | REMOVEXATTR => 0,
        FORGET => 8,                        // fuse_forget_in
        BATCH_FORGET => 8,                  // fuse_batch_forget_in
        GETATTR => 16,                      // fuse_getattr_in
        SETATTR => 88,                      // fuse_setattr_in
        MKNOD => 16,                        // fuse_mknod_in
        MKDIR => 8,                         // fuse_mkdir_in
        RENAME => 8,                        // fuse_rename_in
        RENAME2 => 16,                      // fuse_rename2_in
        LINK => 8,                          // fuse_link_in
        CREATE => 16,                       // fuse_create_in
        OPEN | OPENDIR => 8,                // fuse_open_in
        READ | READDIR | READDIRPLUS => 40, // fuse_read_in
        WRITE => 40,                        // fuse_write_in
        RELEASE | RELEASEDIR => 24,         // fuse_release_in
        FLUSH => 24,                        // fuse_flush_in
        FSYNC | FSYNCDIR => 16,             // fuse_fsync_in
        SETXATTR => 8,                      // fuse_setxattr_in (compat)
        GETXATTR | LISTXATTR => 8,          // fuse_getxattr_in
        ACCESS => 8,                        // fuse_access_in
        INTERRUPT => 8,                     // fuse_interrupt_in
        INIT => 64,                         // fuse_init_in
        FALLOCATE => 32,                    // fuse_fallocate_in
        LSEEK => 24,                        // fuse_lseek_in
        COPY_FILE_RANGE => 56,              // fuse_copy_file_range_in
        _ => return None,
    })
}

/// `struct fuse_in_header`: who asks, about which node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InHeader {
    /// The operation (`opcode::*`).
    pub opcode: u32,
    /// The request's number, quoted by its reply.
    pub unique: u64,
    /// The node the request is about (1 is the root).
    pub nodeid: u64,
    /// The caller's file-system user and group, and process.
    pub uid: u32,
    /// See `uid`.
    pub gid: u32,
    /// See `uid`.
    pub pid: u32,
}

impl InHeader {
    /// Decodes the first [`IN_HEADER_SIZE`] bytes of `bytes`.
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
            pid: u32_at(bytes, 32, WHAT)?,
        })
    }
}

/// A time a SETATTR sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    /// Seconds and nanoseconds since the epoch.
    At(u64, u32),
    /// The server's present time (`FATTR_ATIME_NOW`, `FATTR_MTIME_NOW`).
    Now,
}

/// `struct fuse_setattr_in`: each field is `Some` only if `valid` sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Setattr {
    /// The `valid` bits as sent (`setattr_valid::*`).
    pub valid: u32,
    /// The file handle the change came through.
    pub fh: Option<u64>,
    /// New size (truncate).
    pub size: Option<u64>,
    /// New access time.
    pub atime: Option<SetTime>,
    /// New modification time.
    pub mtime: Option<SetTime>,
    /// New change time (seconds, nanoseconds).
    pub ctime: Option<(u64, u32)>,
    /// New mode bits.
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
}

impl Setattr {
    fn decode(op_in: &[u8]) -> Result<Setattr, Malformed> {
        use super::setattr_valid::*;
        const WHAT: &str = "fuse_setattr_in";
        let valid = u32_at(op_in, 0, WHAT)?;
        let has = |bit: u32| valid & bit != 0;
        let time = |secs_at, nsecs_at, bit, now_bit| -> Result<Option<SetTime>, Malformed> {
            Ok(if has(now_bit) {
                Some(SetTime::Now)
            } else if has(bit) {
                Some(SetTime::At(u64_at(op_in, secs_at, WHAT)?, u32_at(op_in, nsecs_at, WHAT)?))
            } else {
                None
            })
        };
        Ok(Setattr {
            valid,
            fh: has(FH).then(|| u64_at(op_in, 8, WHAT)).transpose()?,
            size: has(SIZE).then(|| u64_at(op_in, 16, WHAT)).transpose()?,
            atime: time(32, 56, ATIME, ATIME_NOW)?,
            mtime: time(40, 60, MTIME, MTIME_NOW)?,
            ctime: has(CTIME)
                .then(|| Ok::<_, Malformed>((u64_at(op_in, 48, WHAT)?, u32_at(op_in, 64, WHAT)?)))
                .transpose()?,
            mode: has(MODE).then(|| u32_at(op_in, 68, WHAT)).transpose()?,
            uid: has(UID).then(|| u32_at(op_in, 76, WHAT)).transpose()?,
            gid: has(GID).then(|| u32_at(op_in, 80, WHAT)).transpose()?,
        })
    }
}

/// `struct fuse_init_in`, the fields a server uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitIn {
    /// The kernel's protocol version.
    pub major: u32,
    /// See `major`.
    pub minor: u32,
    /// The largest read-ahead the kernel will do.
    pub max_readahead: u32,
    /// `flags | flags2 << 32` (flags2 only when `INIT_EXT` is offered).
    pub flags: u64,
}

impl InitIn {
    /// Decodes `fuse_init_in`; an old kernel's shorter one has no flags2.
    pub fn decode(op_in: &[u8]) -> Result<InitIn, Malformed> {
        const WHAT: &str = "fuse_init_in";
        let low = u64::from(u32_at(op_in, 12, WHAT)?);
        let high =
            if low & super::init_flag::INIT_EXT != 0 { u64::from(u32_at(op_in, 16, WHAT)?) } else { 0 };
        Ok(InitIn {
            major: u32_at(op_in, 0, WHAT)?,
            minor: u32_at(op_in, 4, WHAT)?,
            max_readahead: u32_at(op_in, 8, WHAT)?,
            flags: low | high << 32,
        })
    }
}

/// BATCH_FORGET's nodes: `(nodeid, nlookup)` pairs, read as iterated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forgets<'a> {
    bytes: &'a [u8],
}

impl Iterator for Forgets<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let nodeid = u64_at(self.bytes, 0, "fuse_forget_one").ok()?;
        let nlookup = u64_at(self.bytes, 8, "fuse_forget_one").ok()?;
        self.bytes = &self.bytes[16..];
        Some((nodeid, nlookup))
    }
}

/// One request's operation with its arguments, borrowed from the buffers
/// it arrived in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Op<'a> {
    Lookup {
        name: &'a [u8],
    },
    /// No reply.
    Forget {
        nlookup: u64,
    },
    /// No reply.
    BatchForget {
        nodes: Forgets<'a>,
    },
    Getattr {
        fh: Option<u64>,
    },
    Setattr(Setattr),
    Readlink,
    Symlink {
        name: &'a [u8],
        target: &'a [u8],
    },
    Mknod {
        mode: u32,
        rdev: u32,
        umask: u32,
        name: &'a [u8],
    },
    Mkdir {
        mode: u32,
        umask: u32,
        name: &'a [u8],
    },
    Unlink {
        name: &'a [u8],
    },
    Rmdir {
        name: &'a [u8],
    },
    /// RENAME (flags 0) and RENAME2.
    Rename {
        newdir: u64,
        flags: u32,
        name: &'a [u8],
        newname: &'a [u8],
    },
    Link {
        oldnodeid: u64,
        newname: &'a [u8],
    },
    Open {
        flags: u32,
    },
    Read {
        fh: u64,
        offset: u64,
        size: u32,
        /// The open file's flags (`O_NOATIME` among them).
        flags: u32,
    },
    Write {
        fh: u64,
        offset: u64,
        write_flags: u32,
        flags: u32,
        data: &'a [u8],
    },
    Statfs,
    Release {
        fh: u64,
        flags: u32,
    },
    Fsync {
        fh: u64,
        datasync: bool,
    },
    Setxattr {
        name: &'a [u8],
        value: &'a [u8],
        flags: u32,
    },
    Getxattr {
        name: &'a [u8],
        size: u32,
    },
    Listxattr {
        size: u32,
    },
    Removexattr {
        name: &'a [u8],
    },
    Flush {
        fh: u64,
        lock_owner: u64,
    },
    Init(InitIn),
    Opendir {
        flags: u32,
    },
    Readdir {
        fh: u64,
        offset: u64,
        size: u32,
    },
    Readdirplus {
        fh: u64,
        offset: u64,
        size: u32,
    },
    Releasedir {
        fh: u64,
    },
    Fsyncdir {
        fh: u64,
        datasync: bool,
    },
    Access {
        mask: u32,
    },
    Create {
        flags: u32,
        mode: u32,
        umask: u32,
        name: &'a [u8],
    },
    Interrupt {
        unique: u64,
    },
    Destroy,
    Fallocate {
        fh: u64,
        offset: u64,
        length: u64,
        mode: u32,
    },
    Lseek {
        fh: u64,
        offset: u64,
        whence: u32,
    },
    CopyFileRange {
        fh_in: u64,
        off_in: u64,
        nodeid_out: u64,
        fh_out: u64,
        off_out: u64,
        len: u64,
        flags: u64,
    },
    /// An operation this layer does not decode: answered ENOSYS, which
    /// tells the kernel to stop sending it or to do it itself.
    Unsupported {
        opcode: u32,
    },
}

impl Op<'_> {
    /// Whether the kernel expects no reply (`FORGET`, `BATCH_FORGET`).
    pub fn is_noreply(&self) -> bool {
        matches!(self, Op::Forget { .. } | Op::BatchForget { .. })
    }
}

/// A request: its header and its operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// Who asks, about which node.
    pub header: InHeader,
    /// What is asked.
    pub op: Op<'a>,
}

/// A name argument: the bytes before its terminating NUL, and what follows.
fn name<'a>(payload: &'a [u8], what: &'static str) -> Result<(&'a [u8], &'a [u8]), Malformed> {
    match payload.iter().position(|&b| b == 0) {
        Some(end) => Ok((&payload[..end], &payload[end + 1..])),
        None => Err(Malformed { what, needed: payload.len() + 1, had: payload.len() }),
    }
}

/// `size` bytes at the start of `payload`.
fn data<'a>(payload: &'a [u8], size: usize, what: &'static str) -> Result<&'a [u8], Malformed> {
    payload.get(..size).ok_or(Malformed { what, needed: size, had: payload.len() })
}

impl<'a> Request<'a> {
    /// Decodes a request from its three parts: the `fuse_in_header`, the
    /// fixed argument (`op_in`, at least [`op_in_size`] bytes) and what
    /// follows it (`payload`).
    pub fn decode(header: &[u8], op_in: &'a [u8], payload: &'a [u8]) -> Result<Request<'a>, Malformed> {
        use opcode::*;
        let header = InHeader::decode(header)?;
        let fixed = op_in_size(header.opcode).unwrap_or(0);
        if op_in.len() < fixed {
            return Err(Malformed { what: "request arguments", needed: fixed, had: op_in.len() });
        }
        let u32_in = |at, what| u32_at(op_in, at, what);
        let u64_in = |at, what| u64_at(op_in, at, what);
        let op = match header.opcode {
            LOOKUP => Op::Lookup { name: name(payload, "LOOKUP name")?.0 },
            FORGET => Op::Forget { nlookup: u64_in(0, "fuse_forget_in")? },
            BATCH_FORGET => {
                let count = u32_in(0, "fuse_batch_forget_in")? as usize;
                let bytes = data(payload, count.saturating_mul(16), "BATCH_FORGET nodes")?;
                Op::BatchForget { nodes: Forgets { bytes } }
            }
            GETATTR => {
                const GETATTR_FH: u32 = 1;
                let flags = u32_in(0, "fuse_getattr_in")?;
                let fh = u64_in(8, "fuse_getattr_in")?;
                Op::Getattr { fh: (flags & GETATTR_FH != 0).then_some(fh) }
            }
            SETATTR => Op::Setattr(Setattr::decode(op_in)?),
            READLINK => Op::Readlink,
            SYMLINK => {
                let (name, rest) = name(payload, "SYMLINK name")?;
                Op::Symlink { name, target: self::name(rest, "SYMLINK target")?.0 }
            }
            MKNOD => Op::Mknod {
                mode: u32_in(0, "fuse_mknod_in")?,
                rdev: u32_in(4, "fuse_mknod_in")?,
                umask: u32_in(8, "fuse_mknod_in")?,
                name: name(payload, "MKNOD name")?.0,
            },
            MKDIR => Op::Mkdir {
                mode: u32_in(0, "fuse_mkdir_in")?,
                umask: u32_in(4, "fuse_mkdir_in")?,
                name: name(payload, "MKDIR name")?.0,
            },
            UNLINK => Op::Unlink { name: name(payload, "UNLINK name")?.0 },
            RMDIR => Op::Rmdir { name: name(payload, "RMDIR name")?.0 },
            RENAME | RENAME2 => {
                let flags = if header.opcode == RENAME2 { u32_in(8, "fuse_rename2_in")? } else { 0 };
                let (old, rest) = name(payload, "RENAME old name")?;
                Op::Rename {
                    newdir: u64_in(0, "fuse_rename_in")?,
                    flags,
                    name: old,
                    newname: name(rest, "RENAME new name")?.0,
                }
            }
            LINK => {
                Op::Link { oldnodeid: u64_in(0, "fuse_link_in")?, newname: name(payload, "LINK name")?.0 }
            }
            OPEN => Op::Open { flags: u32_in(0, "fuse_open_in")? },
            OPENDIR => Op::Opendir { flags: u32_in(0, "fuse_open_in")? },
            READ | READDIR | READDIRPLUS => {
                let (fh, offset, size) =
                    (u64_in(0, "fuse_read_in")?, u64_in(8, "fuse_read_in")?, u32_in(16, "fuse_read_in")?);
                match header.opcode {
                    READ => Op::Read { fh, offset, size, flags: u32_in(32, "fuse_read_in")? },
                    READDIR => Op::Readdir { fh, offset, size },
                    _ => Op::Readdirplus { fh, offset, size },
                }
            }
            WRITE => {
                const WHAT: &str = "fuse_write_in";
                let size = u32_in(16, WHAT)? as usize;
                Op::Write {
                    fh: u64_in(0, WHAT)?,
                    offset: u64_in(8, WHAT)?,
                    write_flags: u32_in(20, WHAT)?,
                    flags: u32_in(32, WHAT)?,
                    data: data(payload, size, "WRITE data")?,
                }
            }
            STATFS => Op::Statfs,
            RELEASE => {
                Op::Release { fh: u64_in(0, "fuse_release_in")?, flags: u32_in(8, "fuse_release_in")? }
            }
            RELEASEDIR => Op::Releasedir { fh: u64_in(0, "fuse_release_in")? },
            FSYNC | FSYNCDIR => {
                const FDATASYNC: u32 = 1;
                let fh = u64_in(0, "fuse_fsync_in")?;
                let datasync = u32_in(8, "fuse_fsync_in")? & FDATASYNC != 0;
                if header.opcode == FSYNC {
                    Op::Fsync { fh, datasync }
                } else {
                    Op::Fsyncdir { fh, datasync }
                }
            }
            SETXATTR => {
                let size = u32_in(0, "fuse_setxattr_in")? as usize;
                let (name, rest) = name(payload, "SETXATTR name")?;
                Op::Setxattr {
                    name,
                    value: data(rest, size, "SETXATTR value")?,
                    flags: u32_in(4, "fuse_setxattr_in")?,
                }
            }
            GETXATTR => {
                Op::Getxattr { name: name(payload, "GETXATTR name")?.0, size: u32_in(0, "fuse_getxattr_in")? }
            }
            LISTXATTR => Op::Listxattr { size: u32_in(0, "fuse_getxattr_in")? },
            REMOVEXATTR => Op::Removexattr { name: name(payload, "REMOVEXATTR name")?.0 },
            FLUSH => Op::Flush { fh: u64_in(0, "fuse_flush_in")?, lock_owner: u64_in(16, "fuse_flush_in")? },
            INIT => Op::Init(InitIn::decode(op_in)?),
            ACCESS => Op::Access { mask: u32_in(0, "fuse_access_in")? },
            CREATE => Op::Create {
                flags: u32_in(0, "fuse_create_in")?,
                mode: u32_in(4, "fuse_create_in")?,
                umask: u32_in(8, "fuse_create_in")?,
                name: name(payload, "CREATE name")?.0,
            },
            INTERRUPT => Op::Interrupt { unique: u64_in(0, "fuse_interrupt_in")? },
            DESTROY => Op::Destroy,
            FALLOCATE => Op::Fallocate {
                fh: u64_in(0, "fuse_fallocate_in")?,
                offset: u64_in(8, "fuse_fallocate_in")?,
                length: u64_in(16, "fuse_fallocate_in")?,
                mode: u32_in(24, "fuse_fallocate_in")?,
            },
            LSEEK => Op::Lseek {
                fh: u64_in(0, "fuse_lseek_in")?,
                offset: u64_in(8, "fuse_lseek_in")?,
                whence: u32_in(16, "fuse_lseek_in")?,
            },
            COPY_FILE_RANGE => {
                const WHAT: &str = "fuse_copy_file_range_in";
                Op::CopyFileRange {
                    fh_in: u64_in(0, WHAT)?,
                    off_in: u64_in(8, WHAT)?,
                    nodeid_out: u64_in(16, WHAT)?,
                    fh_out: u64_in(24, WHAT)?,
                    off_out: u64_in(32, WHAT)?,
                    len: u64_in(40, WHAT)?,
                    flags: u64_in(48, WHAT)?,
                }
            }
            opcode => Op::Unsupported { opcode },
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
