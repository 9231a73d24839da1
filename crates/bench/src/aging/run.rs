//! Replaying an aging stream on a [`Target`], a simulated day at a time.
//!
//! * Writes go through the ordinary write path (`pwrite`, a 64 KiB
//!   pattern at a time), never preallocation: only then does the
//!   allocator see the blocks as a writer hands them over
//!   (`integrity_and_aging.md` §3.4 item 2).
//! * On virtual time the clock is moved to each operation's simulated
//!   time before it runs, so the tick (syncs, soft updates' deferred
//!   frees) sees the stream's idle gaps, nights included (§3.4 item 4).
//!   On a mounted directory the host's time runs and the times are not
//!   kept.
//! * ENOSPC never ends a run: the runner backs off, unlinking the largest
//!   files it knows of (largest first, ties by name) until the write goes
//!   through, and tells the stream to forget them (a recorded trace has
//!   those unlinks just before the operation that needed them). Later operations that
//!   name a file gone this way, or a directory the stream expected and
//!   cannot have, are skipped and counted.
//! * A pause of a second or more before an operation is idle time: the
//!   target does its idle work first (LFS: the cleaner's background round,
//!   which a mount's cleaning thread would run in a quiet moment), then
//!   the clock moves on.
//! * At the end of every simulated day: utilisation; where the target
//!   places blocks (FFS), the layout score (`score`) and the free space's
//!   fragmentation; where it cleans (LFS), the cleaner's work that day
//!   (`fragmentation`).
//! * With [`Placement::CylinderGroups`] (FFS only) the files do not go
//!   where the stream's paths put them: the run starts by making one
//!   directory per cylinder group at the root, `cg0`, `cg1`, … (made under
//!   a scratch name, kept for the group its inode landed in, renamed), and
//!   makes each file the stream creates in the directory of the group its
//!   identity maps to ([`group_of_identity`]), the 1997 paper's replay
//!   (§3.2: "created one directory per cylinder group … each file was
//!   created in the directory corresponding to the cylinder group in which
//!   it was originally allocated"). The stream's own directories are not
//!   made, as the paper's replay had none; its paths stay the names by
//!   which the run knows files, in back-offs and recorded traces.
//! * At the end of the run: every live file, its size and when its
//!   contents last changed ([`LiveFile`]), from which [`hot_files`] picks
//!   the 1997 paper's hot files (§5.2).

use super::fragmentation::{CleanerDay, Fragmentation, GroupRuns};
use super::ops::{Op, TimedOp};
use super::score::{self, LayoutScore};
use super::trace::{self, TraceReader};
use crate::target::{is_no_space, CylinderGroups, Fd, Target};
use disk::VirtualClock;
use fslab::lfs::clean::CleanerCounters;
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, Write};

/// Bytes handed to one `pwrite`.
const WRITE_CHUNK: usize = 64 << 10;
/// Files a back-off unlinks at most before it gives up on the write.
const MAX_BACKOFF_UNLINKS: u64 = 256;
/// The shortest pause in the stream that counts as idle time: a mount's
/// cleaning thread starts a round after half a second without a request
/// (`fslab_cleaner::background`), and the stream's times are whole seconds.
const IDLE_GAP_NS: u64 = 1_000_000_000;

/// Where a run puts the stream's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Where the stream's paths say, its directories made as it makes
    /// them: the file system's own policy chooses every group.
    #[default]
    Namespace,
    /// The 1997 paper's replay: one directory per cylinder group, each
    /// file in the directory of the group its identity maps to (module
    /// comment). Only on a target with cylinder groups.
    CylinderGroups,
}

impl Placement {
    /// Its name in `--placement`, the results file and a recorded trace's
    /// header: `namespace` or `1997`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Namespace => "namespace",
            Placement::CylinderGroups => "1997",
        }
    }

    /// The placement of `name` ([`Placement::name`]).
    pub fn parse(name: &str) -> Option<Placement> {
        [Placement::Namespace, Placement::CylinderGroups].into_iter().find(|p| p.name() == name)
    }
}

/// The cylinder group a file created under `path` is placed in, out of
/// `groups`: the 64-bit FNV-1a hash of the path's bytes, mixed by
/// SplitMix64's finaliser, modulo `groups`. A file is known by the path it
/// was created under (a generated stream names every new file anew, so
/// this is the generator's file number in effect), as the 1997 paper's
/// files were by their inode numbers; the hash spreads the files evenly
/// and the same path always maps to the same group, on any machine.
pub fn group_of_identity(path: &str, groups: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    (h % u64::from(groups.max(1))) as u32
}

/// The name of group `g`'s directory under [`Placement::CylinderGroups`].
pub fn group_dir(g: u32) -> String {
    format!("cg{g}")
}

/// Scratch directories made at most, per group, while looking for one
/// that lands in each group: the allocator spreads new top-level
/// directories over the groups (fewest directories first), so a group it
/// never picks is one that is short of inodes.
const GROUP_DIR_TRIES_PER_GROUP: u32 = 4;

/// Where the files are under [`Placement::CylinderGroups`].
struct GroupDirs {
    groups: CylinderGroups,
    /// Each group's directory; `None` for a group no directory landed in.
    dirs: Vec<Option<String>>,
    /// Each file's path on the target, by the stream's path.
    placed: HashMap<String, String>,
    /// The number in the next placed file's name.
    next: u64,
}

impl GroupDirs {
    /// The directory of the group `path` maps to, or of the next group
    /// after it that has one.
    fn dir_for(&self, path: &str) -> &str {
        let n = self.dirs.len();
        let g = group_of_identity(path, self.groups.count) as usize;
        (0..n).find_map(|i| self.dirs[(g + i) % n].as_deref()).unwrap_or("")
    }

    /// A new name in `dir`.
    fn new_name(&mut self, dir: &str) -> String {
        let name = format!("{dir}/f{}", self.next);
        self.next += 1;
        name
    }
}

/// Where the operations come from.
pub trait OpSource {
    /// The next operation, `Ok(None)` at the end.
    fn next_op(&mut self) -> Result<Option<TimedOp>, String>;
    /// The runner unlinked `path` to make room.
    fn forget(&mut self, _path: &str) {}
}

impl OpSource for super::generate::Generator {
    fn next_op(&mut self) -> Result<Option<TimedOp>, String> {
        Ok(super::generate::Generator::next_op(self))
    }
    fn forget(&mut self, path: &str) {
        super::generate::Generator::forget(self, path);
    }
}

impl<R: BufRead> OpSource for TraceReader<R> {
    fn next_op(&mut self) -> Result<Option<TimedOp>, String> {
        TraceReader::next_op(self).map_err(|e| format!("trace: {e}"))
    }
}

/// One simulated day's result.
#[derive(Debug, Clone)]
pub struct DayReport {
    /// The day (0 is the first).
    pub day: u64,
    /// Operations of the stream that day, skipped ones included (back-off
    /// unlinks are counted apart).
    pub ops: u64,
    /// Bytes written that day.
    pub bytes_written: u64,
    /// Share of the file system in use at the end of the day, 0 to 1.
    pub utilisation: f64,
    /// Files the runner knows to exist at the end of the day.
    pub live_files: u64,
    /// Operations skipped that day (their file gone by a back-off, or
    /// otherwise missing or already there).
    pub skipped: u64,
    /// Files unlinked that day to make room.
    pub backoff_unlinks: u64,
    /// The layout score at the end of the day, where the target has one.
    pub score: Option<LayoutScore>,
    /// The free space's fragmentation at the end of the day, where the
    /// target keeps cylinder groups (FFS).
    pub free_space: Option<Fragmentation>,
    /// The cleaner's work that day, where the target cleans (LFS).
    pub cleaner: Option<CleanerDay>,
}

/// What a run does besides running.
pub struct RunOptions<'a> {
    /// Stop after this many operations of the stream.
    pub max_ops: Option<u64>,
    /// The virtual clock to move to each operation's time (a target on
    /// virtual time), or `None` (wall time).
    pub clock: Option<&'a VirtualClock>,
    /// Where to record the stream as run (a trace), header written.
    pub record: Option<&'a mut dyn Write>,
    /// Called after every operation with the count so far (progress).
    pub on_op: &'a mut dyn FnMut(u64, u64),
    /// Called at the end of every day.
    pub on_day: &'a mut dyn FnMut(&DayReport),
    /// Where the stream's files go.
    pub placement: Placement,
    /// Set (by a signal, say) to stop before the next operation: the run
    /// ends with an `Interrupted` error, the target still mounted for its
    /// caller to finish cleanly.
    pub stop: Option<&'a std::sync::atomic::AtomicBool>,
}

/// The whole run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Each day's report.
    pub days: Vec<DayReport>,
    /// Operations of the stream run.
    pub ops: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// The files live at the end, by path.
    pub live: Vec<LiveFile>,
    /// Each group's free space at the end of the last day (FFS).
    pub final_groups: Option<Vec<GroupRuns>>,
    /// The cleaner's work over the whole run (LFS).
    pub cleaner: Option<CleanerDay>,
    /// Under [`Placement::CylinderGroups`], the groups that got a
    /// directory, out of how many there are.
    pub group_dirs: Option<(u32, u32)>,
    /// Under [`Placement::CylinderGroups`], every live file's path in the
    /// stream and its path on the target, by the stream's path.
    pub placed: Option<Vec<(String, String)>>,
}

/// A file live at the end of a run, as the runner made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFile {
    /// Its path.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// When its contents last changed (created, written, truncated), in
    /// simulated seconds since aging began: what the 1997 paper's "files
    /// that were modified during the last month" (§5.2) are chosen by. A
    /// rename keeps it, as a rename keeps a file's mtime.
    pub modified: u64,
}

/// The files of `live` modified at or after `since` (simulated seconds),
/// sorted by directory and then by name: the 1997 paper's hot files
/// (§5.2: "all of the files that were modified during the last month of
/// the aging workload"), in the order its benchmark took them ("we
/// sorted the files by directory, so multiple files would be read from
/// one cylinder group before moving to another"). A file's directory is
/// its path up to the last `/`; byte order of the paths decides within.
pub fn hot_files(live: &[LiveFile], since: u64) -> Vec<LiveFile> {
    let mut hot: Vec<LiveFile> = live.iter().filter(|f| f.modified >= since).cloned().collect();
    let split = |p: &str| -> (String, String) {
        match p.rsplit_once('/') {
            Some((dir, name)) => (dir.to_string(), name.to_string()),
            None => (String::new(), p.to_string()),
        }
    };
    hot.sort_by_cached_key(|f| split(&f.path));
    hot
}

/// The most recently modified files of `live`, `share` (0 to 1) of them
/// (rounded, at least one of a non-empty set), with any modified at the
/// same second as the last one chosen, in [`hot_files`]' order: the
/// paper's hot set by its size rather than its age, for a stream whose
/// last month touches more of its files than the paper's did (§5.2: 929
/// of 8774 files, 10.5%).
pub fn most_recent(live: &[LiveFile], share: f64) -> Vec<LiveFile> {
    if live.is_empty() {
        return Vec::new();
    }
    let mut times: Vec<u64> = live.iter().map(|f| f.modified).collect();
    times.sort_unstable_by(|a, b| b.cmp(a));
    let n = ((share.clamp(0.0, 1.0) * live.len() as f64).round() as usize).clamp(1, live.len());
    hot_files(live, times[n - 1])
}

/// The runner's state.
struct Runner<'a, 'b> {
    target: &'a mut Target,
    source: &'a mut dyn OpSource,
    options: RunOptions<'b>,
    /// Sizes of the files the runner made, by path.
    files: HashMap<String, u64>,
    /// When each file's contents last changed, by path (see
    /// [`LiveFile::modified`]).
    modified: HashMap<String, u64>,
    /// Paths unlinked by a back-off.
    gone: HashSet<String>,
    day: DayReport,
    summary: Summary,
    /// The cleaner's counters when the run and the day began.
    cleaner_at_start: Option<CleanerCounters>,
    cleaner_at_day_start: Option<CleanerCounters>,
    start_ns: u64,
    pattern: Vec<u8>,
    /// The group directories, under [`Placement::CylinderGroups`].
    group_dirs: Option<GroupDirs>,
}

/// Runs `source` on `target` to its end (or `options.max_ops`).
pub fn run(target: &mut Target, source: &mut dyn OpSource, options: RunOptions<'_>) -> io::Result<Summary> {
    let start_ns = options.clock.map_or(0, |c| c.now());
    let cleaner_at_start = target.counters().cleaner;
    let mut runner = Runner {
        target,
        source,
        options,
        files: HashMap::new(),
        modified: HashMap::new(),
        gone: HashSet::new(),
        day: empty_day(0),
        summary: Summary::default(),
        cleaner_at_start,
        cleaner_at_day_start: cleaner_at_start,
        start_ns,
        pattern: (0..WRITE_CHUNK).map(|i| (i % 251) as u8).collect(),
        group_dirs: None,
    };
    if runner.options.placement == Placement::CylinderGroups {
        let dirs = make_group_dirs(runner.target)?;
        let made = dirs.dirs.iter().filter(|d| d.is_some()).count() as u32;
        runner.summary.group_dirs = Some((made, dirs.groups.count));
        runner.group_dirs = Some(dirs);
    }
    runner.run()?;
    let mut live: Vec<LiveFile> = runner
        .files
        .iter()
        .map(|(path, &size)| LiveFile {
            path: path.clone(),
            size,
            modified: runner.modified.get(path).copied().unwrap_or(0),
        })
        .collect();
    live.sort_by(|a, b| a.path.cmp(&b.path));
    runner.summary.live = live;
    if let Some(g) = runner.group_dirs.take() {
        let mut placed: Vec<(String, String)> = g.placed.into_iter().collect();
        placed.sort();
        runner.summary.placed = Some(placed);
    }
    let cleaner_at_end = runner.target.counters().cleaner;
    runner.summary.cleaner = worked(runner.cleaner_at_start, cleaner_at_end);
    Ok(runner.summary)
}

/// Why a target cannot take [`Placement::CylinderGroups`]: it keeps no
/// cylinder groups.
pub const NO_GROUPS: &str =
    "--placement 1997 needs an FFS image: it places files by cylinder group, and this target has none";

/// One directory per cylinder group at the root of `target`, each in the
/// group its inode is in (see the module comment). A directory `cgN`
/// already in group N (an image aged this way before) is kept.
fn make_group_dirs(target: &mut Target) -> io::Result<GroupDirs> {
    let Some(groups) = target.cylinder_groups() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, NO_GROUPS));
    };
    let group_of = |target: &mut Target, path: &str| -> io::Result<Option<u32>> {
        match target.inode(path) {
            Some(ino) => Ok(groups.group_of(ino?)),
            None => Err(io::Error::new(io::ErrorKind::InvalidInput, NO_GROUPS)),
        }
    };
    let mut dirs: Vec<Option<String>> = vec![None; groups.count as usize];
    for (g, dir) in dirs.iter_mut().enumerate() {
        let name = group_dir(g as u32);
        if target.stat(&name)?.is_some() && group_of(target, &name)? == Some(g as u32) {
            *dir = Some(name);
        }
    }
    let mut extra = Vec::new();
    for attempt in 0..groups.count.saturating_mul(GROUP_DIR_TRIES_PER_GROUP) {
        if dirs.iter().all(Option::is_some) {
            break;
        }
        let scratch = format!("cg-new{attempt}");
        match target.mkdir(&scratch) {
            Ok(()) => {}
            // A scratch name left by an earlier run: try the next.
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
            // No inode or block left for another directory: the groups
            // found so far take every file.
            Err(e) if is_no_space(&e) => break,
            Err(e) => return Err(e),
        }
        match group_of(target, &scratch)? {
            Some(g) if dirs[g as usize].is_none() => {
                let name = group_dir(g);
                target.rename(&scratch, &name)?;
                dirs[g as usize] = Some(name);
            }
            _ => extra.push(scratch),
        }
    }
    // Removed only now: while they exist the allocator counts them, and
    // looks for the next directory's group elsewhere.
    for scratch in extra {
        target.rmdir(&scratch)?;
    }
    if dirs.iter().all(Option::is_none) {
        return Err(io::Error::other("--placement 1997: no directory could be made in any cylinder group"));
    }
    Ok(GroupDirs { groups, dirs, placed: HashMap::new(), next: 0 })
}

fn empty_day(day: u64) -> DayReport {
    DayReport {
        day,
        ops: 0,
        bytes_written: 0,
        utilisation: 0.0,
        live_files: 0,
        skipped: 0,
        backoff_unlinks: 0,
        score: None,
        free_space: None,
        cleaner: None,
    }
}

/// The cleaner's work between two readings of its counters.
fn worked(before: Option<CleanerCounters>, after: Option<CleanerCounters>) -> Option<CleanerDay> {
    Some(CleanerDay::from(after?.since(&before?)))
}

fn missing(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::EEXIST) | Some(libc::ENOTDIR) | Some(libc::ENOTEMPTY)
    )
}

impl Runner<'_, '_> {
    fn run(&mut self) -> io::Result<()> {
        let mut any = false;
        loop {
            if self.options.max_ops.is_some_and(|max| self.summary.ops >= max) {
                break;
            }
            if self.options.stop.is_some_and(|stop| stop.load(std::sync::atomic::Ordering::Relaxed)) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
            }
            let Some(op) = self.source.next_op().map_err(io::Error::other)? else { break };
            if any && op.day() != self.day.day {
                self.end_day()?;
                self.day = empty_day(op.day());
            }
            any = true;
            self.day.day = op.day();
            if let Some(clock) = self.options.clock {
                let at = self.start_ns.saturating_add(op.time.saturating_mul(1_000_000_000));
                if at >= clock.now().saturating_add(IDLE_GAP_NS) {
                    self.target.idle()?;
                }
                clock.advance_to(at);
            }
            self.apply(&op)?;
            self.summary.ops += 1;
            self.day.ops += 1;
            (self.options.on_op)(self.summary.ops, self.day.day);
        }
        if any {
            self.end_day()?;
        }
        Ok(())
    }

    fn record(&mut self, op: &TimedOp) -> io::Result<()> {
        match self.options.record.as_mut() {
            Some(w) => trace::write_op(*w, op),
            None => Ok(()),
        }
    }

    fn end_day(&mut self) -> io::Result<()> {
        self.day.utilisation = self.target.usage()?.utilization();
        self.day.live_files = self.files.len() as u64;
        self.day.score = match self.target.placements() {
            Some(p) => {
                let p = p?;
                Some(score::score(&p.files, p.frags_per_block))
            }
            None => None,
        };
        let map = self.target.free_space();
        self.day.free_space = map.as_ref().map(Fragmentation::of);
        self.summary.final_groups = map.map(|m| m.groups.iter().map(GroupRuns::from).collect());
        let cleaner = self.target.counters().cleaner;
        self.day.cleaner = worked(self.cleaner_at_day_start, cleaner);
        self.cleaner_at_day_start = cleaner;
        (self.options.on_day)(&self.day);
        self.summary.days.push(self.day.clone());
        Ok(())
    }

    /// Runs one operation; a file the stream names that a back-off
    /// removed, or that is missing, skips it.
    fn apply(&mut self, op: &TimedOp) -> io::Result<()> {
        let names_gone = |p: &String| self.gone.contains(p);
        let skip = match &op.op {
            Op::Create { path, .. } => {
                self.gone.remove(path);
                false
            }
            Op::Mkdir { .. } => false,
            Op::Append { path, .. } | Op::Overwrite { path, .. } | Op::Truncate { path, .. } => {
                names_gone(path)
            }
            Op::Unlink { path } => names_gone(path),
            Op::Rename { from, .. } => names_gone(from),
        };
        if skip {
            if let Op::Rename { from, to } = &op.op {
                // What the stream calls `to` now is gone as well.
                self.gone.remove(from);
                self.gone.insert(to.clone());
            }
            self.day.skipped += 1;
            return Ok(());
        }
        // Recorded after it ran, so that a back-off's unlinks come
        // before the operation that needed them.
        match self.apply_op(op) {
            Ok(()) => self.record(op),
            Err(e) if missing(&e) => {
                self.day.skipped += 1;
                self.record(op)
            }
            Err(e) => Err(io::Error::new(e.kind(), format!("at time {} ({}): {e}", op.time, op))),
        }
    }

    /// The path on the target of the file the stream calls `path`: the
    /// same path, or under [`Placement::CylinderGroups`] where the run
    /// placed it (ENOENT for a file it never made).
    fn on_target(&self, path: &str) -> io::Result<String> {
        match &self.group_dirs {
            None => Ok(path.to_string()),
            Some(g) => g.placed.get(path).cloned().ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }

    /// Where a file the stream creates under `path` is made: the same
    /// path, the file already placed there (a create of an existing file
    /// opens it), or a new name in its group's directory.
    fn place(&mut self, path: &str) -> String {
        match &mut self.group_dirs {
            None => path.to_string(),
            Some(g) => match g.placed.get(path) {
                Some(p) => p.clone(),
                None => {
                    let dir = g.dir_for(path).to_string();
                    g.new_name(&dir)
                }
            },
        }
    }

    fn apply_op(&mut self, op: &TimedOp) -> io::Result<()> {
        match &op.op {
            // The 1997 replay keeps every file in its group's directory.
            Op::Mkdir { .. } if self.group_dirs.is_some() => Ok(()),
            Op::Mkdir { path } => self.with_room(op, path, |t| t.mkdir(path)),
            Op::Create { path, size } => {
                let at = self.place(path);
                let fd = self.with_room(op, path, |t| t.create(&at))?;
                if let Some(g) = &mut self.group_dirs {
                    g.placed.insert(path.clone(), at);
                }
                self.files.insert(path.clone(), 0);
                self.modified.insert(path.clone(), op.time);
                self.write_closing(op, path, fd, 0, *size)
            }
            Op::Append { path, bytes } => {
                let on = self.on_target(path)?;
                let at = self.target.stat(&on)?.ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
                let fd = self.target.open(&on)?;
                self.modified.insert(path.clone(), op.time);
                self.write_closing(op, path, fd, at, *bytes)
            }
            Op::Overwrite { path, size } => {
                let fd = self.target.open(&self.on_target(path)?)?;
                self.target.truncate(fd, 0)?;
                self.files.insert(path.clone(), 0);
                self.modified.insert(path.clone(), op.time);
                self.write_closing(op, path, fd, 0, *size)
            }
            Op::Truncate { path, size } => {
                let fd = self.target.open(&self.on_target(path)?)?;
                let result = self.target.truncate(fd, *size);
                self.target.close(fd)?;
                result?;
                self.files.insert(path.clone(), *size);
                self.modified.insert(path.clone(), op.time);
                Ok(())
            }
            Op::Unlink { path } => {
                self.target.unlink(&self.on_target(path)?)?;
                self.unplace(path);
                self.files.remove(path);
                self.modified.remove(path);
                Ok(())
            }
            Op::Rename { from, to } => {
                let from_on = self.on_target(from)?;
                match &mut self.group_dirs {
                    None => self.target.rename(from, to)?,
                    // A renamed file stays in its group's directory (a
                    // rename moves no inode), under a new name; a file it
                    // replaces, in whatever directory, is unlinked, so
                    // that every file stays in its own group's directory.
                    Some(g) => {
                        let dir = from_on.rsplit_once('/').map_or("", |(d, _)| d).to_string();
                        let to_on = g.new_name(&dir);
                        let replaced = g.placed.get(to).cloned();
                        self.target.rename(&from_on, &to_on)?;
                        if let Some(old) = replaced.filter(|old| *old != from_on) {
                            self.target.unlink(&old)?;
                        }
                        if let Some(g) = &mut self.group_dirs {
                            g.placed.remove(from);
                            g.placed.insert(to.clone(), to_on);
                        }
                    }
                }
                let size = self.files.remove(from).unwrap_or(0);
                self.files.insert(to.clone(), size);
                let modified = self.modified.remove(from).unwrap_or(op.time);
                self.modified.insert(to.clone(), modified);
                Ok(())
            }
        }
    }

    /// Forgets where the file the stream calls `path` was placed.
    fn unplace(&mut self, path: &str) {
        if let Some(g) = &mut self.group_dirs {
            g.placed.remove(path);
        }
    }

    /// Writes `len` bytes at `at` through `fd`, then closes it.
    fn write_closing(&mut self, op: &TimedOp, path: &str, fd: Fd, at: u64, len: u64) -> io::Result<()> {
        let result = self.write(op, path, fd, at, len);
        let closed = self.target.close(fd);
        result.and(closed)
    }

    fn write(&mut self, op: &TimedOp, path: &str, fd: Fd, at: u64, len: u64) -> io::Result<()> {
        let mut done = 0;
        while done < len {
            let n = (len - done).min(WRITE_CHUNK as u64) as usize;
            let pattern = std::mem::take(&mut self.pattern);
            let offset = at + done;
            let result = self.with_room(op, path, |t| t.write(fd, offset, &pattern[..n]));
            self.pattern = pattern;
            match result {
                Ok(()) => {}
                // No file left to unlink: the file keeps what it got.
                Err(e) if is_no_space(&e) => break,
                Err(e) => return Err(e),
            }
            done += n as u64;
            self.day.bytes_written += n as u64;
            self.summary.bytes_written += n as u64;
            if let Some(size) = self.files.get_mut(path) {
                *size = (*size).max(offset + n as u64);
            }
        }
        Ok(())
    }

    /// Runs `call`; on ENOSPC unlinks the largest other file and tries
    /// again, until it goes through or nothing is left to unlink.
    fn with_room<T>(
        &mut self,
        op: &TimedOp,
        keep: &str,
        mut call: impl FnMut(&mut Target) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut unlinked = 0;
        loop {
            match call(self.target) {
                Err(e) if is_no_space(&e) && unlinked < MAX_BACKOFF_UNLINKS => {
                    let victim = self
                        .files
                        .iter()
                        .filter(|(p, _)| p.as_str() != keep)
                        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                        .map(|(p, _)| p.clone());
                    let Some(victim) = victim else { return Err(e) };
                    let unlinked_victim = match self.on_target(&victim) {
                        Ok(on) => self.target.unlink(&on),
                        Err(e) => Err(e),
                    };
                    unlinked_victim.or_else(|e| if missing(&e) { Ok(()) } else { Err(e) })?;
                    self.unplace(&victim);
                    self.files.remove(&victim);
                    self.modified.remove(&victim);
                    self.source.forget(&victim);
                    let unlink = TimedOp { time: op.time, op: Op::Unlink { path: victim.clone() } };
                    self.record(&unlink)?;
                    self.gone.insert(victim);
                    self.day.backoff_unlinks += 1;
                    unlinked += 1;
                }
                other => return other,
            }
        }
    }
}
