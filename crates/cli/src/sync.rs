//! `fslab sync DIR`: makes everything written to a mounted fslab durable
//! now, with a checkpoint. Linux does not pass `sync(2)` or `syncfs(2)` on
//! to a FUSE file system, so `sync` alone leaves fslab's buffer cache as it
//! was; this command asks for the checkpoint through the one request that
//! does reach the daemon, an fsync of the mount's root directory.

use clap::Args;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Examples in `fslab sync --help`.
pub const EXAMPLES: &str = "Examples:
  fslab sync /mnt                                 a checkpoint now; returns once it is on the disk
  cp big /mnt/ && fslab sync /mnt/big             any path inside the mount names it";

/// Arguments of `fslab sync`.
#[derive(Args)]
pub struct SyncArgs {
    /// The directory an fslab file system is mounted on, or any path inside it.
    dir: PathBuf,
}

/// Writes the checkpoint; returns once it is on the disk. `dir` may be any
/// path inside the mount: the checkpoint is asked of its root.
pub fn run(args: &SyncArgs) -> Result<(), String> {
    let root = crate::mount_point::fslab_root(&args.dir)?;
    let file = File::open(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    file.sync_all().map_err(|e| format!("{}: checkpoint failed: {e}", root.display()))
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
    fn the_source_of_the_last_fslab_mount_on_a_directory_is_found() {
        assert_eq!(fslab_source(MOUNTINFO, Path::new("/mnt/image")).as_deref(), Some("/var/tmp/fs.img"));
        let spaced = "41 22 0:40 / /mnt/a rw - fuse.fslab /var/img\\040one rw\n";
        assert_eq!(fslab_source(spaced, Path::new("/mnt/a")).as_deref(), Some("/var/img one"));
        assert_eq!(fslab_source(MOUNTINFO, Path::new("/mnt/over")), None, "mounted over");
        assert_eq!(fslab_source(MOUNTINFO, Path::new("/mnt/other")), None, "not fslab");
    }
}
