//! `fslab mount` and `fslab dump` on things that are not (intact) fslab images,
//! and `fslab mkfs` / option errors: each must fail within a timeout, with one
//! clear line on stderr and no panic. Damaged images that still mount must be
//! served without panics or hangs and unmount cleanly. What depends on the
//! layout (an image of it garbled or damaged) runs on each
//! ([`on_every_layout!`]).

mod common;

use common::{fslab_run, mkfs, mkfs_layout, run, sh_ok, Layout, Mode, Mount, Rng, Run};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// Asserts the contract for an error: non-zero exit in time, exactly one
/// non-empty line on stderr, no panic text.
#[track_caller]
fn assert_clean_error(r: &Run, what: &str) {
    assert!(!r.timed_out, "{what}: timed out\n{}", r.describe());
    assert!(r.status.is_some() && !r.success(), "{what}: expected a non-zero exit\n{}", r.describe());
    assert!(r.status.and_then(|s| s.code()).is_some(), "{what}: killed by a signal\n{}", r.describe());
    assert_no_panic(&r.stderr, what);
    assert_no_panic(&r.stdout, what);
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{what}: expected exactly one line on stderr\n{}", r.describe());
    assert!(lines[0].trim().len() >= 10, "{what}: error line too terse: {:?}", lines[0]);
}

#[track_caller]
fn assert_no_panic(text: &str, what: &str) {
    // The CLI's panic hook turns a panic into "fslab: internal error: ...".
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace", "internal error"] {
        assert!(!text.contains(bad), "{what}: output contains {bad:?}:\n{text}");
    }
}

fn fslab(args: &[&OsStr]) -> Run {
    fslab_run(args, T)
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

/// `fslab mount IMAGE DIR` must fail cleanly and leave nothing mounted.
#[track_caller]
fn assert_mount_fails(image: &Path, dir: &Path, what: &str) {
    assert_mount_fails_with(image, dir, &[], what);
}

/// [`assert_mount_fails`] with `extra` arguments to `fslab mount`.
#[track_caller]
fn assert_mount_fails_with(image: &Path, dir: &Path, extra: &[&str], what: &str) {
    std::fs::create_dir_all(dir).expect("mkdir mountpoint");
    let mut args = vec![os("mount"), image.as_os_str(), dir.as_os_str()];
    args.extend(extra.iter().map(os));
    let r = fslab(&args);
    let mounted = common::is_mounted(dir);
    if mounted || r.success() {
        // Clean up before failing the test.
        let _ = run("fusermount3", &[os("-uz"), dir.as_os_str()], T);
        for pid in common::image_users(image).into_iter().filter_map(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    assert!(!mounted, "mount {what}: {} is mounted", dir.display());
    assert_clean_error(&r, &format!("mount {what}"));
    assert!(common::image_users(image).is_empty(), "mount {what}: a process still holds the image");
}

#[track_caller]
fn assert_dump_fails(image: &Path, what: &str) {
    let r = fslab(&[os("dump"), image.as_os_str()]);
    assert_clean_error(&r, &format!("dump {what}"));
}

fn random_file(path: &Path, len: usize, seed: u64) {
    std::fs::write(path, Rng::new(seed).bytes(len)).expect("write random file");
}

#[test]
fn random_bytes_zero_length_and_missing_images_are_refused() {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("mnt");
    let random = tmp.path().join("random.img");
    random_file(&random, 16 << 20, 42);
    assert_mount_fails(&random, &dir, "random bytes");
    assert_dump_fails(&random, "random bytes");

    let empty = tmp.path().join("empty.img");
    std::fs::write(&empty, b"").expect("create empty file");
    assert_mount_fails(&empty, &dir, "zero-length file");
    assert_dump_fails(&empty, "zero-length file");

    let zeros = tmp.path().join("zeros.img");
    sh_ok("truncate -s 64M zeros.img", tmp.path(), T);
    assert_mount_fails(&zeros, &dir, "all-zero file");
    assert_dump_fails(&zeros, "all-zero file");

    let missing = tmp.path().join("does-not-exist.img");
    assert_mount_fails(&missing, &dir, "nonexistent image");
    assert_dump_fails(&missing, "nonexistent image");
    assert!(!missing.exists(), "mount or dump created the missing image");

    assert_mount_fails(tmp.path(), &dir, "a directory as image");
    assert_dump_fails(tmp.path(), "a directory as image");
}

#[test]
fn ext4_image_is_refused_and_not_overwritten_without_force() {
    if !common::fuse_or_skip() {
        return;
    }
    if !common::have("mkfs.ext4") {
        println!("skipped: mkfs.ext4 missing");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let ext4 = tmp.path().join("ext4.img");
    sh_ok("truncate -s 64M ext4.img && mkfs.ext4 -F -q ext4.img", tmp.path(), Duration::from_secs(60));
    let before = std::fs::read(&ext4).expect("read ext4 image");
    assert_mount_fails(&ext4, &tmp.path().join("mnt"), "ext4 image");
    assert_dump_fails(&ext4, "ext4 image");

    let r = fslab(&[os("mkfs"), ext4.as_os_str(), os("--size"), os("64M")]);
    assert_clean_error(&r, "mkfs over an ext4 image without --force");
    assert!(
        std::fs::read(&ext4).expect("read ext4 image") == before,
        "mkfs without --force changed the ext4 image"
    );

    let r = fslab(&[os("mkfs"), ext4.as_os_str(), os("--size"), os("64M"), os("--force")]);
    assert!(r.success(), "mkfs --force over ext4: {}", r.describe());
    let r = fslab(&[os("dump"), ext4.as_os_str()]);
    assert!(r.success() && !r.stdout.trim().is_empty(), "dump after mkfs --force: {}", r.describe());
}

on_every_layout!(
    mkfs_refuses_to_overwrite_an_fslab_image_without_force,
    image_with_every_metadata_block_garbled_is_refused,
    damaged_images_never_panic_or_hang,
);

fn mkfs_refuses_to_overwrite_an_fslab_image_without_force(layout: Layout) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let img = tmp.path().join("fs.img");
    mkfs_layout(&img, "64M", layout, &[]);
    let r = fslab(&[os("dump"), img.as_os_str()]);
    assert!(r.success() && !r.stdout.trim().is_empty(), "dump of a fresh image: {}", r.describe());
    assert_no_panic(&r.stdout, "dump");
    let before = std::fs::read(&img).expect("read image");
    let r = fslab(&[os("mkfs"), img.as_os_str(), os("--size"), os("64M")]);
    assert_clean_error(&r, "mkfs over an fslab image without --force");
    assert!(std::fs::read(&img).expect("read image") == before, "mkfs without --force changed the image");
    let r = fslab(&[os("mkfs"), img.as_os_str(), os("--size"), os("32M"), os("--force")]);
    assert!(r.success(), "mkfs --force: {}", r.describe());
    assert_eq!(
        std::fs::metadata(&img).expect("stat image").len(),
        32 << 20,
        "mkfs --force --size 32M sets the size"
    );
}

/// A file that looks empty at its start (zeros in its first 64 KiB) but
/// holds data further on: mkfs with a smaller --size would cut it off.
#[test]
fn mkfs_refuses_to_cut_a_longer_file_without_force() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let img = tmp.path().join("sparse.img");
    let file = std::fs::File::create(&img).expect("create");
    file.set_len(256 << 20).expect("size");
    std::os::unix::fs::FileExt::write_at(&file, b"keep me", 200 << 20).expect("write");
    drop(file);
    let r = fslab(&[os("mkfs"), img.as_os_str(), os("--size"), os("64M")]);
    assert_clean_error(&r, "mkfs --size smaller than the file");
    assert!(r.stderr.contains("--force"), "the error says how: {}", r.describe());
    assert_eq!(std::fs::metadata(&img).expect("stat").len(), 256 << 20, "the file was not cut");
    let r = fslab(&[os("mkfs"), img.as_os_str(), os("--size"), os("64M"), os("--force")]);
    assert!(r.success(), "with --force: {}", r.describe());
    assert_eq!(std::fs::metadata(&img).expect("stat").len(), 64 << 20);
}

#[test]
fn bad_sizes_and_options_give_clear_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cases: &[(&str, &[&str])] = &[
        ("size 0", &["--size", "0"]),
        ("size abc", &["--size", "abc"]),
        ("size empty", &["--size", ""]),
        ("size negative", &["--size", "-5M"]),
        ("size unknown unit", &["--size", "10Q"]),
        ("size too small", &["--size", "64K"]),
        ("size overflowing", &["--size", "99999999999999999999G"]),
        ("no size", &[]),
        ("block size not a power of two", &["--size", "64M", "--block-size", "3000"]),
        ("block size zero", &["--size", "64M", "--block-size", "0"]),
        ("block size too large", &["--size", "64M", "--block-size", "1G"]),
        ("segment size not a power of two", &["--size", "64M", "--segment-size", "1000000"]),
        (
            "segment smaller than a block",
            &["--size", "64M", "--block-size", "8192", "--segment-size", "4096"],
        ),
        ("segment larger than the image", &["--size", "8M", "--segment-size", "64M"]),
        ("unknown option", &["--size", "64M", "--bogus"]),
        ("missing option value", &["--size"]),
    ];
    for (i, (what, args)) in cases.iter().enumerate() {
        let img = tmp.path().join(format!("bad{i}.img"));
        let mut argv: Vec<&OsStr> = vec![os("mkfs"), img.as_os_str()];
        argv.extend(args.iter().map(os));
        let r = fslab(&argv);
        assert_clean_error(&r, &format!("mkfs with {what}"));
        assert!(!img.exists(), "mkfs with {what} failed but left {} behind", img.display());
    }

    for (what, argv) in [
        ("no subcommand", vec![]),
        ("unknown subcommand", vec!["frobnicate"]),
        ("mkfs without image", vec!["mkfs"]),
        ("mount without directory", vec!["mount", "x.img"]),
        ("dump without image", vec!["dump"]),
        ("dump with two images", vec!["dump", "a.img", "b.img"]),
    ] {
        let r = fslab_run(&argv, T);
        assert_clean_error(&r, &format!("fslab {what}"));
    }

    // Mount options and mount points: a good image, bad requests.
    if !common::fuse_or_skip() {
        return;
    }
    let img = tmp.path().join("good.img");
    mkfs(&img, "64M", &[]);
    let dir = tmp.path().join("mnt");
    std::fs::create_dir(&dir).expect("mkdir mnt");
    for (what, opts) in [
        ("cache=abc", "cache=abc"),
        ("checkpoint=-1", "checkpoint=-1"),
        ("checkpoint=soon", "checkpoint=soon"),
        ("empty option value", "cache="),
    ] {
        let r = fslab(&[os("mount"), img.as_os_str(), dir.as_os_str(), os("-o"), os(opts)]);
        let mounted = common::is_mounted(&dir);
        if mounted {
            let _ = run("fusermount3", &[os("-uz"), dir.as_os_str()], T);
        }
        assert!(!mounted, "mount -o {what} mounted anyway");
        assert_clean_error(&r, &format!("mount -o {what}"));
    }
    let file = tmp.path().join("plain-file");
    std::fs::write(&file, b"x").expect("write plain file");
    let missing_dir = tmp.path().join("no-such-dir");
    for (what, mp) in [("a missing mount point", &missing_dir), ("a file as mount point", &file)] {
        let r = fslab(&[os("mount"), img.as_os_str(), mp.as_os_str()]);
        assert_clean_error(&r, &format!("mount on {what}"));
    }
    // Mounting an image that is already mounted fails cleanly too.
    let m = Mount::new(&img, &dir, Mode::Foreground, &[]);
    let dir2 = tmp.path().join("mnt2");
    std::fs::create_dir(&dir2).expect("mkdir mnt2");
    let r = fslab(&[os("mount"), img.as_os_str(), dir2.as_os_str()]);
    let mounted2 = common::is_mounted(&dir2);
    if mounted2 {
        let _ = run("fusermount3", &[os("-uz"), dir2.as_os_str()], T);
    }
    assert!(!mounted2, "the same image was mounted twice at once");
    assert_clean_error(&r, "mount of an image that is already mounted");
    m.unmount().expect("clean unmount");
}

#[test]
fn help_on_each_subcommand_exits_zero() {
    for argv in [vec!["--help"], vec!["mkfs", "--help"], vec!["mount", "--help"], vec!["dump", "--help"]] {
        let r = fslab_run(&argv, T);
        assert!(r.success(), "fslab {argv:?}: {}", r.describe());
        let text = format!("{}{}", r.stdout, r.stderr);
        assert!(text.trim().len() > 20, "fslab {argv:?} printed almost nothing: {text:?}");
        if let Some(sub) = argv.iter().find(|a| !a.starts_with('-')) {
            assert!(text.contains(sub), "fslab {argv:?}: help does not mention {sub}: {text}");
        } else {
            for sub in ["mkfs", "mount", "dump"] {
                assert!(text.contains(sub), "fslab --help does not mention {sub}: {text}");
            }
        }
    }
}

/// 4 KiB blocks of `image` that are not all zeros (in a fresh image: the
/// superblocks, checkpoints, ifile, root directory and the like).
fn nonzero_blocks(image: &Path) -> Vec<u64> {
    let data = std::fs::read(image).expect("read image");
    data.chunks(4096).enumerate().filter(|(_, c)| c.iter().any(|&b| b != 0)).map(|(i, _)| i as u64).collect()
}

fn overwrite_blocks(image: &Path, blocks: &[u64], rng: &mut Rng, how: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).read(true).open(image).expect("open image");
    for &b in blocks {
        let mut buf = vec![0u8; 4096];
        f.read_exact_at(&mut buf, b * 4096).expect("read block");
        match how % 3 {
            // Garbage.
            0 => rng.fill(&mut buf),
            // Zeros.
            1 => buf.iter_mut().for_each(|x| *x = 0),
            // A few flipped bits.
            _ => {
                for _ in 0..8 {
                    let i = rng.below(4096) as usize;
                    buf[i] ^= 1 << rng.below(8);
                }
            }
        }
        f.write_all_at(&buf, b * 4096).expect("write block");
    }
    f.sync_all().expect("fsync image");
}

fn image_with_every_metadata_block_garbled_is_refused(layout: Layout) {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let img = tmp.path().join("fs.img");
    mkfs_layout(&img, "64M", layout, &[]);
    let blocks = nonzero_blocks(&img);
    assert!(!blocks.is_empty(), "a fresh image has some non-zero blocks");
    // Every block mkfs wrote, superblocks and their copies included, becomes garbage.
    overwrite_blocks(&img, &blocks, &mut Rng::new(9), 0);
    let mnt = tmp.path().join("mnt");
    assert_mount_fails_with(&img, &mnt, layout.mount_args(), "image with garbage superblocks");
    assert_dump_fails(&img, "image with garbage superblocks");

    // The same with the blocks zeroed: looks like no file system at all.
    let img2 = tmp.path().join("fs2.img");
    mkfs_layout(&img2, "64M", layout, &[]);
    let blocks = nonzero_blocks(&img2);
    overwrite_blocks(&img2, &blocks, &mut Rng::new(10), 1);
    assert_mount_fails_with(&img2, &mnt, layout.mount_args(), "image with zeroed metadata");
    assert_dump_fails(&img2, "image with zeroed metadata");
}

/// Builds a populated image of `layout`: a few directories, small files, a
/// larger file.
fn populated_image(dir: &Path, layout: Layout) -> PathBuf {
    let img = dir.join("base.img");
    mkfs_layout(&img, "64M", layout, &[]);
    let m = Mount::new(&img, &dir.join("mnt-base"), Mode::Foreground, layout.mount_args());
    sh_ok(
        "for d in 1 2 3 4; do mkdir -p d$d/sub; for f in 1 2 3 4 5 6 7 8 9 10; do echo file $d $f > d$d/f$f; done; done \
         && head -c 3000000 /dev/urandom > big && ln -s big link && ln d1/f1 hard",
        &m.dir,
        T,
    );
    m.unmount().expect("clean unmount of the base image");
    img
}

fn damaged_images_never_panic_or_hang(layout: Layout) {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = populated_image(tmp.path(), layout);
    let meta = nonzero_blocks(&base);
    let mut rng = Rng::new(2024);
    let mut mounted = 0;
    for case in 0..9u64 {
        let img = tmp.path().join(format!("damaged{case}.img"));
        std::fs::copy(&base, &img).expect("copy image");
        // Damage 1, 3 or 8 of the blocks in use, garbage / zeros / bit flips.
        let n = [1usize, 3, 8][(case / 3) as usize];
        let picks: Vec<u64> = (0..n).map(|_| meta[rng.below(meta.len() as u64) as usize]).collect();
        overwrite_blocks(&img, &picks, &mut rng, case);
        let what = format!("image {case} (blocks {picks:?}, mode {})", case % 3);

        let r = fslab(&[os("dump"), img.as_os_str()]);
        assert!(!r.timed_out, "dump {what} hung\n{}", r.describe());
        assert_no_panic(&r.stderr, &format!("dump {what}"));
        if !r.success() {
            assert_clean_error(&r, &format!("dump {what}"));
        }

        let dir = tmp.path().join(format!("mnt{case}"));
        match Mount::try_new(&img, &dir, Mode::Foreground, layout.mount_args()) {
            Err(f) => {
                assert!(f.status.is_some(), "mount {what}: {f}");
                let lines: Vec<&str> = f.output.lines().filter(|l| !l.trim().is_empty()).collect();
                assert_no_panic(&f.output, &format!("mount {what}"));
                assert_eq!(lines.len(), 1, "mount {what}: expected one line of error: {f}");
                assert!(!common::is_mounted(&dir), "mount {what} failed but left a mount");
            }
            Ok(mut m) => {
                mounted += 1;
                m.arm_watchdog(Duration::from_secs(120));
                // Read everything, list everything, write something: errors are
                // allowed (EIO), hangs and disconnects are not.
                let r = common::run_sh(
                    "ls -lR . >/dev/null 2>&1; find . -type f -exec cat {} + >/dev/null 2>&1; \
                     echo new > newfile 2>/dev/null; mkdir newdir 2>/dev/null; rm -f d2/f2 2>/dev/null; \
                     sync; ls . 2>&1",
                    &m.dir,
                    Duration::from_secs(60),
                );
                assert!(!r.timed_out, "workload on {what} hung\n{}\n{}", r.describe(), m.log());
                assert!(
                    !r.stdout.contains("Transport endpoint is not connected"),
                    "the daemon died while serving {what}:\n{}",
                    m.log()
                );
                let log = m.log();
                assert_no_panic(&log, &format!("daemon serving {what}"));
                let res = m.unmount();
                // A damaged image may refuse its final checkpoint, but must say so
                // without panicking, and the daemon must exit.
                if let Err(e) = &res {
                    assert!(!e.contains("still running") && !e.contains("still holds"), "{what}: {e}");
                    assert_no_panic(e, &format!("unmount of {what}"));
                }
            }
        }
        assert!(common::image_users(&img).is_empty(), "{what}: a daemon still holds the image");
    }
    println!("{mounted} of 9 damaged images mounted");
}

/// The disk address of the single indirect block of inode `ino` in the
/// unmounted `image`, and the block size.
fn indirect_block_of(image: &Path, ino: u64) -> (u64, u64) {
    use fslab::lfs::{Lfs, MountOptions};
    let disk = disk::FileDisk::open(image).expect("open image");
    let mut fs = fslab::ufs::FileSystem::new(
        Lfs::mount(std::sync::Arc::new(disk), MountOptions::default()).expect("mount"),
    );
    let inode = fs.getattr(ino).expect("the file's inode");
    let block_size = u64::from(fs.block_size());
    fs.unmount().expect("unmount");
    (inode.indirect[0].get(), block_size)
}

/// Regression: a read that met a corrupt indirect block told the program
/// EIO and nobody else anything. The mount's log (stderr with `-f`) must
/// name the request, the inode, the block's address and what is wrong,
/// once however often the program retries.
#[test]
fn damage_met_while_serving_is_reported_with_the_request_inode_address_and_reason() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("fs.img");
    mkfs(&image, "64M", &[]);
    let dir = tmp.path().join("mnt");
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    // Past the inode's direct pointers, so that the tail hangs from an indirect block.
    std::fs::write(dir.join("big"), vec![5u8; 64 * 4096]).expect("write");
    let ino = std::fs::metadata(dir.join("big")).expect("stat").ino();
    m.unmount().expect("unmount");

    let (daddr, block_size) = indirect_block_of(&image, ino);
    assert_ne!(daddr, 0, "the file has an indirect block");
    let f = std::fs::OpenOptions::new().write(true).open(&image).expect("open image");
    f.write_all_at(&[0xA5; 64], daddr * block_size + 100).expect("damage the indirect block");
    drop(f);

    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    for _ in 0..20 {
        let e = std::fs::read(dir.join("big")).expect_err("a read through the damaged block fails");
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    }
    let log = m.log();
    let wanted = format!("fslab: read of inode {ino}: corrupt indirect block at block {daddr}: ");
    let reports: Vec<&str> = log.lines().filter(|l| l.starts_with(&wanted)).collect();
    assert_eq!(reports.len(), 1, "one report, however often the program retries; log:\n{log}");
    assert!(reports[0].contains("checksum") && reports[0].ends_with("(EIO)"), "{}", reports[0]);
    m.unmount().expect("unmount");
}
