//! Random damage: 200 damaged copies of a populated image (random bits
//! flipped in one to three of the blocks that hold anything), each checked
//! read-only and then repaired, each run bounded in time. fsck must never
//! panic, hang or run away, and must find every damage it can see.
//!
//! What fsck can see ([`guarded_blocks`]): every superblock copy (a CRC over
//! the whole block) and every block of a partial segment that holds a live
//! block or inode — its summary has a CRC over itself, and fsck checks the
//! summary's CRC over all the partial segment's blocks the first time it
//! confirms a live block from it. So file data is covered there too, though
//! a read does not check it (docs/SEMANTICS.md, "Images"). What it cannot
//! see, and need not: blocks no live structure names any more — dead
//! partial segments (old copies of data, inodes and ifile blocks, which
//! the cleaner has not yet reclaimed), and the zeros past the end of the
//! log. A flip there changes nothing anything will read.
//!
//! Measured before setting the thresholds (seed below, 200 copies): 193
//! rounds left errors (exit 4), 3 were repaired (exit 1), 4 were clean; all
//! 4 clean ones touched only dead partial segments. So: every round that
//! touches a guarded block must end with exit status 1 or 4 (a miss is a
//! checksum that is not checked), and most rounds must touch one (else the
//! image is mostly dead space and the test says little). `FSLAB_FSCK_DAMAGE`
//! changes the number of copies.

mod common;

use common::*;
use disk::{BlockDevice, MemDisk};
use fslab::format::Daddr;
use fslab::lfs::layout::Summary;
use fslab::lfs::{Lfs, MountOptions};
use fslab_check::Options;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

/// The blocks of `image` where any damage is fsck's to find (module doc).
fn guarded_blocks(image: &[u8]) -> BTreeSet<u64> {
    let dev = Arc::new(MemDisk::from_bytes(image.to_vec()));
    let sb = superblock(dev.as_ref());
    let mut guarded: BTreeSet<u64> =
        (0..sb.ncopies as usize).map(|i| sb.copy_offset(i) / BS as u64).collect();
    let mut lfs = Lfs::mount(dev, MountOptions::default()).expect("mount the undamaged image");
    let table = lfs.segment_table();
    let bps = table.blocks_per_segment;
    for (seg, state) in table.segments.iter().enumerate() {
        let seg = seg as u64;
        if state.clean {
            continue;
        }
        let refs = lfs.segment_refs(seg).expect("segment refs");
        let now = lfs.bmapv(&refs).expect("bmapv");
        let live: HashSet<u64> = refs
            .iter()
            .zip(&now)
            .filter(|(r, at)| **at == r.daddr && at.is_some())
            .map(|(r, _)| r.daddr.get())
            .collect();
        let bytes = lfs.read_segment(seg).expect("read segment");
        let mut offset = state.first_log_block;
        while offset + 1 < bps {
            let start = seg * bps + offset;
            let block = &bytes[offset as usize * BS..(offset as usize + 1) * BS];
            let Ok(summary) = Summary::decode(block, Daddr::new(start)) else { break };
            let n = summary.nblocks as u64;
            if summary.fs_id != table.fs_id || n == 0 {
                break;
            }
            if (start + 1..=start + n).any(|d| live.contains(&d)) {
                guarded.extend(start..=start + n);
            }
            offset += 1 + n;
        }
    }
    guarded
}

#[test]
fn random_damage_is_found_where_fsck_can_see_it_and_never_makes_it_panic_or_hang() {
    let (dev, _) = populated();
    let image = dev.snapshot();
    let used: Vec<usize> = image
        .chunks_exact(BS)
        .enumerate()
        .filter(|(_, b)| b.iter().any(|&x| x != 0))
        .map(|(i, _)| i)
        .collect();
    assert!(used.len() > 100, "the image holds data");
    let guarded = guarded_blocks(&image);
    let copies = testkit::harness::env_or("FSLAB_FSCK_DAMAGE", 200);
    let mut rng = SmallRng::seed_from_u64(0xdead_f5c4);
    let mut statuses = [0usize; 9];
    let (mut seen_rounds, mut seen_found) = (0, 0);
    let mut missed = Vec::new();
    for round in 0..copies {
        let mut bytes = image.clone();
        let blocks = if round % 4 == 0 { 3 } else { 1 };
        let mut damaged = Vec::new();
        for _ in 0..blocks {
            let block = used[rng.gen_range(0..used.len())];
            damaged.push(block);
            for _ in 0..rng.gen_range(1..=8) {
                let at = block * BS + rng.gen_range(0..BS);
                bytes[at] ^= 1 << rng.gen_range(0..8);
            }
        }
        let dev: Arc<MemDisk> = Arc::new(MemDisk::from_bytes(bytes));
        let started = Instant::now();
        let checked = fslab_check::check(dev.as_ref() as &dyn BlockDevice, &Options::default(), &mut |_| {});
        assert!(
            started.elapsed() < LIMIT,
            "round {round} (blocks {damaged:?}): check took {:?}",
            started.elapsed()
        );
        let started = Instant::now();
        let options = Options { repair: true, ..Options::default() };
        let status = match fslab_check::fsck(dev.clone(), &options, &mut |_| {}) {
            Ok(outcome) => outcome.exit_code() as usize,
            Err(_) => 8,
        };
        assert!(
            started.elapsed() < LIMIT,
            "round {round} (blocks {damaged:?}): fsck took {:?}",
            started.elapsed()
        );
        if let Ok(report) = checked {
            assert_eq!(
                report.is_clean(),
                status == 0,
                "round {round}: check and fsck agree on a clean image"
            );
        }
        statuses[status] += 1;
        if damaged.iter().any(|&b| guarded.contains(&(b as u64))) {
            seen_rounds += 1;
            if status != 0 {
                seen_found += 1;
            } else {
                missed.push((round, damaged));
            }
        }
    }
    eprintln!(
        "exit statuses over {copies} damaged copies: 0: {}, 1: {}, 4: {}, 8: {}; \
         {seen_found} of {seen_rounds} rounds that damaged a block fsck can see were found",
        statuses[0], statuses[1], statuses[4], statuses[8]
    );
    assert!(
        missed.is_empty(),
        "damage fsck can see went unreported in {} rounds; the first (round, blocks): {:?}",
        missed.len(),
        &missed[..missed.len().min(10)]
    );
    assert!(
        seen_rounds * 4 >= copies as usize * 3,
        "only {seen_rounds} of {copies} rounds damaged a block fsck can see: the image is mostly dead space"
    );
}
