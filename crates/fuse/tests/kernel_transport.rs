//! fslab's own FUSE transport (`fslab_fuse::kernel`) end to end: a server
//! of one directory and one file, mounted with mount(2) and served over
//! the `/dev/fuse` loop, and over FUSE over io_uring where the kernel has
//! it. Real system calls read the directory, the file and its attributes
//! through each, and unmounting ends every serving thread. Over the ring,
//! an fsync whose answer waits (`Serve::serve_later`) holds no queue.

mod common;

use fslab_fuse::kernel::reply::{self, Answer, Attr, Entry, InitOut, Out};
use fslab_fuse::kernel::request::{Op, Request};
use fslab_fuse::kernel::{device, init_flag, open_flag, queue, Finish, Serve};
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

const FILE_INO: u64 = 2;
const CONTENTS: &[u8] = b"served without fuser\n";
const MAX_WRITE: u32 = 128 << 10;

/// The root directory holding `hello`, whose contents are [`CONTENTS`].
/// An fsync's answer waits (over a transport that lets it) for the
/// outcome the test sends through `fsync_outcomes`.
struct Hello {
    served: AtomicU64,
    fsync_outcomes: Arc<Mutex<mpsc::Receiver<Result<(), i32>>>>,
}

impl Hello {
    /// The server, and where to send the outcomes of its fsyncs' waits.
    fn new() -> (Hello, mpsc::Sender<Result<(), i32>>) {
        let (outcomes, fsync_outcomes) = mpsc::channel();
        (Hello { served: AtomicU64::new(0), fsync_outcomes: Arc::new(Mutex::new(fsync_outcomes)) }, outcomes)
    }
}

fn attr(ino: u64) -> Attr {
    let (mode, size, nlink) = if ino == FILE_INO {
        (libc::S_IFREG | 0o444, CONTENTS.len() as u64, 1)
    } else {
        (libc::S_IFDIR | 0o755, 0, 2)
    };
    Attr { ino, size, mode, nlink, blksize: 4096, mtime: (1_700_000_000, 5), ..Attr::default() }
}

impl Hello {
    fn answer(&self, request: &Request, out: &mut Out) -> Result<(), i32> {
        let node = request.header.nodeid;
        let long = Duration::from_secs(1);
        match &request.op {
            Op::Lookup { name } if node == 1 && *name == b"hello" => {
                let entry =
                    Entry { attr: attr(FILE_INO), generation: 1, entry_valid: long, attr_valid: long };
                reply::put_entry(out, &entry)?;
            }
            Op::Lookup { .. } => return Err(libc::ENOENT),
            Op::Getattr { .. } if node == 1 || node == FILE_INO => {
                reply::put_attr_out(out, &attr(node), long)?
            }
            Op::Open { .. } => reply::put_open(out, 0, open_flag::KEEP_CACHE)?,
            Op::Opendir { .. } => reply::put_open(out, 0, 0)?,
            Op::Read { offset, size, .. } if node == FILE_INO => {
                let from = (*offset as usize).min(CONTENTS.len());
                let to = (from + *size as usize).min(CONTENTS.len());
                out.bytes(&CONTENTS[from..to])?;
            }
            Op::Readdir { offset, size, .. } => {
                let names: [(&[u8], u64, u32); 3] = [
                    (b".", 1, libc::DT_DIR.into()),
                    (b"..", 1, libc::DT_DIR.into()),
                    (b"hello", FILE_INO, libc::DT_REG.into()),
                ];
                for (i, &(name, ino, kind)) in names.iter().enumerate().skip(*offset as usize) {
                    if !reply::put_dirent(out, *size as usize, ino, i as u64 + 1, kind, name)? {
                        break;
                    }
                }
            }
            Op::Release { .. } | Op::Releasedir { .. } | Op::Destroy | Op::Fsync { .. } => {}
            Op::Statfs => {
                reply::put_statfs(out, &reply::Statfs { bsize: 4096, namelen: 255, ..Default::default() })?
            }
            _ => return Err(libc::ENOSYS),
        }
        Ok(())
    }
}

impl Serve for Hello {
    fn serve(&self, request: &Request, buf: &mut [u8]) -> Answer {
        self.served.fetch_add(1, Ordering::Relaxed);
        reply::answer(request, buf, |out| self.answer(request, out))
    }

    fn serve_later(&self, request: &Request, buf: &mut [u8]) -> (Answer, Option<Finish>) {
        let answer = self.serve(request, buf);
        if !matches!(request.op, Op::Fsync { .. }) {
            return (answer, None);
        }
        let outcomes = Arc::clone(&self.fsync_outcomes);
        let finish = move |_: &mut [u8], answer: Answer| {
            let outcome =
                outcomes.lock().map_err(|_| libc::EIO).and_then(|o| o.recv().map_err(|_| libc::EIO));
            match outcome {
                Ok(Ok(())) => answer,
                Ok(Err(errno)) | Err(errno) => Answer::Error(errno),
            }
        };
        (answer, Some(Box::new(finish)))
    }
}

/// An fsync whose answer waits leaves its queue serving: a lookup from
/// the same CPU is answered meanwhile, and the fsync returns when its
/// wait ends, with the wait's error if it failed.
fn fsync_waits_off_the_queue(dir: &Path, outcomes: &mpsc::Sender<Result<(), i32>>) {
    common::pin_to_cpu_0();
    for (outcome, expected) in [(Ok(()), None), (Err(libc::EIO), Some(libc::EIO))] {
        let file = std::fs::File::open(dir.join("hello")).expect("open");
        let fsync = std::thread::spawn(move || {
            common::pin_to_cpu_0();
            file.sync_all().map_err(|e| e.raw_os_error())
        });
        // The fsync is on its way or waiting; a lookup (never cached: the
        // name is absent) from the same CPU must come back all the same.
        std::thread::sleep(Duration::from_millis(100));
        let (looked, lookup) = mpsc::channel();
        let absent = dir.join("absent");
        std::thread::spawn(move || {
            common::pin_to_cpu_0();
            let _ = looked.send(std::fs::metadata(absent).map_err(|e| e.raw_os_error()).err());
        });
        let looked_up = lookup.recv_timeout(Duration::from_secs(5));
        let finished = fsync.is_finished();
        if looked_up.is_err() || finished {
            // Unblock the queue before failing, or unmounting would wait on it.
            let _ = outcomes.send(Ok(()));
        }
        assert_eq!(looked_up.ok(), Some(Some(Some(libc::ENOENT))), "a lookup held behind a waiting fsync");
        assert!(!finished, "the fsync returned before its wait ended");
        outcomes.send(outcome).expect("the wait listens");
        let result = fsync.join().expect("fsync thread");
        assert_eq!(result.err().flatten(), expected);
    }
}

fn mount(dir: &Path) -> OwnedFd {
    let device =
        std::fs::OpenOptions::new().read(true).write(true).open("/dev/fuse").expect("open /dev/fuse");
    let data = format!(
        "fd={},rootmode={:o},user_id=0,group_id=0,default_permissions",
        device.as_raw_fd(),
        libc::S_IFDIR
    );
    let target = CString::new(dir.as_os_str().as_bytes()).expect("path");
    let data = CString::new(data).expect("options");
    // SAFETY: NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            c"hello".as_ptr(),
            target.as_ptr(),
            c"fuse.fslabtest".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            data.as_ptr().cast(),
        )
    };
    assert_eq!(rc, 0, "mount: {}", std::io::Error::last_os_error());
    OwnedFd::from(device)
}

fn unmount(dir: &Path) {
    let target = CString::new(dir.as_os_str().as_bytes()).expect("path");
    // SAFETY: a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::umount2(target.as_ptr(), 0) };
    assert_eq!(rc, 0, "umount: {}", std::io::Error::last_os_error());
}

/// What every transport must deliver: the listing, the file, its attributes.
fn exercise(dir: &Path) {
    let names: Vec<_> =
        std::fs::read_dir(dir).expect("readdir").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(names, ["hello"]);
    assert_eq!(std::fs::read(dir.join("hello")).expect("read"), CONTENTS);
    let meta = std::fs::metadata(dir.join("hello")).expect("stat");
    assert_eq!(
        (meta.ino(), meta.len(), meta.mode()),
        (FILE_INO, CONTENTS.len() as u64, libc::S_IFREG | 0o444)
    );
    assert_eq!((meta.mtime(), meta.mtime_nsec()), (1_700_000_000, 5));
    assert_eq!(
        std::fs::metadata(dir.join("absent")).map_err(|e| e.raw_os_error()).err(),
        Some(Some(libc::ENOENT))
    );
}

fn init_out(flags: u64) -> InitOut {
    InitOut {
        max_readahead: 128 << 10,
        flags,
        max_background: 16,
        congestion_threshold: 12,
        max_write: MAX_WRITE,
        time_gran: 1,
        max_pages: (MAX_WRITE / 4096) as u16,
    }
}

#[test]
fn a_server_of_its_own_answers_over_the_device_loop() {
    if !common::fuse_available(common::Mounter::RootOnly) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    let fd = mount(&dir);
    let (server, _) = Hello::new();
    std::thread::scope(|scope| {
        let device = fd.as_fd();
        let handshake = scope.spawn(move || {
            device::handshake(device, |_| Ok(init_out(init_flag::ASYNC_READ | init_flag::BIG_WRITES)))
        });
        // The kernel sends INIT at mount; statting the mount waits for it.
        handshake.join().expect("handshake thread").expect("handshake");
        let server = &server;
        let loops: Vec<_> = (0..2)
            .map(|_| scope.spawn(move || device::serve(server, device, MAX_WRITE as usize + 4096)))
            .collect();
        let result = std::panic::catch_unwind(|| exercise(&dir));
        unmount(&dir);
        let others: u64 = loops.into_iter().map(|l| l.join().expect("loop").expect("served").others).sum();
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
        assert!(others >= 5, "{others} requests over the device");
    });
}

#[test]
fn a_server_of_its_own_answers_over_fuse_over_io_uring() {
    if !common::fuse_available(common::Mounter::RootOnly) {
        return;
    }
    let Some(_restore) = common::UringEnabled::set() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    let fd = mount(&dir);
    let (server, outcomes) = Hello::new();
    let queues = queue::possible_cpus().expect("possible CPUs");
    std::thread::scope(|scope| {
        let device = fd.as_fd();
        let init = device::handshake(device, |offer| {
            assert!(offer.flags & init_flag::OVER_IO_URING != 0, "offered with enable_uring set");
            Ok(init_out(
                init_flag::ASYNC_READ
                    | init_flag::BIG_WRITES
                    | init_flag::MAX_PAGES
                    | init_flag::INIT_EXT
                    | init_flag::OVER_IO_URING,
            ))
        })
        .expect("handshake");
        assert!(init.flags & init_flag::OVER_IO_URING != 0);
        let server = &server;
        let device_loop = scope.spawn(move || device::serve(server, device, MAX_WRITE as usize + 4096));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let rings: Vec<_> = (0..queues)
            .map(|qid| {
                let ready_tx = ready_tx.clone();
                let setup = queue::QueueSetup {
                    qid: qid as u16,
                    pin: false,
                    entries: 2,
                    payload_size: MAX_WRITE as usize,
                    taskrun: queue::TaskRun::Defer,
                };
                scope.spawn(move || queue::run(server, device, setup, move |r| drop(ready_tx.send(r))))
            })
            .collect();
        let registered: Vec<_> = (0..queues).map(|_| ready_rx.recv().expect("a queue reports")).collect();
        // A sandbox that forbids io_uring itself (`kernel.io_uring_disabled`)
        // cannot test the ring; any other refusal fails the test.
        let no_io_uring =
            registered.iter().any(|r| r.as_ref().is_err_and(|e| e.starts_with("io_uring_setup")));
        let result = std::panic::catch_unwind(|| {
            if no_io_uring {
                println!("skipped: io_uring is not allowed here: {registered:?}");
                return;
            }
            assert!(registered.iter().all(|r| r.is_ok()), "{registered:?}");
            exercise(&dir);
            let outcomes = outcomes.clone();
            let dir = dir.clone();
            // On a thread of its own: it pins itself to one CPU.
            std::thread::spawn(move || fsync_waits_off_the_queue(&dir, &outcomes))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        });
        unmount(&dir);
        let served: Vec<_> = rings.into_iter().map(|r| r.join().expect("queue").expect("served")).collect();
        let over_rings: u64 = served.iter().map(|s| s.requests).sum();
        let waited: u64 = served.iter().map(|s| s.waited).sum();
        device_loop.join().expect("device loop").expect("served");
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
        assert!(no_io_uring || over_rings >= 5, "{over_rings} requests over the rings");
        assert!(no_io_uring || waited == 2, "{waited} answers waited off their queue");
    });
}
