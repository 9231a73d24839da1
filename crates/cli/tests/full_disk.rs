//! Filling a small image until ENOSPC: the error must come (within bounded
//! bytes), it must be ENOSPC and nothing else, and after a clean unmount and a
//! new mount every byte whose write() was acknowledged (and whose file was
//! closed or fsynced without error) is there with the right content.

mod common;

use common::{errno, errno_name, mkfs_layout, Layout, Mode, Mount, Rng};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

const IMAGE_SIZE: u64 = 64 << 20;
const MIB: usize = 1 << 20;
/// write() size; FUSE splits it further.
const CHUNK: usize = 128 << 10;
/// ENOSPC must come before this many bytes were acknowledged.
const MAX_BYTES: u64 = 2 * IMAGE_SIZE;
/// A 64 MiB LFS must hold at least this much user data before it is full.
const MIN_BYTES: u64 = 24 << 20;

/// How much of a file is guaranteed after a clean unmount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Every write and the close succeeded: the whole file must be there.
    Complete,
    /// A write failed with ENOSPC, then fsync and close succeeded: exactly the
    /// acknowledged prefix must be there.
    Prefix,
    /// fsync or close failed: the data may be lost. Whatever is there must be
    /// no longer than what was acknowledged and hold right bytes or zeros.
    Uncertain,
    /// open(O_CREAT) failed: the file may be absent or empty.
    NotCreated,
    /// Deleted afterwards: must be absent.
    Deleted,
}

#[derive(Debug)]
struct Record {
    name: String,
    seed: u64,
    size: usize,
    acked: usize,
    fate: Fate,
}

fn content(seed: u64, size: usize) -> Vec<u8> {
    Rng::new(seed).bytes(size)
}

/// The first error that is not ENOSPC fails the test.
#[track_caller]
fn must_be_enospc(e: &io::Error, what: &str) {
    assert_eq!(errno(e), libc::ENOSPC, "{what}: got {e}, expected {}", errno_name(libc::ENOSPC));
}

fn close_checked(f: File) -> io::Result<()> {
    // Dropping the File would throw away close's error, which is what this
    // checks.
    nix::unistd::close(f).map_err(io::Error::from)
}

/// Writes one file in CHUNK-sized write() calls and says how it ended, and
/// whether ENOSPC struck.
fn write_file(dir: &Path, name: &str, seed: u64, size: usize) -> (Record, bool) {
    let data = content(seed, size);
    let mut rec = Record { name: name.to_string(), seed, size, acked: 0, fate: Fate::Complete };
    let mut f = match OpenOptions::new().write(true).create_new(true).open(dir.join(name)) {
        Ok(f) => f,
        Err(e) => {
            must_be_enospc(&e, &format!("create {name}"));
            rec.fate = Fate::NotCreated;
            return (rec, true);
        }
    };
    let mut write_failed = false;
    while rec.acked < size {
        let end = (rec.acked + CHUNK).min(size);
        match f.write(&data[rec.acked..end]) {
            Ok(0) => panic!("write of {name} returned 0"),
            Ok(n) => rec.acked += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                must_be_enospc(&e, &format!("write {name} at {}", rec.acked));
                write_failed = true;
                break;
            }
        }
    }
    if write_failed {
        let synced = match f.sync_all() {
            Ok(()) => true,
            Err(e) => {
                must_be_enospc(&e, &format!("fsync {name} after ENOSPC"));
                false
            }
        };
        let closed = match close_checked(f) {
            Ok(()) => true,
            Err(e) => {
                must_be_enospc(&e, &format!("close {name} after ENOSPC"));
                false
            }
        };
        rec.fate = if synced && closed { Fate::Prefix } else { Fate::Uncertain };
        return (rec, true);
    }
    match close_checked(f) {
        Ok(()) => (rec, false),
        Err(e) => {
            must_be_enospc(&e, &format!("close {name}"));
            rec.fate = Fate::Uncertain;
            (rec, true)
        }
    }
}

fn verify(dir: &Path, recs: &[Record]) {
    for r in recs {
        let path = dir.join(&r.name);
        let want = content(r.seed, r.size);
        match r.fate {
            Fate::Deleted => assert!(!path.exists(), "{} was deleted but exists after remount", r.name),
            Fate::NotCreated => {
                if let Ok(m) = fs::metadata(&path) {
                    assert_eq!(m.len(), 0, "{}: creation failed, yet it has data", r.name);
                }
            }
            Fate::Complete | Fate::Prefix => {
                let got = fs::read(&path)
                    .unwrap_or_else(|e| panic!("{} ({:?}) unreadable after remount: {e}", r.name, r.fate));
                assert_eq!(got.len(), r.acked, "{} ({:?}): size after remount", r.name, r.fate);
                if got != want[..r.acked] {
                    let first = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
                    panic!("{} ({:?}): content differs after remount, first at byte {first}", r.name, r.fate);
                }
            }
            Fate::Uncertain => {
                if let Ok(got) = fs::read(&path) {
                    assert!(
                        got.len() <= r.acked,
                        "{}: {} bytes, only {} acknowledged",
                        r.name,
                        got.len(),
                        r.acked
                    );
                    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            g == w || g == 0,
                            "{}: garbage at byte {i} after a failed fsync/close",
                            r.name
                        );
                    }
                }
            }
        }
    }
}

fn statvfs(p: &Path) -> rustix::fs::StatVfs {
    rustix::fs::statvfs(p).unwrap_or_else(|e| panic!("statvfs: {}", io::Error::from(e)))
}

fn filling_the_disk_gives_enospc_and_keeps_acknowledged_bytes(layout: Layout) {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("small.img");
    mkfs_layout(&image, "64M", layout, &[]);
    let m = Mount::new(&image, &tmp.path().join("mnt"), Mode::Foreground, layout.mount_args());
    let dir = m.dir.clone();
    fs::create_dir(dir.join("sub")).expect("mkdir sub");

    let mut recs: Vec<Record> = Vec::new();
    let mut sizes = Rng::new(77);
    let mut total: u64 = 0;
    let mut struck = false;
    for i in 0u64.. {
        let (name, size) = if i % 8 == 7 {
            (format!("sub/small{i:04}"), 1 + sizes.below(20_000) as usize)
        } else {
            (format!("f{i:04}"), MIB)
        };
        let (rec, enospc) = write_file(&dir, &name, 1000 + i, size);
        total += rec.acked as u64;
        recs.push(rec);
        if enospc {
            struck = true;
            break;
        }
        assert!(total <= MAX_BYTES, "no ENOSPC after {total} bytes on a {IMAGE_SIZE}-byte image");
    }
    assert!(struck, "ENOSPC never came");
    assert!(total >= MIN_BYTES, "ENOSPC after only {total} bytes on a {IMAGE_SIZE}-byte image");
    println!("ENOSPC after {total} acknowledged bytes in {} files; last: {:?}", recs.len(), recs.last());

    // df must agree that the file system is (nearly) full.
    let s = statvfs(&dir);
    let frsize = if s.f_frsize > 0 { s.f_frsize } else { s.f_bsize };
    assert!(
        s.f_bavail * frsize <= IMAGE_SIZE / 8,
        "ENOSPC, yet statfs shows {} bytes available",
        s.f_bavail * frsize
    );

    // More writes on a full file system fail with ENOSPC (or succeed), nothing else.
    let (rec, _) = write_file(&dir, "while-full", 5000, MIB);
    recs.push(rec);
    if let Err(e) = fs::create_dir(dir.join("dir-while-full")) {
        must_be_enospc(&e, "mkdir on a full file system");
    }

    // Deleting a file and writing again works or fails cleanly.
    let victim =
        recs.iter().position(|r| r.fate == Fate::Complete && r.size == MIB).expect("a complete 1 MiB file");
    fs::remove_file(dir.join(&recs[victim].name)).expect("unlink on a full file system");
    recs[victim].fate = Fate::Deleted;
    rustix::fs::sync();
    let (rec, enospc) = write_file(&dir, "after-delete", 6000, MIB);
    println!("after deleting 1 MiB: new 1 MiB file {:?} (ENOSPC: {enospc})", rec.fate);
    recs.push(rec);
    // An overwrite in place of an existing file: must succeed or say ENOSPC.
    if let Some(r) = recs.iter().find(|r| r.fate == Fate::Complete && r.size == MIB) {
        let f = OpenOptions::new().write(true).open(dir.join(&r.name)).expect("open for overwrite");
        let data = content(r.seed, r.size);
        match f.write_all_at(&data[..CHUNK], 0) {
            Ok(()) => {}
            Err(e) => must_be_enospc(&e, "overwrite in place on a full file system"),
        }
        if let Err(e) = close_checked(f) {
            must_be_enospc(&e, "close after overwrite");
        }
    }

    m.unmount().expect("clean unmount of a full file system (final checkpoint)");
    let m = Mount::new(&image, &tmp.path().join("mnt"), Mode::Foreground, layout.mount_args());
    verify(&m.dir, &recs);
    // The names on disk are exactly the ones we know of.
    let mut names: Vec<String> = fs::read_dir(&m.dir)
        .expect("readdir")
        .chain(fs::read_dir(m.dir.join("sub")).expect("readdir sub"))
        .map(|e| e.expect("dirent").path().strip_prefix(&m.dir).expect("under mount").display().to_string())
        .filter(|n| n != "sub" && n != "dir-while-full")
        .collect();
    names.sort();
    let mut known: Vec<String> = recs
        .iter()
        .filter(|r| r.fate != Fate::Deleted && r.fate != Fate::NotCreated)
        .map(|r| r.name.clone())
        .collect();
    known.sort();
    for n in &names {
        assert!(
            known.contains(n) || recs.iter().any(|r| &r.name == n && r.fate == Fate::NotCreated),
            "unexpected file {n} after remount"
        );
    }
    for k in &known {
        assert!(names.contains(k), "{k} missing after remount");
    }
    // After a remount the file system still accepts a delete and a small write.
    fs::remove_file(
        m.dir.join(&recs.iter().find(|r| r.fate == Fate::Complete).expect("a complete file").name),
    )
    .expect("unlink after remount");
    match File::create(m.dir.join("tiny")).and_then(|mut f| f.write_all(b"tiny")) {
        Ok(()) => {}
        Err(e) => must_be_enospc(&e, "small write after remount"),
    }
    m.unmount().expect("clean unmount after verification");
}

on_every_layout!(filling_the_disk_gives_enospc_and_keeps_acknowledged_bytes,);

/// A tree of `dirs` directories of small files of random sizes, made
/// outside the mount (what `cp -a /usr/share/doc` brings in).
fn make_tree(root: &Path, dirs: u64) -> u64 {
    let mut rng = Rng::new(4242);
    let mut bytes = 0;
    for d in 0..dirs {
        let dir = root.join(format!("pkg{d:03}"));
        fs::create_dir_all(&dir).expect("mkdir tree");
        for f in 0..12 {
            let size = 200 + rng.below(24_000) as usize;
            fs::write(dir.join(format!("doc{f}.txt")), rng.bytes(size)).expect("write tree file");
            bytes += size as u64;
        }
    }
    bytes
}

/// A full disk can always be emptied (1993 paper §3.2; docs/SEMANTICS.md,
/// "Space"): a tree copied in, then `tar cf` of it and `tar xf` into new
/// directories inside the mount until both stop with ENOSPC, then empty
/// directories until mkdir stops too, then a checkpoint and a remount; `rm -rf` of everything must succeed, the
/// space come back, and fsck find nothing after each step.
fn a_disk_filled_by_tar_inside_the_mount_empties_after_a_remount(layout: Layout) {
    if !common::fuse_or_skip() || !common::have("tar") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("tar.img");
    let mnt = tmp.path().join("mnt");
    mkfs_layout(&image, "48M", layout, &[]);
    let tree = tmp.path().join("doc");
    let tree_bytes = make_tree(&tree, 80);
    let fsck_clean = |when: &str| {
        let r = common::fslab_run(&["fsck", image.to_str().expect("utf-8 path")], LONG);
        assert!(r.success(), "fsck after {when}: {}", r.describe());
    };

    let m = Mount::new(&image, &mnt, Mode::Foreground, layout.mount_args());
    let fresh = statvfs(&m.dir).f_bavail;
    common::sh_ok(&format!("cp -a {} .", tree.display()), &m.dir, LONG);
    let mut rounds = 0;
    for n in 0..40 {
        let packed = common::run_sh(&format!("tar cf doc{n}.tar doc"), &m.dir, LONG);
        let unpacked = common::run_sh(&format!("mkdir -p x{n} && tar xf doc{n}.tar -C x{n}"), &m.dir, LONG);
        rounds += 1;
        if !packed.success() && !unpacked.success() {
            break;
        }
    }
    // What is left, names take: empty directories until mkdir fails too
    // (a tree of many empty directories, as tar makes them, ends so).
    let names = m.dir.join("names");
    if fs::create_dir(&names).is_ok() {
        for n in 0..200_000 {
            if let Err(e) = fs::create_dir(names.join(format!("n{n}"))) {
                must_be_enospc(&e, "mkdir on a full disk");
                break;
            }
        }
    }
    let full = statvfs(&m.dir);
    assert!(
        full.f_bavail < fresh / 20,
        "after {rounds} rounds of tar ({tree_bytes} bytes a tree) the disk is not full: {} of {fresh} blocks free",
        full.f_bavail
    );
    let synced = common::fslab_run(&["sync", m.dir.to_str().expect("utf-8 path")], LONG);
    assert!(synced.success(), "fslab sync on a full disk: {}", synced.describe());
    m.unmount().expect("unmount a full disk");
    fsck_clean("filling");

    let m = Mount::new(&image, &mnt, Mode::Foreground, layout.mount_args());
    let removed = common::run_sh("rm -rf ./*", &m.dir, LONG);
    assert!(removed.success(), "rm -rf of everything on a full disk: {}", removed.describe());
    let left: Vec<_> =
        fs::read_dir(&m.dir).expect("readdir").map(|e| e.expect("dirent").file_name()).collect();
    assert!(left.iter().all(|n| n == "lost+found"), "left after rm -rf: {left:?}");
    let synced = common::fslab_run(&["sync", m.dir.to_str().expect("utf-8 path")], LONG);
    assert!(synced.success(), "fslab sync after emptying: {}", synced.describe());
    let after = statvfs(&m.dir).f_bavail;
    // LFS's inode file keeps the size the fill gave it, and its reserves
    // grow with it; FFS gives back exactly what it took.
    if layout.is_lfs() {
        assert!(after >= fresh - fresh / 40, "{after} blocks free after emptying, {fresh} when fresh");
    } else {
        assert_eq!(after, fresh, "blocks free after emptying, and when fresh");
    }
    m.unmount().expect("unmount");
    fsck_clean("emptying");
}

const LONG: std::time::Duration = std::time::Duration::from_secs(120);

on_every_layout!(a_disk_filled_by_tar_inside_the_mount_empties_after_a_remount,);
