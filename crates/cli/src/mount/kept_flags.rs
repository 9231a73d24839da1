//! The options mount(8) keeps from its helper: `dev`, `suid` and `exec`
//! are the kernel's defaults (the absence of `MS_NODEV`, `MS_NOSUID`,
//! `MS_NOEXEC`), so libmount turns them into flags and passes the helper
//! only the options that are not flags. A FUSE mount's defaults are the
//! opposite (`nodev`, `nosuid`), so `mount -t fslab IMG DIR -o dev,suid`
//! would silently mount `nodev,nosuid`.
//!
//! Like mount.fuse, the helper reads them back from where the user wrote
//! them: the command line of the mount(8) that ran it (its parent), and
//! the fstab line of this mount (`/etc/fstab`, or the file given to
//! mount(8) with `-T`). Only those words are taken from there, in the
//! order they were written (fstab first, then the command line, as
//! mount(8) merges them); the options the helper was given follow, so an
//! explicit `nodev` that mount(8) passed on still wins.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The words this module recovers, positive and negative.
const KEPT: [&str; 6] = ["dev", "nodev", "suid", "nosuid", "exec", "noexec"];

/// The `dev`/`suid`/`exec` words (and their negations) the user gave for
/// the mount of `image` on `dir`, as one option string (empty if none),
/// read from the parent mount(8) and the fstab it used.
pub(super) fn recover(image: &Path, dir: &Path) -> String {
    let parent = parent_mount_args().unwrap_or_default();
    let fstab = fstab_path(&parent);
    let mut words: Vec<String> = std::fs::read_to_string(fstab)
        .map(|text| fstab_options(&text, image, dir))
        .unwrap_or_default()
        .into_iter()
        .flat_map(|options| kept_words(&options))
        .collect();
    words.extend(command_line_options(&parent).iter().flat_map(|options| kept_words(options)));
    words.join(",")
}

/// The words of an option string that mount(8) would have kept.
fn kept_words(options: &str) -> Vec<String> {
    options.split(',').filter(|w| KEPT.contains(w)).map(str::to_string).collect()
}

/// The arguments of the parent process, if it is mount(8).
fn parent_mount_args() -> Option<Vec<String>> {
    // No parent in this PID namespace: then it is not mount(8) either.
    let parent = rustix::process::getppid()?.as_raw_nonzero();
    let raw = std::fs::read(format!("/proc/{parent}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let program = Path::new(args.first()?).file_name()?.to_str()?;
    (program == "mount").then_some(args)
}

/// The option strings on a mount(8) command line: `-o X`, `-oX`,
/// `--options X`, `--options=X`.
fn command_line_options(args: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        if word == "-o" || word == "--options" {
            found.extend(words.next().cloned());
        } else if let Some(value) = word.strip_prefix("--options=") {
            found.push(value.to_string());
        } else if let Some(value) =
            word.strip_prefix("-o").filter(|v| !v.is_empty() && !word.starts_with("--"))
        {
            found.push(value.to_string());
        }
    }
    found
}

/// The fstab mount(8) read: the one named by `-T`/`--fstab`, or `/etc/fstab`.
fn fstab_path(args: &[String]) -> PathBuf {
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        if word == "-T" || word == "--fstab" {
            if let Some(path) = words.next() {
                return PathBuf::from(path);
            }
        } else if let Some(path) = word.strip_prefix("--fstab=") {
            return PathBuf::from(path);
        }
    }
    PathBuf::from("/etc/fstab")
}

/// The options of the fstab lines that mount `image` on `dir` (both
/// compared as canonical paths; fstab's octal escapes undone).
fn fstab_options(text: &str, image: &Path, dir: &Path) -> Vec<String> {
    let same = |written: &str, wanted: &Path| {
        let path = PathBuf::from(OsString::from(unescape(written)));
        path.canonicalize().unwrap_or(path) == wanted.canonicalize().unwrap_or_else(|_| wanted.to_path_buf())
    };
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (spec, file, options) = (fields.first()?, fields.get(1)?, fields.get(3)?);
            (same(spec, image) && same(file, dir)).then(|| options.to_string())
        })
        .collect()
}

/// An fstab field with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    String::from_utf8_lossy(&fslab_fuse::mountinfo::unescape(field)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn options_are_found_in_every_form_mount_takes() {
        let args = strings(&[
            "mount",
            "-t",
            "fslab",
            "-o",
            "dev",
            "/i",
            "/d",
            "-osuid",
            "--options=x",
            "--options",
            "y",
        ]);
        assert_eq!(command_line_options(&args), ["dev", "suid", "x", "y"]);
        assert_eq!(fstab_path(&strings(&["mount", "-T", "/etc/other", "/d"])), Path::new("/etc/other"));
        assert_eq!(fstab_path(&strings(&["mount", "/d"])), Path::new("/etc/fstab"));
    }

    #[test]
    fn only_the_flags_mount_keeps_are_taken_in_order() {
        assert_eq!(kept_words("rw,dev,cleaner=greedy,nosuid,suid,x-y"), ["dev", "nosuid", "suid"]);
    }

    #[test]
    fn the_fstab_line_of_this_mount_is_found() {
        let text = "# comment\n/img /mnt fslab dev,suid 0 0\n/other /mnt fslab nodev 0 0\n/a\\040b /m fslab exec 0 0\n";
        assert_eq!(fstab_options(text, Path::new("/img"), Path::new("/mnt")), ["dev,suid"]);
        assert_eq!(fstab_options(text, Path::new("/a b"), Path::new("/m")), ["exec"]);
        assert!(fstab_options(text, Path::new("/img"), Path::new("/elsewhere")).is_empty());
    }
}
