//! Mounting a FUSE connection on a directory, and unmounting exactly that
//! mount later.
//!
//! The kernel unmounts by path: `umount2(DIR)` takes whatever is on top of
//! DIR now, which need not be this process's mount any more (a tmpfs or
//! another fslab may have been mounted over it, or it may be gone and
//! something else mounted where it was). So a mount is remembered by its
//! identity — its id and device number in `/proc/self/mountinfo` — and
//! [`detach`] unmounts only while that mount is the one in effect where
//! it is. The session itself never unmounts: when the kernel ends it, the
//! mount is already gone.
//!
//! Mounting follows libfuse's `fuse_mount_sys` and `fuse_mount_fusermount`:
//! root mounts `/dev/fuse` itself with mount(2); anyone else asks the
//! setuid `fusermount3`, which passes the opened device back over a socket
//! (`_FUSE_COMMFD`).

use crate::{mountinfo, MountConfig, SUBTYPE};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// Which mount is this process's: its id and device number, and its
/// connection (see the module's documentation).
///
/// Mount ids and the device numbers of FUSE mounts are both reused once
/// the mount is gone, so a match alone could be a newer mount on the same
/// directory. The connection tells: the kernel aborts it when the mount's
/// file system goes away, and while it is alive neither number can have
/// passed to another mount of another file system.
#[derive(Debug, Clone)]
pub struct Identity {
    id: u64,
    device: (u32, u32),
    connection: Arc<OwnedFd>,
}

impl Identity {
    /// The mount's device number (major, minor): `st_dev` of its files.
    pub fn device(&self) -> (u32, u32) {
        self.device
    }

    fn is(&self, entry: &mountinfo::MountEntry) -> bool {
        entry.id == self.id && entry.device == self.device
    }

    /// Whether the kernel still holds the connection open: `poll` reports
    /// an error on `/dev/fuse` once it is aborted (`fuse_dev_poll`).
    fn connected(&self) -> bool {
        let mut poll = libc::pollfd { fd: self.connection.as_raw_fd(), events: 0, revents: 0 };
        loop {
            // SAFETY: one pollfd, which outlives the call.
            let ready = unsafe { libc::poll(&mut poll, 1, 0) };
            if ready >= 0 {
                return poll.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) == 0;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
    }
}

/// A FUSE connection mounted on a directory.
pub(crate) struct Attached {
    /// The connection (`/dev/fuse`), which the session serves.
    pub(crate) device: OwnedFd,
    /// Which mount it is.
    pub(crate) identity: Identity,
}

/// Mounts a new FUSE connection on `mountpoint` (canonical) with `config`'s
/// options and `source` as the mount table's source.
pub(crate) fn attach(mountpoint: &Path, config: &MountConfig, source: &str) -> io::Result<Attached> {
    let device = match mount_sys(mountpoint, config, source)? {
        Some(device) => device,
        None => mount_fusermount(mountpoint, config, source)?,
    };
    let entries = mountinfo::read()?;
    let Some(top) =
        mountinfo::topmost(&entries, mountpoint).filter(|e| crate::is_fslab_mount(&e.kind, &e.source))
    else {
        // Closing the device leaves a dead mount, which fusermount3 -u removes.
        return Err(io::Error::other(format!(
            "mounted on {} but the mount is not in /proc/self/mountinfo",
            mountpoint.display()
        )));
    };
    let connection = Arc::new(device.try_clone()?);
    Ok(Attached { device, identity: Identity { id: top.id, device: top.device, connection } })
}

/// The options both ways of mounting take.
fn common_options(config: &MountConfig, source: &str) -> String {
    let mut options = format!("fsname={source},subtype={SUBTYPE},default_permissions");
    if config.allow_other {
        options.push_str(",allow_other");
    }
    options
}

/// Mounts with mount(2), as root may; `None` when not permitted (EPERM, or
/// no access to `/dev/fuse`), so that fusermount3 is asked instead.
fn mount_sys(mountpoint: &Path, config: &MountConfig, source: &str) -> io::Result<Option<OwnedFd>> {
    let mode = std::fs::metadata(mountpoint)?.mode() & libc::S_IFMT;
    // A user who may not open the device asks fusermount3, which may.
    let device = match std::fs::OpenOptions::new().read(true).write(true).open("/dev/fuse") {
        Ok(device) => device,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(None),
        Err(e) => return Err(e),
    };
    // SAFETY: getuid/getgid have no arguments and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut data = format!("fd={},rootmode={mode:o},user_id={uid},group_id={gid}", device.as_raw_fd());
    data.push_str(",default_permissions");
    if config.allow_other {
        data.push_str(",allow_other");
    }
    data.push_str(&format!(",subtype={SUBTYPE}"));
    let mut flags: libc::c_ulong = 0;
    if !config.suid {
        flags |= libc::MS_NOSUID;
    }
    if !config.dev {
        flags |= libc::MS_NODEV;
    }
    if !config.exec {
        flags |= libc::MS_NOEXEC;
    }
    if config.read_only {
        flags |= libc::MS_RDONLY;
    }
    let target = c_path(mountpoint)?;
    let source = CString::new(source).map_err(|_| invalid("the source holds a NUL byte"))?;
    let data = CString::new(data).map_err(|_| invalid("mount options hold a NUL byte"))?;
    // SAFETY: every pointer is a NUL-terminated string that outlives the call.
    let mounted = unsafe {
        libc::mount(source.as_ptr(), target.as_ptr(), c"fuse".as_ptr(), flags, data.as_ptr().cast())
    };
    if mounted == 0 {
        return Ok(Some(OwnedFd::from(device)));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EPERM) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// Mounts through the setuid `fusermount3`, which sends the opened
/// `/dev/fuse` back over the socket named by `_FUSE_COMMFD`.
fn mount_fusermount(mountpoint: &Path, config: &MountConfig, source: &str) -> io::Result<OwnedFd> {
    let mut options = common_options(config, source);
    options.push_str(if config.exec { ",exec" } else { ",noexec" });
    options.push_str(if config.read_only { ",ro" } else { ",rw" });
    options.push_str(if config.suid { ",suid" } else { ",nosuid" });
    options.push_str(if config.dev { ",dev" } else { ",nodev" });
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) }
        != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair succeeded; both descriptors are ours alone.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let their_fd = theirs.as_raw_fd();
    let mut command = Command::new("fusermount3");
    command
        .args(["-o", &options, "--"])
        .arg(mountpoint)
        .env("_FUSE_COMMFD", their_fd.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: fcntl is async-signal-safe; it only makes the child keep its end.
    unsafe {
        command.pre_exec(move || {
            if libc::fcntl(their_fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child =
        command.spawn().map_err(|e| io::Error::new(e.kind(), format!("cannot run fusermount3: {e}")))?;
    drop(theirs);
    let received = receive_fd(&ours);
    let output = child.wait_with_output()?;
    match received {
        Ok(fd) if output.status.success() => Ok(fd),
        _ => Err(io::Error::other(format!(
            "fusermount3: {}",
            String::from_utf8_lossy(&output.stderr).trim().trim_start_matches("fusermount3: ")
        ))),
    }
}

/// Receives one descriptor sent with SCM_RIGHTS on `socket`.
fn receive_fd(socket: &OwnedFd) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    // Room for one control message carrying one descriptor, aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; the fields that matter are set below.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `message` points at buffers that outlive the call.
    let got = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel filled `message`; CMSG_FIRSTHDR and CMSG_DATA stay
    // within the control buffer it describes.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("no descriptor from fusermount3"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// What [`detach`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detached {
    /// The mount was unmounted now.
    Unmounted,
    /// The mount was already gone; nothing was touched.
    AlreadyGone,
}

/// Unmounts the mount `identity`, and nothing else: only if it is the one
/// in effect where it is mounted. A busy mount is detached lazily (it
/// vanishes at once; the session ends at the last close). Fails, touching
/// nothing, if another mount covers it or is mounted inside it (a lazy
/// detach would take that one away too, and its files with it). A mount
/// whose connection is gone (unmounted, or aborted) is left alone.
pub(crate) fn detach(identity: &Identity) -> io::Result<Detached> {
    if !identity.connected() {
        return Ok(Detached::AlreadyGone);
    }
    let entries = mountinfo::read()?;
    let Some(ours) = entries.iter().find(|e| identity.is(e)) else {
        return Ok(Detached::AlreadyGone);
    };
    let point = ours.point.clone();
    if !mountinfo::topmost(&entries, &point).is_some_and(|top| identity.is(top)) {
        return Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!("{} is covered by another mount; unmount that first", point.display()),
        ));
    }
    // Before any attempt: both fallbacks below detach lazily, which would
    // take a mount inside this one away too.
    if let Some(inside) = entries.iter().find(|e| e.parent == ours.id) {
        return Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!("{} is mounted inside {}; unmount that first", inside.point.display(), point.display()),
        ));
    }
    let path = c_path(&point)?;
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    if unsafe { libc::umount2(path.as_ptr(), libc::UMOUNT_NOFOLLOW) } == 0 {
        return Ok(Detached::Unmounted);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // SAFETY: as above.
        Some(libc::EBUSY)
            if unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH | libc::UMOUNT_NOFOLLOW) } == 0 =>
        {
            Ok(Detached::Unmounted)
        }
        Some(libc::EPERM) => fusermount_unmount(&point),
        _ => Err(e),
    }
}

/// Unmounts `point` (checked to be ours just before) through the setuid
/// fusermount3, lazily so that a busy mount goes too.
fn fusermount_unmount(point: &PathBuf) -> io::Result<Detached> {
    let output =
        Command::new("fusermount3").args(["-u", "-z", "--"]).arg(point).stdin(Stdio::null()).output()?;
    if output.status.success() {
        Ok(Detached::Unmounted)
    } else {
        Err(io::Error::other(format!(
            "fusermount3 -u: {}",
            String::from_utf8_lossy(&output.stderr).trim().trim_start_matches("fusermount3: ")
        )))
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| invalid("the path holds a NUL byte"))
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why.to_string())
}
