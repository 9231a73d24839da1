//! The clock a mounted file system keeps time by.
//!
//! A storage manager acts on time in a few places — LFS writes a checkpoint
//! every `checkpoint_interval`, FFS flushes delayed writes — and a run on a
//! simulated disk must take those decisions by the disk's virtual clock, not
//! the host's, or the same seed would not give the same run. So a mount is
//! given a [`TimeSource`]: the host's monotonic clock by default, or a
//! `disk::VirtualClock` shared with the simulated disk under it.
//!
//! Timestamps stored in inodes come from here too
//! ([`TimeSource::calendar_ns`]): the host's calendar time on the host's
//! clock, and on a virtual clock a fixed date plus the time simulated, so
//! that a run on a simulated disk writes the same bytes every time (a
//! journal's records, the diff of each changed block, hold them).

use disk::VirtualClock;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A source of elapsed time. (Unwind-safe, so that mount options holding
/// one can cross `catch_unwind`.)
pub trait Clock: Send + Sync + std::panic::RefUnwindSafe {
    /// Nanoseconds since an origin fixed when the clock was made; never
    /// decreases.
    fn now_ns(&self) -> u64;
}

/// When a simulated run's time begins, for its timestamps, in
/// nanoseconds since the Unix epoch: 2000-01-01T00:00:00Z, the year of
/// the last paper the lab reproduces.
pub const VIRTUAL_EPOCH_NS: i64 = 946_684_800 * 1_000_000_000;

/// The host's calendar time, in nanoseconds since the Unix epoch
/// (negative before it).
pub fn host_calendar_ns() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

/// The host's monotonic clock, counted from when it was made.
#[derive(Debug)]
pub struct WallClock {
    origin: Instant,
}

impl WallClock {
    /// A clock at zero now.
    pub fn new() -> WallClock {
        WallClock { origin: Instant::now() }
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::new()
    }
}

impl Clock for WallClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Simulated time: moves only when the simulated disk waits or a caller
/// charges CPU time (see `disk::SimDisk`).
impl Clock for VirtualClock {
    fn now_ns(&self) -> u64 {
        self.now()
    }
}

/// The clock a mount is given: shared, cheap to clone. Two sources are
/// equal when both are the host's clock, or both the same virtual clock.
#[derive(Clone)]
pub struct TimeSource {
    clock: Arc<dyn Clock>,
    is_virtual: bool,
}

impl TimeSource {
    /// The host's monotonic clock (what every mount used before virtual
    /// time existed, and still the default).
    pub fn wall() -> TimeSource {
        TimeSource { clock: Arc::new(WallClock::new()), is_virtual: false }
    }

    /// The virtual clock of a simulated disk: a mount on that disk then
    /// decides by simulated time.
    pub fn virtual_clock(clock: Arc<VirtualClock>) -> TimeSource {
        TimeSource { clock, is_virtual: true }
    }

    /// Time since the clock's origin.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.clock.now_ns())
    }

    /// The calendar time for timestamps, in nanoseconds since the Unix
    /// epoch: the host's, or on a virtual clock [`VIRTUAL_EPOCH_NS`] plus
    /// the time simulated.
    pub fn calendar_ns(&self) -> i64 {
        if self.is_virtual {
            VIRTUAL_EPOCH_NS.saturating_add(i64::try_from(self.clock.now_ns()).unwrap_or(i64::MAX))
        } else {
            host_calendar_ns()
        }
    }

    /// Whether this is simulated time.
    pub fn is_virtual(&self) -> bool {
        self.is_virtual
    }
}

impl Default for TimeSource {
    fn default() -> Self {
        TimeSource::wall()
    }
}

impl fmt::Debug for TimeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_virtual { "virtual" } else { "wall" };
        write!(f, "TimeSource({kind}, {:?})", self.now())
    }
}

impl PartialEq for TimeSource {
    fn eq(&self, other: &Self) -> bool {
        match (self.is_virtual, other.is_virtual) {
            (false, false) => true,
            (true, true) => Arc::ptr_eq(&self.clock, &other.clock),
            _ => false,
        }
    }
}

impl Eq for TimeSource {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_source_follows_its_clock_only() {
        let clock = Arc::new(VirtualClock::new());
        let time = TimeSource::virtual_clock(clock.clone());
        assert_eq!(time.now(), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(time.now(), Duration::ZERO, "host time passing moves no virtual time");
        clock.advance(1_500);
        assert_eq!(time.now(), Duration::from_nanos(1_500));
        assert!(time.is_virtual());
        assert_eq!(time, time.clone());
        assert_ne!(time, TimeSource::virtual_clock(Arc::new(VirtualClock::new())));
    }

    #[test]
    fn the_wall_source_moves_by_itself() {
        let time = TimeSource::wall();
        let before = time.now();
        std::thread::sleep(Duration::from_millis(2));
        assert!(time.now() >= before + Duration::from_millis(2));
        assert!(!time.is_virtual());
        assert_eq!(time, TimeSource::wall(), "the host has one clock");
        assert_ne!(time, TimeSource::virtual_clock(Arc::new(VirtualClock::new())));
    }
}
