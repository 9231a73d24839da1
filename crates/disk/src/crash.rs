//! A device that remembers what a power cut could leave behind.
//!
//! Map:
//! * [`CrashDisk`]: a [`BlockDevice`] wrapper that passes every call through
//!   and records each write and flush barrier, in order, in an event log over
//!   a base image; it builds crash images ([`CrashDisk::crash_image`]) and
//!   enumerates the interesting ones ([`CrashDisk::crash_states`]).
//! * [`CrashChoice`], [`Persist`]: what became of the unflushed writes
//!   (dropped, reordered, torn at sector granularity).
//! * [`CrashState`], [`CrashStates`]: one enumerated crash image and the
//!   seeded, bounded iterator that yields them.
//! * [`RecordedWrite`]: a recorded write as a test sees it.
//!
//! It relies on the [`BlockDevice`] contract alone: sectors of
//! [`SECTOR_SIZE`] bytes are atomic, and only writes followed by a returned
//! flush are durable.

use crate::{check_bounds, BlockDevice, MemDisk, SECTOR_SIZE};
use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// Up to this many unflushed writes at a cut point, [`CrashDisk::crash_states`]
/// considers every subset of them; above it, a sample.
pub const EXHAUSTIVE_LIMIT: usize = 10;

/// Random subsets considered per cut point when there are too many unflushed
/// writes to try them all.
const RANDOM_SUBSETS: usize = 4;

/// A device wrapper that records writes and barriers so a test can ask for the
/// device as it would be after a power cut at any point.
///
/// # Model
///
/// The log is a sequence of *events*, each a write (offset and bytes; a
/// vectored write is one event) or a flush barrier, numbered from 0 in the
/// order they happened (the *sequence number*). A *cut* is a number of events
/// kept: power is lost after event `cut - 1` and before event `cut`. In the
/// image after a cut:
///
/// 1. every write before the last barrier among the kept events is present;
/// 2. of the writes after that barrier (the *unflushed* writes, numbered from
///    0 in recorded order), any subset may be present, applied in any order;
/// 3. a write may be torn: any subset of the 512-byte device sectors it
///    touches holds the new bytes, each sector all old or all new.
///
/// [`CrashChoice`] picks one outcome of 2 and 3.
///
/// # Sharing and locking
///
/// Clones share one log (an `Arc`), so a test hands a clone to the file
/// system and keeps one to ask for crash images. One mutex guards the log;
/// a write or flush holds it across the call to the inner device, so the log
/// order is the order the inner device saw. Reads go straight to the inner
/// device. Nothing else may write to the inner device, or the log and the
/// device disagree.
///
/// # Memory
///
/// The base image (the inner device's bytes at creation) is held in memory,
/// plus every write since. [`CrashDisk::checkpoint_base`] folds the events up
/// to the latest barrier into the base; their sequence numbers stay taken, and
/// cuts before [`CrashDisk::base_position`] can no longer be asked for.
///
/// # Usage
///
/// ```
/// use disk::{BlockDevice, CrashDisk, MemDisk};
/// use std::sync::Arc;
/// let crash = CrashDisk::over(MemDisk::new(1 << 20));
/// let device: Arc<dyn BlockDevice> = Arc::new(crash.clone()); // to the file system
/// device.write_at(0, b"hello").expect("write");
/// for state in crash.crash_states(100, 1) {
///     let _image: MemDisk = state.disk; // recover, mount and check here
/// }
/// ```
#[derive(Clone)]
pub struct CrashDisk {
    shared: Arc<Shared>,
}

/// The state every clone of a [`CrashDisk`] shares.
struct Shared {
    inner: Arc<dyn BlockDevice>,
    log: Mutex<Log>,
}

/// The base image and the events recorded since.
///
/// Invariant: `events[i]` has sequence number `folded + i`; `base` is the
/// device after the first `folded` events, all of them durable (`folded` is 0
/// or just after a barrier); `base.len()` is the device size.
struct Log {
    base: Vec<u8>,
    folded: usize,
    events: Vec<Event>,
    /// Sequence numbers of every barrier ever recorded, folded ones included.
    barriers: Vec<usize>,
    /// Writes ever recorded, folded ones included.
    writes: usize,
}

/// One recorded event. Write payloads are shared so that an enumerator can
/// take a copy of the log cheaply.
#[derive(Clone)]
enum Event {
    Write { offset: u64, data: Arc<[u8]> },
    Barrier,
}

/// A recorded write as [`CrashDisk::unflushed_writes`] describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedWrite {
    /// The write's sequence number in the event log.
    pub seq: usize,
    /// Byte offset on the device.
    pub offset: u64,
    /// Length in bytes.
    pub len: usize,
    /// Device sectors the write touches: the length a `sectors` mask for it
    /// must have in a [`CrashChoice`].
    pub sectors: usize,
}

/// What became of the unflushed writes at a cut. Writes are named by their
/// index among the unflushed writes (0 = the first after the last barrier).
/// Masks must have exactly one entry per unflushed write (or per sector);
/// [`CrashDisk::crash_image`] refuses anything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrashChoice {
    /// Every unflushed write reached the medium, in recorded order.
    AllPersisted,
    /// No unflushed write reached the medium.
    NonePersisted,
    /// The writes marked `true` reached the medium, in recorded order.
    Subset(Vec<bool>),
    /// The listed writes reached the medium in the listed order (a later
    /// overlapping one may be overwritten by an earlier one); the others were
    /// lost. No index may appear twice.
    Reordered(Vec<usize>),
    /// Power failed during unflushed write `write`: the writes before it
    /// reached the medium in order, only the sectors of `write` marked `true`
    /// did, and the writes after it were lost.
    Torn {
        /// Index of the torn write among the unflushed writes.
        write: usize,
        /// One entry per device sector the write touches.
        sectors: Vec<bool>,
    },
    /// The general case: these writes, each whole or torn, in this order.
    Plan(Vec<Persist>),
}

/// One step of a [`CrashChoice::Plan`]: an unflushed write reaching the
/// medium, whole or torn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Persist {
    /// Index of the write among the unflushed writes.
    pub write: usize,
    /// `None`: the whole write. `Some(mask)`: only the sectors marked `true`,
    /// one entry per device sector the write touches.
    pub sectors: Option<Vec<bool>>,
}

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

impl CrashDisk {
    /// Records over a memory disk, starting from its current contents.
    pub fn over(disk: MemDisk) -> CrashDisk {
        let base = disk.snapshot();
        CrashDisk::with_base(Arc::new(disk), base)
    }

    /// Records over any device, starting from its current contents, which
    /// are read into memory here (meant for test-sized devices).
    pub fn new(inner: Arc<dyn BlockDevice>) -> io::Result<CrashDisk> {
        let size = usize::try_from(inner.size())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "device too large to hold in memory"))?;
        let mut base = vec![0; size];
        inner.read_at(0, &mut base)?;
        Ok(CrashDisk::with_base(inner, base))
    }

    fn with_base(inner: Arc<dyn BlockDevice>, base: Vec<u8>) -> CrashDisk {
        let log = Log { base, folded: 0, events: Vec::new(), barriers: Vec::new(), writes: 0 };
        CrashDisk { shared: Arc::new(Shared { inner, log: Mutex::new(log) }) }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.shared.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Events (writes and barriers) recorded since creation, folded ones
    /// included: the largest valid cut.
    pub fn events(&self) -> usize {
        let log = self.log();
        log.folded + log.events.len()
    }

    /// Writes recorded since creation, folded ones included.
    pub fn write_count(&self) -> usize {
        self.log().writes
    }

    /// Sequence numbers of every barrier recorded, in order. The cut
    /// `position + 1` keeps the barrier; the cut `position` loses it.
    pub fn barrier_positions(&self) -> Vec<usize> {
        self.log().barriers.clone()
    }

    /// The smallest valid cut: events before it have been folded into the
    /// base image by [`checkpoint_base`](CrashDisk::checkpoint_base).
    pub fn base_position(&self) -> usize {
        self.log().folded
    }

    /// The writes that are unflushed at `cut`, in recorded order: index `i`
    /// here is write `i` in a [`CrashChoice`].
    ///
    /// Errors: `InvalidInput` when `cut` is outside
    /// `base_position()..=events()`.
    pub fn unflushed_writes(&self, cut: usize) -> io::Result<Vec<RecordedWrite>> {
        let log = self.log();
        let (durable, kept) = log.window(cut)?;
        Ok(log.events[durable..kept]
            .iter()
            .enumerate()
            .filter_map(|(i, event)| match event {
                Event::Write { offset, data } => Some(RecordedWrite {
                    seq: log.folded + durable + i,
                    offset: *offset,
                    len: data.len(),
                    sectors: sector_count(*offset, data.len()),
                }),
                Event::Barrier => None,
            })
            .collect())
    }

    /// The device after a power cut that keeps the first `cut` events, with
    /// the unflushed writes treated as `choice` says.
    ///
    /// Errors: `InvalidInput` when `cut` is outside
    /// `base_position()..=events()`, or `choice` does not fit the unflushed
    /// writes (wrong mask length, index out of range, a write twice).
    pub fn crash_image(&self, cut: usize, choice: &CrashChoice) -> io::Result<MemDisk> {
        let log = self.log();
        let (durable, kept) = log.window(cut)?;
        let unflushed = write_slices(&log.events[durable..kept]);
        let plan = choice.plan(&unflushed)?;
        let mut image = log.base.clone();
        for (offset, data) in write_slices(&log.events[..durable]) {
            apply_write(&mut image, offset, data);
        }
        apply_plan(&mut image, &unflushed, &plan);
        Ok(MemDisk::from_bytes(image))
    }

    /// Enumerates crash images at every cut point, at most `max_states` of
    /// them, in cut order, deterministically for a given `seed`.
    ///
    /// The candidates, at each cut after a write (a cut after a barrier gives
    /// the same image as the cut before it, so it adds none):
    ///
    /// 1. every unflushed write persisted in order (the crash "after the 1st,
    ///    2nd, … write"), and once, the base image at
    ///    [`base_position`](CrashDisk::base_position);
    /// 2. subsets of the earlier unflushed writes with the last one present:
    ///    all of them when there are at most [`EXHAUSTIVE_LIMIT`] unflushed
    ///    writes (so each subset of an epoch's writes appears at exactly one
    ///    cut), else each single one dropped, only the last, and a few random;
    /// 3. the last write torn after the others: first half of its sectors,
    ///    second half, and a random mix (when it spans 2, 2 or 3+ sectors);
    /// 4. the last write reaching the medium first, when it shares a sector
    ///    with an earlier unflushed write.
    ///
    /// When there are more than `max_states` candidates, all of group 1 are
    /// kept if they fit and the rest are a uniform seeded sample of groups
    /// 2-4; if group 1 alone does not fit, it is sampled.
    ///
    /// The iterator holds a copy of the log and base image taken now; later
    /// writes do not change it. Each state costs one copy of the device, so
    /// `max_states` bounds time as well as count.
    pub fn crash_states(&self, max_states: usize, seed: u64) -> CrashStates {
        let (base, events, first_cut) = {
            let log = self.log();
            (log.base.clone(), log.events.clone(), log.folded)
        };
        let cuts = write_cuts(&events, first_cut);
        let picks = choose_picks(&cuts, max_states, seed);
        CrashStates {
            durable: base,
            events,
            first_cut,
            position: 0,
            epoch: Vec::new(),
            cuts,
            picks,
            next_pick: 0,
            seed,
        }
    }

    /// Folds every event up to the latest barrier into the base image and
    /// forgets them, to bound memory in long tests. Cuts before the new
    /// [`base_position`](CrashDisk::base_position) become invalid.
    pub fn checkpoint_base(&self) {
        let mut log = self.log();
        let Some(last) = log.events.iter().rposition(|e| matches!(e, Event::Barrier)) else {
            return;
        };
        let folded: Vec<Event> = log.events.drain(..=last).collect();
        for (offset, data) in write_slices(&folded) {
            apply_write(&mut log.base, offset, data);
        }
        log.folded += last + 1;
    }
}

impl fmt::Debug for CrashDisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let log = self.log();
        f.debug_struct("CrashDisk")
            .field("size", &log.base.len())
            .field("base_position", &log.folded)
            .field("events", &(log.folded + log.events.len()))
            .field("writes", &log.writes)
            .field("barriers", &log.barriers.len())
            .finish()
    }
}

impl BlockDevice for CrashDisk {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.shared.inner.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut log = self.log();
        check_bounds(offset, buf.len(), log.base.len() as u64)?;
        self.shared.inner.write_at(offset, buf)?;
        log.record_write(offset, buf.into());
        Ok(())
    }

    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        let mut log = self.log();
        let data: Vec<u8> = bufs.concat();
        check_bounds(offset, data.len(), log.base.len() as u64)?;
        self.shared.inner.write_vectored_at(offset, bufs)?;
        log.record_write(offset, data.into());
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        let mut log = self.log();
        self.shared.inner.flush()?;
        let seq = log.folded + log.events.len();
        log.events.push(Event::Barrier);
        log.barriers.push(seq);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.shared.inner.size()
    }
}

impl Log {
    fn record_write(&mut self, offset: u64, data: Arc<[u8]>) {
        self.events.push(Event::Write { offset, data });
        self.writes += 1;
    }

    /// For a cut, the local event indices `(durable, kept)`: events before
    /// `durable` are durable, `durable..kept` holds the unflushed writes.
    fn window(&self, cut: usize) -> io::Result<(usize, usize)> {
        let end = self.folded + self.events.len();
        if cut < self.folded || cut > end {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cut {cut} is outside the recorded events {}..={end}", self.folded),
            ));
        }
        let kept = cut - self.folded;
        let durable =
            self.events[..kept].iter().rposition(|e| matches!(e, Event::Barrier)).map_or(0, |i| i + 1);
        Ok((durable, kept))
    }
}

/// The writes among `events`, as (offset, bytes).
fn write_slices(events: &[Event]) -> Vec<(u64, &[u8])> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Write { offset, data } => Some((*offset, &data[..])),
            Event::Barrier => None,
        })
        .collect()
}

/// Number of device sectors a write of `len` bytes at `offset` touches.
fn sector_count(offset: u64, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let first = offset / SECTOR_SIZE;
    let last = (offset + len as u64 - 1) / SECTOR_SIZE;
    (last - first + 1) as usize
}

/// Copies a whole write into the image. Writes were bounds-checked when
/// recorded, against the same size.
fn apply_write(image: &mut [u8], offset: u64, data: &[u8]) {
    let start = offset as usize;
    image[start..start + data.len()].copy_from_slice(data);
}

/// Copies only the marked sectors of a write: the part of the write inside
/// each marked device sector, so a sector is all old or all new.
fn apply_sectors(image: &mut [u8], offset: u64, data: &[u8], sectors: &[bool]) {
    let first = offset / SECTOR_SIZE;
    let end = offset + data.len() as u64;
    for (i, _) in sectors.iter().enumerate().filter(|(_, &keep)| keep) {
        let sector_start = (first + i as u64) * SECTOR_SIZE;
        let low = sector_start.max(offset);
        let high = (sector_start + SECTOR_SIZE).min(end);
        if low < high {
            image[low as usize..high as usize]
                .copy_from_slice(&data[(low - offset) as usize..(high - offset) as usize]);
        }
    }
}

/// One write reaching the medium: its index among the unflushed writes and,
/// when torn, the mask of its sectors that made it.
type Step<'a> = (usize, Option<&'a [bool]>);

/// Applies a validated plan over the unflushed writes.
fn apply_plan(image: &mut [u8], unflushed: &[(u64, &[u8])], plan: &[Step<'_>]) {
    for &(index, sectors) in plan {
        let (offset, data) = unflushed[index];
        match sectors {
            None => apply_write(image, offset, data),
            Some(mask) => apply_sectors(image, offset, data, mask),
        }
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

impl CrashChoice {
    /// The choice as a list of (unflushed write index, sector mask) in the
    /// order they reach the medium, checked against the unflushed writes.
    fn plan(&self, unflushed: &[(u64, &[u8])]) -> io::Result<Vec<Step<'_>>> {
        let n = unflushed.len();
        let check_mask = |what: &str, mask: &[bool], want: usize| {
            if mask.len() == want {
                Ok(())
            } else {
                Err(invalid(format!("{what} has {} entries, want {want}", mask.len())))
            }
        };
        let plan: Vec<Step<'_>> = match self {
            CrashChoice::AllPersisted => (0..n).map(|i| (i, None)).collect(),
            CrashChoice::NonePersisted => Vec::new(),
            CrashChoice::Subset(keep) => {
                check_mask("subset mask", keep, n)?;
                (0..n).filter(|&i| keep[i]).map(|i| (i, None)).collect()
            }
            CrashChoice::Reordered(order) => order.iter().map(|&i| (i, None)).collect(),
            CrashChoice::Torn { write, sectors } => {
                let mut plan: Vec<_> = (0..(*write).min(n)).map(|i| (i, None)).collect();
                plan.push((*write, Some(&sectors[..])));
                plan
            }
            CrashChoice::Plan(steps) => {
                steps.iter().map(|step| (step.write, step.sectors.as_deref())).collect()
            }
        };
        let mut seen = vec![false; n];
        for &(index, sectors) in &plan {
            if index >= n {
                return Err(invalid(format!("write {index} named, but {n} writes are unflushed")));
            }
            if std::mem::replace(&mut seen[index], true) {
                return Err(invalid(format!("write {index} named twice")));
            }
            if let Some(mask) = sectors {
                let (offset, data) = unflushed[index];
                check_mask("sector mask", mask, sector_count(offset, data.len()))?;
            }
        }
        Ok(plan)
    }
}

/// Writes a mask as a string of `0` and `1`.
fn bits(mask: &[bool]) -> String {
    mask.iter().map(|&b| if b { '1' } else { '0' }).collect()
}

impl fmt::Display for CrashChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashChoice::AllPersisted => write!(f, "all unflushed writes persisted"),
            CrashChoice::NonePersisted => write!(f, "no unflushed write persisted"),
            CrashChoice::Subset(keep) => write!(f, "persisted subset {}", bits(keep)),
            CrashChoice::Reordered(order) => write!(f, "persisted in order {order:?}"),
            CrashChoice::Torn { write, sectors } => {
                write!(f, "write {write} torn, sectors {}, earlier persisted", bits(sectors))
            }
            CrashChoice::Plan(steps) => {
                write!(f, "plan [")?;
                for (i, step) in steps.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    match &step.sectors {
                        None => write!(f, "{sep}{}", step.write)?,
                        Some(mask) => write!(f, "{sep}{} sectors {}", step.write, bits(mask))?,
                    }
                }
                write!(f, "]")
            }
        }
    }
}

/// What the enumerator knows about a cut just after a write.
#[derive(Clone, Copy, Debug)]
struct WriteCut {
    /// The cut (events kept).
    cut: usize,
    /// Sequence number of the write just kept.
    seq: usize,
    /// Unflushed writes at the cut, the last one included (at least 1).
    unflushed: usize,
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
        let mut rng = Rng::new(seed ^ mix(self.cut as u64) ^ mix(!(index as u64)));
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
fn write_cuts(events: &[Event], first_cut: usize) -> Vec<WriteCut> {
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
struct Pick {
    /// Index into the write cuts; `None` is the base image.
    write_cut: Option<usize>,
    /// Index among the cut's extra candidates; `None` is all persisted.
    extra: Option<usize>,
}

/// Chooses at most `max_states` candidates (policy on
/// [`CrashDisk::crash_states`]), sorted in cut order.
fn choose_picks(cuts: &[WriteCut], max_states: usize, seed: u64) -> Vec<Pick> {
    let mut rng = Rng::new(seed);
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
fn sample(rng: &mut Rng, n: u64, k: usize) -> BTreeSet<u64> {
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
    durable: Vec<u8>,
    events: Vec<Event>,
    first_cut: usize,
    /// Local index of the next event not yet walked.
    position: usize,
    /// Local indices of the writes walked since the last barrier.
    epoch: Vec<usize>,
    cuts: Vec<WriteCut>,
    picks: Vec<Pick>,
    next_pick: usize,
    seed: u64,
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

/// splitmix64's output function: spreads a number's bits over all 64.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small seeded generator (splitmix64), kept here so that a seed names the
/// same crash states whatever `rand` version the workspace uses.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// A number below `n` (`n > 0`), by multiply-shift.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u64 = 64 * 1024;

    fn read(disk: &MemDisk, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0; len];
        disk.read_at(offset, &mut buf).expect("read from a crash image");
        buf
    }

    fn sector(fill: u8) -> Vec<u8> {
        vec![fill; SECTOR_SIZE as usize]
    }

    #[test]
    fn flushed_writes_are_present_in_every_crash_image() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        crash.write_at(0, &sector(1)).expect("write A");
        crash.write_at(4096, &sector(2)).expect("write B");
        crash.flush().expect("flush");
        crash.write_at(0, &sector(3)).expect("overwrite A, unflushed");
        crash.write_at(8192, &[4; 2048]).expect("write C, unflushed");
        let barrier = crash.barrier_positions()[0];
        let mut seen = 0;
        for state in crash.crash_states(1000, 7) {
            if state.cut <= barrier {
                continue;
            }
            seen += 1;
            assert_eq!(read(&state.disk, 4096, 512), sector(2), "{}", state.description);
            let a = read(&state.disk, 0, 512);
            assert!(a == sector(1) || a == sector(3), "{}: A is {:?}", state.description, &a[..4]);
        }
        assert!(seen >= 4, "only {seen} states after the barrier");
        for cut in barrier + 1..=crash.events() {
            let image = crash.crash_image(cut, &CrashChoice::NonePersisted).expect("image");
            assert_eq!(read(&image, 0, 512), sector(1), "cut {cut}");
            assert_eq!(read(&image, 4096, 512), sector(2), "cut {cut}");
        }
    }

    #[test]
    fn unflushed_writes_can_be_absent() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        crash.write_at(1024, &sector(9)).expect("write");
        let image = crash.crash_image(1, &CrashChoice::NonePersisted).expect("image");
        assert_eq!(read(&image, 1024, 512), sector(0));
        let image = crash.crash_image(1, &CrashChoice::AllPersisted).expect("image");
        assert_eq!(read(&image, 1024, 512), sector(9));
        let states: Vec<CrashState> = crash.crash_states(100, 1).collect();
        assert!(states.iter().any(|s| read(&s.disk, 1024, 512) == sector(0)), "never absent");
        assert!(states.iter().any(|s| read(&s.disk, 1024, 512) == sector(9)), "never present");
    }

    #[test]
    fn reordering_can_keep_a_later_write_without_an_earlier_one() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        crash.write_at(0, &sector(1)).expect("earlier write");
        crash.write_at(4096, &sector(2)).expect("later write");
        let image = crash.crash_image(2, &CrashChoice::Reordered(vec![1])).expect("image");
        assert_eq!(read(&image, 0, 512), sector(0));
        assert_eq!(read(&image, 4096, 512), sector(2));
        let found = crash
            .crash_states(100, 3)
            .any(|s| read(&s.disk, 0, 512) == sector(0) && read(&s.disk, 4096, 512) == sector(2));
        assert!(found, "the enumerator never kept the later write alone");
    }

    #[test]
    fn reordering_lets_an_earlier_overlapping_write_land_last() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        crash.write_at(0, &sector(1)).expect("old");
        crash.write_at(0, &sector(2)).expect("new");
        let image = crash.crash_image(2, &CrashChoice::Reordered(vec![1, 0])).expect("image");
        assert_eq!(read(&image, 0, 512), sector(1));
        let found = crash.crash_states(100, 3).any(|s| read(&s.disk, 0, 512) == sector(1) && s.cut == 2);
        assert!(found, "the enumerator never let the old write land last");
    }

    #[test]
    fn torn_writes_change_only_whole_sectors() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        crash.write_at(1024, &[7; 4 * 512]).expect("aligned 4-sector write");
        // Unaligned: touches sectors 16..=19, partly the first and last.
        crash.write_at(16 * 512 + 100, &[8; 3 * 512]).expect("unaligned write");
        let writes = crash.unflushed_writes(2).expect("unflushed");
        assert_eq!(writes.iter().map(|w| w.sectors).collect::<Vec<_>>(), vec![4, 4]);

        let torn = CrashChoice::Torn { write: 0, sectors: vec![true, false, false, true] };
        let image = crash.crash_image(2, &torn).expect("image");
        let got = read(&image, 1024, 4 * 512);
        assert_eq!(&got[..512], &sector(7)[..]);
        assert_eq!(&got[512..1536], &[0; 1024][..]);
        assert_eq!(&got[1536..], &sector(7)[..]);

        let mut torn_states = 0;
        for state in crash.crash_states(1000, 5) {
            for s in 0..SIZE / SECTOR_SIZE {
                let bytes = read(&state.disk, s * SECTOR_SIZE, SECTOR_SIZE as usize);
                let old = sector(0);
                let mut new = old.clone();
                if (2..6).contains(&s) {
                    new = sector(7);
                } else if (16..20).contains(&s) {
                    let start = 16 * 512 + 100;
                    for (i, b) in new.iter_mut().enumerate() {
                        let at = s * 512 + i as u64;
                        if at >= start && at < start + 3 * 512 {
                            *b = 8;
                        }
                    }
                }
                assert!(bytes == old || bytes == new, "{}: sector {s} is mixed", state.description);
            }
            if matches!(state.choice, CrashChoice::Torn { .. }) {
                torn_states += 1;
            }
        }
        assert!(torn_states >= 6, "only {torn_states} torn states");
    }

    #[test]
    fn enumerator_is_deterministic_for_a_seed_and_bounded() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        let mut rng = Rng::new(42);
        for i in 0..60u64 {
            let offset = rng.below(SIZE / 512 - 8) * 512;
            let len = (1 + rng.below(8) as usize) * 512;
            crash.write_at(offset, &vec![i as u8; len]).expect("write");
            if i % 13 == 12 {
                crash.flush().expect("flush");
            }
        }
        let run = |max, seed| -> Vec<(String, Vec<u8>)> {
            crash.crash_states(max, seed).map(|s| (s.description, s.disk.snapshot())).collect()
        };
        let first = run(80, 9);
        assert_eq!(first.len(), 80);
        assert!(first == run(80, 9), "same seed, different states");
        let other = run(80, 10);
        assert!(first.iter().map(|s| &s.0).ne(other.iter().map(|s| &s.0)), "seed ignored");
        assert_eq!(run(5, 9).len(), 5);
        assert_eq!(run(0, 9).len(), 0);
        // Every state can be rebuilt from its cut and choice.
        for state in crash.crash_states(40, 11) {
            let again = crash.crash_image(state.cut, &state.choice).expect("rebuild");
            assert!(again.snapshot() == state.disk.snapshot(), "{}", state.description);
        }
    }

    #[test]
    fn enumerator_is_exhaustive_for_few_unflushed_writes() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        for i in 0..4u8 {
            crash.write_at(u64::from(i) * 512, &sector(i + 1)).expect("write");
        }
        let mut images: Vec<Vec<u8>> =
            crash.crash_states(10_000, 0).map(|s| read(&s.disk, 0, 4 * 512)).collect();
        assert_eq!(images.len(), 16, "every subset of 4 single-sector writes, each once");
        images.sort();
        images.dedup();
        assert_eq!(images.len(), 16, "duplicate images");
    }

    #[test]
    fn vectored_writes_are_recorded_as_one_write() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        let parts: [&[u8]; 3] = [&[1; 512], &[2; 512], &[3; 1024]];
        crash.write_vectored_at(512, &parts).expect("vectored write");
        assert_eq!(crash.write_count(), 1);
        assert_eq!(crash.events(), 1);
        let writes = crash.unflushed_writes(1).expect("unflushed");
        assert_eq!(writes, vec![RecordedWrite { seq: 0, offset: 512, len: 2048, sectors: 4 }]);
        let image = crash.crash_image(1, &CrashChoice::AllPersisted).expect("image");
        assert_eq!(read(&image, 512, 2048), parts.concat());
        let mut buf = vec![0; 2048];
        crash.read_at(512, &mut buf).expect("read through");
        assert_eq!(buf, parts.concat());
    }

    #[test]
    fn clones_handed_out_share_the_log() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        let device: Arc<dyn BlockDevice> = Arc::new(crash.clone());
        device.write_at(0, b"hello").expect("write");
        device.flush().expect("flush");
        assert!(device.write_at(SIZE - 2, b"abc").is_err(), "write past the end accepted");
        assert_eq!(crash.events(), 2);
        assert_eq!(crash.barrier_positions(), vec![1]);
        let image = crash.crash_image(2, &CrashChoice::NonePersisted).expect("image");
        assert_eq!(read(&image, 0, 5), b"hello");
    }

    #[test]
    fn new_starts_from_the_inner_contents() {
        let inner = Arc::new(MemDisk::new(SIZE));
        inner.write_at(100, b"before").expect("write before recording");
        let crash = CrashDisk::new(inner.clone()).expect("crash disk");
        crash.write_at(200, b"after").expect("write");
        let image = crash.crash_image(0, &CrashChoice::AllPersisted).expect("image");
        assert_eq!(read(&image, 100, 6), b"before");
        assert_eq!(read(&image, 200, 5), [0; 5]);
        let last = crash.crash_image(crash.events(), &CrashChoice::AllPersisted).expect("image");
        assert!(last.snapshot() == inner.snapshot(), "the full replay differs from the device");
    }

    #[test]
    fn checkpoint_base_keeps_later_images_and_forgets_earlier_cuts() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        crash.write_at(0, &sector(1)).expect("write");
        crash.flush().expect("flush");
        crash.write_at(512, &sector(2)).expect("write");
        crash.flush().expect("flush");
        crash.write_at(1024, &sector(3)).expect("write");
        let choice = CrashChoice::NonePersisted;
        let before = crash.crash_image(5, &choice).expect("image").snapshot();
        crash.checkpoint_base();
        assert_eq!(crash.base_position(), 4);
        assert_eq!(crash.events(), 5);
        assert_eq!(crash.write_count(), 3);
        assert!(crash.crash_image(5, &choice).expect("image").snapshot() == before);
        assert!(crash.crash_image(3, &choice).is_err(), "a folded cut was accepted");
        let states: Vec<CrashState> = crash.crash_states(100, 0).collect();
        assert_eq!(states[0].cut, 4);
        assert!(states.iter().all(|s| read(&s.disk, 512, 512) == sector(2)));
    }

    #[test]
    fn choices_that_do_not_fit_are_refused() {
        let crash = CrashDisk::over(MemDisk::new(SIZE));
        crash.write_at(0, &sector(1)).expect("write");
        crash.write_at(512, &sector(2)).expect("write");
        let refused = |choice: CrashChoice| crash.crash_image(2, &choice).is_err();
        assert!(refused(CrashChoice::Subset(vec![true])));
        assert!(refused(CrashChoice::Reordered(vec![1, 1])));
        assert!(refused(CrashChoice::Reordered(vec![2])));
        assert!(refused(CrashChoice::Torn { write: 1, sectors: vec![true, false] }));
        assert!(refused(CrashChoice::Plan(vec![Persist { write: 0, sectors: Some(vec![]) }])));
        assert!(crash.crash_image(3, &CrashChoice::AllPersisted).is_err(), "cut past the end");
    }
}
