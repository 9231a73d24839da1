//! The kernel caches a mounted fslab's attributes for an hour; these tests
//! check that what it caches never outlives a change fslab made behind its
//! back (crates/fuse/src/stale.rs). Each primes the cache with a `statx`
//! that asks for one attribute only (the kernel answers such a call from
//! its cache when it can), changes the file, and asks again.
//!
//! The changes that matter come from a user without privileges: a write
//! by such a user clears set-user-ID. The tests switch to user and group
//! 65534 (nobody) in a forked child, so they need root; elsewhere they
//! print "skipped" and pass. What such a user may see and open (the stored
//! mode, `trusted.*` names) is checked here too.

mod common;

use common::{mkfs_layout, Layout, Mode, Mount};
use rustix::fs::{AtFlags, FallocateFlags, OFlags, StatxFlags, Uid};
use std::ffi::{CStr, CString};
use std::fs;
use std::os::fd::OwnedFd;
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
        if !rustix::process::geteuid().is_root() {
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
fn statx_one(path: &Path, mask: StatxFlags) -> rustix::fs::Statx {
    rustix::fs::statx(rustix::fs::CWD, path, AtFlags::empty(), mask)
        .unwrap_or_else(|e| panic!("statx {}: {e}", path.display()))
}

fn mode(path: &Path) -> u32 {
    u32::from(statx_one(path, StatxFlags::MODE).stx_mode) & 0o7777
}

/// Runs `act` in a forked child as user and group 65534 and returns what
/// it returns (0, or the errno of the call that failed).
fn as_nobody(act: impl FnOnce() -> i32) -> i32 {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, setgroups, setresgid, setresuid, ForkResult, Gid, Uid};
    // SAFETY: the child of a threaded process may only make system calls:
    // `act` and the calls below allocate nothing and take no lock, and the
    // child leaves with _exit.
    match unsafe { fork() }.expect("fork") {
        ForkResult::Child => {
            let (uid, gid) = (Uid::from_raw(NOBODY), Gid::from_raw(NOBODY));
            let became = setgroups(&[])
                .and_then(|()| setresgid(gid, gid, gid))
                .and_then(|()| setresuid(uid, uid, uid));
            let code = if became.is_ok() { act() } else { 200 };
            // SAFETY: _exit ends the child at once; the parent's exit
            // handlers and buffers, which exit would run and flush, are not
            // the child's to touch. Neither rustix nor nix offers it safe.
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => {
            let status = waitpid(child, None).expect("waitpid");
            let WaitStatus::Exited(_, code) = status else { panic!("child status {status:?}") };
            assert_ne!(code, 200, "cannot become user {NOBODY}");
            code
        }
    }
}

/// 0 for success, else the errno: what `as_nobody`'s child exits with.
/// rustix's calls on a `CStr` path allocate nothing, so they are safe in
/// the child of a threaded process.
fn code(r: rustix::io::Result<()>) -> i32 {
    r.err().map_or(0, |e| e.raw_os_error())
}

/// A nix error as rustix's.
fn from_nix(e: nix::errno::Errno) -> rustix::io::Errno {
    rustix::io::Errno::from_raw_os_error(e as i32)
}

/// Closes `fd` and says whether the close failed, which dropping it would
/// not.
fn close(fd: OwnedFd) -> rustix::io::Result<()> {
    nix::unistd::close(fd).map_err(from_nix)
}

/// Opens `path` (`CStr`: no allocation in `as_nobody`'s child).
fn open(path: &CStr, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    rustix::fs::open(path, flags, rustix::fs::Mode::empty())
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
            code(open(&c, OFlags::WRONLY | OFlags::APPEND).and_then(|fd| {
                let n = rustix::io::write(&fd, b"x")?;
                if n == 1 {
                    Ok(())
                } else {
                    Err(rustix::io::Errno::IO)
                }
            }))
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
        code(
            open(&target, OFlags::WRONLY)
                .and_then(|fd| rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, 65536)),
        )
    });
    assert_eq!(result, 0, "fallocate as nobody");
    assert_eq!(mode(&allocated), 0o777, "mode after fallocate");

    let target = cpath(&copied);
    let result = as_nobody(|| {
        let (from, to) = match (open(&source, OFlags::RDONLY), open(&target, OFlags::WRONLY)) {
            (Ok(from), Ok(to)) => (from, to),
            (Err(e), _) | (_, Err(e)) => return e.raw_os_error(),
        };
        match rustix::fs::copy_file_range(&from, None, &to, None, 5000) {
            Ok(5000) => 0,
            Ok(_) => 1,
            Err(e) => e.raw_os_error().max(1),
        }
    });
    assert_eq!(result, 0, "copy_file_range as nobody");
    assert_eq!(mode(&copied), 0o777, "mode after copy_file_range");
    fx.finish();
}

/// `chown(f, -1, -1)` clears set-user-ID (even by root) and set-group-ID
/// where group-execute is set, as ext4 does (`chown_common`): the kernel
/// asks for it with a SETATTR carrying no field at all.
fn a_chown_that_changes_no_id_still_clears_set_user_id(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = privileged_file(&fx, "owned", 0o6755);
    std::os::unix::fs::chown(&path, None, None).expect("chown -1 -1");
    assert_eq!(mode(&path), 0o755, "mode after chown(f, -1, -1)");
    let kept = privileged_file(&fx, "group-only", 0o2745);
    std::os::unix::fs::chown(&kept, None, None).expect("chown -1 -1");
    assert_eq!(mode(&kept), 0o2745, "set-group-ID without group-execute stays for a member");
    fx.finish();
}

/// A write, a truncate and a change of owner each take a file's
/// capabilities (`security.capability`) away, as on ext4, and leave its
/// other attributes: fslab drops them itself, since with
/// `FUSE_HANDLE_KILLPRIV_V2` the kernel stops asking after a file's first
/// write. Each change runs twice on the same file, the second after the
/// capability is set again, so that the kernel has already checked it.
fn a_write_truncate_or_chown_drops_the_files_capabilities(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    // VFS_CAP_REVISION_2 with the effective flag, CAP_NET_RAW permitted.
    const CAPABILITY: [u8; 20] = [1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let path = fx.p("capable");
    fs::write(&path, b"0123456789").expect("create");
    let c = cpath(&path);
    let set = |what: &str| {
        let flags = rustix::fs::XattrFlags::empty();
        rustix::fs::setxattr(&c, c"security.capability", &CAPABILITY, flags)
            .unwrap_or_else(|e| panic!("set the capability before the {what}: {e}"));
        rustix::fs::setxattr(&c, c"user.kept", b"yes", flags).expect("setxattr user.kept");
    };
    let gone = |what: &str| {
        let mut buf = [0u8; 64];
        let capability = rustix::fs::getxattr(&c, c"security.capability", &mut buf);
        assert_eq!(capability, Err(rustix::io::Errno::NODATA), "the capability after the {what}");
        let n = rustix::fs::getxattr(&c, c"user.kept", &mut buf).expect("user.kept stays");
        assert_eq!(&buf[..n], b"yes", "user.kept after the {what}");
    };
    let file = fs::OpenOptions::new().read(true).write(true).open(&path).expect("open read-write");
    for round in 0..2 {
        set("write");
        std::os::unix::fs::FileExt::write_at(&file, b"x", round).expect("write");
        gone("write");
        set("truncate");
        file.set_len(5 - round).expect("truncate");
        gone("truncate");
        set("chown");
        std::os::unix::fs::chown(&path, Some(0), None).expect("chown");
        gone("chown");
    }
    drop(file);
    fx.finish();
}

/// A truncate's reply carries the new attributes; checked here so that a
/// change in how truncate is answered cannot bring the bug back.
fn a_truncate_that_clears_set_user_id_shows_at_once(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = privileged_file(&fx, "truncated", 0o4777);
    let c = cpath(&path);
    let result = as_nobody(|| code(open(&c, OFlags::WRONLY).and_then(|fd| rustix::fs::ftruncate(&fd, 3))));
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
        code(match change {
            // Root runs this in the test's own process: the files are
            // closed again, or the unmount finds the mount busy.
            Change::Write => open(&c, OFlags::WRONLY | OFlags::APPEND).and_then(|fd| {
                if rustix::io::write(&fd, b"x")? != 1 {
                    return Err(rustix::io::Errno::IO);
                }
                close(fd)
            }),
            Change::Truncate => nix::unistd::truncate(c.as_c_str(), 2).map_err(from_nix),
            Change::Fallocate => open(&c, OFlags::WRONLY).and_then(|fd| {
                rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, 8192)?;
                close(fd)
            }),
            Change::Chown => {
                let owner = if who == Who::Root { 0 } else { NOBODY };
                rustix::fs::chown(c.as_c_str(), Some(Uid::from_raw(owner)), None)
            }
        })
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
    let blocks = |p: &Path| statx_one(p, StatxFlags::BLOCKS).stx_blocks;
    let before = blocks(&path);
    let c = cpath(&path);
    assert_eq!(rustix::fs::setxattr(&c, c"user.colour", b"blue", rustix::fs::XattrFlags::empty()), Ok(()));
    let with = blocks(&path);
    assert!(with > before, "an xattr block shows: {before} -> {with}");
    assert_eq!(rustix::fs::removexattr(&c, c"user.colour"), Ok(()));
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
    let open_for_reading = || as_nobody(|| code(open(&c, OFlags::RDONLY).map(drop)));
    assert_eq!(open_for_reading(), libc::EACCES, "mode 600, owner root");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod 644");
    assert_eq!(open_for_reading(), 0, "mode 644");
    fx.finish();
}

/// Linux's file systems list `trusted.*` attributes only to a caller with
/// `CAP_SYS_ADMIN` (the kernel checks it before a get or set, and leaves
/// the list to the file system): a list shown to anyone else named
/// attributes it could not read.
fn trusted_attribute_names_are_listed_only_to_an_administrator(layout: Layout) {
    let Some(fx) = Fixture::new(layout) else { return };
    let path = fx.p("attributes");
    fs::write(&path, b"x").expect("create");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod 644");
    let c = cpath(&path);
    for name in ["trusted.t", "user.u"] {
        rustix::fs::setxattr(c.as_c_str(), name, b"1", rustix::fs::XattrFlags::empty()).expect("setxattr");
    }
    let mut buf = [0u8; 64];
    let n = rustix::fs::listxattr(c.as_c_str(), &mut buf).expect("listxattr as root");
    let mut names: Vec<&[u8]> = buf[..n].split(|&b| b == 0).filter(|n| !n.is_empty()).collect();
    names.sort_unstable();
    assert_eq!(names, [b"trusted.t".as_slice(), b"user.u"], "root sees both");
    let mut seen = [0u8; 64];
    let listed = as_nobody(|| match rustix::fs::listxattr(c.as_c_str(), &mut seen) {
        Ok(n) if seen[..n] == *b"user.u\0" => 0,
        Ok(_) => 1,
        Err(e) => e.raw_os_error(),
    });
    assert_eq!(listed, 0, "nobody's list holds user.u alone (1: something else)");
    fx.finish();
}

on_every_layout!(
    trusted_attribute_names_are_listed_only_to_an_administrator,
    the_privilege_bits_go_as_ext4_drops_them,
    a_write_that_clears_set_user_id_and_set_group_id_shows_at_once,
    fallocate_and_copy_file_range_that_clear_set_user_id_show_at_once,
    a_truncate_that_clears_set_user_id_shows_at_once,
    a_chown_that_changes_no_id_still_clears_set_user_id,
    a_write_truncate_or_chown_drops_the_files_capabilities,
    extended_attributes_that_take_or_free_a_block_show_in_the_block_count,
    the_kernel_checks_permissions_against_the_stored_mode,
    a_moved_directorys_dotdot_names_its_new_parent,
);

/// The inode number the listing of `dir` gives its entry `name`, read
/// with readdir (`.` and `..` included, as `ls -ia` shows them).
fn listed_ino(dir: &Path, name: &[u8]) -> Option<u64> {
    let fd = open(&cpath(dir), OFlags::RDONLY | OFlags::DIRECTORY).expect("open directory");
    let entries = rustix::fs::Dir::read_from(&fd).expect("readdir");
    entries.filter_map(Result::ok).find(|e| e.file_name().to_bytes() == name).map(|e| e.ino())
}

/// A directory moved to another parent lists `..` as that parent, also
/// when the kernel had cached its listing before the move (its `..` is
/// rewritten by the move, which the kernel does not see).
fn a_moved_directorys_dotdot_names_its_new_parent(layout: Layout) {
    use std::os::unix::fs::MetadataExt;
    let Some(fx) = Fixture::new(layout) else { return };
    fs::create_dir_all(fx.p("a/c")).expect("mkdir a/c");
    fs::create_dir(fx.p("b")).expect("mkdir b");
    let a = fs::metadata(fx.p("a")).expect("a").ino();
    let b = fs::metadata(fx.p("b")).expect("b").ino();
    assert_eq!(listed_ino(&fx.p("a/c"), b".."), Some(a), "before the move");
    fs::rename(fx.p("a/c"), fx.p("b/c")).expect("rename");
    assert_eq!(listed_ino(&fx.p("b/c"), b".."), Some(b), "after the move, as ext4 lists it");
    fx.finish();
}
