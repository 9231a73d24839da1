//! The classic side of the connection: mounting `/dev/fuse`, the INIT
//! handshake, and a read/write loop for what the kernel still sends over
//! the device once the ring is live.
//!
//! With FUSE over io_uring, `/dev/fuse` carries FUSE_INIT (the ring cannot
//! be registered before the connection is initialised), and afterwards
//! FORGET, BATCH_FORGET and INTERRUPT (`fuse_io_uring_ops` in
//! fs/fuse/dev_uring.c queues them on the device). Every other request
//! waits in the kernel until every queue has registered
//! (`fuse_block_alloc`), so none should arrive here; the loop serves any
//! that do and counts them.

use crate::abi::{self, Answer, Request};
use crate::floor::Floor;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
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

/// Reads one request from the device into `buf`; `Ok(None)` once the
/// connection is gone (ENODEV: unmounted or aborted).
pub fn read_request(device: BorrowedFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: `buf` is valid for writes of its length for the call.
        let n = unsafe { libc::read(device.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // Interrupted, or the request was withdrawn before we read it.
            Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::ENOENT) => continue,
            Some(libc::ENODEV) => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// Writes a reply (`fuse_out_header` then `reply`) to the device. A reply
/// to a request the kernel has since given up on (ENOENT) is not an error.
pub fn write_reply(device: BorrowedFd, unique: u64, answer: Answer, reply: &[u8]) -> io::Result<()> {
    let mut header = [0; abi::OUT_HEADER_SIZE];
    abi::put_out_header(&mut header, unique, answer);
    let body = match answer {
        Answer::Reply(n) => &reply[..n],
        _ => &[][..],
    };
    let iov = [
        libc::iovec { iov_base: header.as_mut_ptr().cast(), iov_len: header.len() },
        libc::iovec { iov_base: body.as_ptr() as *mut libc::c_void, iov_len: body.len() },
    ];
    // SAFETY: two iovecs over buffers that outlive the call; writev only reads them.
    let n = unsafe { libc::writev(device.as_raw_fd(), iov.as_ptr(), 2) };
    if n >= 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENODEV) => Ok(()),
        _ => Err(e),
    }
}

/// What the device loop served: requests by kind.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeviceStats {
    pub forgets: u64,
    pub interrupts: u64,
    /// Requests that would have gone over the ring had it been live.
    pub others: u64,
}

/// Serves requests from the device until the connection goes away.
pub fn serve(floor: &Floor, device: BorrowedFd, buffer_size: usize) -> io::Result<DeviceStats> {
    let mut stats = DeviceStats::default();
    let mut message = vec![0; buffer_size];
    let mut reply = vec![0; buffer_size];
    while let Some(n) = read_request(device, &mut message)? {
        let request = match Request::decode_message(&message[..n]) {
            Ok(request) => request,
            Err(e) => {
                // Without a header there is no one to answer; with one, EIO.
                eprintln!("fuse_floor_uring: /dev/fuse: {e}");
                if let Ok(h) = abi::InHeader::decode(&message[..n]) {
                    write_reply(device, h.unique, Answer::Error(libc::EIO), &[])?;
                }
                continue;
            }
        };
        match request.op {
            abi::Op::Forget { .. } | abi::Op::BatchForget { .. } => stats.forgets += 1,
            abi::Op::Interrupt { .. } => stats.interrupts += 1,
            _ => stats.others += 1,
        }
        let answer = floor.serve(&request, &mut reply);
        if answer != Answer::Nothing {
            write_reply(device, request.header.unique, answer, &reply)?;
        }
    }
    Ok(stats)
}
