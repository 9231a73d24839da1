//! The FUSE adapter: kernel requests to `ufs` calls, over the kernel's
//! classic `/dev/fuse` loop or FUSE over io_uring ([`Transport`]).
//!
//! * [`mount`] — mounts a [`FileSystem`] on a directory and returns once the
//!   kernel has accepted it ([`Mounted`]); [`Mounted::run`] serves requests
//!   until the file system is unmounted, then writes the final checkpoint.
//! * [`Unmounter`] — ends a running mount from another thread (a signal).
//! * [`FsHandle`] — lets other threads of the mounting program (a cleaner)
//!   call the library under the same lock as kernel requests.
//! * `adapter` — [`FuseAdapter`]: one kernel request, one `ufs` call, one
//!   reply, served through [`kernel::Serve`] by either transport.
//! * `shared` — the reader-writer lock around the file system, the tick
//!   thread and the write-behind thread.
//! * `caller` — the caller's capabilities and groups, for clearing
//!   set-user-ID and set-group-ID as Linux does.
//! * `convert`, `reply` — inode numbers, attributes, times; replying once.
//! * `stale` — which cached attributes the kernel must be told to drop.
//! * `damage` — reports of damage met while serving, rate-limited.
//! * `readahead` — raises the kernel's read-ahead for the mount.
//! * `attach` — mounts the connection, and unmounts that mount and no other.
//! * [`mountinfo`] — the mount table: which mount is which, and which is on top.
//! * [`kernel`] — the kernel's FUSE protocol and both transports.
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
pub use reply::TTL;
pub use shared::{FsHandle, LockStats};

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
use shared::Shared;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How kernel requests reach the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// FUSE over io_uring where the kernel offers it (its `enable_uring`
    /// parameter is `Y`), else the classic loop.
    Auto,
    /// The classic loop: [`MountConfig::threads`] threads reading requests
    /// from `/dev/fuse` and writing replies to it, two system calls and,
    /// most of the time, a wake-up of another CPU a request.
    Device,
    /// FUSE over io_uring: a queue a CPU, each request served on the CPU
    /// of its caller, one system call to answer it and fetch the next. The
    /// mount fails where the kernel does not offer it.
    Ring,
}

impl Transport {
    /// The transport's name in mount options (`transport=`).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Auto => "auto",
            Transport::Device => "device",
            Transport::Ring => "ring",
        }
    }
}

/// How to mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountConfig {
    /// Let users other than the one mounting use the file system
    /// (`allow_other`; needs `user_allow_other` in /etc/fuse.conf for non-root).
    pub allow_other: bool,
    /// Threads reading kernel requests from `/dev/fuse` (the classic
    /// transport; FUSE over io_uring runs one a CPU). A request waiting for
    /// durability holds its thread until the flush returns, so this bounds
    /// how many operations one flush can make durable (group commit): 4
    /// threads shared a flush among at most 4 of 8 fsyncing writers.
    pub threads: usize,
    /// How kernel requests reach the file system.
    pub transport: Transport,
    /// Inodes the kernel may hold looked up before fslab asks it to let go
    /// of those nothing uses (`FUSE_NOTIFY_PRUNE`, Linux 6.18 on): each
    /// costs the daemon an entry in its lookup table; `None` leaves it to
    /// the kernel's memory pressure.
    pub max_kernel_inodes: Option<usize>,
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
            transport: Transport::Auto,
            max_kernel_inodes: Some(MAX_KERNEL_INODES),
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

/// The default bound on inodes the kernel holds looked up: 196,608, whose
/// entries in the daemon's lookup table take 8.5 MiB (2^19 slots of 17
/// bytes). The table's own rule sets the figure: when lookups and forgets
/// have used up its free slots, it rehashes in place while it holds at
/// most half its capacity (229,376 entries at 2^19 slots) and doubles
/// otherwise. At 262,144 it doubled once the pruner's churn had used up
/// the slots, and held 17 MiB for the same entries; three quarters of that
/// leaves room for the pruner's overshoot below the half. A bound of
/// 1,048,576 cost 24 to 46 MiB at ten million files, more than anything
/// else beside the cache (`docs/lab/analysis.md`, "The daemon's memory").
pub const MAX_KERNEL_INODES: usize = 3 << 16;

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
    adapter: Arc<FuseAdapter<S>>,
    shared: Arc<Shared<S>>,
    /// The connection.
    device: Arc<OwnedFd>,
    /// Whether the kernel agreed to FUSE over io_uring.
    ring: bool,
    /// Threads reading `/dev/fuse` on the classic transport.
    threads: usize,
    /// The bound on inodes the kernel holds looked up, if any.
    max_kernel_inodes: Option<usize>,
    /// The kernel's FUSE protocol version (major, minor).
    kernel_protocol: (u32, u32),
    /// Unmounts (if still there) when dropped: after serving ends in
    /// [`Mounted::run`], or when the `Mounted` is dropped without running.
    guard: UnmountOnDrop,
    /// Writes the final checkpoint when dropped, after the unmount.
    checkpoint: ShutdownOnDrop<S>,
    tick_interval: Duration,
}

/// Writes the final checkpoint (once; see [`Shared::shutdown`]) when
/// dropped: a `Mounted` dropped without running still leaves its image
/// consistent.
struct ShutdownOnDrop<S: StorageManager>(Arc<Shared<S>>);

impl<S: StorageManager> Drop for ShutdownOnDrop<S> {
    fn drop(&mut self) {
        let _ = self.0.shutdown();
    }
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
    let device_number = attached.identity.device();
    let unmounter = Unmounter { identity: attached.identity, mountpoint: mountpoint.clone() };
    // From here on, a failure unmounts what was mounted.
    let guard = UnmountOnDrop(unmounter.clone());
    let device = Arc::new(attached.device);
    let want_ring = match config.transport {
        Transport::Device => false,
        Transport::Ring => true,
        Transport::Auto => uring_enabled() && kernel::queue::rings_allowed().is_ok(),
    };
    if config.transport == Transport::Ring {
        kernel::queue::rings_allowed().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot mount on {}: transport=ring: io_uring is not allowed here: {e}",
                    mountpoint.display()
                ),
            )
        })?;
    }
    let init = kernel::device::handshake(device.as_fd(), |init| {
        let offered = init.flags & kernel::init_flag::OVER_IO_URING != 0;
        if config.transport == Transport::Ring && !offered {
            return Err(format!(
                "transport=ring: the kernel (FUSE 7.{}) does not offer FUSE over io_uring \
                 (is {} Y?)",
                init.minor,
                kernel::queue::ENABLE_URING
            ));
        }
        Ok(adapter::init_reply(init, config.writeback_cache, want_ring && offered))
    })
    .map_err(|why| io::Error::other(format!("cannot mount on {}: {why}", mountpoint.display())))?;
    let ring = want_ring && init.flags & kernel::init_flag::OVER_IO_URING != 0;
    let adapter = Arc::new(FuseAdapter::new(Arc::clone(shared), block_size, Arc::clone(&device), init.flags));
    // Best effort: without the right to (not root) the kernel's default
    // read-ahead stays, and sequential reads are slower.
    let _ = readahead::raise(device_number);
    Ok(Mounted {
        adapter,
        shared: Arc::clone(shared),
        device,
        ring,
        threads: config.threads.max(1),
        max_kernel_inodes: config.max_kernel_inodes,
        kernel_protocol: (init.major, init.minor),
        guard,
        checkpoint: ShutdownOnDrop(Arc::clone(shared)),
        tick_interval: config.tick_interval,
    })
}

/// Whether the kernel offers FUSE over io_uring to new connections.
fn uring_enabled() -> bool {
    std::fs::read_to_string(kernel::queue::ENABLE_URING).is_ok_and(|value| value.trim() == "Y")
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
    /// The transport the kernel agreed to: [`Transport::Ring`] or
    /// [`Transport::Device`].
    pub fn transport(&self) -> Transport {
        if self.ring {
            Transport::Ring
        } else {
            Transport::Device
        }
    }

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
        let ticker = self.shared.start_ticker(self.tick_interval)?;
        let write_behind = self.shared.start_write_behind()?;
        let pruner = match self.max_kernel_inodes {
            Some(budget) => Some(self.start_pruner(budget)?),
            None => None,
        };
        let served = if self.ring { self.serve_ring() } else { self.serve_device() };
        let Mounted { shared, guard, checkpoint, .. } = self;
        // Normally the kernel's unmount ended serving and this finds
        // nothing to do; serving that failed leaves its mount, which
        // would otherwise stay dead (ENOTCONN).
        drop(guard);
        let unmounted = shared.shutdown();
        drop(checkpoint);
        let _ = ticker.join();
        let _ = write_behind.join();
        if let Some(pruner) = pruner {
            let _ = pruner.join();
        }
        served?;
        unmounted.map_err(io::Error::other)
    }

    /// The kernel's FUSE protocol version (major, minor), as its FUSE_INIT
    /// said.
    pub fn kernel_protocol(&self) -> (u32, u32) {
        self.kernel_protocol
    }

    /// Starts the thread that keeps the inodes the kernel holds looked up
    /// near `budget`, checking ten times a tick interval while the file
    /// system serves: once a second let two processes making files run
    /// the table to five times its budget (1.3 million entries against
    /// 262,144, 46 MiB), since a round names at most 65,536. A check under
    /// budget only counts the table. A kernel that refuses the request
    /// (before Linux 6.18) is told once and not asked again.
    fn start_pruner(&self, budget: usize) -> io::Result<std::thread::JoinHandle<()>> {
        let adapter = Arc::clone(&self.adapter);
        let mut from = 0;
        let interval = (self.tick_interval / 10).max(Duration::from_millis(10));
        self.shared.start_every("fslab-prune", interval, move || {
            match adapter.prune_kernel_inodes(budget, &mut from) {
                Ok(_) => true,
                Err(e) => {
                    report_line(&format!(
                        "fslab: the kernel lets go of no inode on request ({e}); its lookups stay"
                    ));
                    false
                }
            }
        })
    }

    /// The classic transport: threads reading requests from the device,
    /// until the connection ends. Serves with as many as could be started.
    fn serve_device(&self) -> io::Result<()> {
        let buffer = kernel::MIN_READ_BUFFER.max(adapter::MAX_IO as usize + 4096);
        let adapter = &*self.adapter;
        let device = self.device.as_fd();
        std::thread::scope(|scope| {
            let mut threads = Vec::new();
            for i in 0..self.threads {
                let started = std::thread::Builder::new()
                    .name(format!("fslab-fuse-{i}"))
                    .spawn_scoped(scope, move || kernel::device::serve(adapter, device, buffer).map(|_| ()));
                match started {
                    Ok(thread) => threads.push(("/dev/fuse", thread)),
                    Err(e) if threads.is_empty() => {
                        let _ = self.guard.0.unmount();
                        return Err(e);
                    }
                    Err(e) => {
                        report_line(&format!("fslab: serving with {i} threads: {e}"));
                        break;
                    }
                }
            }
            join_all(threads)
        })
    }

    /// FUSE over io_uring: a queue a CPU, and one thread on the device for
    /// what the kernel still sends there (forgets, interrupts). The kernel
    /// holds every request until every queue has registered, so a queue
    /// that cannot start or register would leave the mount hung: the mount
    /// goes instead (and with it every thread's connection).
    fn serve_ring(&self) -> io::Result<()> {
        let queues = kernel::queue::possible_cpus()?;
        let payload_size = kernel::MIN_READ_BUFFER.max(adapter::MAX_IO as usize);
        let adapter = &*self.adapter;
        let device = self.device.as_fd();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            let mut threads = Vec::new();
            let buffer = kernel::MIN_READ_BUFFER.max(payload_size + 4096);
            let mut started = std::thread::Builder::new()
                .name("fslab-fuse-dev".to_string())
                .spawn_scoped(scope, move || kernel::device::serve(adapter, device, buffer).map(|_| ()))
                .map(|thread| threads.push(("/dev/fuse", thread)));
            for qid in 0..queues {
                if started.is_err() {
                    break;
                }
                let Ok(qid16) = u16::try_from(qid) else {
                    started = Err(io::Error::other("more CPUs than FUSE queues"));
                    break;
                };
                let setup = kernel::queue::QueueSetup {
                    qid: qid16,
                    pin: true,
                    entries: RING_ENTRIES,
                    payload_size,
                    taskrun: kernel::queue::TaskRun::Defer,
                };
                let ready_tx = ready_tx.clone();
                let ready = move |result| {
                    let _ = ready_tx.send((qid, result));
                };
                started = std::thread::Builder::new()
                    .name(format!("fslab-ring-{qid}"))
                    .spawn_scoped(scope, move || {
                        kernel::queue::run(adapter, device, setup, ready).map(|_| ())
                    })
                    .map(|thread| threads.push(("FUSE over io_uring", thread)));
            }
            drop(ready_tx);
            let mut failed = started.err().map(|e| format!("cannot start a thread: {e}"));
            while failed.is_none() {
                failed = match ready_rx.recv() {
                    Ok((_, Ok(()))) => None,
                    Ok((qid, Err(why))) => Some(format!("queue {qid}: {why}")),
                    // Every queue has reported.
                    Err(_) => break,
                };
            }
            if let Some(why) = failed {
                let _ = self.guard.0.unmount();
                let _ = join_all(threads);
                return Err(io::Error::other(format!("FUSE over io_uring: {why}")));
            }
            join_all(threads)
        })
    }
}

/// Entries each FUSE-over-io_uring queue lends the kernel: requests a CPU's
/// callers can have waiting at once.
const RING_ENTRIES: usize = 8;

/// Waits for every serving thread; the first error any returned.
fn join_all<'scope>(
    threads: impl IntoIterator<Item = (&'static str, std::thread::ScopedJoinHandle<'scope, io::Result<()>>)>,
) -> io::Result<()> {
    let mut first = Ok(());
    for (what, thread) in threads {
        let result = match thread.join() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(io::Error::new(e.kind(), format!("{what}: {e}"))),
            Err(_) => Err(io::Error::other(format!("{what}: a serving thread panicked"))),
        };
        if first.is_ok() {
            first = result;
        }
    }
    first
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

#[cfg(test)]
mod tests {
    use super::MAX_KERNEL_INODES;
    use std::collections::HashMap;

    /// The lookup table (`fslab::ufs`'s pins: a map from inode to count)
    /// under the churn the pruner keeps it in: filled a little past the
    /// budget, pruned to a sixteenth below it, over and over. It must keep
    /// the 2^19 slots a table of that many entries starts with, not double
    /// once lookups and forgets have used up its free slots.
    #[test]
    fn the_lookup_table_at_the_default_budget_keeps_its_size_under_churn() {
        let mut pins: HashMap<u64, u64> = HashMap::new();
        let (low, high) =
            (MAX_KERNEL_INODES - MAX_KERNEL_INODES / 16, MAX_KERNEL_INODES + MAX_KERNEL_INODES / 64);
        let (mut oldest, mut next) = (0u64, 0u64);
        let mut largest = 0;
        for _ in 0..400 {
            while pins.len() < high {
                pins.insert(next, 1);
                next += 1;
            }
            largest = largest.max(pins.capacity());
            while pins.len() > low {
                pins.remove(&oldest);
                oldest += 1;
            }
        }
        assert!(largest <= (1 << 19) / 8 * 7, "the table grew to {largest} entries' capacity");
    }
}
