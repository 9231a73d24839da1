//! Mounting `/dev/fuse` for the floor, and detaching it when the floor
//! gives up. The read/write loop on the device is the crate's
//! (`fslab_fuse::kernel::device`).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Opens `/dev/fuse` and mounts it on `mountpoint` with mount(2), as root
/// may: the options the fuser floor's mount passes (source `fuse-floor`,
/// `default_permissions`, `nosuid`, `nodev`, the mounting user as owner),
/// and type `fuse.fslabfloor`.
pub fn mount(mountpoint: &Path) -> io::Result<OwnedFd> {
    let device = std::fs::OpenOptions::new().read(true).write(true).open("/dev/fuse")?;
    // SAFETY: getuid and getgid have no arguments and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let data = format!(
        "fd={},rootmode={:o},user_id={uid},group_id={gid},default_permissions",
        device.as_raw_fd(),
        libc::S_IFDIR
    );
    let target = CString::new(mountpoint.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mount point holds a NUL byte"))?;
    let data = CString::new(data).map_err(|_| io::Error::other("mount options hold a NUL byte"))?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV;
    // SAFETY: every pointer is a NUL-terminated string that outlives the call.
    let mounted = unsafe {
        libc::mount(
            c"fuse-floor".as_ptr(),
            target.as_ptr(),
            c"fuse.fslabfloor".as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if mounted != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(OwnedFd::from(device))
}

/// Detaches the mount on `mountpoint` (lazily, so that it goes even while
/// busy). Used only when the floor gives up before serving: right after
/// its own mount, nothing else can have been mounted on top.
pub fn unmount(mountpoint: &Path) {
    if let Ok(target) = CString::new(mountpoint.as_os_str().as_bytes()) {
        // SAFETY: a NUL-terminated path that outlives the call.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}
