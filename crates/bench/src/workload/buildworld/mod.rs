//! The 2002 paper's buildworld benchmark (§4.1, Tables 1–2, Fig. 10): "a
//! copy of the FreeBSD source tree was checked out from a local CVS
//! repository, it was then built using `make buildworld`, then the kernel
//! source code searched with grep and finally the object tree was
//! removed". A proxy: the paper ran the real tools; here their file
//! operations are made on a synthetic tree, and their own CPU is charged
//! as `ssh_build.rs` charges the ssh build's (`Target::compute`).
//!
//! **The tree.** The paper gives no manifest. [`PARTS`] shapes a tree after
//! FreeBSD 4.5's `/usr/src` as its top-level directories divide it:
//! programs one to a directory (`bin`, `sbin`, `usr.bin`, `usr.sbin`,
//! `libexec`, `games`), libraries with a few subdirectories each (`lib`),
//! third-party packages several levels deep (`contrib`) built by small
//! "reach-over" directories elsewhere (`gnu/usr.bin`), the kernel (`sys`,
//! searched but not built), headers (`include`), files processed one for
//! one (`share`: manual pages, locales, fonts) and data (`etc`, `release`,
//! `tools`). The counts and sizes are approximations, not a manifest:
//! about 30,000 files in 1,900 directories, 390 MB, sources of 1–60 KB
//! (120 KB in `contrib` and `sys`) drawn log-uniformly (most small, a few
//! large), drawn once from a fixed seed, so every run and every seed
//! builds the same tree.
//! [`Tree::of`] scales the number of directories of each part (each keeps
//! at least one), not what a directory holds.
//!
//! **Checkout** (`cvs checkout src`): directory by directory, parents
//! first, as cvs walks the repository: the directory and its `CVS`
//! directory (`Root`, `Repository`), each file created and written with a
//! line appended to `CVS/Entries.Log`, then `CVS/Entries` written as
//! `Entries.Backup` and renamed, and the log removed (cvs's
//! `Entries_Close`). The repository is not on the disk under test (the
//! paper does not say where it was): reading it is charged as cvs's CPU.
//!
//! **Build** (`make buildworld`, FreeBSD 4's stages): the cross tools (the
//! first two `contrib` packages, as the compiler and binutils) are built
//! into the world's temporary tree (`obj/src/i386/src/…`); `make
//! includes` copies `include` and the first `sys` directories' headers
//! into `obj/src/i386/usr/include`; then the libraries and then every
//! program are built into `obj/src/…`, mirroring the source tree. A
//! directory's build makes its object directory, reads each source with
//! the headers it includes (up to three of its own, four installed) and
//! writes `.depend`; compiles each source into an object, three for a
//! library (static, profiled, PIC: `.o`, `.po`, `.So`); then archives a
//! library (`lib.a`, `lib_p.a`, `lib.so`, the first two copied into the
//! temporary tree) or links a program (its objects, with an eighth of the
//! first library, as libc, for the static `bin` and `sbin`, and its
//! shared library's symbol table for the rest) and compresses its manual
//! page. Last, `share`'s files are each read and their output written.
//!
//! **Grep** (`find sys | xargs grep`): every directory of `sys` stat'd and
//! every file read whole, in tree order. **Remove** (`rm -r obj`): the
//! object tree depth first, each directory's files unlinked before it is
//! removed.
//!
//! The phases follow each other without a sync, as the paper's commands
//! did (§4.2 synced between runs only).
//!
//! **CPU.** Each tool's CPU is charged in pieces over its steps:
//! [`BUILD_CPU_NS`] for the whole tree, calibrated as the ssh proxy's is,
//! to the paper: it is the time Table 1 gives the build with every
//! optimisation on (2,032.85 s), on the premise that such a build is
//! bound by the compiler; the time a file system adds to it is the result.
//! It is spread in proportion to the bytes compiled (a library's three
//! times), a twentieth to `make depend` and a twentieth to archives,
//! links and manual pages. cvs ([`CVS_FILE_NS`], [`CVS_NS_PER_BYTE`]) and
//! grep ([`GREP_NS_PER_BYTE`]) are estimates.
//!
//! Records `checkout`, `build`, `grep`, `remove` and `total` in seconds
//! (`s`), each phase's CPU share (`cpu%`), the source tree's `files`,
//! `dirs` and `bytes`, and the object tree's `files` and `bytes`.

pub mod tree;

pub use tree::{Kind, Part, Tree, Unit, PARTS};

use super::{append, contents, read_file, Record};
use crate::target::Target;
use std::collections::BTreeMap;
use std::io;
use tree::Entry;

/// The compiler's, archiver's and linker's CPU for the whole tree: Table
/// 1's build with every optimisation on, 2,032.85 s (see the module).
pub const BUILD_CPU_NS: u64 = 2_032_850_000_000;
/// cvs's CPU per file checked out: finding and parsing its RCS file's
/// header and delta tree (estimate).
pub const CVS_FILE_NS: u64 = 1_000_000;
/// cvs's CPU per byte checked out: reading the RCS file (the head
/// revision and the history around it, about three times the file) and
/// expanding keywords, at about 33 MB/s (estimate).
pub const CVS_NS_PER_BYTE: u64 = 30;
/// grep's CPU per byte searched, 100 MB/s (estimate).
pub const GREP_NS_PER_BYTE: u64 = 10;

/// Where the tree is checked out (the paper's `/usr/src`, on a file
/// system of its own, `/usr`).
const SRC: &str = "src";
/// The object tree (`/usr/obj`): the world's objects under `obj/src`.
const OBJ: &str = "obj/src";
/// The world's temporary tree (`WORLDTMP`): cross tools, installed
/// headers and libraries.
const WORLDTMP: &str = "obj/src/i386";
/// The share of libc's archive a statically linked program (`bin`,
/// `sbin`) reads and takes in (estimate).
const STATIC_LIBC_SHARE: u64 = 8;
/// Bytes of libc a dynamically linked program's link reads: the shared
/// library's symbol table (estimate).
const DYNAMIC_LIBC_BYTES: u64 = 64 << 10;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The tree.
    pub tree: Tree,
    /// The build's tool CPU, nanoseconds.
    pub build_cpu_ns: u64,
}

impl Spec {
    /// The tree scaled by `scale`, with the build's CPU scaled by the
    /// bytes it compiles against the full tree's.
    pub fn scaled(scale: f64) -> Spec {
        let tree = Tree::of(PARTS, scale);
        let share = tree.compiled_bytes() as f64 / Tree::full().compiled_bytes().max(1) as f64;
        Spec { build_cpu_ns: (BUILD_CPU_NS as f64 * share) as u64, tree }
    }

    /// The full tree, about FreeBSD 4.5's.
    pub fn paper() -> Spec {
        Spec::scaled(1.0)
    }

    /// A small configuration: a fiftieth.
    pub fn quick() -> Spec {
        Spec::scaled(0.02)
    }
}

fn src(path: &str) -> String {
    format!("{SRC}/{path}")
}

fn write_file(t: &mut Target, path: &str, size: u64, seed: u64) -> io::Result<()> {
    let fd = t.create(path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    t.write(fd, 0, &contents(size as usize, seed))?;
    t.close(fd)
}

/// A line of `CVS/Entries`: `/name/1.12/Tue Jan 22 10:00:00 2002//`.
const ENTRY_LINE: u64 = 48;

/// `cvs checkout src`.
fn checkout(t: &mut Target, tree: &Tree) -> io::Result<()> {
    t.mkdir(SRC)?;
    for (d, dir) in tree.dirs.iter().enumerate() {
        let dir = src(dir);
        t.mkdir(&dir)?;
        let cvs = format!("{dir}/CVS");
        t.mkdir(&cvs)?;
        write_file(t, &format!("{cvs}/Root"), 24, 1)?;
        write_file(t, &format!("{cvs}/Repository"), dir.len() as u64 + 1, 2)?;
        let log = format!("{cvs}/Entries.Log");
        write_file(t, &log, 0, 3)?;
        let mut logged = 0;
        for f in tree.files_in(d) {
            t.compute(CVS_FILE_NS + CVS_NS_PER_BYTE * f.size);
            write_file(t, &format!("{dir}/{}", f.name), f.size, f.size)?;
            append(t, &log, &mut logged, ENTRY_LINE)?;
        }
        let backup = format!("{cvs}/Entries.Backup");
        write_file(t, &backup, logged, 4)?;
        t.rename(&backup, &format!("{cvs}/Entries"))?;
        t.unlink(&log)?;
    }
    Ok(())
}

/// The object tree as the build makes it, for `rm -r`: each directory's
/// files and subdirectories in the order they were made.
#[derive(Debug, Default)]
struct Objects {
    dirs: BTreeMap<String, (Vec<String>, Vec<String>)>,
    files: u64,
    bytes: u64,
}

impl Objects {
    /// `mkdir -p`: makes `path` and its missing parents.
    fn mkdir_p(&mut self, t: &mut Target, path: &str) -> io::Result<()> {
        let mut at = String::new();
        for part in path.split('/') {
            let parent = at.clone();
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            if self.dirs.contains_key(&at) {
                continue;
            }
            t.mkdir(&at)?;
            self.dirs.insert(at.clone(), (Vec::new(), Vec::new()));
            if let Some((subdirs, _)) = self.dirs.get_mut(&parent) {
                subdirs.push(at.clone());
            }
        }
        Ok(())
    }

    /// Writes a new file `name` of `size` in `dir` (made already).
    fn write(&mut self, t: &mut Target, dir: &str, name: &str, size: u64) -> io::Result<()> {
        write_file(t, &format!("{dir}/{name}"), size, size ^ self.files)?;
        if let Some((_, files)) = self.dirs.get_mut(dir) {
            files.push(name.to_string());
        }
        self.files += 1;
        self.bytes += size;
        Ok(())
    }

    /// `rm -r root`: depth first, a directory's files and then its
    /// subdirectories before it.
    fn remove(&self, t: &mut Target, root: &str) -> io::Result<()> {
        let Some((subdirs, files)) = self.dirs.get(root) else { return Ok(()) };
        for f in files {
            t.unlink(&format!("{root}/{f}"))?;
        }
        for d in subdirs {
            self.remove(t, d)?;
        }
        t.rmdir(root)
    }
}

/// An object's bytes for a source of `size` bytes.
fn object_size(size: u64) -> u64 {
    (size * 7 / 10).max(512)
}

/// The headers the `at`th source of a unit includes: up to three of the
/// unit's own (`own`) and four installed ones, chosen by its place.
fn includes(own: &[(String, u64)], installed: &[(String, u64)], at: usize) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> =
        (0..own.len().min(3)).map(|k| own[(at + k) % own.len()].clone()).collect();
    if !installed.is_empty() {
        out.extend((0..4).map(|k| installed[(at * 7 + k * 13) % installed.len()].clone()));
    }
    out
}

/// The build's CPU, spread over its steps.
struct BuildCpu {
    /// Per byte compiled.
    compile_per_byte: f64,
    /// Per byte read by `make depend`.
    depend_per_byte: f64,
    /// Per archive, link or manual page.
    per_link: u64,
}

/// Builds `unit` into `root`: the world's object tree, or the temporary
/// tree for a cross tool, which links against the host's libraries (on
/// the system disk), not the world's.
fn build_unit(
    t: &mut Target,
    tree: &Tree,
    unit: &Unit,
    root: &str,
    installed: &[(String, u64)],
    cpu: &BuildCpu,
    objects: &mut Objects,
) -> io::Result<()> {
    let dir = format!("{root}/{}", unit.obj);
    objects.mkdir_p(t, &dir)?;
    let files: Vec<&Entry> = tree.files_of(unit).collect();
    // make reads the Makefile, first in the unit's own directory.
    if let Some(m) = files.iter().find(|f| f.name == "Makefile") {
        read_file(t, &src(&tree.path(m)), m.size)?;
    }
    let sources: Vec<&Entry> = files.iter().copied().filter(|f| f.is_source()).collect();
    let own: Vec<(String, u64)> =
        files.iter().filter(|f| f.is_header()).map(|f| (src(&tree.path(f)), f.size)).collect();
    // make depend: each source through the preprocessor.
    let mut depend = 0;
    for (at, f) in sources.iter().enumerate() {
        read_file(t, &src(&tree.path(f)), f.size)?;
        let headers = includes(&own, installed, at);
        for (path, size) in &headers {
            read_file(t, path, *size)?;
        }
        t.compute((cpu.depend_per_byte * f.size as f64) as u64);
        depend += 60 * (headers.len() as u64 + 1);
    }
    if !sources.is_empty() {
        objects.write(t, &dir, ".depend", depend)?;
    }
    let variants: &[&str] = if unit.library { &["o", "po", "So"] } else { &["o"] };
    let mut built: Vec<(String, u64)> = Vec::new();
    for (at, f) in sources.iter().enumerate() {
        let stem = f.name.trim_end_matches(".c");
        for ext in variants {
            read_file(t, &src(&tree.path(f)), f.size)?;
            for (path, size) in includes(&own, installed, at) {
                read_file(t, &path, size)?;
            }
            t.compute((cpu.compile_per_byte * f.size as f64) as u64);
            let name = format!("{stem}.{ext}");
            objects.write(t, &dir, &name, object_size(f.size))?;
            built.push((name, object_size(f.size)));
        }
    }
    let name = unit.obj.rsplit('/').next().unwrap_or("a");
    if unit.library {
        let temporary = format!("{WORLDTMP}/usr/lib");
        objects.mkdir_p(t, &temporary)?;
        for (ext, archive) in
            [("o", format!("lib{name}.a")), ("po", format!("lib{name}_p.a")), ("So", format!("lib{name}.so"))]
        {
            let mut bytes = 0;
            for (o, size) in built.iter().filter(|(o, _)| o.ends_with(&format!(".{ext}"))) {
                read_file(t, &format!("{dir}/{o}"), *size)?;
                bytes += size;
            }
            t.compute(cpu.per_link);
            objects.write(t, &dir, &archive, bytes + 1_024)?;
            if ext != "po" {
                read_file(t, &format!("{dir}/{archive}"), bytes + 1_024)?;
                objects.write(t, &temporary, &archive, bytes + 1_024)?;
            }
        }
        return Ok(());
    }
    let mut bytes = 0;
    for (o, size) in &built {
        read_file(t, &format!("{dir}/{o}"), *size)?;
        bytes += size;
    }
    // The world's programs link against the world's libc: /bin and /sbin
    // statically, the rest dynamically. A cross tool links against the
    // host's, on the system disk.
    let cross_tool = root != OBJ;
    if let Some((libc, size)) = libc(tree).filter(|_| !cross_tool) {
        if unit.obj.starts_with("bin/") || unit.obj.starts_with("sbin/") {
            read_file(t, &libc, size / STATIC_LIBC_SHARE)?;
            bytes += size / STATIC_LIBC_SHARE;
        } else {
            read_file(t, &libc, size.min(DYNAMIC_LIBC_BYTES))?;
        }
    }
    t.compute(cpu.per_link);
    objects.write(t, &dir, name, bytes.max(4_096))?;
    for m in files.iter().filter(|f| f.is_manual()) {
        read_file(t, &src(&tree.path(m)), m.size)?;
        t.compute(cpu.per_link);
        objects.write(t, &dir, &format!("{}.gz", m.name), m.size * 2 / 5)?;
    }
    Ok(())
}

/// The first library's static archive in the temporary tree (programs'
/// libc), and its bytes, if there is a library.
fn libc(tree: &Tree) -> Option<(String, u64)> {
    let unit = tree.units.iter().find(|u| u.library)?;
    let name = unit.obj.rsplit('/').next()?;
    let sources = tree.files_of(unit).filter(|f| f.is_source());
    let bytes: u64 = sources.map(|f| object_size(f.size)).sum::<u64>() + 1_024;
    Some((format!("{WORLDTMP}/usr/lib/lib{name}.a"), bytes))
}

/// `make buildworld`.
fn build(t: &mut Target, spec: &Spec, objects: &mut Objects) -> io::Result<()> {
    let tree = &spec.tree;
    let compiled = tree.compiled_bytes().max(1) as f64;
    let sources: u64 = tree.files.iter().filter(|f| f.is_source()).map(|f| f.size).sum();
    let shared: usize = tree.shared.iter().map(|&d| tree.files_in(d).len()).sum();
    let links = tree.units.len() + tree.files.iter().filter(|f| f.is_manual()).count() + shared;
    let cpu = BuildCpu {
        compile_per_byte: 0.9 * spec.build_cpu_ns as f64 / compiled,
        depend_per_byte: 0.05 * spec.build_cpu_ns as f64 / sources.max(1) as f64,
        per_link: (0.05 * spec.build_cpu_ns as f64 / links.max(1) as f64) as u64,
    };
    // The cross tools, built into the temporary tree first.
    let tools = format!("{WORLDTMP}/{SRC}");
    for unit in tree.units.iter().filter(|u| u.cross_tool) {
        build_unit(t, tree, unit, &tools, &[], &cpu, objects)?;
    }
    // make includes.
    let include = format!("{WORLDTMP}/usr/include");
    let mut installed = Vec::new();
    for &i in &tree.installed_headers {
        let f = &tree.files[i];
        let from = &tree.dirs[f.dir];
        let dir = format!("{include}/{}", from.strip_prefix("include/").unwrap_or(from));
        objects.mkdir_p(t, &dir)?;
        read_file(t, &src(&tree.path(f)), f.size)?;
        objects.write(t, &dir, &f.name, f.size)?;
        installed.push((format!("{dir}/{}", f.name), f.size));
    }
    for unit in &tree.units {
        build_unit(t, tree, unit, OBJ, &installed, &cpu, objects)?;
    }
    // share: each file read and its output written, in its directory's
    // object directory.
    for &d in &tree.shared {
        let dir = format!("{OBJ}/{}", tree.dirs[d]);
        objects.mkdir_p(t, &dir)?;
        for f in tree.files_in(d) {
            read_file(t, &src(&tree.path(f)), f.size)?;
            t.compute(cpu.per_link);
            objects.write(t, &dir, &format!("{}.gz", f.name), f.size * 2 / 5)?;
        }
    }
    Ok(())
}

/// `find src/sys | xargs grep`.
fn grep(t: &mut Target, tree: &Tree) -> io::Result<()> {
    for &d in &tree.kernel {
        t.stat(&src(&tree.dirs[d]))?;
        for f in tree.files_in(d) {
            t.compute(GREP_NS_PER_BYTE * f.size);
            read_file(t, &src(&tree.path(f)), f.size)?;
        }
    }
    Ok(())
}

/// Runs the benchmark on `t`.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    let tree = &spec.tree;
    t.sync()?;
    let mut objects = Objects::default();
    let (_, c) = t.phase(|t| checkout(t, tree))?;
    let (_, b) = t.phase(|t| build(t, spec, &mut objects))?;
    let (_, g) = t.phase(|t| grep(t, tree))?;
    let (_, r) = t.phase(|t| objects.remove(t, "obj"))?;
    let phases = [("checkout", &c), ("build", &b), ("grep", &g), ("remove", &r)];
    for (name, p) in phases {
        rec.record(name, 0.0, "s", p.seconds());
        rec.record(name, 0.0, "cpu%", 100.0 * p.cpu_share());
    }
    rec.record("total", 0.0, "s", phases.iter().map(|(_, p)| p.seconds()).sum());
    rec.record("tree", 0.0, "files", tree.files.len() as f64);
    rec.record("tree", 0.0, "dirs", tree.dirs.len() as f64);
    rec.record("tree", 0.0, "bytes", tree.bytes() as f64);
    rec.record("objects", 0.0, "files", objects.files as f64);
    rec.record("objects", 0.0, "bytes", objects.bytes as f64);
    t.sync()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{test_target, Collected};

    #[test]
    fn a_small_run_repeats_and_leaves_the_checked_out_tree_only() {
        let spec = Spec::quick();
        let mut t = test_target("ffs-softdep-dirpref", 256 << 20);
        let mut rec = Collected::default();
        run(&mut t, &spec, &mut rec).expect("buildworld");
        let tree = &spec.tree;
        for f in &tree.files {
            assert_eq!(
                t.stat(&src(&tree.path(f))).expect("stat"),
                Some(f.size),
                "{} checked out",
                tree.path(f)
            );
        }
        let entries = format!("{}/CVS/Entries", src(&tree.dirs[0]));
        assert!(t.stat(&entries).expect("stat").is_some(), "{entries}");
        assert_eq!(t.stat(&format!("{}/CVS/Entries.Log", src(&tree.dirs[0]))).expect("stat"), None);
        assert_eq!(t.stat("obj").expect("stat"), None, "the object tree removed");
        let objects = rec.get("objects", 0.0, "files").expect("objects");
        assert!(objects > tree.files.iter().filter(|f| f.is_source()).count() as f64, "{objects} objects");
        let total = rec.get("total", 0.0, "s").expect("total");
        let phases: f64 = ["checkout", "build", "grep", "remove"]
            .iter()
            .map(|p| rec.get(p, 0.0, "s").expect("phase"))
            .sum();
        assert!((total - phases).abs() < 1e-9 && total > 0.0);
        assert!(
            rec.get("build", 0.0, "s").expect("build") * 1e9 >= spec.build_cpu_ns as f64,
            "the CPU is in it"
        );

        let mut again = Collected::default();
        run(&mut test_target("ffs-softdep-dirpref", 256 << 20), &spec, &mut again).expect("buildworld");
        assert_eq!(again.points, rec.points, "the same operations, the same times");
    }
}
