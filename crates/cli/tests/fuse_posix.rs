//! POSIX behaviour through real system calls on a mounted fslab image: errno
//! values, rename semantics (plain, RENAME_NOREPLACE, RENAME_EXCHANGE),
//! fallocate modes, SEEK_DATA/SEEK_HOLE, fsync, large directories, unlinked
//! open files and statfs.

mod common;

use common::{errno, errno_name, mkfs_layout, Layout, Mode, Mount, Rng};
use std::ffi::{CString, OsStr};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A fresh image mounted in the foreground; both live as long as the value.
struct Fixture {
    m: Option<Mount>,
    layout: Layout,
    /// `-o` options beyond the layout's.
    options: Option<&'static str>,
    _tmp: tempfile::TempDir,
}

impl Fixture {
    fn new(layout: Layout) -> Option<Fixture> {
        Fixture::with_options(layout, None)
    }

    /// A fixture mounted with `-o options` as well.
    fn with_options(layout: Layout, options: Option<&'static str>) -> Option<Fixture> {
        if !common::fuse_or_skip() {
            return None;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let image = tmp.path().join("fs.img");
        mkfs_layout(&image, "256M", layout, &[]);
        let mut fx = Fixture { m: None, layout, options, _tmp: tmp };
        let m = Mount::new(&image, &fx._tmp.path().join("mnt"), Mode::Foreground, &fx.mount_args());
        fx.m = Some(m);
        Some(fx)
    }

    fn mount_args(&self) -> Vec<&'static str> {
        let mut args = self.layout.mount_args().to_vec();
        if let Some(options) = self.options {
            args.extend(["-o", options]);
        }
        args
    }

    fn dir(&self) -> PathBuf {
        self.m.as_ref().expect("mounted").dir.clone()
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.dir().join(rel)
    }

    /// Unmounts cleanly (the daemon must exit 0) and mounts again.
    fn remount(&mut self) {
        let m = self.m.take().expect("mounted");
        let (image, dir) = (m.image.clone(), m.dir.clone());
        m.unmount().expect("clean unmount");
        self.m = Some(Mount::new(&image, &dir, Mode::Foreground, &self.mount_args()));
    }

    fn finish(mut self) {
        self.m.take().expect("mounted").unmount().expect("clean unmount");
    }
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

#[track_caller]
fn expect_errno<T: std::fmt::Debug>(r: io::Result<T>, want: i32, what: &str) {
    match r {
        Ok(v) => panic!("{what}: succeeded ({v:?}), expected {}", errno_name(want)),
        Err(e) => assert_eq!(errno(&e), want, "{what}: got {e}, expected {}", errno_name(want)),
    }
}

fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    // Unknown bits go to the kernel as given, for it to refuse.
    Ok(renameat_with(CWD, from, CWD, to, RenameFlags::from_bits_retain(flags))?)
}

fn fallocate(f: &File, mode: libc::c_int, off: i64, len: i64) -> io::Result<()> {
    use rustix::fs::FallocateFlags;
    // The bits as given, and the offsets as the kernel reads them (signed),
    // so that the calls the kernel refuses reach it unchanged.
    let mode = FallocateFlags::from_bits_retain(mode as u32);
    Ok(rustix::fs::fallocate(f, mode, off as u64, len as u64)?)
}

fn lseek(f: &File, off: i64, whence: libc::c_int) -> io::Result<i64> {
    use rustix::fs::SeekFrom;
    // A negative offset goes to the kernel as it is (rustix passes the bits
    // on), for it to refuse.
    let pos = match whence {
        libc::SEEK_DATA => SeekFrom::Data(off as u64),
        libc::SEEK_HOLE => SeekFrom::Hole(off as u64),
        libc::SEEK_SET => SeekFrom::Start(off as u64),
        libc::SEEK_CUR => SeekFrom::Current(off),
        libc::SEEK_END => SeekFrom::End(off),
        _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
    };
    Ok(rustix::fs::seek(f, pos)? as i64)
}

fn statvfs(p: &Path) -> rustix::fs::StatVfs {
    rustix::fs::statvfs(p).expect("statvfs")
}

fn names_longer_than_255_bytes_are_rejected(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let long = "n".repeat(256);
    expect_errno(File::create(fx.p(&long)), libc::ENAMETOOLONG, "create 256-byte name");
    expect_errno(fs::create_dir(fx.p(&long)), libc::ENAMETOOLONG, "mkdir 256-byte name");
    expect_errno(fs::metadata(fx.p(&long)), libc::ENAMETOOLONG, "stat 256-byte name");
    File::create(fx.p("f")).expect("create f");
    expect_errno(fs::rename(fx.p("f"), fx.p(&long)), libc::ENAMETOOLONG, "rename to 256-byte name");
    expect_errno(fs::hard_link(fx.p("f"), fx.p(&long)), libc::ENAMETOOLONG, "link to 256-byte name");
    expect_errno(std::os::unix::fs::symlink("f", fx.p(&long)), libc::ENAMETOOLONG, "symlink 256-byte name");
    // Exactly 255 bytes is allowed, and found again.
    let max = "m".repeat(255);
    File::create(fx.p(&max)).expect("create 255-byte name").write_all(b"x").expect("write");
    let names: Vec<_> = fs::read_dir(fx.dir()).expect("readdir").flatten().map(|e| e.file_name()).collect();
    assert!(names.iter().any(|n| n.as_bytes() == max.as_bytes()), "255-byte name listed");
    assert_eq!(fs::read(fx.p(&max)).expect("read 255-byte name"), b"x");
    fx.finish();
}

fn errno_values_of_namespace_operations(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    fs::create_dir(fx.p("d")).expect("mkdir d");
    File::create(fx.p("d/f")).expect("create d/f");
    File::create(fx.p("file")).expect("create file");
    fs::create_dir(fx.p("empty")).expect("mkdir empty");

    expect_errno(fs::remove_dir(fx.p("d")), libc::ENOTEMPTY, "rmdir non-empty");
    expect_errno(fs::rename(fx.p("empty"), fx.p("d")), libc::ENOTEMPTY, "rename dir over non-empty dir");

    expect_errno(fs::create_dir(fx.p("d")), libc::EEXIST, "mkdir existing dir");
    expect_errno(fs::create_dir(fx.p("file")), libc::EEXIST, "mkdir over file");
    expect_errno(
        OpenOptions::new().write(true).create_new(true).open(fx.p("file")),
        libc::EEXIST,
        "O_CREAT|O_EXCL existing",
    );
    expect_errno(fs::hard_link(fx.p("file"), fx.p("d/f")), libc::EEXIST, "link onto existing name");
    expect_errno(std::os::unix::fs::symlink("x", fx.p("file")), libc::EEXIST, "symlink onto existing name");

    expect_errno(File::open(fx.p("missing")), libc::ENOENT, "open missing");
    expect_errno(fs::remove_file(fx.p("missing")), libc::ENOENT, "unlink missing");
    expect_errno(fs::remove_dir(fx.p("missing")), libc::ENOENT, "rmdir missing");
    expect_errno(fs::metadata(fx.p("missing/x")), libc::ENOENT, "stat under missing dir");
    expect_errno(fs::rename(fx.p("missing"), fx.p("x")), libc::ENOENT, "rename missing");
    expect_errno(File::create(fx.p("missing/x")), libc::ENOENT, "create under missing dir");

    expect_errno(File::open(fx.p("file/x")), libc::ENOTDIR, "open file/x");
    expect_errno(fs::create_dir(fx.p("file/x")), libc::ENOTDIR, "mkdir file/x");
    expect_errno(fs::remove_dir(fx.p("file")), libc::ENOTDIR, "rmdir file");
    expect_errno(fs::read_dir(fx.p("file")), libc::ENOTDIR, "opendir file");
    expect_errno(fs::rename(fx.p("d"), fx.p("file")), libc::ENOTDIR, "rename dir over file");

    expect_errno(OpenOptions::new().write(true).open(fx.p("d")), libc::EISDIR, "open dir for writing");
    expect_errno(fs::remove_file(fx.p("d")), libc::EISDIR, "unlink dir");
    expect_errno(fs::rename(fx.p("file"), fx.p("empty")), libc::EISDIR, "rename file over dir");

    expect_errno(fs::rename(fx.p("d"), fx.p("d/sub")), libc::EINVAL, "rename dir into itself");
    // After all those failures nothing changed.
    assert!(fx.p("d/f").is_file() && fx.p("file").is_file() && fx.p("empty").is_dir());
    assert_eq!(fs::read_dir(fx.dir()).expect("readdir").count(), 3);
    fx.finish();
}

/// The kernel remembers missing names (LOOKUP answers them with node 0);
/// every way of making a name must replace what it remembered.
fn names_looked_up_while_missing_can_then_be_made_every_way(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let missing = |name: &str| {
        expect_errno(fs::symlink_metadata(fx.p(name)), libc::ENOENT, name);
        expect_errno(fs::symlink_metadata(fx.p(name)), libc::ENOENT, name);
    };
    for name in ["created", "dir", "link", "hard", "renamed", "fifo"] {
        missing(name);
    }
    fs::create_dir(fx.p("d2")).expect("mkdir d2");
    missing("d2/inner");

    fs::write(fx.p("created"), b"data").expect("create");
    fs::create_dir(fx.p("dir")).expect("mkdir");
    std::os::unix::fs::symlink("created", fx.p("link")).expect("symlink");
    fs::hard_link(fx.p("created"), fx.p("hard")).expect("link");
    File::create(fx.p("source")).expect("create source");
    fs::rename(fx.p("source"), fx.p("renamed")).expect("rename onto a missing name");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fx.p("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("mkfifo");
    fs::write(fx.p("d2/inner"), b"x").expect("create in a subdirectory");

    assert_eq!(fs::read(fx.p("created")).expect("read"), b"data");
    assert!(fx.p("dir").is_dir());
    assert_eq!(fs::read(fx.p("link")).expect("read through the symlink"), b"data");
    assert_eq!(fs::metadata(fx.p("hard")).expect("stat hard").nlink(), 2);
    assert!(fx.p("renamed").is_file() && !fx.p("source").exists());
    assert!(fs::symlink_metadata(fx.p("fifo")).expect("stat fifo").file_type().is_fifo());
    assert_eq!(fs::read(fx.p("d2/inner")).expect("read inner"), b"x");

    // And removing a name makes it missing again, remembered or not.
    fs::remove_file(fx.p("hard")).expect("unlink");
    missing("hard");
    fs::write(fx.p("hard"), b"again").expect("create again");
    assert_eq!(fs::read(fx.p("hard")).expect("read again"), b"again");
    fx.finish();
}

fn rename_over_an_existing_file_is_atomic(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let target = fx.p("target");
    fs::write(&target, b"version-0").expect("write target");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, target) = (stop.clone(), target.clone());
        std::thread::spawn(move || -> Result<u64, String> {
            let mut reads = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let mut s = String::new();
                match File::open(&target) {
                    Ok(mut f) => {
                        f.read_to_string(&mut s).map_err(|e| format!("read: {e}"))?;
                    }
                    Err(e) => return Err(format!("open of target failed during renames: {e}")),
                }
                if !s.starts_with("version-") || s.len() < 9 {
                    return Err(format!("reader saw a partial file: {s:?}"));
                }
                reads += 1;
            }
            Ok(reads)
        })
    };
    for i in 1..=300 {
        let tmp = fx.p(&format!("tmp{}", i % 7));
        fs::write(&tmp, format!("version-{i}")).expect("write tmp");
        fs::rename(&tmp, &target).expect("rename over target");
        assert!(!tmp.exists(), "source name still exists after rename");
    }
    stop.store(true, Ordering::SeqCst);
    let reads = reader.join().expect("reader thread").expect("reader never saw a missing or partial target");
    assert!(reads > 0, "the reader ran");
    assert_eq!(fs::read_to_string(&target).expect("read target"), "version-300");
    assert_eq!(fs::read_dir(fx.dir()).expect("readdir").count(), 1, "only the target is left");
    // The replaced inode's blocks are released and the result survives remount.
    let mut fx = fx;
    fx.remount();
    assert_eq!(fs::read_to_string(fx.p("target")).expect("read target"), "version-300");
    fx.finish();
}

/// A chunk of `CHUNK` bytes stamped with its index and a version, in
/// every 8 bytes, so that a read of a torn or misplaced chunk shows.
const CHUNK: usize = 4096;

fn stamped(index: u32, version: u32) -> Vec<u8> {
    let pair = [index.to_le_bytes(), version.to_le_bytes()].concat();
    pair.iter().copied().cycle().take(CHUNK).collect()
}

/// The version of a chunk read at `index`, or what is wrong with it.
fn stamp_of(chunk: &[u8], index: u32) -> Result<u32, String> {
    let word = |i: usize| u32::from_le_bytes([chunk[i], chunk[i + 1], chunk[i + 2], chunk[i + 3]]);
    let version = word(4);
    match (0..CHUNK).step_by(8).find(|&i| word(i) != index || word(i + 4) != version) {
        Some(i) => Err(format!(
            "chunk {index}: at byte {i} index {} version {} where the chunk starts with version {version}",
            word(i),
            word(i + 4)
        )),
        None => Ok(version),
    }
}

/// Reads of blocks the cache does not hold run their device transfers
/// without the file system's lock. Two readers (`O_DIRECT`, so that each
/// read reaches the file system) read random chunks of a file four times
/// the cache while a writer rewrites random chunks and a third thread
/// makes and removes other files, so that freed space is written again:
/// every chunk read is whole, in its place, and no older than the last
/// version written before the read began. (The race of a write between a
/// read's plan and its transfer is made deterministically, on every
/// layout, by the model test
/// `reads_fetched_outside_the_lock_see_the_file_as_it_was_or_read_again`;
/// here the path is run end to end, through the kernel.)
fn readers_of_uncached_blocks_see_whole_current_chunks_while_others_write(layout: Layout) {
    let Some(fx) = Fixture::with_options(layout, Some("cache=1M")) else { return };
    const CHUNKS: u32 = 1024;
    let path = fx.p("f");
    let file = File::create(&path).expect("create f");
    for i in 0..CHUNKS {
        file.write_all_at(&stamped(i, 0), i as u64 * CHUNK as u64).expect("write f");
    }
    file.sync_all().expect("fsync f");
    // The version of each chunk whose write has returned.
    let written: Arc<Vec<std::sync::atomic::AtomicU32>> =
        Arc::new((0..CHUNKS).map(|_| std::sync::atomic::AtomicU32::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2u64)
        .map(|seed| {
            let (stop, written, path) = (stop.clone(), written.clone(), path.clone());
            std::thread::spawn(move || -> Result<u64, String> {
                use std::os::unix::fs::OpenOptionsExt;
                let f = OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(&path)
                    .map_err(|e| format!("open O_DIRECT: {e}"))?;
                let mut rng = Rng::new(seed + 1);
                let mut buf = vec![0u8; CHUNK];
                let mut reads = 0;
                while !stop.load(Ordering::SeqCst) {
                    let i = rng.below(CHUNKS as u64) as u32;
                    let floor = written[i as usize].load(Ordering::SeqCst);
                    f.read_exact_at(&mut buf, i as u64 * CHUNK as u64).map_err(|e| format!("read: {e}"))?;
                    let version = stamp_of(&buf, i)?;
                    if version < floor {
                        return Err(format!("chunk {i}: read version {version} after {floor} was written"));
                    }
                    reads += 1;
                }
                Ok(reads)
            })
        })
        .collect();
    let churn = {
        let (stop, dir) = (stop.clone(), fx.dir());
        std::thread::spawn(move || -> Result<(), String> {
            let mut n = 0u32;
            while !stop.load(Ordering::SeqCst) {
                let name = dir.join(format!("churn{}", n % 4));
                let _ = fs::remove_file(&name);
                fs::write(&name, stamped(n, n).repeat(64)).map_err(|e| format!("churn write: {e}"))?;
                n += 1;
            }
            Ok(())
        })
    };
    let mut rng = Rng::new(99);
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        let i = rng.below(CHUNKS as u64) as u32;
        let version = written[i as usize].load(Ordering::SeqCst) + 1;
        file.write_all_at(&stamped(i, version), i as u64 * CHUNK as u64).expect("rewrite a chunk");
        written[i as usize].store(version, Ordering::SeqCst);
        if rng.below(64) == 0 {
            file.sync_data().expect("fdatasync");
        }
    }
    stop.store(true, Ordering::SeqCst);
    for reader in readers {
        let reads = reader.join().expect("reader thread").expect("every chunk read whole and current");
        assert!(reads > 100, "a reader made only {reads} reads");
    }
    churn.join().expect("churn thread").expect("churn");
    drop(file);
    let file = File::open(&path).expect("open f");
    let mut buf = vec![0u8; CHUNK];
    for i in 0..CHUNKS {
        file.read_exact_at(&mut buf, i as u64 * CHUNK as u64).expect("read back");
        assert_eq!(stamp_of(&buf, i), Ok(written[i as usize].load(Ordering::SeqCst)), "chunk {i} at the end");
    }
    drop(file);
    fx.finish();
}

fn renameat2_noreplace_and_exchange(layout: Layout) {
    let Some(mut fx) = Fixture::new(layout) else { return };
    fs::write(fx.p("a"), b"A").expect("write a");
    fs::write(fx.p("b"), b"B").expect("write b");
    fs::create_dir(fx.p("dir")).expect("mkdir dir");
    fs::write(fx.p("dir/inner"), b"I").expect("write dir/inner");

    expect_errno(
        renameat2(&fx.p("a"), &fx.p("b"), libc::RENAME_NOREPLACE),
        libc::EEXIST,
        "NOREPLACE onto existing",
    );
    assert_eq!(fs::read(fx.p("b")).expect("read b"), b"B", "NOREPLACE failure left b alone");
    renameat2(&fx.p("a"), &fx.p("c"), libc::RENAME_NOREPLACE).expect("NOREPLACE onto a free name");
    assert!(!fx.p("a").exists());
    assert_eq!(fs::read(fx.p("c")).expect("read c"), b"A");

    renameat2(&fx.p("b"), &fx.p("c"), libc::RENAME_EXCHANGE).expect("EXCHANGE two files");
    assert_eq!(fs::read(fx.p("b")).expect("read b"), b"A");
    assert_eq!(fs::read(fx.p("c")).expect("read c"), b"B");

    renameat2(&fx.p("b"), &fx.p("dir"), libc::RENAME_EXCHANGE).expect("EXCHANGE file and dir");
    assert!(fx.p("b").is_dir() && fx.p("dir").is_file());
    assert_eq!(fs::read(fx.p("b/inner")).expect("read b/inner"), b"I");
    assert_eq!(fs::read(fx.p("dir")).expect("read dir"), b"A");
    expect_errno(
        renameat2(&fx.p("b"), &fx.p("nothing"), libc::RENAME_EXCHANGE),
        libc::ENOENT,
        "EXCHANGE with missing",
    );

    // Exchange across directories keeps `..` right.
    fs::create_dir(fx.p("p1")).expect("mkdir p1");
    fs::create_dir(fx.p("p1/sub")).expect("mkdir p1/sub");
    fs::write(fx.p("p1/sub/x"), b"X").expect("write x");
    renameat2(&fx.p("p1/sub"), &fx.p("b"), libc::RENAME_EXCHANGE).expect("EXCHANGE dirs across parents");
    assert_eq!(fs::read(fx.p("b/x")).expect("read b/x"), b"X");
    assert_eq!(fs::read(fx.p("p1/sub/inner")).expect("read p1/sub/inner"), b"I");
    let root_ino = fs::metadata(fx.dir()).expect("stat root").ino();
    assert_eq!(fs::metadata(fx.p("b/..")).expect("stat b/..").ino(), root_ino, "b/.. is the root");
    assert_eq!(
        fs::metadata(fx.p("p1/sub/..")).expect("stat p1/sub/..").ino(),
        fs::metadata(fx.p("p1")).expect("stat p1").ino()
    );

    fx.remount();
    assert_eq!(fs::read(fx.p("c")).expect("read c"), b"B");
    assert_eq!(fs::read(fx.p("dir")).expect("read dir"), b"A");
    assert_eq!(fs::read(fx.p("b/x")).expect("read b/x"), b"X");
    assert_eq!(fs::read(fx.p("p1/sub/inner")).expect("read p1/sub/inner"), b"I");
    assert_eq!(
        fs::metadata(fx.dir()).expect("stat root").nlink(),
        2 + 2,
        "root: . and .. plus b/.. and p1/.."
    );
    fx.finish();
}

/// Every mode SEMANTICS.md promises works: plain allocation, KEEP_SIZE,
/// PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE with and without KEEP_SIZE. (This test
/// once accepted EOPNOTSUPP for each of them, so it could not fail.)
fn fallocate_does_every_promised_mode(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = fx.p("f");
    let data = Rng::new(1).bytes(1 << 20);
    fs::write(&path, &data).expect("write 1 MiB");
    let f = OpenOptions::new().read(true).write(true).open(&path).expect("open f");
    const K64: i64 = 65536;
    const MIB: u64 = 1 << 20;
    let blocks = |f: &File| f.metadata().expect("fstat").blocks();
    let read_at = |f: &File, at: i64, len: i64| {
        let mut buf = vec![1u8; len as usize];
        f.read_exact_at(&mut buf, at as u64).expect("read");
        buf
    };
    let zeros = |buf: &[u8]| buf.iter().all(|&b| b == 0);

    // Plain allocation past EOF: the file grows and the new range reads as zeros.
    fallocate(&f, 0, 1 << 20, 4 * K64).expect("fallocate mode 0");
    assert_eq!(f.metadata().expect("fstat").len(), MIB + 4 * K64 as u64, "mode 0 extends the size");
    assert!(zeros(&read_at(&f, 1 << 20, 4 * K64)), "allocated range reads as zeros");
    f.set_len(MIB).expect("truncate back");

    // KEEP_SIZE past EOF: space is taken, the size stays.
    let before = blocks(&f);
    fallocate(&f, libc::FALLOC_FL_KEEP_SIZE, 1 << 20, K64).expect("fallocate KEEP_SIZE");
    assert_eq!(f.metadata().expect("fstat").len(), MIB, "KEEP_SIZE keeps the size");
    assert!(blocks(&f) >= before + (K64 as u64) / 512, "KEEP_SIZE allocates: {before} -> {}", blocks(&f));

    // PUNCH_HOLE|KEEP_SIZE: zeros in the range, the rest and the size unchanged.
    fallocate(&f, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, K64, 2 * K64).expect("PUNCH_HOLE");
    let buf = read_at(&f, 0, 4 * K64);
    let k = K64 as usize;
    assert_eq!(&buf[..k], &data[..k], "before the hole unchanged");
    assert!(zeros(&buf[k..3 * k]), "hole reads zeros");
    assert_eq!(&buf[3 * k..], &data[3 * k..4 * k], "after the hole unchanged");
    assert_eq!(f.metadata().expect("fstat").len(), MIB);

    // ZERO_RANGE inside the file, not on block boundaries: zeros exactly there.
    fallocate(&f, libc::FALLOC_FL_ZERO_RANGE, 5 * K64 + 100, K64).expect("ZERO_RANGE");
    let buf = read_at(&f, 5 * K64, 2 * K64);
    assert_eq!(&buf[..100], &data[5 * k..5 * k + 100], "before the zeroed range unchanged");
    assert!(zeros(&buf[100..k + 100]), "zeroed range reads zeros");
    assert_eq!(&buf[k + 100..], &data[6 * k + 100..7 * k], "after the zeroed range unchanged");
    assert_eq!(f.metadata().expect("fstat").len(), MIB);

    // ZERO_RANGE past EOF grows the file; with KEEP_SIZE it does not.
    fallocate(&f, libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE, (1 << 20) - K64, 2 * K64)
        .expect("ZERO_RANGE|KEEP_SIZE");
    assert_eq!(f.metadata().expect("fstat").len(), MIB, "ZERO_RANGE|KEEP_SIZE keeps the size");
    assert!(zeros(&read_at(&f, (1 << 20) - K64, K64)), "zeroed tail reads zeros");
    fallocate(&f, libc::FALLOC_FL_ZERO_RANGE, 1 << 20, K64).expect("ZERO_RANGE past EOF");
    assert_eq!(f.metadata().expect("fstat").len(), MIB + K64 as u64, "ZERO_RANGE past EOF grows the file");
    assert!(zeros(&read_at(&f, 1 << 20, K64)), "the new range reads zeros");

    // Collapse and insert range: fslab has them (the library tests:
    // `ufs::tests::files`, `model.rs::random_collapse_insert_…`), but
    // Linux's FUSE module answers EOPNOTSUPP itself for any mode but
    // KEEP_SIZE, PUNCH_HOLE and ZERO_RANGE, so no request reaches fslab,
    // whether the call is valid, misaligned or combined with another flag.
    // Should a kernel pass them on, this fails, and must then check fslab's
    // answers instead.
    let before = read_at(&f, 0, 4 * K64);
    let size = f.metadata().expect("fstat").len();
    for (mode, offset, len, name) in [
        (libc::FALLOC_FL_COLLAPSE_RANGE, K64, K64, "COLLAPSE_RANGE"),
        (libc::FALLOC_FL_INSERT_RANGE, K64, K64, "INSERT_RANGE"),
        (libc::FALLOC_FL_COLLAPSE_RANGE, 1, K64, "COLLAPSE_RANGE misaligned"),
        (libc::FALLOC_FL_INSERT_RANGE | libc::FALLOC_FL_KEEP_SIZE, K64, K64, "INSERT_RANGE|KEEP_SIZE"),
    ] {
        let e = fallocate(&f, mode, offset, len).expect_err(name);
        assert_eq!(errno(&e), libc::EOPNOTSUPP, "fallocate {name}: {e}");
    }
    assert_eq!(read_at(&f, 0, 4 * K64), before, "refused calls change nothing");
    assert_eq!(f.metadata().expect("fstat").len(), size);
    // Unsupported combination of flags that the kernel passes to the file system.
    match fallocate(
        &f,
        libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
        0,
        K64,
    ) {
        Ok(_) => panic!("ZERO_RANGE|PUNCH_HOLE is not a valid mode, yet fallocate succeeded"),
        Err(e) => assert!(
            [libc::EOPNOTSUPP, libc::EINVAL].contains(&errno(&e)),
            "fallocate ZERO_RANGE|PUNCH_HOLE: {e}"
        ),
    }
    drop(f);
    fx.finish();
}

fn seek_data_and_seek_hole_find_the_holes(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    const MIB: i64 = 1 << 20;
    let path = fx.p("sparse");
    {
        let f = File::create(&path).expect("create");
        f.set_len(8 * MIB as u64).expect("truncate to 8 MiB");
        f.write_all_at(&[7u8; 4096], MIB as u64).expect("write at 1 MiB");
        f.write_all_at(&[9u8; 4096], 5 * MIB as u64).expect("write at 5 MiB");
        f.sync_all().expect("fsync");
    }
    let f = File::open(&path).expect("open");
    let size = 8 * MIB;
    let d0 = lseek(&f, 0, libc::SEEK_DATA).expect("SEEK_DATA from 0");
    assert!(d0 > 0 && d0 <= MIB, "SEEK_DATA(0) = {d0}: the first MiB is a hole, data starts at 1 MiB");
    let h1 = lseek(&f, MIB, libc::SEEK_HOLE).expect("SEEK_HOLE from 1 MiB");
    assert!((MIB + 4096..=5 * MIB).contains(&h1), "SEEK_HOLE(1 MiB) = {h1}");
    let d2 = lseek(&f, h1, libc::SEEK_DATA).expect("SEEK_DATA after the first extent");
    assert!(d2 > h1 && d2 <= 5 * MIB, "SEEK_DATA({h1}) = {d2}");
    let h2 = lseek(&f, 5 * MIB, libc::SEEK_HOLE).expect("SEEK_HOLE from 5 MiB");
    assert!((5 * MIB + 4096..=size).contains(&h2), "SEEK_HOLE(5 MiB) = {h2}");
    if h2 < size {
        expect_errno(lseek(&f, h2, libc::SEEK_DATA), libc::ENXIO, "SEEK_DATA in the trailing hole");
    }
    // The last byte lies in the trailing hole if there is one; else the hole is EOF.
    let want_last = if h2 < size { size - 1 } else { size };
    assert_eq!(lseek(&f, size - 1, libc::SEEK_HOLE).expect("SEEK_HOLE at the last byte"), want_last);
    expect_errno(lseek(&f, size, libc::SEEK_DATA), libc::ENXIO, "SEEK_DATA at EOF");
    expect_errno(lseek(&f, size + 1, libc::SEEK_HOLE), libc::ENXIO, "SEEK_HOLE past EOF");
    // As ext4 (iomap_seek_data and iomap_seek_hole): a negative offset is ENXIO.
    expect_errno(lseek(&f, -1, libc::SEEK_DATA), libc::ENXIO, "SEEK_DATA at a negative offset");
    expect_errno(lseek(&f, -MIB, libc::SEEK_HOLE), libc::ENXIO, "SEEK_HOLE at a negative offset");
    // Walking data extents with SEEK_DATA/SEEK_HOLE reads back exactly what was written.
    let mut found = Vec::new();
    let mut off = 0;
    while let Ok(d) = lseek(&f, off, libc::SEEK_DATA) {
        let h = lseek(&f, d, libc::SEEK_HOLE).expect("SEEK_HOLE after data");
        assert!(h > d, "empty data extent at {d}");
        let mut buf = vec![0u8; (h - d) as usize];
        f.read_exact_at(&mut buf, d as u64).expect("read extent");
        found.push((d, buf.iter().filter(|&&b| b != 0).count()));
        off = h;
        if off >= size {
            break;
        }
    }
    let nonzero: usize = found.iter().map(|x| x.1).sum();
    assert_eq!(nonzero, 8192, "all written bytes lie inside data extents: {found:?}");
    assert_eq!(found.len(), 2, "two data extents: {found:?}");
    drop(f);
    fx.finish();
}

fn fsync_and_fdatasync_succeed(layout: Layout) {
    let Some(mut fx) = Fixture::new(layout) else { return };
    let mut f = File::create(fx.p("f")).expect("create");
    f.write_all(&Rng::new(3).bytes(300_000)).expect("write");
    f.sync_data().expect("fdatasync");
    f.write_all(b"tail").expect("write more");
    f.sync_all().expect("fsync");
    f.seek(SeekFrom::Start(0)).expect("seek");
    drop(f);
    let d = File::open(fx.dir()).expect("open root dir");
    d.sync_all().expect("fsync of a directory");
    drop(d);
    rustix::fs::sync();
    fx.remount();
    let got = fs::read(fx.p("f")).expect("read back");
    assert_eq!(got.len(), 300_004);
    assert_eq!(&got[..300_000], &Rng::new(3).bytes(300_000)[..]);
    assert_eq!(&got[300_000..], b"tail");
    fx.finish();
}

/// Times before 1970 with a fraction of a second (as `tar`, `rsync` and
/// `cp -p` set them from old files) read back as set, before and after a
/// remount: the kernel sends -1.5 s as `{-2, 500000000}`.
fn times_before_1970_keep_their_fractions(layout: Layout) {
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, UNIX_EPOCH};
    let Some(mut fx) = Fixture::new(layout) else { return };
    let f = fx.p("old");
    fs::write(&f, b"x").expect("create");
    let (mtime, atime) = (UNIX_EPOCH - Duration::new(1, 500_000_000), UNIX_EPOCH - Duration::new(86_400, 1));
    File::options()
        .write(true)
        .open(&f)
        .and_then(|h| h.set_times(fs::FileTimes::new().set_modified(mtime).set_accessed(atime)))
        .expect("set times before 1970");
    for when in ["set", "after a remount"] {
        let m = fs::metadata(&f).expect("stat");
        assert_eq!((m.mtime(), m.mtime_nsec()), (-2, 500_000_000), "{when}: mtime");
        assert_eq!((m.atime(), m.atime_nsec()), (-86_401, 999_999_999), "{when}: atime");
        if when == "set" {
            fx.remount();
        }
    }
    fx.finish();
}

fn readdir_of_3000_entries_lists_each_once(layout: Layout) {
    let Some(mut fx) = Fixture::new(layout) else { return };
    let dir = fx.p("big");
    fs::create_dir(&dir).expect("mkdir big");
    let mut want = std::collections::BTreeSet::new();
    for i in 0..3000 {
        let name = format!("entry-{i:05}-{}", "z".repeat(i % 40));
        if i % 10 == 0 {
            fs::create_dir(dir.join(&name)).expect("mkdir entry");
        } else {
            File::create(dir.join(&name)).expect("create entry");
        }
        want.insert(name);
    }
    let list = |dir: &Path| -> Vec<String> {
        fs::read_dir(dir)
            .expect("readdir")
            .map(|e| e.expect("dirent").file_name().to_string_lossy().into_owned())
            .collect()
    };
    let check = |got: Vec<String>, want: &std::collections::BTreeSet<String>, when: &str| {
        let set: std::collections::BTreeSet<_> = got.iter().cloned().collect();
        assert_eq!(
            got.len(),
            set.len(),
            "{when}: duplicate entries in readdir ({} vs {})",
            got.len(),
            set.len()
        );
        assert_eq!(&set, want, "{when}: readdir set differs");
    };
    check(list(&dir), &want, "after create");
    // Remove every third entry while a listing is open, then list again.
    for (i, name) in want.clone().iter().enumerate() {
        if i % 3 == 0 {
            let p = dir.join(name);
            if p.is_dir() {
                fs::remove_dir(&p).expect("rmdir entry");
            } else {
                fs::remove_file(&p).expect("unlink entry");
            }
            want.remove(name);
        }
    }
    check(list(&dir), &want, "after removing a third");
    assert_eq!(
        fs::metadata(&dir).expect("stat big").nlink() as usize,
        2 + want.iter().filter(|n| dir.join(n).is_dir()).count()
    );
    fx.remount();
    check(list(&fx.p("big")), &want, "after remount");
    fx.finish();
}

/// A file created write-only bypasses the kernel's page cache; readers that
/// cache its pages, through read(2) or a mapping, must still see each write.
fn readers_see_every_write_of_a_file_created_write_only(layout: Layout) {
    let Some(mut fx) = Fixture::new(layout) else { return };
    let path = fx.p("written");
    let writer = OpenOptions::new().write(true).create_new(true).open(&path).expect("create write-only");
    writer.write_all_at(&[b'A'; 8192], 0).expect("first write");
    let reader = File::open(&path).expect("open for reading");
    let mut head = [0u8; 4];
    reader.read_exact_at(&mut head, 0).expect("read");
    assert_eq!(&head, b"AAAA");
    // SAFETY: a shared read-only mapping of a file this test owns, unmapped
    // below; its pages are only read.
    let map = unsafe {
        libc::mmap(std::ptr::null_mut(), 8192, libc::PROT_READ, libc::MAP_SHARED, reader.as_raw_fd(), 0)
    };
    assert_ne!(map, libc::MAP_FAILED, "mmap: {}", io::Error::last_os_error());
    // SAFETY: `map` is 8192 readable bytes until munmap.
    let mapped = |at: usize| unsafe { *(map as *const u8).add(at) };
    assert_eq!(mapped(4096), b'A');
    writer.write_all_at(&[b'B'; 8192], 0).expect("overwrite");
    reader.read_exact_at(&mut head, 4096).expect("read after overwrite");
    assert_eq!(&head, b"BBBB", "read(2) sees the overwrite");
    assert_eq!(mapped(0), b'B', "the mapping sees the overwrite");
    writer.write_all_at(b"tail", 8192).expect("extend");
    assert_eq!(reader.metadata().expect("fstat").len(), 8196, "the reader sees the new size");
    // SAFETY: unmapping the mapping made above, no longer used.
    assert_eq!(unsafe { libc::munmap(map, 8192) }, 0);
    writer.sync_all().expect("fsync");
    drop((writer, reader));
    fx.remount();
    let got = fs::read(&path).expect("read after remount");
    assert_eq!(got.len(), 8196);
    assert!(got[..8192].iter().all(|&b| b == b'B') && &got[8192..] == b"tail");
    fx.finish();
}

fn unlinked_open_file_stays_readable_until_close(layout: Layout) {
    let Some(mut fx) = Fixture::new(layout) else { return };
    let path = fx.p("ghost");
    let data = Rng::new(5).bytes(200_000);
    fs::write(&path, &data).expect("write");
    let mut f = OpenOptions::new().read(true).write(true).open(&path).expect("open");
    fs::remove_file(&path).expect("unlink while open");
    assert!(!path.exists(), "name gone after unlink");
    assert_eq!(fs::read_dir(fx.dir()).expect("readdir").count(), 0);
    let mut got = Vec::new();
    f.read_to_end(&mut got).expect("read unlinked file");
    assert_eq!(got, data, "unlinked file content");
    f.write_all(b"more").expect("write to unlinked file");
    f.sync_all().expect("fsync unlinked file");
    let mut tail = [0u8; 4];
    f.read_exact_at(&mut tail, data.len() as u64).expect("read back appended bytes");
    assert_eq!(&tail, b"more");
    assert_eq!(f.metadata().expect("fstat").nlink(), 0, "nlink 0 after unlink");
    // A new file may reuse the name without disturbing the open one.
    fs::write(&path, b"new").expect("create same name");
    let mut first = [0u8; 16];
    f.read_exact_at(&mut first, 0).expect("read again");
    assert_eq!(&first, &data[..16]);
    drop(f);
    fx.remount();
    assert_eq!(fs::read(fx.p("ghost")).expect("read new ghost"), b"new");
    assert_eq!(fs::read_dir(fx.dir()).expect("readdir").count(), 1, "the unlinked file left nothing behind");
    fx.finish();
}

fn statfs_numbers_are_sane_and_shrink_after_writing(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let before = statvfs(&fx.dir());
    let frsize = if before.f_frsize > 0 { before.f_frsize } else { before.f_bsize };
    assert!(
        frsize >= 512 && before.f_bsize > 0,
        "block sizes: bsize {} frsize {}",
        before.f_bsize,
        before.f_frsize
    );
    assert!(before.f_blocks > 0, "f_blocks > 0");
    assert!(before.f_bfree <= before.f_blocks, "f_bfree {} <= f_blocks {}", before.f_bfree, before.f_blocks);
    assert!(before.f_bavail <= before.f_bfree, "f_bavail {} <= f_bfree {}", before.f_bavail, before.f_bfree);
    let total = before.f_blocks * frsize;
    assert!(total <= 256 << 20, "f_blocks * frsize = {total} exceeds the 256 MiB image");
    assert!(total >= 128 << 20, "f_blocks * frsize = {total}: less than half of a 256 MiB image");
    assert!(
        before.f_bavail * frsize >= 100 << 20,
        "a fresh 256 MiB file system has {} bytes available",
        before.f_bavail * frsize
    );
    assert!(before.f_ffree <= before.f_files, "f_ffree {} <= f_files {}", before.f_ffree, before.f_files);
    assert!(before.f_namemax >= 255, "f_namemax {}", before.f_namemax);

    let mut f = File::create(fx.p("ten")).expect("create");
    let mut rng = Rng::new(11);
    for _ in 0..10 {
        f.write_all(&rng.bytes(1 << 20)).expect("write 1 MiB");
    }
    f.sync_all().expect("fsync");
    drop(f);
    let after = statvfs(&fx.dir());
    assert!(after.f_bavail <= after.f_bfree && after.f_bfree <= after.f_blocks, "ordering after writing");
    let used = (before.f_bfree.saturating_sub(after.f_bfree)) * frsize;
    assert!(used >= 10 << 20, "writing 10 MiB reduced f_bfree by only {used} bytes");
    assert!(used <= 40 << 20, "writing 10 MiB reduced f_bfree by {used} bytes");
    let avail_used = (before.f_bavail.saturating_sub(after.f_bavail)) * frsize;
    assert!(avail_used >= 10 << 20, "writing 10 MiB reduced f_bavail by only {avail_used} bytes");
    let inodes_used = |s: &rustix::fs::StatVfs| s.f_files.saturating_sub(s.f_ffree);
    assert!(inodes_used(&after) > inodes_used(&before), "one more inode in use after creating a file");
    fx.finish();
}

/// The `struct file_handle` `name_to_handle_at(2)` gives for `path`, as
/// bytes: its two header words, then the handle.
fn name_to_handle(path: &Path) -> io::Result<Vec<u8>> {
    const MAX_HANDLE_SZ: usize = 128;
    let header = std::mem::size_of::<libc::file_handle>();
    // u32 words keep the header aligned.
    let mut buf = vec![0u32; (header + MAX_HANDLE_SZ) / 4];
    buf[0] = MAX_HANDLE_SZ as u32;
    let mut mount_id = 0;
    let c = cpath(path);
    // SAFETY: `buf` is a file_handle with room for MAX_HANDLE_SZ bytes of
    // handle, as its first word says; the path is a valid C string.
    check(unsafe {
        libc::name_to_handle_at(libc::AT_FDCWD, c.as_ptr(), buf.as_mut_ptr().cast(), &mut mount_id, 0)
    })?;
    let len = header + buf[0] as usize;
    Ok(buf.iter().flat_map(|w| w.to_ne_bytes()).take(len).collect())
}

/// `open_by_handle_at(2)` of `handle` (from [`name_to_handle`]) on the
/// file system of `mount`.
fn open_by_handle(mount: &File, handle: &[u8], flags: libc::c_int) -> io::Result<File> {
    use std::os::fd::FromRawFd;
    let mut words: Vec<u32> =
        handle.chunks(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap_or([0; 4]))).collect();
    words.push(0);
    // SAFETY: `words` holds a whole file_handle as name_to_handle_at wrote it.
    let fd = check(unsafe { libc::open_by_handle_at(mount.as_raw_fd(), words.as_mut_ptr().cast(), flags) })?;
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Makes the kernel forget every inode and dentry nothing holds, fslab's
/// included (it sends FORGET for each).
fn drop_kernel_caches() {
    fs::write("/proc/sys/vm/drop_caches", "2").expect("drop the kernel's inode and dentry caches");
}

/// Regression: `open_by_handle_at` answered ESTALE for a file still
/// linked, so an fslab mount could not be exported over NFS. A handle must
/// open its file while the kernel caches it, after the kernel has
/// forgotten it (fslab is asked for node "." and for a directory's ".."),
/// and after a remount; a removed file's handle is stale.
fn file_handles_open_files_after_the_kernel_forgot_them_and_after_a_remount(layout: Layout) {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: open_by_handle_at needs CAP_DAC_READ_SEARCH");
        return;
    }
    let Some(mut fx) = Fixture::new(layout) else { return };
    fs::create_dir_all(fx.p("d/sub")).expect("mkdir");
    fs::write(fx.p("d/sub/g"), b"deep").expect("write g");
    fs::write(fx.p("f"), b"top").expect("write f");
    fs::write(fx.p("gone"), b"soon removed").expect("write gone");
    let handles: Vec<(&str, Vec<u8>)> = ["f", "d/sub/g", "d/sub", "gone"]
        .into_iter()
        .map(|name| (name, name_to_handle(&fx.p(name)).expect("name_to_handle_at")))
        .collect();
    fs::remove_file(fx.p("gone")).expect("unlink");
    let check_all = |fx: &Fixture, when: &str| {
        let mount = File::open(fx.dir()).expect("open the mount point");
        for (name, handle) in &handles {
            let opened = if *name == "d/sub" {
                open_by_handle(&mount, handle, libc::O_RDONLY | libc::O_DIRECTORY)
            } else {
                open_by_handle(&mount, handle, libc::O_RDONLY)
            };
            match *name {
                "gone" => expect_errno(opened, libc::ESTALE, &format!("handle of a removed file, {when}")),
                "d/sub" => {
                    let dir = opened.unwrap_or_else(|e| panic!("open {name} by handle, {when}: {e}"));
                    // The directory is joined to the tree again: its path is whole.
                    let path = fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).expect("fd path");
                    assert_eq!(path, fx.p("d/sub"), "path of {name} opened by handle, {when}");
                }
                _ => {
                    let mut file = opened.unwrap_or_else(|e| panic!("open {name} by handle, {when}: {e}"));
                    let mut text = String::new();
                    file.read_to_string(&mut text).expect("read");
                    let want = if *name == "f" { "top" } else { "deep" };
                    assert_eq!(text, want, "{name} opened by handle, {when}");
                }
            }
        }
    };
    check_all(&fx, "while the kernel caches the files");
    drop_kernel_caches();
    check_all(&fx, "after the kernel forgot them");
    fx.remount();
    check_all(&fx, "after a remount");
    fx.finish();
}

/// A long listing (`ls -l`: getdents, then lstat of each name) of a
/// directory the kernel has forgotten comes as READDIRPLUS, names and
/// attributes together: it must show what stat showed before, and every
/// lookup it hands the kernel must be one the kernel forgets again (a pin
/// never forgotten would keep an unlinked file's blocks for the mount's
/// life).
fn a_long_listing_after_the_kernel_forgot_shows_what_stat_showed_and_leaves_no_lookup(layout: Layout) {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: dropping the kernel's caches needs root");
        return;
    }
    let Some(fx) = Fixture::new(layout) else { return };
    let dir = fx.p("listed");
    fs::create_dir(&dir).expect("mkdir");
    for i in 0..700usize {
        let name = dir.join(format!("entry-{i:04}-{}", "n".repeat(i % 50)));
        match i % 20 {
            0 => fs::create_dir(&name).expect("mkdir entry"),
            1 => std::os::unix::fs::symlink("a-target", &name).expect("symlink"),
            _ => fs::write(&name, vec![b'x'; i * 7]).expect("write entry"),
        }
    }
    let seen = |dir: &Path| -> std::collections::BTreeMap<String, (u64, u64, u32, u64)> {
        fs::read_dir(dir)
            .expect("readdir")
            .map(|e| {
                let e = e.expect("dirent");
                let m = fs::symlink_metadata(e.path()).expect("lstat");
                assert_eq!(e.ino(), m.ino(), "{:?}: the listing's inode number is stat's", e.file_name());
                (e.file_name().to_string_lossy().into_owned(), (m.ino(), m.size(), m.mode(), m.nlink()))
            })
            .collect()
    };
    let before = seen(&dir);
    assert_eq!(before.len(), 700);
    drop_kernel_caches();
    assert_eq!(seen(&dir), before, "listed after the kernel forgot the directory");
    // With a 4 KiB buffer each request takes a few entries of the many
    // the daemon gathered and pinned for it: the rest must be let go.
    drop_kernel_caches();
    let small = getdents_in_small_buffers(&dir);
    assert_eq!(small.len(), 702, "every name once, '.' and '..' too");
    for (name, ino) in small.iter().filter(|(n, _)| n != "." && n != "..") {
        assert_eq!(Some(*ino), before.get(name).map(|b| b.0), "{name}");
    }
    drop_kernel_caches();
    let stat = common::fslab_run(&[OsStr::new("stat"), fx.dir().as_os_str()], Duration::from_secs(60));
    assert!(stat.success(), "fslab stat: {}", stat.describe());
    let held = stat.stdout.lines().find(|l| l.trim_start().starts_with("inodes in use")).map(|l| {
        l.split_whitespace()
            .rev()
            .nth(1)
            .and_then(|n| n.replace(',', "").parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    });
    assert!(held.is_some_and(|n| n < 10), "lookups the kernel forgot are still held: {}", stat.stdout);
    fx.finish();
}

/// The names and inode numbers of `dir`, read with `getdents64` into a
/// 4 KiB buffer (the kernel's smallest READDIRPLUS request).
fn getdents_in_small_buffers(dir: &Path) -> Vec<(String, u64)> {
    // Aligned as a dirent, so that RawDir uses all 4096 bytes.
    #[repr(C, align(8))]
    struct Buffer([std::mem::MaybeUninit<u8>; 4096]);
    let d = File::open(dir).expect("open directory");
    let mut buf = Buffer([std::mem::MaybeUninit::uninit(); 4096]);
    let mut entries = rustix::fs::RawDir::new(&d, &mut buf.0);
    let mut out = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = entry.unwrap_or_else(|e| panic!("getdents64: {}", io::Error::from(e)));
        out.push((String::from_utf8_lossy(entry.file_name().to_bytes()).into_owned(), entry.ino()));
    }
    out
}

/// A file's or directory's access time, in nanoseconds.
fn atime_ns(path: &Path) -> i128 {
    let m = fs::metadata(path).expect("stat");
    i128::from(m.atime()) * 1_000_000_000 + i128::from(m.atime_nsec())
}

/// A file's or directory's modification time, in nanoseconds.
fn mtime_ns(path: &Path) -> i128 {
    let m = fs::metadata(path).expect("stat");
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

/// Regression: reads never updated access times, and `strictatime` was
/// refused. With the page cache dropped before each read, every read
/// reaches fslab: `relatime` (the default) updates an access time not
/// after the last change once, `strictatime` at every read, `noatime`
/// never; a directory listing counts as a read of the directory; the new
/// times are kept across a remount.
fn reads_update_access_times_as_the_mount_options_say(layout: Layout) {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: dropping the page cache needs root");
        return;
    }
    let drop_page_cache = || fs::write("/proc/sys/vm/drop_caches", "3").expect("drop the page cache");
    for options in [None, Some("strictatime"), Some("noatime")] {
        let what = options.unwrap_or("relatime (default)");
        let Some(mut fx) = Fixture::with_options(layout, options) else { return };
        let (file, dir) = (fx.p("f"), fx.p("d"));
        fs::write(&file, b"contents").expect("write");
        let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_times(fs::FileTimes::new().set_accessed(old)))
            .expect("set the access time back");
        let set = atime_ns(&file);
        assert_eq!(set, 1_600_000_000 * 1_000_000_000, "{what}: atime set");
        fs::create_dir(&dir).expect("mkdir");
        fs::write(dir.join("x"), b"").expect("create in d");
        let dir_before = atime_ns(&dir);

        drop_page_cache();
        assert_eq!(fs::read(&file).expect("read"), b"contents");
        let first = atime_ns(&file);
        drop_page_cache();
        fs::read(&file).expect("read again");
        let second = atime_ns(&file);
        // A descriptor opened O_NOATIME (by the owner) reads without
        // touching atime, under every policy, as ext4's does.
        drop_page_cache();
        let mut quiet = Vec::new();
        File::options()
            .read(true)
            .custom_flags(libc::O_NOATIME)
            .open(&file)
            .and_then(|mut f| f.read_to_end(&mut quiet))
            .expect("read with O_NOATIME");
        assert_eq!((quiet.as_slice(), atime_ns(&file)), (&b"contents"[..], second), "{what}: O_NOATIME");
        drop_page_cache();
        assert_eq!(fs::read_dir(&dir).expect("list d").count(), 1);
        let dir_after = atime_ns(&dir);
        match options {
            None => {
                assert!(first > set && first >= mtime_ns(&file), "{what}: an old atime is updated");
                assert_eq!(second, first, "{what}: an atime after the last change stays");
                assert!(dir_after > dir_before && dir_after >= mtime_ns(&dir), "{what}: listing d");
            }
            Some("strictatime") => {
                assert!(first > set, "{what}: first read");
                assert!(second > first, "{what}: every read");
                assert!(dir_after > dir_before, "{what}: listing d");
            }
            _ => {
                assert_eq!((first, second), (set, set), "{what}: reads leave atime alone");
                assert_eq!(dir_after, dir_before, "{what}: listing d");
            }
        }
        fx.remount();
        assert_eq!(atime_ns(&file), second, "{what}: the file's atime kept across a remount");
        assert_eq!(atime_ns(&dir), dir_after, "{what}: the directory's atime kept across a remount");
        fx.finish();
    }
}

fn set_xattr(path: &Path, name: &str, value: &[u8]) -> io::Result<()> {
    Ok(rustix::fs::setxattr(path, name, value, rustix::fs::XattrFlags::empty())?)
}

fn remove_xattr(path: &Path, name: &str) -> io::Result<()> {
    Ok(rustix::fs::removexattr(path, name)?)
}

/// The limits docs/SEMANTICS.md states, through the kernel: a file's
/// attributes share one block (16 bytes of header, 5 bytes a name and
/// value besides their own bytes), each value at most 64 KiB (E2BIG) and
/// each name at most 255 bytes (ERANGE); ENOSPC exactly when the block is
/// full. The block is what `statfs` reports as the fragment size, so the
/// workload of xfstests' generic/020 (block/40 attributes, a value of
/// block − 256 bytes) fits on every layout.
fn extended_attributes_fill_one_block_and_fail_exactly_at_the_limits(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = fx.p("attrs");
    fs::write(&path, b"x").expect("create");
    let block = statvfs(&fx.dir()).f_frsize as usize;
    let many = block / 40;
    for n in 0..many {
        set_xattr(&path, &format!("user.attribute_{n}"), format!("value_{n}").as_bytes()).expect("many");
    }
    assert_eq!(xattr_names(&path).len(), many, "all {many} listed");
    for n in 0..many {
        remove_xattr(&path, &format!("user.attribute_{n}")).expect("remove");
    }
    set_xattr(&path, "user.long_attr", &vec![0u8; block - 256]).expect("a value of a block less 256 bytes");
    remove_xattr(&path, "user.long_attr").expect("remove");

    // One attribute alone: the largest value fits, a byte more does not.
    let largest = block - 16 - 5 - "user.v".len();
    set_xattr(&path, "user.v", &vec![1u8; largest]).expect("the largest value");
    expect_errno(set_xattr(&path, "user.v", &vec![1u8; largest + 1]), libc::ENOSPC, "a byte more");
    remove_xattr(&path, "user.v").expect("remove");
    expect_errno(set_xattr(&path, "user.v", &vec![1u8; 65537]), libc::E2BIG, "a value over 64 KiB");
    expect_errno(set_xattr(&path, &format!("user.{}", "n".repeat(251)), b""), libc::ERANGE, "256-byte name");
    set_xattr(&path, &format!("user.{}", "n".repeat(250)), b"v").expect("a 255-byte name");
    remove_xattr(&path, &format!("user.{}", "n".repeat(250))).expect("remove");

    // Many attributes: exactly as many as the block holds, then the last
    // bytes to the byte.
    let entry = 5 + "user.fill_000".len() + 100;
    let fit = (block - 16) / entry;
    for n in 0..fit {
        set_xattr(&path, &format!("user.fill_{n:03}"), &[2u8; 100]).expect("fill");
    }
    expect_errno(set_xattr(&path, "user.fill_999", &[2u8; 100]), libc::ENOSPC, "one more");
    let rest = block - 16 - fit * entry - 5 - "user.z".len();
    set_xattr(&path, "user.z", &vec![3u8; rest]).expect("the last bytes of the block");
    expect_errno(set_xattr(&path, "user.y", b""), libc::ENOSPC, "the block is full");
    assert_eq!(xattr_names(&path).len(), fit + 1);
    fx.finish();
}

/// The names `listxattr` returns.
fn xattr_names(path: &Path) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 1 << 16];
    let n = rustix::fs::listxattr(path, &mut buf[..]).expect("listxattr");
    buf[..n].split(|&b| b == 0).filter(|s| !s.is_empty()).map(<[u8]>::to_vec).collect()
}

/// Makes each check a test on every layout, and lists them all for
/// the tests over FUSE over io_uring.
macro_rules! posix_checks {
    ($($name:ident),* $(,)?) => {
        on_every_layout!($($name),*);
        /// Every check, for the tests over FUSE over io_uring.
        const CHECKS: &[fn(Layout)] = &[$($name),*];
    };
}

posix_checks!(
    a_long_listing_after_the_kernel_forgot_shows_what_stat_showed_and_leaves_no_lookup,
    extended_attributes_fill_one_block_and_fail_exactly_at_the_limits,
    reads_update_access_times_as_the_mount_options_say,
    file_handles_open_files_after_the_kernel_forgot_them_and_after_a_remount,
    names_longer_than_255_bytes_are_rejected,
    errno_values_of_namespace_operations,
    names_looked_up_while_missing_can_then_be_made_every_way,
    rename_over_an_existing_file_is_atomic,
    readers_of_uncached_blocks_see_whole_current_chunks_while_others_write,
    renameat2_noreplace_and_exchange,
    fallocate_does_every_promised_mode,
    seek_data_and_seek_hole_find_the_holes,
    fsync_and_fdatasync_succeed,
    times_before_1970_keep_their_fractions,
    readdir_of_3000_entries_lists_each_once,
    readers_see_every_write_of_a_file_created_write_only,
    unlinked_open_file_stays_readable_until_close,
    statfs_numbers_are_sane_and_shrink_after_writing,
);

/// Every check above, on two layouts, served over FUSE over io_uring
/// (`transport=ring`) instead of the classic `/dev/fuse` loop the tests
/// above get: each transport frames every request fslab serves.
mod over_fuse_over_io_uring {
    use super::*;

    fn all(layout: Layout) {
        if !common::fuse_or_skip() {
            return;
        }
        common::over_ring(|| CHECKS.iter().for_each(|check| check(layout)));
    }

    #[test]
    fn lfs() {
        all(Layout::Lfs)
    }

    #[test]
    fn ffs_softdep() {
        all(Layout::FfsSoftdep)
    }
}
