//! The 2000 paper's ssh benchmark (§7.3.1, §8.2.1, Table 4): unpack,
//! configure and build ssh-1.2.26, three phases back to back, the config
//! and build phases "with the file system cache warmed by the previous
//! phases". A proxy: the paper ran the real tools; here each tool's file
//! operations are made on a synthetic tree, and its own CPU time is
//! charged as `andrew.rs` charges Andrew's (`Target::compute`).
//!
//! **The tree.** The tarball's manifest is not in the paper. The tree is
//! shaped after ssh-1.2.26's distribution as its README and Makefile.in
//! describe it: ssh's own sources at the top, with GNU MP 2.0.2 and zlib
//! 1.0.4 bundled below it, GNU MP with its `mpn` (a generic C version and
//! assembly for a score of processors), `mpz`, `mpq`, `mpf` and `mpbsd`
//! directories. The counts and sizes in [`GROUPS`] and [`LARGE`] are
//! approximations of that layout, not measurements of the tarball: about
//! 650 files in 28 directories, about 6 MB, a handful of them over 64 KB
//! (`configure`, `ChangeLog`, GNU MP's manual) — §8.2.1 blames those for
//! LFFS-file's slower unpack. The file sizes are drawn once from a fixed
//! seed, so every run and every seed unpacks the same tree.
//!
//! **Unpack** (`tar xzf`): the 1 MB compressed tarball, already in the
//! cache, is read; each directory is made and each file created and
//! written in 10 KB records (tar's blocking); gunzip's and tar's CPU is
//! charged in proportion to the bytes written.
//!
//! **Config** (`./configure`): reads `configure`, then runs
//! [`CONFIG_TESTS`] feature tests, each of which writes `conftest.c`,
//! and then either preprocesses it (a third; output to `conftest.out`),
//! compiles it (a third; `conftest.o`) or compiles, links and runs it
//! (`conftest`, an executable the run reads), appends to `config.log`,
//! and removes `conftest*`; the compiler's temporary files go to `/tmp`,
//! which was on the paper's system disk (Table 3), not the disk under
//! test. It ends writing `config.cache` and `config.status`, and every
//! `Makefile` and `config.h` from its `.in`.
//!
//! **Build** (`make`): make stats every source and object; each C or
//! assembly source is read with the headers it includes from the tree
//! (system headers are on the system disk) and its object written; GNU MP
//! and zlib are archived (`libgmp.a`, `libz.a`, each object read, the
//! archive written, `ranlib` rewriting it); then the six programs are
//! linked, each reading its objects and the archives.
//!
//! **CPU.** Each phase's tool CPU is charged in pieces spread over its
//! steps: [`UNPACK_CPU_NS`], [`CONFIG_CPU_NS`], [`BUILD_CPU_NS`]. They are
//! calibrated, not measured: the build so that it runs at about 90% CPU
//! on synchronous FFS ("90% CPU utilization running on FFS", §7.3.1), and
//! the three so that FFS-async's phases come near Table 4's 1.02, 10.38
//! and 42.60 s on the Pentium III model. What each file system adds to
//! the same CPU work is the result.
//!
//! Records `unpack`, `config`, `build` and `total` in seconds (`s`), each
//! phase's CPU share (`cpu%`), and the tree's `files` and `bytes`.

use super::{append, contents, read_file, Record};
use crate::target::Target;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::io;

/// gunzip's and tar's CPU for the whole tree (calibrated, see the module).
pub const UNPACK_CPU_NS: u64 = 550_000_000;
/// The configure script's CPU: the shell, the preprocessor, compiler and
/// linker of each test (calibrated).
pub const CONFIG_CPU_NS: u64 = 9_400_000_000;
/// The compiler's, archiver's and linker's CPU for the build
/// (calibrated).
pub const BUILD_CPU_NS: u64 = 40_000_000_000;
/// Feature tests `configure` runs (ssh's, with those of the bundled GNU
/// MP and zlib; an approximation).
pub const CONFIG_TESTS: usize = 240;

/// The tree's root.
const ROOT: &str = "ssh-1.2.26";
/// The seed the tree's file sizes are drawn from, fixed: the tarball is
/// the same whatever the run's seed.
const TREE_SEED: u64 = 1_226;
/// tar's record: files are written 10 KB at a time.
const TAR_RECORD: usize = 10 * 1024;

/// Files of one kind in one directory of the tree: `count` of them, sizes
/// drawn uniformly from `low..=high` bytes.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The directory, below the root ("" for the root).
    pub dir: &'static str,
    /// How many.
    pub count: usize,
    /// Their extension: `c` and `S` are compiled, `h` included.
    pub ext: &'static str,
    /// Smallest size.
    pub low: u64,
    /// Largest size.
    pub high: u64,
    /// Whether the build compiles them (GNU MP's assembly for other
    /// processors and zlib's examples are not).
    pub compiled: bool,
}

const fn g(dir: &'static str, count: usize, ext: &'static str, low: u64, high: u64, compiled: bool) -> Group {
    Group { dir, count, ext, low, high, compiled }
}

const KB: u64 = 1024;

/// The tree's ordinary files, by directory (approximations: see the
/// module).
pub const GROUPS: &[Group] = &[
    // ssh itself: its sources, headers, manual pages and documents.
    g("", 72, "c", 2 * KB, 40 * KB, true),
    g("", 46, "h", KB, 12 * KB, false),
    g("", 30, "txt", KB, 40 * KB, false),
    // GNU MP 2.0.2.
    g("gmp-2.0.2", 26, "txt", KB, 20 * KB, false),
    g("gmp-2.0.2", 6, "h", 2 * KB, 30 * KB, false),
    g("gmp-2.0.2/mpn/generic", 42, "c", KB, 10 * KB, true),
    g("gmp-2.0.2/mpn/x86", 10, "S", KB, 8 * KB, true),
    g("gmp-2.0.2/mpz", 84, "c", KB, 6 * KB, true),
    g("gmp-2.0.2/mpq", 30, "c", KB, 5 * KB, true),
    g("gmp-2.0.2/mpf", 40, "c", KB, 6 * KB, true),
    g("gmp-2.0.2/mpbsd", 10, "c", KB, 4 * KB, true),
    // GNU MP's assembly for the other processors, not built.
    g("gmp-2.0.2/mpn/a29k", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/alpha", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/clipper", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/cray", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/hppa", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/i960", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/m68k", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/m88k", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/mips2", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/mips3", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/ns32k", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/power", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/pyr", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/sh", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/sparc", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/sparc8", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/vax", 11, "s", KB, 8 * KB, false),
    g("gmp-2.0.2/mpn/z8000", 11, "s", KB, 8 * KB, false),
    // zlib 1.0.4.
    g("zlib-1.0.4", 15, "c", 2 * KB, 40 * KB, true),
    g("zlib-1.0.4", 8, "h", KB, 20 * KB, false),
    g("zlib-1.0.4", 17, "txt", KB, 15 * KB, false),
];

/// The few large files, by path below the root, with sizes.
pub const LARGE: &[(&str, u64)] = &[
    ("configure", 168 * KB),
    ("configure.in", 44 * KB),
    ("Makefile.in", 40 * KB),
    ("ChangeLog", 92 * KB),
    ("RFC", 104 * KB),
    ("config.h.in", 12 * KB),
    ("gmp-2.0.2/gmp.texi", 236 * KB),
    ("gmp-2.0.2/Makefile.in", 12 * KB),
    ("gmp-2.0.2/mpn/Makefile.in", 8 * KB),
    ("gmp-2.0.2/mpz/Makefile.in", 8 * KB),
    ("gmp-2.0.2/mpq/Makefile.in", 4 * KB),
    ("gmp-2.0.2/mpf/Makefile.in", 6 * KB),
    ("gmp-2.0.2/mpbsd/Makefile.in", 4 * KB),
    ("zlib-1.0.4/Makefile.in", 6 * KB),
];

/// The programs linked, with the share of ssh's objects each takes and
/// whether it takes the archives.
const PROGRAMS: &[(&str, f64, bool)] = &[
    ("ssh", 0.6, true),
    ("sshd", 0.7, true),
    ("scp", 0.1, false),
    ("ssh-keygen", 0.4, true),
    ("ssh-agent", 0.4, true),
    ("ssh-add", 0.4, true),
];

/// One file of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path below the root.
    pub path: String,
    /// Bytes.
    pub size: u64,
    /// Whether the build compiles it.
    pub compiled: bool,
}

/// The tree: its directories (parents first) and files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Directories below the root, parents first.
    pub dirs: Vec<String>,
    /// Files.
    pub files: Vec<Entry>,
}

impl Tree {
    /// ssh-1.2.26's tree, as approximated (see the module).
    pub fn ssh() -> Tree {
        Tree::of(GROUPS, LARGE, 1.0)
    }

    /// A tree of the same shape with each group's count scaled by `scale`
    /// (at least one file each): tests and `--quick`.
    pub fn of(groups: &[Group], large: &[(&str, u64)], scale: f64) -> Tree {
        let mut rng = SmallRng::seed_from_u64(TREE_SEED);
        let mut dirs: Vec<String> = Vec::new();
        let add_dir = |dirs: &mut Vec<String>, dir: &str| {
            let mut at = String::new();
            for part in dir.split('/').filter(|p| !p.is_empty()) {
                if !at.is_empty() {
                    at.push('/');
                }
                at.push_str(part);
                if !dirs.contains(&at) {
                    dirs.push(at.clone());
                }
            }
        };
        let mut files = Vec::new();
        for (gi, group) in groups.iter().enumerate() {
            add_dir(&mut dirs, group.dir);
            let count = ((group.count as f64 * scale).round() as usize).max(1);
            for i in 0..count {
                let name = format!("g{gi}f{i}.{}", group.ext);
                let path = if group.dir.is_empty() { name } else { format!("{}/{name}", group.dir) };
                let size = rng.gen_range(group.low..=group.high);
                files.push(Entry { path, size, compiled: group.compiled });
            }
        }
        for (path, size) in large {
            if let Some((dir, _)) = path.rsplit_once('/') {
                add_dir(&mut dirs, dir);
            }
            files.push(Entry { path: path.to_string(), size: *size, compiled: false });
        }
        Tree { dirs, files }
    }

    /// Bytes of all the files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The headers a source in `dir` includes from the tree: its
    /// component's (ssh's for ssh, GNU MP's top-level ones for all of GNU
    /// MP, zlib's for zlib), at most eight.
    fn headers_for(&self, source: &Entry) -> Vec<&Entry> {
        let component = source.path.split('/').next().unwrap_or("");
        let top = |e: &&Entry| {
            let dir = e.path.rsplit_once('/').map_or("", |(d, _)| d);
            e.path.ends_with(".h")
                && if component.starts_with("gmp-") || component.starts_with("zlib-") {
                    dir == component
                } else {
                    dir.is_empty()
                }
        };
        let all: Vec<&Entry> = self.files.iter().filter(top).collect();
        if all.is_empty() {
            return all;
        }
        let start = source.path.len() % all.len();
        (0..all.len().min(8)).map(|k| all[(start + k * 3) % all.len()]).collect()
    }
}

/// The object file of a source.
fn object(path: &str) -> String {
    match path.rsplit_once('.') {
        Some((stem, _)) => format!("{stem}.o"),
        None => format!("{path}.o"),
    }
}

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The tree.
    pub tree: Tree,
    /// Feature tests `configure` runs.
    pub config_tests: usize,
    /// CPU charged per phase, nanoseconds: unpack, config, build.
    pub cpu_ns: [u64; 3],
}

impl Spec {
    /// ssh-1.2.26 (approximated), with the calibrated CPU.
    pub fn paper() -> Spec {
        Spec {
            tree: Tree::ssh(),
            config_tests: CONFIG_TESTS,
            cpu_ns: [UNPACK_CPU_NS, CONFIG_CPU_NS, BUILD_CPU_NS],
        }
    }

    /// A small configuration: a tenth of the tree and the tests, with a
    /// tenth of the CPU.
    pub fn quick() -> Spec {
        Spec {
            tree: Tree::of(GROUPS, LARGE, 0.1),
            config_tests: CONFIG_TESTS / 10,
            cpu_ns: [UNPACK_CPU_NS / 10, CONFIG_CPU_NS / 10, BUILD_CPU_NS / 10],
        }
    }
}

fn root(path: &str) -> String {
    format!("{ROOT}/{path}")
}

fn write_file(t: &mut Target, path: &str, data: &[u8], call: usize) -> io::Result<()> {
    let fd = t.create(path)?;
    for (i, piece) in data.chunks(call.max(1)).enumerate() {
        t.write(fd, (i * call) as u64, piece)?;
    }
    t.close(fd)
}

/// `tar xzf`: the tree out of the tarball (`tarball` bytes, in the cache).
fn unpack(t: &mut Target, spec: &Spec, tarball: u64) -> io::Result<()> {
    let tree = &spec.tree;
    let per_byte = spec.cpu_ns[0] as f64 / tree.bytes().max(1) as f64;
    let fd = t.open("ssh-1.2.26.tar.gz")?;
    let mut buf = vec![0u8; 32 * 1024];
    let mut read = 0;
    t.mkdir(ROOT)?;
    for d in &tree.dirs {
        t.mkdir(&root(d))?;
    }
    for (i, f) in tree.files.iter().enumerate() {
        // gunzip reads its input as tar asks for more.
        let want = tarball * (i as u64 + 1) / tree.files.len() as u64;
        while read < want {
            let n = (want - read).min(buf.len() as u64) as usize;
            t.read(fd, read, &mut buf[..n])?;
            read += n as u64;
        }
        t.compute((f.size as f64 * per_byte) as u64);
        write_file(t, &root(&f.path), &contents(f.size as usize, f.size), TAR_RECORD)?;
    }
    t.close(fd)
}

/// `./configure`.
fn configure(t: &mut Target, spec: &Spec) -> io::Result<()> {
    let tree = &spec.tree;
    let steps = spec.config_tests + 4;
    let share = spec.cpu_ns[1] / steps as u64;
    let size_of = |p: &str| tree.files.iter().find(|f| f.path == p).map_or(4 * KB, |f| f.size);
    read_file(t, &root("configure"), size_of("configure"))?;
    let log = root("config.log");
    let mut log_at = 0;
    write_file(t, &log, &contents(512, 1), 8192)?;
    log_at += 512;
    let conftest = contents(24 * 1024, 24);
    for test in 0..spec.config_tests {
        t.compute(share);
        let c = root("conftest.c");
        write_file(t, &c, &conftest[..300 + (test % 7) * 100], 8192)?;
        match test % 3 {
            // `$ac_cpp conftest.c >/dev/null 2>conftest.out`
            0 => {
                read_file(t, &c, 300)?;
                let out = root("conftest.out");
                write_file(t, &out, &conftest[..64], 8192)?;
                read_file(t, &out, 64)?;
                t.unlink(&out)?;
            }
            // `$CC -c conftest.c`
            1 => {
                read_file(t, &c, 300)?;
                let o = root("conftest.o");
                write_file(t, &o, &conftest[..1500], 8192)?;
                t.unlink(&o)?;
            }
            // `$CC -o conftest conftest.c && ./conftest`
            _ => {
                read_file(t, &c, 300)?;
                let exe = root("conftest");
                write_file(t, &exe, &conftest, 8192)?;
                read_file(t, &exe, conftest.len() as u64)?;
                t.unlink(&exe)?;
            }
        }
        t.unlink(&c)?;
        append(t, &log, &mut log_at, 200)?;
    }
    t.compute(share);
    write_file(t, &root("config.cache"), &contents(6 * 1024, 6), 8192)?;
    t.compute(share);
    write_file(t, &root("config.status"), &contents(22 * 1024, 22), 8192)?;
    // config.status: every `.in` to its output.
    t.compute(share);
    for f in tree.files.iter().filter(|f| f.path.ends_with(".in") && !f.path.ends_with("configure.in")) {
        read_file(t, &root(&f.path), f.size)?;
        let out = f.path.trim_end_matches(".in");
        write_file(t, &root(out), &contents(f.size as usize, f.size + 1), 8192)?;
    }
    t.compute(share);
    Ok(())
}

/// `make`.
fn build(t: &mut Target, spec: &Spec) -> io::Result<()> {
    let tree = &spec.tree;
    let sources: Vec<&Entry> = tree.files.iter().filter(|f| f.compiled).collect();
    let source_bytes: u64 = sources.iter().map(|f| f.size).sum();
    // The compiler's CPU in proportion to each source's size; a twentieth
    // of the phase's CPU for the archives and links.
    let compile_ns = spec.cpu_ns[2] as f64 * 0.95;
    let link_ns = spec.cpu_ns[2] as f64 * 0.05 / (PROGRAMS.len() + 2) as f64;
    // make's dependency check.
    for f in &sources {
        t.stat(&root(&f.path))?;
        t.stat(&root(&object(&f.path)))?;
    }
    let mut objects: Vec<(String, u64)> = Vec::new();
    for f in &sources {
        read_file(t, &root(&f.path), f.size)?;
        for h in tree.headers_for(f) {
            read_file(t, &root(&h.path), h.size)?;
        }
        t.compute((compile_ns * f.size as f64 / source_bytes.max(1) as f64) as u64);
        let o = object(&f.path);
        let size = (f.size * 4 / 5).max(512);
        write_file(t, &root(&o), &contents(size as usize, size), 8192)?;
        objects.push((o, size));
    }
    let mut archives = Vec::new();
    for (lib, dir) in [("libgmp.a", "gmp-2.0.2"), ("libz.a", "zlib-1.0.4")] {
        let members: Vec<&(String, u64)> = objects.iter().filter(|(o, _)| o.starts_with(dir)).collect();
        let bytes: u64 = members.iter().map(|(_, s)| s).sum::<u64>() + 4096;
        for (o, s) in &members {
            read_file(t, &root(o), *s)?;
        }
        t.compute(link_ns as u64);
        let path = format!("{dir}/{lib}");
        write_file(t, &root(&path), &contents(bytes as usize, bytes), 8192)?;
        // ranlib: the archive read and written again with its index.
        read_file(t, &root(&path), bytes)?;
        let fd = t.open(&root(&path))?;
        t.write(fd, 0, &contents(bytes as usize, bytes + 1))?;
        t.close(fd)?;
        archives.push((path, bytes));
    }
    let own: Vec<&(String, u64)> = objects.iter().filter(|(o, _)| !o.contains('/')).collect();
    for (name, share, with_archives) in PROGRAMS {
        let take = ((own.len() as f64 * share).ceil() as usize).min(own.len());
        let mut bytes = 0;
        for (o, s) in own.iter().take(take) {
            read_file(t, &root(o), *s)?;
            bytes += s;
        }
        if *with_archives {
            for (a, s) in &archives {
                read_file(t, &root(a), *s)?;
                bytes += s / 3;
            }
        }
        t.compute(link_ns as u64);
        write_file(t, &root(name), &contents(bytes as usize, bytes), 8192)?;
    }
    Ok(())
}

/// Runs the benchmark on `t`: the tarball written (untimed, left in the
/// cache), then the three phases.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    // gzip shrinks source text to about a fifth.
    let tarball = spec.tree.bytes() / 5;
    write_file(t, "ssh-1.2.26.tar.gz", &contents(tarball as usize, 126), 64 * 1024)?;
    t.sync()?;
    let (_, u) = t.phase(|t| unpack(t, spec, tarball))?;
    let (_, c) = t.phase(|t| configure(t, spec))?;
    let (_, b) = t.phase(|t| build(t, spec))?;
    for (name, p) in [("unpack", &u), ("config", &c), ("build", &b)] {
        rec.record(name, 0.0, "s", p.seconds());
        rec.record(name, 0.0, "cpu%", 100.0 * p.cpu_share());
    }
    rec.record("total", 0.0, "s", u.seconds() + c.seconds() + b.seconds());
    rec.record("tree", 0.0, "files", spec.tree.files.len() as f64);
    rec.record("tree", 0.0, "bytes", spec.tree.bytes() as f64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{test_target, Collected};

    #[test]
    fn the_tree_is_about_ssh_1_2_26s_size_and_fixed() {
        let tree = Tree::ssh();
        assert!((550..700).contains(&tree.files.len()), "{} files", tree.files.len());
        assert!((4 << 20..7 << 20).contains(&tree.bytes()), "{} bytes", tree.bytes());
        assert!(tree.files.iter().filter(|f| f.size > 64 * KB).count() >= 4, "files over 64 KB (§8.2.1)");
        assert!(tree.files.iter().filter(|f| f.compiled).count() > 250);
        assert_eq!(Tree::ssh(), tree, "the same tree every time");
        let mut paths: Vec<&str> = tree.files.iter().map(|f| f.path.as_str()).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), tree.files.len(), "no path twice");
    }

    #[test]
    fn a_small_run_leaves_the_built_tree() {
        let spec = Spec::quick();
        let mut t = test_target("ffs-async", 256 << 20);
        let mut rec = Collected::default();
        run(&mut t, &spec, &mut rec).expect("ssh");
        for f in &spec.tree.files {
            assert_eq!(t.stat(&root(&f.path)).expect("stat"), Some(f.size), "{} unpacked", f.path);
            if f.compiled {
                assert!(t.stat(&root(&object(&f.path))).expect("stat").is_some(), "{} compiled", f.path);
            }
        }
        for gone in ["conftest.c", "conftest", "conftest.o", "conftest.out"] {
            assert_eq!(t.stat(&root(gone)).expect("stat"), None, "{gone} removed");
        }
        for made in ["Makefile", "config.h", "config.status", "ssh", "sshd", "gmp-2.0.2/libgmp.a"] {
            assert!(t.stat(&root(made)).expect("stat").is_some(), "{made} made");
        }
        let total = rec.get("total", 0.0, "s").expect("total");
        let phases: f64 =
            ["unpack", "config", "build"].iter().map(|p| rec.get(p, 0.0, "s").expect("phase")).sum();
        assert!((total - phases).abs() < 1e-9 && total > 0.0);
        assert!(total * 1e9 >= spec.cpu_ns.iter().sum::<u64>() as f64, "the charged CPU is in the time");

        let mut again = Collected::default();
        run(&mut test_target("ffs-async", 256 << 20), &spec, &mut again).expect("ssh");
        assert_eq!(again.points, rec.points, "the same times again");
    }
}
