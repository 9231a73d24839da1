//! Tests of the buffer cache (`mod.rs`): eviction (clean buffers only, least
//! recently used first, never one in flight or pinned), dirty accounting,
//! durability after a write, rolled-back blocks parked, and probation for
//! written blocks nobody reads.

use super::*;

fn block(byte: u8) -> BlockData {
    block_of(&[byte; 4096])
}

fn small_cache() -> BufferCache {
    BufferCache::new(
        4096,
        CacheLimits { memory_bytes: 16 * 4096, start_write_bytes: 4 * 4096, stop_access_bytes: 8 * 4096 },
    )
}

#[test]
fn a_block_written_rolled_back_is_parked_until_it_changes_or_something_becomes_durable() {
    let mut cache = small_cache();
    cache.insert((5, 0), block(1), true);
    cache.park((5, 0), 7);
    assert!(cache.is_parked((5, 0), 7));
    assert!(!cache.is_parked((5, 0), 8), "something became durable since");
    cache.get_mut_dirty((5, 0)).expect("cached")[0] = 2;
    assert!(!cache.is_parked((5, 0), 7), "changed since");
    cache.park((5, 0), 7);
    cache.mark_written((5, 0), 9);
    assert!(!cache.is_parked((5, 0), 7), "clean");
    cache.park((5, 0), 7);
    assert!(!cache.is_parked((5, 0), 7), "a clean block is never parked");
}

#[test]
fn eviction_takes_clean_buffers_and_keeps_dirty_ones() {
    let mut cache = small_cache();
    for i in 0..20 {
        cache.insert((5, i), block(i as u8), i < 10);
    }
    for i in 0..10 {
        assert!(cache.contains((5, i)), "dirty block {i} must never be evicted");
    }
    let cached = (10..20).filter(|&i| cache.contains((5, i))).count();
    assert_eq!(cached, 6, "cache holds 16 buffers at most while clean ones remain");
    assert_eq!(cache.dirty_count(), 10);
    assert!(cache.should_start_write());
}

#[test]
fn least_recently_used_buffer_goes_first() {
    let mut cache = small_cache();
    for i in 0..16 {
        cache.insert((1, i), block(0), false);
    }
    assert!(cache.get((1, 0)).is_some());
    cache.insert((1, 100), block(0), false);
    assert!(cache.contains((1, 0)), "block 0 was used recently");
    assert!(!cache.contains((1, 1)), "block 1 was the least recently used");
}

#[test]
fn buffers_in_flight_during_a_sweep_are_evicted_once_written() {
    let mut cache = small_cache();
    let in_flight: Vec<BlockData> = (0..16)
        .map(|i| {
            cache.insert((8, i), block(0), false);
            cache.share((8, i)).expect("cached")
        })
        .collect();
    for i in 16..32 {
        cache.insert((8, i), block(0), false);
    }
    assert!((0..16).all(|i| cache.contains((8, i))), "buffers in flight stay");
    drop(in_flight);
    for i in 32..48 {
        cache.insert((8, i), block(0), false);
    }
    let held = (0..48).filter(|&i| cache.contains((8, i))).count();
    assert_eq!(held, 16, "once written, the buffers that were in flight are evictable again");
    assert!((0..16).all(|i| !cache.contains((8, i))), "the oldest go first");
}

#[test]
fn keys_in_lists_an_inodes_cached_blocks_in_order() {
    let mut cache = small_cache();
    for lbn in [7, -1, 3, 1 << 40, 0] {
        cache.insert((4, lbn), block(0), true);
    }
    cache.insert((5, 2), block(0), true);
    cache.insert((3, 9), block(0), true);
    assert!(cache.remove((4, 3)));
    assert_eq!(cache.keys_in(4, Lbn::MIN..=Lbn::MAX), vec![(4, -1), (4, 0), (4, 7), (4, 1 << 40)]);
    assert_eq!(cache.keys_in(4, 0..=7), vec![(4, 0), (4, 7)]);
    assert_eq!(cache.first_in(4, 1..8), Some(7));
    assert_eq!(cache.first_in(4, 1..7), None, "the range's end is not in it");
    assert_eq!(cache.first_in(4, 3..4), None, "a removed block is not cached");
    assert_eq!(cache.first_in(5, 0..100), Some(2));
    assert_eq!(cache.first_in(4, 7..7), None);
    // Eviction keeps the index: clean buffers of inode 6 push inode 4's
    // out once they are written.
    for lbn in [-1, 0, 7, 1 << 40] {
        cache.mark_clean((4, lbn));
    }
    for lbn in 0..16 {
        cache.insert((6, lbn), block(0), false);
    }
    assert_eq!(cache.keys_in(4, Lbn::MIN..=Lbn::MAX), vec![]);
    assert_eq!(cache.keys_in(5, Lbn::MIN..=Lbn::MAX), vec![(5, 2)]);
}

#[test]
fn dirty_accounting_follows_marks_and_removal() {
    let mut cache = small_cache();
    cache.insert((2, 0), block(1), false);
    assert!(cache.mark_dirty((2, 0)));
    assert!(!cache.mark_dirty((2, 0)));
    assert_eq!(cache.dirty_keys_in(2, Lbn::MIN..=Lbn::MAX), vec![(2, 0)]);
    cache.mark_clean((2, 0));
    assert_eq!(cache.dirty_count(), 0);
    cache.insert((2, -12), block(2), true);
    assert!(cache.remove((2, -12)));
    assert_eq!(cache.dirty_bytes(), 0);
}

#[test]
fn a_buffer_shared_with_a_write_in_flight_is_neither_evicted_nor_changed() {
    let mut cache = small_cache();
    cache.insert((3, 0), block(7), false);
    let in_flight = cache.share((3, 0)).expect("cached");
    for i in 1..40 {
        cache.insert((3, i), block(0), false);
    }
    assert!(cache.contains((3, 0)), "shared buffer stays cached");
    cache.get_mut_dirty((3, 0)).expect("cached")[0] = 9;
    assert_eq!(in_flight[0], 7, "the write in flight keeps the bytes it was given");
    assert_eq!(cache.get((3, 0)).expect("cached")[0], 9);
}

#[test]
fn a_block_is_durable_after_the_write_that_took_its_current_contents() {
    let mut cache = small_cache();
    cache.insert((2, 0), block(1), true);
    assert_eq!(cache.durable_after((2, 0)), None, "dirty: no write has its contents yet");
    cache.mark_written((2, 0), 5);
    assert_eq!(cache.durable_after((2, 0)), Some(5));
    cache.get_mut_dirty((2, 0)).expect("cached")[0] = 2;
    assert_eq!(cache.durable_after((2, 0)), None, "changed again since");
    cache.mark_written((2, 0), 9);
    // Evicted, a block is as durable as the latest write of any evicted.
    for i in 1..40 {
        cache.insert((3, i), block(0), false);
    }
    assert!(!cache.contains((2, 0)));
    assert_eq!(cache.durable_after((2, 0)), Some(9));
    assert_eq!(cache.durable_after((7, 7)), Some(9));
}

#[test]
fn a_pinned_buffer_stays_until_unpinned_clean_or_dirty() {
    let mut cache = small_cache();
    cache.insert((2, 0), block(1), false);
    cache.pin((2, 0));
    cache.insert((2, 0), block(2), false);
    for i in 1..40 {
        cache.insert((3, i), block(0), false);
    }
    assert_eq!(cache.get((2, 0)).map(|b| b[0]), Some(2), "pinned, replaced, and still there");
    cache.unpin((2, 0));
    for i in 40..80 {
        cache.insert((3, i), block(0), false);
    }
    assert!(!cache.contains((2, 0)), "unpinned, it is evicted like any other");
}

/// A cache of 64 buffers with a start-write threshold, and so a
/// probation share, of 16.
fn probation_cache() -> BufferCache {
    let limits =
        CacheLimits { memory_bytes: 64 * 4096, start_write_bytes: 16 * 4096, stop_access_bytes: 32 * 4096 };
    BufferCache::new(4096, limits)
}

/// Writes `n` blocks of inode `ino` and marks them written, as a
/// segment write does.
fn write_and_clean(cache: &mut BufferCache, ino: Ino, n: i64) {
    for i in 0..n {
        cache.insert((ino, i), block(1), true);
        cache.mark_clean((ino, i));
    }
}

#[test]
fn written_blocks_nobody_reads_keep_to_their_share_and_go_first() {
    let mut cache = probation_cache();
    for i in 0..10 {
        cache.insert((1, i), block(0), false);
    }
    write_and_clean(&mut cache, 2, 40);
    assert!((0..10).all(|i| cache.contains((1, i))), "blocks read from disk stay");
    let written: Vec<i64> = (0..40).filter(|&i| cache.contains((2, i))).collect();
    assert_eq!(written, (24..40).collect::<Vec<_>>(), "only the newest written blocks stay");
    assert_eq!(cache.on_probation, 16);

    // Over the memory limit, written blocks go before read ones even
    // though the read ones were not used again.
    for i in 10..60 {
        cache.insert((1, i), block(0), false);
    }
    assert!((0..60).all(|i| cache.contains((1, i))), "read blocks evicted while written ones remained");
    assert_eq!(cache.on_probation, 4, "the newest written blocks fill what is left");
    assert!((36..40).all(|i| cache.contains((2, i))));
}

#[test]
fn a_written_block_read_again_leaves_probation() {
    let mut cache = probation_cache();
    write_and_clean(&mut cache, 2, 4);
    assert!(cache.get((2, 1)).is_some());
    // Rewritten while on probation: dirty buffers are never evicted.
    cache.get_mut_dirty((2, 2)).expect("cached")[0] = 5;
    write_and_clean(&mut cache, 3, 40);
    assert!(cache.contains((2, 1)), "a written block read since is kept");
    assert!(cache.contains((2, 2)) && cache.is_dirty((2, 2)));
    assert!(!cache.contains((2, 0)) && !cache.contains((2, 3)));
    assert_eq!(cache.on_probation, 16);
}

#[test]
fn written_blocks_still_in_flight_do_not_stop_the_others_leaving() {
    let mut cache = probation_cache();
    write_and_clean(&mut cache, 2, 1);
    let in_flight = cache.share((2, 0)).expect("cached");
    write_and_clean(&mut cache, 3, 40);
    assert!(cache.contains((2, 0)), "a block in flight stays");
    assert_eq!((0..40).filter(|&i| cache.contains((3, i))).count(), 15);
    drop(in_flight);
    write_and_clean(&mut cache, 4, 16);
    assert!(!cache.contains((2, 0)), "written, it leaves like the others");
}

#[test]
fn a_trim_passes_over_one_buffer_in_flight_and_stops() {
    let mut cache = probation_cache();
    let mut in_flight = Vec::new();
    for i in 0..17 {
        cache.insert((2, i), block(1), true);
        in_flight.push(cache.share((2, i)).expect("cached"));
        cache.mark_clean((2, i));
    }
    // The seventeenth is one over the share: its trim met (2, 0) in
    // flight, moved it to the back and looked no further.
    let order: Vec<Lbn> = cache.probation.iter().map(|&((_, lbn), _)| lbn).collect();
    assert_eq!(order, (1..17).chain([0]).collect::<Vec<_>>());
    assert_eq!(cache.on_probation, 17, "nothing in flight is evicted");
    drop(in_flight);
    write_and_clean(&mut cache, 3, 1);
    assert_eq!(cache.on_probation, 16, "written, they leave oldest first");
    assert!(!cache.contains((2, 1)) && cache.contains((2, 0)));
}

#[test]
fn the_invariant_check_holds_through_use_and_finds_a_dirty_set_or_queue_out_of_step() {
    let mut cache = small_cache();
    for i in 0..40u64 {
        cache.insert((i, 0), block(i as u8), i % 3 == 0);
        if i % 5 == 0 {
            cache.mark_written((i, 0), i);
        }
        if i % 7 == 0 {
            cache.get_mut_dirty((i, 0));
        }
        assert_eq!(cache.check_invariants(), Ok(()), "after block {i}");
    }
    let key = (99, 0);
    cache.insert(key, block(99), false);
    assert_eq!(cache.check_invariants(), Ok(()));
    cache.buffers.get_mut(&key).expect("cached").dirty = true;
    assert!(cache.check_invariants().is_err_and(|e| e.contains("dirty keys")));
    cache.buffers.get_mut(&key).expect("cached").dirty = false;
    cache.buffers.get_mut(&key).expect("cached").entry = NOT_QUEUED;
    assert!(cache.check_invariants().is_err_and(|e| e.contains("no entry")));
}

#[test]
fn a_block_written_in_part_is_hidden_from_readers_until_the_disk_copy_fills_it() {
    let mut cache = small_cache();
    assert!(cache.write_partial((5, 0), 1024, &[7; 1024]));
    assert_eq!(cache.partial((5, 0)), Some(1024..2048));
    assert!(cache.contains((5, 0)) && cache.is_dirty((5, 0)));
    assert!(cache.get((5, 0)).is_none() && cache.peek((5, 0)).is_none() && cache.share((5, 0)).is_none());
    assert!(cache.get_mut_dirty((5, 0)).is_none(), "nobody changes bytes it does not hold");
    assert!(cache.write_partial((5, 0), 2048, &[8; 1024]), "touching what it holds");
    assert!(!cache.write_partial((5, 0), 3072 + 512, &[9; 512]), "a gap");
    assert!(cache.write_partial((5, 0), 512, &[6; 512]), "overlapping from below");
    assert_eq!(cache.partial((5, 0)), Some(512..3072));
    cache.check_invariants().expect("invariants");
    // The disk's copy, read by whoever needs the block whole.
    cache.insert((5, 0), block(1), false);
    assert_eq!(cache.partial((5, 0)), None);
    assert!(cache.is_dirty((5, 0)), "what was written is not on the disk yet");
    let block = cache.get((5, 0)).expect("whole now").to_vec();
    assert_eq!((block[0], block[600], block[1500], block[2500], block[3500]), (1, 6, 7, 8, 1));
    assert!(!cache.write_partial((5, 0), 0, &[2; 512]), "a block cached whole is written in place");
}

#[test]
fn a_block_written_in_part_becomes_whole_once_covered_and_leaves_the_cache_once_written() {
    let mut cache = small_cache();
    assert!(cache.write_partial((5, 0), 0, &[1; 2048]));
    assert!(cache.write_partial((5, 0), 2048, &[2; 2048]));
    assert_eq!(cache.partial((5, 0)), None, "covered: whole");
    assert_eq!(cache.get((5, 0)).map(|b| (b[0], b[4095])), Some((1, 2)));
    assert!(cache.write_partial((5, 1), 0, &[3; 1024]));
    let (data, valid) = cache.share_for_write((5, 1)).expect("cached");
    assert_eq!((valid, data[0]), (0..1024, 3));
    cache.mark_written((5, 1), 4);
    assert!(!cache.contains((5, 1)), "clean, it would pass for the whole block");
    assert_eq!(cache.durable_after((5, 1)), Some(4), "durable once its write is");
    assert!(cache.write_partial((5, 2), 0, &[3; 1024]));
    cache.pin((5, 2));
    cache.mark_written((5, 2), 5);
    assert!(cache.is_dirty((5, 2)), "pinned: it stays, dirty");
    cache.unpin((5, 2));
    cache.remove((5, 2));
    cache.check_invariants().expect("invariants");
}

#[test]
fn a_cache_that_keeps_before_images_takes_no_block_in_part() {
    let mut cache = small_cache();
    cache.keep_changes();
    assert!(!cache.takes_partial((5, 0), 0, 1024));
    assert!(!cache.write_partial((5, 0), 0, &[1; 1024]));
    assert!(!cache.contains((5, 0)));
}

/// A block whose first `len` bytes are `byte` and the rest zeros: a
/// file's tail of fragments as the cache holds it whole.
fn tail(byte: u8, len: usize) -> BlockData {
    let mut b = AlignedBytes::zeroed(4096);
    b[..len].fill(byte);
    Arc::new(b)
}

#[test]
fn a_tail_kept_short_reads_as_the_whole_block_and_takes_its_own_size() {
    let mut cache = small_cache();
    cache.insert((5, 0), tail(7, 1024), true);
    cache.keep_only((5, 0), 1024);
    assert_eq!(cache.get_held((5, 0)).map(<[u8]>::len), Some(4096), "a dirty buffer stays whole");
    cache.mark_written_holding((5, 0), 3, 512);
    assert_eq!(cache.get_held((5, 0)).map(<[u8]>::len), Some(4096), "bytes that are not zeros stay");
    cache.keep_only((5, 0), 1024);
    assert_eq!(cache.get_held((5, 0)).map(<[u8]>::len), Some(1024));
    assert_eq!(cache.peek((5, 0)).map(<[u8]>::len), Some(1024));
    assert_eq!(cache.memory()[0].bytes, 1024, "it counts what it holds");
    cache.check_invariants().expect("invariants");

    // Every way of reading it as a block gives the block.
    let shared = cache.share((5, 0)).expect("cached");
    assert_eq!(&shared[..], &tail(7, 1024)[..]);
    assert_eq!(cache.durable_after((5, 0)), Some(3));
    assert_eq!(cache.get((5, 0)), Some(&tail(7, 1024)[..]));
    assert_eq!(cache.memory()[0].bytes, 4096, "made whole to be read as a block");

    // A change makes it whole first, and a journal's image before it is whole.
    cache.keep_only((5, 0), 1024);
    cache.keep_changes();
    cache.get_mut_dirty((5, 0)).expect("cached")[2048] = 9;
    assert_eq!(cache.before_changes((5, 0)).flatten().map(|b| b.to_vec()), Some(tail(7, 1024).to_vec()));
    assert_eq!(cache.get((5, 0)).map(|b| (b.len(), b[1023], b[1024], b[2048])), Some((4096, 7, 0, 9)));
    cache.check_invariants().expect("invariants");
}

#[test]
fn written_tails_kept_short_share_probation_by_their_bytes() {
    let mut cache = probation_cache();
    // A start-write threshold's worth is 16 blocks; tails of a quarter block.
    for i in 0..80 {
        cache.insert((2, i), tail(1, 1024), true);
        cache.mark_written_holding((2, i), 1, 1024);
    }
    let kept: Vec<i64> = (0..80).filter(|&i| cache.contains((2, i))).collect();
    assert_eq!(kept, (16..80).collect::<Vec<_>>(), "four times as many tails stay as blocks would");
    assert_eq!(cache.probation_bytes, 64 * 1024);
    // Made whole, each counts as a block again, and the share holds.
    for i in 16..80 {
        cache.mark_dirty((2, i));
        cache.mark_clean((2, i));
    }
    assert_eq!((0..80).filter(|&i| cache.contains((2, i))).count(), 16);
    cache.check_invariants().expect("invariants");
}
