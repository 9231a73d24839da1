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
/// any depth in it, or its mount point). For a path in a bind mount of a
/// directory inside an fslab file system, the mount point of the file
/// system's own root, where one is visible: the daemon takes a request for
/// a checkpoint at its root directory only.
pub(crate) fn fslab_root(path: &Path) -> Result<PathBuf, String> {
    let canonical = canonical(path)?;
    fslab_root_in(&read_table(), &canonical, path)
}

/// [`fslab_root`] of `canonical` in the mount table `entries` (`path` as
/// the user gave it, for messages).
fn fslab_root_in(entries: &[MountEntry], canonical: &Path, path: &Path) -> Result<PathBuf, String> {
    let containing = canonical.ancestors().find_map(|dir| mountinfo::topmost(entries, dir));
    let mount = match containing {
        Some(mount) if fslab_fuse::is_fslab_mount(&mount.kind, &mount.source) => mount,
        _ => return Err(format!("{} is not an fslab mount, nor inside one", path.display())),
    };
    if mount.root == Path::new("/") {
        return Ok(mount.point.clone());
    }
    let whole = entries.iter().find(|e| {
        e.device == mount.device
            && e.root == Path::new("/")
            && mountinfo::topmost(entries, &e.point).is_some_and(|top| top.id == e.id)
    });
    whole.map(|e| e.point.clone()).ok_or_else(|| {
        format!(
            "{} is in a bind mount of {} inside an fslab file system, whose root is mounted nowhere \
             here; name a path in a mount of its root",
            path.display(),
            mount.root.display()
        )
    })
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
    fn a_bind_mount_of_a_directory_inside_fslab_leads_to_the_mount_of_its_root() {
        let table = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
42 22 0:39 / /mnt/fs rw,nosuid,nodev - fuse.fslab /img rw,user_id=0
50 22 0:39 /data /srv/data rw,nosuid,nodev - fuse.fslab /img rw,user_id=0
51 22 0:41 /sub /srv/alone rw,nosuid,nodev - fuse.fslab /other rw,user_id=0
";
        let entries = mountinfo::parse(table);
        let root = |p: &str| fslab_root_in(&entries, Path::new(p), Path::new(p));
        assert_eq!(root("/mnt/fs/a/b").as_deref(), Ok(Path::new("/mnt/fs")));
        assert_eq!(root("/srv/data/file").as_deref(), Ok(Path::new("/mnt/fs")));
        let alone = root("/srv/alone/x").expect_err("no mount of that file system's root");
        assert!(alone.contains("bind mount of /sub"), "{alone}");
        assert!(root("/home").is_err());
    }

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
