//! One queue of FUSE over io_uring: a thread, its ring, and the entries it
//! lends the kernel.
//!
//! The kernel keeps one queue per possible CPU and puts each request on the
//! queue of the CPU its caller runs on (`fuse_uring_task_to_queue` in
//! fs/fuse/dev_uring.c), so a queue's thread runs pinned to that CPU: the
//! caller sleeps, the server runs where the request's data is hot, and
//! answers wake the caller on its own CPU. Most of the ring's gain is
//! this: unpinned (the floor's `--no-pin`), the small-file test ran 4 to 5 times
//! slower on a 2-CPU virtual machine, where waking the other, idle CPU
//! costs ten times a switch on the same one. A request a server answers
//! slowly (one waiting for the disk) holds its queue's thread, and with
//! it every later request of that CPU's callers.
//!
//! An entry's life (the kernel's `fuse_ring_ent` states, seen from here):
//!
//! ```text
//!   REGISTER ──► [Kernel] ──CQE res 0──► [User] ──COMMIT_AND_FETCH──► [Kernel] ...
//!                  │                                                     │
//!                  └────────────── CQE res < 0 (unmount: ENOTCONN) ──────┴──► [Retired]
//! ```
//!
//! While an entry is `Kernel` its buffers belong to the kernel, which
//! writes the next request into them (in this thread's task work, inside
//! io_uring_enter); this thread touches an entry's buffers only while it is
//! `User`. The queue ends when every entry is retired: on unmount the
//! kernel completes waiting commands with ENOTCONN
//! (`fuse_uring_entry_teardown`) and refuses commits the same way.

use super::reply::{put_out_header, Answer};
use super::request::{op_in_size, InHeader, Request};
use super::ring::{self, ReqHeader};
use super::waits::{Lent, Waits, WOKEN};
use super::{Finish, Serve, IN_HEADER_SIZE, OUT_HEADER_SIZE};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The parameter that lets a connection use FUSE over io_uring (`Y`).
pub const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";

/// The kernel's queue count: one per possible CPU (`num_possible_cpus()`),
/// read from `/sys/devices/system/cpu/possible` ("0-3", "0,2-5").
pub fn possible_cpus() -> io::Result<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("possible CPUs: {text:?}"));
    let mut count = 0;
    for range in text.trim().split(',') {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        let first: usize = first.parse().map_err(|_| bad())?;
        let last: usize = last.parse().map_err(|_| bad())?;
        count = count.max(last.checked_add(1).filter(|_| last >= first).ok_or_else(bad)?);
    }
    Ok(count)
}

/// Whether this process may set up an io_uring of the kind a queue uses
/// (a sandbox may forbid io_uring: `kernel.io_uring_disabled`, seccomp).
pub fn rings_allowed() -> io::Result<()> {
    IoUring::<squeue::Entry128, cqueue::Entry>::builder().build(2).map(drop)
}

/// How the ring runs the kernel's task work (which copies a request into
/// an entry and posts its completion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskRun {
    /// `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN`: only when
    /// this thread waits for completions, with no interrupting signal.
    Defer,
    /// `IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG`: at the next
    /// transition to the kernel, without a signal.
    Coop,
    /// No flags: a notification interrupts the thread wherever it is.
    Plain,
}

/// How to set up one queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueSetup {
    /// Queue id: the CPU whose callers it serves.
    pub qid: u16,
    /// Pin the thread to CPU `qid`.
    pub pin: bool,
    /// Entries lent to the kernel: requests this queue can hold at once.
    pub entries: usize,
    /// Bytes of each entry's payload buffer: at least the kernel's
    /// `max_payload_sz` (max of 8 KiB, max_write, max_pages pages).
    pub payload_size: usize,
    /// How the ring runs the kernel's task work.
    pub taskrun: TaskRun,
}

/// What a queue served.
#[derive(Debug, Clone, Copy)]
pub struct QueueStats {
    /// Requests answered.
    pub requests: u64,
    /// Requests by opcode (the last slot counts opcodes past it).
    pub by_opcode: [u64; 64],
    /// Commands the kernel refused other than by ending the connection.
    pub failures: u64,
    /// Answers that waited on another thread before they were sent.
    pub waited: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The kernel holds the entry (a command is outstanding).
    Kernel,
    /// A request is in the entry's buffers; this thread owns them.
    User,
    /// A worker finishes the answer in the entry's buffers (`waits`): the
    /// payload is the worker's until it says it is done, the header this
    /// thread's.
    Waiting,
    /// The kernel will not use the entry again.
    Retired,
}

/// One entry's buffers: the header (`iov[0]`), the payload (`iov[1]`) and
/// the iovec pair the kernel reads them from.
///
/// Invariant: the three allocations live at fixed addresses from `new` to
/// `drop`, and references into them exist only while `state` is `User`.
/// They are raw pointers rather than `Box`es because the kernel writes
/// through them while `Kernel`, which a `Box`'s promise of unique access
/// would deny.
struct Entry {
    header: *mut ReqHeader,
    payload: *mut u8,
    payload_len: usize,
    iov: *mut [libc::iovec; 2],
    state: State,
    /// The last command sent was REGISTER (its failure means the ring is not
    /// live, not that the connection ended).
    registering: bool,
    /// The request being answered (while `Waiting`): its number and the
    /// commit id its answer quotes.
    unique: u64,
    commit_id: u64,
}

impl Entry {
    fn new(payload_len: usize) -> Entry {
        let header = Box::into_raw(Box::new(ReqHeader::zeroed()));
        let payload = Box::into_raw(vec![0u8; payload_len].into_boxed_slice()).cast::<u8>();
        let iov = Box::into_raw(Box::new([
            libc::iovec { iov_base: header.cast(), iov_len: std::mem::size_of::<ReqHeader>() },
            libc::iovec { iov_base: payload.cast(), iov_len: payload_len },
        ]));
        Entry {
            header,
            payload,
            payload_len,
            iov,
            state: State::Kernel,
            registering: true,
            unique: 0,
            commit_id: 0,
        }
    }

    /// The header and payload, while this thread owns them.
    fn buffers(&mut self) -> (&mut ReqHeader, &mut [u8]) {
        debug_assert!(
            matches!(self.state, State::User | State::Waiting),
            "touching an entry the kernel holds"
        );
        // SAFETY: both allocations are live (see the invariant on `Entry`),
        // and in states `User` and `Waiting` the kernel neither reads nor writes them
        // until the next command, which needs `&mut self` again.
        unsafe { (&mut *self.header, std::slice::from_raw_parts_mut(self.payload, self.payload_len)) }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if self.state != State::Retired {
            // The kernel may still write into them: leak rather than free.
            return;
        }
        // SAFETY: allocated in `new` by `Box::into_raw` with these types and
        // lengths, freed once; a retired entry is no longer the kernel's.
        unsafe {
            drop(Box::from_raw(self.header));
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.payload, self.payload_len)));
            drop(Box::from_raw(self.iov));
        }
    }
}

/// An IORING_OP_URING_CMD SQE for `/dev/fuse`: command `cmd_op` for queue
/// `qid`, entry `index` as user data, its iovec pair as `addr` and 2 as
/// `len`.
fn command(
    device: BorrowedFd,
    cmd_op: u32,
    qid: u16,
    commit_id: u64,
    index: usize,
    entry: &Entry,
) -> squeue::Entry128 {
    let mut sqe = opcode::UringCmd80::new(types::Fd(device.as_raw_fd()), cmd_op)
        .cmd(ring::cmd_req(commit_id, qid))
        .addr(Some(entry.iov as u64))
        .build()
        .user_data(index as u64);
    // The io-uring crate's UringCmd80 does not set `len`, which FUSE reads
    // as the number of iovecs (FUSE_URING_IOV_SEGS).
    // SAFETY: `Entry128` is `#[repr(C)]` and starts with the kernel's
    // `struct io_uring_sqe`, whose `__u32 len` is at byte offset 24
    // (opcode, flags, ioprio, fd, off, addr before it).
    unsafe { std::ptr::addr_of_mut!(sqe).cast::<u8>().add(24).cast::<u32>().write_unaligned(2) };
    sqe
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET sets one bit of the set; a CPU past the set's 1024
    // bits panics on the bounds check of its word, never writes past it.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the set outlives the call; 0 means the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The errors with which the kernel ends an entry at unmount or abort.
fn is_shutdown(errno: i32) -> bool {
    matches!(errno, libc::ENOTCONN | libc::ECANCELED | libc::ECONNABORTED | libc::ENODEV)
}

/// Runs one queue until the connection ends. `ready` hears once whether
/// every entry registered, or the connection ended first (an error names
/// the errno).
pub fn run<S: Serve + ?Sized>(
    server: &S,
    device: BorrowedFd,
    setup: QueueSetup,
    ready: impl FnOnce(Result<(), String>),
) -> io::Result<QueueStats> {
    let qid = setup.qid;
    if setup.pin {
        if let Err(e) = pin_to(qid.into()) {
            crate::report_line(&format!("fuse: queue {qid}: cannot pin to CPU {qid}: {e}"));
        }
    }
    // Declared before the ring, so dropped after it: the ring may write
    // into its counter while a read of its eventfd is outstanding.
    let mut waits = match Waits::new(setup.entries) {
        Ok(waits) => waits,
        Err(e) => {
            ready(Err(format!("eventfd: {e}")));
            return Err(e);
        }
    };
    let mut builder = IoUring::<squeue::Entry128, cqueue::Entry>::builder();
    match setup.taskrun {
        TaskRun::Defer => builder.setup_single_issuer().setup_defer_taskrun(),
        TaskRun::Coop => builder.setup_coop_taskrun().setup_taskrun_flag(),
        TaskRun::Plain => &mut builder,
    };
    // A slot for each entry's command and one for the read of the waits'
    // eventfd.
    let mut ring = match builder.build((setup.entries + 1).next_power_of_two() as u32) {
        Ok(ring) => ring,
        Err(e) => {
            ready(Err(format!("io_uring_setup: {e}")));
            return Err(e);
        }
    };
    let mut entries: Vec<Entry> = (0..setup.entries).map(|_| Entry::new(setup.payload_size)).collect();
    for (index, entry) in entries.iter().enumerate() {
        let sqe = command(device, ring::CMD_REGISTER, qid, 0, index, entry);
        // SAFETY: the entry's buffers and iovecs stay allocated and
        // untouched by this thread while the kernel holds them (see `Entry`).
        if unsafe { ring.submission().push(&sqe) }.is_err() {
            ready(Err("submission queue smaller than the entries".to_string()));
            return Err(io::Error::other("submission queue full"));
        }
    }
    if let Err(e) = ring.submit() {
        ready(Err(format!("io_uring_enter: {e}")));
        return Err(e);
    }
    let mut queue = Queue {
        server,
        device,
        qid,
        stats: QueueStats::default(),
        scratch: vec![0; setup.payload_size],
        done: Vec::with_capacity(setup.entries),
        waits: &mut waits,
    };
    // A REGISTER that fails completes at once; one that succeeds completes
    // only when a request arrives.
    let refused = queue.complete(&mut ring, &mut entries);
    // A connection that ended while the queues registered (an unmount
    // right after the mount) is an end like any other, not a failure.
    ready(match refused {
        Some(errno) if !is_shutdown(errno) => {
            Err(format!("REGISTER: {}", io::Error::from_raw_os_error(errno)))
        }
        _ => Ok(()),
    });
    while entries.iter().any(|e| e.state != State::Retired) {
        wait_for_completions(&mut ring)?;
        queue.complete(&mut ring, &mut entries);
    }
    // Every entry is retired, so no wait is in flight; a read of the
    // eventfd may still be, and must end before the counter it writes
    // into goes.
    if queue.waits.armed {
        queue.waits.wake();
        while queue.waits.armed {
            wait_for_completions(&mut ring)?;
            queue.complete(&mut ring, &mut entries);
        }
    }
    let stats = queue.stats;
    drop(ring);
    waits.finish();
    Ok(stats)
}

/// Submits what is queued and waits for at least one completion.
fn wait_for_completions(ring: &mut IoUring<squeue::Entry128, cqueue::Entry>) -> io::Result<()> {
    match ring.submit_and_wait(1) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(()),
        // Completions overflowed: reap them before submitting more.
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(()),
        Err(e) => Err(e),
    }
}

impl Default for QueueStats {
    fn default() -> QueueStats {
        QueueStats { requests: 0, by_opcode: [0; 64], failures: 0, waited: 0 }
    }
}

/// A queue's thread state between completions.
struct Queue<'a, S: ?Sized> {
    /// Answers waiting on other threads.
    waits: &'a mut Waits,
    server: &'a S,
    device: BorrowedFd<'a>,
    qid: u16,
    stats: QueueStats,
    /// Where a reply is built while the request's payload is still read.
    scratch: Vec<u8>,
    /// The completions being served (entry, result), kept between calls
    /// so that serving allocates nothing.
    done: Vec<(u64, i32)>,
}

impl<S: Serve + ?Sized> Queue<'_, S> {
    /// Serves every completion waiting, queueing a commit for each
    /// request answered and for each answer whose wait has ended. Returns
    /// the errno of a REGISTER the kernel refused, if any.
    fn complete(
        &mut self,
        ring: &mut IoUring<squeue::Entry128, cqueue::Entry>,
        entries: &mut [Entry],
    ) -> Option<i32> {
        let mut refused = None;
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        done.extend(ring.completion().map(|cqe| (cqe.user_data(), cqe.result())));
        for &(user_data, result) in &done {
            if user_data == WOKEN {
                self.waits.armed = false;
                self.commit_waited(ring, entries);
                continue;
            }
            let index = user_data as usize;
            let Some(entry) = entries.get_mut(index) else {
                crate::report_line(&format!(
                    "fuse: queue {}: completion for unknown entry {index}",
                    self.qid
                ));
                continue;
            };
            if result < 0 {
                entry.state = State::Retired;
                let errno = -result;
                if entry.registering {
                    refused = Some(errno);
                } else if !is_shutdown(errno) {
                    self.stats.failures += 1;
                    crate::report_line(&format!(
                        "fuse: queue {}: COMMIT_AND_FETCH: {}",
                        self.qid,
                        io::Error::from_raw_os_error(errno)
                    ));
                }
                continue;
            }
            entry.state = State::User;
            entry.registering = false;
            self.stats.requests += 1;
            match self.serve(entry) {
                None => self.commit(ring, index, entry),
                Some((finish, answer)) => {
                    entry.state = State::Waiting;
                    self.stats.waited += 1;
                    let reply = Lent { ptr: entry.payload, len: entry.payload_len };
                    if let Err(e) = self.waits.hand(index, finish, answer, reply) {
                        // No worker to finish it: the answer goes as a failure.
                        crate::report_line(&format!("fuse: queue {}: {e}", self.qid));
                        self.answer(entry, Answer::Error(libc::EIO));
                        self.commit(ring, index, entry);
                    }
                }
            }
        }
        self.done = done;
        // The eventfd is read whenever answers may be waiting; the read
        // costs nothing until a wait ends.
        if !self.waits.armed && entries.iter().any(|e| e.state == State::Waiting) {
            // SAFETY: `waits` outlives the ring (see `run`).
            let read = unsafe { self.waits.read() };
            // SAFETY: the read's buffer is the waits' counter, as above.
            if unsafe { ring.submission().push(&read) }.is_ok() {
                self.waits.armed = true;
            } else {
                crate::report_line(&format!("fuse: queue {}: submission queue full", self.qid));
            }
        }
        refused
    }

    /// Commits the answers the workers have finished.
    fn commit_waited(&mut self, ring: &mut IoUring<squeue::Entry128, cqueue::Entry>, entries: &mut [Entry]) {
        let ended: Vec<_> = self.waits.ended().collect();
        for (index, answer) in ended {
            let Some(entry) = entries.get_mut(index).filter(|e| e.state == State::Waiting) else {
                crate::report_line(&format!(
                    "fuse: queue {}: an answer finished for entry {index}",
                    self.qid
                ));
                continue;
            };
            // The worker is done with the payload: the entry is this
            // thread's again.
            entry.state = State::User;
            self.answer(entry, answer);
            self.commit(ring, index, entry);
        }
    }

    /// Writes the out header of `answer`, whose bytes (if any) are in
    /// `entry`'s payload already.
    fn answer(&self, entry: &mut Entry, answer: Answer) {
        let (unique, payload_len) = (entry.unique, entry.payload_len);
        let (header, _) = entry.buffers();
        let reply_len = match answer {
            Answer::Reply(n) => n.min(payload_len),
            _ => 0,
        };
        let mut out = [0; OUT_HEADER_SIZE];
        put_out_header(&mut out, unique, answer);
        header.in_out[..OUT_HEADER_SIZE].copy_from_slice(&out);
        header.set_payload_size(reply_len as u32);
    }

    /// Gives `entry`, its answer written, back to the kernel with
    /// COMMIT_AND_FETCH.
    fn commit(
        &mut self,
        ring: &mut IoUring<squeue::Entry128, cqueue::Entry>,
        index: usize,
        entry: &mut Entry,
    ) {
        entry.state = State::Kernel;
        let sqe = command(self.device, ring::CMD_COMMIT_AND_FETCH, self.qid, entry.commit_id, index, entry);
        // SAFETY: as for REGISTER: the entry is the kernel's again until
        // its next completion. The submission queue has a slot per entry.
        if unsafe { ring.submission().push(&sqe) }.is_err() {
            entry.state = State::Retired;
            crate::report_line(&format!("fuse: queue {}: submission queue full", self.qid));
        }
    }

    /// Answers the request in `entry`'s buffers in place, noting in the
    /// entry what its commit quotes; returns, if the answer is not
    /// finished, what finishes it and the answer so far.
    fn serve(&mut self, entry: &mut Entry) -> Option<(Finish, Answer)> {
        let (header, payload) = entry.buffers();
        let commit_id = header.commit_id();
        let header_bytes = &header.in_out[..IN_HEADER_SIZE];
        let fixed = InHeader::decode(header_bytes)
            .ok()
            .and_then(|h| op_in_size(h.opcode))
            .unwrap_or(0)
            .min(header.op_in.len());
        let payload_len = (header.payload_size() as usize).min(payload.len());
        let (unique, answer, finish) =
            match Request::decode(header_bytes, &header.op_in[..fixed], &payload[..payload_len]) {
                Ok(request) => {
                    let slot = (request.header.opcode as usize).min(self.stats.by_opcode.len() - 1);
                    self.stats.by_opcode[slot] += 1;
                    let (answer, finish) = self.server.serve_later(&request, &mut self.scratch);
                    (request.header.unique, answer, finish)
                }
                Err(e) => {
                    crate::report_line(&format!("fuse: queue {}: {e}", self.qid));
                    (commit_id, Answer::Error(libc::EIO), None)
                }
            };
        // The kernel never sends FORGET over the ring (it queues forgets on
        // /dev/fuse), but an entry must be committed to be fetched again.
        let answer = if answer == Answer::Nothing { Answer::Error(libc::ENOSYS) } else { answer };
        let reply_len = match answer {
            Answer::Reply(n) => n,
            _ => 0,
        };
        payload[..reply_len].copy_from_slice(&self.scratch[..reply_len]);
        entry.unique = unique;
        entry.commit_id = commit_id;
        match finish {
            Some(finish) => Some((finish, answer)),
            None => {
                self.answer(entry, answer);
                None
            }
        }
    }
}
