//! The life of a mount: the background mount is usable as soon as the command
//! returns; `umount`, `fusermount3 -u` and SIGTERM all end it with a clean
//! checkpoint; mount options are honoured; data that fsync or a periodic
//! checkpoint made durable survives the daemon being killed (a crash); and
//! file data reaches the log behind the writer, without a sync. The tests
//! that hold for every layout run on each ([`on_every_layout!`]): after a
//! killed daemon an LFS image mounts at once (roll-forward), an FFS image
//! is refused with the command that repairs it, and mounts after it.

mod common;

use common::{image_users, is_mounted, is_zombie, mkfs_layout, run, Layout, Mode, Mount, Rng};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// The pid of the daemon serving `image`.
fn daemon_pid(image: &Path) -> i32 {
    let pids = image_users(image);
    assert_eq!(pids.len(), 1, "exactly one process holds the image: {pids:?}");
    pids[0]
}

fn signal(pid: i32, sig: libc::c_int) {
    let signal = nix::sys::signal::Signal::try_from(sig).expect("a signal number");
    let r = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    assert_eq!(r, Ok(()), "kill({pid}, {sig})");
}

/// After the daemon is gone (killed or exited), detach whatever is left.
fn detach(dir: &Path) {
    if is_mounted(dir) {
        let _ = run("fusermount3", &[OsStr::new("-uz"), dir.as_os_str()], T);
    }
}

/// A fresh image in a temporary directory, and where to mount it.
struct Scratch {
    _tmp: tempfile::TempDir,
    image: PathBuf,
    dir: PathBuf,
}

/// A fresh LFS image of `size`; `None` (the test is skipped) where FUSE
/// is not available.
fn scratch(size: &str) -> Option<Scratch> {
    scratch_of(size, Layout::Lfs)
}

/// [`scratch`] of `layout`.
fn scratch_of(size: &str, layout: Layout) -> Option<Scratch> {
    if !common::fuse_or_skip() {
        return None;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (image, dir) = (tmp.path().join("fs.img"), tmp.path().join("mnt"));
    mkfs_layout(&image, size, layout, &[]);
    Some(Scratch { _tmp: tmp, image, dir })
}

/// `layout`'s mount arguments, then `extra`.
fn mount_args<'a>(layout: Layout, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = layout.mount_args().to_vec();
    args.extend_from_slice(extra);
    args
}

/// What a user does after the daemon of `image` was killed, before the
/// next mount. LFS: nothing, its mount rolls forward. FFS with soft
/// updates: nothing, the image holds only leaks and mounts. FFS with its
/// journal: nothing, the mount replays the log. FFS: the mount
/// refuses the unclean image in one line that names the command to run;
/// `fslab fsck --repair` then rebuilds the bitmaps and marks it clean
/// (status 1, as e2fsck's "errors corrected").
fn recover_after_a_kill(image: &Path, dir: &Path, layout: Layout) {
    if layout.is_lfs() || matches!(layout, Layout::FfsSoftdep | Layout::FfsJournal) {
        return;
    }
    let refused = Mount::try_new(image, dir, Mode::Foreground, layout.mount_args())
        .err()
        .expect("an FFS image left by a killed daemon is refused");
    let canonical = fs::canonicalize(image).expect("canonical image path");
    let command = format!("run `fslab fsck --repair {}`", canonical.display());
    let lines: Vec<&str> = refused.output.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line says why: {refused}");
    assert!(lines[0].contains("not unmounted cleanly") && lines[0].contains(&command), "{refused}");
    assert!(!is_mounted(dir), "refused but mounted");
    let r = common::fslab_run(&[OsStr::new("fsck"), OsStr::new("--repair"), image.as_os_str()], T);
    assert_eq!(r.status.and_then(|s| s.code()), Some(1), "fsck --repair: {}", r.describe());
}

on_every_layout!(
    background_mount_is_ready_when_the_command_returns_and_sigterm_checkpoints,
    fsynced_and_checkpointed_data_survive_a_killed_daemon,
    fslab_sync_makes_plain_writes_survive_a_killed_daemon,
    an_open_unlinked_file_is_freed_after_a_killed_daemon,
    a_read_only_mount_recovers_in_memory_and_writes_nothing,
    o_dsync_writes_to_a_new_file_survive_a_killed_daemon,
);

/// Writes through a handle opened O_DSYNC are durable when they return,
/// with no fsync: `dd oflag=dsync` opens a new file write-only, a handle
/// whose writes go straight through, after which the kernel sends no
/// fsync of its own (as it does after a cached handle's write).
fn o_dsync_writes_to_a_new_file_survive_a_killed_daemon(layout: Layout) {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(Scratch { _tmp, image, dir }) = scratch_of("64M", layout) else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    let pid = m.pid().expect("foreground daemon pid");
    // An existing file, opened O_DSYNC: a cached handle, after whose
    // writes the kernel sends an fsync of its own.
    fs::write(m.dir.join("existing"), b"before").expect("write");
    let r = common::fslab_run(&[OsStr::new("sync"), m.dir.as_os_str()], T);
    assert!(r.success(), "fslab sync: {}", r.describe());
    let mut existing = fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DSYNC)
        .open(m.dir.join("existing"))
        .expect("open");
    existing.write_all(b"after!").expect("write");
    let data = Rng::new(21).bytes(300_000);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DSYNC)
        .open(m.dir.join("dsync"))
        .expect("create O_DSYNC");
    f.write_all(&data).expect("write");
    signal(pid, libc::SIGKILL);
    drop((f, existing));
    drop(m);
    detach(&dir);
    recover_after_a_kill(&image, &dir, layout);
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    let got = fs::read(m.dir.join("dsync")).expect("the O_DSYNC file after a crash");
    assert!(got == data, "O_DSYNC file content after a crash ({} bytes, want {})", got.len(), data.len());
    assert_eq!(fs::read(m.dir.join("existing")).expect("the existing file"), b"after!");
    m.unmount().expect("clean unmount after recovery");
}

fn background_mount_is_ready_when_the_command_returns_and_sigterm_checkpoints(layout: Layout) {
    let Some(Scratch { _tmp, image, dir }) = scratch_of("64M", layout) else { return };
    fs::create_dir(&dir).expect("mkdir mnt");
    // Its messages go beside the image, not to the machine's log.
    let log = format!("log={}", image.with_extension("log").display());
    let mut args =
        vec![OsStr::new("mount"), image.as_os_str(), dir.as_os_str(), OsStr::new("-o"), OsStr::new(&log)];
    args.extend(layout.mount_args().iter().map(OsStr::new));
    let r = common::fslab_run(&args, T);
    assert!(r.success(), "fslab mount: {}", r.describe());
    // Usable at once: no sleep between the command returning and the first use.
    assert!(is_mounted(&dir), "not mounted when `fslab mount` returned");
    fs::write(dir.join("a"), b"written before SIGTERM").expect("write on a fresh mount");
    fs::create_dir(dir.join("d")).expect("mkdir");
    let pid = daemon_pid(&image);
    // Kernels since 6.x report the switch; older ones have nothing to check.
    // Checked after SIGTERM, so that a failure leaves no mount behind.
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let thp = status.lines().find_map(|l| l.strip_prefix("THP_enabled:")).map(|v| v.trim().to_string());
    signal(pid, libc::SIGTERM);
    assert!(wait_until(Duration::from_secs(60), || is_zombie(pid)), "daemon did not exit after SIGTERM");
    assert!(!is_mounted(&dir), "SIGTERM left the mount in place");
    assert_ne!(thp.as_deref(), Some("1"), "the daemon runs without transparent huge pages");
    assert!(image_users(&image).is_empty());

    // Clean: FFS mounts again without fsck.
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    assert_eq!(fs::read(m.dir.join("a")).expect("read a"), b"written before SIGTERM");
    assert!(m.dir.join("d").is_dir());
    m.unmount().expect("clean unmount");
}

#[test]
fn umount_ends_the_daemon_with_a_clean_checkpoint() {
    if !rustix::process::geteuid().is_root() || !common::have("umount") {
        println!("skipped: umount(8) of a FUSE mount needs root");
        return;
    }
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    let dir = m.dir.clone();
    let data = Rng::new(4).bytes(3 << 20);
    fs::write(dir.join("three"), &data).expect("write 3 MiB");
    let r = run("umount", &[dir.as_os_str()], T);
    assert!(r.success(), "umount: {}", r.describe());
    m.wait_exit().expect("daemon exits cleanly after umount");
    assert!(image_users(&image).is_empty(), "daemon still holds the image");
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    assert!(fs::read(dir.join("three")).expect("read back") == data, "content after umount + mount");
    m.unmount().expect("clean unmount");
}

#[test]
fn a_mounted_image_is_refused_at_once_and_a_locked_one_is_waited_for() {
    let Some(Scratch { _tmp, image, dir }) = scratch("256M") else { return };
    let other = _tmp.path().join("other");
    let first = Mount::new(&image, &dir, Mode::Foreground, &[]);
    let started = Instant::now();
    let refused = Mount::try_new(&image, &other, Mode::Foreground, &[]).err().expect("mounted twice");
    assert!(refused.output.contains("is mounted"), "{refused}");
    assert!(started.elapsed() < Duration::from_secs(10), "refused only after {:?}", started.elapsed());

    // `fusermount3 -u` returns before the daemon has written its final
    // checkpoint; a mount right away waits for it if it must.
    let data = Rng::new(12).bytes(48 << 20);
    fs::write(dir.join("data"), &data).expect("write");
    let r = run("fusermount3", &[OsStr::new("-u"), dir.as_os_str()], T);
    assert!(r.success(), "fusermount3 -u: {}", r.describe());
    let second = Mount::new(&image, &other, Mode::Foreground, &[]);
    first.wait_exit().expect("the first daemon finished cleanly");
    assert!(fs::read(other.join("data")).expect("read back") == data, "data after unmount and mount");
    second.unmount().expect("clean unmount");

    // The same wait, made long: this process holds the image's lock as a
    // finishing daemon (or an fsck) would, without the mark of a mount.
    let held = File::open(&image).expect("open image");
    assert_eq!(rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive), Ok(()));
    let log = _tmp.path().join("waiting.log");
    let logf = File::create(&log).expect("log");
    let mut waiting = std::process::Command::new(common::fslab())
        .args([OsStr::new("mount"), image.as_os_str(), other.as_os_str(), OsStr::new("-f")])
        .stdout(logf.try_clone().expect("dup"))
        .stderr(logf)
        .spawn()
        .expect("spawn fslab mount");
    std::thread::sleep(Duration::from_millis(1500));
    let still_waiting = waiting.try_wait().expect("try_wait").is_none() && !is_mounted(&other);
    drop(held);
    let mounted = wait_until(Duration::from_secs(30), || is_mounted(&other));
    let said = fs::read_to_string(&log).unwrap_or_default();
    if mounted {
        let r = run("fusermount3", &[OsStr::new("-u"), other.as_os_str()], T);
        assert!(r.success(), "fusermount3 -u: {}", r.describe());
    }
    let exited = wait_until(Duration::from_secs(60), || waiting.try_wait().is_ok_and(|s| s.is_some()));
    if !exited {
        let _ = waiting.kill();
    }
    assert!(still_waiting, "the mount did not wait for the lock: {said}");
    assert!(said.contains("waiting for another fslab process"), "{said}");
    assert!(mounted && exited, "mounted once the lock was free: {said}");
}

#[test]
fn mount_options_are_accepted_and_a_small_cache_still_works() {
    let Some(Scratch { _tmp, image, dir }) = scratch("128M") else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, &["-o", "cache=4M,checkpoint=2"]);
    // Far more data than the cache holds, written and read back.
    let mut rng = Rng::new(8);
    let mut f = File::create(m.dir.join("big")).expect("create");
    let mut all = Vec::new();
    for _ in 0..24 {
        let chunk = rng.bytes(1 << 20);
        f.write_all(&chunk).expect("write");
        all.extend_from_slice(&chunk);
    }
    drop(f);
    for i in 0..500 {
        fs::write(m.dir.join(format!("s{i}")), format!("small {i}")).expect("small file");
    }
    assert!(fs::read(m.dir.join("big")).expect("read big") == all, "24 MiB through a 4 MiB cache");
    assert_eq!(fs::read_to_string(m.dir.join("s499")).expect("read s499"), "small 499");
    m.unmount().expect("clean unmount");
    let m = Mount::new(&image, &dir, Mode::Foreground, &["-o", "cache=4M"]);
    assert!(fs::read(m.dir.join("big")).expect("read big") == all, "24 MiB after remount");
    assert_eq!(fs::read_dir(&m.dir).expect("readdir").count(), 501);
    m.unmount().expect("clean unmount");
}

/// Checkpoints (LFS) or syncs (FFS) the mount at `dir` has made, as
/// `fslab stat` counts them.
fn periodic_checkpoints(dir: &Path) -> u64 {
    let stat = common::fslab_run(&[OsStr::new("stat"), dir.as_os_str()], T);
    assert!(stat.success(), "fslab stat: {}", stat.describe());
    stat.stdout
        .lines()
        .find_map(|l| l.strip_prefix("checkpoints").or_else(|| l.strip_prefix("syncs")))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no checkpoint or sync count in fslab stat:\n{}", stat.stdout))
}

/// On FFS the periodic checkpoint is a sync of everything (`checkpoint=`
/// sets its interval too).
fn fsynced_and_checkpointed_data_survive_a_killed_daemon(layout: Layout) {
    let Some(Scratch { _tmp, image, dir }) = scratch_of("64M", layout) else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, &mount_args(layout, &["-o", "checkpoint=1"]));
    let pid = m.pid().expect("foreground daemon pid");

    // Made durable by a periodic checkpoint: one more counted after the
    // write returned began after it (one lock serialises the write and
    // every checkpoint).
    fs::create_dir(m.dir.join("dir")).expect("mkdir");
    fs::write(m.dir.join("dir/checkpointed"), b"by the checkpoint").expect("write");
    let before = periodic_checkpoints(&m.dir);
    assert!(
        wait_until(Duration::from_secs(30), || periodic_checkpoints(&m.dir) > before),
        "no periodic checkpoint in 30 s with checkpoint=1 (counted {before} before)"
    );

    // Made durable by fsync, immediately before the crash: the file alone,
    // its name with it on every layout. (An fsync of the root directory
    // would be a checkpoint, and so prove nothing of the periodic one.)
    let data = Rng::new(12).bytes(700_000);
    let mut f = File::create(m.dir.join("fsynced")).expect("create");
    f.write_all(&data).expect("write");
    f.sync_all().expect("fsync");
    drop(f);

    signal(pid, libc::SIGKILL);
    drop(m); // reaps the killed daemon and detaches the mount
    detach(&dir);
    assert!(image_users(&image).is_empty());

    recover_after_a_kill(&image, &dir, layout);
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    assert_eq!(
        fs::read(m.dir.join("dir/checkpointed")).expect("checkpointed file after a crash"),
        b"by the checkpoint"
    );
    let got = fs::read(m.dir.join("fsynced")).expect("fsynced file after a crash");
    assert!(got == data, "fsynced file content after a crash ({} bytes, want {})", got.len(), data.len());
    // The recovered file system keeps working and unmounts cleanly.
    fs::write(m.dir.join("after"), b"after recovery").expect("write after recovery");
    m.unmount().expect("clean unmount after recovery");
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    assert_eq!(fs::read(m.dir.join("after")).expect("read after"), b"after recovery");
    m.unmount().expect("clean unmount");
}

/// sync(2) never reaches a FUSE file system; `fslab sync DIR` does, with a
/// checkpoint: what was written before it survives a crash without fsync.
fn fslab_sync_makes_plain_writes_survive_a_killed_daemon(layout: Layout) {
    let Some(Scratch { _tmp, image, dir }) = scratch_of("64M", layout) else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    let pid = m.pid().expect("foreground daemon pid");

    let sync = || {
        let r = common::fslab_run(&[OsStr::new("sync"), m.dir.as_os_str()], T);
        assert!(r.success(), "fslab sync: {}", r.describe());
    };
    fs::create_dir(m.dir.join("sub")).expect("mkdir");
    fs::write(m.dir.join("sub/plain"), b"first version").expect("create");
    sync();
    // Only data changes now, no directory operation: an fsync of the root
    // directory alone would not write this file.
    let data = Rng::new(31).bytes(300_000);
    fs::write(m.dir.join("sub/plain"), &data).expect("overwrite, no fsync");
    sync();
    // Any path inside the mount names it: its root is synced.
    fs::write(m.dir.join("sub/inner"), b"synced through a path inside").expect("create");
    let r = common::fslab_run(&[OsStr::new("sync"), m.dir.join("sub/plain").as_os_str()], T);
    assert!(r.success(), "fslab sync of a file inside the mount: {}", r.describe());

    signal(pid, libc::SIGKILL);
    assert!(wait_until(Duration::from_secs(10), || is_zombie(pid)), "the killed daemon lingers");
    every_command_names_the_dead_mount(&image, &dir);
    drop(m);
    detach(&dir);
    recover_after_a_kill(&image, &dir, layout);
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    let got = fs::read(m.dir.join("sub/plain")).expect("file written before fslab sync, after a crash");
    assert!(got == data, "content after a crash ({} bytes, want {})", got.len(), data.len());
    assert_eq!(fs::read(m.dir.join("sub/inner")).ok().as_deref(), Some(&b"synced through a path inside"[..]));
    m.unmount().expect("clean unmount");
}

/// With the server of the mount on `dir` killed, `fslab mount`, `stat`,
/// `sync` and `clean` on it (or on a path inside it) say it is a dead
/// mount and how to remove it, in one line.
fn every_command_names_the_dead_mount(image: &Path, dir: &Path) {
    let dir = fs::canonicalize(dir.parent().expect("parent")).expect("canonical").join("mnt");
    let inside = dir.join("sub");
    let remedy = format!("(its server is gone); run `fusermount3 -u {}`", dir.display());
    let commands: [&[&OsStr]; 5] = [
        &[OsStr::new("mount"), image.as_os_str(), dir.as_os_str(), OsStr::new("-f")],
        &[OsStr::new("stat"), dir.as_os_str()],
        &[OsStr::new("sync"), dir.as_os_str()],
        &[OsStr::new("clean"), dir.as_os_str()],
        &[OsStr::new("stat"), inside.as_os_str()],
    ];
    for args in commands {
        let r = common::fslab_run(args, T);
        let said = r.stderr.trim_end();
        assert!(!r.success(), "{args:?}: {}", r.describe());
        assert_eq!(said.lines().count(), 1, "{args:?}: {}", r.describe());
        assert!(said.contains("a dead fslab mount") && said.ends_with(&remedy), "{args:?}: {said}");
    }
}

/// The first figure on the `fslab stat` line starting with `label`, in MiB.
fn stat_mib(dir: &Path, label: &str) -> f64 {
    let r = common::fslab_run(&[OsStr::new("stat"), dir.as_os_str()], T);
    assert!(r.success(), "fslab stat: {}", r.describe());
    let line =
        r.stdout.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}: {}", r.stdout));
    let mut words = line[label.len()..].split_whitespace();
    let value: f64 = words.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    match words.next() {
        Some("KiB") => value / 1024.0,
        Some("MiB") => value,
        Some("GiB") => value * 1024.0,
        _ => 0.0,
    }
}

#[test]
fn file_data_is_written_behind_the_writer_without_a_sync() {
    let Some(Scratch { _tmp, image, dir }) = scratch("128M") else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    // The first 16 MiB reach the start-write threshold, whose segment write
    // also writes the file's creation; after that nothing but write-behind
    // writes until a sync or the 30-second checkpoint. Write-behind goes
    // once four segments (4 MiB here) are dirty, so 20 MiB at least reach
    // the log; up to 4 MiB more may wait for the next write or sync.
    let data = Rng::new(7).bytes(24 << 20);
    let mut file = File::create(m.dir.join("big")).expect("create");
    file.write_all(&data).expect("write, no fsync");
    let written = || stat_mib(&m.dir, "written for users");
    assert!(
        wait_until(Duration::from_secs(10), || written() >= 19.5),
        "only {:.1} MiB of 24 written to the log without a sync",
        written()
    );
    drop(file);
    assert!(fs::read(m.dir.join("big")).expect("read back") == data, "content");
    m.unmount().expect("clean unmount");
}

/// Regression: a truncate made durable by fsync after the last checkpoint,
/// then a killed daemon, left the freed blocks counted live once
/// roll-forward had run: after recovery and a clean unmount, `fslab fsck`
/// exited 4 ("the table says 90624 live bytes, the checkpoint holds 74240
/// (too high)") until `--repair`.
#[test]
fn a_truncate_fsynced_before_a_killed_daemon_leaves_an_image_fsck_calls_clean() {
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, &["-o", "cleaner=off"]);
    let pid = m.pid().expect("foreground daemon pid");
    let path = m.dir.join("six-blocks");
    fs::write(&path, Rng::new(5).bytes(6 * 4096)).expect("write");
    let r = common::fslab_run(&[OsStr::new("sync"), m.dir.as_os_str()], T);
    assert!(r.success(), "fslab sync: {}", r.describe());
    let f = fs::OpenOptions::new().write(true).open(&path).expect("open");
    assert_eq!(rustix::fs::ftruncate(&f, 0), Ok(()), "ftruncate");
    f.sync_all().expect("fsync");
    drop(f);

    signal(pid, libc::SIGKILL);
    drop(m);
    detach(&dir);
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    assert_eq!(fs::metadata(m.dir.join("six-blocks")).expect("stat after recovery").len(), 0);
    m.unmount().expect("clean unmount after recovery");
    let r = common::fslab_run(&[OsStr::new("fsck"), image.as_os_str()], T);
    assert!(r.success(), "fsck after recovery and a clean unmount: {}", r.describe());
}

/// Bytes a user may still write on the file system mounted at `dir`.
fn available_bytes(dir: &Path) -> u64 {
    let s = rustix::fs::statvfs(dir).expect("statvfs");
    s.f_bavail * s.f_frsize
}

/// Regression: a file unlinked while open, then a killed daemon, stayed
/// allocated with all its space (fsck called it an unreachable inode)
/// until `fslab fsck --repair`. It is on the orphan list now: LFS frees it
/// at the next mount; on FFS, whose mount refuses the unclean image, fsck
/// finds it pending reclaim — nothing else about it — and the repair frees
/// it. Either way the space is back.
fn an_open_unlinked_file_is_freed_after_a_killed_daemon(layout: Layout) {
    let Some(Scratch { _tmp, image, dir }) = scratch_of("64M", layout) else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    let pid = m.pid().expect("foreground daemon pid");
    let path = m.dir.join("held");
    let before = available_bytes(&m.dir);
    let mut f = File::create(&path).expect("create");
    f.write_all(&Rng::new(7).bytes(16 << 20)).expect("write");
    f.sync_all().expect("fsync");
    fs::remove_file(&path).expect("unlink while open");
    let r = common::fslab_run(&[OsStr::new("sync"), m.dir.as_os_str()], T);
    assert!(r.success(), "fslab sync: {}", r.describe());
    let held = available_bytes(&m.dir);
    assert!(held + (15 << 20) < before, "the open file holds its space: {held} of {before}");

    signal(pid, libc::SIGKILL);
    drop(f);
    drop(m);
    detach(&dir);
    if !layout.is_lfs() {
        let r = common::fslab_run(&[OsStr::new("fsck"), image.as_os_str()], T);
        let out = r.describe();
        assert!(out.contains("pending reclaim: 1 file unlinked while open"), "{out}");
        assert!(!out.contains("no links and no name"), "the orphan is not damage: {out}");
    }
    recover_after_a_kill(&image, &dir, layout);
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    let after = available_bytes(&m.dir);
    assert!(after + (1 << 20) >= before, "the space is back: {after} of {before} ({held} while held)");
    m.unmount().expect("clean unmount");
    let r = common::fslab_run(&[OsStr::new("fsck"), image.as_os_str()], T);
    assert!(r.success(), "fsck after recovery and a clean unmount: {}", r.describe());
    assert!(!r.describe().contains("pending reclaim"), "{}", r.describe());
}

/// Whether this process may mount (root), saying so when not.
fn root_or_skip(what: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        println!("skipped: {what} needs root");
    }
    root
}

/// A tmpfs mounted on a directory, unmounted (lazily) when dropped so a
/// failing test leaves nothing behind.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Tmpfs {
        let r =
            run("mount", &[OsStr::new("-t"), OsStr::new("tmpfs"), OsStr::new("tmpfs"), dir.as_os_str()], T);
        assert!(r.success(), "mount -t tmpfs: {}", r.describe());
        Tmpfs(dir.to_path_buf())
    }

    /// Whether the tmpfs is still the mount it was, holding `file`.
    fn holds(&self, file: &str, content: &[u8]) -> bool {
        fs::read(self.0.join(file)).is_ok_and(|c| c == content)
    }

    fn unmount(mut self) {
        let r = run("umount", &[self.0.as_os_str()], T);
        assert!(r.success(), "umount tmpfs: {}", r.describe());
        self.0 = PathBuf::new();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = run("umount", &[OsStr::new("-l"), self.0.as_os_str()], T);
        }
    }
}

#[test]
fn unmounting_fslab_leaves_the_mount_under_it() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    fs::create_dir(&dir).expect("mkdir mnt");

    // A tmpfs under fslab: the daemon, ending its session, must not take it.
    let tmpfs = Tmpfs::mount(&dir);
    fs::write(dir.join("under"), b"tmpfs").expect("write on the tmpfs");
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    assert!(!dir.join("under").exists(), "fslab is not on top");
    m.unmount().expect("clean unmount of fslab");
    assert!(tmpfs.holds("under", b"tmpfs"), "the tmpfs went with fslab's unmount");
    tmpfs.unmount();

    // fslab under fslab: only the upper one goes.
    let upper_image = _tmp.path().join("upper.img");
    mkfs_layout(&upper_image, "64M", Layout::Lfs, &[]);
    let lower = Mount::new(&image, &dir, Mode::Foreground, &[]);
    fs::write(dir.join("lower"), b"lower fslab").expect("write on the lower mount");
    let upper = Mount::new(&upper_image, &dir, Mode::Foreground, &[]);
    assert!(!dir.join("lower").exists(), "the upper mount is not on top");
    upper.unmount().expect("clean unmount of the upper fslab");
    assert_eq!(
        fs::read(dir.join("lower")).ok().as_deref(),
        Some(&b"lower fslab"[..]),
        "the lower fslab went too"
    );
    lower.unmount().expect("clean unmount of the lower fslab");
}

#[test]
fn sigterm_does_not_unmount_what_covers_the_mount() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    fs::write(dir.join("kept"), b"in fslab").expect("write");
    let pid = m.pid().expect("foreground daemon pid");
    let tmpfs = Tmpfs::mount(&dir);
    fs::write(dir.join("over"), b"tmpfs").expect("write on the tmpfs");
    signal(pid, libc::SIGTERM);
    // The daemon says why it cannot unmount and goes on serving.
    assert!(wait_until(Duration::from_secs(10), || m.log().contains("covered")), "log: {}", m.log());
    assert!(tmpfs.holds("over", b"tmpfs"), "SIGTERM unmounted the tmpfs over fslab");
    assert!(!is_zombie(pid), "the daemon exited with its mount still covered");
    tmpfs.unmount();
    assert_eq!(fs::read(dir.join("kept")).ok().as_deref(), Some(&b"in fslab"[..]), "fslab still serves");
    signal(pid, libc::SIGTERM);
    m.wait_exit().expect("SIGTERM, uncovered, ends the mount cleanly");
    assert!(!is_mounted(&dir), "still mounted after SIGTERM");
}

/// A mount inside the fslab mount keeps it from being detached lazily by a
/// signal, which would take the inner mount (and a tmpfs's files) away too:
/// the daemon says why and serves on. SIGQUIT (Ctrl-\\) unmounts as SIGTERM
/// does, with the final checkpoint.
#[test]
fn a_signal_leaves_a_mount_inside_the_mount_and_sigquit_checkpoints() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    let pid = m.pid().expect("foreground daemon pid");
    fs::create_dir(dir.join("sub")).expect("mkdir");
    fs::write(dir.join("kept"), b"in fslab").expect("write");
    let tmpfs = Tmpfs::mount(&dir.join("sub"));
    fs::write(dir.join("sub/inner"), b"tmpfs").expect("write on the tmpfs");
    signal(pid, libc::SIGTERM);
    assert!(wait_until(Duration::from_secs(10), || m.log().contains("mounted inside")), "log: {}", m.log());
    assert!(tmpfs.holds("inner", b"tmpfs"), "SIGTERM took the tmpfs inside fslab away");
    assert!(!is_zombie(pid), "the daemon exited with a mount inside it");
    tmpfs.unmount();
    signal(pid, libc::SIGQUIT);
    m.wait_exit().expect("SIGQUIT ends the mount cleanly");
    assert!(!is_mounted(&dir), "still mounted after SIGQUIT");
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    assert_eq!(fs::read(dir.join("kept")).ok().as_deref(), Some(&b"in fslab"[..]), "checkpointed");
    m.unmount().expect("unmount");
}

/// A loop device over a file, detached when dropped.
struct LoopDevice(PathBuf);

impl LoopDevice {
    /// `losetup -f --show FILE`; `None` (the test is skipped) where loop
    /// devices cannot be made.
    fn over(file: &Path) -> Option<LoopDevice> {
        let r = run("losetup", &[OsStr::new("-f"), OsStr::new("--show"), file.as_os_str()], T);
        if !r.success() {
            println!("skipped: losetup: {}", r.describe());
            return None;
        }
        Some(LoopDevice(PathBuf::from(r.stdout.trim())))
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = run("losetup", &[OsStr::new("-d"), self.0.as_os_str()], T);
    }
}

#[test]
fn one_storage_is_served_once_whatever_name_mounts_it() {
    if !root_or_skip("losetup") || !common::have("losetup") {
        return;
    }
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    let other = _tmp.path().join("other");
    let link = _tmp.path().join("link.img");
    fs::hard_link(&image, &link).expect("hard link");
    let Some(device) = LoopDevice::over(&image) else { return };
    let canonical_dir = |d: &Path| fs::canonicalize(d).expect("canonical mount point");

    // The file first: its hard link and its loop device are refused,
    // naming the mount that serves it.
    let first = Mount::new(&image, &dir, Mode::Foreground, &[]);
    let on = format!("is mounted on {}", canonical_dir(&dir).display());
    for name in [&link, &device.0] {
        let refused = Mount::try_new(name, &other, Mode::Foreground, &[]).err();
        let refused =
            refused.unwrap_or_else(|| panic!("{} mounted beside {}", name.display(), image.display()));
        assert!(refused.output.contains(&on), "{}: {refused}", name.display());
    }
    first.unmount().expect("clean unmount");

    // The loop device first: the file is refused, and the device is
    // claimed exclusively while it is served.
    let first = Mount::new(&device.0, &dir, Mode::Foreground, &[]);
    let refused = Mount::try_new(&image, &other, Mode::Foreground, &[])
        .err()
        .expect("the file mounted beside its loop device");
    assert!(refused.output.contains(&format!("{on} (as {})", device.0.display())), "{refused}");
    let exclusive = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&device.0)
        .err()
        .and_then(|e| e.raw_os_error());
    assert_eq!(exclusive, Some(libc::EBUSY), "the served loop device is not claimed exclusively");
    first.unmount().expect("clean unmount");
}

/// Mount ids and FUSE device numbers are reused: a daemon finishing after
/// its unmount must not take the next mount made on its directory for its
/// own. The first daemon is stopped (SIGSTOP) across its unmount and the
/// next mount, so it finishes only after that mount exists.
#[test]
fn a_finishing_daemon_leaves_the_next_mount_on_its_directory() {
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    let next_image = _tmp.path().join("next.img");
    mkfs_layout(&next_image, "64M", Layout::Lfs, &[]);
    let first = Mount::new(&image, &dir, Mode::Foreground, &[]);
    let pid = first.pid().expect("foreground daemon pid");
    signal(pid, libc::SIGSTOP);
    let r = run("fusermount3", &[OsStr::new("-u"), dir.as_os_str()], T);
    assert!(r.success(), "fusermount3 -u: {}", r.describe());
    let next = Mount::new(&next_image, &dir, Mode::Foreground, &[]);
    signal(pid, libc::SIGCONT);
    assert!(
        wait_until(Duration::from_secs(60), || image_users(&image).is_empty()),
        "the first daemon did not finish"
    );
    fs::write(dir.join("after"), b"next mount").expect("write on the next mount");
    assert_eq!(common::mounts_at(&dir), 1, "the next mount went with the first daemon");
    next.unmount().expect("clean unmount of the next mount");
    drop(first);
}

/// `-o log=FILE` with a relative name is relative to where `fslab mount`
/// ran, although the background process changes directory to "/".
#[test]
fn a_relative_log_file_is_relative_to_the_current_directory() {
    let Some(Scratch { _tmp, image, dir }) = scratch("64M") else { return };
    fs::create_dir(&dir).expect("mkdir mnt");
    let mut command = std::process::Command::new(common::fslab());
    command.current_dir(_tmp.path()).arg("mount").arg(&image).arg(&dir).args(["-o", "log=rel.log"]);
    let r = common::run_cmd(command, T);
    assert!(r.success(), "fslab mount: {}", r.describe());
    let pid = daemon_pid(&image);
    let here = _tmp.path().join("rel.log").exists();
    let at_root = Path::new("/rel.log").exists();
    signal(pid, libc::SIGTERM);
    assert!(wait_until(Duration::from_secs(60), || is_zombie(pid)), "daemon did not exit after SIGTERM");
    assert!(here, "the log is not in the directory fslab mount ran in");
    assert!(!at_root, "the log went to /rel.log");
}

/// `-o ro`: the image left by a killed daemon (LFS: log to roll forward;
/// FFS: stale bitmaps, which a writable mount refuses) mounts read-only,
/// shows what was made durable, refuses every change with EROFS, is read-only
/// in the mount table, and not one byte of the image changes — recovery
/// happens in memory only. A writable mount afterwards recovers as usual.
fn a_read_only_mount_recovers_in_memory_and_writes_nothing(layout: Layout) {
    let Some(Scratch { _tmp, image, dir }) = scratch_of("64M", layout) else { return };
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    let pid = m.pid().expect("foreground daemon pid");
    fs::write(m.dir.join("checkpointed"), b"synced").expect("write");
    let synced = common::fslab_run(&[OsStr::new("sync"), m.dir.as_os_str()], T);
    assert!(synced.success(), "fslab sync: {}", synced.describe());
    let data = Rng::new(5).bytes(300_000);
    let mut f = File::create(m.dir.join("fsynced")).expect("create");
    f.write_all(&data).expect("write");
    f.sync_all().expect("fsync");
    drop(f);
    signal(pid, libc::SIGKILL);
    drop(m);
    detach(&dir);
    let before = fs::read(&image).expect("read the image");

    let m = Mount::new(&image, &dir, Mode::Foreground, &mount_args(layout, &["-o", "ro"]));
    assert_eq!(fs::read(m.dir.join("checkpointed")).expect("read"), b"synced");
    assert!(fs::read(m.dir.join("fsynced")).expect("read the fsynced file") == data, "fsynced contents");
    let refused = [
        fs::write(m.dir.join("new"), b"x").err(),
        fs::create_dir(m.dir.join("dir")).err(),
        fs::remove_file(m.dir.join("checkpointed")).err(),
        fs::OpenOptions::new().append(true).open(m.dir.join("fsynced")).err(),
    ];
    for (i, e) in refused.into_iter().enumerate() {
        let e = e.unwrap_or_else(|| panic!("change {i} succeeded on a read-only mount"));
        assert_eq!(e.raw_os_error(), Some(libc::EROFS), "change {i}: {e}");
    }
    let table = fs::read_to_string("/proc/self/mounts").expect("mount table");
    let dir_name = fs::canonicalize(&m.dir).expect("canonical mount point").display().to_string();
    let line = table.lines().find(|l| l.split(' ').nth(1) == Some(dir_name.as_str())).expect("in the table");
    assert!(line.split(' ').nth(3).is_some_and(|o| o.split(',').any(|o| o == "ro")), "{line}");
    // A remount read-write that bypasses fslab's helper (mount(2) itself,
    // as `mount -i` or BusyBox do) makes the kernel's mount writable; the
    // daemon still refuses, since what it took would go nowhere.
    let path = std::ffi::CString::new(dir_name.as_bytes()).expect("no NUL");
    // SAFETY: the path is a NUL-terminated string; the other pointers may be null for MS_REMOUNT.
    let remounted = unsafe {
        libc::mount(std::ptr::null(), path.as_ptr(), std::ptr::null(), libc::MS_REMOUNT, std::ptr::null())
    };
    if remounted == 0 {
        let e = fs::write(m.dir.join("after-remount"), b"x").expect_err("a write after a remount read-write");
        assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    }
    m.unmount().expect("unmount the read-only mount");
    assert!(fs::read(&image).expect("read the image") == before, "a read-only mount changed the image");

    recover_after_a_kill(&image, &dir, layout);
    let m = Mount::new(&image, &dir, Mode::Foreground, layout.mount_args());
    assert!(fs::read(m.dir.join("fsynced")).expect("read after recovery") == data);
    m.unmount().expect("unmount");
}

/// A journal on a log device of its own (`mkfs --journal-device`): a
/// create under `journal=sync` survives a killed daemon, whose next mount
/// finds the log where mkfs recorded it and replays it; a moved log is
/// named by `-o journal_device=`, and a missing or foreign one is refused
/// in a message that names what the image wants.
#[test]
fn a_journal_on_its_own_device_survives_a_killed_daemon_and_a_wrong_device_is_refused() {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (image, log, dir) = (tmp.path().join("fs.img"), tmp.path().join("log.img"), tmp.path().join("mnt"));
    let log_arg = log.to_str().expect("utf-8 path");
    mkfs_layout(&image, "64M", Layout::FfsSync, &["--journal-device", log_arg, "--journal-size", "4M"]);
    assert_eq!(fs::metadata(&log).expect("log device made").len(), (4 << 20) + 4096);
    let sync = ["-o", "integrity=journal,journal=sync"];
    let m = Mount::new(&image, &dir, Mode::Foreground, &sync);
    let pid = m.pid().expect("foreground daemon pid");
    fs::create_dir(m.dir.join("made")).expect("mkdir");
    signal(pid, libc::SIGKILL);
    drop(m);
    detach(&dir);

    let moved = tmp.path().join("moved.img");
    fs::rename(&log, &moved).expect("move the log device");
    let refused = Mount::try_new(&image, &dir, Mode::Foreground, &sync).err().expect("no log, no mount");
    assert!(refused.output.contains(log_arg) && refused.output.contains("journal_device"), "{refused}");
    let other = (tmp.path().join("other.img"), tmp.path().join("other-log.img"));
    mkfs_layout(&other.0, "64M", Layout::FfsSync, &["--journal-device", other.1.to_str().expect("utf-8")]);
    let wrong = format!("integrity=journal,journal_device={}", other.1.display());
    let refused =
        Mount::try_new(&image, &dir, Mode::Foreground, &["-o", &wrong]).err().expect("another's log");
    assert!(refused.output.contains("not the file system's log device"), "{refused}");

    let found = format!("integrity=journal,journal_device={}", moved.display());
    let m = Mount::new(&image, &dir, Mode::Foreground, &["-o", &found]);
    assert!(m.dir.join("made").is_dir(), "the directory made under journal=sync, replayed");
    m.unmount().expect("unmount");
    let r = common::fslab_run(
        &[OsStr::new("fsck"), image.as_os_str(), OsStr::new("--journal-device"), moved.as_os_str()],
        T,
    );
    assert_eq!(r.status.and_then(|s| s.code()), Some(0), "fsck: {}", r.describe());
}

/// An image inside another fslab mount mounts, with a warning that its I/O
/// goes through the outer mount, which must outlive it; both unmount
/// cleanly, inner first, and the inner image checks clean.
#[test]
fn an_image_inside_an_fslab_mount_mounts_with_a_warning() {
    let Some(Scratch { _tmp, image, dir }) = scratch("128M") else { return };
    let outer = Mount::new(&image, &dir, Mode::Foreground, &[]);
    let inner_image = dir.join("inner.img");
    mkfs_layout(&inner_image, "32M", Layout::Lfs, &[]);
    let inner_dir = _tmp.path().join("inner");
    let inner = Mount::new(&inner_image, &inner_dir, Mode::Foreground, &[]);
    fs::write(inner_dir.join("f"), b"nested").expect("write in the inner mount");
    let log = inner.log();
    assert!(log.contains("lies inside the fslab mount at"), "the inner mount warns: {log}");
    inner.unmount().expect("clean unmount of the inner mount");
    let r = common::fslab_run(&[OsStr::new("fsck"), inner_image.as_os_str()], T);
    assert!(r.success(), "the inner image checks clean: {}", r.describe());
    outer.unmount().expect("clean unmount of the outer mount");
}

/// An image mounted on the directory that holds it: its path then lies
/// under the mount, where a lookup waits for the daemon, which must have
/// done all it needs of that path before the kernel's mount is up (it hung
/// there, serving nothing, with its signals blocked).
#[test]
fn an_image_mounted_on_the_directory_holding_it_is_served() {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("here");
    fs::create_dir(&dir).expect("mkdir");
    let image = dir.join("fs.img");
    mkfs_layout(&image, "64M", Layout::Lfs, &[]);
    let m = Mount::new(&image, &dir, Mode::Foreground, &[]);
    let script = format!("echo served > {0}/made && cat {0}/made", dir.display());
    let r = run("timeout", &[OsStr::new("10"), OsStr::new("sh"), OsStr::new("-c"), OsStr::new(&script)], T);
    assert!(r.success() && r.stdout == "served\n", "the mount does not answer: {}", r.describe());
    m.unmount().expect("clean unmount");
}
