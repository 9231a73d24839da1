//! `fslab sync DIR`: makes everything written to a mounted fslab durable
//! now, with a checkpoint. Linux does not pass `sync(2)` or `syncfs(2)` on
//! to a FUSE file system, so `sync` alone leaves fslab's buffer cache as it
//! was; this command asks for the checkpoint through the one request that
//! does reach the daemon, an fsync of the mount's root directory.

use clap::Args;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Arguments of `fslab sync`.
#[derive(Args)]
pub struct SyncArgs {
    /// The directory an fslab file system is mounted on.
    dir: PathBuf,
}

/// Writes the checkpoint; returns once it is on the disk.
pub fn run(args: &SyncArgs) -> Result<(), String> {
    let dir = args.dir.canonicalize().map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    if !is_fslab_mount_point(&mountinfo, &dir) {
        return Err(format!("{} is not the mount point of an fslab file system", args.dir.display()));
    }
    let root = File::open(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    root.sync_all().map_err(|e| format!("{}: checkpoint failed: {e}", dir.display()))
}

/// Whether `/proc/self/mountinfo` (its text) has an fslab mount on `dir`.
fn is_fslab_mount_point(mountinfo: &str, dir: &Path) -> bool {
    fslab_source(mountinfo, dir).is_some()
}

/// The source (the image) of the fslab mount on `dir` in a
/// `/proc/self/mountinfo` text (`fslab_fuse::is_fslab_mount`: type
/// `fuse.fslab`), if the last mount on `dir` — the one in effect — is
/// fslab's.
pub(crate) fn fslab_source(mountinfo: &str, dir: &Path) -> Option<String> {
    let entries = fslab_fuse::mountinfo::parse(mountinfo);
    let top = fslab_fuse::mountinfo::topmost(&entries, dir)?;
    fslab_fuse::is_fslab_mount(&top.kind, &top.source).then(|| top.source.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 0:21 / /proc rw,nosuid - proc proc rw
41 22 0:40 / /mnt/a\\040b rw,nosuid,nodev - fuse.lfs fslab rw,user_id=0,group_id=0
42 22 0:41 / /mnt/other rw - fuse.fuse2fs /dev/loop0 rw
43 22 0:42 / /mnt/over rw - fuse.lfs fslab rw
44 43 0:43 / /mnt/over rw - ext4 /dev/loop1 rw
45 22 0:44 / /mnt/plain rw,nosuid,nodev - fuse fslab rw,user_id=0
46 22 0:45 / /mnt/named rw - ext4 fslab rw
47 22 0:46 / /mnt/image rw - fuse.fslab /var/tmp/fs.img rw
";

    #[test]
    fn only_fslab_mount_points_are_accepted() {
        assert!(is_fslab_mount_point(MOUNTINFO, Path::new("/mnt/a b")), "escaped space");
        assert!(!is_fslab_mount_point(MOUNTINFO, Path::new("/mnt/other")), "another FUSE file system");
        assert!(!is_fslab_mount_point(MOUNTINFO, Path::new("/mnt")), "not a mount point");
        assert!(!is_fslab_mount_point(MOUNTINFO, Path::new("/mnt/over")), "fslab mounted over");
        assert!(is_fslab_mount_point(MOUNTINFO, Path::new("/mnt/plain")), "type fuse without the subtype");
        assert!(!is_fslab_mount_point(MOUNTINFO, Path::new("/mnt/named")), "not FUSE, whatever its source");
        assert!(is_fslab_mount_point(MOUNTINFO, Path::new("/mnt/image")), "type fuse.fslab, an image's name");
    }

    #[test]
    fn the_source_of_the_last_fslab_mount_on_a_directory_is_found() {
        assert_eq!(fslab_source(MOUNTINFO, Path::new("/mnt/image")).as_deref(), Some("/var/tmp/fs.img"));
        let spaced = "41 22 0:40 / /mnt/a rw - fuse.fslab /var/img\\040one rw\n";
        assert_eq!(fslab_source(spaced, Path::new("/mnt/a")).as_deref(), Some("/var/img one"));
        assert_eq!(fslab_source(MOUNTINFO, Path::new("/mnt/over")), None, "mounted over");
        assert_eq!(fslab_source(MOUNTINFO, Path::new("/mnt/other")), None, "not fslab");
    }
}
