//! The control socket of a mount: the cleaner's [`Mechanism`] and the
//! cleaner report, served over a Unix socket so that a cleaner can run as
//! its own process, as the 1993 paper's cleaner does (§3.5), and several at
//! once.
//!
//! * [`socket_path_candidates`] / [`find_socket`] — where a mount's socket
//!   lives, derived from the canonical mount point alone:
//!   `/run/fslab/<FNV-1a-64 of the path, 16 hex digits>.sock`, or the same
//!   name in `$TMPDIR/fslab-<uid>/` when /run is not writable.
//! * [`Server`] — started by the mount daemon: one thread accepting, one
//!   per connection; it reaches the file system only through [`LfsAccess`].
//! * [`Client`] — a [`Mechanism`] over the socket, so `Cleaner::pass` runs
//!   unchanged in another process, plus [`Client::report`].
//!
//! Protocol, version 1. Every integer is little-endian.
//!
//! ```text
//! frame    = u32 length, then `length` bytes (requests ≤ 16 MiB, responses ≤ 1 GiB + 1 MiB)
//! request  = u8 op, then its arguments
//! response = u8 0, then the results | u8 1, i32 errno, u16 length, message (UTF-8)
//! op 0 hello        "FSLC", u32 version        → "FSLC", u32 version   (first, once)
//! op 1 segment_table                          → table (header, u32 count, count × segment)
//! op 2 read_segment u64 seg                   → the segment's bytes (rest of the frame)
//! op 3 bmapv        u32 count, count × ref    → u32 count, count × u64 daddr
//! op 4 markv_cost   u32 count, count × ref    → u64 blocks
//! op 5 markv        u32 count, count × ref    → u64 moved, u64 skipped, u64 blocks_written
//! op 6 segclean     u64 seg                   → nothing
//! op 7 segwait      u32 milliseconds (≤ 10 s) → nothing
//! op 8 report                                 → policy, counters, cleaned segments, thresholds
//! ref      = u64 ino, u32 version, u8 kind (0 block, 1 inode), i64 lbn, u64 daddr, i64 age
//! ```
//!
//! `markv` carries no block contents: the file system reads each block
//! itself, so a client can move blocks but never choose what they hold.
//! Every length and count is checked against a cap and against the bytes
//! actually received before anything is allocated for it; a malformed
//! request gets an error response, an oversized frame an error and a closed
//! connection, and neither can panic the server.
//!
//! Who may connect: the socket's directory is mode 0700 and owned by the
//! user who mounted, so only that user (or root) reaches it.

use crate::mechanism::{LfsAccess, Locked, Mechanism};
use fslab::error::errno;
use fslab::format::Daddr;
use fslab::lfs::clean::{
    BlockKind, BlockRef, CleanerCounters, CleanerReport, MarkBlock, Markv, SegmentState, SegmentTable,
};
use fslab::{Error, Result};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

const MAGIC: &[u8; 4] = b"FSLC";
const VERSION: u32 = 1;

const OP_HELLO: u8 = 0;
const OP_SEGMENT_TABLE: u8 = 1;
const OP_READ_SEGMENT: u8 = 2;
const OP_BMAPV: u8 = 3;
const OP_MARKV_COST: u8 = 4;
const OP_MARKV: u8 = 5;
const OP_SEGCLEAN: u8 = 6;
const OP_SEGWAIT: u8 = 7;
const OP_REPORT: u8 = 8;

const STATUS_OK: u8 = 0;
const STATUS_ERROR: u8 = 1;

/// Largest request frame: a markv of [`MAX_BLOCKS`] references fits.
const MAX_REQUEST: usize = 16 << 20;
/// Largest response frame: a whole segment (at most 1 GiB) and its header.
const MAX_RESPONSE: usize = (1 << 30) + (1 << 20);
/// Most block references in one request (16 segments of 16 MiB in 4 KiB
/// blocks is 65,536).
pub const MAX_BLOCKS: usize = 1 << 18;
/// Longest `segwait`: a waiting client must not hold a connection thread
/// for long after the mount ends.
pub const MAX_SEGWAIT: Duration = Duration::from_secs(10);
/// Connections served at once; more are refused with an error.
pub const MAX_CONNECTIONS: usize = 32;
/// Longest error message and policy name sent.
const MAX_MESSAGE: usize = 1024;
const MAX_POLICY: usize = 64;
/// Most recently cleaned segments in a report (the file system keeps 64).
const MAX_CLEANED: usize = 4096;

const REF_BYTES: usize = 8 + 4 + 1 + 8 + 8 + 8;
const SEGMENT_BYTES: usize = 8 + 8 + 8 + 8 + 1;

/// The directory a root mount puts its socket in.
const RUN_DIR: &str = "/run/fslab";

// ---------------------------------------------------------------------------
// Where the socket lives.

/// FNV-1a, 64 bits: a hash whose value never changes between builds or
/// Rust versions (unlike `DefaultHasher`), so a client built later finds
/// the socket a daemon built earlier made.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The socket file's name for a canonical mount point: 16 hex digits of
/// the FNV-1a hash of its bytes.
pub fn socket_file_name(canonical_mountpoint: &Path) -> String {
    format!("{:016x}.sock", fnv1a64(canonical_mountpoint.as_os_str().as_bytes()))
}

/// Where the socket of `canonical_mountpoint` may be, in the order a
/// server tries to create it: `/run/fslab/`, then
/// `$TMPDIR/fslab-<uid>/` when /run is not writable (a user's mount).
pub fn socket_path_candidates(canonical_mountpoint: &Path) -> Vec<PathBuf> {
    // SAFETY: geteuid has no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let name = socket_file_name(canonical_mountpoint);
    vec![Path::new(RUN_DIR).join(&name), std::env::temp_dir().join(format!("fslab-{uid}")).join(&name)]
}

/// The socket serving the mount on `mountpoint`, if one exists. A socket
/// in a directory we may not enter counts as found, so that connecting
/// says "permission denied" rather than "not a mount" (another user's, or
/// root's, mount).
pub fn find_socket(mountpoint: &Path) -> io::Result<Option<PathBuf>> {
    let canonical = mountpoint.canonicalize()?;
    let candidates = socket_path_candidates(&canonical);
    let seen = |p: &PathBuf| std::fs::symlink_metadata(p).map(|_| ()).map_err(|e| e.kind());
    if let Some(found) = candidates.iter().find(|p| seen(p).is_ok()) {
        return Ok(Some(found.clone()));
    }
    Ok(candidates.into_iter().find(|p| seen(p) == Err(io::ErrorKind::PermissionDenied)))
}

/// Makes `dir` (mode 0700, ours) or checks that an existing one is ours and
/// private: in a shared /tmp another user could have made it first to
/// catch our socket.
fn private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid {
        let why = format!("{} is not a directory of user {uid}", dir.display());
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Encoding.

/// A frame being built: four bytes for the length, patched by `finish`.
struct Out(Vec<u8>);

impl Out {
    fn new(first: u8) -> Out {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&[0, 0, 0, 0, first]);
        Out(v)
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.0.extend_from_slice(v);
    }
    /// A count the decoder will check; callers never pass more than the
    /// caps, all far below `u32::MAX`.
    fn count(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    fn block_ref(&mut self, r: &BlockRef) {
        self.u64(r.ino);
        self.u32(r.version);
        let (kind, lbn) = match r.kind {
            BlockKind::Block(lbn) => (0, lbn),
            BlockKind::Inode => (1, 0),
        };
        self.u8(kind);
        self.i64(lbn);
        self.u64(r.daddr);
        self.i64(r.age);
    }
    fn counters(&mut self, c: &CleanerCounters) {
        self.u64(c.segments_cleaned);
        self.u64(c.user_bytes_written);
        self.u64(c.cleaner_bytes_written);
        self.u64(c.cleaner_bytes_read);
    }
    /// The frame, length filled in; fails if it exceeds `max`.
    fn finish(mut self, max: usize) -> Result<Vec<u8>> {
        let len = self.0.len() - 4;
        if len > max {
            return Err(errno(libc::EMSGSIZE, "message too large for the control socket"));
        }
        self.0[..4].copy_from_slice(&(len as u32).to_le_bytes());
        Ok(self.0)
    }
}

fn malformed() -> Error {
    errno(libc::EPROTO, "malformed message on the control socket")
}

/// Decoding is validating: every read checks that the bytes are there.
struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(malformed());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    fn f64(&mut self) -> Result<f64> {
        let v = f64::from_le_bytes(self.array()?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(malformed())
        }
    }
    /// A count of items of `each` bytes: at most `max`, and no more than
    /// the bytes left can hold, so a lying count allocates nothing.
    fn count(&mut self, each: usize, max: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n > max || n.saturating_mul(each) > self.0.len() {
            return Err(malformed());
        }
        Ok(n)
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
    fn end(&self) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(malformed())
        }
    }
    fn block_ref(&mut self) -> Result<BlockRef> {
        let ino = self.u64()?;
        let version = self.u32()?;
        let kind = self.u8()?;
        let lbn = self.i64()?;
        let kind = match (kind, lbn) {
            (0, lbn) => BlockKind::Block(lbn),
            (1, 0) => BlockKind::Inode,
            _ => return Err(malformed()),
        };
        Ok(BlockRef { ino, version, kind, daddr: self.u64()?, age: self.i64()? })
    }
    fn block_refs(&mut self) -> Result<Vec<BlockRef>> {
        let n = self.count(REF_BYTES, MAX_BLOCKS)?;
        (0..n).map(|_| self.block_ref()).collect()
    }
    fn counters(&mut self) -> Result<CleanerCounters> {
        Ok(CleanerCounters {
            segments_cleaned: self.u64()?,
            user_bytes_written: self.u64()?,
            cleaner_bytes_written: self.u64()?,
            cleaner_bytes_read: self.u64()?,
        })
    }
    fn text(&mut self, len: usize) -> Result<String> {
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| malformed())
    }
}

fn encode_table(out: &mut Out, t: &SegmentTable) {
    out.u32(t.block_size);
    out.u64(t.blocks_per_segment);
    out.u64(t.fs_id);
    out.u64(t.clean_segments);
    out.u64(t.reserve_segments);
    out.u64(t.low_water);
    out.u64(t.high_water);
    out.u64(t.budget_blocks);
    out.i64(t.now);
    out.count(t.segments.len());
    for s in &t.segments {
        out.u64(s.live_bytes);
        out.i64(s.lastmod);
        out.u64(s.usable_blocks);
        out.u64(s.first_log_block);
        out.u8(u8::from(s.clean) | u8::from(s.cleanable) << 1);
    }
}

fn decode_table(r: &mut In) -> Result<SegmentTable> {
    let block_size = r.u32()?;
    let blocks_per_segment = r.u64()?;
    let fs_id = r.u64()?;
    let clean_segments = r.u64()?;
    let reserve_segments = r.u64()?;
    let low_water = r.u64()?;
    let high_water = r.u64()?;
    let budget_blocks = r.u64()?;
    let now = r.i64()?;
    let n = r.count(SEGMENT_BYTES, MAX_RESPONSE / SEGMENT_BYTES)?;
    let mut segments = Vec::with_capacity(n);
    for _ in 0..n {
        let live_bytes = r.u64()?;
        let lastmod = r.i64()?;
        let usable_blocks = r.u64()?;
        let first_log_block = r.u64()?;
        let flags = r.u8()?;
        if flags > 3 {
            return Err(malformed());
        }
        segments.push(SegmentState {
            live_bytes,
            lastmod,
            usable_blocks,
            first_log_block,
            clean: flags & 1 != 0,
            cleanable: flags & 2 != 0,
        });
    }
    Ok(SegmentTable {
        block_size,
        blocks_per_segment,
        fs_id,
        segments,
        clean_segments,
        reserve_segments,
        low_water,
        high_water,
        budget_blocks,
        now,
    })
}

/// Reads one frame of at most `max` bytes. `Ok(None)`: the peer closed the
/// connection between frames. The buffer grows only as bytes arrive, so a
/// length that lies costs nothing.
fn read_frame(stream: &mut impl Read, max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match stream.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "frame too large"));
    }
    let mut body = Vec::new();
    stream.take(len as u64).read_to_end(&mut body)?;
    if body.len() != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some(body))
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
fn truncate_utf8(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// An error as a response frame: errno and the error's one line.
fn error_frame(e: &Error) -> Vec<u8> {
    let text = match e {
        Error::Errno(_, why) => (*why).to_string(),
        other => other.to_string(),
    };
    let message = truncate_utf8(&text, MAX_MESSAGE);
    let mut out = Out::new(STATUS_ERROR);
    out.i32(e.errno());
    out.u16(message.len() as u16);
    out.bytes(message.as_bytes());
    // Short by construction; the fallback is never taken.
    out.finish(MAX_RESPONSE).unwrap_or_default()
}

/// An error that came over the socket, as the library's error type. Its
/// message must be `'static`: distinct messages are kept (a few hundred
/// bytes each, at most [`MAX_KEPT_MESSAGES`] of them) and reused, so a
/// long-running cleaner's memory does not grow with its errors.
fn remote_error(code: i32, message: &str) -> Error {
    static KEPT: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    const MAX_KEPT_MESSAGES: usize = 256;
    let code = if code > 0 { code } else { libc::EIO };
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(m) = kept.iter().find(|m| **m == message) {
        return Error::Errno(code, m);
    }
    if kept.len() >= MAX_KEPT_MESSAGES {
        return Error::Errno(code, "the mounted file system reported an error");
    }
    let leaked: &'static str = Box::leak(message.to_string().into_boxed_str());
    kept.push(leaked);
    Error::Errno(code, leaked)
}

// ---------------------------------------------------------------------------
// The report.

/// What `fslab stat` shows: the cleaner's counters and the segment table's
/// thresholds, taken together under the lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The policy of the mount's own cleaner, or "off".
    pub policy: String,
    /// The cleaner's counters since mount.
    pub cleaner: CleanerReport,
    /// Segments in the file system.
    pub segments: u64,
    /// Bytes per segment.
    pub segment_bytes: u64,
    /// Clean segments now.
    pub clean_segments: u64,
    /// Clean segments kept for the cleaner.
    pub reserve_segments: u64,
    /// Cleaning starts below this many clean segments.
    pub low_water: u64,
    /// Background cleaning stops at this many.
    pub high_water: u64,
}

fn encode_report(out: &mut Out, r: &Report) {
    let policy = truncate_utf8(&r.policy, MAX_POLICY);
    out.u8(policy.len() as u8);
    out.bytes(policy.as_bytes());
    out.counters(&r.cleaner.total);
    out.counters(&r.cleaner.recent);
    let cleaned = &r.cleaner.cleaned_utilization[..r.cleaner.cleaned_utilization.len().min(MAX_CLEANED)];
    out.count(cleaned.len());
    for &(seg, u) in cleaned {
        out.u64(seg);
        out.f64(u);
    }
    for v in [r.segments, r.segment_bytes, r.clean_segments, r.reserve_segments, r.low_water, r.high_water] {
        out.u64(v);
    }
}

fn decode_report(r: &mut In) -> Result<Report> {
    let len = r.u8()? as usize;
    if len > MAX_POLICY {
        return Err(malformed());
    }
    let policy = r.text(len)?;
    let total = r.counters()?;
    let recent = r.counters()?;
    let n = r.count(16, MAX_CLEANED)?;
    let cleaned_utilization = (0..n).map(|_| Ok((r.u64()?, r.f64()?))).collect::<Result<Vec<_>>>()?;
    Ok(Report {
        policy,
        cleaner: CleanerReport { total, recent, cleaned_utilization },
        segments: r.u64()?,
        segment_bytes: r.u64()?,
        clean_segments: r.u64()?,
        reserve_segments: r.u64()?,
        low_water: r.u64()?,
        high_water: r.u64()?,
    })
}

// ---------------------------------------------------------------------------
// The server.

/// Open connections, so that stopping the server can close them; and the
/// flag that stops new ones. One lock, so no connection slips in between
/// the flag and the sweep.
#[derive(Default)]
struct Connections {
    stopping: bool,
    open: HashMap<u64, UnixStream>,
}

/// A running control socket.
///
/// Lifecycle: [`Server::start`] binds the socket and starts the accepting
/// thread → each connection gets its own thread, which serves requests
/// until the client closes → dropping the `Server` stops accepting, closes
/// every connection and removes the socket file (only if it is still the
/// one this server made). A connection thread in the middle of a request
/// finishes it first (a `segwait` at most [`MAX_SEGWAIT`]); after the
/// mount ends, requests fail with EIO from the access itself.
pub struct Server {
    path: PathBuf,
    /// Device and inode of the socket file this server bound.
    identity: (u64, u64),
    listener: Arc<UnixListener>,
    connections: Arc<Mutex<Connections>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves the mount on `canonical_mountpoint` at the first of
    /// [`socket_path_candidates`] it can create. `policy` is what reports
    /// name as the mount's own cleaner ("off" when there is none).
    pub fn start<A>(access: A, canonical_mountpoint: &Path, policy: &str) -> io::Result<Server>
    where
        A: LfsAccess + Clone + Send + 'static,
    {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no directory for the control socket");
        for path in socket_path_candidates(canonical_mountpoint) {
            let Some(dir) = path.parent() else { continue };
            match private_dir(dir).and_then(|()| Server::bind(access.clone(), &path, policy)) {
                Ok(server) => return Ok(server),
                Err(e) => last = io::Error::new(e.kind(), format!("{}: {e}", path.display())),
            }
        }
        Err(last)
    }

    /// Serves at exactly `path`. A stale socket there (nobody answering)
    /// is replaced; a live one is an error (AddrInUse).
    pub fn bind<A>(access: A, path: &Path, policy: &str) -> io::Result<Server>
    where
        A: LfsAccess + Clone + Send + 'static,
    {
        if path.as_os_str().len() >= 108 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "socket path too long"));
        }
        if std::fs::symlink_metadata(path).is_ok() {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(io::ErrorKind::AddrInUse, "another mount serves this socket"));
            }
            std::fs::remove_file(path)?;
        }
        let listener = Arc::new(UnixListener::bind(path)?);
        let meta = std::fs::symlink_metadata(path)?;
        let connections = Arc::new(Mutex::new(Connections::default()));
        let policy = truncate_utf8(policy, MAX_POLICY).to_string();
        let acceptor = {
            let listener = Arc::clone(&listener);
            let connections = Arc::clone(&connections);
            std::thread::Builder::new()
                .name("fslab-control".to_string())
                .spawn(move || accept_loop(&listener, &connections, access, &policy))?
        };
        Ok(Server {
            path: path.to_path_buf(),
            identity: (meta.dev(), meta.ino()),
            listener,
            connections,
            acceptor: Some(acceptor),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        {
            let mut c = self.connections.lock().unwrap_or_else(PoisonError::into_inner);
            c.stopping = true;
            for stream in c.open.values() {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
        // On Linux, shutting a listening socket down wakes a blocked accept
        // (with EINVAL); the loop then sees `stopping` and ends.
        // SAFETY: the descriptor belongs to `self.listener`, alive here.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        // Should that not wake it, a connection does.
        let _ = UnixStream::connect(&self.path);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        // Another mount may have replaced a socket it found dead; leave
        // that one alone.
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.identity {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

fn accept_loop<A>(listener: &UnixListener, connections: &Arc<Mutex<Connections>>, access: A, policy: &str)
where
    A: LfsAccess + Clone + Send + 'static,
{
    let next_id = AtomicU64::new(0);
    loop {
        let accepted = listener.accept();
        let mut c = connections.lock().unwrap_or_else(PoisonError::into_inner);
        if c.stopping {
            return;
        }
        let mut stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                drop(c);
                // Out of descriptors, or a connection that died in the
                // queue: do not spin on it.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if c.open.len() >= MAX_CONNECTIONS {
            drop(c);
            let _ = stream.write_all(&error_frame(&errno(libc::EAGAIN, "too many control connections")));
            continue;
        }
        let Ok(kept) = stream.try_clone() else { continue };
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        c.open.insert(id, kept);
        drop(c);
        let access = access.clone();
        let policy = policy.to_string();
        let connections_for_thread = Arc::clone(connections);
        let spawned = std::thread::Builder::new().name("fslab-control-conn".to_string()).spawn(move || {
            serve_connection(stream, access, &policy);
            connections_for_thread.lock().unwrap_or_else(PoisonError::into_inner).open.remove(&id);
        });
        if spawned.is_err() {
            connections.lock().unwrap_or_else(PoisonError::into_inner).open.remove(&id);
        }
    }
}

/// Serves one client until it closes the connection or breaks the framing.
fn serve_connection<A: LfsAccess>(mut stream: UnixStream, access: A, policy: &str) {
    // A client that stops reading must not keep this thread forever.
    let _ = stream.set_write_timeout(Some(Duration::from_secs(60)));
    let mut mechanism = match Locked::new(access) {
        Ok(m) => m,
        Err(e) => {
            let _ = stream.write_all(&error_frame(&e));
            return;
        }
    };
    let mut greeted = false;
    loop {
        let request = match read_frame(&mut stream, MAX_REQUEST) {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(e) => {
                // The framing is lost: say why, then close.
                if e.kind() == io::ErrorKind::InvalidData {
                    let too_large = errno(libc::EMSGSIZE, "request too large for the control socket");
                    let _ = stream.write_all(&error_frame(&too_large));
                }
                return;
            }
        };
        let response = match serve(&mut mechanism, &request, policy, &mut greeted) {
            Ok(frame) => frame,
            Err(e) => error_frame(&e),
        };
        if stream.write_all(&response).is_err() {
            return;
        }
    }
}

/// One request: decode, run, encode the response frame.
fn serve<A: LfsAccess>(
    m: &mut Locked<A>,
    request: &[u8],
    policy: &str,
    greeted: &mut bool,
) -> Result<Vec<u8>> {
    let mut r = In(request);
    let op = r.u8()?;
    let mut out = Out::new(STATUS_OK);
    if op != OP_HELLO && !*greeted {
        return Err(errno(libc::EPROTO, "the first request on the control socket must be hello"));
    }
    match op {
        OP_HELLO => {
            if r.array::<4>()? != *MAGIC {
                return Err(errno(libc::EPROTO, "not an fslab control client"));
            }
            if r.u32()? != VERSION {
                return Err(errno(libc::EPROTO, "unsupported control protocol version"));
            }
            r.end()?;
            *greeted = true;
            out.bytes(MAGIC);
            out.u32(VERSION);
        }
        OP_SEGMENT_TABLE => {
            r.end()?;
            encode_table(&mut out, &m.segment_table()?);
        }
        OP_READ_SEGMENT => {
            let seg = r.u64()?;
            r.end()?;
            out.bytes(&m.read_segment(seg)?);
        }
        OP_BMAPV => {
            let refs = r.block_refs()?;
            r.end()?;
            let now = m.bmapv(&refs)?;
            out.count(now.len());
            now.iter().for_each(|&d| out.u64(d));
        }
        OP_MARKV_COST => {
            let refs = r.block_refs()?;
            r.end()?;
            out.u64(m.markv_cost(&refs)?);
        }
        OP_MARKV => {
            let refs = r.block_refs()?;
            r.end()?;
            // No contents from the client: the file system reads each
            // block itself, so nobody can write data through this socket.
            let blocks: Vec<MarkBlock> =
                refs.into_iter().map(|block| MarkBlock { block, data: None }).collect();
            let done = m.markv(&blocks)?;
            out.u64(done.moved);
            out.u64(done.skipped);
            out.u64(done.blocks_written);
        }
        OP_SEGCLEAN => {
            let seg = r.u64()?;
            r.end()?;
            m.segclean(seg)?;
        }
        OP_SEGWAIT => {
            let ms = r.u32()?;
            r.end()?;
            m.segwait(Duration::from_millis(u64::from(ms)).min(MAX_SEGWAIT))?;
        }
        OP_REPORT => {
            r.end()?;
            let report = m.access().with_lfs(|lfs| {
                let table = lfs.segment_table();
                Ok(Report {
                    policy: policy.to_string(),
                    cleaner: lfs.cleaner_report(),
                    segments: table.segments.len() as u64,
                    segment_bytes: table.blocks_per_segment * u64::from(table.block_size),
                    clean_segments: table.clean_segments,
                    reserve_segments: table.reserve_segments,
                    low_water: table.low_water,
                    high_water: table.high_water,
                })
            })?;
            encode_report(&mut out, &report);
        }
        _ => return Err(errno(libc::EOPNOTSUPP, "unknown control request")),
    }
    out.finish(MAX_RESPONSE)
}

// ---------------------------------------------------------------------------
// The client.

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
    fn over(stream: UnixStream) -> Result<Client> {
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
    pub fn report(&mut self) -> Result<Report> {
        let answer = self.call(Out::new(OP_REPORT))?;
        let mut r = In(&answer);
        let report = decode_report(&mut r)?;
        r.end()?;
        Ok(report)
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
        let answer = self.call(Out::new(OP_SEGMENT_TABLE))?;
        let mut r = In(&answer);
        let table = decode_table(&mut r)?;
        r.end()?;
        Ok(table)
    }

    fn read_segment(&mut self, seg: u64) -> Result<Vec<u8>> {
        let mut out = Out::new(OP_READ_SEGMENT);
        out.u64(seg);
        self.call(out)
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
                now.push(r.u64()?);
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
    fn markv(&mut self, blocks: &[MarkBlock]) -> Result<Markv> {
        let answer = self.call(Client::refs_request(OP_MARKV, blocks.iter().map(|b| b.block))?)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Access, Files, Spec};
    use crate::{policy, Cleaner};
    use disk::MemDisk;
    use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
    use fslab::ufs::FileSystem;

    /// The mount's lock, as the FUSE adapter holds it.
    #[derive(Clone)]
    struct Shared(Arc<Mutex<FileSystem<Lfs>>>);

    impl LfsAccess for Shared {
        fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> Result<R>) -> Result<R> {
            op(self.0.lock().unwrap_or_else(PoisonError::into_inner).storage())
        }
    }

    /// A 16 MiB file system, half full, with a third of it overwritten:
    /// segments with dead blocks for a cleaner to find.
    fn dirty_fs() -> (Shared, Files) {
        let disk = Arc::new(MemDisk::new(16 << 20));
        let mkfs = MkfsOptions { block_size: 4096, segment_size: 128 << 10 };
        fslab::mkfs_lfs(disk.clone(), &mkfs, Default::default()).expect("mkfs");
        let options = MountOptions { cache_bytes: 1 << 20, ..MountOptions::default() };
        let mut fs = FileSystem::new(Lfs::mount(disk, options).expect("mount"));
        let spec =
            Spec { utilization: 0.5, file_blocks: 4, write_multiple: 0.3, access: Access::Uniform, seed: 3 };
        let mut files = Files::fill(&mut fs, &spec).expect("fill");
        files.overwrite(&mut fs, &spec).expect("overwrite");
        (Shared(Arc::new(Mutex::new(fs))), files)
    }

    /// A client and a server thread over a socket pair.
    fn pair(access: &Shared) -> Client {
        let (ours, theirs) = UnixStream::pair().expect("socket pair");
        let access = access.clone();
        std::thread::spawn(move || serve_connection(theirs, access, "greedy"));
        Client::over(ours).expect("hello")
    }

    #[test]
    fn every_request_round_trips_and_a_remote_cleaner_cleans() {
        let (shared, files) = dirty_fs();
        let mut client = pair(&shared);

        let mut remote = client.segment_table().expect("segment_table");
        let mut local = shared.with_lfs(|lfs| Ok(lfs.segment_table())).expect("local table");
        // The clock moved between the two calls; nothing else did.
        remote.now = local.now;
        local.budget_blocks = remote.budget_blocks.max(local.budget_blocks);
        remote.budget_blocks = local.budget_blocks;
        assert_eq!(remote, local);

        let seg =
            (0..local.segments.len()).find(|&s| local.segments[s].cleanable).expect("a dirty segment") as u64;
        let bytes = client.read_segment(seg).expect("read_segment");
        assert_eq!(bytes.len() as u64, local.blocks_per_segment * u64::from(local.block_size));
        let refs = fslab::lfs::clean::parse_segment(&local, seg, &bytes);
        assert!(!refs.is_empty());
        let remote_now = client.bmapv(&refs).expect("bmapv");
        let local_now = shared.with_lfs(|lfs| lfs.bmapv(&refs)).expect("local bmapv");
        assert_eq!(remote_now, local_now);
        // More blocks than one request carries: split, answered in order.
        let many: Vec<BlockRef> = refs.iter().copied().cycle().take(MAX_BLOCKS + 3).collect();
        let split = client.bmapv(&many).expect("bmapv in two requests");
        assert_eq!(split, local_now.iter().copied().cycle().take(MAX_BLOCKS + 3).collect::<Vec<_>>());
        let live: Vec<BlockRef> = refs
            .iter()
            .zip(&remote_now)
            .filter(|(r, &at)| at == r.daddr && at != 0)
            .map(|(r, _)| *r)
            .collect();
        let cost = client.markv_cost(&live).expect("markv_cost");
        assert_eq!(cost, shared.with_lfs(|lfs| lfs.markv_cost(&live)).expect("local cost"));

        // Contents sent by a client are never used: garbage here changes nothing.
        let blocks: Vec<MarkBlock> =
            live.iter().map(|&block| MarkBlock { block, data: Some(vec![0xAB; 4096]) }).collect();
        let moved = client.markv(&blocks).expect("markv");
        assert_eq!(moved.moved + moved.skipped, live.len() as u64);
        client.segclean(seg).expect("segclean");
        let err = client.segclean(u64::MAX).expect_err("no such segment");
        assert_eq!(err.errno(), libc::EINVAL);
        assert_eq!(err.to_string(), fslab::error::errno(libc::EINVAL, "no such segment").to_string());
        // An error leaves the connection usable.
        client.segwait(Duration::from_millis(10)).expect("segwait");

        let report = client.report().expect("report");
        assert_eq!(report.policy, "greedy");
        assert!(report.cleaner.total.segments_cleaned >= 1);
        assert_eq!(report.cleaner.cleaned_utilization.last().map(|c| c.0), Some(seg));
        assert_eq!(report.segments, local.segments.len() as u64);
        assert_eq!(report.high_water, local.high_water);
        let local_report = shared.with_lfs(|lfs| Ok(lfs.cleaner_report())).expect("local report");
        assert_eq!(report.cleaner, local_report);

        // The driver, unchanged, over the socket.
        let mut cleaner = Cleaner::new(policy::by_name("cost-benefit").expect("policy"));
        let pass = cleaner.pass(&mut client).expect("pass");
        assert!(!pass.cleaned.is_empty(), "{pass:?}");
        let mut guard = shared.0.lock().expect("lock");
        files.verify(&mut guard).expect("every byte after remote cleaning");
    }

    #[test]
    fn segwait_returns_when_a_segment_is_written_and_holds_no_lock() {
        let (shared, _files) = dirty_fs();
        let mut client = pair(&shared);
        let writer = shared.clone();
        let waiter = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            client.segwait(Duration::from_secs(60)).expect("segwait");
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(200));
        // Taking the lock proves segwait sleeps without it; the checkpoint
        // writes a partial segment and wakes it.
        writer.with_lfs(fslab::storage::StorageManager::sync).expect("sync");
        let waited = waiter.join().expect("waiter");
        assert!(waited < MAX_SEGWAIT, "{waited:?}");
    }

    /// Sends raw bytes, returns the first response frame (None: closed).
    fn raw(stream: &mut UnixStream, bytes: &[u8]) -> Option<Vec<u8>> {
        stream.write_all(bytes).ok()?;
        read_frame(stream, MAX_RESPONSE).ok().flatten()
    }

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    fn errno_of(response: &[u8]) -> i32 {
        assert_eq!(response[0], STATUS_ERROR, "{response:?}");
        i32::from_le_bytes(response[1..5].try_into().expect("4 bytes"))
    }

    #[test]
    fn garbage_gets_errors_and_never_a_panic() {
        let (shared, _files) = dirty_fs();
        let connect = || {
            let (ours, theirs) = UnixStream::pair().expect("pair");
            let access = shared.clone();
            let server = std::thread::spawn(move || serve_connection(theirs, access, "off"));
            ours.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
            (ours, server)
        };

        // Before hello, nothing is served.
        let (mut s, server) = connect();
        assert_eq!(errno_of(&raw(&mut s, &frame(&[OP_SEGMENT_TABLE])).expect("answer")), libc::EPROTO);
        assert_eq!(errno_of(&raw(&mut s, &frame(b"\0FSLX\x01\0\0\0")).expect("answer")), libc::EPROTO);
        let mut hello = vec![OP_HELLO];
        hello.extend_from_slice(MAGIC);
        hello.extend_from_slice(&VERSION.to_le_bytes());
        assert_eq!(raw(&mut s, &frame(&hello)).expect("answer")[0], STATUS_OK);

        // Malformed requests: each an error, the connection still usable.
        let mut huge_count = vec![OP_BMAPV];
        huge_count.extend_from_slice(&u32::MAX.to_le_bytes());
        let mut lying_count = vec![OP_MARKV];
        lying_count.extend_from_slice(&1000u32.to_le_bytes());
        lying_count.extend_from_slice(&[0; REF_BYTES]);
        let mut bad_kind = vec![OP_MARKV_COST];
        bad_kind.extend_from_slice(&1u32.to_le_bytes());
        bad_kind.extend_from_slice(&[7; REF_BYTES]);
        for body in [
            vec![],
            vec![99],
            vec![OP_READ_SEGMENT, 1],
            huge_count,
            lying_count,
            bad_kind,
            vec![OP_REPORT, 0],
        ] {
            let answer = raw(&mut s, &frame(&body)).expect("answer");
            assert!([libc::EPROTO, libc::EOPNOTSUPP].contains(&errno_of(&answer)), "{body:?}");
        }
        let mut read = vec![OP_READ_SEGMENT];
        read.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(errno_of(&raw(&mut s, &frame(&read)).expect("answer")), libc::EINVAL);

        // Random references reach the file system: answers, not panics.
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for op in [OP_BMAPV, OP_MARKV_COST, OP_MARKV, OP_SEGCLEAN, OP_READ_SEGMENT] {
            for _ in 0..50 {
                let mut body = vec![op];
                if op == OP_SEGCLEAN || op == OP_READ_SEGMENT {
                    body.extend_from_slice(&(next() % 300).to_le_bytes());
                } else {
                    body.extend_from_slice(&8u32.to_le_bytes());
                    for _ in 0..8 {
                        body.extend_from_slice(&(next() % 40).to_le_bytes());
                        body.extend_from_slice(&(next() as u32).to_le_bytes());
                        let inode = next() % 4 == 0;
                        body.push(u8::from(inode));
                        let lbn = if inode { 0 } else { next() as i64 >> (next() % 64) };
                        body.extend_from_slice(&lbn.to_le_bytes());
                        body.extend_from_slice(&(next() % 5000).to_le_bytes());
                        body.extend_from_slice(&(next() as i64).to_le_bytes());
                    }
                }
                let answer = raw(&mut s, &frame(&body)).expect("an answer, not a dead server");
                assert!(answer[0] == STATUS_OK || answer[0] == STATUS_ERROR);
            }
        }

        // Random bytes in valid frames.
        for len in [1usize, 7, 64, 1000] {
            let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let answer = raw(&mut s, &frame(&body)).expect("answer");
            assert!(answer[0] == STATUS_OK || answer[0] == STATUS_ERROR);
        }

        // A length beyond the cap: an error, then the connection closes.
        let answer = raw(&mut s, &u32::MAX.to_le_bytes()).expect("answer");
        assert_eq!(errno_of(&answer), libc::EMSGSIZE);
        assert!(raw(&mut s, &frame(&[OP_REPORT])).is_none(), "closed after a bad frame");
        server.join().expect("the server thread did not panic");

        // A frame cut short, and pure noise: the thread ends quietly.
        let (mut s, server) = connect();
        s.write_all(&1000u32.to_le_bytes()).expect("write");
        s.write_all(&[1, 2, 3]).expect("write");
        drop(s);
        server.join().expect("no panic on a short frame");
        let (mut s, server) = connect();
        let noise: Vec<u8> = (0..4096).map(|_| next() as u8).collect();
        let _ = s.write_all(&noise);
        drop(s);
        server.join().expect("no panic on noise");

        // The file system is still fine.
        let mut client = pair(&shared);
        client.report().expect("report after garbage");
    }

    #[test]
    fn client_rejects_a_lying_server() {
        for body in [vec![STATUS_OK, 1, 2], vec![STATUS_ERROR, 1], vec![5], vec![]] {
            let (ours, mut theirs) = UnixStream::pair().expect("pair");
            let server = std::thread::spawn(move || {
                let _ = read_frame(&mut theirs, MAX_REQUEST);
                let _ = theirs.write_all(&frame(&body));
            });
            assert!(Client::over(ours).is_err());
            server.join().expect("server");
        }
        // A huge length is refused before anything is allocated.
        let (ours, mut theirs) = UnixStream::pair().expect("pair");
        let server = std::thread::spawn(move || {
            let _ = read_frame(&mut theirs, MAX_REQUEST);
            let _ = theirs.write_all(&u32::MAX.to_le_bytes());
        });
        let err = Client::over(ours).err().expect("refused");
        assert_eq!(err.errno(), libc::EPROTO);
        server.join().expect("server");
    }

    #[test]
    fn server_binds_at_the_derived_path_serves_many_clients_and_removes_its_socket() {
        let (shared, _files) = dirty_fs();
        let tmp = std::env::temp_dir().join(format!("fslab-control-test-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).expect("mkdir");
        let mountpoint = tmp.canonicalize().expect("canonical");
        let server = Server::start(shared.clone(), &mountpoint, "hot-cold").expect("start");
        let path = server.path().to_path_buf();
        assert_eq!(find_socket(&mountpoint).expect("find"), Some(path.clone()));
        let dir_mode = std::fs::metadata(path.parent().expect("dir")).expect("stat").mode();
        assert_eq!(dir_mode & 0o777, 0o700);

        let clients: Vec<_> = (0..4)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut c = Client::connect_to(&path).expect("connect");
                    for _ in 0..5 {
                        assert_eq!(c.report().expect("report").policy, "hot-cold");
                        c.segment_table().expect("table");
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().expect("client");
        }
        // A second server for the same mount point is refused.
        assert!(Server::bind(shared.clone(), &path, "x").is_err());

        let mut idle = Client::connect(&mountpoint).expect("connect by mount point");
        drop(server);
        assert!(!path.exists(), "socket removed");
        assert!(idle.report().is_err(), "connections closed with the server");
        let err = Client::connect(&mountpoint).err().expect("no server");
        // EACCES when run by a user who may not look into root's /run/fslab.
        assert!([libc::ENOENT, libc::EACCES].contains(&err.errno()), "{err}");
        let _ = std::fs::remove_dir(&tmp);
    }

    #[test]
    fn socket_names_are_stable() {
        // FNV-1a test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(socket_file_name(Path::new("/mnt")).len(), 16 + 5);
        assert_ne!(socket_file_name(Path::new("/mnt/a")), socket_file_name(Path::new("/mnt/b")));
    }
}
