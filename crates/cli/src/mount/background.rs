//! A background mount: fork; the child starts a new session, chooses
//! where its messages will go (`log`), mounts, and only once the kernel
//! has accepted the mount writes "ready" into a pipe (or the error that
//! stopped it), followed by anything the user should know (where the log
//! is), then points standard input and output at /dev/null and standard
//! error at the log, and serves. The parent waits on the pipe and exits 0
//! only after "ready", so the command returns exactly when the mount is
//! usable.

use super::options::Options;
use super::{block_signals, log, mount, serve, stdio, warn_without_control};
use nix::unistd::ForkResult;
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

const READY: &str = "ready";

/// Forks; returns in the parent once the child reports "ready" or an error.
pub(super) fn background(image: &Path, dir: &Path, options: &Options) -> Result<(), String> {
    let (mut from_child, to_parent) = stdio::pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    single_threaded(thread_count())?;
    // SAFETY: the check above found this process running one thread, so
    // no lock (the allocator's, stdout's) can be held by a thread the child
    // lacks. No safe fork exists: rustix and nix both leave it unsafe.
    match unsafe { nix::unistd::fork() } {
        Err(e) => Err(format!("cannot fork: {}", std::io::Error::from(e))),
        Ok(ForkResult::Child) => {
            drop(from_child);
            std::process::exit(child(to_parent, image, dir, options))
        }
        Ok(ForkResult::Parent { child: child_pid }) => {
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
                    let _ = nix::sys::wait::waitpid(child_pid, None);
                    Err("the file-system process died before the mount was ready".to_string())
                }
                _ => Err(message.trim_end().to_string()),
            }
        }
    }
}

/// The background process: mount, report, serve. Returns the exit status.
fn child(mut to_parent: File, image: &Path, dir: &Path, options: &Options) -> i32 {
    let _ = rustix::process::setsid();
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
    stdio::detach_stdio();
    let forwarder = log::install(sink);
    let mut ready = READY.to_string();
    if let Some(notice) = notice {
        ready = format!("{ready}\n{notice}");
    }
    let _ = to_parent.write_all(ready.as_bytes());
    drop(to_parent);
    let code = match serve(mount, signals) {
        Ok(()) => 0,
        Err(e) => {
            // Nobody else will say it: umount has long returned.
            say!("fslab: mount: {}: {e}", dir.display());
            1
        }
    };
    // The log's last lines (this one, a failed checkpoint's) are still in
    // its pipe: closing standard error, the pipe's only writer, lets the
    // forwarder read to the end and write them before the process exits.
    stdio::detach_stdio();
    if let Some(forwarder) = forwarder {
        let _ = forwarder.join();
    }
    code
}

/// The threads this process runs now: the entries of /proc/self/task.
fn thread_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// Refuses a fork unless this process runs one thread (`threads`, as
/// [`thread_count`] found them): the child gets only the forking thread,
/// and a lock another thread held at the fork (the allocator's, stdout's)
/// would stay held in the child forever.
fn single_threaded(threads: std::io::Result<usize>) -> Result<(), String> {
    match threads {
        Ok(1) => Ok(()),
        Ok(n) => Err(format!(
            "cannot fork: this process already runs {n} threads \
             (mount in the foreground, -f, instead)"
        )),
        Err(e) => Err(format!("cannot fork: cannot count this process's threads (/proc/self/task): {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_is_refused_unless_the_process_runs_one_thread() {
        assert_eq!(single_threaded(Ok(1)), Ok(()));
        let refused = single_threaded(Ok(3)).expect_err("three threads");
        assert!(refused.contains("3 threads"), "{refused}");
        let unknown = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(single_threaded(Err(unknown)).is_err(), "no /proc: no fork");
    }

    #[test]
    fn the_thread_count_sees_a_running_thread() {
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let parked_thread = std::thread::spawn(move || parked.recv());
        let counted = thread_count().expect("/proc/self/task");
        assert!(counted >= 2, "this thread and the spawned one, counted {counted}");
        assert!(single_threaded(Ok(counted)).is_err());
        drop(stop);
        let _ = parked_thread.join();
    }
}
