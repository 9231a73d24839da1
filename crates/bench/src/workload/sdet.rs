//! A multi-user software-development mix standing in for SPEC's SDET
//! (SDM 057.sdet), which the 2000 paper ran (§7.3.3, §8.2.3, Fig. 4).
//! SDET is retired and licensed, and its command mix is not in the paper;
//! this is fslab's own mix of the same kind, not SDET: its scripts per hour
//! are comparable between the systems here, not with the paper's.
//!
//! Each user has a home tree (`uN/src`, `uN/doc`, `uN/bin`) populated
//! before the timing: C sources and headers, documents (two of them over
//! 64 KB) and binaries (§8.2.3 finds LFFS-file slow creating files over
//! 64 KB). A user's script is a seeded random permutation of
//! software-development subtasks, as SDET's are "generated from a
//! predetermined mix of commands" (§7.3.3):
//!
//! | subtask | times per script | what it does to the file system | CPU charged |
//! |---|---:|---|---:|
//! | edit | 4 | reads a source, writes the editor's temporary file, rewrites the source a little longer, removes the temporary | 40 ms |
//! | compile | 4 | reads a source and four headers, writes its object (replacing an earlier one) | 250 ms |
//! | cp | 3 | copies a document or a binary (some over 64 KB) to a new file | 10 ms |
//! | diff | 2 | reads a source and its last copy or another source | 60 ms |
//! | grep | 3 | reads five sources | 30 ms |
//! | ls | 3 | stats every file of a directory | 10 ms |
//! | mkdir | 2 | makes a directory and writes three small files in it | 5 ms |
//! | nroff | 2 | reads a document, writes its formatted output | 150 ms |
//! | rm | 3 | removes a file a `cp` or `nroff` made, or a directory `mkdir` made with its files | 5 ms |
//!
//! The CPU charges are estimates for the Pentium III, stated so their
//! effect is visible; they are the same on every system.
//!
//! Concurrency: the lab runs on one virtual clock and one thread, so `N`
//! concurrent users are interleaved deterministically, one subtask of each
//! user in turn, until every script is done; a synchronous write stops
//! every user, as it stops the one process that made it, while the others'
//! CPU cannot overlap it. Each concurrency level runs on a fresh file
//! system. Records at x = users: `scripts` in scripts per hour
//! (`scripts/h`, SDET's metric) and seconds (`s`), and the subtasks run
//! (`subtasks`).

use super::{contents, Record};
use crate::target::Target;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::io;

const KB: u64 = 1024;
const MS: u64 = 1_000_000;

/// A subtask of a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subtask {
    /// Edit a source.
    Edit,
    /// Compile a source.
    Compile,
    /// Copy a document or binary.
    Cp,
    /// Compare two files.
    Diff,
    /// Search sources.
    Grep,
    /// List a directory.
    Ls,
    /// Make a directory with a few files.
    Mkdir,
    /// Format a document.
    Nroff,
    /// Remove what an earlier subtask made.
    Rm,
}

/// Each subtask, how often a script runs it, and its CPU (see the module).
pub const MIX: &[(Subtask, usize, u64)] = &[
    (Subtask::Edit, 4, 40 * MS),
    (Subtask::Compile, 4, 250 * MS),
    (Subtask::Cp, 3, 10 * MS),
    (Subtask::Diff, 2, 60 * MS),
    (Subtask::Grep, 3, 30 * MS),
    (Subtask::Ls, 3, 10 * MS),
    (Subtask::Mkdir, 2, 5 * MS),
    (Subtask::Nroff, 2, 150 * MS),
    (Subtask::Rm, 3, 5 * MS),
];

/// The home tree's files: directory, count, size range.
const HOME: &[(&str, usize, u64, u64)] = &[
    ("src", 20, KB, 20 * KB),
    ("src", 8, KB, 6 * KB),
    ("doc", 8, 2 * KB, 30 * KB),
    ("bin", 5, 20 * KB, 60 * KB),
];
/// The home tree's large files (over 64 KB).
const LARGE: &[(&str, u64)] = &[("doc/manual", 160 * KB), ("doc/notes", 88 * KB), ("bin/tool", 120 * KB)];

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The concurrency levels, in users.
    pub users: Vec<u64>,
    /// Scripts each user runs at each level.
    pub scripts_per_user: u64,
    /// Seeds the home trees' sizes and the scripts' permutations.
    pub seed: u64,
}

impl Spec {
    /// 1, 2, 4 and 8 users, one script each.
    pub fn paper(seed: u64) -> Spec {
        Spec { users: vec![1, 2, 4, 8], scripts_per_user: 1, seed }
    }

    /// A small configuration: 1 and 2 users.
    pub fn quick(seed: u64) -> Spec {
        Spec { users: vec![1, 2], scripts_per_user: 1, seed }
    }
}

/// A file of a home tree: path below the home, size.
type File = (String, u64);

/// One user's state: home, files, what it made, its script.
struct User {
    home: String,
    rng: SmallRng,
    sources: Vec<File>,
    docs: Vec<File>,
    made: Vec<File>,
    made_dirs: Vec<(String, Vec<String>)>,
    script: Vec<Subtask>,
    next: usize,
    serial: u64,
}

/// A script: the mix in a seeded random order.
pub fn script(rng: &mut SmallRng) -> Vec<Subtask> {
    let mut s: Vec<Subtask> = MIX.iter().flat_map(|&(task, n, _)| std::iter::repeat_n(task, n)).collect();
    s.shuffle(rng);
    s
}

fn cpu(task: Subtask) -> u64 {
    MIX.iter().find(|m| m.0 == task).map_or(0, |m| m.2)
}

fn read(t: &mut Target, path: &str, size: u64) -> io::Result<()> {
    let mut buf = vec![0u8; size as usize];
    let fd = t.open(path)?;
    t.read(fd, 0, &mut buf)?;
    t.close(fd)
}

fn write(t: &mut Target, path: &str, size: u64, fresh: bool) -> io::Result<()> {
    let fd = if fresh { t.create(path)? } else { t.open(path)? };
    for (i, piece) in contents(size as usize, size).chunks(8192).enumerate() {
        t.write(fd, i as u64 * 8192, piece)?;
    }
    t.close(fd)
}

impl User {
    fn new(t: &mut Target, n: u64, seed: u64) -> io::Result<User> {
        let home = format!("u{n}");
        let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(n));
        t.mkdir(&home)?;
        for d in ["src", "doc", "bin"] {
            t.mkdir(&format!("{home}/{d}"))?;
        }
        let mut sources = Vec::new();
        let mut docs = Vec::new();
        for (k, &(dir, count, low, high)) in HOME.iter().enumerate() {
            for i in 0..count {
                let ext = if dir == "src" {
                    if k == 0 {
                        ".c"
                    } else {
                        ".h"
                    }
                } else {
                    ""
                };
                let path = format!("{dir}/f{k}x{i}{ext}");
                let size = rng.gen_range(low..=high);
                write(t, &format!("{home}/{path}"), size, true)?;
                let list = if dir == "src" { &mut sources } else { &mut docs };
                list.push((path, size));
            }
        }
        for &(path, size) in LARGE {
            write(t, &format!("{home}/{path}"), size, true)?;
            docs.push((path.to_string(), size));
        }
        Ok(User {
            home,
            rng,
            sources,
            docs,
            made: Vec::new(),
            made_dirs: Vec::new(),
            script: Vec::new(),
            next: 0,
            serial: 0,
        })
    }

    fn at(&self, path: &str) -> String {
        format!("{}/{path}", self.home)
    }

    fn pick_source(&mut self, c_only: bool) -> usize {
        let candidates: Vec<usize> =
            (0..self.sources.len()).filter(|&i| !c_only || self.sources[i].0.ends_with(".c")).collect();
        candidates[self.rng.gen_range(0..candidates.len())]
    }

    fn name(&mut self, stem: &str) -> String {
        self.serial += 1;
        format!("{stem}{}", self.serial)
    }

    fn step(&mut self, t: &mut Target, task: Subtask) -> io::Result<()> {
        t.compute(cpu(task));
        match task {
            Subtask::Edit => {
                let i = self.pick_source(false);
                let (path, size) = self.sources[i].clone();
                read(t, &self.at(&path), size)?;
                let tmp = self.name("src/.ex");
                let tmp = self.at(&tmp);
                write(t, &tmp, size, true)?;
                let grown = size + self.rng.gen_range(10..=400);
                write(t, &self.at(&path), grown, false)?;
                self.sources[i].1 = grown;
                t.unlink(&tmp)
            }
            Subtask::Compile => {
                let i = self.pick_source(true);
                let (path, size) = self.sources[i].clone();
                read(t, &self.at(&path), size)?;
                let headers: Vec<File> =
                    self.sources.iter().filter(|s| s.0.ends_with(".h")).take(4).cloned().collect();
                for (h, hs) in headers {
                    read(t, &self.at(&h), hs)?;
                }
                // The compiler replaces an object an earlier compile left.
                let object = self.at(&format!("{}.o", path.trim_end_matches(".c")));
                if t.stat(&object)?.is_some() {
                    t.unlink(&object)?;
                }
                write(t, &object, (size * 4 / 5).max(512), true)
            }
            Subtask::Cp => {
                let (path, size) = self.docs[self.rng.gen_range(0..self.docs.len())].clone();
                read(t, &self.at(&path), size)?;
                let copy = self.name("doc/copy");
                write(t, &self.at(&copy), size, true)?;
                self.made.push((copy, size));
                Ok(())
            }
            Subtask::Diff => {
                let i = self.pick_source(false);
                let a = self.sources[i].clone();
                let b = match self.made.last() {
                    Some(m) => m.clone(),
                    None => {
                        let j = self.pick_source(false);
                        self.sources[j].clone()
                    }
                };
                read(t, &self.at(&a.0), a.1)?;
                read(t, &self.at(&b.0), b.1)
            }
            Subtask::Grep => {
                for _ in 0..5 {
                    let i = self.pick_source(false);
                    let (path, size) = self.sources[i].clone();
                    read(t, &self.at(&path), size)?;
                }
                Ok(())
            }
            Subtask::Ls => {
                let dir = ["src", "doc", "bin"][self.rng.gen_range(0..3)];
                let files: Vec<String> = self
                    .sources
                    .iter()
                    .chain(&self.docs)
                    .chain(&self.made)
                    .filter(|f| f.0.starts_with(dir))
                    .map(|f| f.0.clone())
                    .collect();
                for f in files {
                    t.stat(&self.at(&f))?;
                }
                Ok(())
            }
            Subtask::Mkdir => {
                let dir = self.name("work");
                t.mkdir(&self.at(&dir))?;
                let mut files = Vec::new();
                for k in 0..3 {
                    let f = format!("{dir}/n{k}");
                    write(t, &self.at(&f), self.rng.gen_range(KB..=8 * KB), true)?;
                    files.push(f);
                }
                self.made_dirs.push((dir, files));
                Ok(())
            }
            Subtask::Nroff => {
                let (path, size) = self.docs[self.rng.gen_range(0..self.docs.len())].clone();
                read(t, &self.at(&path), size)?;
                let out = self.name("doc/fmt");
                write(t, &self.at(&out), size * 6 / 5, true)?;
                self.made.push((out, size * 6 / 5));
                Ok(())
            }
            Subtask::Rm => {
                if !self.made_dirs.is_empty() && (self.made.is_empty() || self.rng.gen_bool(0.5)) {
                    let (dir, files) = self.made_dirs.remove(0);
                    for f in files {
                        t.unlink(&self.at(&f))?;
                    }
                    return t.rmdir(&self.at(&dir));
                }
                if !self.made.is_empty() {
                    let (f, _) = self.made.remove(0);
                    return t.unlink(&self.at(&f));
                }
                Ok(())
            }
        }
    }
}

/// What one concurrency level did, for tests.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// Users.
    pub users: u64,
    /// Subtasks run.
    pub subtasks: u64,
    /// Seconds.
    pub seconds: f64,
    /// Files each user made and left (path below the target, size).
    pub left: Vec<(String, u64)>,
    /// Directories each user made and left.
    pub left_dirs: Vec<String>,
}

/// Runs `users` users' scripts on `t` (a fresh file system).
pub fn one_level(t: &mut Target, spec: &Spec, users: u64, rec: &mut dyn Record) -> io::Result<Level> {
    let mut all = Vec::new();
    for n in 0..users {
        all.push(User::new(t, n, spec.seed)?);
    }
    t.sync()?;
    let mut subtasks = 0;
    let (_, phase) = t.phase(|t| {
        for _ in 0..spec.scripts_per_user {
            for u in all.iter_mut() {
                u.script = script(&mut u.rng);
                u.next = 0;
            }
            // One subtask of each user in turn, until all are done.
            loop {
                let mut any = false;
                for u in all.iter_mut() {
                    if let Some(&task) = u.script.get(u.next) {
                        u.next += 1;
                        u.step(t, task)?;
                        subtasks += 1;
                        any = true;
                    }
                }
                if !any {
                    break;
                }
            }
        }
        Ok(())
    })?;
    let x = users as f64;
    let scripts = users * spec.scripts_per_user;
    let seconds = phase.seconds();
    rec.record("scripts", x, "s", seconds);
    rec.record(
        "scripts",
        x,
        "scripts/h",
        if seconds > 0.0 { scripts as f64 * 3600.0 / seconds } else { 0.0 },
    );
    rec.record("scripts", x, "subtasks", subtasks as f64);
    rec.record("scripts", x, "cpu%", 100.0 * phase.cpu_share());
    let left = all.iter().flat_map(|u| u.made.iter().map(|(f, s)| (u.at(f), *s))).collect();
    let left_dirs = all.iter().flat_map(|u| u.made_dirs.iter().map(|(d, _)| u.at(d))).collect();
    Ok(Level { users, subtasks, seconds, left, left_dirs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{test_target, Collected};

    #[test]
    fn a_script_is_the_mix_in_a_seeded_order() {
        let s = script(&mut SmallRng::seed_from_u64(3));
        assert_eq!(s.len(), MIX.iter().map(|m| m.1).sum::<usize>());
        for &(task, n, _) in MIX {
            assert_eq!(s.iter().filter(|&&x| x == task).count(), n, "{task:?}");
        }
        assert_eq!(script(&mut SmallRng::seed_from_u64(3)), s);
        assert_ne!(script(&mut SmallRng::seed_from_u64(4)), s);
    }

    #[test]
    fn two_users_run_their_scripts_interleaved() {
        let spec = Spec::quick(2);
        let mut t = test_target("ffs-softdep", 256 << 20);
        let mut rec = Collected::default();
        let level = one_level(&mut t, &spec, 2, &mut rec).expect("sdet");
        let per_script = MIX.iter().map(|m| m.1 as u64).sum::<u64>();
        assert_eq!(level.subtasks, 2 * per_script);
        assert_eq!(rec.get("scripts", 2.0, "subtasks"), Some(level.subtasks as f64));
        let rate = rec.get("scripts", 2.0, "scripts/h").expect("rate");
        assert!((rate - 2.0 * 3600.0 / level.seconds).abs() < 1e-6 * rate);
        for (f, size) in &level.left {
            assert_eq!(t.stat(f).expect("stat"), Some(*size), "{f} left");
        }
        for d in &level.left_dirs {
            assert!(t.stat(&format!("{d}/n0")).expect("stat").is_some(), "{d} left");
        }
        for n in 0..2 {
            assert!(t.stat(&format!("u{n}/doc/manual")).expect("stat").is_some());
        }

        let mut again = Collected::default();
        let second =
            one_level(&mut test_target("ffs-softdep", 256 << 20), &spec, 2, &mut again).expect("sdet");
        assert_eq!((second, again.points), (level, rec.points), "the same seed, the same run");
    }
}
