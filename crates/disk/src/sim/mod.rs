//! SimDisk: a simulated 1990s disk on a virtual clock, for rerunning the
//! papers' experiments deterministically in seconds of host time.
//!
//! Map:
//! * [`SimDisk`]: a [`BlockDevice`] whose every request takes simulated
//!   time on a [`VirtualClock`]; its contents live in a sparse store.
//! * [`DiskModel`] (`model.rs`) and the papers' drives (`catalog.rs`, with
//!   `seek_tables.rs`): the parameters.
//! * `geometry.rs`: zones, skew, LBN to cylinder/head/slot ([`Geometry`]).
//! * `mechanics.rs`: seek, rotation, media transfer, bus.
//! * `cache.rs`: the track buffer and its read-ahead.
//! * `queue.rs`: the request queue and its [`Scheduler`].
//! * `engine.rs`: serving one command from all of the above.
//! * `stats.rs`: [`Stats`] counters and the [`TraceRecord`] trace.
//! * `store.rs`: the sparse contents.
//!
//! It relies on nothing but the clock: no wall time, no threads, and no
//! randomness except the initial rotational phase drawn from
//! [`SimOptions::seed`].

mod cache;
mod catalog;
mod clock;
mod engine;
mod geometry;
mod mechanics;
mod model;
mod queue;
mod seek_tables;
mod stats;
mod store;

pub use clock::VirtualClock;
pub use geometry::{Geometry, Location, Zone};
pub use model::{BufferModel, DiskModel, Overheads, SeekCurve, SeekModel};
pub use queue::{RequestKind, Scheduler};
pub use stats::{Service, Stats, TraceRecord};

use crate::{check_bounds, BlockDevice, SECTOR_SIZE};
use engine::Engine;
use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use store::SparseStore;

/// Choices about a [`SimDisk`] that are not the drive's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimOptions {
    /// Order of service for queued requests (default first come, first
    /// served).
    pub scheduler: Scheduler,
    /// Acknowledge writes once their data is in the drive's buffer and
    /// write them to the media behind the host's back (default off: a
    /// write is done when it is on the media, as on the papers' systems).
    pub write_cache: bool,
    /// Seeds the platter's angle at time zero. Runs with the same seed and
    /// the same requests give the same times to the nanosecond.
    pub seed: u64,
    /// Record every command in a trace from the start (see
    /// [`SimDisk::take_trace`]).
    pub trace: bool,
}

/// A simulated disk: a [`BlockDevice`] that keeps its contents in memory and
/// charges every request the time the drive of its [`DiskModel`] would
/// take, on a shared [`VirtualClock`].
///
/// # Time
///
/// * A write (`write_at`, `write_vectored_at`) is *posted*: the data is
///   stored and the command queued at the clock's time, and the call
///   returns at once without moving the clock. The drive serves the command
///   in simulated time behind the ones queued before it.
/// * A read waits: it is queued like any command (behind posted writes,
///   under first come, first served) and the clock moves to its
///   completion.
/// * A read-ahead (`read_ahead`) is a posted read: queued at the clock's
///   time, served while the caller goes on; a later read of sectors inside
///   it waits for that command (only for what is left of it, if the caller
///   meanwhile charged CPU time), not for a new one — every such read until
///   one reaches its last sector, as if it had brought them into memory.
/// * `flush` waits for every queued command (and, with the write cache on,
///   for the cache to reach the media) and moves the clock there. So a
///   synchronous write is a write followed by a flush, and file-system code
///   needs nothing beyond [`BlockDevice`].
/// * Work done above the disk is charged by its caller with
///   [`VirtualClock::advance`]; requests issued after it arrive later.
///
/// # Contents
///
/// Bytes never written read as zeros; only written 64 KiB chunks take
/// memory. A read always returns the latest write, whether or not the drive
/// has reached it in simulated time. Flush is about time only: the store
/// never loses a write (use [`CrashDisk`](crate::CrashDisk) over a memory
/// disk to study power loss).
///
/// # Sharing
///
/// One mutex guards the drive and its contents; every call is safe from
/// any thread. Determinism is promised for one caller at a time: with
/// several threads the order they take the mutex decides the timings.
///
/// # Usage
///
/// ```
/// use disk::{BlockDevice, DiskModel, SimDisk, VirtualClock};
/// use std::sync::Arc;
/// let clock = Arc::new(VirtualClock::new());
/// let model = DiskModel::by_name("dsp3105").expect("a catalogued drive");
/// let disk = SimDisk::new(model, clock.clone()).expect("a valid model");
/// disk.write_at(0, &[0u8; 65536]).expect("write"); // posted: returns at once
/// assert_eq!(clock.now(), 0);
/// disk.flush().expect("flush"); // waits for the write
/// assert!(clock.now() > 20_000_000, "64 KB over a 2.3 MB/s bus takes over 20 ms");
/// clock.advance(5_000_000); // 5 ms of CPU time before the next request
/// println!("{}", disk.stats());
/// ```
pub struct SimDisk {
    model: DiskModel,
    geometry: Geometry,
    clock: Arc<VirtualClock>,
    size: u64,
    inner: Mutex<Inner>,
}

struct Inner {
    engine: Engine,
    store: SparseStore,
    /// Posted reads whose last sector no read has reached yet, oldest first.
    posted: VecDeque<PostedRead>,
}

/// A read queued by [`BlockDevice::read_ahead`]: its sectors and commands.
struct PostedRead {
    lbn: u64,
    sectors: u64,
    ids: Range<u64>,
}

impl PostedRead {
    /// Whether it reads every one of `sectors` sectors from `lbn`.
    fn covers(&self, lbn: u64, sectors: u64) -> bool {
        self.lbn <= lbn && lbn + sectors <= self.lbn + self.sectors
    }
}

/// Posted reads remembered at once; an older one still takes the drive's
/// time, but a read of its sectors no longer waits for it.
const MAX_POSTED_READS: usize = 8;

impl SimDisk {
    /// A drive of `model` on `clock`, with default options.
    pub fn new(model: DiskModel, clock: Arc<VirtualClock>) -> io::Result<SimDisk> {
        SimDisk::with_options(model, clock, SimOptions::default())
    }

    /// A drive of `model` on `clock`. Fails with `InvalidInput` when the
    /// model's zones are inconsistent.
    pub fn with_options(
        model: DiskModel,
        clock: Arc<VirtualClock>,
        options: SimOptions,
    ) -> io::Result<SimDisk> {
        let geometry = Geometry::new(model.heads, &model.zones).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("disk model {}: {e}", model.name))
        })?;
        let size = geometry.sectors() * SECTOR_SIZE;
        let phase = crate::splitmix::SplitMix64::new(options.seed).next_u64() % model.revolution_ns().max(1);
        let mut engine = Engine::new(&model, geometry.clone(), options.scheduler, options.write_cache, phase);
        engine.set_trace(options.trace);
        Ok(SimDisk {
            model,
            geometry,
            clock,
            size,
            inner: Mutex::new(Inner { engine, store: SparseStore::default(), posted: VecDeque::new() }),
        })
    }

    /// The clock this drive charges its time to.
    pub fn clock(&self) -> &Arc<VirtualClock> {
        &self.clock
    }

    /// The drive's parameters.
    pub fn model(&self) -> &DiskModel {
        &self.model
    }

    /// The drive's LBN map.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The counters, covering every command the drive has started by the
    /// clock's current time.
    pub fn stats(&self) -> Stats {
        let mut inner = self.lock();
        inner.engine.run_until(self.clock.now());
        inner.engine.stats()
    }

    /// Starts or stops recording every command (see [`TraceRecord`]).
    pub fn set_trace(&self, on: bool) {
        self.lock().engine.set_trace(on);
    }

    /// The commands recorded since the last call, in the order the drive
    /// took them (up to the clock's current time).
    pub fn take_trace(&self) -> Vec<TraceRecord> {
        let mut inner = self.lock();
        inner.engine.run_until(self.clock.now());
        inner.engine.take_trace()
    }

    /// Bytes of host memory the contents take.
    pub fn resident_bytes(&self) -> u64 {
        self.lock().store.resident_bytes()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sectors a byte range touches: first sector and count.
fn sector_span(offset: u64, len: u64) -> (u64, u64) {
    let first = offset / SECTOR_SIZE;
    let end = (offset + len).div_ceil(SECTOR_SIZE);
    (first, end - first)
}

impl BlockDevice for SimDisk {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        check_bounds(offset, buf.len(), self.size)?;
        if buf.is_empty() {
            return Ok(());
        }
        let (lbn, sectors) = sector_span(offset, buf.len() as u64);
        let mut inner = self.lock();
        // Sectors a posted read covers: wait for it, not for a new command
        // (the read-ahead brought them into memory). It is kept until a
        // read reaches its last sector, for a reader in smaller units.
        let covering = inner.posted.iter().position(|p| p.covers(lbn, sectors));
        let finish = match covering {
            Some(i) => {
                let ids = inner.posted[i].ids.clone();
                let finish = inner.engine.complete(ids.clone());
                if lbn + sectors == inner.posted[i].lbn + inner.posted[i].sectors {
                    inner.posted.remove(i);
                    inner.engine.forget(ids);
                }
                finish
            }
            None => {
                let ids = inner.engine.submit(self.clock.now(), RequestKind::Read, lbn, sectors);
                inner.engine.complete(ids)
            }
        };
        inner.store.read(offset, buf);
        self.clock.advance_to(finish);
        Ok(())
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.write_vectored_at(offset, &[buf])
    }

    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        let len = bufs.iter().try_fold(0usize, |sum, b| sum.checked_add(b.len()));
        let len = len.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "write length overflows"))?;
        check_bounds(offset, len, self.size)?;
        if len == 0 {
            return Ok(());
        }
        let (lbn, sectors) = sector_span(offset, len as u64);
        let mut inner = self.lock();
        let mut at = offset;
        for buf in bufs {
            inner.store.write(at, buf);
            at += buf.len() as u64;
        }
        let now = self.clock.now();
        inner.engine.submit(now, RequestKind::Write, lbn, sectors);
        inner.engine.run_until(now);
        Ok(())
    }

    /// A posted read: queued at the clock's time like a posted write, and
    /// served by the drive while the caller goes on. A later `read_at` of
    /// sectors inside it waits only for what is left of it.
    fn read_ahead(&self, offset: u64, len: usize) -> io::Result<()> {
        check_bounds(offset, len, self.size)?;
        if len == 0 {
            return Ok(());
        }
        let (lbn, sectors) = sector_span(offset, len as u64);
        let mut inner = self.lock();
        if inner.posted.iter().any(|p| p.covers(lbn, sectors)) {
            return Ok(());
        }
        let now = self.clock.now();
        let ids = inner.engine.submit(now, RequestKind::Read, lbn, sectors);
        inner.engine.watch(ids.clone());
        inner.engine.run_until(now);
        inner.posted.push_back(PostedRead { lbn, sectors, ids });
        if inner.posted.len() > MAX_POSTED_READS {
            if let Some(old) = inner.posted.pop_front() {
                inner.engine.forget(old.ids);
            }
        }
        Ok(())
    }

    fn takes_read_ahead(&self) -> bool {
        true
    }

    /// No: each request is charged as the modelled disk charged it, and
    /// the lab's layouts issue the requests their papers' systems did.
    fn joins_writes(&self) -> bool {
        false
    }

    fn flush(&self) -> io::Result<()> {
        let mut inner = self.lock();
        let done = inner.engine.drain();
        self.clock.advance_to(done);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests;
