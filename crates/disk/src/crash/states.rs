//! Enumerating crash states ([`CrashDisk::crash_states`]): the candidate
//! images at each cut (every write persisted in order, subsets of the
//! unflushed writes, the last one torn or reordered first), sampled with a
//! seeded generator when there are more than asked for, and yielded one
//! at a time by [`CrashStates`] as [`CrashState`]s.

use super::image::{apply_plan, apply_write, sector_count, CrashChoice};
use super::{Event, EXHAUSTIVE_LIMIT};
use crate::splitmix::{mix, SplitMix64};
use crate::{MemDisk, SECTOR_SIZE};
use std::collections::{BTreeSet, HashSet};
use std::fmt;

/// Random subsets considered per cut point when there are too many unflushed
/// writes to try them all.
const RANDOM_SUBSETS: usize = 4;

/// One crash image from [`CrashDisk::crash_states`], with how to rebuild it:
/// `crash.crash_image(state.cut, &state.choice)` gives the same bytes.
pub struct CrashState {
    /// Human-readable: the cut, the last write kept, what became of the
    /// unflushed writes. Print it when a check fails.
    pub description: String,
    /// Number of events kept.
    pub cut: usize,
    /// What became of the unflushed writes.
    pub choice: CrashChoice,
    /// The device after the crash.
    pub disk: MemDisk,
}

impl fmt::Debug for CrashState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrashState")
            .field("description", &self.description)
            .field("cut", &self.cut)
            .field("choice", &self.choice)
            .finish_non_exhaustive()
    }
}

/// What the enumerator knows about a cut just after a write.
#[derive(Clone, Copy, Debug)]
pub(super) struct WriteCut {
    /// The cut (events kept).
    pub(super) cut: usize,
    /// Sequence number of the write just kept.
    pub(super) seq: usize,
    /// Unflushed writes at the cut, the last one included (at least 1).
    pub(super) unflushed: usize,
    /// Sectors the last write touches.
    last_sectors: usize,
    /// Whether the last write shares a sector with an earlier unflushed one.
    overlaps: bool,
}

impl WriteCut {
    /// Candidates of groups 2-4 (see [`CrashDisk::crash_states`]) at this cut.
    fn extra_count(&self) -> usize {
        self.subset_count() + self.torn_count() + usize::from(self.overlaps)
    }

    fn subset_count(&self) -> usize {
        let m = self.unflushed;
        if m <= EXHAUSTIVE_LIMIT {
            (1usize << (m - 1)) - 1
        } else {
            (m - 1) + 1 + RANDOM_SUBSETS
        }
    }

    fn torn_count(&self) -> usize {
        match self.last_sectors {
            0 | 1 => 0,
            2 => 2,
            _ => 3,
        }
    }

    /// Candidate `index` of groups 2-4, in the order they are counted.
    fn extra_choice(&self, index: usize, seed: u64) -> CrashChoice {
        let m = self.unflushed;
        let mut rng = SplitMix64::new(seed ^ mix(self.cut as u64) ^ mix(!(index as u64)));
        let mut index = index;
        if index < self.subset_count() {
            let mut keep = vec![true; m];
            if m <= EXHAUSTIVE_LIMIT {
                // The bits of `index` say which earlier writes persist; all
                // ones is group 1, so it is left out of the count.
                for (i, kept) in keep.iter_mut().take(m - 1).enumerate() {
                    *kept = (index >> i) & 1 == 1;
                }
            } else if index < m - 1 {
                keep[index] = false;
            } else if index == m - 1 {
                keep.iter_mut().take(m - 1).for_each(|k| *k = false);
            } else {
                keep.iter_mut().take(m - 1).for_each(|k| *k = rng.below(2) == 1);
            }
            return CrashChoice::Subset(keep);
        }
        index -= self.subset_count();
        if index < self.torn_count() {
            let s = self.last_sectors;
            let sectors: Vec<bool> = match index {
                0 => (0..s).map(|i| i < s / 2).collect(),
                1 => (0..s).map(|i| i >= s / 2).collect(),
                _ => {
                    let mut mask: Vec<bool> = (0..s).map(|_| rng.below(2) == 1).collect();
                    // Keep it a real tear: neither nothing nor everything.
                    let flip = rng.below(s as u64) as usize;
                    if mask.iter().all(|&b| b) {
                        mask[flip] = false;
                    } else if mask.iter().all(|&b| !b) {
                        mask[flip] = true;
                    }
                    mask
                }
            };
            return CrashChoice::Torn { write: m - 1, sectors };
        }
        let mut order = vec![m - 1];
        order.extend(0..m - 1);
        CrashChoice::Reordered(order)
    }
}

/// Describes every cut just after a write, in order.
pub(super) fn write_cuts(events: &[Event], first_cut: usize) -> Vec<WriteCut> {
    let mut cuts = Vec::new();
    let mut epoch_sectors: HashSet<u64> = HashSet::new();
    let mut unflushed = 0;
    for (i, event) in events.iter().enumerate() {
        match event {
            Event::Barrier => {
                epoch_sectors.clear();
                unflushed = 0;
            }
            Event::Write { offset, data } => {
                unflushed += 1;
                let sectors = sector_count(*offset, data.len());
                let first = offset / SECTOR_SIZE;
                let mut overlaps = false;
                for sector in first..first + sectors as u64 {
                    // A write's own sectors are distinct, so a repeat is an
                    // earlier unflushed write's.
                    overlaps |= !epoch_sectors.insert(sector);
                }
                cuts.push(WriteCut {
                    cut: first_cut + i + 1,
                    seq: first_cut + i,
                    unflushed,
                    last_sectors: sectors,
                    overlaps,
                });
            }
        }
    }
    cuts
}

/// One state the enumerator will yield.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pick {
    /// Index into the write cuts; `None` is the base image.
    write_cut: Option<usize>,
    /// Index among the cut's extra candidates; `None` is all persisted.
    extra: Option<usize>,
}

/// Chooses at most `max_states` candidates (policy on
/// [`CrashDisk::crash_states`]), sorted in cut order.
pub(super) fn choose_picks(cuts: &[WriteCut], max_states: usize, seed: u64) -> Vec<Pick> {
    let mut rng = SplitMix64::new(seed);
    let essential = 1 + cuts.len();
    let essential_pick = |i: usize| Pick { write_cut: i.checked_sub(1), extra: None };
    if max_states <= essential {
        return sample(&mut rng, essential as u64, max_states)
            .into_iter()
            .map(|i| essential_pick(i as usize))
            .collect();
    }
    let total: u64 = cuts.iter().map(|c| c.extra_count() as u64).sum();
    let chosen = sample(&mut rng, total, max_states - essential);
    let mut picks: Vec<Pick> = Vec::with_capacity(max_states);
    picks.push(essential_pick(0));
    let mut chosen = chosen.into_iter().peekable();
    let mut start = 0u64;
    for (i, cut) in cuts.iter().enumerate() {
        picks.push(essential_pick(i + 1));
        let end = start + cut.extra_count() as u64;
        while let Some(index) = chosen.next_if(|&index| index < end) {
            picks.push(Pick { write_cut: Some(i), extra: Some((index - start) as usize) });
        }
        start = end;
    }
    picks
}

/// `k` distinct numbers below `n` (all of them if `k >= n`), sorted; Floyd's
/// algorithm, so the cost depends on `k`, not `n`.
fn sample(rng: &mut SplitMix64, n: u64, k: usize) -> BTreeSet<u64> {
    if k as u64 >= n {
        return (0..n).collect();
    }
    let mut chosen = BTreeSet::new();
    for j in n - k as u64..n {
        let t = rng.below(j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen
}

/// The iterator [`CrashDisk::crash_states`] returns. It walks the log once,
/// keeping the durable image up to date, and copies it for each state.
pub struct CrashStates {
    /// The image with every write before `epoch` applied.
    pub(super) durable: Vec<u8>,
    pub(super) events: Vec<Event>,
    pub(super) first_cut: usize,
    /// Local index of the next event not yet walked.
    pub(super) position: usize,
    /// Local indices of the writes walked since the last barrier.
    pub(super) epoch: Vec<usize>,
    pub(super) cuts: Vec<WriteCut>,
    pub(super) picks: Vec<Pick>,
    pub(super) next_pick: usize,
    pub(super) seed: u64,
}

impl CrashStates {
    /// Walks the log up to `cut` events, folding each epoch into `durable`
    /// when its barrier passes.
    fn advance_to(&mut self, cut: usize) {
        let local = cut - self.first_cut;
        while self.position < local {
            match &self.events[self.position] {
                Event::Barrier => {
                    for &i in &self.epoch {
                        if let Event::Write { offset, data } = &self.events[i] {
                            apply_write(&mut self.durable, *offset, data);
                        }
                    }
                    self.epoch.clear();
                }
                Event::Write { .. } => self.epoch.push(self.position),
            }
            self.position += 1;
        }
    }
}

impl Iterator for CrashStates {
    type Item = CrashState;

    fn next(&mut self) -> Option<CrashState> {
        loop {
            let pick = *self.picks.get(self.next_pick)?;
            self.next_pick += 1;
            let (cut, choice, description) = match pick.write_cut {
                None => (
                    self.first_cut,
                    CrashChoice::AllPersisted,
                    format!("cut {}: the base image (everything before it durable)", self.first_cut),
                ),
                Some(i) => {
                    let at = self.cuts[i];
                    let choice = match pick.extra {
                        None => CrashChoice::AllPersisted,
                        Some(extra) => at.extra_choice(extra, self.seed),
                    };
                    let description = format!(
                        "cut {}: power lost after write {} with {} unflushed: {choice}",
                        at.cut, at.seq, at.unflushed
                    );
                    (at.cut, choice, description)
                }
            };
            self.advance_to(cut);
            let unflushed: Vec<(u64, &[u8])> = self
                .epoch
                .iter()
                .filter_map(|&i| match &self.events[i] {
                    Event::Write { offset, data } => Some((*offset, &data[..])),
                    Event::Barrier => None,
                })
                .collect();
            let Ok(plan) = choice.plan(&unflushed) else {
                // Every generated choice fits its cut; skip rather than panic.
                debug_assert!(false, "generated an invalid crash choice: {description}");
                continue;
            };
            let mut image = self.durable.clone();
            apply_plan(&mut image, &unflushed, &plan);
            return Some(CrashState { description, cut, choice, disk: MemDisk::from_bytes(image) });
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.picks.len() - self.next_pick))
    }
}
