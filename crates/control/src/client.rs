//! The client side of the control socket: a [`Mechanism`] in another
//! process, so the cleaner driver runs unchanged over the socket.

use super::path::find_socket;
use super::wire::*;
use super::{DirhashReport, LockReport, MemoryReport, MountReport, Report};
use fslab::error::errno;
use fslab::format::Daddr;
use fslab::lfs::clean::{BlockRef, Destination, MarkBlock, Markv, SegmentTable};
use fslab::Result;
use fslab_cleaner::mechanism::Mechanism;
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// A connection to a mount's control socket: the [`Mechanism`] of that
/// mount, for a cleaner in another process. Errors from the file system
/// arrive with their errno; a broken connection fails every later call.
pub struct Client {
    stream: UnixStream,
    broken: bool,
}

impl Client {
    /// Connects to the mount on `mountpoint` (the socket [`find_socket`]
    /// finds). ENOENT: no fslab mount serves that directory.
    pub fn connect(mountpoint: &Path) -> Result<Client> {
        match find_socket(mountpoint) {
            Ok(Some(path)) => Client::connect_to(&path),
            Ok(None) => Err(errno(libc::ENOENT, "not an fslab mount (no control socket for it)")),
            Err(e) => Err(remote_error(e.raw_os_error().unwrap_or(libc::EIO), &e.to_string())),
        }
    }

    /// Connects to the socket at `path` and checks that an fslab mount of
    /// the same protocol version answers.
    pub fn connect_to(path: &Path) -> Result<Client> {
        let stream = UnixStream::connect(path).map_err(|e| {
            let why = match e.raw_os_error() {
                Some(libc::ECONNREFUSED) => "the mount's control socket is stale (the mount has ended)",
                _ => "cannot connect to the mount's control socket",
            };
            errno(e.raw_os_error().unwrap_or(libc::EIO), why)
        })?;
        Client::over(stream)
    }

    /// Greets the server on an open stream.
    pub(super) fn over(stream: UnixStream) -> Result<Client> {
        let mut client = Client { stream, broken: false };
        let mut hello = Out::new(OP_HELLO);
        hello.bytes(MAGIC);
        hello.u32(VERSION);
        let answer = client.call(hello)?;
        let mut r = In(&answer);
        if r.array::<4>()? != *MAGIC || r.u32()? != VERSION {
            return Err(errno(libc::EPROTO, "the control socket speaks another protocol"));
        }
        r.end()?;
        Ok(client)
    }

    /// The cleaner report of the mount, with its segment thresholds.
    /// EOPNOTSUPP from a layout without a cleaner (FFS).
    pub fn report(&mut self) -> Result<Report> {
        self.ask(OP_REPORT, decode_report)
    }

    /// The mount's layout, space and device counters, whatever its layout.
    /// EOPNOTSUPP from a mount that predates them (always an LFS mount).
    pub fn mount_report(&mut self) -> Result<MountReport> {
        self.ask(OP_MOUNT, decode_mount)
    }

    /// The mount's dirhash settings and counters. EOPNOTSUPP from a mount
    /// that predates them.
    pub fn dirhash_report(&mut self) -> Result<DirhashReport> {
        self.ask(OP_DIRHASH, decode_dirhash)
    }

    /// The daemon's resident memory and what the file system's structures
    /// hold. EOPNOTSUPP from a mount that predates it.
    pub fn memory_report(&mut self) -> Result<MemoryReport> {
        self.ask(OP_MEMORY, decode_memory)
    }

    /// How the calls since mount took the lock around the file system.
    /// EOPNOTSUPP from a mount that predates it, or one that does not
    /// count.
    pub fn lock_report(&mut self) -> Result<LockReport> {
        self.ask(OP_LOCK, decode_lock)
    }

    /// Sends a request of `op` alone and decodes the whole answer.
    fn ask<T>(&mut self, op: u8, decode: fn(&mut In) -> Result<T>) -> Result<T> {
        let answer = self.call(Out::new(op))?;
        let mut r = In(&answer);
        let value = decode(&mut r)?;
        r.end()?;
        Ok(value)
    }

    /// Sends one request; returns the response's results, or the error the
    /// server sent. A failure of the connection itself (closed, a frame
    /// that breaks the protocol) also fails every later call: the two ends
    /// no longer agree where a frame starts.
    fn call(&mut self, request: Out) -> Result<Vec<u8>> {
        if self.broken {
            return Err(errno(libc::ENOTCONN, "the control connection broke earlier"));
        }
        match self.exchange(request) {
            Ok(answer) => answer,
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// Outer error: the connection failed. Inner: the server's answer.
    fn exchange(&mut self, request: Out) -> Result<Result<Vec<u8>>> {
        let frame = request.finish(MAX_REQUEST)?;
        let lost = |e: io::Error| match e.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                errno(libc::ENOTCONN, "the mount closed the control connection")
            }
            io::ErrorKind::InvalidData => errno(libc::EPROTO, "response too large on the control socket"),
            _ => remote_error(e.raw_os_error().unwrap_or(libc::EIO), &format!("control socket: {e}")),
        };
        self.stream.write_all(&frame).map_err(lost)?;
        let Some(response) = read_frame(&mut self.stream, MAX_RESPONSE).map_err(lost)? else {
            return Err(errno(libc::ENOTCONN, "the mount closed the control connection"));
        };
        let mut r = In(&response);
        match r.u8()? {
            STATUS_OK => Ok(Ok(r.rest().to_vec())),
            STATUS_ERROR => {
                let code = r.i32()?;
                let len = r.u16()? as usize;
                let message = r.text(len)?;
                r.end()?;
                Ok(Err(remote_error(code, &message)))
            }
            _ => Err(malformed()),
        }
    }

    fn refs_request(op: u8, blocks: impl ExactSizeIterator<Item = BlockRef>) -> Result<Out> {
        if blocks.len() > MAX_BLOCKS {
            return Err(errno(libc::E2BIG, "too many blocks for one control request"));
        }
        let mut out = Out::new(op);
        out.count(blocks.len());
        blocks.for_each(|b| out.block_ref(&b));
        Ok(out)
    }
}

impl Mechanism for Client {
    fn segment_table(&mut self) -> Result<SegmentTable> {
        self.ask(OP_SEGMENT_TABLE, decode_table)
    }

    fn read_segment(&mut self, seg: u64) -> Result<Vec<u8>> {
        let mut out = Out::new(OP_READ_SEGMENT);
        out.u64(seg);
        self.call(out)
    }

    fn segment_refs(&mut self, seg: u64) -> Result<Vec<BlockRef>> {
        let mut out = Out::new(OP_SEGMENT_REFS);
        out.u64(seg);
        let answer = self.call(out)?;
        let mut r = In(&answer);
        let n = r.count(REF_BYTES, usize::MAX)?;
        let refs = (0..n).map(|_| r.block_ref()).collect::<Result<Vec<_>>>()?;
        r.end()?;
        Ok(refs)
    }

    /// Asks in requests of at most [`MAX_BLOCKS`]: unlike markv, bmapv
    /// answers each block on its own, so splitting changes nothing.
    fn bmapv(&mut self, blocks: &[BlockRef]) -> Result<Vec<Daddr>> {
        let mut now = Vec::with_capacity(blocks.len());
        for chunk in blocks.chunks(MAX_BLOCKS) {
            let answer = self.call(Client::refs_request(OP_BMAPV, chunk.iter().copied())?)?;
            let mut r = In(&answer);
            if r.count(8, MAX_BLOCKS)? != chunk.len() {
                return Err(malformed());
            }
            for _ in chunk {
                now.push(Daddr::new(r.u64()?));
            }
            r.end()?;
        }
        Ok(now)
    }

    fn markv_cost(&mut self, blocks: &[BlockRef]) -> Result<u64> {
        let answer = self.call(Client::refs_request(OP_MARKV_COST, blocks.iter().copied())?)?;
        let mut r = In(&answer);
        let cost = r.u64()?;
        r.end()?;
        Ok(cost)
    }

    /// Sends the block references only; any contents in `blocks` are
    /// dropped (the file system reads the blocks itself).
    fn markv(&mut self, blocks: &[MarkBlock], to: Destination) -> Result<Markv> {
        let mut request = Client::refs_request(OP_MARKV, blocks.iter().map(|b| b.block))?;
        request.u8(destination_code(to));
        let answer = self.call(request)?;
        let mut r = In(&answer);
        let done = Markv { moved: r.u64()?, skipped: r.u64()?, blocks_written: r.u64()? };
        r.end()?;
        Ok(done)
    }

    fn segclean(&mut self, seg: u64) -> Result<()> {
        let mut out = Out::new(OP_SEGCLEAN);
        out.u64(seg);
        In(&self.call(out)?).end()
    }

    /// Waits at most [`MAX_SEGWAIT`]; the server caps longer waits.
    fn segwait(&mut self, timeout: Duration) -> Result<()> {
        let mut out = Out::new(OP_SEGWAIT);
        out.u32(timeout.min(MAX_SEGWAIT).as_millis() as u32);
        In(&self.call(out)?).end()
    }
}
