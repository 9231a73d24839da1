//! The classic transport: requests read from `/dev/fuse`, replies and
//! notifications written to it.
//!
//! With FUSE over io_uring, `/dev/fuse` still carries FUSE_INIT (the ring
//! cannot be registered before the connection is initialised), and
//! afterwards FORGET, BATCH_FORGET and INTERRUPT (`fuse_io_uring_ops` in
//! fs/fuse/dev_uring.c queues them on the device). Every other request
//! waits in the kernel until every queue has registered
//! (`fuse_block_alloc`); [`serve`] answers whatever comes.

use super::reply::{put_init, put_out_header, Answer, InitOut, Out};
use super::request::{InHeader, InitIn, Request};
use super::{opcode, Serve, INIT_OUT_SIZE, KERNEL_VERSION, MIN_READ_BUFFER, OUT_HEADER_SIZE};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

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

/// The most parts a message is written from (a header and a body).
const MAX_PARTS: usize = 4;

/// Writes a whole message (a reply or a notification) to the device. One
/// the kernel no longer waits for (ENOENT: a request it gave up on, an
/// inode it no longer caches) is not an error.
pub fn write_message(device: BorrowedFd, parts: &[&[u8]]) -> io::Result<()> {
    // On the stack: every reply is written here, and a heap allocation
    // for its two parts showed in the daemon's profile.
    let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; MAX_PARTS];
    if parts.len() > MAX_PARTS {
        return Err(io::Error::other("too many parts"));
    }
    for (slot, part) in iov.iter_mut().zip(parts) {
        *slot = libc::iovec { iov_base: part.as_ptr() as *mut libc::c_void, iov_len: part.len() };
    }
    let count = parts.len() as libc::c_int;
    // SAFETY: iovecs over buffers that outlive the call; writev only reads them.
    let n = unsafe { libc::writev(device.as_raw_fd(), iov.as_ptr(), count) };
    if n >= 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENODEV) => Ok(()),
        _ => Err(e),
    }
}

/// Writes a reply (`fuse_out_header` then the first bytes of `reply` that
/// `answer` counts) to request `unique`.
pub fn write_reply(device: BorrowedFd, unique: u64, answer: Answer, reply: &[u8]) -> io::Result<()> {
    let mut header = [0; OUT_HEADER_SIZE];
    put_out_header(&mut header, unique, answer);
    let body = match answer {
        Answer::Reply(n) => reply.get(..n).ok_or_else(|| io::Error::other("reply longer than its buffer"))?,
        _ => &[][..],
    };
    write_message(device, &[&header, body])
}

/// Reads FUSE_INIT from the device and answers it with what `answer`
/// makes of the kernel's offer (its flags are cut to what the kernel
/// offers), or refuses it (EPROTO, which ends the connection) with the
/// reason `answer` gives, or when the kernel's major version is not
/// [`KERNEL_VERSION`]. Returns the kernel's offer.
pub fn handshake(
    device: BorrowedFd,
    answer: impl FnOnce(&InitIn) -> Result<InitOut, String>,
) -> Result<InitIn, String> {
    let mut message = vec![0; MIN_READ_BUFFER];
    let n = match read_request(device, &mut message) {
        Ok(Some(n)) => n,
        Ok(None) => return Err("the connection ended before FUSE_INIT".to_string()),
        Err(e) => return Err(format!("reading FUSE_INIT: {e}")),
    };
    let request = Request::decode_message(&message[..n]).map_err(|e| e.to_string())?;
    let unique = request.header.unique;
    let refuse = |why: String| {
        let _ = write_reply(device, unique, Answer::Error(libc::EPROTO), &[]);
        Err(why)
    };
    let init = match request.op {
        super::request::Op::Init(init) => init,
        _ => return refuse(format!("expected FUSE_INIT, got opcode {}", request.header.opcode)),
    };
    debug_assert_eq!(request.header.opcode, opcode::INIT);
    if init.major != KERNEL_VERSION {
        return refuse(format!("kernel FUSE ABI {}.{}, not {KERNEL_VERSION}.x", init.major, init.minor));
    }
    let mut reply = match answer(&init) {
        Ok(reply) => reply,
        Err(why) => return refuse(why),
    };
    reply.flags &= init.flags;
    let mut out = [0; INIT_OUT_SIZE];
    put_init(&mut Out::new(&mut out), &reply).map_err(|_| "FUSE_INIT reply overflow".to_string())?;
    write_reply(device, unique, Answer::Reply(out.len()), &out)
        .map_err(|e| format!("answering FUSE_INIT: {e}"))?;
    Ok(init)
}

/// What the device loop served: requests by kind.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeviceStats {
    /// FORGET and BATCH_FORGET requests.
    pub forgets: u64,
    /// INTERRUPT requests.
    pub interrupts: u64,
    /// Every other request.
    pub others: u64,
}

/// Serves requests from the device with `server` until the connection
/// goes away, reading into buffers of `buffer_size` bytes (at least the
/// largest request: `max_write` and a page). A message that does not
/// decode is answered EIO when its header can be read, and skipped.
pub fn serve<S: Serve + ?Sized>(
    server: &S,
    device: BorrowedFd,
    buffer_size: usize,
) -> io::Result<DeviceStats> {
    let mut stats = DeviceStats::default();
    let mut message = vec![0; buffer_size];
    let mut reply = vec![0; buffer_size];
    while let Some(n) = read_request(device, &mut message)? {
        let request = match Request::decode_message(&message[..n]) {
            Ok(request) => request,
            Err(e) => {
                crate::report_line(&format!("fuse: /dev/fuse: {e}"));
                if let Ok(h) = InHeader::decode(&message[..n]) {
                    write_reply(device, h.unique, Answer::Error(libc::EIO), &[])?;
                }
                continue;
            }
        };
        match request.op {
            super::request::Op::Forget { .. } | super::request::Op::BatchForget { .. } => stats.forgets += 1,
            super::request::Op::Interrupt { .. } => stats.interrupts += 1,
            _ => stats.others += 1,
        }
        let answer = server.serve(&request, &mut reply);
        if answer != Answer::Nothing {
            write_reply(device, request.header.unique, answer, &reply)?;
        }
    }
    Ok(stats)
}
