//! Model tests over `Ffs` on a memory disk, in both integrity modes:
//! random operation sequences with a cache small enough that write-back
//! happens mid-sequence, and remounts among the ops. `FSLAB_MODEL_SEEDS`,
//! `FSLAB_MODEL_OPS` scale the run; `FSLAB_MODEL_SEED` replays one seed.

use fslab::ffs::Integrity;
use testkit::harness::{env_or, run, FfsSubject, RunConfig};
use testkit::ops::Weights;

const DISK: u64 = 32 << 20;
const CACHE: u64 = 1 << 20;

fn run_seeds(integrity: Integrity, default_seeds: u64, default_ops: u64) {
    let seeds = env_or("FSLAB_MODEL_SEEDS", default_seeds);
    let ops = env_or("FSLAB_MODEL_OPS", default_ops) as usize;
    let one = std::env::var("FSLAB_MODEL_SEED").ok().and_then(|s| s.parse::<u64>().ok());
    let list: Vec<u64> = match one {
        Some(seed) => vec![seed],
        None => (0..seeds).map(|i| 0x666673 + i).collect(),
    };
    for &seed in &list {
        let subject = FfsSubject::small(DISK, CACHE, integrity).expect("mkfs and mount a fresh FFS");
        let cfg = RunConfig {
            seed,
            ops,
            check_every: env_or("FSLAB_CHECK_EVERY", 100) as usize,
            weights: Weights::with_remount(),
        };
        let (stats, _) = run(subject, cfg);
        eprintln!("ffs {integrity:?} seed {seed:#x}: {stats:?}");
    }
}

#[test]
fn random_namespace_operations_match_the_model_on_ffs_sync() {
    run_seeds(Integrity::Sync, 4, 1500);
}

#[test]
fn random_namespace_operations_match_the_model_on_ffs_async() {
    run_seeds(Integrity::Async, 4, 1500);
}
