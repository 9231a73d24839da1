//! The lock that says an image (its storage, by whatever name: see
//! `storage_id`) is in use by an fslab process, and the mark that says a
//! mount of it is serving. `umount` returns before a daemon's
//! final checkpoint, so the lock alone cannot tell a mounted image (refuse
//! at once) from one whose mount is finishing (wait for it); the mark can.

use crate::storage_id::Storage;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a command waits for another fslab process to release an image
/// it is not serving a mount of: a mount finishing its final checkpoint
/// after `umount` (which returns at once), or an fsck.
const LOCK_WAIT: Duration = Duration::from_secs(60);

/// How long the mark of a serving mount must stay for an image to count
/// as mounted (see [`lock`]).
const SERVED_GRACE: Duration = Duration::from_millis(500);

/// The lock on an image (and, for a loop device, on the file behind it),
/// held until dropped; for a block device also its exclusive claim
/// (`O_EXCL`), which keeps the kernel and other programs from mounting or
/// claiming it meanwhile.
pub(crate) struct ImageLock {
    _held: Vec<File>,
}

/// Takes the lock that says "this storage is in use by an fslab process"
/// (an exclusive `flock` on the image, and on the file behind it if the
/// image is a loop device), so an image is never mounted twice, by any of
/// its names, or made over while mounted. If a mount of the same storage
/// is serving requests (in the mount table, or holding the mark of
/// [`ServingMark::set`]), fails naming that mount (within half a second:
/// [`SERVED_GRACE`]); if another process holds the lock without serving,
/// waits for it.
pub(crate) fn lock(image: &Path) -> Result<ImageLock, String> {
    acquire(image, true)
}

/// Waits until no fslab process holds `image`'s lock: after an unmount,
/// until its mount has written the final checkpoint and exited, however
/// long that takes (a large cache on a slow disk), saying so after a second.
pub(crate) fn wait_released(image: &Path) -> Result<(), String> {
    acquire(image, false).map(drop)
}

/// The files whose locks stand for `image`: the image, and the file
/// behind it if it is a loop device.
fn lock_targets(image: &Path) -> Vec<PathBuf> {
    let backing = Storage::of(image).and_then(|s| s.backing);
    std::iter::once(image.to_path_buf()).chain(backing).collect()
}

/// Why `image` cannot be used: it is mounted, on the mount point found in
/// the mount table if it is there.
fn mounted_message(image: &Path) -> String {
    match Storage::of(image).as_ref().and_then(crate::storage_id::mounted) {
        Some((point, source)) if Path::new(&source) == image => {
            format!("is mounted on {}; unmount it first", point.display())
        }
        Some((point, source)) => format!("is mounted on {} (as {source}); unmount it first", point.display()),
        None => "is mounted (unmount it first)".to_string(),
    }
}

/// Takes the lock, waiting while another process holds it; if `refuse_served`,
/// fails at once when a mount of the image is serving.
fn acquire(image: &Path, refuse_served: bool) -> Result<ImageLock, String> {
    if refuse_served && Storage::of(image).as_ref().and_then(crate::storage_id::mounted).is_some() {
        return Err(mounted_message(image));
    }
    let files = lock_targets(image).iter().map(File::open).collect::<std::io::Result<Vec<File>>>();
    let files = files.map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut told = false;
    let mut served_since: Option<Instant> = None;
    loop {
        if try_lock_all(&files)? {
            // Only a user of the image claims it; one waiting for it to be
            // free does not. The claim goes first, so that it is let go
            // before the locks are (fields and vectors drop in order): the
            // next user, finding the locks free, finds the device free too.
            let claim = if refuse_served { claim_exclusively(image)? } else { None };
            let held = claim.into_iter().chain(files).collect();
            return Ok(ImageLock { _held: held });
        }
        if refuse_served && files.iter().any(is_served) {
            // `fusermount3 -u` returns as the kernel lets go; the daemon
            // drops its mark a moment later (on a loaded machine, some
            // milliseconds): only a mark held for SERVED_GRACE is a mount.
            let since = *served_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= SERVED_GRACE {
                return Err(mounted_message(image));
            }
        } else {
            served_since = None;
        }
        if refuse_served && started.elapsed() >= LOCK_WAIT {
            return Err("in use by another fslab process (an fsck, or a mount still writing its last \
                 checkpoint); try again when it has finished"
                .to_string());
        }
        if !told && started.elapsed() >= Duration::from_secs(1) {
            if files.iter().any(is_served) {
                // Waiting for a mount to end that still serves: mounted
                // somewhere this process cannot see.
                say!(
                    "fslab: waiting for {} to be released: it is still served, perhaps mounted in another mount \
                     namespace, where its final checkpoint comes when that mount goes",
                    image.display()
                );
            } else {
                say!("fslab: waiting for another fslab process to release {}", image.display());
            }
            told = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Locks every file, or none: `Ok(false)` (with the ones taken released)
/// if another process holds one.
fn try_lock_all(files: &[File]) -> Result<bool, String> {
    use rustix::fs::{flock, FlockOperation};
    for (taken, file) in files.iter().enumerate() {
        let Err(e) = flock(file, FlockOperation::NonBlockingLockExclusive) else { continue };
        for earlier in &files[..taken] {
            let _ = flock(earlier, FlockOperation::Unlock);
        }
        if e != rustix::io::Errno::WOULDBLOCK {
            return Err(format!("cannot lock: {}", std::io::Error::from(e)));
        }
        return Ok(false);
    }
    Ok(true)
}

/// A block device opened with `O_EXCL` (Linux's exclusive claim, which a
/// kernel mount or another exclusive opener also takes); nothing for a file.
fn claim_exclusively(image: &Path) -> Result<Option<File>, String> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let is_block = std::fs::metadata(image).is_ok_and(|m| m.file_type().is_block_device());
    if !is_block {
        return Ok(None);
    }
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(image) {
        Ok(claim) => Ok(Some(claim)),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            Err("is in use by another program (mounted by the kernel, or opened exclusively)".to_string())
        }
        Err(e) => Err(format!("cannot open exclusively: {e}")),
    }
}

/// A lock request on an image's first byte, the mark of a serving mount.
fn serving_lock(l_type: libc::c_int) -> libc::flock {
    // One byte, not the whole file (all rustix's `fcntl_lock` takes): a
    // whole-file lock would also collide with other programs' byte-range
    // locks on an image (QEMU's, at offsets of their own).
    libc::flock {
        l_type: l_type as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 1,
        l_pid: 0,
    }
}

/// The files of an image's serving mark (see [`ServingMark::set`]),
/// opened before the mount: once the kernel's mount is up, the image's
/// path may lie under the mount point (an image mounted on the directory
/// holding it), where a lookup waits for a daemon that serves nothing
/// before it runs — the mount would hang there.
pub(crate) struct ServingMark {
    files: Vec<(File, libc::c_int)>,
}

/// Opens the files of `image`'s serving mark. An image this process may
/// only read (a read-only mount of a file on a read-only file system, or an
/// immutable one) is marked with a read lock, which [`is_served`]'s
/// question for a write lock finds as well.
pub(crate) fn serving_mark(image: &Path) -> std::io::Result<ServingMark> {
    let mut files = Vec::new();
    for target in lock_targets(image) {
        let writable = std::fs::OpenOptions::new().read(true).write(true).open(&target);
        files.push(match writable {
            Ok(file) => (file, libc::F_WRLCK),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EROFS | libc::EPERM)) => {
                (File::open(&target)?, libc::F_RDLCK)
            }
            Err(e) => return Err(e),
        });
    }
    Ok(ServingMark { files })
}

impl ServingMark {
    /// Marks the image as served by a mount: a lock on its first byte,
    /// owned by the returned files' open file descriptions (`F_OFD_SETLK`,
    /// independent of the `flock` of [`lock`]). The mount closes the files
    /// as soon as the kernel's mount is gone, so another command can tell
    /// a mounted image (fail at once) from one whose mount is only
    /// finishing (wait for it).
    pub(crate) fn set(self) -> std::io::Result<Vec<File>> {
        let mut marks = Vec::new();
        for (file, l_type) in self.files {
            let lock = serving_lock(l_type);
            nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_OFD_SETLK(&lock))?;
            marks.push(file);
        }
        Ok(marks)
    }
}

/// Whether some process holds the serving mark of the image open as `file`.
fn is_served(file: &File) -> bool {
    let mut lock = serving_lock(libc::F_WRLCK);
    let asked = nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_OFD_GETLK(&mut lock)).is_ok();
    asked && lock.l_type != libc::F_UNLCK as libc::c_short
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An image only readable to the mount (here: immutable, which even
    /// root may not open for writing) is still marked as served, so that
    /// another command refuses it at once instead of waiting for it.
    #[test]
    fn an_image_the_mount_may_only_read_is_marked_as_served() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let image = tmp.path().join("a.img");
        std::fs::write(&image, [0u8; 4096]).expect("image");
        let immutable = std::process::Command::new("chattr").arg("+i").arg(&image).status();
        if !immutable.is_ok_and(|s| s.success()) {
            println!("skipped: chattr +i needs root and a file system with the attribute");
            return;
        }
        let marked = serving_mark(&image).and_then(ServingMark::set);
        let other = File::open(&image).expect("open the image");
        let served = is_served(&other);
        let _ = std::process::Command::new("chattr").arg("-i").arg(&image).status();
        let marks = marked.expect("an image only readable is marked");
        assert_eq!(marks.len(), 1);
        assert!(served, "the mark of a read-only image is not seen");
        drop(marks);
        assert!(!is_served(&other), "the mark stays after its file is closed");
    }
}
