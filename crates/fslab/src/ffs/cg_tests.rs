use super::*;

/// 8 KiB blocks of 1 KiB fragments; one group of 512 blocks, 512 inodes;
/// maxcontig 4. Data starts at block 18 (fragment 144).
fn geometry() -> Geometry {
    Geometry::new(8192, 1024, 1, 4096, 512, 4096, 4).expect("valid")
}

fn group() -> CylinderGroup {
    CylinderGroup::new_empty(&geometry(), 0, 0)
}

const DATA: u32 = 144;

fn checked(cg: &CylinderGroup) {
    if let Err(why) = cg.check() {
        panic!("invariant broken: {why}");
    }
}

#[test]
fn new_group_has_only_data_free_and_reserves_inodes_0_and_1() {
    let cg = group();
    assert_eq!(geometry().data_offset(), DATA);
    checked(&cg);
    assert_eq!(cg.counts().free_blocks, 512 - 18);
    assert_eq!(cg.counts().free_frags, 0);
    assert_eq!(cg.counts().free_inodes, 510);
    assert!(cg.is_inode_used(0) && cg.is_inode_used(1) && !cg.is_inode_used(2));
    assert!(!cg.is_frag_free(DATA - 1) && cg.is_frag_free(DATA));
    // One run of 494 free blocks, counted at maxcontig.
    assert_eq!(cg.cluster_sum(), &[0, 0, 0, 0, 1]);
}

#[test]
fn block_allocation_takes_the_preferred_block_else_the_next_free_one() {
    let mut cg = group();
    assert_eq!(cg.alloc_block(Some(DATA + 80)), Some(DATA + 80));
    // Taken: the next free block after the preference.
    assert_eq!(cg.alloc_block(Some(DATA + 80)), Some(DATA + 88));
    // A preference inside a block means that block.
    assert_eq!(cg.alloc_block(Some(DATA + 3)), Some(DATA));
    // No preference: from the rotor, which the last search left at DATA+88.
    assert_eq!(cg.alloc_block(None), Some(DATA + 96));
    checked(&cg);
}

#[test]
fn search_wraps_to_the_front_of_the_group() {
    let mut cg = group();
    let last = 4096 - 8;
    assert_eq!(cg.alloc_block(Some(last)), Some(last));
    assert_eq!(cg.alloc_block(Some(last)), Some(DATA));
}

#[test]
fn fragments_come_from_the_smallest_free_run_that_fits() {
    let mut cg = group();
    let a = cg.alloc_frags(Some(DATA), 3).expect("room"); // breaks a block: run of 5 left
    assert_eq!(a, DATA);
    let b = cg.alloc_frags(Some(DATA + 8), 6).expect("room"); // no run of 6: breaks another, run of 2 left
    assert_eq!(b, DATA + 8);
    assert_eq!(cg.frsum()[5], 1);
    assert_eq!(cg.frsum()[2], 1);
    // Two fragments: the run of 2, not the front of the run of 5.
    assert_eq!(cg.alloc_frags(Some(DATA), 2), Some(DATA + 14));
    assert_eq!(cg.frsum()[2], 0);
    // One fragment: the smallest run left is the 5; its front is taken.
    assert_eq!(cg.alloc_frags(Some(DATA), 1), Some(DATA + 3));
    assert_eq!(cg.frsum()[5], 0);
    assert_eq!(cg.frsum()[4], 1);
    assert_eq!(cg.counts().free_frags, 4);
    checked(&cg);
}

#[test]
fn fragextend_grows_in_place_only_into_free_fragments_of_the_same_block() {
    let mut cg = group();
    let a = cg.alloc_frags(Some(DATA), 2).expect("room");
    assert!(cg.fragextend(a, 2, 5));
    assert_eq!(cg.frsum()[3], 1);
    assert_eq!(cg.counts().free_frags, 3);
    checked(&cg);
    // A neighbour takes the next fragment: no more growth in place.
    let b = cg.alloc_frags(Some(DATA), 1).expect("room");
    assert_eq!(b, DATA + 5);
    let before = cg.clone();
    assert!(!cg.fragextend(a, 5, 7));
    assert_eq!(cg, before, "a refused extension changes nothing");
    // Nor across a block boundary.
    assert!(!cg.fragextend(b, 1, 4));
    assert!(cg.fragextend(b, 1, 3));
    checked(&cg);
}

#[test]
fn freeing_the_last_fragments_of_a_block_makes_it_a_whole_free_block_again() {
    let mut cg = group();
    let empty = cg.clone();
    let a = cg.alloc_frags(None, 3).expect("room");
    let b = cg.alloc_frags(None, 2).expect("room");
    assert_eq!(b, a + 3);
    cg.free(a, 3).expect("in use");
    assert_eq!(cg.counts().free_frags, 6);
    checked(&cg);
    cg.free(b, 2).expect("in use");
    checked(&cg);
    // Back to the empty group, rotors aside.
    cg.frotor = empty.frotor;
    cg.rotor = empty.rotor;
    assert_eq!(cg, empty);
}

#[test]
fn frees_of_free_or_metadata_fragments_are_refused_and_change_nothing() {
    let mut cg = group();
    let a = cg.alloc_frags(None, 2).expect("room");
    let before = cg.clone();
    assert!(cg.free(a, 3).expect_err("third is free").contains("already free"));
    assert!(cg.free(DATA - 8, 8).expect_err("metadata").contains("data area"));
    assert!(cg.free(a + 6, 4).expect_err("crosses").contains("one block"));
    assert!(cg.free(4096, 1).is_err());
    assert_eq!(cg, before);
    let whole = cg.alloc_block(None).expect("room");
    cg.free(whole, 8).expect("in use");
    assert!(cg.free(whole, 8).is_err(), "double free of a block");
}

#[test]
fn cluster_summary_follows_runs_of_free_blocks() {
    let mut cg = group();
    let block = |n: u32| DATA + 8 * n;
    // Free data blocks 0..494. Take 2, 5 and 7: runs 0-1 (2), 3-4 (2), 6 (1), 8.. (≥4).
    for n in [2, 5, 7] {
        assert_eq!(cg.alloc_block(Some(block(n))), Some(block(n)));
    }
    assert_eq!(cg.cluster_sum(), &[0, 1, 2, 0, 1]);
    // Freeing 5 joins 3-4, 5 and 6 into a run of 4.
    cg.free(block(5), 8).expect("in use");
    assert_eq!(cg.cluster_sum(), &[0, 0, 1, 0, 2]);
    // A block broken into fragments leaves the cluster map.
    cg.alloc_frags(Some(block(0)), 1).expect("room");
    assert_eq!(cg.cluster_sum(), &[0, 1, 0, 0, 2]);
    checked(&cg);
}

#[test]
fn cluster_allocation_takes_the_first_long_enough_run_at_or_after_the_preference() {
    let mut cg = group();
    let block = |n: u32| DATA + 8 * n;
    for n in [3, 6] {
        cg.alloc_block(Some(block(n))).expect("room");
    }
    // Runs: 0-2 (3), 4-5 (2), 7.. (long).
    assert_eq!(cg.cluster_alloc(Some(block(0)), 3), Some(block(0)));
    assert_eq!(cg.cluster_alloc(Some(block(0)), 2), Some(block(4)));
    assert_eq!(cg.cluster_alloc(Some(block(0)), 4), Some(block(7)));
    // Runs before the preference do not count.
    assert_eq!(cg.cluster_alloc(Some(block(491)), 4), None);
    assert_eq!(cg.cluster_alloc(Some(block(0)), 5), None, "longer than maxcontig");
    checked(&cg);
}

#[test]
fn inodes_come_from_the_preference_else_after_the_rotor() {
    let mut cg = group();
    let got = cg.alloc_inode(None, true).expect("room");
    assert_eq!(got.slot, 2);
    assert_eq!(got.uninitialised_blocks, 0..1, "the first table block is zeroed once");
    assert_eq!(cg.counts().directories, 1);
    let got = cg.alloc_inode(Some(40), false).expect("room");
    assert_eq!(got.slot, 40);
    assert_eq!(got.uninitialised_blocks, 1..2);
    // Preferred slot taken: the next free after the rotor (at 2).
    let got = cg.alloc_inode(Some(40), false).expect("room");
    assert_eq!(got.slot, 3);
    assert!(got.uninitialised_blocks.is_empty());
    checked(&cg);
    assert!(cg.free_inode(1, false).is_err(), "reserved");
    assert!(cg.free_inode(41, false).is_err(), "not in use");
    cg.free_inode(2, true).expect("in use");
    assert_eq!(cg.counts().directories, 0);
    checked(&cg);
}

#[test]
fn a_full_group_refuses_without_changing() {
    let mut cg = group();
    while cg.alloc_block(None).is_some() {}
    assert_eq!(cg.counts().free_blocks, 0);
    let before = cg.clone();
    assert_eq!(cg.alloc_frags(None, 1), None);
    assert_eq!(cg.cluster_alloc(None, 1), None);
    assert_eq!(cg, before);
    checked(&cg);
}

#[test]
fn a_group_rebuilt_from_its_bitmaps_equals_the_group_operations_left() {
    let mut cg = group();
    cg.alloc_block(Some(DATA + 16)).expect("room");
    cg.alloc_frags(Some(DATA + 40), 3).expect("room");
    cg.alloc_frags(None, 5).expect("room");
    cg.alloc_inode(None, true).expect("room");
    cg.alloc_inode(Some(70), false).expect("room");
    let rebuilt = CylinderGroup::rebuilt(
        &geometry(),
        0,
        cg.time,
        cg.inode_map().clone(),
        cg.frag_map().clone(),
        cg.counts().directories,
        cg.initialised_inodes(),
        cg.rotors(),
    )
    .expect("consistent");
    assert_eq!(rebuilt, cg);

    // Metadata marked free, or an inode in use past the mark, is refused.
    let mut free_meta = cg.frag_map().clone();
    free_meta.set(DATA - 1);
    let mark = cg.initialised_inodes();
    let refused =
        CylinderGroup::rebuilt(&geometry(), 0, 0, cg.inode_map().clone(), free_meta, 1, mark, [0; 3]);
    assert!(refused.expect_err("metadata free").contains("metadata"));
    let refused = CylinderGroup::rebuilt(
        &geometry(),
        0,
        0,
        cg.inode_map().clone(),
        cg.frag_map().clone(),
        1,
        32,
        [0; 3],
    );
    assert!(refused.expect_err("past the mark").contains("initialised"));
}

/// Free runs of a hand-made state: blocks 20, 22 and 27 taken whole and
/// block 30 broken by a fragment leave runs of 2 (18–19), 1 (21), 4
/// (23–26), 2 (28–29) and 481 (31–511) free blocks.
#[test]
fn free_runs_and_the_cluster_summary_of_a_hand_made_state() {
    let mut cg = group();
    for b in [20, 22, 27] {
        assert_eq!(cg.alloc_block(Some(b * 8)), Some(b * 8));
    }
    assert_eq!(cg.alloc_frags(Some(30 * 8), 1), Some(30 * 8));
    checked(&cg);
    assert_eq!(cg.cluster_sum(), &[0, 1, 2, 0, 2]);
    assert_eq!(cg.free_runs(), FreeRuns { longest: 481, blocks_in_full_clusters: 4 + 481 });
    // Freeing 27 joins 23–26 and 28–29 into one run of 7.
    cg.free(27 * 8, 8).expect("free");
    assert_eq!(cg.cluster_sum(), &[0, 1, 1, 0, 2]);
    assert_eq!(cg.free_runs(), FreeRuns { longest: 481, blocks_in_full_clusters: 7 + 481 });
    // Every block taken: no run at all.
    while cg.alloc_block(None).is_some() {}
    assert_eq!(cg.free_runs(), FreeRuns::default());
}
