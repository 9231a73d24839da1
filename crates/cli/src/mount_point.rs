//! From a path a user names to the fslab mount it is in: `fslab stat`,
//! `sync` and `clean` accept any path inside a mount, and every command
//! that takes a directory says plainly when it is a dead mount (its server
//! killed: every system call on it fails with ENOTCONN) and how to
//! remove it.

use fslab_fuse::mountinfo::{self, MountEntry};
use std::path::{Path, PathBuf};

/// `path` made canonical, or a message a user can act on: for a dead
/// mount, what it is and the command that removes it.
pub(crate) fn canonical(path: &Path) -> Result<PathBuf, String> {
    // The kernel may still answer `stat` from attributes it cached, so a
    // dead mount can resolve; `statfs` always asks the server.
    match path.canonicalize().and_then(|canonical| statfs(&canonical).map(|()| canonical)) {
        Ok(canonical) => Ok(canonical),
        // ENOTCONN once the server is gone; ECONNABORTED for a request
        // that was under way when it went.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)) => {
            Err(dead_mount(path, &read_table()))
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// `statfs(2)` of `path`, for its error alone.
fn statfs(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path holds a NUL byte"))?;
    rustix::fs::statfs(name.as_c_str()).map(drop).map_err(Into::into)
}

/// The root of the fslab mount that holds `path` (a file or directory at
/// any depth in it, or its mount point).
pub(crate) fn fslab_root(path: &Path) -> Result<PathBuf, String> {
    let canonical = canonical(path)?;
    let entries = read_table();
    let containing = canonical.ancestors().find_map(|dir| mountinfo::topmost(&entries, dir));
    match containing {
        Some(mount) if fslab_fuse::is_fslab_mount(&mount.kind, &mount.source) => Ok(mount.point.clone()),
        _ => Err(format!("{} is not an fslab mount, nor inside one", path.display())),
    }
}

fn read_table() -> Vec<MountEntry> {
    mountinfo::read().unwrap_or_default()
}

/// What to tell a user whose `path` failed with ENOTCONN (or ECONNABORTED): the dead mount
/// it is (or is inside), its kind, and the command that removes it.
fn dead_mount(path: &Path, entries: &[MountEntry]) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let dead = absolute.ancestors().find_map(|dir| mountinfo::topmost(entries, dir));
    let Some(mount) = dead else {
        return format!("{}: the file system's server is gone (ENOTCONN)", path.display());
    };
    let kind = if fslab_fuse::is_fslab_mount(&mount.kind, &mount.source) { "fslab" } else { "FUSE" };
    let point = mount.point.display();
    let what = if mount.point == absolute {
        format!("{} is a dead {kind} mount", path.display())
    } else {
        format!("{} is inside {point}, a dead {kind} mount", path.display())
    };
    format!("{what} (its server is gone); run `fusermount3 -u {point}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
42 22 0:39 / /mnt/dead rw,nosuid,nodev - fuse.fslab /img rw,user_id=0
43 22 0:40 / /mnt/other rw,nosuid,nodev - fuse.sshfs host: rw,user_id=0
";

    #[test]
    fn a_dead_mount_is_named_with_the_command_that_removes_it() {
        let entries = mountinfo::parse(TABLE);
        assert_eq!(
            dead_mount(Path::new("/mnt/dead"), &entries),
            "/mnt/dead is a dead fslab mount (its server is gone); run `fusermount3 -u /mnt/dead`"
        );
        assert_eq!(
            dead_mount(Path::new("/mnt/dead/a/b"), &entries),
            "/mnt/dead/a/b is inside /mnt/dead, a dead fslab mount (its server is gone); \
             run `fusermount3 -u /mnt/dead`"
        );
        assert!(dead_mount(Path::new("/mnt/other"), &entries).starts_with("/mnt/other is a dead FUSE mount"));
    }
}
