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
//! [`SECTOR_SIZE`](crate::SECTOR_SIZE) bytes are atomic, and only writes
//! followed by a returned flush are durable.
//!
//! Files: this one holds [`CrashDisk`] and its event log; `image.rs` builds
//! the device as a [`CrashChoice`] leaves it (whole, dropped, reordered and
//! torn writes); `states.rs` enumerates the crash states ([`CrashStates`]);
//! `tests.rs` tests them together.

mod image;
mod states;
#[cfg(test)]
mod tests;

pub use image::{CrashChoice, Persist};
pub use states::{CrashState, CrashStates};

use crate::{check_bounds, BlockDevice, MemDisk};
use image::{apply_plan, apply_write, sector_count};
use states::{choose_picks, write_cuts};
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// Up to this many unflushed writes at a cut point, [`CrashDisk::crash_states`]
/// considers every subset of them; above it, a sample.
pub const EXHAUSTIVE_LIMIT: usize = 10;

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
