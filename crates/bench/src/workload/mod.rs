//! The papers' workloads, written once against [`Target`]: they run the
//! same on fslab over a simulated disk, on an image file, on the raw
//! device, or in any mounted directory.
//!
//! Each workload takes its parameters (a `Spec`, with the paper's values
//! and a small configuration for tests and `--quick`) and reports what it
//! measured through a [`Record`]: phase, x (the swept parameter), metric,
//! value. None of them knows which file system it drives.
//!
//! * [`bandwidth`] — 1993 Fig. 9/12: write and read a file of size S, 50 times.
//! * [`small_files`] — Rosenblum's small-file test (1995 Fig. 1).
//! * [`large_file`] — Rosenblum's large-file test (1995 Fig. 2).
//! * [`sequential`] — create, read, overwrite, delete 32 MB as files of one
//!   size (1995 Fig. 3–6; 1997 Fig. 4–5).
//! * [`hot_files`] — read and rewrite in place the files an aging run
//!   modified last (1997 §5.2, Table 2).
//! * [`tpcb`] — TPC-B at the 10-TPS scale with an application cache
//!   (1995 Fig. 7, 1993 Table 7).
//! * [`andrew`] — the Andrew benchmark's five phases on a synthetic tree
//!   (1993 Table 6).
//! * [`dirops`] — per-operation cost against directory size (2002 Fig. 2–6).
//! * [`mh_folder`] — create, `folder -pack` and remove an MH mailbox (2002
//!   §4.1, Table 3).
//! * [`microbench`] — create, read, delete files of each size, and create
//!   and delete empty files (2000 §7.2, Fig. 1–3).
//! * [`postmark`] — PostMark 1.13 with every setting explicit (2000 §7.3.4,
//!   Fig. 5).
//! * [`ssh_build`] — unpack, configure and build a proxy of ssh-1.2.26's
//!   source tree (2000 §7.3.1, Table 4).
//! * [`netnews`] — a news spool: pre-fill, unbatch, expire (2000 §7.3.2,
//!   Table 5).
//! * [`sdet`] — a multi-user software-development mix standing in for
//!   SPEC's SDET (2000 §7.3.3, Fig. 4).

pub mod andrew;
pub mod bandwidth;
pub mod buildworld;
pub mod dirops;
pub mod hot_files;
pub mod large_file;
pub mod mh_folder;
pub mod microbench;
pub mod netnews;
pub mod postmark;
pub mod sdet;
pub mod sequential;
pub mod small_files;
pub mod ssh_build;
pub mod tpcb;

use crate::target::Target;
use std::io;

/// Where a workload puts what it measured: `(phase, x, metric, value)`.
pub trait Record {
    /// One data point.
    fn record(&mut self, phase: &str, x: f64, metric: &str, value: f64);
    /// A remark for the report (a phase that could not run as specified…).
    fn note(&mut self, _text: String) {}
}

/// Passes points on under another phase name, and no notes: how a run of
/// a setup the lab did not choose records beside the chosen one's points
/// without replacing any (`docs/lab/results.json` keeps every point the
/// chosen setup measured, so its checks read the same values).
pub struct Renamed<'a> {
    /// Where the points go.
    pub inner: &'a mut dyn Record,
    /// The one phase passed on (`None`: every phase).
    pub only: Option<&'a str>,
    /// Appended to each phase's name.
    pub suffix: &'a str,
}

impl Record for Renamed<'_> {
    fn record(&mut self, phase: &str, x: f64, metric: &str, value: f64) {
        if self.only.is_none_or(|only| only == phase) {
            self.inner.record(&format!("{phase}{}", self.suffix), x, metric, value);
        }
    }
}

/// Collects points in memory (tests, and the runner before it tags them).
#[derive(Debug, Default)]
pub struct Collected {
    /// The points, in the order recorded.
    pub points: Vec<(String, f64, String, f64)>,
    /// The notes.
    pub notes: Vec<String>,
}

impl Record for Collected {
    fn record(&mut self, phase: &str, x: f64, metric: &str, value: f64) {
        self.points.push((phase.to_string(), x, metric.to_string(), value));
    }
    fn note(&mut self, text: String) {
        self.notes.push(text);
    }
}

impl Collected {
    /// The value recorded for `phase`, `x` and `metric`, if any.
    pub fn get(&self, phase: &str, x: f64, metric: &str) -> Option<f64> {
        self.points.iter().find(|(p, px, m, _)| p == phase && *px == x && m == metric).map(|(_, _, _, v)| *v)
    }
}

/// Opens a fresh target (a new file system on a new device) for
/// workloads that want one per configuration.
pub type Fresh<'a> = dyn FnMut() -> io::Result<Target> + 'a;

/// Deterministic contents for `len` bytes of file data: not all zeros, so
/// that no layer can skip them.
pub fn contents(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = vec![0u8; len];
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    out
}

/// Creates `path` and writes `bytes` into it in writes of `chunk`'s size
/// (the last one shorter).
pub fn write_new_file(t: &mut Target, path: &str, bytes: u64, chunk: &[u8]) -> io::Result<()> {
    let fd = t.create(path)?;
    let mut at = 0;
    while at < bytes {
        let len = (bytes - at).min(chunk.len() as u64) as usize;
        t.write(fd, at, &chunk[..len])?;
        at += len as u64;
    }
    t.close(fd)
}

/// Reads the whole of `path`, `size` bytes, in one call (a compiler's or
/// `grep`'s read of a source).
pub fn read_file(t: &mut Target, path: &str, size: u64) -> io::Result<()> {
    let mut buf = vec![0u8; size as usize];
    let fd = t.open(path)?;
    t.read(fd, 0, &mut buf)?;
    t.close(fd)
}

/// Appends `len` bytes to `path` at `*at` and moves `*at` past them (a
/// build's log growing a line at a time).
pub fn append(t: &mut Target, path: &str, at: &mut u64, len: u64) -> io::Result<()> {
    let fd = t.open(path)?;
    t.write(fd, *at, &contents(len as usize, *at))?;
    *at += len;
    t.close(fd)
}

/// Brings the file system to `utilization` (of what `statfs` offers, as
/// `df` shows it) with one file of other data, `filler`, and syncs. Does
/// nothing when it is already that full.
pub fn fill(t: &mut Target, utilization: f64) -> io::Result<()> {
    let usage = t.usage()?;
    let want = (usage.total as f64 * utilization) as u64;
    let used = usage.total - usage.free;
    let bytes = want.saturating_sub(used);
    if bytes == 0 {
        return Ok(());
    }
    write_new_file(t, "filler", bytes, &contents(1 << 20, 6))?;
    t.sync()
}

/// Bytes per second as the experiment's megabytes per second.
pub fn rate(bytes: u64, seconds: f64, mb: f64) -> f64 {
    if seconds <= 0.0 {
        return 0.0;
    }
    bytes as f64 / seconds / mb
}

/// Per second.
pub fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds <= 0.0 {
        return 0.0;
    }
    count as f64 / seconds
}

/// Notes that a target could not drop its caches (once per workload).
pub fn note_cache(t: &Target, rec: &mut dyn Record) {
    if !t.caches_were_dropped() {
        rec.note(
            "the page cache could not be dropped between phases (needs root): reads may come from memory"
                .into(),
        );
    }
}

/// A fresh `system` on a partition of `bytes` at the start of a simulated
/// Cheetah 9LP, on virtual time with the Pentium III's CPU model, as the
/// runner makes one for the 2000 paper's experiments (tests).
#[cfg(test)]
pub(crate) fn test_target(system: &str, bytes: u64) -> Target {
    use crate::cpu::{CpuModel, PENTIUM3_500};
    use crate::device::{prepare, Medium};
    use crate::target::library::MountEnv;
    let dev = prepare(&Medium::sim("cheetah9lp"), Some(bytes), "test").expect("device");
    let s = crate::system::by_name(system).expect("a known system");
    let clock = dev.clock.clone().expect("a simulated disk's clock");
    let env = MountEnv {
        clock: fslab::time::TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: PENTIUM3_500.cache_bytes(s.block_size()),
    };
    let backend =
        crate::system::open_library(s, dev.dev.clone(), None, dev.sim.clone(), env).expect("mkfs and mount");
    let mut t = Target::on_virtual_time(backend, clock, CpuModel::of(PENTIUM3_500));
    t.keep(Box::new(dev));
    t
}
