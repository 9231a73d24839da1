//! The fuzz targets' bodies, run with the stable toolchain as part of the
//! ordinary test suite: each target over the seed corpus and over seeded
//! mutations of it (the bits libFuzzer would flip first), so that the
//! targets keep building and working between fuzzing campaigns, and a
//! panic or hang they find again fails `cargo test`. Real fuzzing (coverage
//! guided, nightly) is `cargo +nightly fuzz run` (README.md).
//!
//! Also: the resealing reaches past the indirect blocks' checksums (format
//! version 3 binds them to their file and position; a reseal that ignored
//! them stopped every mutation of a file's block map at the checksum).

use disk::BlockDevice;
use fslab::format::blockno::{check_indirect, is_indirect};
use fslab::lfs::{Lfs, MountOptions};
use fslab::ufs::FileSystem;
use fslab_fuzz::{ffs, finfo_blocks, fsck_image, image, mount_and_walk, reseal, seed_images, BS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Mutations of each seed per target.
const MUTATIONS: usize = 48;
/// The longest one run of a target body may take (libFuzzer's `-timeout`
/// in README.md is 20 s; a run here takes milliseconds).
const LIMIT: Duration = Duration::from_secs(20);

/// A fuzz target: its name and its body.
type Target = (&'static str, fn(&[u8]));

/// `seed` with a few bits flipped in a few of its non-zero blocks.
fn mutate(seed: &[u8], rng: &mut SmallRng) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    let used: Vec<usize> = bytes
        .chunks_exact(BS)
        .enumerate()
        .filter(|(_, b)| b.iter().any(|&x| x != 0))
        .map(|(i, _)| i)
        .collect();
    for _ in 0..rng.gen_range(1..=3) {
        let block = used[rng.gen_range(0..used.len())];
        for _ in 0..rng.gen_range(1..=16) {
            let at = block * BS + rng.gen_range(0..BS);
            bytes[at] ^= 1 << rng.gen_range(0..8);
        }
    }
    bytes
}

/// Runs every target of `targets` on each seed of `seeds` and on
/// [`MUTATIONS`] mutations of it, each run bounded by [`LIMIT`]; returns
/// how many runs there were.
fn run_targets(seeds: &[(&'static str, Vec<u8>)], targets: &[Target], seed: u64) -> usize {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut runs = 0;
    for (name, seed) in seeds {
        let inputs: Vec<Vec<u8>> =
            std::iter::once(seed.clone()).chain((0..MUTATIONS).map(|_| mutate(seed, &mut rng))).collect();
        for &(target, body) in targets {
            for (i, input) in inputs.iter().enumerate() {
                let started = Instant::now();
                body(input);
                let took = started.elapsed();
                assert!(took < LIMIT, "{target} on seed {name}, input {i}: {took:?}");
                runs += 1;
            }
        }
    }
    runs
}

#[test]
fn every_target_survives_the_seed_corpus_and_mutations_of_it() {
    let seeds = seed_images().expect("the seed images build");
    assert_eq!(seeds.len(), 4);
    let targets: [Target; 4] = [
        ("mount", |d| mount_and_walk(image(d, false))),
        ("mount_sealed", |d| mount_and_walk(image(d, true))),
        ("fsck", |d| {
            fsck_image(image(d, false));
        }),
        ("fsck_sealed", |d| {
            fsck_image(image(d, true));
        }),
    ];
    let runs = run_targets(&seeds, &targets, 0xf022);
    eprintln!("{runs} runs of the fuzz targets' bodies");
}

#[test]
fn every_ffs_target_survives_the_ffs_seed_corpus_and_mutations_of_it() {
    let seeds = ffs::seed_images().expect("the FFS seed images build");
    assert_eq!(seeds.len(), 4);
    let targets: [Target; 2] = [
        ("fsck_ffs", |d| ffs::fsck_and_walk(ffs::image(d, false))),
        ("fsck_ffs_sealed", |d| ffs::fsck_and_walk(ffs::image(d, true))),
    ];
    let runs = run_targets(&seeds, &targets, 0xff22);
    eprintln!("{runs} runs of the FFS fuzz targets' bodies");
}

#[test]
fn ffs_reseal_seals_a_changed_indirect_block_for_its_file_and_position() {
    let seeds = ffs::seed_images().expect("the FFS seed images build");
    let (_, populated) = seeds.iter().find(|(n, _)| *n == "ffs-populated").expect("populated seed");
    let mut bytes = populated.clone();
    let sb = fslab::ffs::Superblock::decode(&bytes[..4096], 0).expect("superblock");
    let geo = sb.geometry;
    // deep/big (130 KiB of 8 KiB blocks) has a single indirect block.
    let big = (0..geo.ninodes())
        .filter_map(|ino| {
            let at = (geo.byte_offset(geo.inode_block_addr(ino)) as usize) + geo.inode_offset_in_block(ino);
            fslab::format::inode::Inode::decode(&bytes[at..at + 256]).ok().filter(|i| i.ino == ino)
        })
        .find(|i| i.indirect[0].is_some())
        .expect("a file with an indirect block");
    let at = geo.byte_offset(big.indirect[0].get()) as usize;
    bytes[at] ^= 0x01; // the first pointer
    let lbn = -(fslab::format::blockno::NDADDR as i64);
    let tree = sb.indirect_geometry();
    assert!(tree.check(&bytes[at..at + ffs::BS], big.ino, lbn, big.indirect[0]).is_err());
    ffs::reseal(&mut bytes);
    tree.check(&bytes[at..at + ffs::BS], big.ino, lbn, big.indirect[0]).expect("resealed");
}

#[test]
fn reseal_seals_a_changed_indirect_block_for_its_file_and_position() {
    let seeds = seed_images().expect("the seed images build");
    let (_, populated) = seeds.iter().find(|(n, _)| *n == "populated").expect("populated seed");
    let mut bytes = populated.clone();
    // Every indirect block a summary names, by where it is.
    let mut indirect = Vec::new();
    for s in 0..bytes.len() / BS {
        let block = &bytes[s * BS..(s + 1) * BS];
        if u32::from_le_bytes([block[0], block[1], block[2], block[3]]) != fslab::lfs::layout::SUMMARY_MAGIC {
            continue;
        }
        for (k, (ino, lbn)) in finfo_blocks(block).into_iter().enumerate() {
            if is_indirect(lbn) {
                indirect.push((s + 1 + k, ino, lbn));
            }
        }
    }
    assert!(!indirect.is_empty(), "the populated seed has a file with an indirect block");
    for &(b, ino, lbn) in &indirect {
        let block = &mut bytes[b * BS..(b + 1) * BS];
        block[0] ^= 0x01; // the first pointer
        assert!(
            check_indirect(block, ino, lbn, fslab::format::Daddr::new(b as u64)).is_err(),
            "the change breaks the checksum"
        );
    }
    reseal(&mut bytes);
    for &(b, ino, lbn) in &indirect {
        let block = &bytes[b * BS..(b + 1) * BS];
        check_indirect(block, ino, lbn, fslab::format::Daddr::new(b as u64))
            .unwrap_or_else(|e| panic!("indirect block {lbn} of inode {ino} at {b} after reseal: {e}"));
    }
    // And the image still mounts: summaries, data checksums and the
    // superblock were sealed over the changed block.
    let dev = image(&bytes, false);
    let lfs = Lfs::mount(dev.clone() as std::sync::Arc<dyn BlockDevice>, MountOptions::default())
        .expect("the resealed image mounts");
    drop(FileSystem::new(lfs));
}
