//! `fslab mount IMAGE DIR [-o OPTIONS] [-f]`.
//!
//! Foreground (`-f`): mount, serve until unmounted, write the final
//! checkpoint, exit.
//!
//! Background (the default): fork. The child starts a new session, mounts,
//! and only once the kernel has accepted the mount writes "ready" into a pipe
//! (or the error that stopped it), points standard input and output at
//! /dev/null and standard error at the system log, and serves. The parent
//! waits on the pipe and exits 0 only after "ready", so the command returns
//! exactly when the mount is usable.
//!
//! Cleaning: unless `-o cleaner=off`, the file system gets a cleaner of the
//! chosen policy twice over: one writers run themselves when they are short
//! of clean segments, and a background thread that cleans towards the
//! high-water mark between requests. The control socket
//! (`fslab_cleaner::control`) serves `fslab clean` and `fslab stat`; it and
//! the thread start before "ready", so both commands work as soon as the
//! mount command returns.
//!
//! Shutdown: `umount`/`fusermount3 -u` ends the FUSE session; SIGTERM,
//! SIGINT and SIGHUP make a dedicated thread unmount the directory, which
//! ends it the same way. Either way the final checkpoint is written once, by
//! `fslab_fuse::Mounted::run`, before the process exits.

use crate::size::parse_size;
use clap::Args;
use disk::FileDisk;
use fslab::lfs::{Lfs, MountOptions};
use fslab::ufs::{DirhashOptions, FileSystem};
use fslab::Result as FsResult;
use fslab_cleaner::background::Background;
use fslab_cleaner::control::{DirhashReport, Server};
use fslab_cleaner::{policy, Cleaner, LfsAccess};
use fslab_fuse::{FsHandle, MountConfig, Mounted};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `fslab mount`.
#[derive(Args)]
pub struct MountArgs {
    /// The image file or block device holding the file system.
    image: PathBuf,
    /// The directory to mount it on.
    dir: PathBuf,
    /// Comma-separated options: allow_other, cache=SIZE (e.g. 256M), checkpoint=SECONDS,
    /// cleaner=POLICY|off (greedy, cost-benefit or hot-cold; default hot-cold),
    /// dirhash=on|off (default on), dirhash_maxmem=SIZE (default 2M),
    /// dirhash_minsize=SIZE (default 2560), dirhash_check (cross-check every
    /// dirhash answer against the directory blocks; slow).
    #[arg(short = 'o', value_name = "OPTIONS")]
    options: Vec<String>,
    /// Stay in the foreground until unmounted.
    #[arg(short = 'f', long = "foreground")]
    foreground: bool,
}

/// Everything the options say.
#[derive(Debug, PartialEq)]
struct Options {
    allow_other: bool,
    storage: MountOptions,
    /// The cleaner's policy (one of `policy::NAMES`), or `None`: no cleaner.
    cleaner: Option<&'static str>,
    /// Directory hashing (2002 paper §3).
    dirhash: DirhashOptions,
}

fn parse_options(lists: &[String]) -> Result<Options, String> {
    let mut options = Options {
        allow_other: false,
        storage: MountOptions::default(),
        cleaner: Some(policy::DEFAULT),
        dirhash: DirhashOptions::default(),
    };
    for option in lists.iter().flat_map(|list| list.split(',')).filter(|o| !o.is_empty()) {
        let (key, value) = match option.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (option, None),
        };
        match (key, value) {
            ("allow_other", None) => options.allow_other = true,
            ("rw", None) => {}
            ("ro", None) => return Err("read-only mounts are not supported yet (option 'ro')".to_string()),
            ("cache", Some(size)) => {
                options.storage.cache_bytes = parse_size(size).map_err(|e| format!("option cache: {e}"))?
            }
            ("checkpoint", Some(seconds)) => {
                let seconds: u64 = seconds.parse().ok().filter(|&s| s > 0).ok_or_else(|| {
                    format!("option checkpoint: '{seconds}' is not a positive number of seconds")
                })?;
                options.storage.checkpoint_interval = Duration::from_secs(seconds);
            }
            ("cleaner", Some("off")) => options.cleaner = None,
            ("cleaner", Some(name)) => {
                options.cleaner =
                    Some(policy::NAMES.iter().copied().find(|&n| n == name).ok_or_else(|| {
                        format!(
                            "option cleaner: unknown policy '{name}' (use {} or off)",
                            policy::NAMES.join(", ")
                        )
                    })?)
            }
            ("dirhash", Some("on")) => options.dirhash.enabled = true,
            ("dirhash", Some("off")) => options.dirhash.enabled = false,
            ("dirhash", Some(other)) => return Err(format!("option dirhash: '{other}' is not on or off")),
            ("dirhash_maxmem", Some(size)) => {
                options.dirhash.max_memory =
                    parse_size(size).map_err(|e| format!("option dirhash_maxmem: {e}"))?
            }
            ("dirhash_minsize", Some(size)) => {
                options.dirhash.min_dir_size =
                    parse_size(size).map_err(|e| format!("option dirhash_minsize: {e}"))?
            }
            ("dirhash_check", None) => options.dirhash.check = true,
            ("cache" | "checkpoint" | "cleaner" | "dirhash" | "dirhash_maxmem" | "dirhash_minsize", None) => {
                return Err(format!("option {key} needs a value ({key}=...)"))
            }
            ("allow_other" | "rw" | "ro" | "dirhash_check", Some(_)) => {
                return Err(format!("option {key} takes no value"))
            }
            _ => return Err(format!("unknown mount option '{option}'")),
        }
    }
    Ok(options)
}

/// Mounts, in the foreground or the background.
pub fn run(args: &MountArgs) -> Result<(), String> {
    let options = parse_options(&args.options)?;
    // Canonical paths: the background process changes directory to "/".
    let image = args.image.canonicalize().map_err(|e| format!("{}: {e}", args.image.display()))?;
    let dir = args.dir.canonicalize().map_err(|e| format!("mount point {}: {e}", args.dir.display()))?;
    if !dir.is_dir() {
        return Err(format!("mount point {} is not a directory", dir.display()));
    }
    if args.foreground {
        let signals = block_signals();
        let mount = mount(&image, &dir, &options)?;
        warn_without_control(&mount);
        serve(mount, signals)
    } else {
        background(&image, &dir, &options)
    }
}

/// A mount and what runs beside it, until it is unmounted.
struct Mount {
    mounted: Mounted<Lfs>,
    /// The image's lock: held until the final checkpoint is written.
    lock: File,
    /// The control socket, if it could be made.
    control: Result<Server, String>,
    /// The background cleaner, unless `cleaner=off`.
    background: Option<Background>,
}

/// The cleaner's way into the mounted file system: one call under the
/// mount's lock, like one kernel request.
#[derive(Clone)]
struct MountAccess(FsHandle<Lfs>);

impl LfsAccess for MountAccess {
    fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> FsResult<R>) -> FsResult<R> {
        self.0.with(|fs| op(fs.storage()))
    }

    fn dirhash_report(&self) -> FsResult<Option<DirhashReport>> {
        self.0.with(|fs| Ok(Some(DirhashReport { options: fs.dirhash_options(), stats: fs.dirhash_stats() })))
    }
}

/// The cleaner of `policy_name`, a name `parse_options` accepted.
fn cleaner(policy_name: &str) -> Result<Cleaner, String> {
    policy::by_name(policy_name)
        .map(Cleaner::new)
        .ok_or_else(|| format!("option cleaner: unknown policy '{policy_name}'"))
}

/// Locks the image, mounts the storage manager and the FUSE session, then
/// starts the control socket and the background cleaner.
fn mount(image: &Path, dir: &Path, options: &Options) -> Result<Mount, String> {
    let name = image.display();
    let lock = crate::image_lock::lock(image).map_err(|e| format!("{name}: {e}"))?;
    let disk = FileDisk::open(image).map_err(|e| format!("{name}: {e}"))?;
    let mut lfs = Lfs::mount(Arc::new(disk), options.storage).map_err(|e| format!("{name}: {e}"))?;
    if let Some(policy_name) = options.cleaner {
        cleaner(policy_name)?.install(&mut lfs);
    }
    let config = MountConfig { allow_other: options.allow_other, ..MountConfig::default() };
    let mut fs = FileSystem::new(lfs);
    fs.set_dirhash_options(options.dirhash);
    let mounted = fslab_fuse::mount(fs, dir, &config).map_err(|e| e.to_string())?;
    // Without the mark (a file system without such locks) another command
    // finding the image locked waits before it says so, instead of at once.
    if let Ok(mark) = crate::image_lock::mark_serving(image) {
        mounted.keep_while_serving(mark);
    }
    let access = MountAccess(mounted.handle());
    // Without the socket the mount still works; only `fslab clean` and
    // `fslab stat` do not (the caller warns).
    let control = Server::start(access.clone(), dir, options.cleaner.unwrap_or("off"))
        .map_err(|e| format!("no control socket, so fslab clean and fslab stat will not work: {e}"));
    let background = match options.cleaner {
        Some(policy_name) => Some(
            Background::spawn(access, cleaner(policy_name)?)
                .map_err(|e| format!("cannot start the cleaner thread: {e}"))?,
        ),
        None => None,
    };
    Ok(Mount { mounted, lock, control, background })
}

/// Says on stderr (while a user still sees it) that the control socket is
/// missing.
fn warn_without_control(mount: &Mount) {
    if let Err(why) = &mount.control {
        eprintln!("fslab: mount: warning: {why}");
    }
}

/// Serves until unmounted; a signal thread unmounts on SIGTERM/SIGINT/SIGHUP.
/// Then the control socket goes, the cleaner thread stops (it found the
/// file system gone already) and the image's lock is released.
fn serve(mount: Mount, signals: libc::sigset_t) -> Result<(), String> {
    let Mount { mounted, lock, control, background } = mount;
    let unmounter = mounted.unmounter();
    std::thread::Builder::new()
        .name("fslab-signals".to_string())
        .spawn(move || loop {
            let mut signal = 0;
            // SAFETY: `signals` is an initialized set; `signal` outlives the call.
            if unsafe { libc::sigwait(&signals, &mut signal) } != 0 {
                return;
            }
            if let Err(e) = unmounter.unmount() {
                eprintln!("fslab: mount: cannot unmount {}: {e}", unmounter.mountpoint().display());
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;
    let served = mounted.run().map_err(|e| e.to_string());
    drop(control);
    if let Some(background) = background {
        background.stop();
    }
    drop(lock);
    served
}

/// Blocks the shutdown signals in this thread and every thread it starts
/// later, so that only the signal thread's `sigwait` receives them.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data that sigemptyset initializes; the
    // calls only read and write the set and this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

const READY: &str = "ready";

/// Forks; returns in the parent once the child reports "ready" or an error.
fn background(image: &Path, dir: &Path, options: &Options) -> Result<(), String> {
    let (mut from_child, to_parent) = pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: this process has started no threads yet, so the child is a
    // faithful single-threaded copy.
    match unsafe { libc::fork() } {
        -1 => Err(format!("cannot fork: {}", std::io::Error::last_os_error())),
        0 => {
            drop(from_child);
            std::process::exit(child(to_parent, image, dir, options))
        }
        child_pid => {
            drop(to_parent);
            let mut message = String::new();
            let _ = from_child.read_to_string(&mut message);
            match message.trim_end() {
                READY => Ok(()),
                "" => {
                    let mut status = 0;
                    // SAFETY: waits for our own child; `status` outlives the call.
                    unsafe { libc::waitpid(child_pid, &mut status, 0) };
                    Err("the file-system process died before the mount was ready".to_string())
                }
                error => Err(error.to_string()),
            }
        }
    }
}

/// The background process: mount, report, serve. Returns the exit status.
fn child(mut to_parent: File, image: &Path, dir: &Path, options: &Options) -> i32 {
    // SAFETY: plain system calls with no memory arguments.
    unsafe { libc::setsid() };
    let _ = std::env::set_current_dir("/");
    let signals = block_signals();
    let mounted = std::panic::catch_unwind(|| mount(image, dir, options));
    let mount = match mounted {
        Ok(Ok(mount)) => mount,
        Ok(Err(message)) => {
            let _ = to_parent.write_all(message.as_bytes());
            return 1;
        }
        Err(panic) => {
            let message = format!("internal error: {}", crate::panic_message(panic.as_ref()));
            let _ = to_parent.write_all(message.as_bytes());
            return 1;
        }
    };
    warn_without_control(&mount);
    // Nobody reads our output any more; and a caller capturing it must see
    // end-of-file when the parent exits. What the process still has to say
    // (a cleaner that stopped, say) goes to the system log.
    detach_stdio();
    stderr_to_syslog();
    let _ = to_parent.write_all(READY.as_bytes());
    drop(to_parent);
    match serve(mount, signals) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// A pipe whose ends are closed on exec (no helper program inherits them).
fn pipe() -> std::io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and ours alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((File::from(read), File::from(write)))
}

/// Points standard input, output and error at /dev/null.
fn detach_stdio() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        for fd in 0..=2 {
            // SAFETY: both descriptors are open; dup2 replaces `fd` atomically.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// Points standard error at a pipe whose lines a thread passes to syslog
/// (identity "fslab", facility daemon, level warning: `journalctl -t
/// fslab`). Where there is no system log, they are lost, as they were on
/// /dev/null.
fn stderr_to_syslog() {
    use std::os::fd::AsRawFd;
    let Ok((read, write)) = pipe() else { return };
    // openlog keeps the pointer: the identity must outlive every syslog call.
    static IDENT: &[u8] = b"fslab\0";
    // SAFETY: IDENT is NUL-terminated and 'static; dup2 replaces descriptor 2
    // with the pipe's write end, both open.
    unsafe {
        libc::openlog(IDENT.as_ptr().cast(), libc::LOG_PID, libc::LOG_DAEMON);
        libc::dup2(write.as_raw_fd(), 2);
    }
    drop(write);
    let forwarding = std::thread::Builder::new().name("fslab-log".into()).spawn(move || {
        forward_lines(read, |line| {
            let Ok(line) = std::ffi::CString::new(line) else { return };
            // SAFETY: both strings are NUL-terminated; "%s" takes one.
            unsafe { libc::syslog(libc::LOG_WARNING, c"%s".as_ptr(), line.as_ptr()) };
        })
    });
    if forwarding.is_err() {
        // No reader: a write to the pipe would fail, and eprintln! panic.
        detach_stdio();
    }
}

/// Hands each line `from` yields to `sink`, without its newline or the
/// "fslab: " that every message starts with (the log names the program),
/// until end of file. It must not stop earlier: with the pipe's reader gone
/// a write to standard error fails, and `eprintln!` panics.
fn forward_lines(from: impl Read, mut sink: impl FnMut(&str)) {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\n');
        let text = text.strip_prefix("fslab: ").unwrap_or(text);
        if !text.is_empty() {
            sink(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_of_standard_error_becomes_one_log_message() {
        let said =
            b"fslab: cleaner (greedy): segment 7 holds a block that cannot be read\n\nbad \xff byte\nlast";
        let mut logged = Vec::new();
        forward_lines(&said[..], |line| logged.push(line.to_string()));
        assert_eq!(
            logged,
            ["cleaner (greedy): segment 7 holds a block that cannot be read", "bad \u{fffd} byte", "last"],
            "a line that is not UTF-8 does not end the forwarding"
        );
    }

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

    #[test]
    fn options_parse_and_unknown_ones_are_refused() {
        let parsed = parse_options(&["allow_other,cache=64M".to_string(), "checkpoint=5".to_string()]);
        let expected = Options {
            allow_other: true,
            storage: MountOptions { cache_bytes: 64 << 20, checkpoint_interval: Duration::from_secs(5) },
            cleaner: Some(policy::DEFAULT),
            dirhash: DirhashOptions::default(),
        };
        assert_eq!(parsed, Ok(expected));
        assert_eq!(parse_options(&[]).map(|o| o.allow_other), Ok(false));
        assert_eq!(parse_options(&["cleaner=off".to_string()]).map(|o| o.cleaner), Ok(None));
        for name in policy::NAMES {
            assert_eq!(parse_options(&[format!("cleaner={name}")]).map(|o| o.cleaner), Ok(Some(*name)));
        }
        let dirhash =
            parse_options(&["dirhash=off,dirhash_maxmem=64M,dirhash_minsize=16K,dirhash_check".to_string()])
                .map(|o| o.dirhash);
        let want =
            DirhashOptions { enabled: false, max_memory: 64 << 20, min_dir_size: 16 << 10, check: true };
        assert_eq!(dirhash, Ok(want));
        assert_eq!(parse_options(&["dirhash=on".to_string()]).map(|o| o.dirhash.enabled), Ok(true));
        for bad in [
            "dirhash",
            "dirhash=maybe",
            "dirhash_maxmem=lots",
            "dirhash_minsize",
            "dirhash_check=1",
            "bogus",
            "cache",
            "cache=lots",
            "checkpoint=0",
            "checkpoint=-1",
            "allow_other=1",
            "ro",
            "cleaner",
            "cleaner=nonsense",
        ] {
            assert!(parse_options(&[bad.to_string()]).is_err(), "{bad}");
        }
    }
}
