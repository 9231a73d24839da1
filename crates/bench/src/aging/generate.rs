//! A synthetic stand-in for the 1997 paper's ten months of home-directory
//! snapshots (§3.1), calibrated to the aggregates the paper states
//! (`integrity_and_aging.md` §3.2, §3.4 item 5): operations writing
//! [`Params::write_factor`] times the file system's size (the paper: 48.6
//! GB on 502 MB, about 100×), utilisation rising from 9% to above 70% and
//! peaking near 90% ([`target_utilisation`]), most files living under a
//! day, modified files rewritten whole. The stream names paths only, so
//! it runs on any file system; the placement trick of the paper (one
//! directory per cylinder group, files placed by their original inode
//! number, §3.2) is the runner's, on an FFS image
//! (`run::Placement::CylinderGroups`), each file known by the path it is
//! created under, which the generator never gives twice.
//!
//! Deterministic: the same [`Params`] give the same stream, byte for byte
//! in its trace, on any machine (integer arithmetic and a SplitMix64
//! generator of its own, so no library's change of algorithm alters it).
//! Version [`GENERATOR_VERSION`] is written into each recorded trace.
//!
//! A day: directories and the initial files on day 0; then operations
//! until the day's write budget (its share of the total, ±50%) is spent,
//! spread evenly over 08:00–24:00 of simulated time by the count the
//! budget predicts (at 48 KiB an operation; any beyond share 23:59:59),
//! so that every night is an idle gap of eight hours or more. The stream
//! is made an operation at a time: a run cut short by `--ops` never makes
//! the rest of its day. Each operation is drawn by weight:
//!
//! | operation | weight (per 1000) |
//! |---|---|
//! | create a short-lived file (unlinked 1–200 operations later, the same day) | 300 |
//! | overwrite a file whole (new size: the old ±25–33%, or a fresh draw 1 in 10) | 200 |
//! | create a long-lived file | 150 + steering |
//! | unlink a long-lived file | 100 + steering |
//! | append (a quarter of a size drawn) | 60 |
//! | truncate to 0–99% of the size | 25 |
//! | rename into a random directory | 25 |
//! | mkdir (depth at most 4) | 5 |
//!
//! Steering adds to creates when the live bytes are below the day's
//! target and to unlinks when above: 8 per mille of weight for each 0.1%
//! of the file system the live bytes are off. A create that would take
//! the live bytes past 97% of the file system becomes an unlink.
//!
//! File sizes ([`SIZE_CLASSES`]): a class drawn by weight, then a size
//! uniform inside it; mean about 69 KB, median about 8 KB (heavy-tailed,
//! as home-directory surveys find), capped at 1/32 of the file system.

use super::ops::{Op, TimedOp, DAY};
use crate::splitmix::SplitMix64;
use std::collections::{HashMap, VecDeque};

/// The generator's algorithm version; a change to the stream it makes
/// from given parameters is a new version.
pub const GENERATOR_VERSION: u32 = 1;

/// Size classes `[low, high)` in bytes and their weights per 1000.
pub const SIZE_CLASSES: [(u64, u64, u64); 13] = [
    (1, 1 << 10, 160),
    (1 << 10, 2 << 10, 100),
    (2 << 10, 4 << 10, 120),
    (4 << 10, 8 << 10, 140),
    (8 << 10, 16 << 10, 130),
    (16 << 10, 32 << 10, 100),
    (32 << 10, 64 << 10, 80),
    (64 << 10, 128 << 10, 70),
    (128 << 10, 256 << 10, 50),
    (256 << 10, 512 << 10, 30),
    (512 << 10, 1 << 20, 15),
    (1 << 20, 4 << 20, 4),
    (4 << 20, 16 << 20, 1),
];

/// The target utilisation's knots: (per mille of the run, per mille of the
/// file system). 9% at the start, above 70% from a sixth of the way on,
/// a peak of 90% at four fifths, ending near 78% (the shape of the 1997
/// paper's run, §3.2).
const UTILISATION_KNOTS: [(u64, u64); 8] =
    [(0, 90), (150, 720), (350, 780), (500, 740), (700, 840), (800, 900), (900, 800), (1000, 780)];

/// Top-level directories made on day 0 (the paper's file system had 27
/// cylinder groups and one directory per group; the stream only names
/// directories).
const TOP_DIRS: u64 = 16;
/// The active hours of a simulated day: 08:00 to 24:00.
const ACTIVE_FROM: u64 = 8 * 3600;
const ACTIVE_SECONDS: u64 = 16 * 3600;
/// Bytes an operation writes on average, by which a day's operations are
/// spaced before they are made (the stream is made lazily).
const MEAN_OP_BYTES: u64 = 48 << 10;
/// The deepest directory the stream makes.
const MAX_DEPTH: usize = 4;

/// What the stream is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// The seed.
    pub seed: u64,
    /// The size of the file system the stream is for, in bytes (its data
    /// capacity): utilisation targets and the write budget scale by it.
    pub fs_bytes: u64,
    /// Simulated days (the paper: about 300).
    pub days: u64,
    /// Bytes written over the run, as a multiple of `fs_bytes` (the
    /// paper: about 100).
    pub write_factor: u64,
}

impl Params {
    /// The parameters as one line, for a trace's header.
    pub fn describe(&self) -> String {
        format!(
            "generator {GENERATOR_VERSION} seed={} fs_bytes={} days={} write_factor={}",
            self.seed, self.fs_bytes, self.days, self.write_factor
        )
    }
}

/// The target utilisation, in per mille of the file system, on `day` of
/// `days` (linear between [`UTILISATION_KNOTS`]).
pub fn target_utilisation(day: u64, days: u64) -> u64 {
    let x = if days <= 1 { 0 } else { day.min(days) * 1000 / days };
    for w in UTILISATION_KNOTS.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x <= x1 {
            return (y0 * (x1 - x) + y1 * (x - x0)) / (x1 - x0);
        }
    }
    UTILISATION_KNOTS[UTILISATION_KNOTS.len() - 1].1
}

/// Long-lived files: paths and sizes, with an index for removal.
#[derive(Debug, Default)]
struct Files {
    list: Vec<(String, u64)>,
    index: HashMap<String, usize>,
}

impl Files {
    fn insert(&mut self, path: String, size: u64) {
        self.index.insert(path.clone(), self.list.len());
        self.list.push((path, size));
    }

    fn remove_at(&mut self, i: usize) -> (String, u64) {
        let removed = self.list.swap_remove(i);
        self.index.remove(&removed.0);
        if let Some((moved, _)) = self.list.get(i) {
            self.index.insert(moved.clone(), i);
        }
        removed
    }

    fn remove(&mut self, path: &str) -> Option<u64> {
        let i = *self.index.get(path)?;
        Some(self.remove_at(i).1)
    }
}

/// The stream, a day at a time.
#[derive(Debug)]
pub struct Generator {
    params: Params,
    rng: SplitMix64,
    dirs: Vec<String>,
    next_dir: u64,
    next_file: u64,
    files: Files,
    /// Short-lived files and the index (in the day's operations) at
    /// which each is unlinked.
    dying: Vec<(usize, String, u64)>,
    /// Bytes of every file that exists in the stream's model.
    live: u64,
    day: u64,
    /// The day being made, if one is.
    today: Option<Today>,
    ready: VecDeque<TimedOp>,
}

/// Where the day being made stands.
#[derive(Debug, Clone, Copy)]
struct Today {
    /// Its first operation's time.
    start: u64,
    /// Operations it is expected to hold (its bytes over
    /// [`MEAN_OP_BYTES`]), which spaces them.
    expected_ops: u64,
    /// Operations made so far.
    index: usize,
    written: u64,
    budget: u64,
    /// Live bytes aimed at.
    target: u64,
    /// Live bytes a create may not take the model past.
    limit: u64,
}

impl Today {
    /// The time of operation `index`: spaced evenly over the active
    /// hours by the expected count; any past it share the last second.
    fn time(&self, index: usize) -> u64 {
        self.start + (index as u64 * ACTIVE_SECONDS / self.expected_ops).min(ACTIVE_SECONDS - 1)
    }
}

impl Generator {
    /// A generator of `params`.
    pub fn new(params: Params) -> Generator {
        Generator {
            params,
            rng: SplitMix64::new(params.seed),
            dirs: Vec::new(),
            next_dir: 0,
            next_file: 0,
            files: Files::default(),
            dying: Vec::new(),
            live: 0,
            day: 0,
            today: None,
            ready: VecDeque::new(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> Params {
        self.params
    }

    /// The next operation, `None` after the last day.
    pub fn next_op(&mut self) -> Option<TimedOp> {
        loop {
            if let Some(op) = self.ready.pop_front() {
                return Some(op);
            }
            let Some(mut today) = self.today.take() else {
                if self.day >= self.params.days {
                    return None;
                }
                self.begin_day();
                continue;
            };
            let index = today.index;
            let time = today.time(index);
            if let Some(i) = self.dying.iter().position(|(at, _, _)| *at <= index) {
                let (_, path, size) = self.dying.remove(i);
                self.live = self.live.saturating_sub(size);
                today.index += 1;
                self.today = Some(today);
                return Some(TimedOp { time, op: Op::Unlink { path } });
            }
            // Day 0 also fills to its target with files that outlive it.
            let lasting = self.live - self.dying.iter().map(|d| d.2).sum::<u64>().min(self.live);
            if today.written < today.budget || (self.day == 0 && lasting < today.target) {
                let op = self.draw(today.target, today.limit, index);
                today.written += op.bytes_written().max(1);
                today.index += 1;
                self.today = Some(today);
                return Some(TimedOp { time, op });
            }
            // The day's end: what is left of its short-lived files goes.
            for (_, path, size) in std::mem::take(&mut self.dying) {
                self.live = self.live.saturating_sub(size);
                let time = today.time(today.index);
                today.index += 1;
                self.ready.push_back(TimedOp { time, op: Op::Unlink { path } });
            }
            self.day += 1;
        }
    }

    /// `path` is gone (the runner unlinked it to make room): the model
    /// forgets it, so that later operations leave it alone and the live
    /// bytes stay true.
    pub fn forget(&mut self, path: &str) {
        if let Some(size) = self.files.remove(path) {
            self.live = self.live.saturating_sub(size);
        }
        // Operations already made for today still name it; the runner
        // skips them.
        if let Some(i) = self.dying.iter().position(|(_, p, _)| p == path) {
            let (_, _, size) = self.dying.swap_remove(i);
            self.live = self.live.saturating_sub(size);
        }
    }

    fn size(&mut self) -> u64 {
        let mut pick = self.rng.below(1000);
        let mut class = SIZE_CLASSES[0];
        for c in SIZE_CLASSES {
            if pick < c.2 {
                class = c;
                break;
            }
            pick -= c.2;
        }
        let size = class.0 + self.rng.below(class.1 - class.0);
        size.min((self.params.fs_bytes / 32).max(1))
    }

    fn new_dir(&mut self, parent: Option<String>) -> String {
        let name = format!("d{}", self.next_dir);
        self.next_dir += 1;
        match parent {
            Some(p) => format!("{p}/{name}"),
            None => name,
        }
    }

    fn new_file_path(&mut self) -> String {
        let dir = self.dirs[self.rng.below(self.dirs.len() as u64) as usize].clone();
        let name = format!("{dir}/f{}", self.next_file);
        self.next_file += 1;
        name
    }

    /// Begins day `self.day`: its target, its budget, and on day 0 the
    /// top-level directories.
    fn begin_day(&mut self) {
        let fs = self.params.fs_bytes.max(1);
        let target = fs / 1000 * target_utilisation(self.day, self.params.days);
        let share = self.params.write_factor.saturating_mul(fs) / self.params.days.max(1);
        let budget = share / 100 * (50 + self.rng.below(101));
        let expected = if self.day == 0 { budget.max(target) } else { budget };
        let mut today = Today {
            start: self.day * DAY + ACTIVE_FROM,
            expected_ops: (expected / MEAN_OP_BYTES).max(1),
            index: 0,
            written: 0,
            budget,
            target,
            limit: fs / 100 * 97,
        };
        if self.day == 0 {
            for _ in 0..TOP_DIRS {
                let d = self.new_dir(None);
                self.ready
                    .push_back(TimedOp { time: today.time(today.index), op: Op::Mkdir { path: d.clone() } });
                today.index += 1;
                self.dirs.push(d);
            }
        }
        self.today = Some(today);
    }

    /// One operation, drawn by the weights in the module comment.
    fn draw(&mut self, target: u64, limit: u64, index: usize) -> Op {
        let fs = self.params.fs_bytes.max(1);
        let off = |a: u64, b: u64| (a.saturating_sub(b) * 10_000 / fs).min(1000) * 8;
        let (grow, shrink) = (off(target, self.live), off(self.live, target));
        let have = !self.files.list.is_empty();
        let weights = [
            300,
            if have { 200 } else { 0 },
            150 + grow,
            if have { 100 + shrink } else { 0 },
            if have { 60 } else { 0 },
            if have { 25 } else { 0 },
            if have { 25 } else { 0 },
            5,
        ];
        let mut pick = self.rng.below(weights.iter().sum());
        let mut kind = 0;
        for (i, w) in weights.iter().enumerate() {
            if pick < *w {
                kind = i;
                break;
            }
            pick -= w;
        }
        match kind {
            0 | 2 => {
                let size = self.size();
                if self.live + size > limit && have {
                    return self.unlink_one();
                }
                let path = self.new_file_path();
                self.live += size;
                if kind == 0 {
                    let at = index + 1 + self.rng.below(200) as usize;
                    self.dying.push((at, path.clone(), size));
                } else {
                    self.files.insert(path.clone(), size);
                }
                Op::Create { path, size }
            }
            1 => {
                let i = self.rng.below(self.files.list.len() as u64) as usize;
                let old = self.files.list[i].1;
                let size = if self.rng.below(10) == 0 {
                    self.size()
                } else {
                    old / 100 * (75 + self.rng.below(59)) + old % 100
                };
                if self.live + size > limit + old {
                    return self.unlink_one();
                }
                self.live = self.live - old + size;
                self.files.list[i].1 = size;
                Op::Overwrite { path: self.files.list[i].0.clone(), size }
            }
            3 => self.unlink_one(),
            4 => {
                let bytes = self.size() / 4 + 1;
                if self.live + bytes > limit {
                    return self.unlink_one();
                }
                let i = self.rng.below(self.files.list.len() as u64) as usize;
                self.live += bytes;
                self.files.list[i].1 += bytes;
                Op::Append { path: self.files.list[i].0.clone(), bytes }
            }
            5 => {
                let i = self.rng.below(self.files.list.len() as u64) as usize;
                let old = self.files.list[i].1;
                let size = old / 100 * self.rng.below(100);
                self.live -= old - size;
                self.files.list[i].1 = size;
                Op::Truncate { path: self.files.list[i].0.clone(), size }
            }
            6 => {
                let i = self.rng.below(self.files.list.len() as u64) as usize;
                let (from, size) = self.files.remove_at(i);
                let to = self.new_file_path();
                self.files.insert(to.clone(), size);
                Op::Rename { from, to }
            }
            _ => {
                let parent = self.dirs[self.rng.below(self.dirs.len() as u64) as usize].clone();
                if parent.split('/').count() >= MAX_DEPTH {
                    let size = self.size().min(limit.saturating_sub(self.live));
                    let path = self.new_file_path();
                    self.live += size;
                    self.files.insert(path.clone(), size);
                    return Op::Create { path, size };
                }
                let d = self.new_dir(Some(parent));
                self.dirs.push(d.clone());
                Op::Mkdir { path: d }
            }
        }
    }

    fn unlink_one(&mut self) -> Op {
        let i = self.rng.below(self.files.list.len() as u64) as usize;
        let (path, size) = self.files.remove_at(i);
        self.live = self.live.saturating_sub(size);
        Op::Unlink { path }
    }
}

/// The whole stream of `params`.
pub fn stream(params: Params) -> Vec<TimedOp> {
    let mut g = Generator::new(params);
    std::iter::from_fn(|| g.next_op()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aging::trace;
    use std::collections::HashSet;

    const SMALL: Params = Params { seed: 7, fs_bytes: 16 << 20, days: 12, write_factor: 10 };

    #[test]
    fn the_same_seed_gives_the_same_stream_byte_for_byte() {
        let text = |p: Params| trace::to_text(&stream(p), &[p.describe()]);
        let (a, b) = (text(SMALL), text(SMALL));
        assert!(a.len() > 10_000, "a stream of some length: {}", a.len());
        assert_eq!(a.as_bytes(), b.as_bytes());
        assert_ne!(a, text(Params { seed: 8, ..SMALL }), "another seed, another stream");
    }

    #[test]
    fn a_generated_stream_round_trips_through_its_trace() {
        let ops = stream(SMALL);
        assert_eq!(trace::parse(&trace::to_text(&ops, &[SMALL.describe()])), Ok(ops));
    }

    /// The calibration the module comment promises, at a small scale:
    /// the bytes written, every operation kind, most files dying the day
    /// they are born, names that exist when used, and the model's
    /// utilisation following the target.
    #[test]
    fn the_stream_keeps_its_calibration() {
        let ops = stream(SMALL);
        let written: u64 = ops.iter().map(|o| o.op.bytes_written()).sum();
        let total = SMALL.fs_bytes * SMALL.write_factor;
        assert!(written > total / 2 && written < total * 2, "written {written} of {total}");
        let kinds: HashSet<&str> = ops.iter().map(|o| o.op.name()).collect();
        assert_eq!(kinds.len(), 7, "{kinds:?}");
        let mut exists: HashMap<&str, (u64, u64)> = HashMap::new(); // path -> (size, born)
        let (mut died_same_day, mut died) = (0, 0);
        let mut peak = 0;
        let mut live: u64 = 0;
        for o in &ops {
            match &o.op {
                Op::Mkdir { .. } => {}
                Op::Create { path, size } => {
                    assert!(exists.insert(path, (*size, o.day())).is_none(), "{path} created twice");
                    live += size;
                }
                Op::Overwrite { path, size } | Op::Truncate { path, size } => {
                    let e = exists.get_mut(path.as_str()).expect("an existing file");
                    live = live - e.0 + size;
                    e.0 = *size;
                }
                Op::Append { path, bytes } => {
                    exists.get_mut(path.as_str()).expect("an existing file").0 += bytes;
                    live += bytes;
                }
                Op::Unlink { path } => {
                    let (size, born) = exists.remove(path.as_str()).expect("an existing file");
                    live -= size;
                    died += 1;
                    died_same_day += u64::from(born == o.day());
                }
                Op::Rename { from, to } => {
                    let e = exists.remove(from.as_str()).expect("an existing file");
                    exists.insert(to, e);
                }
            }
            peak = peak.max(live);
        }
        assert!(died_same_day * 2 > died, "{died_same_day} of {died} files died the day they were born");
        let fs = SMALL.fs_bytes;
        assert!(peak > fs / 100 * 80 && peak <= fs / 100 * 97, "peak {peak} of {fs}");
    }

    /// A day's operations are made as they are asked for: the first
    /// thousand of a stream for a 1 TiB file system come at once, in
    /// time order, the night before them idle.
    #[test]
    fn the_stream_is_made_lazily_and_in_time_order() {
        let mut g = Generator::new(Params { seed: 1, fs_bytes: 1 << 40, days: 300, write_factor: 100 });
        let ops: Vec<TimedOp> = (0..1000).map_while(|_| g.next_op()).collect();
        assert_eq!(ops.len(), 1000);
        assert!(ops.windows(2).all(|w| w[0].time <= w[1].time));
        assert_eq!(ops[0].time, 8 * 3600, "the first day starts at 08:00");
    }

    #[test]
    fn the_target_follows_its_knots() {
        assert_eq!(target_utilisation(0, 300), 90);
        assert_eq!(target_utilisation(240, 300), 900);
        assert_eq!(target_utilisation(300, 300), 780);
        assert!((45..300).all(|d| target_utilisation(d, 300) > 700));
    }
}
