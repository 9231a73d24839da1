//! Tests of the block-map engine (`bmap.rs`) over a toy layout (one inode,
//! indirect blocks of four pointers): balloc and pointer at every level,
//! free_range, next_data, contiguous runs, move_blocks and the walk.

use super::*;
use crate::format::blockno::seal_indirect;
use crate::format::blockno::{check_indirect, INDIRECT_TRAILER, POINTER_BYTES};
use std::collections::BTreeMap;

/// A toy layout: one inode, indirect blocks of four pointers, addresses
/// handed out in order by `assign`, indirect blocks kept in memory
/// until `flush` seals them onto the "disk".
struct Toy {
    inode: Inode,
    disk: BTreeMap<Daddr, Vec<u8>>,
    memory: BTreeMap<Lbn, Vec<u8>>,
    next: u64,
    released: Vec<(Lbn, Daddr)>,
}

const POINTERS: u64 = 4;
const BLOCK: usize = POINTERS as usize * POINTER_BYTES + INDIRECT_TRAILER;

impl Toy {
    fn new() -> Toy {
        Toy {
            inode: Inode { ino: 7, ..Inode::default() },
            disk: BTreeMap::new(),
            memory: BTreeMap::new(),
            next: 100,
            released: Vec::new(),
        }
    }

    /// The indirect block whose sealed copy is on the disk at `addr`.
    fn disk_lbn(&self, addr: Daddr) -> Lbn {
        (-200..0)
            .find(|&l| self.disk.get(&addr).is_some_and(|b| check_indirect(b, 7, l, addr).is_ok()))
            .expect("a sealed indirect block")
    }

    /// Writes every indirect block in memory to its address, sealed.
    fn flush(&mut self) {
        let lbns: Vec<Lbn> = self.memory.keys().copied().collect();
        let addrs: Vec<Daddr> = lbns.iter().map(|&l| pointer(self, 7, l).expect("pointer")).collect();
        for (lbn, addr) in lbns.into_iter().zip(addrs) {
            let mut sealed = self.memory.remove(&lbn).expect("in memory");
            seal_indirect(&mut sealed, 7, lbn);
            self.disk.insert(addr, sealed);
        }
    }
}

impl BlockTree for Toy {
    fn geometry(&self) -> Geometry {
        Geometry { nindir: POINTERS, sectored: false }
    }
    fn address_limit(&self) -> u64 {
        1 << 20
    }
    fn inode(&mut self, _ino: Ino) -> Result<&Inode> {
        Ok(&self.inode)
    }
    fn inode_mut(&mut self, _ino: Ino) -> Result<&mut Inode> {
        Ok(&mut self.inode)
    }
    fn in_memory(&self, _ino: Ino, lbn: Lbn) -> bool {
        self.memory.contains_key(&lbn)
    }
    fn read_indirect(&mut self, ino: Ino, meta: Lbn, addr: Daddr) -> Result<()> {
        let block = self.disk.get(&addr).cloned().unwrap_or_else(|| vec![0; BLOCK]);
        check_indirect(&block, ino, meta, addr)?;
        self.memory.insert(meta, block);
        Ok(())
    }
    fn indirect(&mut self, _ino: Ino, meta: Lbn) -> Result<&[u8]> {
        self.memory.get(&meta).map(|b| &b[..]).ok_or_else(|| errno(libc::EIO, "not in memory"))
    }
    fn indirect_mut(&mut self, _ino: Ino, meta: Lbn) -> Result<&mut [u8]> {
        Ok(self.memory.entry(meta).or_insert_with(|| vec![0; BLOCK]))
    }
    fn release(&mut self, _ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        self.memory.remove(&lbn);
        self.released.push((lbn, addr));
        Ok(())
    }
    fn assign(&mut self, _ino: Ino, _lbn: Lbn, preference: Daddr) -> Result<Daddr> {
        // Next to the preference when that is the newest address.
        self.next = self.next.max(preference.get()) + 1;
        Ok(Daddr::new(self.next))
    }
    fn relocate(&mut self, ino: Ino, from: Lbn, to: Lbn, addr: Daddr) -> Result<Daddr> {
        if let Some(block) = self.memory.remove(&from) {
            self.memory.insert(to, block);
        }
        balloc_above(self, ino, to)?;
        Ok(addr)
    }
}

/// Data blocks of the toy geometry at every level: direct (0..12),
/// single (12..16), double (16..32) and triple (32..96) indirect.
const SAMPLE: [u64; 8] = [0, 11, 12, 15, 16, 31, 32, 95];

#[test]
fn a_run_stops_where_its_pointers_do() {
    let mut t = Toy::new();
    // Data blocks 0..24 one after another on disk, across the end of
    // the direct slots (12), the single indirect block (12..16) and
    // into the double indirect tree (16..).
    for lbn in 0..24 {
        balloc(&mut t, 7, lbn).expect("balloc");
        set_pointer(&mut t, 7, lbn, Daddr::new(500 + lbn as u64)).expect("set_pointer");
    }
    t.flush();
    let run = |t: &mut Toy, lbn: Lbn| contiguous_run(t, 7, lbn, Daddr::new(500 + lbn as u64), 64, 1);
    assert_eq!(run(&mut t, 0).expect("run"), 12, "the direct slots' run");
    assert!(t.memory.is_empty(), "counting it read no indirect block");
    assert_eq!(run(&mut t, 5).expect("run"), 7);
    assert_eq!(run(&mut t, 12).expect("run"), 4, "the single indirect block's run");
    assert_eq!(run(&mut t, 16).expect("run"), 4, "one indirect block of the double indirect tree");
}

#[test]
fn balloc_gives_every_level_an_address_and_pointer_finds_it() {
    let mut t = Toy::new();
    let mut data = BTreeMap::new();
    for lbn in SAMPLE {
        data.insert(lbn, balloc(&mut t, 7, lbn as Lbn).expect("balloc"));
    }
    t.flush();
    for (&lbn, &addr) in &data {
        assert!(addr.is_some());
        assert_eq!(pointer(&mut t, 7, lbn as Lbn).expect("pointer"), addr, "block {lbn}");
    }
    assert_eq!(balloc(&mut t, 7, 12).expect("again"), data[&12], "an existing block keeps its address");
    assert_eq!(pointer(&mut t, 7, 13).expect("hole"), Daddr::NONE);
    // -12; -17 with -16 and -28 below it; -34 with -33 > -32 and -81 > -92.
    let metas: Vec<Lbn> = t.disk.keys().map(|&a| t.disk_lbn(a)).collect();
    assert_eq!(metas.len(), 9, "indirect blocks {metas:?}");
    assert_eq!(
        metas.iter().copied().collect::<std::collections::BTreeSet<_>>(),
        [-12, -16, -17, -28, -32, -33, -34, -81, -92].into_iter().collect()
    );
    assert!(pointer(&mut t, 7, 1 << 30).is_err(), "past the largest file");
}

#[test]
fn free_range_frees_the_range_and_the_indirect_blocks_it_empties() {
    let mut t = Toy::new();
    for lbn in 0..40 {
        balloc(&mut t, 7, lbn).expect("balloc");
    }
    t.flush();
    // Free the second half of the single tree and the whole double tree.
    free_range(&mut t, 7, 14, 31).expect("free");
    let freed: Vec<Lbn> = t.released.iter().map(|&(l, _)| l).filter(|&l| l >= 0).collect();
    assert_eq!(freed, (14..32).collect::<Vec<_>>());
    let metas: Vec<Lbn> = t.released.iter().map(|&(l, _)| l).filter(|&l| l < 0).collect();
    assert_eq!(metas, vec![-16, -20, -24, -28, -17], "the double tree, children first; -12 keeps 12, 13");
    assert!(t.released.iter().all(|&(_, a)| a.is_some()));
    assert!(exists(&mut t, 7, 13).expect("13"));
    assert!(!exists(&mut t, 7, 14).expect("14"));
    assert!(exists(&mut t, 7, 32).expect("32"), "the triple tree is untouched");
    assert_eq!(t.inode.indirect[1], Daddr::NONE);
    t.released.clear();
    free_range(&mut t, 7, 0, u64::MAX).expect("truncate");
    assert!(t.inode.direct.iter().chain(&t.inode.indirect).all(|a| a.is_none()));
    assert_eq!(t.released.iter().filter(|&&(l, _)| l >= 0).count(), 14 + 8);
}

#[test]
fn next_data_skips_holes_and_whole_absent_trees() {
    let mut t = Toy::new();
    for lbn in [3, 40, 41] {
        balloc(&mut t, 7, lbn).expect("balloc");
    }
    t.flush();
    assert_eq!(next_data(&mut t, 7, 0, 96).expect("search"), Some(3));
    assert_eq!(next_data(&mut t, 7, 4, 96).expect("search"), Some(40));
    assert_eq!(next_data(&mut t, 7, 42, 96).expect("search"), None);
    assert_eq!(next_data(&mut t, 7, 4, 40).expect("search"), None, "the end bounds the search");
}

#[test]
fn next_data_among_the_direct_blocks_sees_blocks_held_in_memory_and_refuses_a_pointer_past_the_device() {
    let mut t = Toy::new();
    balloc(&mut t, 7, 5).expect("balloc");
    t.flush();
    // A block held in memory with no address yet (LFS's new blocks).
    t.memory.insert(2, vec![0; BLOCK]);
    assert_eq!(next_data(&mut t, 7, 0, 96).expect("search"), Some(2));
    assert_eq!(next_data(&mut t, 7, 3, 96).expect("search"), Some(5));
    assert_eq!(next_data(&mut t, 7, 3, 5).expect("search"), None, "the end bounds the search");
    t.memory.insert(4, vec![0; BLOCK]);
    assert_eq!(next_data(&mut t, 7, 3, 96).expect("search"), Some(4), "memory before the disk");
    t.inode.direct[8] = Daddr::new(1 << 20);
    assert!(next_data(&mut t, 7, 6, 96).is_err(), "a pointer past the device is corrupt");
}

#[test]
fn a_run_stops_at_a_gap_on_disk_or_a_block_held_in_memory() {
    let mut t = Toy::new();
    for lbn in 0..6 {
        balloc(&mut t, 7, lbn).expect("balloc");
    }
    let first = pointer(&mut t, 7, 0).expect("pointer");
    assert_eq!(contiguous_run(&mut t, 7, 0, first, 10, 1).expect("run"), 6);
    assert_eq!(contiguous_run(&mut t, 7, 0, first, 4, 1).expect("run"), 4);
    assert_eq!(contiguous_run(&mut t, 7, 0, first, 10, 2).expect("run"), 1, "two units a block");
    set_pointer(&mut t, 7, 3, Daddr::new(5000)).expect("move");
    assert_eq!(contiguous_run(&mut t, 7, 0, first, 10, 1).expect("run"), 3);
}

#[test]
fn move_blocks_shifts_pointers_both_ways_across_indirect_levels_and_frees_what_it_lands_on() {
    let mut t = Toy::new();
    for lbn in [0, 2, 5, 11, 13, 20] {
        balloc(&mut t, 7, lbn).expect("balloc");
    }
    t.flush();
    let before: BTreeMap<u64, Daddr> = [0u64, 2, 5, 11, 13, 20]
        .iter()
        .map(|&l| (l, pointer(&mut t, 7, l as Lbn).expect("pointer")))
        .collect();
    // Collapse blocks 2..5 away: 5.. moves down by 3; 2 is landed on.
    move_blocks(&mut t, 7, 5, 2, 20).expect("down");
    let now: Vec<u64> = data_blocks(&mut t, 7, 0, 96).expect("data");
    assert_eq!(now, vec![0, 2, 8, 10, 17]);
    assert_eq!(pointer(&mut t, 7, 2).expect("2"), before[&5], "the pointer moved, not the data");
    assert_eq!(pointer(&mut t, 7, 17).expect("17"), before[&20], "out of the double tree into the single");
    assert!(t.released.iter().any(|&(l, a)| l == 2 && a == before[&2]), "what was landed on is freed");
    // Insert three blocks at 2: everything from 2 moves up again.
    move_blocks(&mut t, 7, 2, 5, 20).expect("up");
    assert_eq!(data_blocks(&mut t, 7, 0, 96).expect("data"), vec![0, 5, 11, 13, 20]);
    for l in [0u64, 5, 11, 13, 20] {
        assert_eq!(pointer(&mut t, 7, l as Lbn).expect("pointer"), before[&l], "block {l}");
    }
    assert!(move_blocks(&mut t, 7, 0, 90, 10).is_err(), "past the largest file");
}

/// Records what a walk visits.
struct Seen {
    disk: BTreeMap<Daddr, Vec<u8>>,
    pointers: Vec<Lbn>,
    unreadable: Vec<Lbn>,
}

impl Visitor for Seen {
    fn pointer(&mut self, lbn: Lbn, _addr: Daddr) -> bool {
        self.pointers.push(lbn);
        true
    }
    fn read(&mut self, addr: Daddr) -> Result<Vec<u8>> {
        self.disk.get(&addr).cloned().ok_or_else(|| errno(libc::EIO, "unreadable"))
    }
    fn unreadable(&mut self, lbn: Lbn, _addr: Daddr, _error: Error) {
        self.unreadable.push(lbn);
    }
}

#[test]
fn walk_visits_every_pointer_and_follows_only_sound_indirect_blocks() {
    let mut t = Toy::new();
    for lbn in [1, 12, 16, 21] {
        balloc(&mut t, 7, lbn).expect("balloc");
    }
    t.inode.xattr = Daddr::new(9);
    t.flush();
    let g = t.geometry();
    let mut seen = Seen { disk: t.disk.clone(), pointers: Vec::new(), unreadable: Vec::new() };
    walk(&g, &t.inode, &mut seen);
    assert_eq!(seen.pointers, vec![1, -12, 12, -17, -16, 16, -20, 21, XATTR_LBN]);
    assert!(seen.unreadable.is_empty());

    // A flipped pointer bit in the double tree's block -20: reported,
    // not followed; the rest is walked.
    let at = pointer(&mut t, 7, -20).expect("pointer");
    let mut disk = t.disk.clone();
    if let Some(b) = disk.get_mut(&at) {
        b[4] ^= 1;
    }
    let mut seen = Seen { disk, pointers: Vec::new(), unreadable: Vec::new() };
    walk(&g, &t.inode, &mut seen);
    assert_eq!(seen.pointers, vec![1, -12, 12, -17, -16, 16, -20, XATTR_LBN]);
    assert_eq!(seen.unreadable, vec![-20]);
}
