//! The server side of the control socket: the accepting thread, one
//! thread per connection, and the dispatch of each request — a report of
//! any layout straight to the mount ([`SharedFs`]), a cleaner's request to
//! the [`Mechanism`] over the mount's lock ([`Locked`]).

use super::path::{private_dir, socket_path_candidates};
use super::wire::*;
use super::{LogAccess, Report, SharedFs};
use fslab::error::errno;
use fslab::lfs::clean::MarkBlock;
use fslab::Result;
use fslab_cleaner::mechanism::{LfsAccess, Locked, Mechanism};
use std::collections::HashMap;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

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
/// mount ends, requests fail (a cleaner's with
/// `mechanism::unmounted_error`).
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
    pub fn start<F: SharedFs>(fs: F, canonical_mountpoint: &Path, policy: &str) -> io::Result<Server> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no directory for the control socket");
        for path in socket_path_candidates(canonical_mountpoint) {
            let Some(dir) = path.parent() else { continue };
            match private_dir(dir).and_then(|()| Server::bind(fs.clone(), &path, policy)) {
                Ok(server) => return Ok(server),
                Err(e) => last = io::Error::new(e.kind(), format!("{}: {e}", path.display())),
            }
        }
        Err(last)
    }

    /// Serves at exactly `path`. A stale socket there (nobody answering)
    /// is replaced; a live one is an error (AddrInUse).
    pub fn bind<F: SharedFs>(fs: F, path: &Path, policy: &str) -> io::Result<Server> {
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
                .spawn(move || accept_loop(&listener, &connections, fs, &policy))?
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

fn accept_loop<F: SharedFs>(
    listener: &UnixListener,
    connections: &Arc<Mutex<Connections>>,
    fs: F,
    policy: &str,
) {
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
        let fs = fs.clone();
        let policy = policy.to_string();
        let connections_for_thread = Arc::clone(connections);
        let spawned = std::thread::Builder::new().name("fslab-control-conn".to_string()).spawn(move || {
            serve_connection(stream, fs, &policy);
            connections_for_thread.lock().unwrap_or_else(PoisonError::into_inner).open.remove(&id);
        });
        if spawned.is_err() {
            connections.lock().unwrap_or_else(PoisonError::into_inner).open.remove(&id);
        }
    }
}

/// Serves one client until it closes the connection, breaks the framing
/// or sends nothing for [`IDLE_TIMEOUT`].
pub(super) fn serve_connection<F: SharedFs>(stream: UnixStream, fs: F, policy: &str) {
    serve_connection_idle(stream, fs, policy, IDLE_TIMEOUT)
}

/// As [`serve_connection`], closing after `idle` without a byte.
pub(super) fn serve_connection_idle<F: SharedFs>(
    mut stream: UnixStream,
    fs: F,
    policy: &str,
    idle: Duration,
) {
    // A client that stops reading, or never writes, must not keep this
    // thread (and a connection of the few served) forever.
    let _ = stream.set_write_timeout(Some(Duration::from_secs(60)));
    let _ = stream.set_read_timeout(Some(idle));
    let mut connection = Connection { fs, policy, mechanism: None, greeted: false };
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
        let response = match connection.serve(&request) {
            Ok(frame) => frame,
            Err(e) => error_frame(&e),
        };
        if stream.write_all(&response).is_err() {
            return;
        }
    }
}

/// One client's connection: the mount, and the cleaner's mechanism once a
/// cleaner's request asked for it.
struct Connection<'a, F: SharedFs> {
    fs: F,
    /// What reports name as the mount's own cleaner.
    policy: &'a str,
    /// Made at the first cleaner's request: on a layout without a log it
    /// cannot be made, and each such request gets the layout's error.
    mechanism: Option<Locked<LogAccess<F>>>,
    greeted: bool,
}

impl<F: SharedFs> Connection<'_, F> {
    /// One request: decode, run, encode the response frame.
    fn serve(&mut self, request: &[u8]) -> Result<Vec<u8>> {
        let mut r = In(request);
        let op = r.u8()?;
        let mut out = Out::new(STATUS_OK);
        if op != OP_HELLO && !self.greeted {
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
                self.greeted = true;
                out.bytes(MAGIC);
                out.u32(VERSION);
            }
            OP_MOUNT => {
                r.end()?;
                encode_mount(&mut out, &self.fs.mount_report()?);
            }
            OP_DIRHASH => {
                r.end()?;
                encode_dirhash(&mut out, &self.fs.dirhash_report()?);
            }
            OP_MEMORY => {
                r.end()?;
                encode_memory(&mut out, &self.fs.memory_report()?);
            }
            OP_LOCK => {
                r.end()?;
                encode_lock(&mut out, &self.fs.lock_report()?);
            }
            // Ops 1 to 9: the cleaner's, on the log.
            OP_MARKV | OP_SEGCLEAN if self.fs.is_read_only() => {
                return Err(errno(libc::EROFS, "the mount is read-only: nothing is cleaned"));
            }
            OP_SEGMENT_TABLE..=OP_SEGMENT_REFS => {
                let policy = self.policy;
                serve_cleaner(self.mechanism()?, op, &mut r, &mut out, policy)?;
            }
            _ => return Err(errno(libc::EOPNOTSUPP, "unknown control request")),
        }
        out.finish(MAX_RESPONSE)
    }

    /// The cleaner's mechanism, made on first use; fails on a layout
    /// without a log ([`ServedStorage::log`](super::ServedStorage::log)).
    fn mechanism(&mut self) -> Result<&mut Locked<LogAccess<F>>> {
        let mechanism = match self.mechanism.take() {
            Some(m) => m,
            None => Locked::new(LogAccess(self.fs.clone()))?,
        };
        Ok(self.mechanism.insert(mechanism))
    }
}

/// One of the cleaner's requests (ops 1–9), on the log.
fn serve_cleaner<A: LfsAccess>(
    m: &mut Locked<A>,
    op: u8,
    r: &mut In,
    out: &mut Out,
    policy: &str,
) -> Result<()> {
    match op {
        OP_SEGMENT_TABLE => {
            r.end()?;
            encode_table(out, &m.segment_table()?);
        }
        OP_READ_SEGMENT => {
            let seg = r.u64()?;
            r.end()?;
            out.bytes(&m.read_segment(seg)?);
        }
        OP_SEGMENT_REFS => {
            let seg = r.u64()?;
            r.end()?;
            let refs = m.segment_refs(seg)?;
            out.count(refs.len());
            refs.iter().for_each(|b| out.block_ref(b));
        }
        OP_BMAPV => {
            let refs = r.block_refs()?;
            r.end()?;
            let now = m.bmapv(&refs)?;
            out.count(now.len());
            now.iter().for_each(|&d| out.u64(d.get()));
        }
        OP_MARKV_COST => {
            let refs = r.block_refs()?;
            r.end()?;
            out.u64(m.markv_cost(&refs)?);
        }
        OP_MARKV => {
            let refs = r.block_refs()?;
            let to = destination_from(r.u8()?)?;
            r.end()?;
            // No contents from the client: the file system reads each
            // block itself, so nobody can write data through this socket.
            let blocks: Vec<MarkBlock> =
                refs.into_iter().map(|block| MarkBlock { block, data: None }).collect();
            let done = m.markv(&blocks, to)?;
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
                    cold_head: lfs.has_cold_head(),
                    cold_partial_segments: lfs.stats().cold_partial_segments,
                    ages_predict_survival: table.ages_predict_survival,
                })
            })?;
            encode_report(out, &report);
        }
        _ => return Err(errno(libc::EOPNOTSUPP, "unknown control request")),
    }
    Ok(())
}
