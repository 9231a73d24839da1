//! Reports of damage met while serving requests. A program that reads a
//! file whose indirect block is corrupt sees only EIO; the mount's log
//! (standard error: the terminal with `-f`, else the system log or the
//! mount's log file) gets one line saying which request met what, where:
//!
//! ```text
//! fslab: read of inode 12: corrupt indirect block at block 5432: block -12 of inode 12: checksum mismatch (EIO)
//! ```
//!
//! Rate limits, so that a program retrying a damaged file, or a scan over a
//! badly damaged disk, cannot flood the log (docs/design/fuse.md, "Reporting
//! damage"):
//!
//! 1. The same damaged structure (the same name and place) is reported at
//!    most once per [`REPEAT_INTERVAL`]; the next report says how often it
//!    was met in between.
//! 2. Across all structures, at most [`BURST`] reports per [`WINDOW`] (the
//!    kernel's printk rate limit); the first report after a window that
//!    held some back says how many.

use fslab::Error;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long the same damaged structure stays quiet after it is reported.
pub const REPEAT_INTERVAL: Duration = Duration::from_secs(60);
/// Reports allowed per [`WINDOW`], over all structures.
pub const BURST: u32 = 10;
/// The window of [`BURST`].
pub const WINDOW: Duration = Duration::from_secs(5);
/// Structures remembered for rule 1; past this the oldest are forgotten
/// (at worst one is reported again early).
const REMEMBERED: usize = 4096;

/// The rate limiter's memory. One per mount, behind a lock.
#[derive(Debug, Default)]
pub struct DamageLog {
    /// Per damaged structure: when it was last reported, and how often it
    /// was met since without a report.
    seen: HashMap<String, (Instant, u64)>,
    window_start: Option<Instant>,
    in_window: u32,
    /// Reports held back by rule 2 since the last one that went out.
    held_back: u64,
}

/// Whether `error` is damage worth a log line: a structure that failed
/// validation, or the device failing. Errors a program caused (ENOENT,
/// ENOSPC, EEXIST, ...) are its own business.
pub fn is_damage(error: &Error) -> bool {
    matches!(error, Error::Corrupt { .. } | Error::Io(_))
}

impl DamageLog {
    /// The line to log for `error`, met at `now` by request `op` on inode
    /// `ino`, or `None` when it is not damage or a rate limit holds it back.
    pub fn report(&mut self, op: &str, ino: u64, error: &Error, now: Instant) -> Option<String> {
        if !is_damage(error) {
            return None;
        }
        // What identifies the structure: the message without its reason
        // for corruption (the reason may name the request's block), the
        // whole message for a device error.
        let key = match error {
            Error::Corrupt { what, at, .. } => format!("{what}{at}"),
            other => other.to_string(),
        };
        let repeats = match self.seen.get_mut(&key) {
            Some((last, count)) if now.duration_since(*last) < REPEAT_INTERVAL => {
                *count += 1;
                return None;
            }
            Some((_, count)) => *count,
            None => 0,
        };
        if !self.window_open(now) {
            self.held_back += 1;
            return None;
        }
        if self.seen.len() >= REMEMBERED && !self.seen.contains_key(&key) {
            self.seen.retain(|_, (last, _)| now.duration_since(*last) < REPEAT_INTERVAL);
            if self.seen.len() >= REMEMBERED {
                self.seen.clear();
            }
        }
        self.seen.insert(key, (now, 0));
        let mut line = format!("fslab: {op} of inode {ino}: {error} ({})", errno_name(error.errno()));
        if repeats > 0 {
            line += &format!("; met {repeats} more times since its last report");
        }
        if self.held_back > 0 {
            line += &format!("; {} other reports of damage held back", self.held_back);
            self.held_back = 0;
        }
        Some(line)
    }

    /// Counts a report against rule 2; false when the window is full.
    fn window_open(&mut self, now: Instant) -> bool {
        match self.window_start {
            Some(start) if now.duration_since(start) < WINDOW => {}
            _ => {
                self.window_start = Some(now);
                self.in_window = 0;
            }
        }
        if self.in_window >= BURST {
            return false;
        }
        self.in_window += 1;
        true
    }
}

/// `EIO` and the like, for a report.
fn errno_name(errno: i32) -> String {
    match errno {
        libc::EIO => "EIO".to_string(),
        libc::ENOSPC => "ENOSPC".to_string(),
        libc::EROFS => "EROFS".to_string(),
        libc::ENXIO => "ENXIO".to_string(),
        n => format!("errno {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fslab::error::{errno, Location};

    fn indirect(daddr: u64) -> Error {
        Error::corrupt("indirect block", daddr, "block -12 of inode 12: checksum mismatch")
    }

    #[test]
    fn a_report_names_the_request_the_inode_the_place_and_the_reason() {
        let mut log = DamageLog::default();
        let line = log.report("read", 12, &indirect(5432), Instant::now()).expect("reported");
        assert_eq!(
            line,
            "fslab: read of inode 12: corrupt indirect block at block 5432: \
             block -12 of inode 12: checksum mismatch (EIO)"
        );
        let xattr = Error::corrupt_at("xattr block", Location::Inode(7), "checksum 0x1, computed 0x2");
        let line = log.report("getxattr", 7, &xattr, Instant::now()).expect("reported");
        assert!(line.contains("getxattr of inode 7: corrupt xattr block of inode 7: checksum"), "{line}");
    }

    #[test]
    fn errors_a_program_caused_are_not_reported() {
        let mut log = DamageLog::default();
        for e in [errno(libc::ENOENT, "no such entry"), errno(libc::ENOSPC, "full")] {
            assert_eq!(log.report("lookup", 2, &e, Instant::now()), None);
        }
        let device = Error::Io(std::io::Error::from_raw_os_error(libc::EIO));
        assert!(log.report("read", 5, &device, Instant::now()).is_some());
    }

    #[test]
    fn the_same_structure_is_reported_once_a_minute_with_a_count_of_repeats() {
        let mut log = DamageLog::default();
        let t0 = Instant::now();
        assert!(log.report("read", 12, &indirect(5432), t0).is_some());
        for s in 1..=5 {
            assert_eq!(log.report("read", 12, &indirect(5432), t0 + Duration::from_secs(s)), None);
        }
        // Another structure is not held back by the first.
        assert!(log.report("read", 13, &indirect(6000), t0 + Duration::from_secs(6)).is_some());
        let later = log.report("read", 12, &indirect(5432), t0 + REPEAT_INTERVAL).expect("reported again");
        assert!(later.ends_with("; met 5 more times since its last report"), "{later}");
    }

    #[test]
    fn at_most_a_burst_of_reports_per_window_then_a_count_of_those_held_back() {
        let mut log = DamageLog::default();
        let t0 = Instant::now();
        let sent = (0..25).filter(|&i| log.report("read", 12, &indirect(100 + i), t0).is_some()).count();
        assert_eq!(sent, BURST as usize);
        let next = log.report("read", 12, &indirect(999), t0 + WINDOW).expect("a new window");
        assert!(next.ends_with("; 15 other reports of damage held back"), "{next}");
    }

    #[test]
    fn memory_stays_bounded() {
        let mut log = DamageLog::default();
        let mut now = Instant::now();
        for i in 0..(REMEMBERED as u64 + 100) {
            now += WINDOW; // every report in a window of its own
            log.report("read", 1, &indirect(i + 1), now);
        }
        assert!(log.seen.len() <= REMEMBERED);
    }
}
