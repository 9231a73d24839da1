//! Tests of the storage manager alone, on a memory disk.

use super::*;
use crate::format::inode::kind;
use crate::format::ROOT_INO;
use disk::MemDisk;

fn fresh(size: u64, options: MkfsOptions) -> Arc<MemDisk> {
    let disk = Arc::new(MemDisk::new(size));
    mkfs(disk.clone(), &options).expect("mkfs");
    disk
}

fn small_options() -> MkfsOptions {
    MkfsOptions { block_size: 4096, segment_size: 64 << 10 }
}

fn mount_mem(disk: &Arc<MemDisk>) -> Lfs {
    Lfs::mount(disk.clone(), MountOptions { cache_bytes: 4 << 20, ..MountOptions::default() }).expect("mount")
}

fn new_file(lfs: &mut Lfs) -> Ino {
    let inode = lfs.valloc(ROOT_INO, kind::REG).expect("valloc");
    let attr = InodeAttr { mode: kind::REG | 0o644, nlink: 1, ..InodeAttr::default() };
    lfs.update(inode.ino, &attr).expect("update");
    inode.ino
}

/// A fresh file system of `size` bytes, mounted, with one empty file made
/// durable.
fn one_synced_file(size: u64) -> (Arc<MemDisk>, Lfs, Ino) {
    let disk = fresh(size, small_options());
    let mut lfs = mount_mem(&disk);
    let ino = new_file(&mut lfs);
    lfs.sync().expect("sync");
    (disk, lfs, ino)
}

fn pattern(ino: Ino, lbn: Lbn, len: usize) -> Vec<u8> {
    (0..len).map(|i| (ino as usize * 31 + lbn as usize * 7 + i) as u8).collect()
}

/// Asserts that each block `lbn` of `ino` in `lbns` holds `want(lbn)`.
fn assert_blocks(
    lfs: &mut Lfs,
    ino: Ino,
    lbns: impl IntoIterator<Item = Lbn>,
    want: impl Fn(Lbn) -> Vec<u8>,
) {
    let mut buf = vec![0u8; lfs.block_size];
    for lbn in lbns {
        lfs.read_block(ino, lbn, &mut buf).expect("read");
        assert_eq!(buf, want(lbn), "block {lbn}");
    }
}

#[test]
fn blocks_survive_checkpoint_and_remount() {
    let disk = fresh(8 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let ino = new_file(&mut lfs);
    assert_eq!(ino, crate::format::ROOT_INO, "the first inode handed out is the root's number");
    for lbn in [0i64, 1, 11, 12, 13, 2000] {
        lfs.write_block(ino, lbn, 0, &pattern(ino, lbn, 4096)).expect("write");
    }
    let mut attr = lfs.vget(ino).expect("vget").attr;
    attr.size = 2001 * 4096;
    lfs.update(ino, &attr).expect("update");
    lfs.unmount().expect("unmount");

    let mut lfs = mount_mem(&disk);
    let inode = lfs.vget(ino).expect("vget after remount");
    assert_eq!(inode.attr.size, 2001 * 4096);
    assert_eq!(
        inode.blocks,
        (6 + 3) * 8,
        "six data blocks, a single indirect block, and a double with one single below it"
    );
    assert_blocks(&mut lfs, ino, [0, 1, 11, 12, 13, 2000], |lbn| pattern(ino, lbn, 4096));
    // A hole reads as zeros.
    assert_blocks(&mut lfs, ino, [500], |_| vec![0u8; 4096]);
    assert_eq!(lfs.next_data(ino, 14).expect("next_data"), Some(2000));
    assert_eq!(lfs.next_data(ino, 2001).expect("next_data"), None);
}

#[test]
fn writes_spanning_many_segments_read_back_after_remount() {
    let disk = fresh(16 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let files: Vec<Ino> = (0..5).map(|_| new_file(&mut lfs)).collect();
    for round in 0..3 {
        for &ino in &files {
            for lbn in 0..100 {
                let mut data = pattern(ino, lbn, 4096);
                data[0] = round;
                lfs.write_block(ino, lbn, 0, &data).expect("write");
            }
        }
        lfs.sync().expect("sync");
    }
    for &ino in &files {
        let mut attr = lfs.vget(ino).expect("vget").attr;
        attr.size = 100 * 4096;
        lfs.update(ino, &attr).expect("update");
    }
    lfs.unmount().expect("unmount");
    let mut lfs = mount_mem(&disk);
    let mut buf = vec![0u8; 4096];
    for &ino in &files {
        for lbn in 0..100 {
            lfs.read_block(ino, lbn, &mut buf).expect("read");
            let mut want = pattern(ino, lbn, 4096);
            want[0] = 2;
            assert_eq!(buf, want, "file {ino} block {lbn}");
        }
    }
}

#[test]
fn live_bytes_match_what_the_inode_map_and_files_reference() {
    let disk = fresh(8 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let a = new_file(&mut lfs);
    let b = new_file(&mut lfs);
    for lbn in 0..40 {
        lfs.write_block(a, lbn, 0, &pattern(a, lbn, 4096)).expect("write");
        lfs.write_block(b, lbn, 0, &pattern(b, lbn, 4096)).expect("write");
    }
    lfs.sync().expect("sync");
    for lbn in 0..40 {
        lfs.write_block(a, lbn, 0, &pattern(b, lbn, 4096)).expect("overwrite");
    }
    lfs.free_blocks(b, 0, u64::MAX).expect("free");
    lfs.vfree(b).expect("vfree");
    lfs.sync().expect("sync");
    let live: u64 = lfs.ifile.tables.usage().iter().map(|s| s.live_bytes as u64).sum();
    // a: 40 data + 1 indirect block; inodes: a and the ifile; the ifile's blocks.
    let ifile_blocks = lfs.ifile.inode.blocks / 8;
    let expected = (41 + ifile_blocks) * 4096 + 2 * 256;
    assert_eq!(live, expected);
}

#[test]
fn a_full_log_refuses_writes_with_enospc_and_keeps_what_it_accepted() {
    let disk = fresh(4 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let ino = new_file(&mut lfs);
    let mut accepted = 0i64;
    let err = loop {
        match lfs.write_block(ino, accepted, 0, &pattern(ino, accepted, 4096)) {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
        assert!(accepted < 2000, "a 4 MiB disk cannot take 8 MiB");
    };
    assert_eq!(err.errno(), libc::ENOSPC);
    assert!(accepted > 500, "most of the disk is usable: accepted {accepted} blocks");
    // Metadata still fits on a disk full of data: a directory block and an
    // inode update, as an unlink needs.
    let dir = lfs.valloc(ROOT_INO, kind::REG).expect("valloc on a full disk");
    let dir_attr = InodeAttr { mode: kind::DIR | 0o755, nlink: 2, size: 4096, ..InodeAttr::default() };
    lfs.update(dir.ino, &dir_attr).expect("inode update on a full disk");
    lfs.write_block(dir.ino, 0, 0, &[1u8; 4096]).expect("directory block on a full disk");
    let mut attr = lfs.vget(ino).expect("vget").attr;
    attr.size = accepted as u64 * 4096;
    lfs.update(ino, &attr).expect("update");
    lfs.unmount().expect("every accepted block must fit");
    let mut lfs = mount_mem(&disk);
    assert_blocks(&mut lfs, ino, 0..accepted, |lbn| pattern(ino, lbn, 4096));
    // Deleting the file makes its segments reclaimable: space comes back.
    lfs.free_blocks(ino, 0, u64::MAX).expect("free");
    lfs.vfree(ino).expect("vfree");
    let other = new_file(&mut lfs);
    for lbn in 0..accepted / 2 {
        lfs.write_block(other, lbn, 0, &pattern(other, lbn, 4096)).expect("space was reclaimed");
    }
    lfs.unmount().expect("unmount");
}

#[test]
fn mount_rejects_foreign_and_damaged_images() {
    let random = Arc::new(MemDisk::from_bytes(
        (0..(4u32 << 20)).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect(),
    ));
    assert!(matches!(Lfs::mount(random, MountOptions::default()), Err(crate::Error::Foreign(_))));
    let disk = fresh(8 << 20, small_options());
    let mut bytes = disk.snapshot();
    bytes[200] ^= 0xff;
    // With the first copy damaged, another copy still mounts.
    let damaged = Arc::new(MemDisk::from_bytes(bytes.clone()));
    assert!(Lfs::mount(damaged, MountOptions::default()).is_ok());
    // With every copy damaged, mount fails cleanly.
    let sb = mount_mem(&disk).sb;
    for i in 0..sb.ncopies as usize {
        bytes[sb.copy_offset(i) as usize + 130] ^= 0xff;
    }
    assert!(Lfs::mount(Arc::new(MemDisk::from_bytes(bytes)), MountOptions::default()).is_err());
}

#[test]
fn truncate_frees_indirect_trees() {
    let disk = fresh(16 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let ino = new_file(&mut lfs);
    let far = 12 + 1024 + 5; // under the double indirect block
    for lbn in [0, 12, far] {
        lfs.write_block(ino, lbn, 0, &pattern(ino, lbn, 4096)).expect("write");
    }
    lfs.sync().expect("sync");
    assert_eq!(lfs.vget(ino).expect("vget").blocks, (3 + 1 + 2) * 8);
    lfs.free_blocks(ino, 1, u64::MAX).expect("truncate");
    let inode = lfs.vget(ino).expect("vget");
    assert_eq!(inode.blocks, 8, "only block 0 is left");
    assert_eq!(inode.indirect, [Daddr::NONE; 3]);
    lfs.sync().expect("sync");
    let mut buf = vec![0u8; 4096];
    lfs.read_block(ino, far as Lbn, &mut buf).expect("read");
    assert!(buf.iter().all(|&b| b == 0));
}

/// Random block writes, frees, file deletions, syncs and remounts, checked
/// against a map of what each block should hold; the live-byte total is
/// checked against a recount after every sync.
#[test]
fn random_block_operations_match_a_model_across_remounts() {
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let disk = fresh(32 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let mut model: BTreeMap<Ino, BTreeMap<Lbn, u8>> = BTreeMap::new();
    let lbn_choices = [0i64, 1, 5, 11, 12, 13, 100, 1035, 1036, 1037, 5000, 1049612, 1049613];
    for step in 0..3000 {
        match rng.gen_range(0..100) {
            0..=59 => {
                let ino = if model.is_empty() || rng.gen_bool(0.05) {
                    let ino = new_file(&mut lfs);
                    model.insert(ino, BTreeMap::new());
                    ino
                } else {
                    *model.keys().nth(rng.gen_range(0..model.len())).expect("nonempty")
                };
                let lbn = lbn_choices[rng.gen_range(0..lbn_choices.len())] + rng.gen_range(0..3);
                let byte: u8 = rng.gen();
                lfs.write_block(ino, lbn, 0, &[byte; 4096]).expect("write");
                model.entry(ino).or_default().insert(lbn, byte);
            }
            60..=69 if !model.is_empty() => {
                let ino = *model.keys().nth(rng.gen_range(0..model.len())).expect("nonempty");
                let first: u64 = lbn_choices[rng.gen_range(0..lbn_choices.len())] as u64;
                lfs.free_blocks(ino, first, u64::MAX).expect("truncate");
                model.entry(ino).or_default().retain(|&l, _| (l as u64) < first);
            }
            70..=74 if !model.is_empty() => {
                let ino = *model.keys().nth(rng.gen_range(0..model.len())).expect("nonempty");
                lfs.free_blocks(ino, 0, u64::MAX).expect("free");
                lfs.vfree(ino).expect("vfree");
                model.remove(&ino);
            }
            75..=79 => {
                lfs.sync().expect("sync");
                assert_live_bytes_are_exact(&mut lfs);
            }
            80..=81 => {
                lfs.unmount().expect("unmount");
                lfs = mount_mem(&disk);
            }
            _ => {}
        }
        if step % 10 == 0 {
            // The space counts kept up to date block by block equal a recount.
            let usage = lfs.ifile.tables.usage();
            let entries = usage.iter().copied().collect();
            let recount = super::usage::SegmentUsage::new(entries, lfs.sb.blocks_per_segment(), 4096);
            assert_eq!(usage.space(), recount.space(), "step {step}");
            assert_eq!(usage.clean_and_dirty(), recount.clean_and_dirty(), "step {step}");
        }
        if step % 50 == 0 {
            let mut buf = vec![0u8; 4096];
            for (&ino, blocks) in &model {
                for (&lbn, &byte) in blocks {
                    lfs.read_block(ino, lbn, &mut buf).expect("read");
                    assert!(buf.iter().all(|&b| b == byte), "step {step}: inode {ino} block {lbn}");
                }
                let inode = lfs.vget(ino).expect("vget");
                assert!(inode.blocks >= blocks.len() as u64 * 8, "blocks count covers the data");
            }
        }
    }
}

/// Recounts every live block and inode by walking the inode map and each
/// file's block tree, and compares with the segment usage table.
fn assert_live_bytes_are_exact(lfs: &mut Lfs) {
    use crate::format::blockno::{Geometry, NDADDR};
    let mut live = vec![0u64; lfs.sb.nsegments as usize];
    let bps = lfs.sb.blocks_per_segment();
    let count = |live: &mut Vec<u64>, daddr: Daddr, bytes: u64| {
        if daddr.is_some() {
            live[(daddr.get() / bps) as usize] += bytes;
        }
    };
    let mut entries = Vec::new();
    lfs.imap_scan(|ino, e| entries.push((ino, *e))).expect("the inode map");
    let inos: Vec<Ino> = entries.iter().filter(|(_, e)| e.daddr.is_some()).map(|&(ino, _)| ino).collect();
    count(&mut live, lfs.ifile.daddr, 256);
    for &(_, e) in &entries {
        count(&mut live, e.daddr, 256);
    }
    for ino in std::iter::once(crate::format::IFILE_INO).chain(inos) {
        let mut names: Vec<Lbn> = (0..NDADDR as Lbn).collect();
        names.push(crate::format::blockno::XATTR_LBN);
        let n = lfs.geometry.nindir;
        let starts = [NDADDR as u64, NDADDR as u64 + n, NDADDR as u64 + n + n * n];
        // Walk each tree breadth first: (level, first data block).
        let mut metas: Vec<(usize, u64)> = (1..=3).map(|l| (l, starts[l - 1])).collect();
        while let Some((level, first)) = metas.pop() {
            let name = Geometry::meta_lbn(level, first);
            if lfs.pointer(ino, name).expect("pointer").is_none() {
                continue;
            }
            names.push(name);
            let span = n.pow(level as u32 - 1);
            for i in 0..n {
                let child_first = first + i * span;
                if level == 1 {
                    names.push(child_first as Lbn);
                } else {
                    metas.push((level - 1, child_first));
                }
            }
        }
        for name in names {
            let daddr = lfs.pointer(ino, name).expect("pointer");
            count(&mut live, daddr, 4096);
        }
    }
    for (seg, s) in lfs.ifile.tables.usage().iter().enumerate() {
        assert_eq!(s.live_bytes as u64, live[seg], "segment {seg} live bytes");
    }
}

/// A crash right after `fsync` returns: the image as it is then, mounted
/// without the unmount checkpoint.
/// Writes blocks `0..blocks` of `ino` with their patterns, sets its size
/// to them, and fsyncs it.
fn write_and_fsync(lfs: &mut Lfs, ino: Ino, blocks: Lbn) {
    for lbn in 0..blocks {
        lfs.write_block(ino, lbn, 0, &pattern(ino, lbn, 4096)).expect("write");
    }
    let mut attr = lfs.vget(ino).expect("vget").attr;
    attr.size = blocks as u64 * 4096;
    lfs.update(ino, &attr).expect("update");
    lfs.fsync(ino, false).expect("fsync");
}

fn crash_image(disk: &Arc<MemDisk>) -> Arc<MemDisk> {
    Arc::new(MemDisk::from_bytes(disk.snapshot()))
}

#[test]
fn fsync_survives_a_crash_through_roll_forward_without_writing_a_checkpoint() {
    let (disk, mut lfs, ino) = one_synced_file(16 << 20);
    let checkpoints = lfs.stats().checkpoints;
    write_and_fsync(&mut lfs, ino, 40);
    assert_eq!(lfs.stats().checkpoints, checkpoints, "fsync writes no checkpoint");
    let crashed = crash_image(&disk);
    let mut after = mount_mem(&crashed);
    assert!(after.recovery().applied > 0, "roll-forward found the fsynced partial segment");
    assert_eq!(after.vget(ino).expect("vget").attr.size, 40 * 4096);
    assert_blocks(&mut after, ino, 0..40, |lbn| pattern(ino, lbn, 4096));
    assert_live_bytes_are_exact(&mut after);
    // The recovered state was checkpointed: a second crash loses nothing.
    drop(after);
    let mut again = mount_mem(&crashed);
    assert_eq!(again.recovery().applied, 0, "nothing left to roll forward");
    assert_blocks(&mut again, ino, [39], |lbn| pattern(ino, lbn, 4096));
}

#[test]
fn an_inode_allocated_after_the_checkpoint_is_recovered_with_a_consistent_free_list() {
    let disk = fresh(16 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let inos: Vec<Ino> = (0..5).map(|_| new_file(&mut lfs)).collect();
    lfs.sync().expect("sync");
    let later = new_file(&mut lfs);
    lfs.write_block(later, 0, 0, &pattern(later, 0, 4096)).expect("write");
    lfs.fsync(later, false).expect("fsync");
    let crashed = crash_image(&disk);
    let mut after = mount_mem(&crashed);
    assert!(after.vget(later).is_ok(), "the fsynced new inode exists");
    for ino in &inos {
        assert!(after.vget(*ino).is_ok());
    }
    let fresh_ino = after.valloc(ROOT_INO, kind::REG).expect("valloc").ino;
    assert!(!inos.contains(&fresh_ino) && fresh_ino != later, "the free list no longer holds live inodes");
}

#[test]
fn random_writes_and_fsyncs_recover_every_fsynced_block_at_any_crash() {
    random_writes_and_fsyncs_survive_crashes(UserSeparation::Off);
}

#[test]
fn writes_at_the_cold_head_recover_every_fsynced_block_at_any_crash() {
    // Every file written before goes to the cold head: roll-forward must
    // follow both heads, and fsync must reach the one that holds the file.
    let cold_partials = random_writes_and_fsyncs_survive_crashes(UserSeparation::Always(0.0));
    assert!(cold_partials > 20, "users' writes reached the cold head: {cold_partials} partial segments");
}

/// Random block writes and fsyncs; every 40 steps, the image as a power cut
/// would leave it is mounted and every block fsynced since (and not
/// rewritten) is checked. Returns the partial segments written at the cold
/// head.
fn random_writes_and_fsyncs_survive_crashes(separation: UserSeparation) -> u64 {
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    let disk = fresh(32 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    lfs.set_separation(separation);
    let files: Vec<Ino> = (0..4).map(|_| new_file(&mut lfs)).collect();
    lfs.sync().expect("sync");
    let mut synced: BTreeMap<(Ino, Lbn), u8> = BTreeMap::new();
    let mut pending: BTreeMap<(Ino, Lbn), u8> = BTreeMap::new();
    for step in 0..400 {
        let ino = files[rng.gen_range(0..files.len())];
        let lbn = [0i64, 3, 11, 12, 40, 1040, 1100][rng.gen_range(0..7)];
        let truncate = rng.gen_bool(0.05);
        if truncate {
            // Made durable by the fsync below: roll-forward must count what
            // it freed (data and indirect blocks) as dead.
            lfs.free_blocks(ino, lbn as u64, u64::MAX).expect("truncate");
            pending.retain(|&(i, l), _| i != ino || l < lbn);
            synced.retain(|&(i, l), _| i != ino || l < lbn);
        } else {
            let byte: u8 = rng.gen();
            lfs.write_block(ino, lbn, 0, &[byte; 4096]).expect("write");
            pending.insert((ino, lbn), byte);
        }
        if truncate || rng.gen_bool(0.1) {
            lfs.fsync(ino, false).expect("fsync");
            let keys: Vec<_> = pending.keys().filter(|k| k.0 == ino).copied().collect();
            for k in keys {
                if let Some(v) = pending.remove(&k) {
                    synced.insert(k, v);
                }
            }
        }
        if step % 40 == 39 {
            let mut after = mount_mem(&crash_image(&disk));
            let mut buf = vec![0u8; 4096];
            for (&(ino, lbn), &byte) in &synced {
                if pending.contains_key(&(ino, lbn)) {
                    continue; // rewritten since its fsync: either version may be there
                }
                after.read_block(ino, lbn, &mut buf).expect("read");
                assert!(buf.iter().all(|&b| b == byte), "step {step}: inode {ino} block {lbn}");
            }
            assert_live_bytes_are_exact(&mut after);
        }
    }
    lfs.stats().cold_partial_segments
}

/// One file written in order into `blocks` blocks, then synced: segments
/// whose ages follow the file's block numbers.
fn file_in_order(lfs: &mut Lfs, blocks: Lbn) -> Ino {
    let ino = new_file(lfs);
    for lbn in 0..blocks {
        lfs.write_block(ino, lbn, 0, &pattern(ino, lbn, 4096)).expect("write");
    }
    lfs.sync().expect("sync");
    ino
}

/// Overwrites the blocks of `ino` that `lbns` names, syncing after each
/// 32.
fn overwrite(lfs: &mut Lfs, ino: Ino, lbns: impl Iterator<Item = Lbn>) {
    for (i, lbn) in lbns.enumerate() {
        lfs.write_block(ino, lbn, 0, &pattern(ino + 1, lbn, 4096)).expect("overwrite");
        if i % 32 == 31 {
            lfs.sync().expect("sync");
        }
    }
    lfs.sync().expect("sync");
}

#[test]
fn ages_predict_survival_only_where_data_dies_young() {
    // 128 segments of 16 blocks; the file fills about 60 of them.
    let disk = fresh(8 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let ino = file_in_order(&mut lfs, 960);
    assert!(!lfs.ages_predict_survival(), "nothing has died yet");
    // Hot data: the same 32 blocks, overwritten ten times.
    overwrite(&mut lfs, ino, (0..10).flat_map(|_| 0..32));
    assert!(lfs.ages_predict_survival(), "what dies is young, what lives is old");

    // Uniform overwrites: what dies is as old as what lives.
    let disk = fresh(8 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let ino = file_in_order(&mut lfs, 960);
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let random = std::iter::repeat_with(move || rng.gen_range(0..960) as Lbn);
    overwrite(&mut lfs, ino, random.take(320));
    assert!(!lfs.ages_predict_survival(), "blocks die at random, whatever their age");
}

#[test]
fn clustered_reads_match_block_by_block_reads() {
    let disk = fresh(16 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let ino = new_file(&mut lfs);
    // 300 blocks written in one go lie contiguous in the log, except where
    // segment boundaries and indirect blocks fall between them.
    for lbn in 0..300 {
        lfs.write_block(ino, lbn, 0, &pattern(ino, lbn, 4096)).expect("write");
    }
    let mut attr = lfs.vget(ino).expect("vget").attr;
    attr.size = 300 * 4096;
    lfs.update(ino, &attr).expect("update");
    lfs.unmount().expect("unmount");

    let counting = Arc::new(disk::CountingDisk::new(MemDisk::from_bytes(disk.snapshot())));
    let options = MountOptions { cache_bytes: 4 << 20, ..MountOptions::default() };
    let mut lfs = Lfs::mount(counting.clone(), options).expect("mount");
    let reads = || counting.reads();
    let mut want: Vec<Vec<u8>> = (0..300).map(|lbn| pattern(ino, lbn, 4096)).collect();
    // Dirty in the cache (newer than the disk), moved to a new address on
    // disk, and a hole: each breaks a run.
    want[10] = vec![0xaa; 4096];
    lfs.write_block(ino, 10, 0, &want[10]).expect("overwrite, left dirty");
    want[200] = vec![0xbb; 4096];
    lfs.write_block(ino, 200, 0, &want[200]).expect("overwrite");
    lfs.sync().expect("sync moves block 200");
    lfs.free_blocks(ino, 100, 100).expect("punch block 100");
    want[100] = vec![0; 4096];
    lfs.write_block(ino, 150, 0, &want[150]).expect("rewrite block 150, left dirty");

    let before = reads();
    let mut all = vec![0u8; 300 * 4096];
    lfs.read_blocks(ino, 0, &mut all).expect("clustered read");
    let reads = reads() - before;
    for (lbn, block) in all.chunks_exact(4096).enumerate() {
        assert_eq!(block, &want[lbn][..], "block {lbn}");
    }
    assert!(reads < 40, "300 blocks in a few runs, not one read each: {reads} reads");
    let mut part = vec![0u8; 7 * 4096];
    lfs.read_blocks(ino, 97, &mut part).expect("read across the hole");
    for (k, block) in part.chunks_exact(4096).enumerate() {
        assert_eq!(block, &want[97 + k][..], "block {}", 97 + k);
    }
    assert!(lfs.read_blocks(ino, 0, &mut [0u8; 100]).is_err(), "a buffer of part of a block is refused");
}

#[test]
fn inodes_share_a_segment_with_their_files_data() {
    // 400 one-block files written at once span several 64-block segments.
    // Placed after the whole batch, the inodes filled segments of their own;
    // now each segment ends with the full inode blocks of the files whose
    // data it holds, and only the odd inodes (fewer than a block's worth)
    // wait for the next segment.
    let disk = fresh(8 << 20, MkfsOptions { block_size: 4096, segment_size: 256 << 10 });
    let mut lfs = mount_mem(&disk);
    let files: Vec<Ino> = (0..400).map(|_| new_file(&mut lfs)).collect();
    lfs.sync().expect("sync");
    for &ino in &files {
        lfs.write_block(ino, 0, 0, &pattern(ino, 0, 4096)).expect("write");
    }
    lfs.sync().expect("sync");
    let mut together = 0;
    for &ino in &files {
        let data = lfs.pointer(ino, 0).expect("pointer");
        let inode = lfs.ifile.tables.entry(ino).expect("an inode map entry").daddr;
        assert!(data.is_some() && inode.is_some(), "inode {ino} written");
        if lfs.seg_of(data) == lfs.seg_of(inode) {
            together += 1;
        }
    }
    assert!(together * 10 >= files.len() * 7, "only {together} of {} inodes beside their data", files.len());
    let mut buf = vec![0u8; 4096];
    for &ino in &files {
        lfs.read_block(ino, 0, &mut buf).expect("read");
        assert_eq!(buf, pattern(ino, 0, 4096), "file {ino}");
    }
}

#[test]
fn a_few_segments_of_file_data_are_written_behind_unless_a_directory_operation_waits() {
    let (disk, mut lfs, ino) = one_synced_file(8 << 20);
    // 64 KiB segments: sixty-four blocks are WRITE_BEHIND_SEGMENTS' worth;
    // sixty-two data blocks and the indirect block above the last fifty
    // are sixty-three.
    for lbn in 0..62 {
        lfs.write_block(ino, lbn, 0, &pattern(ino, lbn, 4096)).expect("write");
    }
    assert_eq!(lfs.cache.dirty_count(), 63);
    assert!(!lfs.write_behind_due(), "less than four segments wait for more");
    lfs.write_block(ino, 62, 0, &pattern(ino, 62, 4096)).expect("write");
    assert!(lfs.write_behind_due());
    let before = lfs.stats().partial_segments;
    lfs.write_behind().expect("write behind");
    assert_eq!(lfs.cache.dirty_count(), 0, "everything written");
    assert!(lfs.stats().partial_segments > before);
    assert!(!lfs.write_behind_due());

    // A pending directory operation keeps the data for the writers' own
    // segment write.
    lfs.begin(crate::storage::TxKind::Create.into()).expect("begin");
    let other = new_file(&mut lfs);
    lfs.commit().expect("commit");
    for lbn in 0..72 {
        lfs.write_block(ino, lbn, 0, &pattern(other, lbn, 4096)).expect("write");
    }
    assert!(!lfs.write_behind_due(), "written behind with a directory operation pending");
    lfs.write_behind().expect("nothing due is nothing done");
    assert!(lfs.cache.dirty_count() >= 72);

    lfs.unmount().expect("unmount");
    let mut lfs = mount_mem(&disk);
    assert_blocks(&mut lfs, ino, 0..72, |lbn| pattern(other, lbn, 4096));
}

#[test]
fn a_whole_block_buffer_is_stored_as_given_clean_or_dirty() {
    let (disk, mut lfs, ino) = one_synced_file(8 << 20);
    let copy = |data: &[u8]| disk::AlignedBytes::copy_of(data);
    // Into a hole, over a dirty block, and over a clean one.
    lfs.write_whole_block(ino, 0, copy(&pattern(ino, 0, 4096))).expect("into a hole");
    lfs.write_block(ino, 1, 0, &pattern(ino, 9, 4096)).expect("write");
    lfs.write_whole_block(ino, 1, copy(&pattern(ino, 1, 4096))).expect("over a dirty block");
    lfs.write_block(ino, 2, 0, &pattern(ino, 9, 4096)).expect("write");
    lfs.sync().expect("sync");
    lfs.write_whole_block(ino, 2, copy(&pattern(ino, 2, 4096))).expect("over a clean block");
    let err = lfs.write_whole_block(ino, 3, copy(&[1u8; 100])).expect_err("a short buffer");
    assert_eq!(err.errno(), libc::EINVAL);
    assert_eq!(lfs.vget(ino).expect("vget").blocks, 3 * 4096 / 512, "three blocks counted");
    lfs.unmount().expect("unmount");
    let mut lfs = mount_mem(&disk);
    assert_blocks(&mut lfs, ino, 0..3, |lbn| pattern(ino, lbn, 4096));
    // The short buffer stored nothing.
    assert_blocks(&mut lfs, ino, [3], |_| vec![0u8; 4096]);
}

#[test]
fn the_segment_clock_tells_a_cleaner_what_cleaning_wanted_said() {
    let (_disk, mut lfs, ino) = one_synced_file(8 << 20);
    let clock = lfs.segment_clock();
    // A cleaner waiting for work sleeps through the partial segments
    // written while no cleaning is wanted.
    let waiter = {
        let (clock, seen) = (clock.clone(), clock.now());
        std::thread::spawn(move || clock.wait_until_wanted(seen, std::time::Duration::from_secs(60)))
    };
    let mut quiet_rounds = 0;
    let mut lbn = 0;
    // Fill the disk a segment at a time until cleaning is wanted; after
    // each write the clock agrees with the file system.
    loop {
        let seen = clock.now();
        for _ in 0..16 {
            lfs.write_block(ino, lbn, 0, &pattern(ino, lbn, 4096)).expect("write");
            lbn += 1;
        }
        lfs.write_behind().expect("write behind");
        lfs.sync().expect("sync");
        assert!(clock.now() > seen, "partial segments move the clock");
        let wanted = clock.cleaning_wanted();
        assert_eq!(wanted, lfs.cleaning_wanted(), "after block {lbn}");
        if wanted.wanted {
            break;
        }
        if quiet_rounds == 0 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(!waiter.is_finished(), "woken by a partial segment while no cleaning was wanted");
        quiet_rounds += 1;
        assert!(lbn < 2048, "cleaning never wanted on an 8 MiB disk");
    }
    assert!(quiet_rounds > 0, "cleaning was wanted from the start");
    let joined = std::time::Instant::now();
    assert!(waiter.join().expect("waiter") > 0);
    assert!(joined.elapsed() < std::time::Duration::from_secs(30), "not woken when cleaning was wanted");
    // Once the file system is gone, a waiting cleaner hears of it at once.
    assert!(!clock.is_closed());
    lfs.unmount().expect("unmount");
    drop(lfs);
    assert!(clock.is_closed());
    let started = std::time::Instant::now();
    clock.wait(clock.now(), std::time::Duration::from_secs(60));
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "a closed clock does not sleep");
}

#[test]
fn the_write_cost_is_per_byte_of_file_data_with_the_metadata_as_work() {
    let (_disk, mut lfs, _) = one_synced_file(8 << 20);
    let before = lfs.cleaner_report().total;
    assert_eq!(before.user_data_bytes_written, 0, "an empty file has no data");
    assert_eq!(before.write_cost(), None, "no data, no cost");
    // 20 blocks: beyond the direct pointers, so an indirect block goes too.
    file_in_order(&mut lfs, 20);
    let written = lfs.cleaner_report().total.since(&before);
    assert_eq!(written.user_data_bytes_written, 20 * 4096);
    // Summary, indirect block, inode block and the checkpoint's ifile.
    assert!(written.user_bytes_written >= 24 * 4096, "{written:?}");
    let cost = written.write_cost().expect("data was written");
    let expected = written.user_bytes_written as f64 / (20.0 * 4096.0);
    assert!((cost - expected).abs() < 1e-9, "nothing cleaned: the log per byte of data, {cost}");
}

#[test]
fn a_damaged_indirect_block_is_refused_by_reads_and_by_the_cleaner() {
    use crate::lfs::clean::{BlockKind, BlockRef, Destination, MarkBlock};
    let (disk, mut lfs, _) = one_synced_file(8 << 20);
    let ino = file_in_order(&mut lfs, 20);
    let daddr = lfs.pointer(ino, -12).expect("pointer");
    assert!(daddr.is_some(), "the file has a single indirect block");
    let version = lfs.imap_entry(ino).expect("the inode map").expect("an entry").version;
    lfs.unmount().expect("unmount");
    let mut image = disk.snapshot();
    // One flipped bit in the first pointer (data block 12's address).
    image[daddr.get() as usize * 4096] ^= 1;
    let mut lfs = mount_mem(&Arc::new(MemDisk::from_bytes(image)));
    let mut buf = vec![0u8; 4096];
    let read = lfs.read_block(ino, 12, &mut buf);
    assert_eq!(read.map_err(|e| e.errno()), Err(libc::EIO), "not another block's contents");
    // The cleaner would reseal it on the move: it must refuse instead.
    let block = BlockRef { ino, version, kind: BlockKind::Block(-12), daddr, age: 0 };
    let moved = lfs.markv(&[MarkBlock { block, data: None }], Destination::Shared);
    assert_eq!(moved.map(|m| m.moved).map_err(|e| e.errno()), Err(libc::EIO));
    // The direct blocks are untouched.
    assert_blocks(&mut lfs, ino, 0..12, |lbn| pattern(ino, lbn, 4096));
}

/// The cleaner moves one block of a file that a truncate or a collapsed
/// range changed in memory only, and the power fails before the next
/// segment write: the file comes back whole as it was on disk, or as it
/// was changed, never as the changed inode over the old indirect blocks
/// (freed blocks still reached, or moved blocks read as zeros).
#[test]
fn a_cleaner_move_never_writes_an_inode_a_truncate_or_collapse_left_in_memory() {
    use crate::lfs::clean::{BlockKind, BlockRef, Destination, MarkBlock};
    for collapse in [false, true] {
        let (disk, mut lfs, _) = one_synced_file(8 << 20);
        let ino = file_in_order(&mut lfs, 40);
        let mut attr = lfs.vget(ino).expect("vget").attr;
        attr.size = 40 * 4096;
        lfs.update(ino, &attr).expect("size");
        lfs.sync().expect("sync");
        let old = |lbn: Lbn| pattern(ino, lbn, 4096);
        let (kept, changed): (Lbn, Box<dyn Fn(Lbn) -> Vec<u8>>) = if collapse {
            lfs.free_blocks(ino, 2, 2).expect("free block 2");
            lfs.move_blocks(ino, 3, 2, 37).expect("collapse block 2 out");
            (39, Box::new(move |lbn| pattern(ino, if lbn < 2 { lbn } else { lbn + 1 }, 4096)))
        } else {
            lfs.free_blocks(ino, 20, u64::MAX).expect("truncate");
            (20, Box::new(old))
        };
        attr.size = kept as u64 * 4096;
        lfs.update(ino, &attr).expect("size");
        let version = lfs.imap_entry(ino).expect("the inode map").expect("an entry").version;
        let daddr = lfs.pointer(ino, 0).expect("pointer");
        let block = BlockRef { ino, version, kind: BlockKind::Block(0), daddr, age: 0 };
        let moved = lfs.markv(&[MarkBlock { block, data: None }], Destination::Shared).expect("markv");
        assert_eq!(moved.moved, 1, "block 0 is live");
        lfs.writer.io.wait_idle().expect("the move reached the disk");

        let mut after = mount_mem(&crash_image(&disk));
        let blocks = (after.vget(ino).expect("vget").attr.size / 4096) as Lbn;
        if blocks == 40 {
            assert_blocks(&mut after, ino, 0..40, old);
        } else {
            assert_eq!(blocks, kept, "collapse {collapse}: the size is the old or the new one");
            assert_blocks(&mut after, ino, 0..kept, changed);
            for lbn in kept..40 {
                assert!(after.pointer(ino, lbn).expect("pointer").is_none(), "block {lbn} past the end");
            }
        }
        assert_live_bytes_are_exact(&mut after);
    }
}

#[test]
fn part_of_a_block_reads_the_same_bytes_cached_or_not_and_never_past_its_end() {
    let (disk, mut lfs, ino) = one_synced_file(8 << 20);
    let data = pattern(ino, 3, 4096);
    lfs.write_block(ino, 3, 0, &data).expect("write");
    let mut part = [0u8; 512];
    lfs.read_block_part(ino, 3, 1024, &mut part).expect("cached");
    assert_eq!(part[..], data[1024..1536]);
    lfs.unmount().expect("unmount");
    let mut lfs = mount_mem(&disk);
    lfs.read_block_part(ino, 3, 3584, &mut part).expect("from disk");
    assert_eq!(part[..], data[3584..]);
    lfs.read_block_part(ino, 9, 0, &mut part).expect("a hole");
    assert_eq!(part, [0u8; 512]);
    let past = lfs.read_block_part(ino, 3, 3585, &mut part);
    assert_eq!(past.map_err(|e| e.errno()), Err(libc::EINVAL));
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_older_one_and_says_so() {
    let (disk, mut lfs, ino) = one_synced_file(16 << 20);
    lfs.write_block(ino, 0, 0, &pattern(ino, 0, 4096)).expect("write");
    lfs.sync().expect("the older checkpoint");
    let older = lfs.superblock().checkpoint;
    lfs.write_block(ino, 1, 0, &pattern(ino, 1, 4096)).expect("write");
    lfs.sync().expect("the newest checkpoint");
    let newest = lfs.superblock().checkpoint;
    assert!(newest.serial > older.serial);
    // A crash now (no unmount: the two superblock copies keep the two
    // checkpoints), then the block with the newest ifile inode is lost.
    let crashed = crash_image(&disk);
    drop(lfs);
    let at = newest.ifile_daddr.get() * 4096;
    crashed.write_at(at, &vec![0xA5; 4096]).expect("damage");
    let mut after = mount_mem(&crashed);
    let fallback = after.checkpoint_fallback().expect("the mount says it fell back").clone();
    assert_eq!((fallback.newest.serial, fallback.used.serial), (newest.serial, older.serial));
    assert!(!fallback.why.is_empty());
    // Roll-forward from the older checkpoint finds the log written after it.
    assert_blocks(&mut after, ino, 0..1, |lbn| pattern(ino, lbn, 4096));
    // An undamaged mount reports no fallback.
    assert!(mount_mem(&fresh(8 << 20, small_options())).checkpoint_fallback().is_none());
}

/// A file system made on a simulated disk's clock carries that clock's
/// times, not the host's: the lab's runs write the same bytes each time.
#[test]
fn mkfs_on_a_virtual_clock_takes_its_times_from_it() {
    let clock = Arc::new(disk::VirtualClock::new());
    clock.advance(5_000_000_000);
    let at = crate::time::TimeSource::virtual_clock(clock);
    let disk = Arc::new(MemDisk::new(8 << 20));
    mkfs_at(disk.clone(), &small_options(), &at).expect("mkfs");
    let expected = crate::time::VIRTUAL_EPOCH_NS + 5_000_000_000;
    let mut lfs = Lfs::mount(disk, MountOptions::deterministic(at)).expect("mount");
    assert_eq!(lfs.superblock().created, expected);
    assert_eq!(lfs.superblock().checkpoint.time, expected);
    let ifile = lfs.inode_of(IFILE_INO).expect("ifile").attr;
    assert_eq!((ifile.mtime, ifile.btime), (expected, expected));
}

#[test]
fn default_segment_is_one_mebibyte_or_an_eighth_of_a_small_device() {
    let segment = |size, bs| MkfsOptions::for_device(size, bs, None).map(|o| o.segment_size);
    assert_eq!(segment(64 << 20, 4096), Ok(1 << 20));
    assert_eq!(segment(4 << 20, 4096), Ok(512 << 10));
    assert_eq!(segment(64 << 20, 65536), Ok(1 << 20));
}

#[test]
fn bad_geometry_is_refused() {
    let geometry = MkfsOptions::for_device;
    assert!(geometry(64 << 20, 3000, None).is_err());
    assert!(geometry(64 << 20, 2048, None).is_err());
    assert!(geometry(64 << 20, 128 << 10, None).is_err());
    assert!(geometry(64 << 20, 4096, Some(3 << 20)).is_err());
    assert!(geometry(64 << 20, 4096, Some(32 << 10)).is_err());
    assert!(geometry(64 << 20, 4096, Some(16 << 20)).is_err());
    assert!(geometry(256 << 10, 4096, None).is_err());
    assert_eq!(geometry(64 << 20, 4096, Some(8 << 20)).map(|o| o.segment_size), Ok(8 << 20));
}

/// A segment write that fails part way has marked written what it never
/// wrote: the mount must not go on as if nothing happened (a second fsync
/// finding nothing dirty and saying all is well), and what an fsync made
/// durable before the failure must survive a crash.
#[test]
fn a_failed_segment_write_leaves_the_mount_read_only_and_keeps_what_was_synced() {
    let (disk, mut lfs, kept) = one_synced_file(16 << 20);
    write_and_fsync(&mut lfs, kept, 8);
    let lost = new_file(&mut lfs);
    for lbn in 0..30 {
        lfs.write_block(lost, lbn, 0, &pattern(lost, lbn, 4096)).expect("write");
    }
    // No clean segment to continue in: the write fails when it must
    // leave the head's segment, after placing what fitted there.
    let head = lfs.writer.log.head();
    lfs.writer.log.set_next_segment(head.segment);
    let first = lfs.fsync(lost, false).expect_err("the segment write fails");
    assert_eq!(first.errno(), libc::ENOSPC);
    // The cause goes away (a transient device error would): the blocks
    // the failed write dropped are still lost.
    lfs.writer.log.set_next_segment(head.next_segment);
    let again = lfs.fsync(lost, false).expect_err("a second fsync must not report success");
    assert_eq!(again.errno(), libc::EIO);
    assert!(lfs.writer_failure().is_some(), "the failure is kept");
    let write = lfs.write_block(lost, 40, 0, &[1u8; 4096]).expect_err("writes are refused");
    assert_eq!(write.errno(), libc::EIO);
    assert_eq!(lfs.sync().expect_err("sync is refused").errno(), libc::EIO);
    // Reads still work.
    assert_blocks(&mut lfs, kept, 0..8, |lbn| pattern(kept, lbn, 4096));
    assert_eq!(lfs.unmount().expect_err("no clean unmount").errno(), libc::EIO);
    let mut after = mount_mem(&crash_image(&disk));
    assert_eq!(after.vget(kept).expect("vget").attr.size, 8 * 4096);
    assert_blocks(&mut after, kept, 0..8, |lbn| pattern(kept, lbn, 4096));
    assert_live_bytes_are_exact(&mut after);
}

/// A free list that loops (its ifile block sealed, so only the list says
/// it is wrong) is made again at mount: three files made after get three
/// numbers, where the loop gave the first number twice.
#[test]
fn a_free_list_that_loops_is_made_again_at_mount() {
    let disk = fresh(16 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let made: Vec<Ino> = (0..4).map(|_| new_file(&mut lfs)).collect();
    lfs.sync().expect("sync");
    let (a, b) = (made[0], made[1]);
    for &ino in &made {
        lfs.vfree(ino).expect("vfree");
    }
    lfs.sync().expect("sync");
    lfs.imap_ready(a).expect("the inode map");
    lfs.imap_ready(b).expect("the inode map");
    let t = &mut lfs.ifile.tables;
    t.set_free_head(a);
    for (ino, next) in [(a, b), (b, a)] {
        let entry = t.entry(ino).expect("resident");
        t.imap.set(ino, layout::ImapEntry { next_free: next as u32, ..entry }).expect("resident");
        t.mark_dirty(t.imap_lbn(ino)).expect("resident");
    }
    assert!(lfs.check_free_list().expect("the inode map").is_err());
    // A checkpoint, not sync, which asserts the invariants in debug builds.
    lfs.checkpoint(false).expect("checkpoint the loop to the disk");
    drop(lfs);
    let mut lfs = mount_mem(&disk);
    let again: Vec<Ino> = (0..3).map(|_| new_file(&mut lfs)).collect();
    let mut distinct = again.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "numbers given: {again:?}");
    assert_eq!(lfs.ifile.tables.check_invariants(), Ok(()));
}

/// An ifile inode whose size names blocks it does not have (a crafted
/// image): mount refuses its checkpoint by name at the first hole, rather
/// than reading every missing block as zeros into memory first.
#[test]
fn an_ifile_whose_size_names_holes_is_refused_at_mount() {
    use crate::format::inode::{Inode, INODE_SIZE};
    let disk = fresh(16 << 20, small_options());
    let mut lfs = mount_mem(&disk);
    let bs = lfs.block_size as u64;
    lfs.unmount().expect("unmount");
    let newest = crate::lfs::inspect::superblock_copies(disk.as_ref())
        .into_iter()
        .filter_map(|c| c.result.ok())
        .max_by_key(|sb| sb.checkpoint.serial)
        .expect("a superblock");
    let daddr = newest.checkpoint.ifile_daddr;
    let mut block = vec![0u8; bs as usize];
    disk.read_at(daddr.byte_offset(bs), &mut block).expect("read");
    let slot = block
        .chunks_exact_mut(INODE_SIZE)
        .find(|s| Inode::decode(s).is_ok_and(|i| i.ino == IFILE_INO))
        .expect("the ifile's inode");
    let mut ifile = Inode::decode(slot).expect("decode");
    let written = ifile.attr.size / bs;
    ifile.attr.size += 1000 * bs;
    ifile.encode(slot).expect("encode");
    disk.write_at(daddr.byte_offset(bs), &block).expect("write");
    // The checkpoint is refused (a mount falls back to an older one whose
    // ifile is sound; both here name the same).
    let why = match Lfs::mount(disk.clone(), MountOptions::default()) {
        Ok(lfs) => lfs.checkpoint_fallback().expect("the newest checkpoint is refused").why.clone(),
        Err(e) => e.to_string(),
    };
    assert!(why.contains(&format!("hole at block {written}")), "{why}");
}

/// A cleaner's request naming one block many times plans one read of it:
/// a client must not size the daemon's buffer by repeating a reference.
#[test]
fn a_block_named_many_times_in_a_markv_is_read_once() {
    use crate::lfs::clean::{BlockKind, BlockRef, MarkBlock};
    let (disk, mut lfs, _) = one_synced_file(8 << 20);
    let ino = file_in_order(&mut lfs, 4);
    lfs.unmount().expect("unmount");
    let mut lfs = mount_mem(&disk);
    let daddr = lfs.pointer(ino, 1).expect("pointer");
    let version = lfs.imap_entry(ino).expect("the inode map").expect("an entry").version;
    let block = BlockRef { ino, version, kind: BlockKind::Block(1), daddr, age: 0 };
    let blocks = vec![MarkBlock { block, data: None }; 10_000];
    let (fetches, owners) = lfs.live_block_fetches(&blocks);
    assert_eq!((fetches.list().len(), owners), (1, vec![0]));
}

/// A mount with room for one block of the inode map beside the blocks
/// being changed or written: the rest is read from the ifile on demand.
fn mount_paged(disk: &Arc<MemDisk>) -> Lfs {
    let options = MountOptions { cache_bytes: 4 << 20, imap_resident_bytes: 0, ..MountOptions::default() };
    Lfs::mount(disk.clone(), options).expect("mount")
}

/// With the inode map read a block at a time (1,500 numbers, six map
/// blocks, one kept), files made and freed at random survive syncs,
/// crashes and remounts: every file synced reads back, every number freed
/// before the sync is free, new numbers are never live ones, the free list
/// and the usage table stay exact.
#[test]
fn an_inode_map_read_a_block_at_a_time_loses_nothing_across_crashes_and_remounts() {
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x1a9);
    let disk = fresh(48 << 20, small_options());
    let mut lfs = mount_paged(&disk);
    let mut live: BTreeMap<Ino, u8> = BTreeMap::new();
    let mut synced: BTreeMap<Ino, u8> = BTreeMap::new();
    let mut changed_since_sync: Vec<Ino> = Vec::new();
    let check = |after: &mut Lfs, synced: &BTreeMap<Ino, u8>, untouched: &dyn Fn(Ino) -> bool, what: &str| {
        let mut buf = vec![0u8; 4096];
        for (&ino, &byte) in synced.iter().filter(|(&ino, _)| untouched(ino)) {
            after.read_block(ino, 0, &mut buf).unwrap_or_else(|e| panic!("{what}: inode {ino}: {e}"));
            assert!(buf.iter().all(|&b| b == byte), "{what}: inode {ino} reads back");
        }
        assert_eq!(after.check_free_list().expect("the map"), Ok(()), "{what}");
        let mut addressed = Vec::new();
        after
            .imap_scan(|ino, e| {
                if e.daddr.is_some() {
                    addressed.push(ino)
                }
            })
            .expect("the map");
        for ino in addressed.iter().filter(|&&ino| untouched(ino)) {
            assert!(synced.contains_key(ino), "{what}: inode {ino}, freed before the sync, has an address");
        }
        assert_eq!(after.ifile.tables.check_invariants(), Ok(()), "{what}");
        assert_live_bytes_are_exact(after);
    };
    for step in 0..3000u32 {
        // Creates first, then as many frees as creates, scattered over
        // every block of the map.
        if live.len() < 20 || rng.gen_bool(if step < 1500 { 0.9 } else { 0.5 }) {
            let ino = new_file(&mut lfs);
            assert!(!live.contains_key(&ino), "step {step}: inode {ino} handed out while live");
            let byte = (step % 251) as u8 + 1;
            lfs.write_block(ino, 0, 0, &[byte; 4096]).expect("write");
            live.insert(ino, byte);
            changed_since_sync.push(ino);
        } else {
            let ino = *live.keys().nth(rng.gen_range(0..live.len())).expect("nonempty");
            lfs.free_blocks(ino, 0, u64::MAX).expect("free blocks");
            lfs.vfree(ino).expect("vfree");
            live.remove(&ino);
            changed_since_sync.push(ino);
        }
        if step % 250 == 249 {
            lfs.sync().expect("sync");
            synced = live.clone();
            changed_since_sync.clear();
            let crashed = crash_image(&disk);
            let mut after = mount_paged(&crashed);
            check(&mut after, &synced, &|_| true, &format!("crash right after the sync of step {step}"));
            // What recovery rebuilt in memory was written: a mount after it
            // finds the same.
            after.unmount().expect("unmount after recovery");
            let mut after = mount_paged(&crashed);
            check(&mut after, &synced, &|_| true, &format!("the mount after recovery at step {step}"));
            let fresh_ino = after.valloc(ROOT_INO, kind::REG).expect("valloc").ino;
            assert!(!synced.contains_key(&fresh_ino), "step {step}: a live number {fresh_ino} handed out");
        }
        if step % 250 == 90 {
            // Roll-forward has inodes to install, and the free list to
            // thread again.
            let newest = *live.keys().next_back().expect("nonempty");
            lfs.fsync(newest, false).expect("fsync");
        }
        if step % 250 == 99 && step > 250 {
            // Mid-way: what changed since the sync may or may not be there.
            let changed: Vec<Ino> = changed_since_sync.clone();
            let crashed = crash_image(&disk);
            let mut after = mount_paged(&crashed);
            let untouched = |ino: Ino| !changed.contains(&ino);
            check(&mut after, &synced, &untouched, &format!("crash at step {step}"));
            after.unmount().expect("unmount after recovery");
            let mut after = mount_paged(&crashed);
            check(&mut after, &synced, &untouched, &format!("the mount after recovery at step {step}"));
        }
    }
    let lfs_in_use = lfs.ifile.tables.inodes_in_use();
    lfs.unmount().expect("unmount");
    let mut again = mount_paged(&disk);
    let (resident, _) = again.ifile.tables.imap.resident();
    assert!(
        resident < again.ifile.tables.imap.nblocks() as usize,
        "only part of the map stays in memory: {resident} of {} blocks",
        again.ifile.tables.imap.nblocks()
    );
    check(&mut again, &live, &|_| true, "the remount");
    assert_eq!(again.ifile.tables.inodes_in_use(), lfs_in_use, "the count kept while running");
    let mut in_use = 0;
    again.imap_scan(|_, e| in_use += u64::from(e.daddr.is_some())).expect("the map");
    assert_eq!(in_use, live.len() as u64, "every live file, nothing else, has an address");
    assert_eq!(again.ifile.tables.inodes_in_use(), in_use, "the count kept at mount");
}

/// Each segment in use with its live inodes: number, version, address.
type LiveInodes = Vec<(u64, Vec<(Ino, u32, Daddr)>)>;

/// The live inodes of every segment in use, as the cleaner sees them.
fn live_inodes_by_segment(lfs: &mut Lfs) -> LiveInodes {
    use crate::lfs::clean::BlockKind;
    let table = lfs.segment_table();
    let mut out = Vec::new();
    for (seg, _) in table.segments.iter().enumerate().filter(|(_, s)| !s.clean) {
        let refs = lfs.segment_refs(seg as u64).expect("segment refs");
        let mut inodes: Vec<(Ino, u32, Daddr)> = refs
            .iter()
            .filter(|r| matches!(r.kind, BlockKind::Inode))
            .map(|r| (r.ino, r.version, r.daddr))
            .collect();
        inodes.sort_unstable();
        out.push((seg as u64, inodes));
    }
    out
}

/// With the map mostly on disk the cleaner reads a segment's inode blocks
/// and asks the map of the inodes in them; it finds exactly the live
/// inodes the scan of a resident map finds, and still does when an inode
/// slot is damaged (then it scans the whole map after all).
#[test]
fn the_cleaner_finds_the_same_live_inodes_with_the_map_in_memory_or_on_disk() {
    let disk = fresh(48 << 20, small_options());
    let mut lfs = mount_paged(&disk);
    let inos: Vec<Ino> = (0..1500).map(|_| new_file(&mut lfs)).collect();
    lfs.sync().expect("sync");
    for &ino in inos.iter().step_by(3) {
        lfs.vfree(ino).expect("vfree");
    }
    for (_, &ino) in inos.iter().enumerate().filter(|(i, _)| i % 7 == 1 && i % 3 != 0) {
        let attr = InodeAttr { mode: kind::REG | 0o600, nlink: 1, ..InodeAttr::default() };
        lfs.update(ino, &attr).expect("an inode written again elsewhere");
    }
    lfs.unmount().expect("unmount");
    let whole = live_inodes_by_segment(&mut mount_mem(&disk));
    let paged = live_inodes_by_segment(&mut mount_paged(&disk));
    let live: usize = whole.iter().map(|(_, inodes)| inodes.len()).sum();
    assert_eq!(live, 1001, "the live files and the ifile");
    assert_same_live_inodes(&paged, &whole);

    // A live inode's slot damaged: from its block alone the cleaner could
    // not tell it is there.
    let victim = inos[1];
    let daddr = mount_mem(&disk).imap_entry(victim).expect("map").expect("entry").daddr;
    let mut block = vec![0u8; 4096];
    disk.read_at(daddr.byte_offset(4096), &mut block).expect("read");
    let slot = block
        .chunks_exact(crate::format::inode::INODE_SIZE)
        .position(|s| Inode::decode(s).is_ok_and(|i| i.ino == victim))
        .expect("the victim's slot");
    let at = daddr.byte_offset(4096) + (slot * crate::format::inode::INODE_SIZE) as u64 + 40;
    disk.write_at(at, &[0xa5; 8]).expect("damage");
    let whole = live_inodes_by_segment(&mut mount_mem(&disk));
    let paged = live_inodes_by_segment(&mut mount_paged(&disk));
    assert!(whole.iter().any(|(_, inodes)| inodes.iter().any(|&(ino, _, _)| ino == victim)));
    assert_same_live_inodes(&paged, &whole);
}

/// Says which live inodes one answer has and the other lacks.
fn assert_same_live_inodes(paged: &LiveInodes, whole: &LiveInodes) {
    use std::collections::BTreeSet;
    let set = |refs: &LiveInodes| -> BTreeSet<(u64, Ino, u32, Daddr)> {
        refs.iter().flat_map(|(seg, inodes)| inodes.iter().map(move |&(i, v, d)| (*seg, i, v, d))).collect()
    };
    let (paged, whole) = (set(paged), set(whole));
    let missing: Vec<_> = whole.difference(&paged).take(5).collect();
    let extra: Vec<_> = paged.difference(&whole).take(5).collect();
    assert!(missing.is_empty() && extra.is_empty(), "map on disk: missing {missing:?}, extra {extra:?}");
}
