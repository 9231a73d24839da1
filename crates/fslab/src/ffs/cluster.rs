//! Write clustering as a file is written: each run of a file's blocks that
//! follow one another both in the file and on the disk goes to the disk
//! as soon as it is `maxcontig` blocks long (4.4BSD `cluster_write`; the
//! 1993 paper's EFS, §5.1: "when an extent's worth (i.e. maxcontig blocks)
//! have been collected, they are bundled together into a cluster").
//!
//! Without it a delayed data block waits for the buffer cache's write-back
//! threshold or the next sync, and the disk idles while a large file is
//! copied in: a sequential writer loses the overlap of its copying with the
//! disk's writing. Only a regular file's data blocks that a write filled to
//! their end take part, as in `ffs_write` (a partly written block is
//! delayed: the next write probably completes it). A run broken by a seek
//! in the file or a jump on the disk is pushed as it stands and a new one
//! begins — unless the file's next block, at its end, merely landed
//! elsewhere on the disk: then `realloc` first tries to move the run and
//! the block to a contiguous free run, as 4.4BSD's `cluster_write` tried
//! `ffs_reallocblks` (the 1997 realloc paper; `realloc.rs`).
//!
//! Which broken runs are pushed is the mount's [`RunPush`]. 4.4BSD pushed
//! every one, so a random writer sent each block to the disk alone as its
//! next write came. FreeBSD (`cluster_write` since 4.0) pushes only a run a
//! sequential writer made and leaves a random writer's blocks delayed, for
//! write-back to send in address order with their neighbours: fslab's
//! default. A run counts as sequential when it holds more than one block
//! or its first block continued the file's previous run.

use super::options::RunPush;
use crate::cache::{BlockKey, IntMap};
use crate::format::{Daddr, Ino, Lbn};

/// A run of whole blocks of one file, consecutive in the file and on the
/// disk, written and not yet pushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    /// The file's first block in the run.
    pub first: Lbn,
    /// Its address.
    pub addr: Daddr,
    /// Blocks in the run.
    pub blocks: u32,
    /// Whether a block of the run has been written to the disk since it
    /// joined: such a run is never moved (`realloc`).
    pub written: bool,
    /// Whether the run's first block continued the file's previous run in
    /// the file (the disk address jumped): a sequential writer's run.
    pub continues: bool,
}

impl Run {
    /// Whether a sequential writer made the run (see [`RunPush`]).
    fn sequential(&self) -> bool {
        self.blocks > 1 || self.continues
    }

    pub(super) fn keys(&self, ino: Ino) -> impl Iterator<Item = BlockKey> {
        let first = self.first;
        (0..self.blocks as Lbn).map(move |i| (ino, first + i))
    }
}

/// Each file's open run (4.4BSD kept `v_cstart`, `v_lastw`, `v_lasta` and
/// `v_clen` in the vnode: two files written in turn each keep theirs).
#[derive(Debug, Default)]
pub(super) struct WriteClusters {
    open: IntMap<Ino, Run>,
}

impl WriteClusters {
    /// Block `lbn` of `ino`, at `addr`, was written to its end. Returns
    /// the runs to push now: the file's previous run if this block does not
    /// continue it (and `push` says so), and the run this block completes
    /// at `maxcontig` blocks.
    pub(super) fn note(
        &mut self,
        ino: Ino,
        lbn: Lbn,
        addr: Daddr,
        frags_per_block: u64,
        maxcontig: u32,
        push: RunPush,
    ) -> [Option<Run>; 2] {
        let mut broken = None;
        match self.open.get_mut(&ino) {
            Some(run)
                if lbn == run.first + run.blocks as Lbn
                    && addr == run.addr + run.blocks as u64 * frags_per_block =>
            {
                run.blocks += 1;
            }
            // The same block again (a rewrite inside the run) changes nothing.
            Some(run) if (run.first..run.first + run.blocks as Lbn).contains(&lbn) => {}
            run => {
                let continues = run.is_some_and(|run| lbn == run.first + run.blocks as Lbn);
                let run = Run { first: lbn, addr, blocks: 1, written: false, continues };
                broken = self.open.insert(ino, run).filter(|old| match push {
                    RunPush::Every => true,
                    RunPush::Sequential => old.sequential(),
                });
            }
        }
        let full = match self.open.get(&ino) {
            Some(run) if run.blocks >= maxcontig.max(1) => self.open.remove(&ino),
            _ => None,
        };
        [broken, full]
    }

    /// The memory the open runs take.
    pub(super) fn memory(&self) -> crate::memory::MemoryUse {
        let bytes = crate::memory::hash_map_bytes(&self.open);
        crate::memory::MemoryUse::new("open write clusters", self.open.len(), bytes)
    }

    /// The open run of `ino`, if any.
    pub(super) fn open_run(&self, ino: Ino) -> Option<Run> {
        self.open.get(&ino).copied()
    }

    /// The open run of `ino` now starts at `addr` (`realloc` moved it).
    pub(super) fn moved(&mut self, ino: Ino, addr: Daddr) {
        if let Some(run) = self.open.get_mut(&ino) {
            run.addr = addr;
        }
    }

    /// Block `lbn` of `ino` was written to the disk: if it is in the
    /// file's open run, the run may no longer move.
    pub(super) fn written(&mut self, ino: Ino, lbn: Lbn) {
        if let Some(run) = self.open.get_mut(&ino) {
            if (run.first..run.first + run.blocks as Lbn).contains(&lbn) {
                run.written = true;
            }
        }
    }

    /// Forgets the open run of `ino` (its file was freed).
    pub(super) fn forget(&mut self, ino: Ino) {
        self.open.remove(&ino);
    }

    /// Forgets every open run (a sync wrote them all).
    pub(super) fn clear(&mut self) {
        self.open.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FPB: u64 = 8;

    fn note(c: &mut WriteClusters, ino: Ino, lbn: Lbn, addr: u64, max: u32) -> Vec<Run> {
        c.note(ino, lbn, Daddr::new(addr), FPB, max, RunPush::Every).into_iter().flatten().collect()
    }

    #[test]
    fn a_sequential_writer_pushes_each_run_when_it_reaches_maxcontig() {
        let mut c = WriteClusters::default();
        for lbn in 0..3 {
            assert!(note(&mut c, 5, lbn, 1000 + lbn as u64 * FPB, 4).is_empty());
        }
        let pushed = note(&mut c, 5, 3, 1000 + 3 * FPB, 4);
        assert_eq!(
            pushed,
            vec![Run { first: 0, addr: Daddr::new(1000), blocks: 4, written: false, continues: false }]
        );
        // The next block starts a new run.
        assert!(note(&mut c, 5, 4, 1000 + 4 * FPB, 4).is_empty());
    }

    #[test]
    fn a_jump_on_the_disk_or_in_the_file_pushes_the_run_as_it_stands() {
        let mut c = WriteClusters::default();
        note(&mut c, 5, 0, 1000, 8);
        note(&mut c, 5, 1, 1000 + FPB, 8);
        // Block 2 went to another group (blkpref at the indirect boundary).
        let pushed = note(&mut c, 5, 2, 9000, 8);
        assert_eq!(
            pushed,
            vec![Run { first: 0, addr: Daddr::new(1000), blocks: 2, written: false, continues: false }]
        );
        // A seek back in the file breaks the new run too.
        let pushed = note(&mut c, 5, 0, 1000, 8);
        assert_eq!(
            pushed,
            vec![Run { first: 2, addr: Daddr::new(9000), blocks: 1, written: false, continues: true }]
        );
    }

    #[test]
    fn files_written_in_turn_keep_their_own_runs() {
        let mut c = WriteClusters::default();
        note(&mut c, 5, 0, 1000, 2);
        assert!(note(&mut c, 6, 0, 5000, 2).is_empty());
        assert_eq!(note(&mut c, 5, 1, 1000 + FPB, 2).len(), 1);
        assert_eq!(note(&mut c, 6, 1, 5000 + FPB, 2).len(), 1);
        c.forget(5);
        c.clear();
        assert!(c.open.is_empty());
    }

    #[test]
    fn a_write_of_a_block_in_the_run_marks_it_written_and_a_move_gives_it_its_new_place() {
        let mut c = WriteClusters::default();
        note(&mut c, 5, 0, 1000, 8);
        note(&mut c, 5, 1, 1000 + FPB, 8);
        c.written(5, 2);
        c.written(6, 0);
        assert!(!c.open_run(5).is_some_and(|r| r.written), "a block outside the run");
        c.moved(5, Daddr::new(4000));
        assert!(note(&mut c, 5, 2, 4000 + 2 * FPB, 8).is_empty(), "the moved run continues");
        c.written(5, 1);
        assert_eq!(
            c.open_run(5),
            Some(Run { first: 0, addr: Daddr::new(4000), blocks: 3, written: true, continues: false })
        );
    }

    #[test]
    fn rewriting_a_block_inside_the_run_keeps_it_and_maxcontig_one_pushes_every_block() {
        let mut c = WriteClusters::default();
        note(&mut c, 5, 0, 1000, 4);
        note(&mut c, 5, 1, 1000 + FPB, 4);
        assert!(note(&mut c, 5, 1, 1000 + FPB, 4).is_empty());
        assert_eq!(note(&mut c, 5, 2, 1000 + 2 * FPB, 4), vec![]);
        assert_eq!(note(&mut c, 5, 3, 1000 + 3 * FPB, 4)[0].blocks, 4);
        assert_eq!(
            note(&mut c, 7, 0, 64, 1),
            vec![Run { first: 0, addr: Daddr::new(64), blocks: 1, written: false, continues: false }]
        );
    }

    #[test]
    fn a_random_writers_lone_blocks_stay_delayed_unless_every_run_is_pushed() {
        let sequential = |c: &mut WriteClusters, lbn: Lbn, addr: u64| -> Vec<Run> {
            c.note(5, lbn, Daddr::new(addr), FPB, 8, RunPush::Sequential).into_iter().flatten().collect()
        };
        let mut c = WriteClusters::default();
        // Blocks 7, 3 and 11 one after another: each breaks a run of one
        // block that no sequential writer made.
        assert!(sequential(&mut c, 7, 7000).is_empty());
        assert!(sequential(&mut c, 3, 3000).is_empty());
        assert!(sequential(&mut c, 11, 11000).is_empty());
        // Two blocks in a row make a sequential run, pushed when broken.
        assert!(sequential(&mut c, 12, 11000 + FPB).is_empty());
        let pushed = sequential(&mut c, 40, 40000);
        assert_eq!(pushed.iter().map(|r| (r.first, r.blocks)).collect::<Vec<_>>(), vec![(11, 2)]);
        // A sequential writer's next block landing elsewhere on the disk
        // starts a run of one that continues the file: still pushed.
        assert!(sequential(&mut c, 41, 40000 + FPB).is_empty());
        assert!(sequential(&mut c, 42, 90000).len() == 1);
        let pushed = sequential(&mut c, 0, 100);
        assert_eq!(
            pushed.iter().map(|r| (r.first, r.blocks, r.continues)).collect::<Vec<_>>(),
            vec![(42, 1, true)]
        );
        // The 4.4BSD rule pushes the lone block too.
        let mut every = WriteClusters::default();
        every.note(5, 7, Daddr::new(7000), FPB, 8, RunPush::Every);
        let pushed = every.note(5, 3, Daddr::new(3000), FPB, 8, RunPush::Every);
        assert_eq!(pushed.into_iter().flatten().map(|r| r.first).collect::<Vec<_>>(), vec![7]);
    }
}
