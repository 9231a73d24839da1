//! A background mount: fork; the child starts a new session, chooses
//! where its messages will go (`log`), mounts, and only once the kernel
//! has accepted the mount writes "ready" into a pipe (or the error that
//! stopped it), followed by anything the user should know (where the log
//! is), then points standard input and output at /dev/null and standard
//! error at the log, and serves. The parent waits on the pipe and exits 0
//! only after "ready", so the command returns exactly when the mount is
//! usable.

use super::options::Options;
use super::{block_signals, log, mount, serve, warn_without_control};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

const READY: &str = "ready";

/// Forks; returns in the parent once the child reports "ready" or an error.
pub(super) fn background(image: &Path, dir: &Path, options: &Options) -> Result<(), String> {
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
            let mut lines = message.lines();
            match lines.next().unwrap_or("").trim_end() {
                READY => {
                    for notice in lines {
                        say!("fslab: mount: {notice}");
                    }
                    Ok(())
                }
                "" => {
                    let mut status = 0;
                    // SAFETY: waits for our own child; `status` outlives the call.
                    unsafe { libc::waitpid(child_pid, &mut status, 0) };
                    Err("the file-system process died before the mount was ready".to_string())
                }
                _ => Err(message.trim_end().to_string()),
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
    // A file the user named must open before anything is mounted.
    let named = match options.log.as_deref().map(log::named).transpose() {
        Ok(named) => named,
        Err(message) => {
            let _ = to_parent.write_all(message.as_bytes());
            return 1;
        }
    };
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
    // (a cleaner that stopped, say) goes to the log.
    let (sink, notice) = match named {
        Some(sink) => (sink, None),
        None => log::default_sink(dir),
    };
    detach_stdio();
    log::install(sink);
    let mut ready = READY.to_string();
    if let Some(notice) = notice {
        ready = format!("{ready}\n{notice}");
    }
    let _ = to_parent.write_all(ready.as_bytes());
    drop(to_parent);
    match serve(mount, signals) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// A pipe whose ends are closed on exec (no helper program inherits them).
pub(super) fn pipe() -> std::io::Result<(File, File)> {
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
pub(super) fn detach_stdio() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        for fd in 0..=2 {
            // SAFETY: both descriptors are open; dup2 replaces `fd` atomically.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}
