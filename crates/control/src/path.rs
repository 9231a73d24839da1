//! Where a mount's control socket lives: a name derived from the canonical
//! mount point alone, so a client finds it knowing only the directory, in a
//! directory private to the user who mounted.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The directory a root mount puts its socket in.
const RUN_DIR: &str = "/run/fslab";

/// FNV-1a, 64 bits: a hash whose value never changes between builds or
/// Rust versions (unlike `DefaultHasher`), so a client built later finds
/// the socket a daemon built earlier made.
pub(super) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The socket file's name for a canonical mount point: 16 hex digits of
/// the FNV-1a hash of its bytes.
pub fn socket_file_name(canonical_mountpoint: &Path) -> String {
    format!("{:016x}.sock", fnv1a64(canonical_mountpoint.as_os_str().as_bytes()))
}

/// Where the socket of `canonical_mountpoint` may be, in the order a
/// server tries to create it: `/run/fslab/`, then
/// `$TMPDIR/fslab-<uid>/` when /run is not writable (a user's mount).
pub fn socket_path_candidates(canonical_mountpoint: &Path) -> Vec<PathBuf> {
    // SAFETY: geteuid has no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let name = socket_file_name(canonical_mountpoint);
    vec![Path::new(RUN_DIR).join(&name), std::env::temp_dir().join(format!("fslab-{uid}")).join(&name)]
}

/// The socket serving the mount on `mountpoint`, if one exists. A socket
/// in a directory we may not enter counts as found, so that connecting
/// says "permission denied" rather than "not a mount" (another user's, or
/// root's, mount).
pub fn find_socket(mountpoint: &Path) -> io::Result<Option<PathBuf>> {
    let canonical = mountpoint.canonicalize()?;
    let candidates = socket_path_candidates(&canonical);
    let seen = |p: &PathBuf| std::fs::symlink_metadata(p).map(|_| ()).map_err(|e| e.kind());
    if let Some(found) = candidates.iter().find(|p| seen(p).is_ok()) {
        return Ok(Some(found.clone()));
    }
    Ok(candidates.into_iter().find(|p| seen(p) == Err(io::ErrorKind::PermissionDenied)))
}

/// Makes `dir` (mode 0700, ours) or checks that an existing one is ours and
/// private: in a shared /tmp another user could have made it first to
/// catch our socket.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid {
        let why = format!("{} is not a directory of user {uid}", dir.display());
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}
