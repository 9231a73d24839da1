//! Output that cannot be written (standard output on `/dev/full`, a full
//! disk) ends a command with its own documented status and one line saying
//! so, never a panic (Rust's `println!` panics, status 101).

mod common;

use common::{fslab, has_panic, mkfs, run_sh, Mode, Mount};
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

/// Runs `fslab ARGS` by the shell with standard output on /dev/full and
/// returns its status and standard error.
fn to_full(dir: &std::path::Path, args: &str) -> (Option<i32>, String) {
    let r = run_sh(&format!("'{}' {args} > /dev/full", fslab()), dir, T);
    assert!(!r.timed_out, "fslab {args}: {}", r.describe());
    (r.status.and_then(|s| s.code()), r.stderr)
}

#[test]
fn every_command_ends_with_its_status_when_stdout_is_full() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("fs.img");
    mkfs(&image, "64M", &[]);
    let image = image.display().to_string();
    // Each command, and the status it documents for a failure.
    let mut cases = vec![
        (format!("fsck '{image}'"), 8),
        (format!("fsck -v '{image}'"), 8),
        (format!("dump '{image}'"), 1),
        (format!("mkfs '{}' --size 64M", tmp.path().join("new.img").display()), 1),
        ("bench list".to_string(), 1),
    ];
    let mounted = tmp.path().join("mounted.img");
    mkfs(&mounted, "64M", &[]);
    let mount =
        common::fuse_or_skip().then(|| Mount::new(&mounted, &tmp.path().join("mnt"), Mode::Foreground, &[]));
    if let Some(m) = &mount {
        let dir = m.dir.display();
        cases.push((format!("stat '{dir}'"), 1));
        cases.push((format!("clean '{dir}' --passes 1"), 1));
    }
    for (args, want) in &cases {
        let (status, stderr) = to_full(tmp.path(), args);
        assert!(!has_panic(&stderr), "fslab {args} panicked: {stderr}");
        assert_eq!(status, Some(*want), "fslab {args}: {stderr}");
        assert!(stderr.contains("cannot write to standard output"), "fslab {args}: {stderr}");
    }
    if let Some(m) = mount {
        m.unmount().expect("clean unmount");
    }
    // Standard error full as well: the status still says what happened.
    let r = run_sh(&format!("'{}' fsck '{image}' > /dev/full 2>&1", fslab()), tmp.path(), T);
    assert_eq!(r.status.and_then(|s| s.code()), Some(8), "{}", r.describe());
    let r = run_sh(&format!("'{}' dump missing.img 2> /dev/full", fslab()), tmp.path(), T);
    assert_eq!(r.status.and_then(|s| s.code()), Some(1), "{}", r.describe());
}
