//! The kernel caches a mounted fslab's attributes for an hour; these tests
//! check that what it caches never outlives a change fslab made behind its
//! back (crates/fuse/src/stale.rs). Each primes the cache with a `statx`
//! that asks for one attribute only (the kernel answers such a call from
//! its cache when it can), changes the file, and asks again.
//!
//! The changes that matter come from a user without privileges: a write
//! by such a user clears set-user-ID. The tests switch to user and group
//! 65534 (nobody) in a forked child, so they need root; elsewhere they
//! print "skipped" and pass.

mod common;

use common::{mkfs_layout, Layout, Mode, Mount};
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const NOBODY: libc::uid_t = 65534;

/// A fresh image mounted with `allow_other` (so that nobody may use it)
/// under a directory nobody can reach.
struct Fixture {
    m: Option<Mount>,
    _tmp: tempfile::TempDir,
}

impl Fixture {
    fn new(layout: Layout) -> Option<Fixture> {
        if !common::fuse_or_skip() {
            return None;
        }
        // SAFETY: geteuid has no arguments and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            println!("skipped: needs root to act as another user");
            return None;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).expect("chmod tempdir");
        let image = tmp.path().join("fs.img");
        mkfs_layout(&image, "64M", layout, &[]);
        let mut args = vec!["-o", "allow_other"];
        args.extend_from_slice(layout.mount_args());
        let m = Mount::new(&image, &tmp.path().join("mnt"), Mode::Foreground, &args);
        Some(Fixture { m: Some(m), _tmp: tmp })
    }

    fn p(&self, name: &str) -> PathBuf {
        self.m.as_ref().expect("mounted").dir.join(name)
    }

    fn finish(mut self) {
        self.m.take().expect("mounted").unmount().expect("clean unmount");
    }
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("no NUL in path")
}

/// One attribute as `statx` asks for it alone (`mask` one of STATX_MODE,
/// STATX_BLOCKS): the kernel answers from its cache unless it dropped it.
fn statx_one(path: &Path, mask: u32) -> libc::statx {
    let c = cpath(path);
    // SAFETY: `st` is written by statx; the path is a valid C string.
    unsafe {
        let mut st: libc::statx = std::mem::zeroed();
        assert_eq!(libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, mask, &mut st), 0, "statx {}", path.display());
        st
    }
}

fn mode(path: &Path) -> u32 {
    u32::from(statx_one(path, libc::STATX_MODE).stx_mode) & 0o7777
}

/// Runs `act` in a forked child as user and group 65534 and returns what
/// it returns (0, or the errno of the call that failed).
fn as_nobody(act: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child of a threaded process may only make system calls:
    // `act` and the calls here allocate nothing and take no lock, and the
    // child leaves with _exit.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork");
        if pid == 0 {
            let code = if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(NOBODY, NOBODY, NOBODY) != 0
                || libc::setresuid(NOBODY, NOBODY, NOBODY) != 0
            {
                200
            } else {
                act()
            };
            libc::_exit(code);
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        assert!(libc::WIFEXITED(status), "child status {status}");
        let code = libc::WEXITSTATUS(status);
        assert_ne!(code, 200, "cannot become user {NOBODY}");
        code
    }
}

/// The errno of the last failed call, inside `as_nobody`'s child.
fn last_errno() -> i32 {
    // SAFETY: reads this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// A file made by root with `mode`, its set-user-ID / set-group-ID bits
/// already in the kernel's cache.
fn privileged_file(fx: &Fixture, name: &str, mode_bits: u32) -> PathBuf {
    let path = fx.p(name);
    fs::write(&path, b"0123456789").expect("create");
    fs::set_permissions(&path, fs::Permissions::from_mode(mode_bits)).expect("chmod");
    assert_eq!(mode(&path), mode_bits, "mode before");
    path
}

/// Regression: a write by an unprivileged user cleared set-user-ID in the
/// file system, but `statx` for the mode (and the kernel's own permission
/// and exec checks) went on seeing `rwsrwxrwx` for the hour the kernel
/// keeps attributes.
fn a_write_that_clears_set_user_id_and_set_group_id_shows_at_once(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let suid = privileged_file(&fx, "suid", 0o4777);
    let sgid = privileged_file(&fx, "sgid", 0o2777);
    for path in [&suid, &sgid] {
        let c = cpath(path);
        let result = as_nobody(|| {
            // SAFETY: a valid path and buffer; plain system calls.
            unsafe {
                let fd = libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_APPEND);
                if fd < 0 || libc::write(fd, b"x".as_ptr().cast(), 1) != 1 {
                    return last_errno();
                }
                0
            }
        });
        assert_eq!(result, 0, "write as nobody to {}", path.display());
        assert_eq!(mode(path), 0o777, "mode of {} after the write", path.display());
    }
    fx.finish();
}

fn fallocate_and_copy_file_range_that_clear_set_user_id_show_at_once(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let source = fx.p("source");
    fs::write(&source, vec![7u8; 10_000]).expect("create source");
    let source = cpath(&source);
    let allocated = privileged_file(&fx, "allocated", 0o4777);
    let copied = privileged_file(&fx, "copied", 0o4777);

    let target = cpath(&allocated);
    let result = as_nobody(|| {
        // SAFETY: a valid path; plain system calls.
        unsafe {
            let fd = libc::open(target.as_ptr(), libc::O_WRONLY);
            if fd < 0 || libc::fallocate(fd, 0, 0, 65536) != 0 {
                return last_errno();
            }
            0
        }
    });
    assert_eq!(result, 0, "fallocate as nobody");
    assert_eq!(mode(&allocated), 0o777, "mode after fallocate");

    let target = cpath(&copied);
    let result = as_nobody(|| {
        // SAFETY: valid paths; plain system calls with null offsets.
        unsafe {
            let from = libc::open(source.as_ptr(), libc::O_RDONLY);
            let to = libc::open(target.as_ptr(), libc::O_WRONLY);
            if from < 0 || to < 0 {
                return last_errno();
            }
            let n = libc::copy_file_range(from, std::ptr::null_mut(), to, std::ptr::null_mut(), 5000, 0);
            if n != 5000 {
                return last_errno().max(1);
            }
            0
        }
    });
    assert_eq!(result, 0, "copy_file_range as nobody");
    assert_eq!(mode(&copied), 0o777, "mode after copy_file_range");
    fx.finish();
}

/// A truncate's reply carries the new attributes; checked here so that a
/// change in how truncate is answered cannot bring the bug back.
fn a_truncate_that_clears_set_user_id_shows_at_once(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = privileged_file(&fx, "truncated", 0o4777);
    let c = cpath(&path);
    let result = as_nobody(|| {
        // SAFETY: a valid path; plain system calls.
        unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_WRONLY);
            if fd < 0 || libc::ftruncate(fd, 3) != 0 {
                return last_errno();
            }
            0
        }
    });
    assert_eq!(result, 0, "ftruncate as nobody");
    assert_eq!(mode(&path), 0o777, "mode after truncate");
    fx.finish();
}

/// Who makes a change in [`the_privilege_bits_go_as_ext4_drops_them`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// Root, with `CAP_FSETID`.
    Root,
    /// Nobody, outside the file's group.
    Outsider,
    /// Nobody, the file in nobody's group.
    Member,
}

/// The four changes that clear set-user-ID and set-group-ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Write,
    Truncate,
    Fallocate,
    /// To the owner the file already has.
    Chown,
}

/// Runs `change` on `path` as `who`; 0 or the errno of the failed call.
fn change_as(who: Who, change: Change, path: &Path) -> i32 {
    let c = cpath(path);
    let act = || {
        // SAFETY: a valid path; plain system calls.
        unsafe {
            let ok = match change {
                // Root runs this in the test's own process: the files are
                // closed again, or the unmount finds the mount busy.
                Change::Write => {
                    let fd = libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_APPEND);
                    let ok = fd >= 0 && libc::write(fd, b"x".as_ptr().cast(), 1) == 1;
                    ok && libc::close(fd) == 0
                }
                Change::Truncate => libc::truncate(c.as_ptr(), 2) == 0,
                Change::Fallocate => {
                    let fd = libc::open(c.as_ptr(), libc::O_WRONLY);
                    let ok = fd >= 0 && libc::fallocate(fd, 0, 0, 8192) == 0;
                    ok && libc::close(fd) == 0
                }
                Change::Chown => {
                    let owner = if who == Who::Root { 0 } else { NOBODY };
                    libc::chown(c.as_ptr(), owner, libc::gid_t::MAX) == 0
                }
            };
            if ok {
                0
            } else {
                last_errno()
            }
        }
    };
    match who {
        Who::Root => act(),
        Who::Outsider | Who::Member => as_nobody(act),
    }
}

/// Regression: an unprivileged fallocate on a 2666 file left it 2666 and
/// on a 6666 file cleared set-user-ID only; `chmod 6755 f; chown root f`
/// by root left `rwsr-sr-x`; and a write by root cleared bits that ext4
/// keeps for a caller with `CAP_FSETID`. The table is what ext4 on Linux
/// 6.18 shows for the same calls (`file_remove_privs`, `chown_common`).
fn the_privilege_bits_go_as_ext4_drops_them(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    // (who, mode before, after a write, truncate or fallocate, after a chown);
    // `None`: nobody may not write to the file.
    let table = [
        (Who::Root, 0o2666, Some(0o2666), 0o2666),
        (Who::Root, 0o6666, Some(0o6666), 0o2666),
        (Who::Root, 0o6777, Some(0o6777), 0o777),
        (Who::Root, 0o6755, Some(0o6755), 0o755),
        (Who::Outsider, 0o2666, Some(0o666), 0o666),
        (Who::Outsider, 0o6666, Some(0o666), 0o666),
        (Who::Outsider, 0o6777, Some(0o777), 0o777),
        (Who::Outsider, 0o6755, None, 0o755),
        (Who::Member, 0o2666, Some(0o2666), 0o2666),
        (Who::Member, 0o6666, Some(0o2666), 0o2666),
        (Who::Member, 0o6777, Some(0o777), 0o777),
        (Who::Member, 0o6755, None, 0o755),
    ];
    let changes = [Change::Write, Change::Truncate, Change::Fallocate, Change::Chown];
    for (who, before, after_change, after_chown) in table {
        for change in changes {
            let want = if change == Change::Chown { Some(after_chown) } else { after_change };
            let Some(want) = want else { continue };
            let path = fx.p(&format!("{who:?}-{before:o}-{change:?}"));
            fs::write(&path, b"0123456789").expect("create");
            let group = if who == Who::Member { NOBODY } else { 0 };
            let owner = if who != Who::Root && change == Change::Chown { NOBODY } else { 0 };
            std::os::unix::fs::chown(&path, Some(owner), Some(group)).expect("chown before");
            fs::set_permissions(&path, fs::Permissions::from_mode(before)).expect("chmod");
            assert_eq!(mode(&path), before, "mode before");
            assert_eq!(change_as(who, change, &path), 0, "{change:?} as {who:?} on {before:o}");
            assert_eq!(mode(&path), want, "{change:?} as {who:?} on {before:o}");
        }
    }
    fx.finish();
}

/// Regression: the first extended attribute of a file takes a block, the
/// last one's removal frees it; the kernel dropped only the ctime after
/// either, so `statx` for the block count answered the old count.
fn extended_attributes_that_take_or_free_a_block_show_in_the_block_count(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = fx.p("xattrs");
    fs::write(&path, vec![1u8; 4096]).expect("create");
    let blocks = |p: &Path| statx_one(p, libc::STATX_BLOCKS).stx_blocks;
    let before = blocks(&path);
    let c = cpath(&path);
    // SAFETY: valid C strings and a buffer that outlive the calls.
    unsafe {
        assert_eq!(libc::setxattr(c.as_ptr(), c"user.colour".as_ptr(), b"blue".as_ptr().cast(), 4, 0), 0);
    }
    let with = blocks(&path);
    assert!(with > before, "an xattr block shows: {before} -> {with}");
    // SAFETY: valid C strings.
    unsafe {
        assert_eq!(libc::removexattr(c.as_ptr(), c"user.colour".as_ptr()), 0);
    }
    assert_eq!(blocks(&path), before, "the xattr block is gone");
    fx.finish();
}

/// "Permissions are checked by the kernel (`default_permissions`) against
/// the mode, owner and group fslab stores", and a chmod takes effect at once.
fn the_kernel_checks_permissions_against_the_stored_mode(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = fx.p("private");
    fs::write(&path, b"secret").expect("create");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod 600");
    let c = cpath(&path);
    let open_for_reading = || {
        as_nobody(|| {
            // SAFETY: a valid path; a plain system call.
            if unsafe { libc::open(c.as_ptr(), libc::O_RDONLY) } < 0 {
                last_errno()
            } else {
                0
            }
        })
    };
    assert_eq!(open_for_reading(), libc::EACCES, "mode 600, owner root");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod 644");
    assert_eq!(open_for_reading(), 0, "mode 644");
    fx.finish();
}

on_every_layout!(
    the_privilege_bits_go_as_ext4_drops_them,
    a_write_that_clears_set_user_id_and_set_group_id_shows_at_once,
    fallocate_and_copy_file_range_that_clear_set_user_id_show_at_once,
    a_truncate_that_clears_set_user_id_shows_at_once,
    extended_attributes_that_take_or_free_a_block_show_in_the_block_count,
    the_kernel_checks_permissions_against_the_stored_mode,
);
