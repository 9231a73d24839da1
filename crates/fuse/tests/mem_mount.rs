//! The FUSE plumbing end to end over the in-memory storage manager: mount in
//! a temporary directory, drive it with real system calls, unmount, and check
//! that the final unmount reached the library exactly once.

mod common;

use fslab::storage::MemStorage;
use fslab::ufs::FileSystem;
use fslab_fuse::{mount, MountConfig, Transport};
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

#[test]
fn files_directories_links_and_xattrs_work_through_the_kernel() {
    if !common::fuse_available(common::Mounter::RootOrFusermount) {
        return;
    }
    exercise_over(Transport::Device);
}

/// The same, served over FUSE over io_uring (root only: it sets the
/// kernel's `enable_uring` for the test).
#[test]
fn files_directories_links_and_xattrs_work_over_fuse_over_io_uring() {
    if !common::fuse_available(common::Mounter::RootOnly) {
        return;
    }
    let Some(_restore) = common::UringEnabled::set() else { return };
    exercise_over(Transport::Ring);
}

fn exercise_over(transport: Transport) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("mnt");
    fs::create_dir(&dir).expect("mkdir");
    let fs_ = FileSystem::new(MemStorage::new(4096));
    let config = MountConfig { transport, ..MountConfig::default() };
    let mounted = mount(fs_, &dir, &config).expect("mount with /dev/fuse present");
    assert_eq!(mounted.transport(), transport, "the transport asked for");
    let unmounter = mounted.unmounter();
    let server = std::thread::spawn(move || mounted.run());

    let result = std::panic::catch_unwind(|| exercise(&dir));
    unmounter.unmount().expect("unmount");
    let served = server.join().expect("server thread");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    served.expect("clean unmount");
}

fn exercise(dir: &Path) {
    // Root attributes come through the 1 <-> 2 inode map.
    let root = fs::metadata(dir).expect("stat root");
    assert!(root.is_dir());

    // Create, write, read back (through the page cache and without it).
    let file = dir.join("hello.txt");
    fs::write(&file, b"hello, world\n").expect("write");
    assert_eq!(fs::read(&file).expect("read"), b"hello, world\n");
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 4096) as u8).collect();
    fs::write(dir.join("big"), &big).expect("write big");
    assert_eq!(fs::read(dir.join("big")).expect("read big"), big);
    assert_eq!(fs::metadata(dir.join("big")).expect("stat big").len(), big.len() as u64);

    // Truncate through O_TRUNC and set_len; chmod.
    fs::write(&file, b"short").expect("rewrite");
    assert_eq!(fs::read(&file).expect("read"), b"short");
    let f = fs::OpenOptions::new().write(true).open(&file).expect("open");
    f.set_len(2).expect("truncate");
    drop(f);
    assert_eq!(fs::read(&file).expect("read"), b"sh");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).expect("chmod");
    assert_eq!(fs::metadata(&file).expect("stat").mode() & 0o777, 0o600);

    // Directories, readdir, rename, hard and symbolic links.
    fs::create_dir(dir.join("sub")).expect("mkdir");
    for i in 0..300 {
        fs::write(dir.join("sub").join(format!("file-{i:04}")), i.to_string()).expect("create many");
    }
    let mut names: Vec<String> = fs::read_dir(dir.join("sub"))
        .expect("readdir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 300);
    assert_eq!(names[0], "file-0000");
    fs::rename(dir.join("sub/file-0001"), dir.join("moved")).expect("rename");
    assert_eq!(fs::read(dir.join("moved")).expect("read moved"), b"1");
    fs::hard_link(dir.join("moved"), dir.join("linked")).expect("link");
    assert_eq!(fs::metadata(dir.join("moved")).expect("stat").nlink(), 2);
    std::os::unix::fs::symlink("moved", dir.join("sym")).expect("symlink");
    assert_eq!(fs::read_link(dir.join("sym")).expect("readlink"), Path::new("moved"));
    assert_eq!(fs::read(dir.join("sym")).expect("read through symlink"), b"1");
    assert!(fs::remove_dir(dir.join("sub")).is_err(), "rmdir of a non-empty directory");
    fs::remove_file(dir.join("linked")).expect("unlink");

    // An open, unlinked file stays readable until closed.
    let ghost = dir.join("ghost");
    fs::write(&ghost, b"still here").expect("write ghost");
    let mut open = fs::File::open(&ghost).expect("open ghost");
    fs::remove_file(&ghost).expect("unlink ghost");
    assert!(!ghost.exists());
    let mut back = Vec::new();
    open.seek(SeekFrom::Start(0)).expect("seek");
    open.read_to_end(&mut back).expect("read ghost");
    assert_eq!(back, b"still here");
    drop(open);

    // Appending, fsync.
    let mut log = fs::OpenOptions::new().create(true).append(true).open(dir.join("log")).expect("open log");
    log.write_all(b"one\n").expect("append");
    log.write_all(b"two\n").expect("append");
    log.sync_all().expect("fsync");
    drop(log);
    assert_eq!(fs::read(dir.join("log")).expect("read log"), b"one\ntwo\n");

    // Extended attributes (via the xattr system calls).
    let path = std::ffi::CString::new(dir.join("log").as_os_str().as_encoded_bytes()).expect("path");
    let name = c"user.colour";
    // SAFETY: valid C strings and buffers that outlive each call.
    unsafe {
        assert_eq!(libc::setxattr(path.as_ptr(), name.as_ptr(), b"blue".as_ptr().cast(), 4, 0), 0);
        assert_eq!(libc::getxattr(path.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0), 4);
        let mut buf = [0u8; 16];
        assert_eq!(libc::getxattr(path.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()), 4);
        assert_eq!(&buf[..4], b"blue");
        let mut small = [0u8; 2];
        assert_eq!(libc::getxattr(path.as_ptr(), name.as_ptr(), small.as_mut_ptr().cast(), 2), -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ERANGE));
        let mut list = [0u8; 64];
        let n = libc::listxattr(path.as_ptr(), list.as_mut_ptr().cast(), list.len());
        assert_eq!(&list[..n as usize], b"user.colour\0");
        assert_eq!(libc::removexattr(path.as_ptr(), name.as_ptr()), 0);
    }

    // statfs answers.
    let cdir = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: `st` is written by statvfs; the path is a valid C string.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(cdir.as_ptr(), &mut st), 0);
        assert_eq!(st.f_bsize, 4096);
    }
}

#[test]
fn unmounting_a_busy_mount_detaches_it_and_the_session_ends_at_the_last_close() {
    if !common::fuse_available(common::Mounter::RootOrFusermount) {
        return;
    }
    busy_unmount_over(Transport::Device);
}

#[test]
fn a_busy_mount_served_over_fuse_over_io_uring_ends_at_the_last_close() {
    if !common::fuse_available(common::Mounter::RootOnly) {
        return;
    }
    let Some(_restore) = common::UringEnabled::set() else { return };
    busy_unmount_over(Transport::Ring);
}

fn busy_unmount_over(transport: Transport) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("mnt");
    fs::create_dir(&dir).expect("mkdir");
    let config = MountConfig { transport, ..MountConfig::default() };
    let mounted =
        mount(FileSystem::new(MemStorage::new(4096)), &dir, &config).expect("mount with /dev/fuse present");
    assert_eq!(mounted.transport(), transport);
    let unmounter = mounted.unmounter();
    let server = std::thread::spawn(move || mounted.run());
    fs::write(dir.join("busy"), b"x").expect("write");
    let open = fs::File::open(dir.join("busy")).expect("open");
    unmounter.unmount().expect("unmount of a busy mount");
    assert!(!dir.join("busy").exists(), "still visible after the unmount");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!server.is_finished(), "session ended while a file was open");
    drop(open);
    let served = server.join().expect("server thread");
    served.expect("clean unmount");
    unmounter.unmount().expect("a second unmount is harmless");
}

/// Over FUSE over io_uring, an fsync on LFS whose device takes 300 ms to
/// flush returns only after that flush, and while it waits, its CPU's
/// queue answers other callers: a lookup from the same CPU comes back at
/// once.
#[test]
fn an_fsync_over_the_ring_waits_for_its_flush_without_holding_its_queue() {
    use disk::{CountingDisk, MemDisk};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    const FLUSH: Duration = Duration::from_millis(300);
    if !common::fuse_available(common::Mounter::RootOnly) {
        return;
    }
    let Some(_restore) = common::UringEnabled::set() else { return };
    let image = Arc::new(MemDisk::new(64 << 20));
    fslab::mkfs_lfs(image.clone(), &Default::default(), Default::default()).expect("mkfs");
    let device = Arc::new(CountingDisk::with_flush_delay(MemDisk::from_bytes(image.snapshot()), FLUSH));
    let lfs = fslab::lfs::Lfs::mount(device.clone(), Default::default()).expect("mount the image");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("mnt");
    fs::create_dir(&dir).expect("mkdir");
    let config = MountConfig { transport: Transport::Ring, ..MountConfig::default() };
    let mounted = mount(FileSystem::new(lfs), &dir, &config).expect("mount over the ring");
    let unmounter = mounted.unmounter();
    let server = std::thread::spawn(move || mounted.run());
    let result = std::panic::catch_unwind(|| {
        common::pin_to_cpu_0();
        let path = dir.join("synced");
        let mut file = fs::File::create(&path).expect("create");
        // The file's creation is a directory operation, whose fsync writes
        // it with the ifile; the fsync measured writes the file alone.
        file.sync_all().expect("fsync the creation");
        file.write_all(b"durable before fsync returns").expect("write");
        let flushes = device.flushes();
        let started = Instant::now();
        let fsync = std::thread::spawn(move || {
            common::pin_to_cpu_0();
            let result = file.sync_all();
            (result, started.elapsed())
        });
        std::thread::sleep(FLUSH / 6);
        let looked = Instant::now();
        assert!(!dir.join("absent").exists());
        let lookup = looked.elapsed();
        let (synced, took) = fsync.join().expect("fsync thread");
        synced.expect("fsync");
        assert!(device.flushes() > flushes, "no flush for the fsync");
        assert!(took >= FLUSH, "the fsync returned after {took:?}, before its {FLUSH:?} flush");
        assert!(lookup < FLUSH / 2, "a lookup from the fsync's CPU took {lookup:?}: held behind the flush");
        assert_eq!(fs::read(&path).expect("read back"), b"durable before fsync returns");
    });
    unmounter.unmount().expect("unmount");
    let served = server.join().expect("server thread");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    served.expect("clean unmount");
}

/// The kernel's lookups are bounded: with room for 64, after 600 creates
/// the daemon asks the kernel to let go of the inodes it does not use
/// (FUSE_NOTIFY_PRUNE), the kernel forgets them, and the lookup table
/// shrinks to the bound; every file is still there to look up again.
#[test]
fn the_kernels_lookups_are_pruned_to_the_bound() {
    use std::time::{Duration, Instant};
    const BOUND: usize = 64;
    if !common::fuse_available(common::Mounter::RootOrFusermount) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("mnt");
    fs::create_dir(&dir).expect("mkdir");
    let config = MountConfig {
        transport: Transport::Device,
        max_kernel_inodes: Some(BOUND),
        tick_interval: Duration::from_millis(100),
        ..MountConfig::default()
    };
    let mounted = mount(FileSystem::new(MemStorage::new(4096)), &dir, &config).expect("mount");
    if mounted.kernel_protocol() < (7, 45) {
        println!("skipped: FUSE {:?} has no prune notification (7.45)", mounted.kernel_protocol());
        return;
    }
    let (unmounter, handle) = (mounted.unmounter(), mounted.handle());
    let server = std::thread::spawn(move || mounted.run());
    let result = std::panic::catch_unwind(|| {
        fs::create_dir(dir.join("many")).expect("mkdir");
        let pinned = || handle.with(|fs| Ok(fs.pinned())).expect("count");
        // Sampled after every create: on a slow machine the prune, every
        // tick, may already have run by the end of them.
        let mut most = 0;
        for i in 0..600 {
            fs::write(dir.join("many").join(format!("f{i}")), b"x").expect("create");
            most = most.max(pinned());
        }
        assert!(most > BOUND, "the created files are looked up: at most {most} at once");
        let started = Instant::now();
        while pinned() > BOUND && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(pinned() <= BOUND, "{} inodes still looked up after {:?}", pinned(), started.elapsed());
        for i in 0..600 {
            assert_eq!(fs::read(dir.join("many").join(format!("f{i}"))).expect("read again"), b"x");
        }
    });
    unmounter.unmount().expect("unmount");
    let served = server.join().expect("server thread");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    served.expect("clean unmount");
}
