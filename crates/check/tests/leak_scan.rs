//! The background leak scan of a soft-updates image a crash left
//! (`fslab::ffs::leaks`): it runs a slice per tick while the file system
//! is used, frees what the crash leaked without touching what the work
//! meanwhile does, and leaves an image fsck calls clean.

mod common;

use common::ffs::fresh;
use disk::{BlockDevice, MemDisk};
use fslab::ffs::{Ffs, Integrity, LeakScanState, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use fslab_check::Severity;
use std::sync::Arc;

const ME: Creds = Creds { uid: 0, gid: 0 };

fn mount(dev: &Arc<MemDisk>, adversary: Option<u64>) -> FileSystem<Ffs> {
    let options = MountOptions {
        cache_bytes: 4 << 20,
        integrity: Integrity::Softdep,
        adversary,
        ..MountOptions::default()
    };
    let dev: Arc<dyn BlockDevice> = dev.clone();
    FileSystem::new(Ffs::mount(dev, options).expect("mount"))
}

fn file(fs: &mut FileSystem<Ffs>, dir: Ino, name: &str, bytes: usize) -> Ino {
    let ino = fs.mknod(dir, name.as_bytes(), kind::REG | 0o644, 0, ME).expect("create").ino;
    fs.write(ino, 0, &vec![name.len() as u8; bytes]).expect("write");
    ino
}

/// Work that leaves leaks when cut off at a random point of its write-back:
/// files and directories made, grown, removed and moved.
fn work_cut_off(dev: &Arc<MemDisk>, seed: u64) {
    let mut fs = mount(dev, Some(seed));
    let a = fs.mkdir(ROOT_INO, b"a", 0o755, ME).expect("mkdir").ino;
    let b = fs.mkdir(ROOT_INO, b"b", 0o755, ME).expect("mkdir").ino;
    for i in 0..40 {
        file(&mut fs, a, &format!("f{i}"), 700 + i * 300);
    }
    // Enough inodes that the scan takes several ticks, with work between.
    let many = fs.mkdir(ROOT_INO, b"many", 0o755, ME).expect("mkdir").ino;
    for i in 0..2500 {
        fs.mknod(many, format!("e{i}").as_bytes(), kind::REG | 0o644, 0, ME).expect("create");
    }
    fs.sync().expect("sync");
    for i in (0..40).step_by(3) {
        fs.unlink(a, format!("f{i}").as_bytes()).expect("unlink");
    }
    for i in 0..6 {
        let d = fs.mkdir(b, format!("d{i}").as_bytes(), 0o755, ME).expect("mkdir").ino;
        file(&mut fs, d, "inner", 5000);
        fs.unlink(d, b"inner").expect("unlink");
        if i % 2 == 0 {
            fs.rmdir(b, format!("d{i}").as_bytes()).expect("rmdir");
        }
    }
    for i in (1..40).step_by(3) {
        let ino = fs.lookup(a, format!("f{i}").as_bytes()).expect("lookup").ino;
        fs.setattr(ino, &fslab::ufs::SetAttr { size: Some(100), ..Default::default() }).expect("truncate");
    }
    // Cut off: dropped without unmounting, whatever write-back sent so far
    // on the disk.
}

#[test]
fn a_scan_beside_work_frees_the_leaks_and_nothing_the_work_made() {
    let mut freed = 0;
    for seed in 0..8 {
        let dev = fresh(48 << 20);
        work_cut_off(&dev, seed);
        let mut fs = mount(&dev, None);
        assert!(
            matches!(fs.storage().leak_report().state, LeakScanState::Running { .. }),
            "seed {seed}: a crash-left softdep image starts a scan"
        );
        // Work while the scan runs: new files, removals, moves.
        let c = fs.mkdir(ROOT_INO, b"c", 0o755, ME).expect("mkdir").ino;
        let mut made = Vec::new();
        for round in 0..200 {
            fs.tick().expect("tick");
            let name = format!("n{round}");
            made.push((file(&mut fs, c, &name, 3000 + round), name));
            if round % 5 == 4 {
                let (_, gone) = made.remove(0);
                fs.unlink(c, gone.as_bytes()).expect("unlink");
            }
            if !matches!(fs.storage().leak_report().state, LeakScanState::Running { .. }) {
                break;
            }
        }
        let report = fs.storage().leak_report().clone();
        assert_eq!(report.state, LeakScanState::Done, "seed {seed}: {report:?}");
        assert!(made.len() > 2, "seed {seed}: the scan ended before any work ran beside it");
        freed += report.frags_freed + report.inodes_freed + report.links_lowered;
        for (ino, name) in &made {
            let found = fs.lookup(c, name.as_bytes()).expect("made during the scan");
            assert_eq!(found.ino, *ino);
            let data = fs.read(*ino, 0, 1 << 20).expect("read");
            assert_eq!(data.len(), 3000 + name[1..].parse::<usize>().expect("number"));
        }
        fs.unmount().expect("unmount");
        let after = common::check(&dev);
        let only_leaks = after.problems.iter().all(|p| p.severity == Severity::Leak);
        assert!(
            after.is_clean() || report.left_for_fsck > 0 && only_leaks,
            "seed {seed}: after the scan ({report:?}):\n{}",
            common::listing(&after)
        );
    }
    assert!(freed > 0, "the cut-off work left no leak for a scan to free");
}

#[test]
fn an_image_unmounted_cleanly_gets_no_scan_and_unmount_finishes_one() {
    let dev = fresh(48 << 20);
    let mut fs = mount(&dev, None);
    assert_eq!(fs.storage().leak_report().state, LeakScanState::NotNeeded);
    let many = fs.mkdir(ROOT_INO, b"many", 0o755, ME).expect("mkdir").ino;
    for i in 0..3000 {
        fs.mknod(many, format!("e{i}").as_bytes(), kind::REG | 0o644, 0, ME).expect("create");
    }
    fs.sync().expect("sync");
    drop(fs);
    // Left by a crash: scanned, one slice a tick; unmount finishes the scan
    // and leaves the image clean.
    let mut fs = mount(&dev, None);
    assert!(matches!(fs.storage().leak_report().state, LeakScanState::Running { .. }));
    fs.tick().expect("tick");
    assert!(
        matches!(fs.storage().leak_report().state, LeakScanState::Running { .. }),
        "3000 inodes take more than one slice"
    );
    fs.unmount().expect("unmount");
    assert!(common::check(&dev).is_clean());
    let mut fs = mount(&dev, None);
    assert_eq!(fs.storage().leak_report().state, LeakScanState::NotNeeded);
    fs.unmount().expect("unmount");
}
