//! One cleaning pass (1993 paper §3.5): rank the segments by the policy,
//! read the best ones, keep their live blocks, make sure moving them — with
//! the indirect, inode and ifile blocks the move dirties (the hidden cost) —
//! frees more than it consumes and fits in the space the cleaner may use,
//! rewrite them in the policy's order, and mark the segments clean.

use crate::mechanism::Mechanism;
use crate::policy::Policy;
use fslab::lfs::clean::{parse_segment, BlockKind, BlockRef, Destination, MarkBlock, SpaceMaker, Urgency};
use fslab::lfs::layout::WriteClock;
use fslab::lfs::Lfs;
use fslab::Result;
use std::collections::{HashMap, HashSet};

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// Segments marked clean (writable after the next checkpoint).
    pub cleaned: Vec<u64>,
    /// Blocks and inodes rewritten.
    pub moved: u64,
    /// Segments read.
    pub segments_read: u64,
    /// Segments left as they were because a live block in them could not
    /// be read or failed its checksum (EIO). This cleaner does not try
    /// them again; fsck, on the unmounted image, says what is wrong.
    pub unreadable: Vec<u64>,
}

/// Why a segment was not worth cleaning when it was last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rejected {
    live_bytes: u64,
    lastmod: WriteClock,
    excess_bytes: u64,
    /// The pass that rejected it: the cost also depends on what else is
    /// dirty, so a rejection is forgotten after [`REJECTION_PASSES`].
    pass: u64,
}

/// Passes after which a rejected segment is looked at again regardless.
const REJECTION_PASSES: u64 = 64;

impl Rejected {
    /// Whether `state` may have become worth reading again.
    fn still(&self, live_bytes: u64, lastmod: WriteClock, pass: u64) -> bool {
        lastmod == self.lastmod
            && live_bytes + self.excess_bytes > self.live_bytes
            && pass < self.pass + REJECTION_PASSES
    }
}

/// How a pass reads the segments it examines and hands their live blocks
/// to `markv`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SegmentReads {
    /// Only the summary blocks are read; `markv` reads the live blocks not
    /// already cached, one request each, and moves a whole pass's blocks in
    /// one call. Fewest bytes read (the write cost counts bytes); what
    /// fslab's mounts use.
    #[default]
    LiveBlocks,
    /// The 1993 paper's cleaner (§3): each segment is read whole from the
    /// raw partition in one request, its summaries walked in memory, and
    /// the live blocks' contents handed to `markv`, one segment's worth per
    /// call, as the paper's cleaner called `lfs_markv` for each segment it
    /// read. On a disk a segment read is one seek and one rotation where
    /// reading the live blocks costs both for each; and a call's blocks
    /// stay within a small buffer cache instead of pushing the indirect
    /// blocks that the next `bmapv` needs out of it.
    WholeSegments,
}

/// A cleaner: a policy and the loop that applies it.
pub struct Cleaner {
    policy: Box<dyn Policy>,
    reads: SegmentReads,
    max_segments_per_pass: usize,
    /// Segments read and found not worth moving: the live bytes and time
    /// they had then, and by how many blocks the move cost more than it
    /// would free. Not read again until that many live bytes have died (or
    /// the segment was written again).
    rejected: HashMap<u64, Rejected>,
    /// Passes run so far.
    passes: u64,
    /// Segments with a live block that could not be read ([`Pass::unreadable`]).
    unreadable: HashSet<u64>,
}

impl Cleaner {
    /// A cleaner applying `policy`, cleaning up to 16 segments a pass (as
    /// many as fit in the space the cleaner may use).
    pub fn new(policy: Box<dyn Policy>) -> Cleaner {
        Cleaner {
            policy,
            reads: SegmentReads::default(),
            max_segments_per_pass: 16,
            rejected: HashMap::new(),
            passes: 0,
            unreadable: HashSet::new(),
        }
    }

    /// This cleaner, reading segments as `reads` says.
    pub fn with_reads(mut self, reads: SegmentReads) -> Cleaner {
        self.reads = reads;
        self
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Makes this the cleaner `lfs`'s writers run when short of clean
    /// segments, and places users' writes as the policy asks.
    pub fn install(self, lfs: &mut Lfs) {
        lfs.set_separation(self.policy.user_separation());
        lfs.set_cleaner(Some(Box::new(self)));
    }

    /// Runs one pass. A pass that finds nothing worth cleaning, or no room
    /// to move anything, cleans nothing and says so with an empty `cleaned`.
    pub fn pass<M: Mechanism + ?Sized>(&mut self, m: &mut M) -> Result<Pass> {
        self.passes += 1;
        let table = m.segment_table()?;
        let bs = table.block_size as u64;
        let mut candidates: Vec<(f64, u64)> = table
            .segments
            .iter()
            .enumerate()
            // A segment whose live data alone fills it cannot pay for itself.
            .filter(|(seg, s)| {
                s.cleanable
                    && !s.clean
                    && s.live_bytes.div_ceil(bs) + 1 < s.usable_blocks
                    && !self.unreadable.contains(&(*seg as u64))
            })
            .map(|(seg, s)| (self.policy.score(s, &table), seg as u64))
            .collect();
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

        let mut pass = Pass::default();
        let mut budget = table.budget_blocks;
        let mut picked: Vec<u64> = Vec::new();
        let mut blocks: Vec<MarkBlock> = Vec::new();
        let max_reads = self.max_segments_per_pass * 2;
        for (_, seg) in candidates {
            if picked.len() >= self.max_segments_per_pass || pass.segments_read as usize >= max_reads {
                break;
            }
            let state = table.segments[seg as usize];
            // Do not read a segment whose move may not fit: its live blocks,
            // an inode block for every 16 of them, indirect blocks and
            // summaries (`markv_cost` gives the exact figure once read).
            let live_blocks = state.live_bytes.div_ceil(bs);
            if live_blocks + live_blocks / 8 + 8 > budget {
                continue;
            }
            if self.rejected.get(&seg).is_some_and(|r| r.still(state.live_bytes, state.lastmod, self.passes))
            {
                continue;
            }
            // Whole (1993 §3: "the cleaner reads the segment from the raw
            // partition"; 1995 §4 costs it as one 1 MB transfer), or the
            // summaries alone. A segment that cannot be read whole (a
            // damaged sector) is read by its summaries, and markv reads its
            // live blocks one by one, so that only they can fail.
            let whole = match self.reads {
                SegmentReads::LiveBlocks => None,
                SegmentReads::WholeSegments => match m.read_segment(seg) {
                    Ok(bytes) => Some(bytes),
                    Err(e) if e.errno() == libc::EIO => None,
                    Err(e) => return Err(e),
                },
            };
            // A segment whose summaries, or the indirect blocks that judge
            // its blocks live, cannot be read is set aside like one whose
            // live block cannot be moved: one file's damage must not stop
            // all cleaning (and with it every write short of space).
            let judged = match &whole {
                Some(bytes) => Ok(parse_segment(&table, seg, bytes)),
                None => m.segment_refs(seg),
            }
            .and_then(|refs| m.bmapv(&refs).map(|now| (refs, now)));
            pass.segments_read += 1;
            let (refs, now) = match judged {
                Ok(judged) => judged,
                Err(e) if e.errno() == libc::EIO => {
                    self.unreadable.insert(seg);
                    pass.unreadable.push(seg);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let live: Vec<BlockRef> = refs
                .into_iter()
                .zip(now)
                .filter(|(r, at)| *at == r.daddr && at.is_some())
                .map(|(r, _)| r)
                .collect();
            let cost = m.markv_cost(&live)?;
            if cost >= state.usable_blocks {
                let excess_bytes = (cost + 1 - state.usable_blocks) * bs;
                let why = Rejected {
                    live_bytes: state.live_bytes,
                    lastmod: state.lastmod,
                    excess_bytes,
                    pass: self.passes,
                };
                self.rejected.insert(seg, why);
                continue;
            }
            if cost > budget {
                continue;
            }
            self.rejected.remove(&seg);
            budget -= cost;
            picked.push(seg);
            let first = seg * table.blocks_per_segment;
            blocks.extend(live.into_iter().map(|block| {
                let data = match (&whole, block.kind) {
                    (Some(bytes), BlockKind::Block(_)) => {
                        let at = (block.daddr.get() - first) as usize * bs as usize;
                        bytes.get(at..at + bs as usize).map(<[u8]>::to_vec)
                    }
                    _ => None,
                };
                MarkBlock { block, data }
            }));
        }
        if picked.is_empty() {
            return Ok(pass);
        }
        self.policy.order(&mut blocks, &table);
        // Data older than the policy's line goes to the cold head, the rest
        // to the users' head; markv takes the users' head itself when the
        // cold one has no room.
        let (cold, shared): (Vec<MarkBlock>, Vec<MarkBlock>) = match self.policy.cold_before(&table) {
            Some(line) => blocks.into_iter().partition(|b| b.block.age < line),
            None => (Vec::new(), blocks),
        };
        for (blocks, to) in [(shared, Destination::Shared), (cold, Destination::Cold)] {
            let batch_blocks = match self.reads {
                SegmentReads::LiveBlocks => blocks.len().max(1),
                SegmentReads::WholeSegments => table.blocks_per_segment.max(1) as usize,
            };
            for batch in blocks.chunks(batch_blocks) {
                match m.markv(batch, to) {
                    Ok(report) => pass.moved += report.moved,
                    Err(e) if e.errno() == libc::EIO => {
                        if !self.move_by_segment(
                            m,
                            batch.to_vec(),
                            to,
                            table.blocks_per_segment,
                            &mut pass,
                        )? {
                            return Ok(pass);
                        }
                    }
                    // The space changed under us (another cleaner, or writers):
                    // nothing more was written; the next pass looks again.
                    Err(e) if space_changed(&e) => return Ok(pass),
                    Err(e) => return Err(e),
                }
            }
        }
        for seg in picked.into_iter().filter(|seg| !pass.unreadable.contains(seg)) {
            match m.segclean(seg) {
                Ok(()) => pass.cleaned.push(seg),
                // A block became live again in it (rewritten data is never
                // put back, but a file being written may have been dirty):
                // a later pass takes it.
                Err(e) if e.errno() == libc::EBUSY => {}
                Err(e) => return Err(e),
            }
        }
        Ok(pass)
    }

    /// Moves `blocks` one segment's worth at a time, after a move of them
    /// all failed on a block that cannot be read: one damaged block must
    /// not stop the cleaning of every other segment. The segments whose
    /// blocks fail are set aside ([`Pass::unreadable`]). Returns false when
    /// the pass must end (the space changed under it).
    fn move_by_segment<M: Mechanism + ?Sized>(
        &mut self,
        m: &mut M,
        blocks: Vec<MarkBlock>,
        to: Destination,
        blocks_per_segment: u64,
        pass: &mut Pass,
    ) -> Result<bool> {
        let mut by_segment: Vec<(u64, Vec<MarkBlock>)> = Vec::new();
        for b in blocks {
            let seg = b.block.daddr.get() / blocks_per_segment.max(1);
            match by_segment.iter_mut().find(|(s, _)| *s == seg) {
                Some((_, group)) => group.push(b),
                None => by_segment.push((seg, vec![b])),
            }
        }
        for (seg, group) in by_segment {
            match m.markv(&group, to) {
                Ok(report) => pass.moved += report.moved,
                Err(e) if e.errno() == libc::EIO => {
                    self.unreadable.insert(seg);
                    pass.unreadable.push(seg);
                }
                Err(e) if space_changed(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Cleans until the clean segments reach the high-water mark, or a pass
    /// cleans nothing or gains no clean segment. Returns whether anything
    /// was cleaned.
    pub fn clean_to_high_water<M: Mechanism + ?Sized>(&mut self, m: &mut M) -> Result<bool> {
        let mut any = false;
        let mut table = m.segment_table()?;
        loop {
            if table.clean_segments >= table.high_water || self.pass(m)?.cleaned.is_empty() {
                return Ok(any);
            }
            any = true;
            // A pass that left no more clean segments than it found (the
            // disk is nearly full of live data) would be repeated forever.
            let before = table.clean_segments;
            table = m.segment_table()?;
            if table.clean_segments <= before {
                return Ok(any);
            }
        }
    }
}

/// The cleaner a writer runs when it is short of clean segments.
impl SpaceMaker for Cleaner {
    fn make_space(&mut self, lfs: &mut Lfs, urgency: Urgency) -> Result<bool> {
        match urgency {
            Urgency::Need(_) => Ok(!self.pass(lfs)?.cleaned.is_empty()),
            Urgency::Background => self.clean_to_high_water(lfs),
        }
    }
}

/// Whether `e` says the space changed under a move (another cleaner, or
/// writers): nothing was written, and the next pass looks again.
fn space_changed(e: &fslab::Error) -> bool {
    e.errno() == libc::ENOSPC || e.errno() == libc::EBUSY
}
