//! Per-operation cost against directory size (2002 paper §3, Fig. 2–6):
//! create files one after another in one directory, then stat them in
//! creation order, in random order, stat names that do not exist, and
//! remove them in creation order. Operations are timed in groups of
//! `group`; each group gives one point, the mean cost per operation at
//! x = the entries the directory held when the group began.
//!
//! These costs are the file system's CPU: on virtual time the CPU model
//! charges per call, not per directory entry examined, so run this on wall
//! time (the experiment's default is a memory disk) to see a directory
//! index at work. Records `create`, `stat-seq`, `stat-random`,
//! `stat-missing`, `remove` in µs per operation (`us/op`).

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

/// Times `op` over `ops` [`Spec::trials`] times, undoing it with `undo`
/// between trials (untimed), and records the fastest trial's mean cost at
/// x = `entries`: on a shared machine the fastest is the one least
/// disturbed, and each trial sees the same directory.
#[allow(clippy::too_many_arguments)]
fn timed(
    t: &mut Target,
    spec: &Spec,
    rec: &mut dyn Record,
    phase: &str,
    entries: u64,
    ops: &[u64],
    mut op: impl FnMut(&mut Target, u64) -> io::Result<()>,
    mut undo: impl FnMut(&mut Target, u64) -> io::Result<()>,
) -> io::Result<()> {
    let mut best = f64::INFINITY;
    for trial in 0..spec.trials.max(1) {
        if trial > 0 {
            for &i in ops {
                undo(t, i)?;
            }
        }
        let (_, p) = t.phase(|t| {
            for &i in ops {
                op(t, i)?;
            }
            Ok(())
        })?;
        best = best.min(p.seconds());
    }
    rec.record(phase, entries as f64, "us/op", best * 1e6 / ops.len().max(1) as f64);
    Ok(())
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
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    t.mkdir("dir")?;
    let group = spec.group.max(1);
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut entries = 0;
    while entries < spec.entries {
        let ops: Vec<u64> = (entries..(entries + group).min(spec.entries)).collect();
        timed(t, spec, rec, "create", entries, &ops, create, remove)?;
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
    t.rmdir("dir")
}
