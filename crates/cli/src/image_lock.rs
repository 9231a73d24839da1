//! The lock that says an image is in use by an fslab process, and the mark
//! that says a mount of it is serving. `umount` returns before a daemon's
//! final checkpoint, so the lock alone cannot tell a mounted image (refuse
//! at once) from one whose mount is finishing (wait for it); the mark can.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a command waits for another fslab process to release an image
/// it is not serving a mount of: a mount finishing its final checkpoint
/// after `umount` (which returns at once), or an fsck.
const LOCK_WAIT: Duration = Duration::from_secs(60);

/// How long the mark of a serving mount must stay for an image to count
/// as mounted (see [`lock`]).
const SERVED_GRACE: Duration = Duration::from_millis(500);

/// Takes the lock that says "this image is in use by an fslab process"
/// (an exclusive `flock`, held as long as the returned file is open), so an
/// image is never mounted twice or made over while mounted. If a mount of
/// the image is serving requests (see [`mark_serving`]), fails (within
/// half a second: [`SERVED_GRACE`]);
/// if another process holds the lock without serving, waits for it.
pub(crate) fn lock(image: &Path) -> Result<File, String> {
    acquire(image, true)
}

/// Waits until no fslab process holds `image`'s lock: after an unmount,
/// until its mount has written the final checkpoint and exited. Up to the
/// same minute as [`lock`], saying so after a second.
pub(crate) fn wait_released(image: &Path) -> Result<(), String> {
    acquire(image, false).map(drop)
}

/// Takes the lock, waiting while another process holds it; if `refuse_served`,
/// fails at once when a mount of the image is serving.
fn acquire(image: &Path, refuse_served: bool) -> Result<File, String> {
    let file = File::open(image).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut told = false;
    let mut served_since: Option<Instant> = None;
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(format!("cannot lock: {e}"));
        }
        if refuse_served && is_served(&file) {
            // `fusermount3 -u` returns as the kernel lets go; the daemon
            // drops its mark a moment later (on a loaded machine, some
            // milliseconds): only a mark held for SERVED_GRACE is a mount.
            let since = *served_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= SERVED_GRACE {
                return Err("is mounted (unmount it first)".to_string());
            }
        } else {
            served_since = None;
        }
        if started.elapsed() >= LOCK_WAIT {
            return Err("in use by another fslab process (an fsck, or a mount still writing its last \
                 checkpoint); try again when it has finished"
                .to_string());
        }
        if !told && started.elapsed() >= Duration::from_secs(1) {
            eprintln!("fslab: waiting for another fslab process to release {}", image.display());
            told = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A lock request on an image's first byte, the mark of a serving mount.
fn serving_lock(l_type: libc::c_int) -> libc::flock {
    // SAFETY: flock is plain data; every field that matters is set below.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = l_type as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = 0;
    lock.l_len = 1;
    lock
}

/// Marks `image` as served by a mount: a write lock on its first byte,
/// owned by the returned file's open file description (`F_OFD_SETLK`, which
/// is independent of the `flock` of [`lock`]). The mount closes the
/// file as soon as the kernel's mount is gone, so another command can tell
/// a mounted image (fail at once) from one whose mount is only finishing
/// (wait for it).
pub(crate) fn mark_serving(image: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(image)?;
    let lock = serving_lock(libc::F_WRLCK);
    // SAFETY: `lock` is an initialized flock that outlives the call.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

/// Whether some process holds the serving mark of the image open as `file`.
fn is_served(file: &File) -> bool {
    let mut lock = serving_lock(libc::F_WRLCK);
    // SAFETY: `lock` is an initialized flock that outlives the call.
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut lock) } == 0;
    asked && lock.l_type != libc::F_UNLCK as libc::c_short
}
