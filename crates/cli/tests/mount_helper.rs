//! fslab installed and used as any Linux file system is: `scripts/install`,
//! then `mount -t fslab`, an fstab line with `mount DIR`, and `umount DIR`,
//! driven through the real mount(8) and umount(8).
//!
//! Each test runs a shell script in a private mount namespace (`unshare
//! --mount`), where a tmpfs over /sbin takes the helpers (the machine's own
//! /sbin is never touched), a tmpfs over /var/log takes the log files,
//! `/dev/log` is hidden (no system log, as on a minimal container) and
//! `$LIBMOUNT_UTAB` points into the test's directory. Needs root,
//! /dev/fuse, unshare and flock; elsewhere the tests print "skipped".

mod common;

use common::{have, mkfs, run_cmd, Run};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Whether these tests can run here; says why not.
fn can_run() -> bool {
    let why = if !rustix::process::geteuid().is_root() {
        Some("needs root (mount namespaces, /sbin helpers)")
    } else if !Path::new("/dev/fuse").exists() {
        Some("no /dev/fuse")
    } else if !["unshare", "mount", "umount", "flock"].iter().all(|p| have(p)) {
        Some("needs unshare, mount, umount and flock (util-linux)")
    } else {
        None
    };
    if let Some(why) = why {
        println!("skipped: {why}");
    }
    why.is_none()
}

/// Runs `script` with `sh -eu` in a private mount namespace prepared as
/// the module says, with $FSLAB (the binary under test), $T (a fresh
/// directory), $IMG (an image made there) and $DIR (a mount point).
fn in_namespace(tmp: &Path, script: &str) -> Run {
    let prologue = r#"
        trap 'umount -l "$DIR" 2>/dev/null || true' EXIT
        mount -t tmpfs helpers "$(readlink -f /sbin)"
        mount -t tmpfs logs /var/log
        if [ -e /dev/log ]; then mount --bind /dev/null /dev/log; fi
        "$REPO/scripts/install" --prefix "$T/prefix" --sbin /sbin --binary "$FSLAB" >/dev/null
    "#;
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-euc"])
        .arg(format!("{prologue}\n{script}"))
        .env("FSLAB", common::fslab())
        .env("REPO", Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .env("T", tmp)
        .env("IMG", tmp.join("fs.img"))
        .env("DIR", tmp.join("mnt"))
        .env("LIBMOUNT_UTAB", tmp.join("utab"));
    run_cmd(cmd, Duration::from_secs(120))
}

/// A directory with an empty image `fs.img` and a mount point `mnt`, or
/// `None` (and a message) where these tests cannot run.
fn fresh() -> Option<tempfile::TempDir> {
    if !can_run() {
        return None;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    mkfs(&tmp.path().join("fs.img"), "64M", &[]);
    std::fs::create_dir_all(tmp.path().join("mnt")).expect("mkdir");
    Some(tmp)
}

/// Regression: `mount -t fuse.fslab` found nothing named fslab on the
/// PATH, and `umount DIR` returned before the daemon's final checkpoint.
#[test]
fn mount_t_fslab_and_umount_work_like_any_file_system() {
    let Some(tmp) = fresh() else { return };
    let r = in_namespace(
        tmp.path(),
        r#"
        mount -t fslab "$IMG" "$DIR" -o cleaner=greedy,noatime,nofail,_netdev,x-systemd.automount,nodev
        grep " $DIR " /proc/self/mountinfo | sed 's/.* - /entry: /'
        echo hello > "$DIR/file"
        dd if=/dev/urandom of="$DIR/big" bs=1M count=8 2>/dev/null
        "$T/prefix/bin/fslab" stat "$DIR" | grep policy
        umount "$DIR"
        # umount returned: the final checkpoint is written and the image free.
        if flock -n "$IMG" true; then echo "free at once"; fi
        if grep -q "$DIR" "$LIBMOUNT_UTAB" 2>/dev/null; then echo "utab line left"; fi
        mount -t fuse.fslab "$IMG" "$DIR"
        echo "read back: $(cat "$DIR/file")"
        umount "$DIR"
        if flock -n "$IMG" true; then echo "free again"; fi
        "#,
    );
    assert!(r.success(), "{}", r.describe());
    let out = &r.stdout;
    let image = tmp.path().join("fs.img");
    assert!(out.contains(&format!("entry: fuse.fslab {} rw", image.display())), "mount table: {out}");
    assert!(out.contains("cleaner policy            greedy"), "{out}");
    assert!(out.contains("free at once\n"), "umount returned before the final checkpoint: {}", r.describe());
    assert!(!out.contains("utab line left"), "{out}");
    assert!(out.contains("read back: hello") && out.contains("free again"), "{out}");
}

#[test]
fn an_fstab_line_mounts_with_mount_dir_ro_mounts_read_only_and_what_fslab_cannot_do_is_refused() {
    let Some(tmp) = fresh() else { return };
    let r = in_namespace(
        tmp.path(),
        r#"
        printf '%s %s fslab defaults,cleaner=greedy 0 0\n' "$IMG" "$DIR" > "$T/fstab"
        mount -T "$T/fstab" "$DIR"
        "$T/prefix/bin/fslab" stat "$DIR" | grep policy
        echo fstab > "$DIR/file"
        umount "$DIR"
        mount -t fslab "$IMG" "$DIR" -o ro
        grep " $DIR " /proc/self/mountinfo | sed 's/.* - /read-only entry: /'
        echo "read only: $(cat "$DIR/file")"
        if ! echo more > "$DIR/file" 2>/dev/null; then echo "write refused"; fi
        umount "$DIR"
        for option in sync dirsync; do
            status=0
            mount -t fslab "$IMG" "$DIR" -o "$option" 2>"$T/err" || status=$?
            echo "$option: status $status: $(cat "$T/err")"
            if [ "$status" = 0 ]; then umount "$DIR"; fi
        done
        mount -T "$T/fstab" "$DIR"
        echo "read back: $(cat "$DIR/file")"
        umount "$DIR"
        "#,
    );
    assert!(r.success(), "{}", r.describe());
    let out = &r.stdout;
    assert!(out.contains("cleaner policy            greedy"), "{out}");
    let image = tmp.path().join("fs.img");
    assert!(out.contains(&format!("read-only entry: fuse.fslab {} ro", image.display())), "{out}");
    assert!(out.contains("read only: fstab\nwrite refused\n"), "{out}");
    assert!(out.contains("sync: status 32: fslab: mount: option sync: fslab writes asynchronously"), "{out}");
    assert!(
        out.contains("dirsync: status 32: fslab: mount: option dirsync: fslab writes directory"),
        "{out}"
    );
    assert!(out.contains("read back: fstab"), "{out}");
}

/// Writes a file with an indirect block into the unmounted `image` and
/// damages that block; returns the file's inode and the block's address.
fn damaged_image(image: &Path) -> (u64, u64) {
    use fslab::format::inode::kind;
    use fslab::format::ROOT_INO;
    use fslab::lfs::{Lfs, MountOptions};
    use std::os::unix::fs::FileExt;
    let disk = disk::FileDisk::open(image).expect("open image");
    let lfs = Lfs::mount(std::sync::Arc::new(disk), MountOptions::default()).expect("mount");
    let mut fs = fslab::ufs::FileSystem::new(lfs);
    let creds = fslab::ufs::Creds { uid: 0, gid: 0 };
    let ino = fs.mknod(ROOT_INO, b"big", kind::REG | 0o644, 0, creds).expect("create").ino;
    fs.write(ino, 0, &vec![9u8; 64 * 4096]).expect("write");
    fs.unmount().expect("unmount");
    let disk = disk::FileDisk::open(image).expect("open image");
    let mut fs = fslab::ufs::FileSystem::new(
        Lfs::mount(std::sync::Arc::new(disk), MountOptions::default()).expect("mount"),
    );
    let daddr = fs.getattr(ino).expect("inode").indirect[0];
    let block_size = u64::from(fs.block_size());
    fs.unmount().expect("unmount");
    let f = std::fs::OpenOptions::new().write(true).open(image).expect("open");
    f.write_all_at(&[0x5A; 32], daddr.byte_offset(block_size) + 64).expect("damage");
    (ino, daddr.get())
}

/// Regression: a background mount on a machine without a system log lost
/// everything it had to say (syslog(3) drops what it cannot deliver).
#[test]
fn a_mount_without_a_system_log_names_its_log_file_and_writes_there() {
    let Some(tmp) = fresh() else { return };
    let (ino, daddr) = damaged_image(&tmp.path().join("fs.img"));
    let r = in_namespace(
        tmp.path(),
        r#"
        mount -t fslab "$IMG" "$DIR" 2>"$T/notice"
        echo "notice: $(cat "$T/notice")"
        if cat "$DIR/big" >/dev/null 2>&1; then echo "read succeeded"; fi
        umount "$DIR"
        log=$(sed -n 's/.*messages go to \(.*\)$/\1/p' "$T/notice")
        echo "log file: $log"
        sed 's/^/logged: /' "$log"
        "#,
    );
    assert!(r.success(), "{}", r.describe());
    let out = &r.stdout;
    let name = format!(
        "{}.log",
        tmp.path().join("mnt").display().to_string().trim_start_matches('/').replace('/', "-")
    );
    let expected = format!("log file: /var/log/fslab/{name}");
    assert!(
        out.contains(&format!(
            "notice: fslab: mount: no system log here; this mount's messages go to /var/log/fslab/{name}"
        )),
        "{out}"
    );
    assert!(out.contains(&expected), "{out}");
    assert!(!out.contains("read succeeded"), "{out}");
    let wanted = format!("]: read of inode {ino}: corrupt indirect block at block {daddr}: ");
    assert!(out.lines().any(|l| l.starts_with("logged: ") && l.contains(&wanted)), "{wanted} not in:\n{out}");
}

/// `umount DIR` returns once the image is free however it was mounted: an
/// image whose name FUSE cannot show (a comma), and a mount made while an
/// earlier daemon on the same directory was still finishing (which must
/// not take the later mount's utab line with it).
#[test]
fn umount_waits_for_the_image_however_it_was_mounted() {
    let Some(tmp) = fresh() else { return };
    let r = in_namespace(
        tmp.path(),
        r#"
        cp "$IMG" "$T/a,b.img"
        mount -t fslab "$T/a,b.img" "$DIR"
        dd if=/dev/urandom of="$DIR/big" bs=1M count=16 2>/dev/null
        umount "$DIR"
        if flock -n "$T/a,b.img" true; then echo "comma image free at once"; fi

        "$FSLAB" mkfs "$T/next.img" --size 64M >/dev/null
        mount -t fslab "$IMG" "$DIR"
        first=$(pgrep -f "mount.fslab $IMG")
        kill -STOP $first
        fusermount3 -u "$DIR"
        mount -t fslab "$T/next.img" "$DIR"
        kill -CONT $first
        flock "$IMG" true
        if grep -q "next.img" "$LIBMOUNT_UTAB"; then echo "next line kept"; fi
        dd if=/dev/urandom of="$DIR/big" bs=1M count=16 2>/dev/null
        umount "$DIR"
        if flock -n "$T/next.img" true; then echo "next image free at once"; fi
        "#,
    );
    assert!(r.success(), "{}", r.describe());
    let out = &r.stdout;
    assert!(out.contains("comma image free at once\n"), "{}", r.describe());
    assert!(out.contains("next line kept\n"), "{}", r.describe());
    assert!(out.contains("next image free at once\n"), "{}", r.describe());
}

/// mount(8) turns `dev` and `suid` into flags and does not pass them to
/// its helper: the helper reads them back from mount's command line and
/// from the fstab line, as `fslab mount -o dev,suid` has them.
#[test]
fn dev_and_suid_reach_the_mount_through_mount_8() {
    let Some(tmp) = fresh() else { return };
    let r = in_namespace(
        tmp.path(),
        r#"
        show() { echo "$1: $(grep " $DIR " /proc/self/mountinfo | cut -d' ' -f6)"; }
        mount -t fslab "$IMG" "$DIR" -o dev,suid
        show "command line"
        umount "$DIR"
        mount -t fslab -o suid "$IMG" "$DIR"
        show "suid only"
        umount "$DIR"
        printf '%s %s fslab dev,suid,cleaner=greedy 0 0\n' "$IMG" "$DIR" > "$T/fstab"
        mount -T "$T/fstab" "$DIR"
        show "fstab"
        umount "$DIR"
        mount -T "$T/fstab" "$DIR" -o nodev
        show "fstab, nodev given"
        umount "$DIR"
        "#,
    );
    assert!(r.success(), "{}", r.describe());
    let out = &r.stdout;
    let flags = |label: &str| {
        let line = out.lines().find(|l| l.starts_with(&format!("{label}: "))).unwrap_or_default();
        let options: Vec<&str> = line.split_once(": ").map_or("", |(_, o)| o).split(',').collect();
        (options.contains(&"nodev"), options.contains(&"nosuid"))
    };
    assert_eq!(flags("command line"), (false, false), "{out}");
    assert_eq!(flags("suid only"), (true, false), "{out}");
    assert_eq!(flags("fstab"), (false, false), "{out}");
    assert_eq!(flags("fstab, nodev given"), (true, false), "{out}");
}

/// The image on a host file system that fills while it is mounted: the
/// daemon's final checkpoint cannot be written, and `umount` says so with
/// mount(8)'s failure status instead of returning 0 over lost writes.
#[test]
fn umount_fails_when_the_final_checkpoint_cannot_be_written() {
    let Some(tmp) = fresh() else { return };
    let r = in_namespace(
        tmp.path(),
        r#"
        mkdir "$T/small"
        mount -t tmpfs -o size=24M small "$T/small"
        "$FSLAB" mkfs "$T/small/fs.img" --size 64M >/dev/null
        mount -t fslab "$T/small/fs.img" "$DIR" -o cleaner=off
        dd if=/dev/zero of="$T/small/fill" bs=1M 2>/dev/null || true
        dd if=/dev/urandom of="$DIR/late" bs=1M count=4 2>/dev/null || true
        status=0
        umount "$DIR" 2>"$T/err" || status=$?
        echo "umount status $status: $(cat "$T/err")"
        umount -l "$T/small"
        "#,
    );
    assert!(r.success(), "{}", r.describe());
    assert!(r.stdout.contains("umount status 32: "), "{}", r.describe());
    assert!(r.stdout.contains("end failed"), "{}", r.describe());
}

/// `umount DIR` of a file system also mounted elsewhere (here a bind mount
/// of one of its directories) returns, as a kernel file system's does: DIR
/// is unmounted, and the file system ends, with its final checkpoint, when
/// the other mount goes. Before, umount waited for the image for ever.
#[test]
fn umount_returns_while_a_bind_mount_keeps_the_file_system() {
    let Some(tmp) = fresh() else { return };
    let r = in_namespace(
        tmp.path(),
        r#"
        mkdir "$T/bound"
        # Once as the mount table shows it, once as the kernel's FUSE
        # connections do (where they can be mounted here).
        for round in table connections; do
            if [ $round = connections ]; then
                mount -t fusectl fusectl /sys/fs/fuse/connections 2>/dev/null || echo "no fusectl"
            fi
            mount -t fslab "$IMG" "$DIR"
            mkdir -p "$DIR/data"
            echo "kept $round" > "$DIR/data/file"
            mount --bind "$DIR/data" "$T/bound"
            status=0
            timeout 30 umount "$DIR" 2>"$T/err" || status=$?
            echo "$round: umount status $status: $(cat "$T/err")"
            echo "$round: through the bind mount: $(cat "$T/bound/file")"
            umount "$T/bound"
            for i in $(seq 100); do flock -n "$IMG" true && break; sleep 0.1; done
            mount -t fslab "$IMG" "$DIR"
            echo "$round: after both: $(cat "$DIR/data/file")"
            umount "$DIR"
        done
        "#,
    );
    assert!(r.success(), "{}", r.describe());
    for round in ["table", "connections"] {
        if round == "connections" && r.stdout.contains("no fusectl") {
            continue;
        }
        let out = &r.stdout;
        assert!(out.contains(&format!("{round}: umount status 0: ")), "{}", r.describe());
        let said = format!("{round}: umount status 0: fslab: umount: ");
        assert!(
            out.lines().any(|l| l.starts_with(&said) && l.contains("still mounted elsewhere")),
            "{}",
            r.describe()
        );
        assert!(out.contains(&format!("{round}: through the bind mount: kept {round}")), "{}", r.describe());
        assert!(out.contains(&format!("{round}: after both: kept {round}")), "{}", r.describe());
    }
}
