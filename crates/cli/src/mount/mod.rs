//! `fslab mount IMAGE DIR [-o OPTIONS] [-f]`, and the same as the mount
//! helper `mount.fslab` that `mount -t fslab` and `/etc/fstab` run.
//!
//! * `options` — fslab's options and the generic ones of mount(8).
//! * `background` — the fork, and the handshake that makes the command
//!   return once the mount is usable.
//! * `log` — where a background mount's messages go: the system log, or a
//!   file it names at mount time.
//! * `helper` — `mount.fslab` / `umount.fuse.fslab`: mount(8)'s helper
//!   conventions, and an unmount that waits for the final checkpoint.
//! * `utab` — the line that makes `umount DIR` run that helper.
//! * `kept_flags` — `dev` and `suid`, which mount(8) does not pass to the
//!   helper, read back from its command line and fstab.
//!
//! Foreground (`-f`): mount, serve until unmounted, write the final
//! checkpoint, exit.
//!
//! The layout is the image's (its superblock's magic): LFS or FFS. FFS takes
//! `-o integrity=sync|async|softdep|journal` (with `journal=sync|async`);
//! LFS takes the cleaner.
//!
//! Cleaning (LFS): unless `-o cleaner=off`, the file system gets a cleaner of the
//! chosen policy twice over: one writers run themselves when they are short
//! of clean segments, and a background thread that cleans towards the
//! high-water mark between requests.
//!
//! The control socket (`fslab_control`), on a mount of either
//! layout, serves `fslab stat` (space, device counters, directory hashes;
//! on LFS the cleaner's report too) and, on LFS, `fslab clean`; on FFS a
//! cleaner's request gets "FFS has no cleaner". It and the cleaner thread
//! start before "ready", so both commands work as soon as the mount command
//! returns.
//!
//! Shutdown: `umount`/`fusermount3 -u` ends the FUSE session; SIGTERM,
//! SIGINT, SIGHUP and SIGQUIT make a dedicated thread unmount the mount, which
//! ends it the same way (this mount only, never one mounted over or under
//! it on the same directory: `fslab_fuse::Unmounter`). Either way the background cleaner is stopped and
//! then the final checkpoint is written once, by `fslab_fuse::Mounted::run`,
//! before the process exits.

mod background;
pub mod helper;
mod kept_flags;
mod log;
mod options;
mod stdio;
mod utab;

use crate::log_device;
use clap::Args;
use disk::{BlockDevice, FileDisk, ReadOnlyOverlay};
use fslab::ffs::Ffs;
use fslab::lfs::Lfs;
use fslab::storage::StorageManager;
use fslab::ufs::FileSystem;
use fslab::Layout;
use fslab::Result as FsResult;
use fslab_cleaner::background::Background;
use fslab_cleaner::{policy, Cleaner};
use fslab_control::{LockReport, LogAccess, ServedStorage, Server, SharedFs};
use fslab_fuse::{FsHandle, MountConfig, Mounted};
use nix::sys::signal::{SigSet, Signal};
use options::Options;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Examples in `fslab mount --help`.
pub const EXAMPLES: &str = "Examples:
  fslab mount fs.img /mnt                         mount in the background; returns once usable
  fslab mount fs.img /mnt -o cleaner=greedy,cache=1G
  fslab mount ffs.img /mnt -o integrity=async -f  serve in the foreground until unmounted
  umount /mnt                                     unmount (or: fusermount3 -u /mnt)";

/// Arguments of `fslab mount`.
#[derive(Args)]
pub struct MountArgs {
    /// The image file or block device holding the file system.
    image: PathBuf,
    /// The directory to mount it on.
    dir: PathBuf,
    /// Comma-separated options (-o may be given more than once):
    ///   allow_other              let other users in (user_allow_other in /etc/fuse.conf for non-root)
    ///   cache=SIZE               buffer cache (e.g. 256M; the default)
    ///   checkpoint=SECONDS       seconds between automatic checkpoints (default 30)
    ///   cleaner=POLICY|off       LFS: greedy, cost-benefit or hot-cold (default hot-cold)
    ///   imap_cache=SIZE          LFS: memory for the inode map (default 8M, 524,288
    ///                            inodes); a larger map is read a block at a time
    ///   inode_cache=N            unchanged inodes kept in memory (default one per
    ///                            16K of cache, 4096 to 100000: 16384 at 256M)
    ///   integrity=sync|async|softdep|journal   FFS: ordered synchronous metadata
    ///                            (default), all delayed, soft updates, or the
    ///                            journal (an image made with mkfs --journal)
    ///   journal=async|sync       FFS journal: commits flushed once a second
    ///                            (default), or namespace operations durable at return
    ///   journal_batch=N          FFS journal: operations one transaction may gather
    ///                            (default 64; 1: each its own, as the 2000 paper)
    ///   journal_data=ordered|writeback  FFS journal: a file's new blocks durable
    ///                            before the log names them (default), or not (the paper)
    ///   journal_device=PATH      FFS journal: its log device, if not at the path
    ///                            mkfs recorded (its identity must match)
    ///   realloc=on|off           FFS: move a file's unwritten blocks together as it
    ///                            grows (ffs_reallocblks); default: what mkfs recorded
    ///   cluster_push=sequential|every  FFS: a run of blocks a write breaks goes
    ///                            to the disk at once if a sequential writer made it
    ///                            (default, FreeBSD), or always (4.4BSD)
    ///   transport=auto|device|ring  how kernel requests arrive: FUSE over io_uring
    ///                            (a queue a CPU) where the kernel offers it (auto,
    ///                            the default), /dev/fuse, or the ring or no mount
    ///   kernel_inodes=N|off      inodes the kernel may keep looked up before it is
    ///                            asked to let go of unused ones (default 196608;
    ///                            Linux 6.18 on): each costs the daemon a table entry
    ///   threads=N                threads reading /dev/fuse (default 16): a
    ///                            request waiting for the disk holds one
    ///   group_commit=on|off      operations waiting for the disk share flushes
    ///                            (default on); off: one flush each, the lock held
    ///   log=FILE                 a background mount's messages, instead of the system log
    ///   exec, noexec             programs may run from the mount (default exec)
    ///   suid, dev                set-user-ID bits and device nodes take effect (root only)
    ///   dirhash=on|off           hash large directories (default on)
    ///   dirhash_maxmem=SIZE      memory for all directory hashes (default: a 32nd of cache, at least 2M)
    ///   dirhash_minsize=SIZE     smallest directory hashed (default 2560)
    ///   dirhash_check            cross-check every dirhash answer (slow)
    ///   relatime, strictatime, noatime   when reads update access times (default relatime)
    ///   nodiratime               listing a directory leaves its access time alone
    ///   ro, rw                   read-only (nothing reaches the image; recovery in memory)
    ///   defaults, nofail, noauto, x-*, ...   mount(8)'s generic options, accepted
    /// sync is refused.
    #[arg(short = 'o', value_name = "OPTIONS", verbatim_doc_comment)]
    options: Vec<String>,
    /// Stay in the foreground until unmounted.
    #[arg(short = 'f', long = "foreground")]
    foreground: bool,
}

/// Mounts, in the foreground or the background.
pub fn run(args: &MountArgs) -> Result<(), String> {
    let (options, _) = options::parse(&args.options, false)?;
    start(&args.image, &args.dir, &options, args.foreground)
}

/// Mounts `image` on `dir` with `options`: in the foreground (serving until
/// unmounted) or in the background (returning once the mount is usable).
fn start(image: &Path, dir: &Path, options: &Options, foreground: bool) -> Result<(), String> {
    // Canonical paths: the background process changes directory to "/".
    let image = image.canonicalize().map_err(|e| format!("{}: {e}", image.display()))?;
    let dir = crate::mount_point::canonical(dir).map_err(|e| format!("mount point {e}"))?;
    if !dir.is_dir() {
        return Err(format!("mount point {} is not a directory", dir.display()));
    }
    if foreground {
        let signals = block_signals();
        let mount = mount(&image, &dir, options)?;
        warn_without_control(&mount);
        serve(mount, signals)
    } else {
        background::background(&image, &dir, options)
    }
}

/// The FUSE session of a mount of either layout.
enum Session {
    Lfs(Mounted<Lfs>),
    Ffs(Mounted<Ffs>),
}

impl Session {
    fn unmounter(&self) -> fslab_fuse::Unmounter {
        match self {
            Session::Lfs(m) => m.unmounter(),
            Session::Ffs(m) => m.unmounter(),
        }
    }

    fn keep_while_serving(&self, mark: File) {
        match self {
            Session::Lfs(m) => m.keep_while_serving(mark),
            Session::Ffs(m) => m.keep_while_serving(mark),
        }
    }

    fn run(self) -> std::io::Result<()> {
        match self {
            Session::Lfs(m) => m.run(),
            Session::Ffs(m) => m.run(),
        }
    }
}

/// A mount and what runs beside it, until it is unmounted.
struct Mount {
    mounted: Session,
    /// The image's lock: held until the final checkpoint is written.
    lock: crate::image_lock::ImageLock,
    /// The journal's log device's lock, if it has one, held as long.
    log_lock: Option<crate::image_lock::ImageLock>,
    /// The mount point.
    dir: PathBuf,
    /// The source the mount table shows (the image, or `fslab`).
    shown: PathBuf,
    /// The control socket, if it could be made.
    control: Result<Option<Server>, String>,
}

/// The mounted file system as the control socket and the background
/// cleaner reach it: one call under the mount's lock, like one kernel
/// request; and whether the mount is read-only.
struct MountAccess<S: StorageManager>(FsHandle<S>, bool);

impl<S: StorageManager> Clone for MountAccess<S> {
    fn clone(&self) -> Self {
        MountAccess(self.0.clone(), self.1)
    }
}

impl<S: ServedStorage> SharedFs for MountAccess<S> {
    type Storage = S;

    fn with_fs<R>(&self, op: impl FnOnce(&mut FileSystem<S>) -> FsResult<R>) -> FsResult<R> {
        self.0.with(op)
    }

    fn is_unmounted(&self) -> bool {
        self.0.is_unmounted()
    }

    fn is_read_only(&self) -> bool {
        self.1
    }

    fn lock_report(&self) -> FsResult<LockReport> {
        let s = self.0.lock_stats();
        let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Ok(LockReport {
            since_mount_ns: ns(s.since_mount),
            exclusive: s.exclusive,
            exclusive_waited: s.exclusive_waited,
            exclusive_wait_ns: ns(s.exclusive_wait),
            exclusive_held_ns: ns(s.exclusive_held),
            longest_hold_ns: ns(s.longest_hold),
            longest_hold_by: s.longest_hold_by.to_string(),
            shared: s.shared,
            shared_declined: s.shared_declined,
            shared_waited: s.shared_waited,
            shared_wait_ns: ns(s.shared_wait),
        })
    }
}

/// Serves the control socket of the mount on `dir`; without it the mount
/// still works, only `fslab clean` and `fslab stat` do not (the caller
/// warns).
fn control<S: ServedStorage>(
    access: &MountAccess<S>,
    dir: &Path,
    policy: &str,
) -> Result<Option<Server>, String> {
    Server::start(access.clone(), dir, policy)
        .map(Some)
        .map_err(|e| format!("no control socket, so fslab clean and fslab stat will not work: {e}"))
}

/// The cleaner of `policy_name`, a name `parse_options` accepted.
fn cleaner(policy_name: &str) -> Result<Cleaner, String> {
    policy::by_name(policy_name)
        .map(Cleaner::new)
        .ok_or_else(|| format!("option cleaner: unknown policy '{policy_name}'"))
}

/// Locks the image, mounts the storage manager of its layout and the FUSE
/// session, then starts the control socket and (LFS) the background cleaner
/// (stopped when the unmount begins, before the final checkpoint: otherwise
/// a pass could find the file system gone under it and say so).
fn mount(image: &Path, dir: &Path, options: &Options) -> Result<Mount, String> {
    let name = image.display();
    let lock = crate::image_lock::lock(image).map_err(|e| format!("{name}: {e}"))?;
    let mark = crate::image_lock::serving_mark(image);
    if let Ok(outer) = crate::mount_point::fslab_root(image) {
        // Allowed (an image is a file like any other), but every write and
        // checkpoint of this mount then waits on that mount's daemon.
        say!(
            "fslab: mount: warning: {name} lies inside the fslab mount at {}: this mount's I/O goes \
             through that one, which must stay mounted until this one is unmounted",
            outer.display()
        );
    }
    let disk: Arc<dyn BlockDevice> = if options.read_only {
        // Recovery still runs (roll-forward, the orphans freed), in memory:
        // no write reaches the image, which is opened for reading only.
        let file = FileDisk::open_read_only(image).map_err(|e| format!("{name}: {e}"))?;
        Arc::new(ReadOnlyOverlay::new(Arc::new(file)))
    } else {
        Arc::new(FileDisk::open(image).map_err(|e| format!("{name}: {e}"))?)
    };
    let layout = Layout::probe(disk.as_ref()).unwrap_or(Layout::Lfs);
    options.check_layout(layout)?;
    let access = if options.read_only { log_device::Access::Overlay } else { log_device::Access::Write };
    let (disk, log_lock) = log_device::attach(image, disk, options.journal_device.as_deref(), access)?;
    // A read-only mount cleans nothing and keeps access times as they are.
    let cleaner_policy = if options.read_only { None } else { options.cleaner };
    let mut atime = options.atime;
    if options.read_only {
        atime.policy = fslab::ufs::AtimePolicy::Never;
    }
    let config = MountConfig {
        allow_other: options.allow_other,
        source: image.to_string_lossy().into_owned(),
        exec: options.exec,
        suid: options.suid,
        dev: options.dev,
        read_only: options.read_only,
        group_commit: options.group_commit,
        threads: options.threads,
        transport: options.transport,
        max_kernel_inodes: options.kernel_inodes,
        ..MountConfig::default()
    };
    let (mounted, control) = match layout {
        Layout::Lfs => {
            let mut lfs = Lfs::mount(disk, options.lfs()).map_err(|e| format!("{name}: {e}"))?;
            tell_orphans(image, lfs.orphan_report(), false);
            tell_fallback(image, &lfs);
            if let Some(policy_name) = cleaner_policy {
                cleaner(policy_name)?.install(&mut lfs);
            }
            let mut fs = FileSystem::new(lfs);
            fs.set_dirhash_options(options.dirhash());
            fs.set_atime_options(atime);
            fs.set_read_only(options.read_only);
            let mounted = fslab_fuse::mount(fs, dir, &config).map_err(|e| e.to_string())?;
            let access = MountAccess(mounted.handle(), options.read_only);
            let control = control(&access, dir, cleaner_policy.unwrap_or("off"));
            if let Some(policy_name) = cleaner_policy {
                let background = Background::spawn(LogAccess(access), cleaner(policy_name)?)
                    .map_err(|e| format!("cannot start the cleaner thread: {e}"))?;
                mounted.stop_before_unmount(move || background.stop());
            }
            (Session::Lfs(mounted), control)
        }
        Layout::Ffs => {
            let ffs = if options.read_only {
                mount_ffs_read_only(image, disk, options)?
            } else {
                let ffs = Ffs::mount(disk, options.ffs()).map_err(|e| ffs_refusal(image, e))?;
                tell_ffs_recovery(image, &ffs);
                ffs
            };
            let mut fs = FileSystem::new(ffs);
            fs.set_dirhash_options(options.dirhash());
            fs.set_atime_options(atime);
            fs.set_read_only(options.read_only);
            let mounted = fslab_fuse::mount(fs, dir, &config).map_err(|e| e.to_string())?;
            let control = control(&MountAccess(mounted.handle(), options.read_only), dir, "off");
            (Session::Ffs(mounted), control)
        }
    };
    // Without the mark (a file system without such locks) another command
    // finding the image locked waits before it says so, instead of at once.
    if let Ok(marks) = mark.and_then(crate::image_lock::ServingMark::set) {
        for mark in marks {
            mounted.keep_while_serving(mark);
        }
    }
    // `umount` finds its helper through this line, which libmount matches
    // with the mount table's entry by its source: the source shown there.
    let shown = PathBuf::from(fslab_fuse::shown_source(&config.source));
    utab::register(&shown, dir);
    Ok(Mount { mounted, lock, log_lock, dir: dir.to_path_buf(), shown, control })
}

/// Mounts a read-only FFS over `disk` (a [`ReadOnlyOverlay`]). An image
/// not unmounted cleanly has stale cylinder groups — its newest inodes may
/// lie past a group's initialised mark, and read as free — so fsck's repair
/// runs first, on the overlay: in memory, as a read-only mount of a
/// journaled file system replays its journal. Where the repair leaves
/// damage, the image is mounted as it is, with a warning.
fn mount_ffs_read_only(image: &Path, disk: Arc<dyn BlockDevice>, options: &Options) -> Result<Ffs, String> {
    let name = image.display();
    let refused =
        match Ffs::mount(disk.clone(), fslab::ffs::MountOptions { allow_unclean: false, ..options.ffs() }) {
            Ok(ffs) => return Ok(ffs),
            Err(e) if e.errno() == libc::EUCLEAN => e,
            Err(e) => return Err(ffs_refusal(image, e)),
        };
    let repair = fslab_check::Options { repair: true, ..fslab_check::Options::default() };
    match fslab_check::fsck(disk.clone(), &repair, &mut |_| {}) {
        Ok(outcome) if outcome.exit_code() <= 1 => {
            say!(
                "fslab: mount: {name} was not unmounted cleanly; repaired in memory for this read-only mount"
            );
        }
        Ok(_) | Err(_) => say!(
            "fslab: mount: warning: {name} ({refused}): damage remains after a repair in memory; \
             mounted read-only as it is"
        ),
    }
    Ffs::mount(disk, options.ffs()).map_err(|e| ffs_refusal(image, e))
}

/// Says on stderr that the newest checkpoint could not be used, which one
/// was, and what that may have lost: whatever the newest recorded that
/// roll-forward from the older one did not find again.
fn tell_fallback(image: &Path, lfs: &Lfs) {
    let Some(f) = lfs.checkpoint_fallback() else { return };
    let name = image.display();
    let gap = f.newest.time.saturating_sub(f.used.time) as f64 / 1e9;
    say!(
        "fslab: mount: warning: {name}: the newest checkpoint ({}) cannot be used: {}; mounted from \
         checkpoint {}, {gap:.0} s older, and rolled forward {} partial segments written after it; \
         changes the newest recorded that those do not hold are lost (run `fslab fsck` after unmounting)",
        f.newest.serial,
        f.why,
        f.used.serial,
        lfs.recovery().applied
    );
}

/// Says on stderr what mount did with the orphans a crash left: how many
/// it freed, and why it stopped if the list was damaged.
fn tell_orphans(image: &Path, report: &fslab::storage::orphans::OrphanReport, scanning: bool) {
    let name = image.display();
    if report.reclaimed > 0 {
        let files = crate::out::count(report.reclaimed, "file", "files");
        say!("fslab: mount: {name}: freed {files} left open and unlinked by a crash");
    }
    match &report.damage {
        // Soft updates write the list in no order: what it no longer
        // reaches is a leak, which the background scan frees.
        Some(why) if scanning => {
            say!("fslab: mount: {name}: the orphan list ended early ({why}); the background scan frees the rest")
        }
        Some(why) => {
            say!("fslab: mount: warning: {name}: {why}; run `fslab fsck --repair {name}` after unmounting")
        }
        None => {}
    }
}

/// What mount did with an FFS a crash left under soft updates: mounted as
/// it is, with a background scan for its leaks, and what the orphan list
/// freed.
fn tell_ffs_recovery(image: &Path, ffs: &Ffs) {
    let scanning = matches!(ffs.leak_report().state, fslab::ffs::LeakScanState::Running { .. });
    if scanning {
        say!(
            "fslab: mount: {}: left by a crash under soft updates, mounted without fsck; a background scan \
             frees what the crash leaked (`fslab stat` shows it)",
            image.display()
        );
    }
    tell_orphans(image, ffs.orphan_report(), scanning);
}

/// Why an FFS image was not mounted, for its user. An image left unclean
/// (a killed daemon, a stopped machine) gets the exact command that makes
/// it mountable again rather than the library's errno.
fn ffs_refusal(image: &Path, error: fslab::Error) -> String {
    let name = image.display();
    if error.errno() == libc::EUCLEAN {
        format!(
            "{name}: the file system was not unmounted cleanly (the daemon was killed or the machine \
             stopped); run `fslab fsck --repair {name}`, then mount it again"
        )
    } else {
        format!("{name}: {error}")
    }
}

/// Says on stderr (while a user still sees it) that the control socket is
/// missing.
fn warn_without_control(mount: &Mount) {
    if let Err(why) = &mount.control {
        say!("fslab: mount: warning: {why}");
    }
}

/// Serves until unmounted; a signal thread unmounts on SIGTERM/SIGINT/SIGHUP/SIGQUIT.
/// Then (the cleaner thread stopped before the final checkpoint) the
/// control socket goes and the image's lock is released.
fn serve(mount: Mount, signals: SigSet) -> Result<(), String> {
    let Mount { mounted, lock, log_lock, dir, shown, control } = mount;
    let unmounter = mounted.unmounter();
    let signal_thread = std::thread::Builder::new().name("fslab-signals".to_string()).spawn(move || loop {
        if signals.wait().is_err() {
            return;
        }
        if let Err(e) = unmounter.unmount() {
            say!("fslab: mount: cannot unmount {}: {e}", unmounter.mountpoint().display());
        }
    });
    let served = match signal_thread {
        Ok(_) => mounted.run().map_err(|e| e.to_string()),
        Err(e) => {
            // The mount ends (its final checkpoint written) before the
            // image's lock is let go below, as after serving.
            drop(mounted);
            Err(format!("cannot start the signal thread: {e}"))
        }
    };
    drop(control);
    utab::unregister(&shown, &dir);
    if let Err(why) = &served {
        // Before the lock goes: `umount` waits for it, then looks here.
        record_unmount_failure(&dir, why);
    }
    drop(log_lock);
    drop(lock);
    served
}

/// Where the daemon serving the mount on `dir` (canonical) leaves why its
/// end failed (its final checkpoint, say), for `umount` to report: beside
/// the control socket, in whichever of its directories can be written.
pub(crate) fn unmount_failure_paths(dir: &Path) -> Vec<PathBuf> {
    fslab_control::socket_path_candidates(dir)
        .into_iter()
        .map(|mut p| {
            p.as_mut_os_string().push(".failed");
            p
        })
        .collect()
}

/// Leaves `why` for the `umount` of `dir` (see [`unmount_failure_paths`]);
/// best effort, as the system log has it too.
fn record_unmount_failure(dir: &Path, why: &str) {
    for path in unmount_failure_paths(dir) {
        let Some(parent) = path.parent() else { continue };
        if fslab_control::private_dir(parent).is_ok() && std::fs::write(&path, why).is_ok() {
            return;
        }
    }
}

/// Takes (reads and removes) what the daemon of the mount on `dir` left of
/// a failed end, if anything.
pub(crate) fn take_unmount_failure(dir: &Path) -> Option<String> {
    unmount_failure_paths(dir).into_iter().find_map(|path| {
        let why = std::fs::read_to_string(&path).ok()?;
        let _ = std::fs::remove_file(&path);
        Some(why)
    })
}

/// Blocks the shutdown signals in this thread and every thread it starts
/// later, so that only the signal thread's `sigwait` receives them.
pub(crate) fn block_signals() -> SigSet {
    let mut set = SigSet::empty();
    // SIGQUIT too (Ctrl-\ on a foreground mount): its default ends the
    // process with no final checkpoint.
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGQUIT] {
        set.add(signal);
    }
    // It fails only for an invalid `how`, and SIG_BLOCK is valid.
    let _ = set.thread_block();
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The help text is written by hand; it must not drift from the policies.
    #[test]
    fn help_names_every_policy_and_the_default() {
        let mut command = <MountArgs as clap::Args>::augment_args(clap::Command::new("mount"));
        let help = command.render_help().to_string();
        for name in policy::NAMES {
            assert!(help.contains(name), "{name} missing from: {help}");
        }
        assert!(help.contains(&format!("default {}", policy::DEFAULT)), "{help}");
    }
}
