use super::*;
use crate::ffs::mkfs::{plan, MkfsOptions};
use crate::ffs::RotDelay;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const MIB: u64 = 1 << 20;

/// Groups of 4 MiB (512 blocks of 8 KiB, 494 of them data after 18 blocks
/// of metadata; 512 inodes), `groups` of them.
fn options() -> MkfsOptions {
    MkfsOptions { group_size: 4 * MIB, ..MkfsOptions::default() }
}

fn allocator(groups: u64, options: &MkfsOptions) -> Allocator {
    let sb = plan(groups * options.group_size, options).expect("plan");
    let cgs = (0..sb.geometry.ncg).map(|cg| CylinderGroup::new_empty(&sb.geometry, cg, 0)).collect();
    Allocator::new(&sb, cgs).expect("allocator")
}

/// Lays out `n` whole blocks of a new file as `ffs_balloc` would for the
/// direct blocks: `blkpref` from the pointers so far, then `alloc`.
fn write_direct(a: &mut Allocator, ino: Ino, n: usize) -> Vec<Frag> {
    let frag = a.geometry().frags_per_block;
    let mut direct = vec![0; NDADDR];
    for lbn in 0..n {
        let pref = a.blkpref(ino, lbn as Lbn, lbn, &direct);
        direct[lbn] = a.alloc(ino, pref, frag, false).expect("room");
    }
    direct.truncate(n);
    direct
}

use crate::format::blockno::NDADDR;
use crate::format::Lbn;

/// Block offsets from the start of `cg`'s data area.
fn blocks_from_data_start(a: &Allocator, cg: u32, addrs: &[Frag]) -> Vec<u64> {
    let geo = a.geometry();
    addrs.iter().map(|&f| (f - geo.group_data_start(cg)) / geo.frags_per_block as u64).collect()
}

#[test]
fn a_sequential_file_on_an_empty_group_is_contiguous_from_the_groups_front() {
    let mut a = allocator(4, &options());
    let ino = a.valloc(0, false).expect("inode").ino;
    let blocks = write_direct(&mut a, ino, 12);
    assert_eq!(blocks_from_data_start(&a, 0, &blocks), (0..12).collect::<Vec<_>>());
}

#[test]
fn rotdelay_leaves_a_gap_after_every_maxcontig_contiguous_blocks() {
    let opts = MkfsOptions { maxcontig: Some(4), rotdelay: RotDelay::Blocks(2), ..options() };
    let mut a = allocator(4, &opts);
    let ino = a.valloc(0, false).expect("inode").ino;
    let blocks = write_direct(&mut a, ino, 12);
    assert_eq!(blocks_from_data_start(&a, 0, &blocks), [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]);
}

#[test]
fn rotdelay_in_milliseconds_on_the_1993_disk_gives_one_block_in_four() {
    // 1993 paper §5.2.1: 4 KiB blocks, 15 ms revolutions of 36 KiB tracks,
    // rot_delay 4 ms, no clustering: "only one in four blocks is allocated
    // to the same file" (Fig. 11).
    let opts = MkfsOptions {
        block_size: 4096,
        fragment_size: 1024,
        maxcontig: Some(1),
        rotdelay: RotDelay::Millis(4),
        sectors_per_track: 72,
        revolutions_per_second: 66,
        ..options()
    };
    let mut a = allocator(4, &opts);
    assert_eq!(rotdelay_gap_frags(a.geometry(), a.policy()), 12);
    let ino = a.valloc(0, false).expect("inode").ino;
    let blocks = write_direct(&mut a, ino, 6);
    assert_eq!(blocks_from_data_start(&a, 0, &blocks), [0, 4, 8, 12, 16, 20]);
}

#[test]
fn the_first_indirect_block_moves_the_file_to_another_group() {
    let mut a = allocator(4, &options());
    let geo = *a.geometry();
    let ino = a.valloc(0, false).expect("inode").ino;
    let direct = write_direct(&mut a, ino, 12);
    assert!(direct.iter().all(|&f| geo.group_of(f) == 0));
    // The indirect block itself, then the first data block it maps.
    let ind_pref = a.blkpref(ino, 12, 0, &[]);
    assert_eq!(ind_pref, geo.group_data_start(1));
    let ind = a.alloc(ino, ind_pref, 8, false).expect("room");
    let mut bap = vec![0; 8];
    let pref = a.blkpref(ino, 12, 0, &bap);
    bap[0] = a.alloc(ino, pref, 8, false).expect("room");
    assert_eq!(geo.group_of(ind), 1);
    assert_eq!(bap[0], ind + 8, "data follows its indirect block in the new group");
    // The next block continues contiguously there.
    assert_eq!(a.blkpref(ino, 13, 1, &bap), bap[0] + 8);
}

#[test]
fn the_first_indirect_block_stays_in_the_inodes_group_only_if_that_group_is_not_below_average() {
    // 4.4BSD starts the search at the inode's own group (lbn 12 / maxbpg
    // is 0): when every other group is fuller, the file stays, but starts
    // over at the group's front rather than after its last block.
    let mut a = allocator(4, &options());
    let geo = *a.geometry();
    for cg in 1..4 {
        for _ in 0..100 {
            a.with_group(cg, |g| g.alloc_block(None)).expect("room");
        }
    }
    let ino = a.valloc(0, false).expect("inode").ino;
    write_direct(&mut a, ino, 12);
    assert_eq!(a.blkpref(ino, 12, 0, &[]), geo.group_data_start(0));
}

#[test]
fn a_big_file_moves_to_the_next_group_every_maxbpg_blocks() {
    let opts = MkfsOptions { maxbpg: Some(16), ..options() };
    let mut a = allocator(4, &opts);
    let geo = *a.geometry();
    let ino = a.valloc(0, false).expect("inode").ino;
    write_direct(&mut a, ino, 12);
    let mut bap = vec![0; 40];
    for i in 0..40 {
        let pref = a.blkpref(ino, 12 + i as Lbn, i, &bap);
        bap[i] = a.alloc(ino, pref, 8, false).expect("room");
    }
    let groups: Vec<u32> = bap.iter().map(|&f| geo.group_of(f)).collect();
    assert!(groups[..16].iter().all(|&g| g == 1), "{groups:?}");
    assert!(groups[16..32].iter().all(|&g| g == 2), "{groups:?}");
    assert!(groups[32..].iter().all(|&g| g == 3), "{groups:?}");
    // Inside each group the blocks are contiguous.
    assert!(bap[1..16].iter().zip(&bap[..15]).all(|(b, a)| *b == a + 8));
}

#[test]
fn a_fragment_tail_grows_in_place_when_the_next_fragments_are_free_and_moves_when_not() {
    let mut a = allocator(4, &options());
    let geo = *a.geometry();
    let ino = a.valloc(0, false).expect("inode").ino;
    let x = a.alloc(ino, 0, 2, false).expect("room");
    // Another file's one-fragment tail lands right after it (the smallest run).
    let y = a.alloc(ino, x, 1, false).expect("room");
    assert_eq!(y, x + 2);
    // x cannot grow into y: it moves. Optimising for time, it gets a whole
    // block and the unused part is freed at once.
    assert_eq!(a.policy().optim, Optim::Time);
    let Realloc::Moved(z) = a.realloccg(x, 2, 4, x, false).expect("room") else {
        panic!("x should have moved");
    };
    assert_eq!(z % 8, 0);
    let g = &a.groups()[geo.group_of(z) as usize];
    let rel = geo.within_group(z);
    assert!((0..4).all(|i| !g.is_frag_free(rel + i)) && (4..8).all(|i| g.is_frag_free(rel + i)));
    // The old fragments are the caller's to free, after its copy.
    assert!(!g.is_frag_free(geo.within_group(x)));
    a.free(x, 2).expect("in use");
    // y can grow in place: the fragments after it are free.
    assert_eq!(a.realloccg(y, 1, 3, y, false).expect("room"), Realloc::Extended);
    // Growing a run that is not allocated is refused as corruption.
    assert_eq!(a.realloccg(x, 2, 3, 0, false).expect_err("freed").errno(), libc::EIO);
    // And z grows in place into the rest of its block.
    assert_eq!(a.realloccg(z, 4, 8, z, false).expect("room"), Realloc::Extended);
    for g in a.groups() {
        g.check().expect("consistent");
    }
}

#[test]
fn optimising_for_space_moves_a_tail_to_a_run_of_exactly_its_size() {
    let mut a = allocator(4, &MkfsOptions { optim: Some(Optim::Space), minfree: 5, ..options() });
    let x = a.alloc(2, 0, 2, false).expect("room");
    assert_eq!(a.alloc(2, x, 1, false).expect("room"), x + 2);
    let _rest_of_xs_block = a.alloc(2, 0, 5, false).expect("room");
    let other = a.alloc(2, 0, 5, false).expect("room"); // breaks a block: a run of 3 left
    let Realloc::Moved(z) = a.realloccg(x, 2, 3, 0, false).expect("room") else {
        panic!("x should have moved");
    };
    assert_eq!(z, other + 5, "the run of exactly 3");
}

#[test]
fn realloccg_switches_between_time_and_space_as_4_4bsd_does() {
    let mut a = allocator(4, &options());
    let dsize = a.data_frags();
    a.totals.free_frags = dsize * 8 / 100; // minfree − 2 = 8% of the data area
    assert_eq!(a.realloc_request(3), 8);
    assert_eq!(a.policy().optim, Optim::Space);
    a.totals.free_frags = dsize * 10 / 200 + 1; // above half of minfree
    assert_eq!(a.realloc_request(3), 3);
    assert_eq!(a.policy().optim, Optim::Space);
    a.totals.free_frags = dsize * 10 / 200;
    assert_eq!(a.realloc_request(3), 3);
    assert_eq!(a.policy().optim, Optim::Time);
}

#[test]
fn dirpref_picks_the_group_with_fewest_directories_among_those_with_above_average_free_inodes() {
    let mut a = allocator(4, &MkfsOptions { dirpref: DirPref::Old, ..options() });
    // The first directory of a new file system is the root, inode 2.
    assert_eq!(a.valloc(0, true).expect("root").ino, 2);
    // Group 0 holds the reserved inodes and the root, so it is below
    // average: the next directory goes to group 1's first inode.
    assert_eq!(a.clone().valloc(2, true).expect("inode").ino, 512);
    let dirs = |a: &mut Allocator, cg: u32, n: usize, is_dir: bool| {
        for _ in 0..n {
            a.with_group(cg, |g| g.alloc_inode(None, is_dir)).expect("room");
        }
    };
    dirs(&mut a, 0, 3, true);
    dirs(&mut a, 1, 1, true);
    dirs(&mut a, 1, 300, false); // fewest directories, but few free inodes
    dirs(&mut a, 2, 2, true);
    dirs(&mut a, 3, 2, true);
    assert_eq!(a.dirpref_old(), 2);
    // Under the old policy the parent does not matter.
    assert_eq!(a.dirpref(ROOT_INO, 0), 2);
    assert_eq!(a.dirpref(3 * 512 + 7, 3), 2);
    let grant = a.valloc(0, true).expect("inode");
    assert_eq!(a.geometry().ino_group(grant.ino), 2);
    assert_eq!(a.groups()[2].counts().directories, 3);
    assert_eq!(a.dirpref_old(), 3);
}

#[test]
fn a_file_inode_goes_to_its_directorys_group() {
    let mut a = allocator(4, &options());
    let dir = a.valloc(0, true).expect("inode").ino;
    let cg = a.geometry().ino_group(dir);
    for _ in 0..10 {
        let file = a.valloc(dir, false).expect("inode");
        assert_eq!(a.geometry().ino_group(file.ino), cg);
    }
}

#[test]
fn valloc_names_the_inode_blocks_to_initialise_once() {
    let mut a = allocator(1, &options());
    let geo = *a.geometry();
    let first = a.valloc(0, false).expect("inode");
    assert_eq!(first.ino, 2);
    assert_eq!((first.init_addr, first.init_blocks), (geo.inode_block_addr(2), 1));
    for _ in 3..32 {
        assert_eq!(a.valloc(first.ino, false).expect("inode").init_blocks, 0);
    }
    let next = a.valloc(first.ino, false).expect("inode");
    assert_eq!(next.ino, 32);
    assert_eq!((next.init_addr, next.init_blocks), (geo.inode_block_addr(32), 1));
}

#[test]
fn inodes_run_out_with_enospc_and_come_back_when_freed() {
    let mut a = allocator(2, &options());
    let mut inos = Vec::new();
    while let Ok(g) = a.valloc(0, false) {
        inos.push(g.ino);
    }
    assert_eq!(inos.len(), 2 * 512 - 2);
    let err = a.valloc(0, false).expect_err("full");
    assert_eq!(err.errno(), libc::ENOSPC);
    a.vfree(inos[100], false).expect("in use");
    assert_eq!(a.valloc(0, false).expect("inode").ino, inos[100]);
    assert!(a.vfree(1, false).is_err(), "reserved");
    assert!(a.vfree(1 << 40, false).is_err(), "out of range");
}

fn fill_group(a: &mut Allocator, cg: u32) {
    while a.with_group(cg, |g| g.alloc_block(None)).is_some() {}
}

#[test]
fn a_full_group_sends_allocation_through_the_quadratic_rehash() {
    let mut a = allocator(8, &options());
    let geo = *a.geometry();
    fill_group(&mut a, 0);
    fill_group(&mut a, 1);
    // 0 full, then 0+1 full, then 1+2 = 3 (a linear search would say 2).
    let got = a.alloc(2, 0, 8, false).expect("room");
    assert_eq!(geo.group_of(got), 3);
    fill_group(&mut a, 3);
    fill_group(&mut a, 7);
    // The rehash (1, 3, 7) finds nothing: the linear pass from 0+2 does.
    let got = a.alloc(2, 0, 8, false).expect("room");
    assert_eq!(geo.group_of(got), 2);
}

#[test]
fn the_minfree_reserve_is_for_root_only() {
    let mut a = allocator(2, &options());
    while a.free_space(a.policy().minfree) >= 8 {
        a.alloc(2, 0, 8, true).expect("room");
    }
    let err = a.alloc(2, 0, 8, false).expect_err("reserve");
    assert_eq!(err.errno(), libc::ENOSPC);
    a.alloc(2, 0, 8, true).expect("root may use the reserve");
    while a.alloc(2, 0, 8, true).is_ok() {}
    assert_eq!(a.totals().free_blocks, 0);
    assert_eq!(a.alloc(2, 0, 8, true).expect_err("full").errno(), libc::ENOSPC);
}

#[test]
fn freeing_what_is_not_allocated_is_refused_as_corruption() {
    let mut a = allocator(2, &options());
    let x = a.alloc(2, 0, 3, false).expect("room");
    let before = a.groups().to_vec();
    for (start, n) in [(x, 4), (x + 3, 1), (0, 1), (a.geometry().total_frags, 1), (8, 8)] {
        let err = a.free(start, n).expect_err("refused");
        assert_eq!(err.errno(), libc::EIO, "{err}");
    }
    assert_eq!(a.groups(), &before[..]);
    assert!(a.take_changed().len() == 1, "only the first allocation changed a group");
}

/// One allocated run as the test remembers it.
#[derive(Clone, Copy)]
struct Extent {
    start: Frag,
    len: u32,
}

/// A model of the free map: every fragment allocated or not.
struct Model {
    used: Vec<bool>,
}

impl Model {
    fn new(a: &Allocator) -> Model {
        let geo = a.geometry();
        let mut used = vec![false; geo.total_frags as usize];
        for cg in 0..geo.ncg {
            let base = geo.group_base(cg) as usize;
            used[base..base + geo.data_offset() as usize].fill(true);
        }
        Model { used }
    }

    fn take(&mut self, e: Extent, frag: u32) {
        assert!(e.start % frag as u64 + e.len as u64 <= frag as u64, "run crosses a block");
        for f in e.start..e.start + e.len as u64 {
            assert!(!self.used[f as usize], "fragment {f} handed out twice");
            self.used[f as usize] = true;
        }
    }

    fn give(&mut self, e: Extent) {
        for f in e.start..e.start + e.len as u64 {
            self.used[f as usize] = false;
        }
    }

    /// Compares with every group's map and the totals with what the model
    /// counts; then every group's own invariants.
    fn compare(&self, a: &Allocator, dirs: u64, inodes: u64) {
        let geo = a.geometry();
        let frag = geo.frags_per_block as usize;
        let mut totals =
            Totals { directories: dirs, free_inodes: geo.ninodes() - 2 - inodes, ..Totals::default() };
        for (f, chunk) in self.used.chunks(frag).enumerate() {
            let free = chunk.iter().filter(|u| !**u).count() as u64;
            if free == frag as u64 {
                totals.free_blocks += 1;
            } else {
                totals.free_frags += free;
            }
            let start = (f * frag) as Frag;
            let g = &a.groups()[geo.group_of(start) as usize];
            for (i, used) in chunk.iter().enumerate() {
                assert_eq!(
                    g.is_frag_free(geo.within_group(start) + i as u32),
                    !used,
                    "fragment {}",
                    start + i as u64
                );
            }
        }
        assert_eq!(a.totals(), totals);
        for g in a.groups() {
            g.check().unwrap_or_else(|why| panic!("group {}: {why}", g.index));
        }
    }
}

#[test]
fn random_allocations_and_frees_keep_every_map_summary_and_total_exact() {
    for seed in 0..4u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let opts = MkfsOptions { maxcontig: Some(4), group_size: 2 * MIB, ..options() };
        let mut a = allocator(3, &opts);
        let geo = *a.geometry();
        let frag = geo.frags_per_block;
        let empty = a.groups().to_vec();
        let mut model = Model::new(&a);
        let mut extents: Vec<Extent> = Vec::new();
        let mut inodes: Vec<(Ino, bool)> = Vec::new();
        for step in 0..3000 {
            let pref = if rng.gen_bool(0.5) { 0 } else { rng.gen_range(0..geo.total_frags) };
            match rng.gen_range(0..10) {
                0..=3 => {
                    let len = rng.gen_range(1..=frag);
                    if let Ok(start) = a.alloc(rng.gen_range(0..geo.ninodes()), pref, len, true) {
                        model.take(Extent { start, len }, frag);
                        extents.push(Extent { start, len });
                    }
                }
                4..=5 if !extents.is_empty() => {
                    // Free all of a run, or its tail (as a truncate does).
                    let i = rng.gen_range(0..extents.len());
                    let e = extents[i];
                    let keep = rng.gen_range(0..e.len);
                    let gone = Extent { start: e.start + keep as u64, len: e.len - keep };
                    a.free(gone.start, gone.len).expect("allocated");
                    model.give(gone);
                    if keep == 0 {
                        extents.swap_remove(i);
                    } else {
                        extents[i].len = keep;
                    }
                }
                6 if !extents.is_empty() => {
                    let i = rng.gen_range(0..extents.len());
                    let e = extents[i];
                    if e.len < frag {
                        let new = rng.gen_range(e.len + 1..=frag);
                        match a.realloccg(e.start, e.len, new, pref, true) {
                            Ok(Realloc::Extended) => {
                                model.take(Extent { start: e.start + e.len as u64, len: new - e.len }, frag);
                                extents[i].len = new;
                            }
                            Ok(Realloc::Moved(to)) => {
                                model.take(Extent { start: to, len: new }, frag);
                                a.free(e.start, e.len).expect("allocated");
                                model.give(e);
                                extents[i] = Extent { start: to, len: new };
                            }
                            Err(err) => assert_eq!(err.errno(), libc::ENOSPC),
                        }
                    }
                }
                7 => {
                    let len = rng.gen_range(1..=geo.maxcontig);
                    if let Some(start) = a.cluster_alloc(2, pref, len) {
                        for b in 0..len as u64 {
                            let e = Extent { start: start + b * frag as u64, len: frag };
                            model.take(e, frag);
                            extents.push(e);
                        }
                    }
                }
                8 => {
                    let parent = inodes.last().map_or(0, |&(i, _)| i);
                    let is_dir = rng.gen_bool(0.3);
                    if let Ok(g) = a.valloc(parent, is_dir) {
                        assert!(!inodes.iter().any(|&(i, _)| i == g.ino) && g.ino >= 2);
                        inodes.push((g.ino, is_dir));
                    }
                }
                _ if !inodes.is_empty() => {
                    let (ino, is_dir) = inodes.swap_remove(rng.gen_range(0..inodes.len()));
                    a.vfree(ino, is_dir).expect("in use");
                }
                _ => {}
            }
            if step % 100 == 0 {
                let dirs = inodes.iter().filter(|i| i.1).count() as u64;
                model.compare(&a, dirs, inodes.len() as u64);
            }
        }
        let dirs = inodes.iter().filter(|i| i.1).count() as u64;
        model.compare(&a, dirs, inodes.len() as u64);
        // Free everything: every group is as mkfs made it, rotors and the
        // inode-initialisation mark aside.
        for e in extents.drain(..) {
            a.free(e.start, e.len).expect("allocated");
        }
        for (ino, is_dir) in inodes.drain(..) {
            a.vfree(ino, is_dir).expect("in use");
        }
        for (g, e) in a.groups().iter().zip(&empty) {
            let mut g = g.clone();
            (g.rotor, g.frotor, g.irotor, g.initialised_inodes) =
                (e.rotor, e.frotor, e.irotor, e.initialised_inodes);
            assert!(g == *e, "seed {seed}: group {} differs from a new one after freeing all", g.index);
        }
        assert_eq!(a.totals(), plan(3 * 2 * MIB, &opts).expect("plan").totals);
    }
}

/// Sets every group's counts to `(free inodes, free blocks, directories)`
/// and the totals to their sum: a hand-built state for the placement
/// functions, which read nothing else.
fn set_counts(a: &mut Allocator, counts: &[(u32, u32, u32)]) {
    let mut totals = Totals::default();
    for (g, &(free_inodes, free_blocks, directories)) in a.groups.iter_mut().zip(counts) {
        g.counts = crate::ffs::cg::GroupCounts { free_inodes, free_blocks, directories, free_frags: 0 };
        totals.add(&g.counts, 1);
    }
    a.totals = totals;
}

/// Four 4 MiB groups of 512 inodes and 8 KiB blocks: free inodes 400,
/// 500, 300, 480 (average 420), free blocks 400, 480, 200, 470 (average
/// 387), directories 10, 2, 40, 4 (average 14).
fn hand_built(options: &MkfsOptions) -> Allocator {
    let mut a = allocator(4, options);
    set_counts(&mut a, &[(400, 400, 10), (500, 480, 2), (300, 200, 40), (480, 470, 4)]);
    a
}

#[test]
fn the_new_dirprefs_limits_follow_the_formulas() {
    let a = hand_built(&options());
    // maxndir = min(14 + 512/16, 512); minifree = 420 − 420/4;
    // minbfree = 387 − 387/4; dirsize = 16384 · 64 = 1 MiB (more than
    // the (4 MiB − 387 · 8 KiB) / 14 directories take now), so
    // maxcontigdirs = min(387 · 8192 / 1 MiB, 255, 512 / 64) = 3.
    let want = DirLimits {
        avgifree: 420,
        avgbfree: 387,
        maxndir: 46,
        minifree: 315,
        minbfree: 291,
        maxcontigdirs: 3,
    };
    assert_eq!(a.dir_limits(), want);
    // Twice the files per directory: dirsize 2 MiB, so 387 · 8 KiB holds
    // one, and ipg / 128 = 4 does not bind.
    let a = hand_built(&MkfsOptions { avgfpdir: 128, ..options() });
    assert_eq!(a.dir_limits().maxcontigdirs, 1);
    // Tiny files: ipg / avgfpdir binds (512 / 256 = 2).
    let a = hand_built(&MkfsOptions { avgfilesize: 1024, avgfpdir: 256, ..options() });
    assert_eq!(a.dir_limits().maxcontigdirs, 2);
    // A guess of one byte: what the directories take now, (4 MiB − 387 ·
    // 8 KiB) / 14 = 73142 bytes each, decides: 387 · 8192 / 73142 = 43.
    let a = hand_built(&MkfsOptions { avgfilesize: 1, avgfpdir: 1, ..options() });
    assert_eq!(a.dir_limits().maxcontigdirs, 43);
    // An empty file system: no average directory, and the floors of 1.
    let mut a = allocator(4, &options());
    set_counts(&mut a, &[(0, 0, 0), (1, 1, 0), (0, 0, 0), (0, 0, 0)]);
    let l = a.dir_limits();
    assert_eq!((l.minifree, l.minbfree, l.maxcontigdirs, l.maxndir), (1, 1, 1, 32));
}

#[test]
fn the_new_dirpref_keeps_a_directory_in_its_parents_group_while_it_has_room_then_scans_forward_and_wraps() {
    let mut a = hand_built(&options());
    let ipg = 512;
    // Group 0 passes every limit: the directory stays with its parent.
    assert_eq!(a.dirpref_near(0), 0);
    assert_eq!(a.dirpref(ipg / 2, 0), 0, "the policy sends a non-root parent to dirpref_near");
    // Group 2 has fewer free inodes than minifree (300 < 315): the next.
    assert_eq!(a.dirpref_near(2), 3);
    // Group 1 is fine on its own.
    assert_eq!(a.dirpref_near(1), 1);
    // Three directories in a row in group 0 (maxcontigdirs): it takes no more.
    a.contigdirs[0] = 3;
    assert_eq!(a.dirpref_near(0), 1);
    // From group 3, with group 3's run full too: past the last group to
    // group 0 (full), then group 1.
    a.contigdirs[3] = 3;
    assert_eq!(a.dirpref_near(3), 1);
    // A group with maxndir directories takes no more: 59 in group 1 make
    // the average 113 / 4 = 28 and maxndir 28 + 32 = 60; one more keeps
    // maxndir at 60 and group 1 reaches it.
    a.contigdirs.fill(0);
    set_counts(&mut a, &[(400, 400, 10), (500, 480, 59), (300, 200, 40), (480, 470, 4)]);
    assert_eq!(a.dir_limits().maxndir, 60);
    assert_eq!(a.dirpref_near(1), 1);
    set_counts(&mut a, &[(400, 400, 10), (500, 480, 60), (300, 200, 40), (480, 470, 4)]);
    assert_eq!(a.dir_limits().maxndir, 60);
    assert_eq!(a.dirpref_near(1), 3, "group 1 is at maxndir and group 2 short of inodes");
}

#[test]
fn the_new_dirprefs_backstop_takes_the_first_group_with_average_free_inodes_from_the_parents() {
    let mut a = hand_built(&options());
    // Every group's run of directories is full: no group passes the
    // limits, and the backstop wants 420 free inodes.
    a.contigdirs.fill(3);
    assert_eq!(a.dirpref_near(0), 1, "group 0 has 400");
    assert_eq!(a.dirpref_near(1), 1);
    assert_eq!(a.dirpref_near(2), 3);
    assert_eq!(a.dirpref_near(3), 3);
    // Group 1 out of blocks and group 3 at its directory limit: from group
    // 3 (inodes enough) the backstop stays there.
    a.contigdirs.fill(0);
    set_counts(&mut a, &[(400, 400, 10), (500, 0, 2), (300, 200, 40), (480, 470, 60)]);
    assert_eq!(a.dirpref_near(3), 0, "group 3 fails maxndir, group 0 passes");
    set_counts(&mut a, &[(100, 400, 10), (500, 0, 2), (300, 200, 40), (480, 470, 60)]);
    assert_eq!(a.dirpref_near(2), 3, "nothing passes; group 3 has average free inodes (345)");
    assert_eq!(a.dirpref_near(0), 1, "nothing passes; group 1 is the first from 0 with 345");
}

#[test]
fn the_new_dirpref_spreads_top_level_directories_from_a_random_start() {
    let mut a = hand_built(&options());
    // Groups with average free inodes (420) and blocks (387): 1 and 3;
    // group 1 has fewer directories, wherever the scan starts.
    for start in 0..4 {
        assert_eq!(a.dirpref_top(start), 1, "start {start}");
        assert_eq!(a.dirpref(ROOT_INO, start), 1);
    }
    // A tie goes to the first in the scan, which wraps.
    set_counts(&mut a, &[(400, 400, 10), (500, 480, 2), (300, 200, 40), (480, 470, 2)]);
    assert_eq!(a.dirpref_top(0), 1);
    assert_eq!(a.dirpref_top(1), 1);
    assert_eq!(a.dirpref_top(2), 3);
    assert_eq!(a.dirpref_top(3), 3);
    // No group has both averages: the start.
    set_counts(&mut a, &[(600, 0, 0), (0, 600, 0), (200, 200, 0), (200, 200, 0)]);
    for start in 0..4 {
        assert_eq!(a.dirpref_top(start), start);
    }
    // The old policy on the same state: free inodes only (250 average).
    assert_eq!(a.dirpref_old(), 0);
}

#[test]
fn valloc_counts_directories_made_in_a_row_and_a_file_between_lets_the_next_stay() {
    let mut a = allocator(4, &options());
    assert_eq!(a.policy().dirpref, DirPref::New, "the default");
    assert_eq!(a.valloc(0, true).expect("root").ino, ROOT_INO);
    let top = a.valloc(ROOT_INO, true).expect("top-level directory").ino;
    let home = a.geometry().ino_group(top);
    // 494 free blocks a group: maxcontigdirs = 494 · 8 KiB / 1 MiB = 3.
    assert_eq!(a.dir_limits().maxcontigdirs, 3);
    let group = |a: &mut Allocator, is_dir: bool| {
        let ino = a.valloc(top, is_dir).expect("inode").ino;
        a.geometry().ino_group(ino)
    };
    // The top-level directory itself counted one in its group.
    assert_eq!(a.contigdirs[home as usize], 1);
    assert_eq!(group(&mut a, true), home);
    assert_eq!(group(&mut a, true), home);
    assert_eq!(a.contigdirs[home as usize], 3);
    assert_eq!(group(&mut a, true), (home + 1) % 4, "three in a row: the next moves on");
    assert_eq!(group(&mut a, false), home, "a file stays with its directory");
    assert_eq!(a.contigdirs[home as usize], 2);
    assert_eq!(group(&mut a, true), home, "and lets the next directory stay");
    assert_eq!(a.contigdirs[home as usize], 3);
    for _ in 0..10 {
        group(&mut a, false);
    }
    assert_eq!(a.contigdirs[home as usize], 0, "never below zero");
    a.contigdirs[home as usize] = MAX_CONTIGDIRS;
    a.count_contiguous_dir(home, true);
    assert_eq!(a.contigdirs[home as usize], MAX_CONTIGDIRS, "never above a byte");
}

#[test]
fn the_old_policy_never_draws_a_random_start() {
    let mut a = allocator(4, &MkfsOptions { dirpref: DirPref::Old, ..options() });
    let before = a.rng;
    a.valloc(0, true).expect("root");
    a.valloc(ROOT_INO, true).expect("directory");
    assert_eq!(a.rng, before);
    let mut a = allocator(4, &options());
    a.valloc(0, true).expect("root");
    a.valloc(ROOT_INO, true).expect("directory");
    assert_ne!(a.rng, before, "the new policy draws one for a top-level directory");
}

#[test]
fn the_invariant_check_passes_after_allocations_and_finds_totals_or_a_group_out_of_step() {
    let mut a = allocator(4, &options());
    let got = write_direct(&mut a, 3, 10);
    a.free(got[0], a.geometry().frags_per_block).expect("free");
    assert_eq!(a.check_invariants(), Ok(()));
    let mut off = a.clone();
    off.totals.free_blocks += 1;
    assert!(off.check_invariants().is_err_and(|e| e.contains("sum")));
    // A changed group whose count disagrees with its bitmap.
    let mut off = a.clone();
    let g = *off.changed.iter().next().expect("a group changed") as usize;
    off.groups[g].counts.free_inodes -= 1;
    off.totals.free_inodes -= 1;
    assert!(off.check_invariants().is_err_and(|e| e.contains("cylinder group")));
}
