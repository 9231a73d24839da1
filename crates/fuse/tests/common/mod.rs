//! What the crate's FUSE tests share: whether this machine can mount.

use std::path::Path;

/// Who may mount for a test.
#[allow(dead_code)]
pub enum Mounter {
    /// Only root, with mount(2) itself.
    RootOnly,
    /// Root, or another user through the setuid `fusermount3`.
    RootOrFusermount,
}

/// Whether this machine can mount FUSE file systems as `mounter` says;
/// says why not. Only a missing /dev/fuse, or a missing way for this user
/// to mount, skips a test: any other mount error fails it.
pub fn fuse_available(mounter: Mounter) -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let why = if !Path::new("/dev/fuse").exists() {
        Some("no /dev/fuse")
    } else if root {
        None
    } else {
        match mounter {
            Mounter::RootOnly => Some("mount(2) of /dev/fuse needs root"),
            Mounter::RootOrFusermount if !on_path("fusermount3") => {
                Some("no fusermount3 (needed to mount as a user other than root)")
            }
            Mounter::RootOrFusermount => None,
        }
    };
    if let Some(why) = why {
        println!("skipped: {why}");
        eprintln!("skipped: {why}");
    }
    why.is_none()
}

fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}
