//! Model tests over `Lfs` on a memory disk: random operation sequences with
//! a cache small enough that segment writes happen mid-sequence, remounts
//! among the ops, and an ENOSPC test. `FSLAB_MODEL_SEEDS`,
//! `FSLAB_MODEL_OPS` scale the run; `FSLAB_MODEL_SEED` replays one seed.

use std::collections::BTreeMap;

use fslab::format::ROOT_INO;
use fslab::ufs::{Creds, SetAttr};
use fslab_cleaner::policy;
use testkit::harness::{env_or, first_difference, run, LfsSubject, RunConfig, Subject};
use testkit::ops::{fill, Weights};

const DISK: u64 = 24 << 20;
const CACHE: u64 = 1 << 20;

fn run_seeds(default_seeds: u64, default_ops: u64, scale: u64) {
    let seeds = env_or("FSLAB_MODEL_SEEDS", default_seeds);
    let ops = env_or("FSLAB_MODEL_OPS", default_ops) as usize * scale as usize;
    let one = std::env::var("FSLAB_MODEL_SEED").ok().and_then(|s| s.parse::<u64>().ok());
    let list: Vec<u64> = match one {
        Some(seed) => vec![seed],
        None => (0..seeds).map(|i| 0x6c667300 + i).collect(),
    };
    for &seed in &list {
        let subject =
            LfsSubject::small(DISK, CACHE).expect("mkfs and mount a fresh LFS").with_cleaner(policy::DEFAULT);
        let cfg = RunConfig { seed, ops, check_every: 100, weights: Weights::with_remount() };
        let (stats, outcomes) = run(subject, cfg);
        eprintln!("lfs seed {seed:#x}: {stats:?}");
        if seed == list[0] {
            eprintln!("outcomes: {outcomes:#?}");
        }
    }
}

#[test]
fn random_namespace_operations_match_the_model_on_lfs() {
    run_seeds(6, 1500, 1);
}

#[test]
#[ignore = "long: 10x the default ops per seed"]
fn random_namespace_operations_match_the_model_on_lfs_long() {
    run_seeds(6, 1500, 10);
}

/// On a disk a few writes fill, with the cleaner `fslab mount` runs: every
/// answer matches the model, and ENOSPC (or a short write) comes only when
/// the model's contents take about all the blocks statfs reports
/// (`testkit::space`). Writes outnumber deletes, so the disk fills and
/// stays nearly full.
#[test]
fn random_operations_on_a_disk_that_fills_up_get_enospc_only_when_it_is_full() {
    let seeds = env_or("FSLAB_MODEL_SEEDS", 4);
    let ops = env_or("FSLAB_MODEL_OPS", 1500) as usize;
    let weights =
        Weights { write: 60, fallocate: 12, truncate: 1, unlink: 2, rmdir: 1, ..Weights::with_remount() };
    let mut refused = 0;
    for seed in (0..seeds).map(|i| 0x66756c00 + i) {
        let subject = LfsSubject::small(4 << 20, CACHE)
            .expect("mkfs and mount a fresh LFS")
            .with_cleaner(policy::DEFAULT);
        let (stats, outcomes) = run(subject, RunConfig { seed, ops, check_every: 100, weights });
        eprintln!("full-disk seed {seed:#x}: {stats:?}");
        if seed == 0x66756c00 {
            eprintln!("outcomes: {outcomes:#?}");
        }
        refused += stats.enospc;
    }
    assert!(refused > 0, "the disk never filled up: the test no longer tests ENOSPC");
}

/// Fills `fs` with files of 64 KiB writes until ENOSPC; returns what each
/// file must hold (every accepted byte, short counts included).
fn fill_until_enospc(subject: &mut LfsSubject, prefix: &str, seed: u64) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let chunk = 64 << 10;
    'files: for i in 0..10_000u64 {
        let name = format!("{prefix}{i}");
        let ino =
            match subject.fs().mknod(ROOT_INO, name.as_bytes(), libc::S_IFREG | 0o644, 0, Creds::default()) {
                Ok(inode) => inode.ino,
                Err(e) if e.errno() == libc::ENOSPC => break,
                Err(e) => panic!("create {name}: {e}"),
            };
        let mut content = Vec::new();
        for j in 0..8u64 {
            let data = fill(seed ^ (i << 8) ^ j, chunk);
            match subject.fs().write(ino, content.len() as u64, &data) {
                Ok(n) => {
                    content.extend_from_slice(&data[..n]);
                    if n < data.len() {
                        files.insert(name, content);
                        break 'files;
                    }
                }
                Err(e) if e.errno() == libc::ENOSPC => {
                    files.insert(name, content);
                    break 'files;
                }
                Err(e) => panic!("write {name} at {}: {e}", content.len()),
            }
        }
        files.insert(name, content);
    }
    files
}

fn check_files(subject: &mut LfsSubject, files: &BTreeMap<String, Vec<u8>>, when: &str) {
    for (name, want) in files {
        let ino = subject
            .fs()
            .lookup(ROOT_INO, name.as_bytes())
            .unwrap_or_else(|e| panic!("{when}: {name}: {e}"))
            .ino;
        let got = subject
            .fs()
            .read(ino, 0, want.len() + 4096)
            .unwrap_or_else(|e| panic!("{when}: read {name}: {e}"));
        assert!(got == *want, "{when}: {name}: {}", first_difference(want, &got));
    }
}

/// Removes `name`: truncates it to zero and syncs first, which works on a
/// full disk where a plain unlink does not (see
/// `unlink_on_a_full_disk_succeeds_so_space_can_be_freed`).
fn remove(subject: &mut LfsSubject, name: &str) {
    let ino =
        subject.fs().lookup(ROOT_INO, name.as_bytes()).unwrap_or_else(|e| panic!("lookup {name}: {e}")).ino;
    let zero = SetAttr { size: Some(0), ..SetAttr::default() };
    subject.fs().setattr(ino, &zero).unwrap_or_else(|e| panic!("truncate {name}: {e}"));
    subject.fs().sync().unwrap_or_else(|e| panic!("sync after truncating {name}: {e}"));
    subject.fs().unlink(ROOT_INO, name.as_bytes()).unwrap_or_else(|e| panic!("unlink {name}: {e}"));
}

fn total(files: &BTreeMap<String, Vec<u8>>) -> usize {
    files.values().map(Vec::len).sum()
}

/// Fills a 4 MiB disk to ENOSPC three times (deleting half, then all, in
/// between), checking every accepted byte before and after remounts.
fn enospc_round_trip(cache: u64) {
    let mut subject = LfsSubject::small(4 << 20, cache).expect("mkfs and mount a fresh LFS");
    let first = fill_until_enospc(&mut subject, "f", 1);
    let first_bytes = total(&first);
    assert!(first_bytes > 1 << 20, "a 4 MiB disk took only {first_bytes} bytes before ENOSPC");
    check_files(&mut subject, &first, "before remount");
    subject.remount().expect("remount after ENOSPC");
    check_files(&mut subject, &first, "after remount");

    // Delete every other file; the space comes back at checkpoints.
    let mut kept = BTreeMap::new();
    for (i, (name, content)) in first.into_iter().enumerate() {
        if i % 2 == 0 {
            remove(&mut subject, &name);
        } else {
            kept.insert(name, content);
        }
    }
    subject.fs().sync().expect("sync after deleting");
    subject.fs().sync().expect("second sync after deleting");
    let second = fill_until_enospc(&mut subject, "g", 2);
    let second_bytes = total(&second);
    assert!(
        second_bytes >= first_bytes / 4,
        "after deleting half of {first_bytes} bytes only {second_bytes} could be written again"
    );
    check_files(&mut subject, &kept, "kept files, before remount");
    check_files(&mut subject, &second, "second fill, before remount");
    subject.remount().expect("remount after the second ENOSPC");
    check_files(&mut subject, &kept, "kept files, after remount");
    check_files(&mut subject, &second, "second fill, after remount");

    // Delete everything: nearly the whole first fill fits again.
    for name in kept.keys().chain(second.keys()) {
        remove(&mut subject, name);
    }
    subject.fs().sync().expect("sync after deleting everything");
    subject.fs().sync().expect("second sync after deleting everything");
    let third = fill_until_enospc(&mut subject, "h", 3);
    let third_bytes = total(&third);
    assert!(
        third_bytes >= first_bytes * 3 / 4,
        "an emptied file system took {third_bytes} bytes, a fresh one {first_bytes}"
    );
    subject.remount().expect("remount after the third ENOSPC");
    check_files(&mut subject, &third, "third fill, after remount");
}

#[test]
fn every_write_accepted_before_enospc_survives_a_remount_and_deleting_frees_space() {
    // A cache larger than the disk: nothing is ever evicted (see the next test).
    enospc_round_trip(8 << 20);
}

#[test]
fn every_write_accepted_before_enospc_reads_back_with_a_small_cache() {
    // Bug: when every other buffer is dirty and the cache is over its limit,
    // `BufferCache::insert` → `evict` removes the clean indirect block that
    // `Lfs::ensure_cached` has just inserted, and `Lfs::pointer` then fails
    // with EIO "indirect block evicted".
    enospc_round_trip(CACHE);
}

#[test]
fn unlink_on_a_full_disk_succeeds_so_space_can_be_freed() {
    // Bug: removing a name dirties the directory block and two inodes, and
    // `check_space` refuses them when the log is full; nothing reserves room
    // for operations that free space.
    let mut subject = LfsSubject::small(4 << 20, CACHE).expect("mkfs and mount a fresh LFS");
    let ino =
        subject.fs().mknod(ROOT_INO, b"big", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create").ino;
    let mut at = 0u64;
    loop {
        match subject.fs().write(ino, at, &fill(at, 64 << 10)) {
            Ok(n) if n == 64 << 10 => at += n as u64,
            Ok(_) => break,
            Err(e) if e.errno() == libc::ENOSPC => break,
            Err(e) => panic!("write at {at}: {e}"),
        }
    }
    subject.fs().unlink(ROOT_INO, b"big").expect("unlink on a full disk");
    subject.fs().sync().expect("sync");
    let again =
        subject.fs().mknod(ROOT_INO, b"again", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create");
    assert_eq!(subject.fs().write(again.ino, 0, &fill(1, 1 << 20)).expect("write after freeing"), 1 << 20);
}

#[test]
fn statfs_counts_a_new_inode_as_used_before_it_is_written() {
    // Bug: `Tables::inodes_in_use` counts inode-map entries with a disk
    // address, and a new inode has none until the segment writer stores it.
    let mut subject = LfsSubject::small(8 << 20, CACHE).expect("mkfs and mount a fresh LFS");
    let used = |s: &mut LfsSubject| {
        let st = s.fs().statfs().expect("statfs");
        st.total_inodes - st.free_inodes
    };
    let before = used(&mut subject);
    subject.fs().mknod(ROOT_INO, b"f", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create");
    assert_eq!(used(&mut subject), before + 1, "inodes in use after one create, before any sync");
}

/// Fills a fresh 4 MiB LFS (no cleaner) with three-block files until not
/// one more block fits; returns what each file holds.
fn full_of_small_files() -> (LfsSubject, BTreeMap<String, Vec<u8>>) {
    let mut subject = LfsSubject::small(4 << 20, CACHE).expect("mkfs and mount a fresh LFS");
    let mut files = BTreeMap::new();
    for i in 0..10_000u64 {
        let name = format!("s{i}");
        let Ok(inode) =
            subject.fs().mknod(ROOT_INO, name.as_bytes(), libc::S_IFREG | 0o644, 0, Creds::default())
        else {
            break;
        };
        let data = fill(i, 3 * 4096);
        let n = subject.fs().write(inode.ino, 0, &data).unwrap_or(0);
        files.insert(name, data[..n].to_vec());
        if n < data.len() {
            break;
        }
    }
    (subject, files)
}

/// Regression (found by the full-disk model test above): on a full disk,
/// a truncate to the middle of a block freed the blocks past the new end,
/// then failed with ENOSPC zeroing the rest of the new last block (a new
/// block, in a log): the file kept its old size and read zeros where its
/// data had been. A truncate must work on a full disk (it frees space),
/// and what a later extension shows past the old end must be zeros.
#[test]
fn truncating_to_the_middle_of_a_block_works_on_a_full_disk() {
    let (mut subject, mut files) = full_of_small_files();
    let victims: Vec<String> =
        files.iter().filter(|(_, d)| d.len() == 3 * 4096).map(|(n, _)| n.clone()).collect();
    assert!(victims.len() > 20, "only {} files", victims.len());
    for name in victims.iter().step_by(victims.len() / 8) {
        let ino = subject.fs().lookup(ROOT_INO, name.as_bytes()).expect("lookup").ino;
        let half = SetAttr { size: Some(6144), ..SetAttr::default() };
        subject.fs().setattr(ino, &half).unwrap_or_else(|e| panic!("truncate {name} on a full disk: {e}"));
        files.get_mut(name).expect("file").truncate(6144);
        check_files(&mut subject, &files, &format!("after truncating {name}"));
        // Longer again: what lay past the end reads as zeros, or the call
        // is refused and changes nothing.
        let back = SetAttr { size: Some(3 * 4096), ..SetAttr::default() };
        match subject.fs().setattr(ino, &back) {
            Ok(_) => files.get_mut(name).expect("file").resize(3 * 4096, 0),
            Err(e) if e.errno() == libc::ENOSPC => {}
            Err(e) => panic!("truncate {name} up: {e}"),
        }
        check_files(&mut subject, &files, &format!("after making {name} longer"));
    }
    subject.remount().expect("remount");
    check_files(&mut subject, &files, "after remount");
}

/// Regression (found by the full-disk model test above): on a full disk a
/// ZERO_RANGE punched its range, then failed with ENOSPC storing its zero
/// blocks, and a PUNCH_HOLE freed its whole blocks, then failed zeroing a
/// partial one: ENOSPC, with the data gone. A call refused with ENOSPC
/// must change nothing.
#[test]
fn fallocate_refused_on_a_full_disk_changes_nothing() {
    let (mut subject, mut files) = full_of_small_files();
    let names: Vec<String> =
        files.iter().filter(|(_, d)| d.len() == 3 * 4096).map(|(n, _)| n.clone()).collect();
    let mut refused = 0;
    for (i, name) in names.iter().enumerate().step_by(names.len() / 10) {
        let ino = subject.fs().lookup(ROOT_INO, name.as_bytes()).expect("lookup").ino;
        let (offset, len) = (100, 2 * 4096);
        let mode = if i % 2 == 0 {
            libc::FALLOC_FL_ZERO_RANGE
        } else {
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
        };
        match subject.fs().fallocate(ino, offset, len, mode) {
            Ok(()) => files.get_mut(name).expect("file")[offset as usize..(offset + len) as usize].fill(0),
            Err(e) if e.errno() == libc::ENOSPC => refused += 1,
            Err(e) => panic!("fallocate {name}: {e}"),
        }
        check_files(&mut subject, &files, &format!("after fallocate mode {mode:#x} on {name}"));
    }
    assert!(refused >= 4, "only {refused} calls were refused: the disk was not full");
    subject.remount().expect("remount");
    check_files(&mut subject, &files, "after remount");
}
