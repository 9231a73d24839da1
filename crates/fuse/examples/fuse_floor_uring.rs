//! The FUSE floor over io_uring: the file system of `fuse_floor.rs` (names
//! and sizes in memory, nothing stored), served through FUSE over io_uring
//! instead of the `/dev/fuse` read/write loop. The two floors answer every
//! request alike; the difference in their rates is what the transport
//! costs. `scripts/bench-basic --only fuse-floor,fuse-floor-uring` runs
//! both. fuser, which the other floor and fslab's adapter use, has no
//! io_uring transport and keeps its protocol types private, so this one
//! speaks the kernel ABI itself, through the crate's `kernel` module.
//!
//! Usage: fuse_floor_uring [--entries N] [--taskrun defer|coop|plain] [--no-pin] [--stats] MOUNTPOINT
//!   (as root; serves in the foreground until unmounted; needs
//!   `echo Y > /sys/module/fuse/parameters/enable_uring`)
//!
//! The parts:
//! * `device` — mount(2) and its undoing.
//! * `fslab_fuse::kernel::device` — the FUSE_INIT handshake's reads and
//!   writes, and a loop on `/dev/fuse` for what never goes over the ring
//!   (forgets, interrupts).
//! * `fslab_fuse::kernel::queue` — one thread and ring per CPU, each
//!   lending the kernel `--entries` request buffers and answering in them.
//! * `floor` — the in-memory tree and the answer to every request.
//! * `abi` — the kernel's structures, decoded with checks, encoded into
//!   caller buffers: the crate's `fslab_fuse::kernel`.
//!
//! The sequence: mount → read INIT from /dev/fuse → reply with
//! FUSE_OVER_IO_URING → each queue registers its entries (the kernel holds
//! every request back until all queues have) → serve → unmount ends the
//! device loop (ENODEV) and every entry (ENOTCONN) → exit. If the kernel
//! does not offer FUSE over io_uring, or refuses a registration, the floor
//! unmounts and exits with status 1: it exists to measure the ring and
//! never falls back to the device loop.

/// The kernel's FUSE protocol, as one namespace.
mod abi {
    pub use fslab_fuse::kernel::reply::*;
    pub use fslab_fuse::kernel::request::*;
    pub use fslab_fuse::kernel::*;
}
#[path = "fuse_floor_uring/device.rs"]
mod device;
#[path = "fuse_floor_uring/floor.rs"]
mod floor;

use abi::init_flag;
use floor::Floor;
use fslab_fuse::kernel::device as transport;
use fslab_fuse::kernel::queue::{self, QueueSetup, TaskRun};
use queue::ENABLE_URING;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// The largest write the floor accepts, and so the payload buffer of every
/// ring entry: 256 pages, the kernel's default `max_pages_limit`, which
/// also bounds the fuser floor's writes (it asks for 16 MiB).
const MAX_WRITE: u32 = 1 << 20;
const MAX_PAGES: u16 = 256;

/// The command line.
struct Options {
    mountpoint: PathBuf,
    entries: usize,
    taskrun: TaskRun,
    pin: bool,
    stats: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: fuse_floor_uring [--entries N] [--taskrun defer|coop|plain] [--no-pin] [--stats] MOUNTPOINT"
    );
    std::process::exit(2);
}

fn options() -> Options {
    let mut args = std::env::args_os().skip(1);
    let mut options =
        Options { mountpoint: PathBuf::new(), entries: 8, taskrun: TaskRun::Defer, pin: true, stats: false };
    let mut mountpoint = None;
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--entries") => {
                let n = args.next().and_then(|n| n.to_str().and_then(|n| n.parse().ok()));
                options.entries = n.filter(|&n| n > 0 && n <= 1024).unwrap_or_else(|| usage());
            }
            Some("--taskrun") => {
                options.taskrun = match args.next().as_ref().and_then(|a| a.to_str()) {
                    Some("defer") => TaskRun::Defer,
                    Some("coop") => TaskRun::Coop,
                    Some("plain") => TaskRun::Plain,
                    _ => usage(),
                }
            }
            Some("--no-pin") => options.pin = false,
            Some("--stats") => options.stats = true,
            Some(s) if s.starts_with('-') => usage(),
            _ if mountpoint.is_none() => mountpoint = Some(PathBuf::from(arg)),
            _ => usage(),
        }
    }
    options.mountpoint = mountpoint.unwrap_or_else(|| usage());
    options
}

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("fuse_floor_uring: {message}");
    std::process::exit(1);
}

/// Reads FUSE_INIT from the device and answers it, asking for what the
/// fuser floor asks for and for FUSE over io_uring. Returns whether the
/// kernel opens files without asking (FUSE_NO_OPEN_SUPPORT), or why the
/// ring cannot be had.
fn handshake(device: std::os::fd::BorrowedFd) -> Result<bool, String> {
    let init = transport::handshake(device, |init| {
        if init.flags & init_flag::OVER_IO_URING == 0 {
            return Err(format!(
                "the kernel (FUSE ABI 7.{}) does not offer FUSE over io_uring; is {} Y?",
                init.minor, ENABLE_URING
            ));
        }
        // What the fuser floor ends up asking for (its own list, fuser's
        // defaults and INIT_EXT), as far as the kernel offers it; fuser's
        // defaults for the rest: 16 background requests, congestion at
        // three quarters of them, nanosecond times.
        Ok(abi::InitOut {
            max_readahead: init.max_readahead,
            flags: init_flag::ASYNC_READ
                | init_flag::BIG_WRITES
                | init_flag::MAX_PAGES
                | init_flag::PARALLEL_DIROPS
                | init_flag::HANDLE_KILLPRIV
                | init_flag::INIT_EXT
                | init_flag::OVER_IO_URING,
            max_background: 16,
            congestion_threshold: 12,
            max_write: MAX_WRITE,
            time_gran: 1,
            max_pages: MAX_PAGES,
        })
    })?;
    Ok(init.flags & init_flag::NO_OPEN_SUPPORT != 0)
}

fn main() {
    let options = options();
    if !Path::new(ENABLE_URING).exists() {
        fail(format!("{ENABLE_URING} is missing: this kernel has no FUSE over io_uring"));
    }
    match std::fs::read_to_string(ENABLE_URING) {
        Ok(value) if value.trim() == "Y" => {}
        Ok(value) => fail(format!("{ENABLE_URING} is {}; `echo Y > {ENABLE_URING}` first", value.trim())),
        Err(e) => fail(format!("{ENABLE_URING}: {e}")),
    }
    let queues = queue::possible_cpus().unwrap_or_else(|e| fail(e));
    let mountpoint = options
        .mountpoint
        .canonicalize()
        .unwrap_or_else(|e| fail(format!("mount point {}: {e}", options.mountpoint.display())));
    let device = device::mount(&mountpoint)
        .unwrap_or_else(|e| fail(format!("cannot mount on {}: {e}", mountpoint.display())));
    let give_up = |why: String| -> ! {
        device::unmount(&mountpoint);
        fail(why)
    };
    let zero_message_open = handshake(device.as_fd()).unwrap_or_else(|why| give_up(why));
    // SAFETY: getuid and getgid have no arguments and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let floor = Floor::new(uid, gid, zero_message_open);
    // The kernel's ring payload: max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages).
    let payload_size = abi::MIN_READ_BUFFER.max(MAX_WRITE as usize).max(usize::from(MAX_PAGES) * 4096);
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::scope(|scope| {
        let floor = &floor;
        let device = device.as_fd();
        let device_loop = scope.spawn(move || transport::serve(floor, device, payload_size + 4096));
        let mut queue_threads = Vec::new();
        for qid in 0..queues {
            let setup = QueueSetup {
                qid: qid as u16,
                pin: options.pin,
                entries: options.entries,
                payload_size,
                taskrun: options.taskrun,
            };
            let ready_tx = ready_tx.clone();
            let ready = move |result| {
                let _ = ready_tx.send((qid, result));
            };
            queue_threads.push(scope.spawn(move || queue::run(floor, device, setup, ready)));
        }
        drop(ready_tx);
        for _ in 0..queues {
            match ready_rx.recv() {
                Ok((_, Ok(()))) => {}
                Ok((qid, Err(why))) => give_up(format!("queue {qid}: {why}")),
                Err(_) => give_up("a queue thread ended before registering".to_string()),
            }
        }
        // Serving: each thread returns once unmounting ends the connection.
        let mut served = Vec::new();
        for (qid, thread) in queue_threads.into_iter().enumerate() {
            match thread.join() {
                Ok(Ok(stats)) => served.push(stats),
                Ok(Err(e)) => give_up(format!("queue {qid}: {e}")),
                Err(_) => give_up(format!("queue {qid} panicked")),
            }
        }
        let device_stats = match device_loop.join() {
            Ok(Ok(stats)) => stats,
            Ok(Err(e)) => fail(format!("/dev/fuse: {e}")),
            Err(_) => fail("the /dev/fuse loop panicked"),
        };
        if options.stats {
            let per_queue: Vec<String> = served.iter().map(|s| s.requests.to_string()).collect();
            eprintln!(
                "fuse_floor_uring: {} entries per queue; over the ring {} requests (by queue: {}); \
                 over /dev/fuse {} forgets, {} interrupts, {} others",
                options.entries,
                served.iter().map(|s| s.requests).sum::<u64>(),
                per_queue.join(" "),
                device_stats.forgets,
                device_stats.interrupts,
                device_stats.others
            );
        }
        if options.stats {
            let mut by_opcode = [0u64; 64];
            for s in &served {
                for (total, n) in by_opcode.iter_mut().zip(s.by_opcode) {
                    *total += n;
                }
            }
            let counts: Vec<String> = (0..by_opcode.len())
                .filter(|&op| by_opcode[op] > 0)
                .map(|op| format!("{op}:{}", by_opcode[op]))
                .collect();
            eprintln!("fuse_floor_uring: over the ring by opcode: {}", counts.join(" "));
        }
        if served.iter().any(|s| s.failures > 0) {
            std::process::exit(1);
        }
    });
}
