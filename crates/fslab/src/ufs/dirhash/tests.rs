//! The parts of dirhash on their own, against brute-force models: the
//! lookup table, the free-space summary, and the budget's policy.

use super::free::FreeSpace;
use super::table::{LookupTable, MAX_OFFSET_BYTES};
use super::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[test]
fn the_table_finds_every_live_offset_under_its_name_and_reclaims_every_slot() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut table = LookupTable::new(1500, 1 << 20);
    let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut next_offset = 0u32;
    for step in 0..20_000 {
        let name = format!("n{}", rng.gen_range(0..900)).into_bytes();
        let h = table.hash(&name);
        match model.remove(&name) {
            Some(offset) => assert!(table.remove(h, offset), "step {step}: held offset not found"),
            None if !table.would_pass_three_quarters() => {
                next_offset += 4;
                assert!(table.insert(h, next_offset));
                model.insert(name, next_offset);
            }
            None => {}
        }
        if step % 997 == 0 {
            assert_eq!(table.live(), model.len());
            for (name, &offset) in &model {
                assert!(table.candidates(table.hash(name)).any(|(_, o)| o == offset), "step {step}");
            }
        }
    }
    for (name, offset) in model.drain() {
        assert!(table.remove(table.hash(&name), offset));
    }
    assert_eq!((table.live(), table.used()), (0, 0), "every deleted marker was reclaimed");
}

#[test]
fn removing_an_offset_the_table_does_not_hold_changes_nothing() {
    let mut table = LookupTable::new(16, 1 << 20);
    let h = table.hash(b"a");
    assert!(table.insert(h, 8));
    assert!(!table.remove(h, 12));
    assert_eq!(table.live(), 1);
}

#[test]
fn names_differing_in_the_last_byte_spread_and_each_table_hashes_differently() {
    let names: Vec<Vec<u8>> = (0..10_000).map(|i| format!("message-{i:05}").into_bytes()).collect();
    let mut table = LookupTable::new(15_000, 1 << 20);
    for (i, name) in names.iter().enumerate() {
        assert!(table.insert(table.hash(name), i as u32 * 4));
    }
    let probes: usize = names.iter().map(|n| table.chain_length(table.hash(n))).sum();
    let mean = probes as f64 / names.len() as f64;
    // Linear probing at two thirds full averages about 3.5 slots per chain
    // walked to its end; names that clustered would walk hundreds.
    assert!(mean < 8.0, "mean chain length {mean}");
    let other = LookupTable::new(15_000, 1 << 20);
    assert!(names.iter().take(8).any(|n| other.hash(n) != table.hash(n)), "per-table keys");
    // The tags leave almost no candidate but the name's own.
    let candidates: usize = names.iter().map(|n| table.candidates(table.hash(n)).count()).sum();
    assert!(
        candidates < names.len() + names.len() / 100,
        "{candidates} candidates for {} names",
        names.len()
    );
}

#[test]
fn the_entry_after_the_last_one_found_is_tried_first() {
    // Guards the sequential optimisation (§3.2), which a typo once switched
    // off unnoticed (§3.5). Two entries under one hash: a collision.
    let mut table = LookupTable::new(64, 1 << 20);
    let h = table.hash(b"x");
    assert!(table.insert(h, 100) && table.insert(h, 200) && table.insert(h, 300));
    assert_eq!(table.ordered_candidates(h, None).collect::<Vec<_>>(), [100, 200, 300]);
    assert_eq!(table.ordered_candidates(h, Some(300)).collect::<Vec<_>>(), [300, 100, 200]);
    assert_eq!(table.ordered_candidates(h, Some(200)).collect::<Vec<_>>(), [200, 100, 300]);
    assert_eq!(
        table.ordered_candidates(h, Some(204)).collect::<Vec<_>>(),
        [100, 200, 300],
        "not on the chain: no change"
    );
}

#[test]
fn offsets_round_trip_at_every_table_size_and_never_read_as_empty() {
    for max_offset in [512u64, 4096, 1 << 20, 1 << 31, MAX_OFFSET_BYTES] {
        let mut table = LookupTable::new(64, max_offset);
        let top = (max_offset.min(MAX_OFFSET_BYTES) - 8) as u32 / 4 * 4;
        let offsets = [0u32, 4, 12, top / 2 / 4 * 4, top];
        for (i, &offset) in offsets.iter().enumerate() {
            let name = format!("name{i}");
            assert!(table.insert(table.hash(name.as_bytes()), offset), "{offset} below {max_offset}");
        }
        for (i, &offset) in offsets.iter().enumerate() {
            let name = format!("name{i}");
            let found: Vec<u32> = table.candidates(table.hash(name.as_bytes())).map(|(_, o)| o).collect();
            assert!(found.contains(&offset), "{offset} below {max_offset}: {found:?}");
        }
        assert_eq!(table.live(), offsets.len());
    }
    let mut small = LookupTable::new(16, 4096);
    assert!(!small.insert(small.hash(b"x"), 8192), "an offset past the planned size is refused");
}

/// The chunk `find` should return, by brute force over `units`.
fn expected_find(units: &[usize], need: usize) -> Option<usize> {
    let class = |free: usize| (free / 4).min(66);
    (need.div_ceil(4).min(66)..=66).find_map(|k| units.iter().position(|&f| class(f) == k))
}

#[test]
fn the_free_space_summary_matches_a_brute_force_search() {
    let mut rng = SmallRng::seed_from_u64(11);
    let mut free = FreeSpace::new(300);
    let mut model: Vec<usize> = Vec::new();
    for step in 0..20_000 {
        match rng.gen_range(0..10) {
            0 if model.len() < 300 => {
                let f = rng.gen_range(0..=126) * 4;
                assert!(free.push(f));
                model.push(f);
            }
            1 if !model.is_empty() && rng.gen_range(0..20) == 0 => {
                let keep = rng.gen_range(0..model.len());
                free.truncate(keep);
                model.truncate(keep);
            }
            _ if !model.is_empty() => {
                let c = rng.gen_range(0..model.len());
                let f = rng.gen_range(0..=126) * 4;
                free.set(c, f);
                model[c] = f;
            }
            _ => {}
        }
        let need = rng.gen_range(1..=66) * 4;
        assert_eq!(free.find(need), expected_find(&model, need), "step {step}: need {need} in {model:?}");
    }
    assert_eq!(free.chunks(), model.len());
}

#[test]
fn a_full_summary_refuses_to_grow() {
    let mut free = FreeSpace::new(2);
    assert!(free.push(504) && free.push(0));
    assert!(!free.push(504), "past its capacity the directory outgrew the hash");
    assert_eq!(free.find(12), Some(0));
}

fn hash_for(plan: Plan) -> DirHash {
    plan.empty()
}

#[test]
fn the_budget_refuses_builds_until_the_least_recently_used_hash_runs_out_of_points() {
    let mut dirhash = Dirhash::default();
    let plan = Plan::for_size(64 << 10, 4096);
    dirhash.set_options(DirhashOptions { max_memory: plan.memory() * 2, ..DirhashOptions::default() });
    for dir in [10, 11] {
        let p = dirhash.plan(64 << 10, 4096).expect("room for two");
        dirhash.insert(dir, p, hash_for(p));
    }
    // Directory 10 is used a lot, 11 a little: 11 is the victim.
    for _ in 0..40 {
        dirhash.used(10);
    }
    dirhash.used(11);
    dirhash.used(10);
    let mut refused = 0;
    while dirhash.plan(64 << 10, 4096).is_none() {
        refused += 1;
        assert!(refused < 100, "never made room");
    }
    // 11 had its initial points plus one use; each refused build cost one.
    assert_eq!(refused, INITIAL_SCORE as usize);
    assert!(dirhash.has(10) && !dirhash.has(11));
    let stats = dirhash.stats();
    assert_eq!((stats.drops, stats.refused, stats.hashes), (1, refused as u64, 1));
}

#[test]
fn small_directories_huge_ones_and_a_switched_off_dirhash_get_no_hash() {
    let mut dirhash = Dirhash::default();
    assert!(dirhash.plan(2048, 512).is_none(), "below dirhash_minsize");
    assert!(dirhash.plan(64 << 20, 4096).is_none(), "larger than the whole budget");
    assert_eq!(dirhash.stats().refused, 1);
    assert!(dirhash.plan(1 << 32, 4096).is_none());
    assert!(dirhash.plan(8192, 4096).is_some());
    dirhash.set_options(DirhashOptions { enabled: false, ..DirhashOptions::default() });
    assert!(dirhash.plan(8192, 4096).is_none());
}

#[test]
fn a_smaller_budget_drops_hashes_until_the_rest_fit() {
    let mut dirhash = Dirhash::default();
    for dir in 1..=4 {
        let p = dirhash.plan(16 << 10, 4096).expect("room");
        dirhash.insert(dir, p, hash_for(p));
    }
    let each = dirhash.stats().memory / 4;
    dirhash.set_options(DirhashOptions { max_memory: each * 2, ..DirhashOptions::default() });
    let stats = dirhash.stats();
    assert_eq!((stats.hashes, stats.drops, stats.memory), (2, 2, each * 2));
    assert!(dirhash.has(3) && dirhash.has(4), "the least recently built went first");
}
