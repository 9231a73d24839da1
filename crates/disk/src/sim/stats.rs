//! What a simulated disk reports about its work: counters, and an optional
//! trace of every request. Both are deterministic: they depend on the
//! requests and the clock, never on the host machine.

use super::queue::RequestKind;
use std::fmt;

/// Counters of a [`SimDisk`](super::SimDisk)'s work since it was made.
///
/// They cover every command the drive has started by the time of the
/// snapshot (a posted write counts once the drive has taken it from the
/// queue; its whole service counts then). A read or write larger than the
/// drive's maximum transfer counts as the several commands it became.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Read commands.
    pub reads: u64,
    /// Write commands.
    pub writes: u64,
    /// Bytes read (whole sectors).
    pub bytes_read: u64,
    /// Bytes written (whole sectors).
    pub bytes_written: u64,
    /// Commands that began with a seek (a cylinder change).
    pub seeks: u64,
    /// Cylinders travelled by those seeks.
    pub seek_cylinders: u64,
    /// Time spent in those seeks.
    pub seek_ns: u64,
    /// Commands that began with a head switch and no seek.
    pub head_switches: u64,
    /// Time spent in those head switches.
    pub head_switch_ns: u64,
    /// From the heads being ready to the first sector coming under them,
    /// summed over commands that used the media.
    pub rotational_latency_ns: u64,
    /// Time the heads waited in place for a write's data still crossing a
    /// bus slower than the media.
    pub bus_wait_ns: u64,
    /// Media time of the requested sectors, including track and cylinder
    /// crossings within a command.
    pub transfer_ns: u64,
    /// Controller overhead.
    pub overhead_ns: u64,
    /// Reads served wholly from the track buffer.
    pub buffer_hits: u64,
    /// Reads served by read-ahead that was still streaming into the buffer.
    pub streaming_hits: u64,
    /// Sectors read ahead into the buffer beyond what was asked for.
    pub read_ahead_sectors: u64,
    /// Writes acknowledged from the write cache before reaching the media.
    pub cached_writes: u64,
    /// Time the drive spent on commands (from taking one to reporting it
    /// done).
    pub busy_ns: u64,
    /// Time the drive waited with nothing queued.
    pub idle_ns: u64,
}

impl Stats {
    /// Commands of either kind.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes
    }

    /// The counters of `self` minus those of an earlier snapshot `before`:
    /// the work of one phase of an experiment (a counter that went down,
    /// when `before` is not earlier, gives 0).
    pub fn since(&self, before: &Stats) -> Stats {
        Stats {
            reads: self.reads.saturating_sub(before.reads),
            writes: self.writes.saturating_sub(before.writes),
            bytes_read: self.bytes_read.saturating_sub(before.bytes_read),
            bytes_written: self.bytes_written.saturating_sub(before.bytes_written),
            seeks: self.seeks.saturating_sub(before.seeks),
            seek_cylinders: self.seek_cylinders.saturating_sub(before.seek_cylinders),
            seek_ns: self.seek_ns.saturating_sub(before.seek_ns),
            head_switches: self.head_switches.saturating_sub(before.head_switches),
            head_switch_ns: self.head_switch_ns.saturating_sub(before.head_switch_ns),
            rotational_latency_ns: self.rotational_latency_ns.saturating_sub(before.rotational_latency_ns),
            bus_wait_ns: self.bus_wait_ns.saturating_sub(before.bus_wait_ns),
            transfer_ns: self.transfer_ns.saturating_sub(before.transfer_ns),
            overhead_ns: self.overhead_ns.saturating_sub(before.overhead_ns),
            buffer_hits: self.buffer_hits.saturating_sub(before.buffer_hits),
            streaming_hits: self.streaming_hits.saturating_sub(before.streaming_hits),
            read_ahead_sectors: self.read_ahead_sectors.saturating_sub(before.read_ahead_sectors),
            cached_writes: self.cached_writes.saturating_sub(before.cached_writes),
            busy_ns: self.busy_ns.saturating_sub(before.busy_ns),
            idle_ns: self.idle_ns.saturating_sub(before.idle_ns),
        }
    }
}

/// One line in the manner of `iostat`: commands, bytes, mean seek and
/// rotational latency, buffer hits, utilisation.
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: u64, n: u64| if n == 0 { 0.0 } else { ns as f64 / n as f64 / 1e6 };
        let media = self.requests().saturating_sub(self.buffer_hits + self.streaming_hits);
        let total = self.busy_ns + self.idle_ns;
        let util = if total == 0 { 0.0 } else { 100.0 * self.busy_ns as f64 / total as f64 };
        write!(
            f,
            "{} reads ({} KiB), {} writes ({} KiB); {} seeks, mean {:.2} ms over {:.0} cyl; \
             mean rotation {:.2} ms; {} buffer hits, {} streaming; busy {:.1}%",
            self.reads,
            self.bytes_read / 1024,
            self.writes,
            self.bytes_written / 1024,
            self.seeks,
            ms(self.seek_ns, self.seeks),
            if self.seeks == 0 { 0.0 } else { self.seek_cylinders as f64 / self.seeks as f64 },
            ms(self.rotational_latency_ns, media),
            self.buffer_hits,
            self.streaming_hits,
            util,
        )
    }
}

/// How the drive served a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    /// Read from or written to the media.
    Media,
    /// Read wholly from the track buffer.
    BufferHit,
    /// Read as read-ahead streamed it into the buffer.
    Streaming,
    /// Acknowledged from the write cache; written to the media later.
    WriteCache,
}

/// One command as the trace records it. Times are on the virtual clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceRecord {
    /// Serial number, in submission order.
    pub id: u64,
    /// Read or write.
    pub kind: RequestKind,
    /// First sector.
    pub lbn: u64,
    /// Sectors.
    pub sectors: u64,
    /// When it reached the queue.
    pub submit: u64,
    /// When the drive took it from the queue.
    pub start: u64,
    /// When the drive reported it done.
    pub finish: u64,
    /// How it was served.
    pub service: Service,
}
