//! The Andrew benchmark's five phases (Howard et al. 1988; 1993 §5.2.2,
//! Table 6) on a synthetic source tree of the same shape as the one the
//! 1993 paper describes: 20 directories two levels deep and 100 files of
//! 512 bytes to 24 KB, about 750 KB in all (phase 2 wrote "about 750
//! kilobytes"), 40 of them sources to compile.
//!
//! 1. **mkdir** — make the 20 directories;
//! 2. **copy** — copy every file from the source tree;
//! 3. **stat** — stat every directory and file;
//! 4. **grep** — read every byte of every file;
//! 5. **compile** — read each source, write its object file (0.7 of its
//!    size), then link: read every object file, write the program.
//!
//! Andrew's own processes (mkdir, cp, ls, grep, cc) cost CPU that is not
//! the file system's. Each phase is charged, as application CPU time
//! (`Target::compute`, nothing with `--cpu-model off`), what the paper's
//! LFS spent in it where LFS did no I/O: phases 1–4 in full (0.33, 5.0,
//! 6.5 and 9.07 s), phase 5 its stated 59% CPU of 42.9 s. So LFS's
//! absolute times are calibrated, not results; what each file system adds
//! to the same CPU work (FFS's synchronous writes, the cleaner) is.
//!
//! The tree is deleted after each run, outside the timing. With
//! `fill_to`, a filler file first brings the file system to that
//! utilization (the 1993 paper's stress tests ran at 80%).
//!
//! Records `mkdir`, `copy`, `stat`, `grep`, `compile` and `total`, the mean
//! seconds per run, and the runs and segments cleaned over all of them.

use super::{contents, fill, Record};
use crate::target::Target;
use std::io;

/// Application CPU per phase of the whole tree (1993 Table 6, LFS row;
/// phase 5 at its measured 59% CPU), in nanoseconds.
const PHASE_CPU_NS: [u64; 5] = [330_000_000, 5_000_000_000, 6_500_000_000, 9_070_000_000, 25_311_000_000];

/// File sizes, cycled over the tree's files.
const SIZES: [usize; 10] = [512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576];

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Top-level directories (each with `subdirs` below it).
    pub top_dirs: usize,
    /// Subdirectories of each top-level directory.
    pub subdirs: usize,
    /// Files per directory.
    pub files_per_dir: usize,
    /// Runs, each on its own copy of the tree.
    pub runs: u32,
    /// Fill the file system to this utilization first.
    pub fill_to: Option<f64>,
}

impl Spec {
    /// The 1993 paper's shape: 20 directories, 100 files; 10 runs.
    pub fn paper() -> Spec {
        Spec { top_dirs: 4, subdirs: 4, files_per_dir: 5, runs: 10, fill_to: None }
    }

    /// A small configuration.
    pub fn quick() -> Spec {
        Spec { top_dirs: 2, subdirs: 1, files_per_dir: 3, runs: 2, fill_to: None }
    }

    fn dirs(&self) -> Vec<String> {
        let mut dirs = Vec::new();
        for t in 0..self.top_dirs {
            dirs.push(format!("t{t}"));
            for s in 0..self.subdirs {
                dirs.push(format!("t{t}/s{s}"));
            }
        }
        dirs
    }

    /// Every file: relative path and size.
    fn files(&self) -> Vec<(String, usize)> {
        let mut files = Vec::new();
        for dir in self.dirs() {
            for f in 0..self.files_per_dir {
                let n = files.len();
                let ext = if n % 5 < 2 { "c" } else { "h" };
                files.push((format!("{dir}/f{f}.{ext}"), SIZES[n % SIZES.len()]));
            }
        }
        files
    }
}

/// Spreads a phase's CPU over `n` steps.
fn share(phase: usize, n: usize) -> u64 {
    PHASE_CPU_NS[phase] / n.max(1) as u64
}

fn copy_file(t: &mut Target, from: &str, to: &str, size: usize) -> io::Result<()> {
    let mut buf = vec![0u8; size];
    let src = t.open(from)?;
    t.read(src, 0, &mut buf)?;
    t.close(src)?;
    let dst = t.create(to)?;
    t.write(dst, 0, &buf)?;
    t.close(dst)
}

fn remove_tree(t: &mut Target, root: &str, spec: &Spec, with_objects: bool) -> io::Result<()> {
    for (path, _) in spec.files() {
        t.unlink(&format!("{root}/{path}"))?;
        if with_objects && path.ends_with(".c") {
            t.unlink(&format!("{root}/{}.o", path.trim_end_matches(".c")))?;
        }
    }
    if with_objects {
        t.unlink(&format!("{root}/a.out"))?;
    }
    for dir in spec.dirs().iter().rev() {
        t.rmdir(&format!("{root}/{dir}"))?;
    }
    t.rmdir(root)
}

/// One run in directory `root`: the five phases' seconds.
fn one_run(t: &mut Target, spec: &Spec, root: &str) -> io::Result<[f64; 5]> {
    let dirs = spec.dirs();
    let files = spec.files();
    let mut seconds = [0.0; 5];
    t.mkdir(root)?;
    let (_, p) = t.phase(|t| {
        for d in &dirs {
            t.compute(share(0, dirs.len()));
            t.mkdir(&format!("{root}/{d}"))?;
        }
        Ok(())
    })?;
    seconds[0] = p.seconds();
    let (_, p) = t.phase(|t| {
        for (path, size) in &files {
            t.compute(share(1, files.len()));
            copy_file(t, &format!("src/{path}"), &format!("{root}/{path}"), *size)?;
        }
        Ok(())
    })?;
    seconds[1] = p.seconds();
    let (_, p) = t.phase(|t| {
        let n = dirs.len() + files.len();
        for d in &dirs {
            t.compute(share(2, n));
            t.stat(&format!("{root}/{d}"))?;
        }
        for (path, _) in &files {
            t.compute(share(2, n));
            t.stat(&format!("{root}/{path}"))?;
        }
        Ok(())
    })?;
    seconds[2] = p.seconds();
    let (_, p) = t.phase(|t| {
        for (path, size) in &files {
            t.compute(share(3, files.len()));
            let mut buf = vec![0u8; *size];
            let fd = t.open(&format!("{root}/{path}"))?;
            t.read(fd, 0, &mut buf)?;
            t.close(fd)?;
        }
        Ok(())
    })?;
    seconds[3] = p.seconds();
    let sources: Vec<&(String, usize)> = files.iter().filter(|(p, _)| p.ends_with(".c")).collect();
    let (_, p) = t.phase(|t| {
        let mut program = 0;
        for (path, size) in &sources {
            let mut buf = vec![0u8; *size];
            let fd = t.open(&format!("{root}/{path}"))?;
            t.read(fd, 0, &mut buf)?;
            t.close(fd)?;
            t.compute(share(4, sources.len()));
            let object = contents(size * 7 / 10, *size as u64);
            let fd = t.create(&format!("{root}/{}.o", path.trim_end_matches(".c")))?;
            t.write(fd, 0, &object)?;
            t.close(fd)?;
            program += object.len();
        }
        for (path, size) in &sources {
            let mut buf = vec![0u8; size * 7 / 10];
            let fd = t.open(&format!("{root}/{}.o", path.trim_end_matches(".c")))?;
            t.read(fd, 0, &mut buf)?;
            t.close(fd)?;
        }
        let fd = t.create(&format!("{root}/a.out"))?;
        t.write(fd, 0, &contents(program, 5))?;
        t.close(fd)
    })?;
    seconds[4] = p.seconds();
    Ok(seconds)
}

/// Runs the benchmark on `t`.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    if let Some(u) = spec.fill_to {
        fill(t, u)?;
        t.drop_caches()?;
        rec.record("fill", 0.0, "utilization%", 100.0 * t.usage()?.utilization());
    }
    t.mkdir("src")?;
    for d in spec.dirs() {
        t.mkdir(&format!("src/{d}"))?;
    }
    for (path, size) in spec.files() {
        let fd = t.create(&format!("src/{path}"))?;
        t.write(fd, 0, &contents(size, size as u64))?;
        t.close(fd)?;
    }
    t.sync()?;
    let cleaned_before = t.segments_cleaned();
    let mut sums = [0.0; 5];
    for run in 0..spec.runs {
        let root = format!("run{run}");
        let seconds = one_run(t, spec, &root)?;
        for (sum, s) in sums.iter_mut().zip(seconds) {
            *sum += s;
        }
        remove_tree(t, &root, spec, true)?;
    }
    let runs = spec.runs.max(1) as f64;
    for (name, sum) in ["mkdir", "copy", "stat", "grep", "compile"].iter().zip(sums) {
        rec.record(name, 0.0, "s", sum / runs);
    }
    rec.record("total", 0.0, "s", sums.iter().sum::<f64>() / runs);
    rec.record("all-runs", 0.0, "runs", spec.runs as f64);
    rec.record("all-runs", 0.0, "segments cleaned", (t.segments_cleaned() - cleaned_before) as f64);
    Ok(())
}
