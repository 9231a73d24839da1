//! Model tests over `MemStorage`: the namespace alone, compared with the
//! model after every step. `FSLAB_MODEL_SEEDS` and `FSLAB_MODEL_OPS` scale
//! the run; `FSLAB_MODEL_SEED` runs one seed (to replay a failure).

use testkit::harness::{env_or, run, MemSubject, RunConfig};
use testkit::ops::Weights;

fn run_seeds(default_seeds: u64, default_ops: u64, scale: u64) {
    let seeds = env_or("FSLAB_MODEL_SEEDS", default_seeds);
    let ops = env_or("FSLAB_MODEL_OPS", default_ops) as usize * scale as usize;
    let first = std::env::var("FSLAB_MODEL_SEED").ok().and_then(|s| s.parse::<u64>().ok());
    let list: Vec<u64> = match first {
        Some(seed) => vec![seed],
        None => (0..seeds).map(|i| 0x6d656d00 + i).collect(),
    };
    let list_first = list[0];
    for seed in list {
        let cfg = RunConfig { seed, ops, check_every: 100, weights: Weights::default() };
        let (stats, outcomes) = run(MemSubject::new(), cfg);
        eprintln!("mem seed {seed:#x}: {stats:?}");
        if seed == list_first {
            eprintln!("outcomes: {outcomes:#?}");
        }
    }
}

#[test]
fn random_namespace_operations_match_the_model_on_mem_storage() {
    run_seeds(8, 2000, 1);
}

#[test]
#[ignore = "long: 10x the default ops per seed"]
fn random_namespace_operations_match_the_model_on_mem_storage_long() {
    run_seeds(8, 2000, 10);
}
