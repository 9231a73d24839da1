//! Shared helpers for the FUSE integration tests of the `fslab` binary.
//!
//! * [`fuse_or_skip`] — whether this machine can mount FUSE file systems; prints
//!   "skipped: ..." when not, so a test can return early.
//! * [`run`] / [`run_sh`] — run a program (or a shell pipeline) with a timeout; a
//!   program that overruns is killed together with its process group.
//! * [`mkfs`] — make an image with `fslab mkfs`.
//! * [`Mount`] — mount an image (foreground or background daemon), and unmount it
//!   waiting for the daemon to exit. Its `Drop` always unmounts lazily
//!   (`fusermount3 -uz`) and kills the daemon it started if needed, so a failing
//!   test never leaves a mount behind. A watchdog kills a daemon that hangs, so a
//!   blocked system call fails with ENOTCONN instead of hanging the suite.
//! * [`Rng`] — a tiny seeded generator (SplitMix64) for reproducible contents.

#![allow(dead_code)]

use fslab_bench::splitmix::SplitMix64;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// The `fslab` binary under test.
pub fn fslab() -> &'static str {
    env!("CARGO_BIN_EXE_fslab")
}

/// Whether `prog` is found on `PATH`.
pub fn have(prog: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| {
        let p = dir.join(prog);
        p.is_file() && std::fs::metadata(&p).map(|m| is_executable(&m)).unwrap_or(false)
    })
}

fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

thread_local! {
    /// The `transport=` every mount this thread makes asks for: the
    /// classic loop unless [`over_ring`] says otherwise, so that a test
    /// setting the kernel's `enable_uring` changes no other test's.
    static TRANSPORT: std::cell::Cell<&'static str> = const { std::cell::Cell::new("device") };
}

/// What [`Mount`] adds to ask for this thread's transport.
fn transport_args() -> [String; 2] {
    ["-o".to_string(), format!("transport={}", TRANSPORT.with(|t| t.get()))]
}

/// Runs `work` with every mount this thread makes served over FUSE over
/// io_uring (`-o transport=ring`), with the kernel's `enable_uring` set
/// meanwhile and put back after; skips (returns false) where that cannot
/// be had: not root, no FUSE over io_uring in this kernel, or io_uring
/// forbidden here.
#[allow(dead_code)]
pub fn over_ring(work: impl FnOnce()) -> bool {
    const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: setting {ENABLE_URING} needs root");
        return false;
    }
    if std::fs::read_to_string(ENABLE_URING).is_err() {
        println!("skipped: this kernel has no FUSE over io_uring ({ENABLE_URING} is missing)");
        return false;
    }
    if let Err(e) = fslab_fuse::kernel::queue::rings_allowed() {
        println!("skipped: io_uring is not allowed here: {e}");
        return false;
    }
    // Tests run on several threads: the setting is put back only when
    // the last of them that needed it is done (one that put it back while
    // another was still mounting made that mount fail), and to what it
    // was before the first. (users, the setting before the first)
    static USERS: std::sync::Mutex<(usize, String)> = std::sync::Mutex::new((0, String::new()));
    fn users() -> std::sync::MutexGuard<'static, (usize, String)> {
        USERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    {
        let mut held = users();
        if held.0 == 0 {
            let before = std::fs::read_to_string(ENABLE_URING).unwrap_or_default();
            if std::fs::write(ENABLE_URING, "Y").is_err() {
                println!("skipped: {ENABLE_URING} cannot be set");
                return false;
            }
            held.1 = before.trim().to_string();
        }
        held.0 += 1;
    }
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let mut held = users();
            held.0 -= 1;
            if held.0 == 0 {
                let _ = std::fs::write(ENABLE_URING, &held.1);
            }
            TRANSPORT.with(|t| t.set("device"));
        }
    }
    let _restore = Restore;
    TRANSPORT.with(|t| t.set("ring"));
    work();
    true
}

/// True when FUSE tests can run; otherwise prints why they are skipped.
pub fn fuse_or_skip() -> bool {
    if Path::new("/dev/fuse").exists() && have("fusermount3") {
        true
    } else {
        println!("skipped: no /dev/fuse or fusermount3");
        eprintln!("skipped: no /dev/fuse or fusermount3");
        false
    }
}

/// What a finished (or killed) program left behind.
#[derive(Debug)]
pub struct Run {
    /// `None` when the program was killed on timeout.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl Run {
    pub fn success(&self) -> bool {
        self.status.map(|s| s.success()).unwrap_or(false)
    }

    /// A one-paragraph description for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "status {:?}{} after {:.1}s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            if self.timed_out { " (TIMED OUT, killed)" } else { "" },
            self.elapsed.as_secs_f64(),
            tail(&self.stdout, 4000),
            tail(&self.stderr, 4000)
        )
    }
}

fn tail(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut start = s.len() - n;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Runs `cmd` with stdin closed, capturing its output, killing its whole process
/// group if it runs longer than `timeout`.
pub fn run_cmd(mut cmd: Command, timeout: Duration) -> Run {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Run {
                status: None,
                stdout: String::new(),
                stderr: format!("cannot start {cmd:?}: {e}"),
                timed_out: false,
                elapsed: start.elapsed(),
            }
        }
    };
    let out = child.stdout.take().map(reader_thread);
    let err = child.stderr.take().map(reader_thread);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        if start.elapsed() > timeout {
            timed_out = true;
            kill_group(child.id() as i32);
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let stdout = out.map(|h| h.join().unwrap_or_default()).unwrap_or_default();
    let stderr = err.map(|h| h.join().unwrap_or_default()).unwrap_or_default();
    Run { status, stdout, stderr, timed_out, elapsed: start.elapsed() }
}

fn reader_thread<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn kill_group(pgid: i32) {
    // The group was made for our own child (process_group(0) above).
    if let Some(pgid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

/// Runs `prog args...` with a timeout.
pub fn run<S: AsRef<OsStr>>(prog: &str, args: &[S], timeout: Duration) -> Run {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    run_cmd(cmd, timeout)
}

/// Runs a shell script with `sh -c` in `cwd` with a timeout.
pub fn run_sh(script: &str, cwd: &Path, timeout: Duration) -> Run {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).current_dir(cwd);
    run_cmd(cmd, timeout)
}

/// Runs a shell script and panics (with its output) unless it succeeds.
#[track_caller]
pub fn sh_ok(script: &str, cwd: &Path, timeout: Duration) -> String {
    let r = run_sh(script, cwd, timeout);
    assert!(r.success(), "command failed: {script}\n{}", r.describe());
    r.stdout
}

/// Runs `fslab args...` with a timeout.
pub fn fslab_run<S: AsRef<OsStr>>(args: &[S], timeout: Duration) -> Run {
    run(fslab(), args, timeout)
}

/// `fslab mkfs IMAGE --size SIZE [extra...]`; panics on failure.
#[track_caller]
pub fn mkfs(image: &Path, size: &str, extra: &[&str]) {
    let mut args: Vec<&OsStr> =
        vec![OsStr::new("mkfs"), image.as_os_str(), OsStr::new("--size"), OsStr::new(size)];
    args.extend(extra.iter().map(OsStr::new));
    let r = fslab_run(&args, Duration::from_secs(60));
    assert!(r.success(), "fslab mkfs {} --size {size} {extra:?} failed: {}", image.display(), r.describe());
}

/// Whether `dir` is a mount point now (per /proc/self/mountinfo).
pub fn is_mounted(dir: &Path) -> bool {
    mounts_at(dir) > 0
}

/// How many mounts are stacked on `dir` now (per /proc/self/mountinfo).
pub fn mounts_at(dir: &Path) -> usize {
    let want = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else { return 0 };
    info.lines()
        .filter(|line| {
            line.split(' ').nth(4).map(|mp| Path::new(&unescape_mount(mp)) == want).unwrap_or(false)
        })
        .count()
}

/// Undoes the octal escapes (`\040` for a space, ...) of /proc/self/mountinfo.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Processes (other than this one) that hold `image` open.
pub fn image_users(image: &Path) -> Vec<i32> {
    let want = std::fs::canonicalize(image).unwrap_or_else(|_| image.to_path_buf());
    let me = std::process::id() as i32;
    let mut pids = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return pids };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == me || is_zombie(pid) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
        if fds.flatten().any(|fd| std::fs::read_link(fd.path()).map(|t| t == want).unwrap_or(false)) {
            pids.push(pid);
        }
    }
    pids
}

/// Whether `pid` is gone or a zombie (exited, not yet reaped).
pub fn is_zombie(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(s) => s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')).unwrap_or(false),
        Err(_) => true,
    }
}

fn pid_gone(pid: i32) -> bool {
    is_zombie(pid)
}

fn sigkill(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Whether output shows a panic (the CLI's hook prints "internal error").
pub fn has_panic(text: &str) -> bool {
    ["panicked", "stack backtrace", "internal error"].iter().any(|p| text.contains(p))
}

/// How the daemon is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `fslab mount IMAGE DIR -f`, a child of the test.
    Foreground,
    /// `fslab mount IMAGE DIR`, which returns once the mount is ready.
    Background,
}

/// Why a mount did not become ready.
#[derive(Debug)]
pub struct MountFailure {
    pub reason: String,
    /// The exit status of `fslab mount`, if it exited.
    pub status: Option<ExitStatus>,
    /// What it printed (stderr; the log in foreground mode).
    pub output: String,
}

impl std::fmt::Display for MountFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (status {:?}); output:\n{}", self.reason, self.status, tail(&self.output, 4000))
    }
}

/// A mounted image. Dropping it unmounts lazily and stops the daemon.
pub struct Mount {
    pub image: PathBuf,
    pub dir: PathBuf,
    pub mode: Mode,
    child: Option<Child>,
    pid: Option<i32>,
    log: PathBuf,
    mounted: bool,
    watchdog: Option<Arc<AtomicBool>>,
}

/// How long a mount may take to become ready.
pub const MOUNT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the daemon may take to exit after `fusermount3 -u`.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(90);
/// Default watchdog: a mount living longer than this is killed.
pub const WATCHDOG: Duration = Duration::from_secs(240);

impl Mount {
    /// Mounts `image` on `dir` (created if missing) with extra `fslab mount`
    /// arguments (e.g. `["-o", "cache=64M"]`). Panics if the mount does not
    /// become ready.
    #[track_caller]
    pub fn new(image: &Path, dir: &Path, mode: Mode, extra: &[&str]) -> Mount {
        match Mount::try_new(image, dir, mode, extra) {
            Ok(m) => m,
            Err(e) => panic!("mount of {} on {} failed: {e}", image.display(), dir.display()),
        }
    }

    /// Like [`Mount::new`] but returns the failure.
    pub fn try_new(image: &Path, dir: &Path, mode: Mode, extra: &[&str]) -> Result<Mount, MountFailure> {
        let fail = |reason: String| MountFailure { reason, status: None, output: String::new() };
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("mkdir {}: {e}", dir.display())))?;
        let dir =
            std::fs::canonicalize(dir).map_err(|e| fail(format!("canonicalize {}: {e}", dir.display())))?;
        let image = std::fs::canonicalize(image).unwrap_or_else(|_| image.to_path_buf());
        let log = dir.with_extension("mount.log");
        // A mount may go on top of others: it is ready when one more is there.
        let below = mounts_at(&dir);
        let mut m = Mount {
            image: image.clone(),
            dir: dir.clone(),
            mode,
            child: None,
            pid: None,
            log: log.clone(),
            mounted: false,
            watchdog: None,
        };
        match mode {
            Mode::Foreground => {
                let logf = std::fs::File::create(&log)
                    .map_err(|e| fail(format!("create {}: {e}", log.display())))?;
                let logf2 = logf.try_clone().map_err(|e| fail(format!("dup log: {e}")))?;
                let mut cmd = Command::new(fslab());
                cmd.arg("mount").arg(&image).arg(&dir).args(extra).args(transport_args()).arg("-f");
                cmd.stdin(Stdio::null()).stdout(logf).stderr(logf2);
                let child = cmd.spawn().map_err(|e| fail(format!("spawn fslab mount: {e}")))?;
                m.pid = Some(child.id() as i32);
                m.child = Some(child);
                let start = Instant::now();
                loop {
                    if mounts_at(&dir) > below {
                        m.mounted = true;
                        break;
                    }
                    if let Some(c) = m.child.as_mut() {
                        if let Ok(Some(st)) = c.try_wait() {
                            m.child = None;
                            m.pid = None;
                            return Err(MountFailure {
                                reason: "daemon exited before the mount was ready".into(),
                                status: Some(st),
                                output: m.log(),
                            });
                        }
                    }
                    if start.elapsed() > MOUNT_TIMEOUT {
                        return Err(MountFailure {
                            reason: format!("not mounted after {MOUNT_TIMEOUT:?}"),
                            status: None,
                            output: m.log(),
                        });
                    }
                    thread::sleep(Duration::from_millis(20));
                }
            }
            Mode::Background => {
                let transport = transport_args();
                let mut args: Vec<&OsStr> = vec![OsStr::new("mount"), image.as_os_str(), dir.as_os_str()];
                args.extend(extra.iter().map(OsStr::new));
                args.extend(transport.iter().map(OsStr::new));
                // The daemon's messages go beside the mount point, not to
                // the system log (or, without one, to /var/log/fslab).
                let log_option = format!("log={}", log.display());
                args.extend([OsStr::new("-o"), OsStr::new(&log_option)]);
                let r = fslab_run(&args, MOUNT_TIMEOUT);
                // Mark mounted before checking, so Drop cleans up whatever happened.
                m.mounted = mounts_at(&dir) > below;
                m.pid = image_users(&image).first().copied();
                if !r.success() {
                    let reason = if r.timed_out { "fslab mount timed out" } else { "fslab mount failed" };
                    return Err(MountFailure { reason: reason.into(), status: r.status, output: r.stderr });
                }
                if !m.mounted {
                    return Err(fail(format!(
                        "fslab mount returned 0 but {} is not a mount point",
                        dir.display()
                    )));
                }
                let mount_output = format!("{}{}", r.stdout, r.stderr);
                let appended = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&log)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, mount_output.as_bytes()));
                appended.ok();
            }
        }
        m.arm_watchdog(WATCHDOG);
        Ok(m)
    }

    /// The daemon's output so far (its standard error in the foreground,
    /// its log file in the background).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The daemon's pid, if known.
    pub fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// (Re)arms the watchdog: after `limit` the daemon is killed and the mount
    /// detached, so any blocked system call returns (with ENOTCONN).
    pub fn arm_watchdog(&mut self, limit: Duration) {
        if let Some(old) = self.watchdog.take() {
            old.store(true, Ordering::SeqCst);
        }
        let cancel = Arc::new(AtomicBool::new(false));
        self.watchdog = Some(cancel.clone());
        let pid = self.pid;
        let dir = self.dir.clone();
        thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < limit {
                if cancel.load(Ordering::SeqCst) {
                    return;
                }
                thread::sleep(Duration::from_millis(100));
            }
            if cancel.load(Ordering::SeqCst) {
                return;
            }
            eprintln!(
                "WATCHDOG: mount on {} still alive after {limit:?}; killing daemon {pid:?}",
                dir.display()
            );
            if let Some(pid) = pid {
                sigkill(pid);
            }
            let _ = run("fusermount3", &[OsStr::new("-uz"), dir.as_os_str()], Duration::from_secs(10));
        });
    }

    fn disarm(&mut self) {
        if let Some(w) = self.watchdog.take() {
            w.store(true, Ordering::SeqCst);
        }
    }

    /// `fusermount3 -u DIR`, then waits for the daemon to exit. Returns an error
    /// if the unmount fails, the daemon does not exit in time, or (foreground)
    /// exits unsuccessfully.
    pub fn unmount(mut self) -> Result<(), String> {
        // Drop still runs afterwards and cleans up whatever this left behind.
        self.unmount_inner()
    }

    /// For when something else unmounted the directory (umount, SIGTERM):
    /// waits for the daemon to exit, successfully (foreground) and in time.
    pub fn wait_exit(mut self) -> Result<(), String> {
        self.disarm();
        let r = self.wait_daemon(EXIT_TIMEOUT);
        if r.is_ok() {
            self.mounted = is_mounted(&self.dir);
            if self.mounted {
                return Err(format!("daemon exited but {} is still mounted", self.dir.display()));
            }
        }
        r
    }

    fn unmount_inner(&mut self) -> Result<(), String> {
        // "Device or resource busy" can linger for a moment after the last close.
        let start = Instant::now();
        loop {
            let r = run("fusermount3", &[OsStr::new("-u"), self.dir.as_os_str()], Duration::from_secs(60));
            if r.success() {
                break;
            }
            if start.elapsed() > Duration::from_secs(10) {
                return Err(format!("fusermount3 -u {} failed: {}", self.dir.display(), r.describe()));
            }
            thread::sleep(Duration::from_millis(200));
        }
        self.mounted = false;
        self.disarm();
        self.wait_daemon(EXIT_TIMEOUT)
    }

    fn wait_daemon(&mut self, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        if let Some(mut child) = self.child.take() {
            loop {
                match child.try_wait() {
                    Ok(Some(st)) => {
                        self.pid = None;
                        let log = self.log();
                        return if st.success() && !has_panic(&log) {
                            Ok(())
                        } else if st.success() {
                            Err(format!("daemon exited 0 but reported a panic: {}", tail(&log, 4000)))
                        } else {
                            Err(format!("daemon exited with {st} after unmount: {}", self.log()))
                        };
                    }
                    Ok(None) => {}
                    Err(e) => return Err(format!("wait for daemon: {e}")),
                }
                if start.elapsed() > limit {
                    self.child = Some(child);
                    return Err(format!("daemon still running {limit:?} after unmount: {}", self.log()));
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        // Background: wait until nobody holds the image open.
        loop {
            let pid_alive = self.pid.map(|p| !pid_gone(p)).unwrap_or(false);
            if !pid_alive && image_users(&self.image).is_empty() {
                self.pid = None;
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(format!(
                    "daemon (pid {:?}) still holds {} {limit:?} after unmount",
                    self.pid,
                    self.image.display()
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.disarm();
        // Only its own mount: whatever else is mounted there (a test's
        // tmpfs, another fslab) is not this one's to remove.
        if self.mounted {
            let _ = run("fusermount3", &[OsStr::new("-uz"), self.dir.as_os_str()], Duration::from_secs(20));
            self.mounted = false;
        }
        let daemon_known = self.child.is_some() || self.pid.is_some();
        if daemon_known && self.wait_daemon(Duration::from_secs(10)).is_err() {
            if let Some(pid) = self.pid {
                sigkill(pid);
            }
            if let Some(mut c) = self.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// The lab's SplitMix64 ([`fslab_bench::splitmix`]), for reproducible file
/// contents: the damaged-image tests flip the bits it picks, and what fsck
/// must find follows from them.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// By a remainder, not the lab's multiplication: the tests' images were
    /// made with this choice of values.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.fill(&mut v);
        v
    }
}

/// The errno of an `io::Error`, or -1.
pub fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

/// The name of an errno value, for messages.
pub fn errno_name(n: i32) -> String {
    let s = std::io::Error::from_raw_os_error(n);
    format!("{n} ({s})")
}

/// Asserts two multi-line texts are equal; on failure shows only the lines
/// that differ (at most 20 of each side), not both texts in full.
#[track_caller]
pub fn assert_lines_eq(got: &str, want: &str, what: &str) {
    if got == want {
        return;
    }
    let g: std::collections::BTreeSet<&str> = got.lines().collect();
    let w: std::collections::BTreeSet<&str> = want.lines().collect();
    let extra: Vec<&&str> = g.difference(&w).take(20).collect();
    let missing: Vec<&&str> = w.difference(&g).take(20).collect();
    panic!(
        "{what}: {} lines vs {} expected; {} unexpected, {} missing\nunexpected (first 20): {extra:#?}\nmissing (first 20): {missing:#?}",
        got.lines().count(),
        want.lines().count(),
        g.difference(&w).count(),
        w.difference(&g).count()
    );
}

/// The layouts, and FFS's integrity modes, that the layout-generic tests run
/// on: each such test runs once on each (see [`on_every_layout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The log-structured file system.
    Lfs,
    /// FFS with synchronous, ordered metadata writes.
    FfsSync,
    /// FFS with every write delayed.
    FfsAsync,
    /// FFS with soft updates: writes delayed, in an order that keeps the
    /// image consistent.
    FfsSoftdep,
    /// FFS with its journal: a `file` log, asynchronous commits.
    FfsJournal,
}

impl Layout {
    /// What `fslab mkfs` needs to make this layout.
    pub fn mkfs_args(self) -> &'static [&'static str] {
        match self {
            Layout::Lfs => &[],
            Layout::FfsSync | Layout::FfsAsync | Layout::FfsSoftdep => &["--layout", "ffs"],
            Layout::FfsJournal => &["--layout", "ffs", "--journal", "file"],
        }
    }

    /// What `fslab mount` needs for this mode.
    pub fn mount_args(self) -> &'static [&'static str] {
        match self {
            Layout::Lfs => &[],
            Layout::FfsSync => &["-o", "integrity=sync"],
            Layout::FfsAsync => &["-o", "integrity=async"],
            Layout::FfsSoftdep => &["-o", "integrity=softdep"],
            Layout::FfsJournal => &["-o", "integrity=journal"],
        }
    }

    /// Whether this is LFS (some behaviours, the cleaner's, are LFS's own).
    pub fn is_lfs(self) -> bool {
        self == Layout::Lfs
    }
}

/// `mkfs` with `layout`'s arguments before `extra`.
pub fn mkfs_layout(image: &Path, size: &str, layout: Layout, extra: &[&str]) {
    let mut args = layout.mkfs_args().to_vec();
    args.extend_from_slice(extra);
    mkfs(image, size, &args);
}

/// Makes one test per layout of each function named, which takes a
/// [`Layout`]: `on_every_layout!(f)` makes the tests `f::lfs`,
/// `f::ffs_sync`, `f::ffs_async`, `f::ffs_softdep` and `f::ffs_journal`.
#[macro_export]
macro_rules! on_every_layout {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn lfs() {
                    super::$name($crate::common::Layout::Lfs)
                }
                #[test]
                fn ffs_sync() {
                    super::$name($crate::common::Layout::FfsSync)
                }
                #[test]
                fn ffs_async() {
                    super::$name($crate::common::Layout::FfsAsync)
                }
                #[test]
                fn ffs_softdep() {
                    super::$name($crate::common::Layout::FfsSoftdep)
                }
                #[test]
                fn ffs_journal() {
                    super::$name($crate::common::Layout::FfsJournal)
                }
            }
        )*
    };
}
