//! Per-operation cost against directory size (2002 paper §3, Fig. 2–6):
//! create files one after another in one directory, then stat them in
//! creation order, in random order, stat names that do not exist, and
//! remove them in creation order. Operations are timed in groups of
//! `group`; each group gives one point, the mean cost per operation at
//! x = the entries the directory held when the group began.
//!
//! These costs are the file system's CPU. On wall time (the experiment's
//! default is a memory disk) a library target is timed by the calling
//! thread's CPU time, not the clock: the file system works on that thread,
//! and its CPU time does not grow while other programs hold the processor,
//! so a loaded machine moves the result little (elapsed time moved the
//! 10,000-entry create cost by 4-10% with load). A mounted directory, which
//! works in a kernel or a daemon, is timed by the clock. On virtual time
//! the CPU model charges its costs instead. Records `create`, `stat-seq`,
//! `stat-random`, `stat-missing`, `remove` in µs per operation (`us/op`),
//! and creates against a reference directory timed beside them
//! (`create-ref`, and their ratio `create-relative`: see [`run`]).

use super::Record;
use crate::target::Target;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::io;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Files in the directory at the end.
    pub entries: u64,
    /// Operations per timed group.
    pub group: u64,
    /// Times each group is run (undone in between); the fastest counts.
    pub trials: u32,
    /// Seeds the random order.
    pub seed: u64,
}

impl Spec {
    /// The paper's large panel: up to 10,000 entries.
    pub fn paper(seed: u64) -> Spec {
        Spec { entries: 10_000, group: 250, trials: 5, seed }
    }

    /// A small configuration.
    pub fn quick(seed: u64) -> Spec {
        Spec { entries: 600, group: 100, trials: 2, seed }
    }
}

fn name(i: u64) -> String {
    format!("dir/file{i:06}")
}

/// Entries of the reference directory: the ~1k point the checks compare
/// with.
const REFERENCE_ENTRIES: u64 = 1_000;

fn reference_name(i: u64) -> String {
    format!("ref/file{i:06}")
}

fn create_reference(t: &mut Target, i: u64) -> io::Result<()> {
    let fd = t.create(&reference_name(i))?;
    t.close(fd)
}

fn remove_reference(t: &mut Target, i: u64) -> io::Result<()> {
    t.unlink(&reference_name(i))
}

/// Operations timed together in one trial: few enough that a trial
/// often runs without being interrupted on a busy machine (about a
/// millisecond at 10,000 entries with a name index), many enough that the
/// clock's resolution does not matter.
const BATCH: usize = 50;

/// Times `op` over `ops`, [`BATCH`] operations at a time, each batch
/// [`Spec::trials`] times, undoing it with `undo` between trials
/// (untimed); returns the mean seconds per operation of the fastest trial
/// of each batch. The fastest is the one least disturbed (by the caches,
/// and on the clock by other programs), and each trial sees the same
/// directory; taking it batch by batch keeps one interruption from
/// spoiling a whole group.
fn fastest(
    t: &mut Target,
    spec: &Spec,
    ops: &[u64],
    mut op: impl FnMut(&mut Target, u64) -> io::Result<()>,
    mut undo: impl FnMut(&mut Target, u64) -> io::Result<()>,
) -> io::Result<f64> {
    let on_thread_cpu = t.thread_cpu_measures_the_file_system();
    let mut total = 0.0;
    for batch in ops.chunks(BATCH) {
        let mut best = f64::INFINITY;
        for trial in 0..spec.trials.max(1) {
            if trial > 0 {
                for &i in batch {
                    undo(t, i)?;
                }
            }
            let cpu_before = thread_cpu_seconds();
            let (_, p) = t.phase(|t| {
                for &i in batch {
                    op(t, i)?;
                }
                Ok(())
            })?;
            let seconds = if on_thread_cpu { thread_cpu_seconds() - cpu_before } else { p.seconds() };
            best = best.min(seconds);
        }
        total += best;
    }
    Ok(total / ops.len().max(1) as f64)
}

/// [`fastest`], recorded at x = `entries` in µs per operation.
#[allow(clippy::too_many_arguments)]
fn timed(
    t: &mut Target,
    spec: &Spec,
    rec: &mut dyn Record,
    phase: &str,
    entries: u64,
    ops: &[u64],
    op: impl FnMut(&mut Target, u64) -> io::Result<()>,
    undo: impl FnMut(&mut Target, u64) -> io::Result<()>,
) -> io::Result<f64> {
    let per_op = fastest(t, spec, ops, op, undo)?;
    rec.record(phase, entries as f64, "us/op", per_op * 1e6);
    Ok(per_op)
}

/// The calling thread's CPU time (user and system), in seconds.
fn thread_cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn create(t: &mut Target, i: u64) -> io::Result<()> {
    let fd = t.create(&name(i))?;
    t.close(fd)
}

fn remove(t: &mut Target, i: u64) -> io::Result<()> {
    t.unlink(&name(i))
}

fn nothing(_: &mut Target, _: u64) -> io::Result<()> {
    Ok(())
}

fn present(t: &mut Target, i: u64) -> io::Result<()> {
    match t.stat(&name(i))? {
        Some(_) => Ok(()),
        None => Err(io::Error::other(format!("{} is missing", name(i)))),
    }
}

fn absent(t: &mut Target, i: u64) -> io::Result<()> {
    match t.stat(&name(i))? {
        Some(_) => Err(io::Error::other(format!("{} exists but should not", name(i)))),
        None => Ok(()),
    }
}

/// Runs the tests on `t`: the directory grows a group at a time; at each
/// size, a group of creates is timed (x = entries before it), then a group
/// each of stats in creation order, in random order and of absent names
/// (x = entries after it). Removal in creation order follows (x = entries
/// left before each group).
///
/// Right after each group of creates, a group of creates in a reference
/// directory of [`REFERENCE_ENTRIES`] is timed (`create-ref`), and the
/// ratio of the two is recorded (`create-relative`, metric `x`): both are
/// measured within milliseconds of each other, so whatever else the
/// machine is doing weighs on both alike, and the ratio's growth with the
/// directory's size is the file system's, not the machine's.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    t.mkdir("dir")?;
    let group = spec.group.max(1);
    t.mkdir("ref")?;
    for i in 0..REFERENCE_ENTRIES {
        create_reference(t, i)?;
    }
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut entries = 0;
    while entries < spec.entries {
        let ops: Vec<u64> = (entries..(entries + group).min(spec.entries)).collect();
        let per_op = timed(t, spec, rec, "create", entries, &ops, create, remove)?;
        let reference: Vec<u64> = (REFERENCE_ENTRIES..REFERENCE_ENTRIES + ops.len() as u64).collect();
        let reference_per_op =
            timed(t, spec, rec, "create-ref", entries, &reference, create_reference, remove_reference)?;
        for &i in &reference {
            remove_reference(t, i)?;
        }
        if reference_per_op > 0.0 {
            rec.record("create-relative", entries as f64, "x", per_op / reference_per_op);
        }
        entries += ops.len() as u64;
        let first = entries.saturating_sub(group);
        let in_order: Vec<u64> = (first..entries).collect();
        timed(t, spec, rec, "stat-seq", entries, &in_order, present, nothing)?;
        let mut all: Vec<u64> = (0..entries).collect();
        all.shuffle(&mut rng);
        all.truncate(group as usize);
        timed(t, spec, rec, "stat-random", entries, &all, present, nothing)?;
        let missing: Vec<u64> = (spec.entries + first..spec.entries + entries).collect();
        timed(t, spec, rec, "stat-missing", entries, &missing, absent, nothing)?;
    }
    let mut left = spec.entries;
    let order: Vec<u64> = (0..spec.entries).collect();
    for ops in order.chunks(group as usize) {
        timed(t, spec, rec, "remove", left, ops, remove, create)?;
        left -= ops.len() as u64;
    }
    for i in 0..REFERENCE_ENTRIES {
        remove_reference(t, i)?;
    }
    t.rmdir("ref")?;
    t.rmdir("dir")
}
