//! `fslab stat` and `fslab clean` on a mount of every layout: `stat`
//! reports the layout, space, inodes, device work and directory hashes of
//! any mount, and its figures move with what users do; `clean` cleans an
//! LFS mount, and on an FFS mount fails at once with one line saying FFS
//! has no cleaner (an FFS mount once had no control socket at all, so both
//! commands said it was no fslab mount).

mod common;

use common::{fslab_run, mkfs_layout, Layout, Mode, Mount, Run};
use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

/// Files in the large directory: well past `dirhash_minsize` (2.5 KiB of
/// entries), so lookups in it build a hash.
const FILES: u64 = 400;

/// The first number on the line of `text` that starts with `label`.
fn figure(text: &str, label: &str) -> u64 {
    let line =
        text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label} in:\n{text}"));
    line[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no figure on: {line}"))
}

fn fslab(args: &[&OsStr]) -> Run {
    fslab_run(args, T)
}

fn stat(dir: &Path) -> String {
    let r = fslab(&[OsStr::new("stat"), dir.as_os_str()]);
    assert!(r.success(), "fslab stat: {}", r.describe());
    r.stdout
}

fn stat_and_clean_on(layout: Layout) {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("fs.img");
    let dir = tmp.path().join("mnt");
    mkfs_layout(&image, "64M", layout, &[]);
    let m = Mount::new(&image, &dir, Mode::Background, layout.mount_args());

    let before = stat(&m.dir);
    // The hashes' budget follows the default cache (256 MiB): a 32nd.
    assert!(before.contains("\ndirhash                   on: 8 MiB budget, "), "{before}");
    let layout_line = before.lines().find(|l| l.starts_with("layout")).unwrap_or_default();
    match layout {
        Layout::Lfs => {
            assert_eq!(layout_line, "layout                    LFS", "{before}");
            assert!(before.contains("cleaner policy"), "{before}");
        }
        Layout::FfsSync | Layout::FfsAsync | Layout::FfsSoftdep | Layout::FfsJournal => {
            let mode = match layout {
                Layout::FfsSync => "sync",
                Layout::FfsAsync => "async",
                Layout::FfsJournal => "journal",
                _ => "softdep",
            };
            assert!(layout_line.starts_with(&format!("layout                    FFS, integrity={mode}, ")));
            let journal_line =
                before.lines().any(|l| l.starts_with("journal ") && l.contains("transactions"));
            assert_eq!(
                journal_line,
                layout == Layout::FfsJournal,
                "a journal line on a journal mount:\n{before}"
            );
            assert!(!before.contains("cleaner policy"), "no cleaner on FFS:\n{before}");
        }
    }

    // A large directory, every name looked up (creating a name looks it
    // up first), then made durable.
    let big = m.dir.join("big");
    fs::create_dir(&big).expect("mkdir");
    for i in 0..FILES {
        fs::write(big.join(format!("a-file-with-a-long-name-{i:05}")), b"x").expect("create");
    }
    let r = fslab(&[OsStr::new("sync"), m.dir.as_os_str()]);
    assert!(r.success(), "fslab sync: {}", r.describe());

    let after = stat(&m.dir);
    eprintln!("{after}");
    // Any path inside the mount names it, and the report names its root.
    let inside = stat(&big.join("a-file-with-a-long-name-00001"));
    let root_line = format!("mount                     {}\n", m.dir.display());
    assert!(after.contains(&root_line) && inside.contains(&root_line), "{root_line}{after}\n{inside}");
    assert_eq!(figure(&inside, "inodes"), figure(&after, "inodes"), "{after}\n{inside}");
    assert!(figure(&after, "hashes built") > figure(&before, "hashes built"), "{before}\n{after}");
    assert!(figure(&after, "lookups") > figure(&before, "lookups"), "{before}\n{after}");
    // The directory and its files (LFS counts the inodes its free space
    // could still hold, which the files' blocks take from too).
    let inodes_used = figure(&before, "inodes").saturating_sub(figure(&after, "inodes"));
    assert!(inodes_used > FILES, "{before}\n{after}");
    assert!(figure(&after, "device writes") > figure(&before, "device writes"), "{before}\n{after}");
    // The daemon's memory, and the inodes it holds among its structures.
    let memory = after.lines().find(|l| l.starts_with("memory ")).unwrap_or_else(|| panic!("{after}"));
    assert!(memory.contains(" resident, ") && memory.ends_with("in the structures below"), "{memory}");
    let inode_cache = after
        .lines()
        .find(|l| l.trim_start().starts_with("inode cache"))
        .unwrap_or_else(|| panic!("{after}"));
    let held: u64 = inode_cache
        .split_whitespace()
        .rev()
        .nth(1)
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or(0);
    assert!(held > FILES, "{inode_cache}");
    // The lock: every create held it exclusively, and the report names
    // what held it longest.
    let exclusive = |text: &str| figure(text, "lock: exclusive calls");
    assert!(exclusive(&after) > exclusive(&before) + FILES, "{before}\n{after}");
    let longest =
        after.lines().find(|l| l.starts_with("lock: longest hold")).unwrap_or_else(|| panic!("{after}"));
    assert!(longest.contains(", by "), "{longest}");
    assert!(
        after.lines().any(|l| l.starts_with("lock: held exclusively") && l.contains("% of the ")),
        "{after}"
    );

    let clean = fslab(&[OsStr::new("clean"), m.dir.as_os_str(), OsStr::new("--passes"), OsStr::new("1")]);
    if layout.is_lfs() {
        assert!(clean.success(), "fslab clean on LFS: {}", clean.describe());
        assert!(clean.stdout.contains("pass 1:"), "{}", clean.describe());
    } else {
        assert_eq!(clean.status.and_then(|s| s.code()), Some(1), "{}", clean.describe());
        let want = format!("fslab: clean: {}: FFS has no cleaner (this is an FFS mount)\n", m.dir.display());
        assert_eq!(clean.stderr, want, "{}", clean.describe());
        assert!(clean.stdout.is_empty(), "{}", clean.describe());
        // The mount serves on.
        assert_eq!(figure(&stat(&m.dir), "inodes"), figure(&after, "inodes"));
    }
    m.unmount().expect("clean unmount");
}

on_every_layout!(stat_and_clean_on);
