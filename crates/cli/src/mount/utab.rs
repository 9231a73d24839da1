//! The mount's line in util-linux's table of userspace mount options
//! (`/run/mount/utab`, or `$LIBMOUNT_UTAB`), which makes `umount DIR` run
//! `umount.fuse.fslab`.
//!
//! Why: for a mount with no line there, umount(8) learns the type with
//! `statfs`, which says only `fuse`, and looks for `umount.fuse`; so it
//! unmounts without our helper, and returns before the final checkpoint.
//! With a line naming `helper=fuse.fslab`, it reads the mount table and
//! runs the helper, which waits for the checkpoint (`helper`). mount(8)
//! writes such a line itself only when the user gives `-o helper=...`.
//!
//! The mount adds its line as root (the table is root's) once it is
//! mounted, and removes it (its own line, not a later mount's on the same
//! directory) after its final checkpoint; a line left by a killed daemon
//! is replaced by the next mount on the same directory. The line's source
//! is what the mount table shows, which libmount matches it by: the image,
//! or `fslab` for an image whose name FUSE cannot show.
//! Format and locking as libmount's: `SRC=… TARGET=… ROOT=/ OPTS=…`,
//! values with spaces, tabs, newlines and backslashes in octal; rewritten
//! whole through a temporary file and a rename, under a `flock` of
//! `utab.lock`.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The user option that sends `umount` to `umount.fuse.fslab`.
const HELPER_OPTION: &str = "helper=fuse.fslab";

/// Where libmount keeps the table.
fn table_path() -> PathBuf {
    std::env::var_os("LIBMOUNT_UTAB").map_or_else(|| PathBuf::from("/run/mount/utab"), PathBuf::from)
}

/// A value as libmount writes it: space, tab, newline and backslash as
/// octal escapes.
fn mangle(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            b' ' | b'\t' | b'\n' | b'\\' => out.push_str(&format!("\\{b:03o}")),
            _ => out.push_str(&String::from_utf8_lossy(&[b])),
        }
    }
    out
}

/// The line for a mount of `image` on `dir`.
fn line_for(image: &Path, dir: &Path) -> String {
    format!(
        "SRC={} TARGET={} ROOT=/ OPTS={HELPER_OPTION}",
        mangle(image.as_os_str().as_bytes()),
        mangle(dir.as_os_str().as_bytes())
    )
}

/// Whether `line` is an fslab line for the mount point `dir`.
fn is_ours_on(line: &str, dir: &Path) -> bool {
    let target = format!("TARGET={}", mangle(dir.as_os_str().as_bytes()));
    line.split(' ').any(|field| field == target)
        && line.split(' ').any(|f| f == format!("OPTS={HELPER_OPTION}"))
}

/// Adds the line for `image` on `dir` (replacing any earlier fslab line
/// for `dir`). Only root may; for anyone else, and wherever the table
/// cannot be written, nothing happens and `umount` simply does not wait.
pub(super) fn register(image: &Path, dir: &Path) {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let line = line_for(image, dir);
    let _ = rewrite(|lines| {
        lines.retain(|l| !is_ours_on(l, dir));
        lines.push(line.clone());
    });
}

/// Removes the line the mount of `source` on `dir` added, and only that
/// one: a daemon finishing after its unmount must leave the line of a
/// later mount on the same directory.
pub(super) fn unregister(source: &Path, dir: &Path) {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let line = line_for(source, dir);
    let _ = rewrite(|lines| lines.retain(|l| *l != line));
}

/// Rewrites the table with `change` applied to its lines, under its lock.
fn rewrite(change: impl FnOnce(&mut Vec<String>)) -> std::io::Result<()> {
    let path = table_path();
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(lock_name)?;
    // The lock ends when `lock` closes.
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)?;
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let mut lines: Vec<String> = old.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    let before = lines.clone();
    change(&mut lines);
    if lines == before {
        return Ok(());
    }
    let temporary = path.with_extension(format!("fslab{}", std::process::id()));
    let mut file = std::fs::File::create(&temporary)?;
    for line in &lines {
        writeln!(file, "{line}")?;
    }
    file.sync_all()?;
    std::fs::rename(&temporary, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_as_libmount_writes_them() {
        assert_eq!(
            line_for(Path::new("/var/img one"), Path::new("/mnt/a\\b")),
            "SRC=/var/img\\040one TARGET=/mnt/a\\134b ROOT=/ OPTS=helper=fuse.fslab"
        );
        let line = line_for(Path::new("/img"), Path::new("/mnt"));
        assert!(is_ours_on(&line, Path::new("/mnt")));
        assert!(!is_ours_on(&line, Path::new("/mn")));
        assert!(!is_ours_on("SRC=/dev/sda TARGET=/mnt ROOT=/ OPTS=x-foo", Path::new("/mnt")));
    }
}
