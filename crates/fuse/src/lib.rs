//! The FUSE adapter: the only crate that names `fuser`.
//!
//! * [`mount`] — mounts a [`FileSystem`] on a directory and returns once the
//!   kernel has accepted it ([`Mounted`]); [`Mounted::run`] serves requests
//!   until the file system is unmounted, then writes the final checkpoint.
//! * [`Unmounter`] — ends a running mount from another thread (a signal).
//! * [`FsHandle`] — lets other threads of the mounting program (a cleaner)
//!   call the library under the same lock as kernel requests.
//! * `adapter` — [`FuseAdapter`]: one kernel request, one `ufs` call, one reply.
//! * `shared` — the one lock around the file system, the tick thread and the
//!   write-behind thread.
//! * `caller` — the caller's capabilities and groups, for clearing
//!   set-user-ID and set-group-ID as Linux does.
//! * `convert`, `reply` — inode numbers, attributes, times; replying once.
//! * `stale` — which cached attributes the kernel must be told to drop.
//! * `damage` — reports of damage met while serving, rate-limited.
//! * `readahead` — raises the kernel's read-ahead for the mount.
//! * `attach` — mounts the connection, and unmounts that mount and no other.
//! * [`mountinfo`] — the mount table: which mount is which, and which is on top.
//! * [`kernel`] — the kernel's FUSE protocol spoken without `fuser`: for a
//!   transport of fslab's own (FUSE over io_uring).
//!
//! Relies on `fslab::ufs` below; contains no file-system logic.

#![warn(missing_docs)]

mod adapter;
mod attach;
mod caller;
mod convert;
mod damage;
pub mod kernel;
pub mod mountinfo;
mod readahead;
mod reply;
mod shared;
mod stale;

pub use adapter::FuseAdapter;
pub use reply::{absent_attr, TTL};
pub use shared::FsHandle;

/// Writes `line` to the mount's log (standard error), or nothing if it
/// cannot be written: unlike `eprintln!`, which panics when standard error
/// is gone (a closed terminal, a log reader that died), and a panic in a
/// request or a background thread would stop the mount. Called holding no
/// lock, since a write to a pipe nobody reads blocks.
pub(crate) fn report_line(line: &str) {
    use std::io::Write as _;
    let mut err = io::stderr().lock();
    let _ = err.write_all(line.as_bytes()).and_then(|()| err.write_all(b"\n"));
}

use attach::{Detached, Identity};
use fslab::storage::StorageManager;
use fslab::ufs::FileSystem;
use fuser::{Config, Session, SessionACL};
use shared::Shared;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How to mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountConfig {
    /// Let users other than the one mounting use the file system
    /// (`allow_other`; needs `user_allow_other` in /etc/fuse.conf for non-root).
    pub allow_other: bool,
    /// Threads reading kernel requests. A request waiting for durability
    /// holds its thread until the flush returns, so this bounds how many
    /// operations one flush can make durable (group commit): 4 threads
    /// shared a flush among at most 4 of 8 fsyncing writers.
    pub threads: usize,
    /// Let the kernel cache writes and send them in large batches.
    pub writeback_cache: bool,
    /// How often the library's `tick` (periodic checkpoints) runs.
    pub tick_interval: Duration,
    /// What the mount table shows as the mount's source (`df`, `findmnt`,
    /// `mount`): the image. A name holding a comma or a backslash, which
    /// FUSE's option strings cannot carry, shows as `fslab`.
    pub source: String,
    /// Programs may be run from the file system (`exec`; `noexec` if not).
    pub exec: bool,
    /// Set-user-ID and set-group-ID bits take effect on `execve` (`suid`;
    /// FUSE's default, and the only choice for a user, is `nosuid`).
    pub suid: bool,
    /// Device nodes may be opened as devices (`dev`; FUSE's default, and
    /// the only choice for a user, is `nodev`).
    pub dev: bool,
    /// Mount read-only (`ro`): the kernel refuses every change with EROFS.
    pub read_only: bool,
    /// Requests that wait for durability (fsync, a synchronous operation)
    /// wait outside the file system's lock, sharing flushes with whatever
    /// finished meanwhile (`group_commit=on`, the default); off, each
    /// waits holding the lock: one flush per operation.
    pub group_commit: bool,
}

impl Default for MountConfig {
    fn default() -> Self {
        MountConfig {
            allow_other: false,
            threads: 16,
            writeback_cache: false,
            tick_interval: Duration::from_secs(1),
            source: SUBTYPE.to_string(),
            exec: true,
            suid: false,
            dev: false,
            read_only: false,
            group_commit: true,
        }
    }
}

/// The mount's subtype: the mount table shows its type as `fuse.fslab`,
/// which is how `umount` finds `umount.fuse.fslab` and how `fslab sync`
/// and the read-ahead code recognise an fslab mount.
pub const SUBTYPE: &str = "fslab";

/// Whether a mount table entry of type `kind` from `source` is an fslab
/// mount: type `fuse.fslab`, or (mounts made before the subtype was set)
/// type `fuse` or `fuse.lfs` from `fslab`.
pub fn is_fslab_mount(kind: &str, source: &str) -> bool {
    kind == "fuse.fslab" || ((kind == "fuse" || kind == "fuse.lfs") && source == SUBTYPE)
}

/// What the mount table shows as the source of a mount of `source`:
/// `source` itself, or `fslab` for a name FUSE's option strings cannot
/// carry (one holding a comma or a backslash, or an empty one).
pub fn shown_source(source: &str) -> String {
    if source.contains([',', '\\']) || source.is_empty() {
        SUBTYPE.to_string()
    } else {
        source.to_string()
    }
}

/// A file system the kernel has mounted, not yet serving requests.
///
/// Lifecycle: [`mount`] → `Mounted` (the mount point exists; requests wait
/// in the kernel) → [`Mounted::run`] (serves until unmounted, then writes
/// the final checkpoint) → gone. Dropping a `Mounted` without running it
/// unmounts and checkpoints as well.
pub struct Mounted<S: StorageManager + 'static> {
    session: Session<FuseAdapter<S>>,
    shared: Arc<Shared<S>>,
    /// Unmounts (if still there) when dropped: after the session ends in
    /// [`Mounted::run`], or when the `Mounted` is dropped without running.
    guard: UnmountOnDrop,
    tick_interval: Duration,
}

/// Ends a mount from any thread: unmounting makes the kernel end the
/// session, which runs the final checkpoint in [`Mounted::run`]. It
/// unmounts this mount only, never whatever else is mounted on the same
/// directory (see `attach`).
#[derive(Clone)]
pub struct Unmounter {
    identity: Identity,
    mountpoint: PathBuf,
}

/// Unmounts its mount, if still there, when dropped.
struct UnmountOnDrop(Unmounter);

impl Drop for UnmountOnDrop {
    fn drop(&mut self) {
        let _ = attach::detach(&self.0.identity);
    }
}

/// Mounts `fs` on `mountpoint`, returning once the kernel has completed the
/// FUSE handshake: from then on the mount point shows the file system
/// (requests wait until [`Mounted::run`]).
///
/// On failure the file system is unmounted cleanly before the error returns.
pub fn mount<S: StorageManager + 'static>(
    fs: FileSystem<S>,
    mountpoint: &Path,
    config: &MountConfig,
) -> io::Result<Mounted<S>> {
    let block_size = fs.block_size();
    let shared = Arc::new(Shared::with_group_commit(fs, config.group_commit));
    let result = mount_shared(&shared, mountpoint, config, block_size);
    if result.is_err() {
        let _ = shared.shutdown();
    }
    result
}

fn mount_shared<S: StorageManager + 'static>(
    shared: &Arc<Shared<S>>,
    mountpoint: &Path,
    config: &MountConfig,
    block_size: u32,
) -> io::Result<Mounted<S>> {
    let mountpoint = mountpoint
        .canonicalize()
        .map_err(|e| io::Error::new(e.kind(), format!("mount point {}: {e}", mountpoint.display())))?;
    if !mountpoint.is_dir() {
        let why = format!("mount point {} is not a directory", mountpoint.display());
        return Err(io::Error::new(io::ErrorKind::NotADirectory, why));
    }
    let source = shown_source(&config.source);
    let attached = attach::attach(&mountpoint, config, &source).map_err(|e| {
        io::Error::new(e.kind(), format!("cannot mount on {}: {}", mountpoint.display(), describe(&e)))
    })?;
    let device = attached.identity.device();
    let unmounter = Unmounter { identity: attached.identity, mountpoint: mountpoint.clone() };
    // From here on, a failure unmounts what was mounted.
    let guard = UnmountOnDrop(unmounter.clone());
    let mut fuse_config = Config::default();
    let acl = if config.allow_other { SessionACL::All } else { SessionACL::Owner };
    fuse_config.acl = acl;
    fuse_config.n_threads = Some(config.threads.max(1));
    let notifier = Arc::new(OnceLock::new());
    let adapter =
        FuseAdapter::new(Arc::clone(shared), config.writeback_cache, block_size, Arc::clone(&notifier));
    let session = Session::from_fd(adapter, attached.device, acl, fuse_config).map_err(|e| {
        io::Error::new(e.kind(), format!("cannot mount on {}: {}", mountpoint.display(), describe(&e)))
    })?;
    // Requests wait until `run`, so none can need it before it is set.
    let _ = notifier.set(session.notifier());
    // Best effort: without the right to (not root) the kernel's default
    // read-ahead stays, and sequential reads are slower.
    let _ = readahead::raise(device);
    Ok(Mounted { session, shared: Arc::clone(shared), guard, tick_interval: config.tick_interval })
}

/// A mount error in words a user can act on.
fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) if !Path::new("/dev/fuse").exists() => {
            "/dev/fuse is missing (is the fuse module loaded?)".to_string()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            format!("{e} (is /dev/fuse accessible and fusermount3 installed?)")
        }
        _ => e.to_string(),
    }
}

impl<S: StorageManager + 'static> Mounted<S> {
    /// A handle that unmounts this file system from another thread.
    pub fn unmounter(&self) -> Unmounter {
        self.guard.0.clone()
    }

    /// Keeps `file` open (with any kept before) while the mount serves
    /// requests and closes it as
    /// soon as the kernel's mount is gone, before the final checkpoint: a
    /// lock held through it tells other processes whether the file system
    /// is still mounted or only finishing.
    pub fn keep_while_serving(&self, file: std::fs::File) {
        self.shared.keep_while_serving(file);
    }

    /// A handle on the file system's lock, usable from any thread while the
    /// mount serves and failing with EIO once it is unmounted.
    pub fn handle(&self) -> FsHandle<S> {
        self.shared.handle()
    }

    /// Runs `work` once the file system is being unmounted, before the
    /// final checkpoint: stopping a thread that works on it through a
    /// [`FsHandle`] (the cleaner), so that it neither races the checkpoint
    /// nor finds the file system gone in the middle of its work.
    pub fn stop_before_unmount(&self, work: impl FnOnce() + Send + 'static) {
        self.shared.before_unmount(Box::new(work));
    }

    /// Serves kernel requests until the file system is unmounted (`umount`,
    /// `fusermount3 -u`, or an [`Unmounter`]), then writes the final
    /// checkpoint (the library's `unmount`, exactly once) and returns. An
    /// error means the session failed or the final checkpoint did.
    pub fn run(self) -> io::Result<()> {
        let Mounted { session, shared, guard, tick_interval } = self;
        let ticker = shared.start_ticker(tick_interval)?;
        let write_behind = shared.start_write_behind()?;
        let served = session.run();
        // Normally the kernel's unmount ended the session and this finds
        // nothing to do; a session that failed leaves its mount, which
        // would otherwise stay dead (ENOTCONN).
        drop(guard);
        // Normally `destroy` has already done it; this covers a session that
        // ended without calling it.
        let unmounted = shared.shutdown();
        let _ = ticker.join();
        let _ = write_behind.join();
        served?;
        unmounted.map_err(io::Error::other)
    }
}

impl Unmounter {
    /// Unmounts the file system, if it is still mounted. If it is busy
    /// (open files), detaches it lazily instead: it vanishes from the
    /// namespace at once and the session ends when the last file is
    /// closed. Fails, unmounting nothing, while another mount covers it.
    pub fn unmount(&self) -> io::Result<()> {
        attach::detach(&self.identity).map(|_: Detached| ())
    }

    /// The mount point (canonical path) it was mounted on.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }
}
