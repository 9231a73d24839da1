//! The drive as a whole: it takes commands from the queue one at a time and
//! works out, from the mechanism, the buffer and the bus, when each starts
//! and finishes.
//!
//! Time is computed, not waited for. The engine keeps when its front end
//! (controller and bus) is next free and when its mechanism is; a command is
//! taken at the later of its arrival and the front end being free. Taking
//! commands is lazy: [`Engine::run_until`] takes every command the drive
//! would have taken by a given time, which is exact because a command can
//! only be chosen among those that arrived before the choice.
//!
//! Serving a command, by kind:
//! 1. Read, held in the buffer: controller overhead, then the bus.
//! 2. Read, streaming: overhead, then the bus, sector by sector as
//!    read-ahead brings each in.
//! 3. Read, miss: overhead; the mechanism (once free) seeks, waits for the
//!    sector, reads; the bus carries each sector once it is read; then
//!    read-ahead starts.
//! 4. Write, write cache off: overhead; the seek overlaps the data crossing
//!    the bus; the media write starts at the first pass of the sector at
//!    which no sector would be written before its data arrived; done when
//!    the last sector is on the media.
//! 5. Write, write cache on: the media write is timed as in 4, but the
//!    command is done once its data has crossed the bus (and the cache has
//!    room: while it is full, a write waits for the oldest to reach the
//!    media). The drive takes the next command while the media write goes
//!    on, so back-to-back sequential writes reach the media without losing
//!    a revolution whenever the bus outruns the media.

use super::cache::{Lookup, TrackBuffer};
use super::geometry::Geometry;
use super::mechanics::{Head, Mechanics, Piece, Positioning};
use super::model::{DiskModel, Overheads};
use super::queue::{Queue, Request, RequestKind, Scheduler};
use super::stats::{Service, Stats, TraceRecord};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

/// The drive's state between commands.
///
/// Invariants: `mech_free` is when the last media operation ends (read-ahead
/// excluded); without a write cache `front_free >= mech_free` once a command
/// is done; `cached` lists write-cache media writes in order, each ending
/// after the one before, and `cached_sectors` is the sum of their sizes.
pub(crate) struct Engine {
    mech: Mechanics,
    overhead: Overheads,
    max_transfer_sectors: u64,
    /// Sectors the write cache holds, or `None` with the cache off.
    write_cache: Option<u64>,
    queue: Queue,
    buffer: TrackBuffer,
    head: Head,
    front_free: u64,
    mech_free: u64,
    /// LBN just past the last command served (C-LOOK's position).
    cursor: u64,
    cached: VecDeque<(u64, u64)>,
    cached_sectors: u64,
    next_id: u64,
    last_submit: u64,
    /// Commands of posted reads, each with when it finished once taken: a
    /// posted read may be taken long before anyone waits for it.
    watched: BTreeMap<u64, Option<u64>>,
    stats: Stats,
    trace: Option<Vec<TraceRecord>>,
}

/// The media part of a command: the pieces it passed and how it began.
struct MediaRun {
    pieces: Vec<Piece>,
    positioning: Positioning,
    head: Head,
}

impl Engine {
    /// A drive of `model` with the platter at `phase_ns` into its revolution
    /// at time zero.
    pub fn new(
        model: &DiskModel,
        geometry: Geometry,
        scheduler: Scheduler,
        write_cache: bool,
        phase_ns: u64,
    ) -> Engine {
        let sectors = geometry.sectors();
        let buffer_sectors = u64::from(model.buffer.segments) * u64::from(model.buffer.segment_sectors);
        Engine {
            mech: Mechanics::new(model, geometry, phase_ns),
            overhead: model.overhead,
            max_transfer_sectors: model.max_transfer_bytes.map_or(u64::MAX, |b| (b / 512).max(1)),
            write_cache: write_cache.then_some(buffer_sectors),
            queue: Queue::new(scheduler),
            buffer: TrackBuffer::new(model.buffer, sectors),
            head: Head::default(),
            front_free: 0,
            mech_free: 0,
            cursor: 0,
            cached: VecDeque::new(),
            cached_sectors: 0,
            next_id: 0,
            last_submit: 0,
            watched: BTreeMap::new(),
            stats: Stats::default(),
            trace: None,
        }
    }

    /// Queues `sectors` sectors from `lbn`, arriving at `now`, as one
    /// command or, past the maximum transfer, several. Returns their ids.
    pub fn submit(&mut self, now: u64, kind: RequestKind, lbn: u64, sectors: u64) -> Range<u64> {
        let submit = now.max(self.last_submit);
        self.last_submit = submit;
        let first = self.next_id;
        let mut done = 0;
        while done < sectors {
            let n = (sectors - done).min(self.max_transfer_sectors);
            self.queue.push(Request { id: self.next_id, kind, lbn: lbn + done, sectors: n, submit });
            self.next_id += 1;
            done += n;
        }
        first..self.next_id
    }

    /// Takes every command the drive would have taken by time `t`.
    pub fn run_until(&mut self, t: u64) {
        while self.dispatch(Some(t)).is_some() {}
    }

    /// Serves commands until every one in `ids` is done; returns when the
    /// last of them was reported done. Watched commands already taken
    /// count with the time they finished (and stay watched until
    /// [`forget`](Engine::forget)).
    pub fn complete(&mut self, ids: Range<u64>) -> u64 {
        let mut left = 0;
        let mut finish = 0;
        for id in ids.clone() {
            match self.watched.get(&id) {
                Some(Some(done)) => finish = finish.max(*done),
                _ => left += 1,
            }
        }
        while left > 0 {
            let Some((id, done)) = self.dispatch(None) else { break };
            if ids.contains(&id) {
                finish = finish.max(done);
                left -= 1;
            }
        }
        finish
    }

    /// Remembers when each of `ids` finishes, for a later [`complete`](Engine::complete).
    pub fn watch(&mut self, ids: Range<u64>) {
        for id in ids {
            self.watched.insert(id, None);
        }
    }

    /// Stops remembering `ids` (a posted read no one waited for).
    pub fn forget(&mut self, ids: Range<u64>) {
        for id in ids {
            self.watched.remove(&id);
        }
    }

    /// Serves everything queued; returns when the drive is done with all of
    /// it, write-cache contents on the media included.
    pub fn drain(&mut self) -> u64 {
        while self.dispatch(None).is_some() {}
        self.front_free.max(self.mech_free)
    }

    /// The counters, as of the last command taken.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Starts (or stops) recording a trace.
    pub fn set_trace(&mut self, on: bool) {
        match (on, self.trace.is_some()) {
            (true, false) => self.trace = Some(Vec::new()),
            (false, true) => self.trace = None,
            _ => {}
        }
    }

    /// The trace recorded since the last call.
    pub fn take_trace(&mut self) -> Vec<TraceRecord> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Takes the next command if the drive would take it by `limit` (or at
    /// all, without a limit); returns its id and completion time.
    fn dispatch(&mut self, limit: Option<u64>) -> Option<(u64, u64)> {
        let at = self.front_free.max(self.queue.ready_time()?);
        if limit.is_some_and(|limit| at > limit) {
            return None;
        }
        let request = self.queue.pop(at, self.cursor)?;
        self.stats.idle_ns += at - self.front_free;
        let (finish, service) = match request.kind {
            RequestKind::Read => self.serve_read(&request, at),
            RequestKind::Write => self.serve_write(&request, at),
        };
        self.front_free = finish;
        if let Some(slot) = self.watched.get_mut(&request.id) {
            *slot = Some(finish);
        }
        self.cursor = request.lbn + request.sectors;
        self.stats.busy_ns += finish - at;
        if let Some(trace) = self.trace.as_mut() {
            trace.push(TraceRecord {
                id: request.id,
                kind: request.kind,
                lbn: request.lbn,
                sectors: request.sectors,
                submit: request.submit,
                start: at,
                finish,
                service,
            });
        }
        Some((request.id, finish))
    }

    /// Brings read-ahead up to time `t` and the heads with it.
    fn catch_up_read_ahead(&mut self, t: u64) {
        let (moved, sectors) = self.buffer.advance(&self.mech, t);
        if let Some(head) = moved {
            self.head = head;
        }
        self.stats.read_ahead_sectors += sectors;
    }

    fn serve_read(&mut self, r: &Request, at: u64) -> (u64, Service) {
        self.stats.reads += 1;
        self.stats.bytes_read += r.sectors * 512;
        self.catch_up_read_ahead(at);
        match self.buffer.lookup(r.lbn, r.sectors) {
            Lookup::Hit => {
                self.stats.buffer_hits += 1;
                self.stats.overhead_ns += self.overhead.read_hit_ns;
                self.buffer.note_hit(r.lbn, r.sectors, at);
                (at + self.overhead.read_hit_ns + self.mech.bus_ns(r.sectors), Service::BufferHit)
            }
            Lookup::Streaming => {
                self.stats.streaming_hits += 1;
                self.stats.overhead_ns += self.overhead.read_hit_ns;
                let pieces = self.buffer.stream(&self.mech, r.lbn, r.sectors, at);
                if let Some(last) = pieces.last() {
                    self.head = last.head;
                    self.mech_free = self.mech_free.max(last.end);
                }
                self.stats.transfer_ns += pieces.iter().map(|p| p.end - p.start).sum::<u64>();
                (self.read_finish(at + self.overhead.read_hit_ns, r, &pieces), Service::Streaming)
            }
            Lookup::Miss => {
                self.buffer.stop();
                self.stats.overhead_ns += self.overhead.read_miss_ns;
                let t0 = at + self.overhead.read_miss_ns;
                let start = t0.max(self.mech_free);
                let run = self.media(start, start, r.lbn, r.sectors, false);
                let media_end = self.account_media(&run);
                self.buffer.fill_after_miss(r.lbn, r.sectors, media_end, run.head);
                (self.read_finish(t0, r, &run.pieces), Service::Media)
            }
        }
    }

    /// When a read is done: the bus carries each sector once it is in the
    /// buffer, one after another, starting no earlier than `t0`. With
    /// sector `i` read at `a_i`, that is `max(t0 + bus(n), a_i + bus(n - i))`
    /// over all `i`; within a track `a_i` grows linearly, so its ends
    /// suffice.
    fn read_finish(&self, t0: u64, r: &Request, pieces: &[Piece]) -> u64 {
        let bus = |sectors: u64| self.mech.bus_ns(sectors);
        let mut finish = t0 + bus(r.sectors);
        for p in pieces {
            let i = p.lbn - r.lbn;
            let first_in = p.start + self.mech.slots_ns(p.spt, p.slot, 1);
            finish = finish.max(first_in + bus(r.sectors - i));
            finish = finish.max(p.end + bus(r.sectors - (i + p.count - 1)));
        }
        finish
    }

    fn serve_write(&mut self, r: &Request, at: u64) -> (u64, Service) {
        self.stats.writes += 1;
        self.stats.bytes_written += r.sectors * 512;
        self.stats.overhead_ns += self.overhead.write_ns;
        self.catch_up_read_ahead(at);
        self.buffer.stop();
        self.buffer.invalidate(r.lbn, r.sectors);
        let t0 = at + self.overhead.write_ns;
        let start = t0.max(self.mech_free);
        let trial = self.media(start, start, r.lbn, r.sectors, true);
        let ready = self.write_data_ready(t0, r, &trial.pieces);
        let run = if ready > trial.pieces.first().map_or(0, |p| p.start) {
            self.media(start, ready, r.lbn, r.sectors, true)
        } else {
            trial
        };
        let end = self.account_media(&run);
        match self.write_cache {
            Some(capacity) if r.sectors <= capacity => {
                // Acknowledged once the data is in and the cache has room.
                let mut ack = t0 + self.mech.bus_ns(r.sectors);
                while self.cached.front().is_some_and(|&(done, _)| done <= ack) {
                    self.pop_cached();
                }
                while self.cached_sectors + r.sectors > capacity {
                    let Some(done) = self.pop_cached() else { break };
                    ack = ack.max(done);
                }
                self.cached.push_back((end, r.sectors));
                self.cached_sectors += r.sectors;
                self.stats.cached_writes += 1;
                (ack, Service::WriteCache)
            }
            _ => (end, Service::Media),
        }
    }

    /// The earliest the first sector of a write may go on the media so that
    /// no sector is written before its data has crossed the bus (sector `i`
    /// arrives at `t0 + bus(i + 1)`). The pieces are a trial walk; their
    /// offsets from its first sector do not depend on when it starts, since
    /// every wait after the first is fixed by the angles of slot boundaries.
    fn write_data_ready(&self, t0: u64, r: &Request, pieces: &[Piece]) -> u64 {
        let Some(first) = pieces.first() else { return t0 };
        let mut ready = first.start;
        for p in pieces {
            let i = p.lbn - r.lbn;
            let offset_first = p.start - first.start;
            let offset_last = p.start + self.mech.slots_ns(p.spt, p.slot, p.count - 1) - first.start;
            ready = ready.max((t0 + self.mech.bus_ns(i + 1)).saturating_sub(offset_first));
            ready = ready.max((t0 + self.mech.bus_ns(i + p.count)).saturating_sub(offset_last));
        }
        ready
    }

    /// Walks the media for a command whose mechanism part may begin at
    /// `time`, its first sector not before `earliest`.
    fn media(&self, time: u64, earliest: u64, lbn: u64, sectors: u64, write: bool) -> MediaRun {
        let mut walk = self.mech.walk(self.head, time, earliest, lbn, sectors, write);
        let pieces: Vec<Piece> = walk.by_ref().collect();
        MediaRun { pieces, positioning: walk.positioning, head: walk.head }
    }

    /// Moves the heads and the mechanism's clock past `run` and counts it.
    /// Returns when its last sector passed.
    fn account_media(&mut self, run: &MediaRun) -> u64 {
        let p = run.positioning;
        if p.cylinders > 0 {
            self.stats.seeks += 1;
            self.stats.seek_cylinders += u64::from(p.cylinders);
            self.stats.seek_ns += p.seek_ns;
        } else if p.switch_ns > 0 {
            self.stats.head_switches += 1;
            self.stats.head_switch_ns += p.switch_ns;
        }
        self.stats.rotational_latency_ns += p.latency_ns;
        self.stats.bus_wait_ns += p.data_wait_ns;
        let (start, end) = match (run.pieces.first(), run.pieces.last()) {
            (Some(first), Some(last)) => (first.start, last.end),
            _ => (self.mech_free, self.mech_free),
        };
        self.stats.transfer_ns += end - start;
        self.head = run.head;
        self.mech_free = end;
        end
    }

    fn pop_cached(&mut self) -> Option<u64> {
        let (end, sectors) = self.cached.pop_front()?;
        self.cached_sectors -= sectors;
        Some(end)
    }
}
