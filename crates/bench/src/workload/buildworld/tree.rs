//! The source tree the buildworld proxy checks out and builds: its parts
//! ([`PARTS`], FreeBSD 4.5's `/usr/src` approximated), the files drawn
//! for each directory, and what the build makes of them ([`Unit`]). See
//! the parent module for the shape and where it comes from.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Range;

/// The seed the tree is drawn from (FreeBSD 4.5's number), fixed: the
/// repository is the same whatever the run's seed.
const TREE_SEED: u64 = 45;

/// What a part of the tree holds, and what the build does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A program per directory: sources, a Makefile, a manual page.
    Program,
    /// A library per directory (and its subdirectories).
    Library,
    /// Third-party packages, built by the [`Kind::Reachover`] part.
    Contrib,
    /// A directory per `contrib` package with only a Makefile and a
    /// manual page: it builds the package's sources into its own object
    /// directory.
    Reachover,
    /// The kernel: searched by the grep phase, not built by buildworld.
    Kernel,
    /// Headers, installed by `make includes`.
    Headers,
    /// Files the build turns into outputs one for one: manual pages
    /// compressed, locale, font and keyboard-map sources compiled.
    Share,
    /// Anything else, not built: configuration, release scripts, tools.
    Data,
}

/// One top-level part of the tree: `groups` directories below `path`,
/// each with up to `sub` subdirectories, each directory holding
/// `files.0..=files.1` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// Below the tree's root.
    pub path: &'static str,
    /// Directories directly below it (at the full scale).
    pub groups: u32,
    /// Most subdirectories of each.
    pub sub: u32,
    /// Fewest and most files a directory holds.
    pub files: (u32, u32),
    /// What it is.
    pub kind: Kind,
}

const fn part(path: &'static str, groups: u32, sub: u32, files: (u32, u32), kind: Kind) -> Part {
    Part { path, groups, sub, files, kind }
}

/// FreeBSD 4.5's `/usr/src`, approximated (see the module), in cvs's
/// alphabetical order. `gnu/usr.bin` has a directory per `contrib`
/// package.
pub const PARTS: &[Part] = &[
    part("bin", 38, 0, (3, 9), Kind::Program),
    part("contrib", 40, 8, (6, 40), Kind::Contrib),
    part("etc", 12, 2, (4, 30), Kind::Data),
    part("games", 40, 0, (3, 12), Kind::Program),
    part("gnu/usr.bin", 40, 0, (1, 3), Kind::Reachover),
    part("include", 6, 2, (20, 80), Kind::Headers),
    part("lib", 48, 6, (6, 50), Kind::Library),
    part("libexec", 30, 0, (3, 10), Kind::Program),
    part("release", 20, 2, (3, 15), Kind::Data),
    part("sbin", 70, 0, (3, 12), Kind::Program),
    part("share", 60, 6, (3, 30), Kind::Share),
    part("sys", 60, 8, (4, 40), Kind::Kernel),
    part("tools", 20, 2, (2, 10), Kind::Data),
    part("usr.bin", 230, 0, (3, 12), Kind::Program),
    part("usr.sbin", 180, 2, (3, 14), Kind::Program),
];

/// The `sys` directories whose headers `make includes` installs (as
/// `sys/sys`, `sys/vm`, `sys/net`, `sys/netinet`).
const INSTALLED_SYS_DIRS: usize = 4;
/// The `contrib` packages built first as cross tools (the compiler and
/// binutils).
const CROSS_TOOLS: usize = 2;

/// One file of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its directory: an index into [`Tree::dirs`].
    pub dir: usize,
    /// Its name.
    pub name: String,
    /// Bytes.
    pub size: u64,
}

impl Entry {
    pub(super) fn is_source(&self) -> bool {
        self.name.ends_with(".c")
    }

    pub(super) fn is_header(&self) -> bool {
        self.name.ends_with(".h")
    }

    pub(super) fn is_manual(&self) -> bool {
        self.name.ends_with(".1")
    }
}

/// What one directory of the build makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Its object directory, below the object tree's root: the path of
    /// the source directory whose Makefile it is.
    pub obj: String,
    /// The directories whose files it builds (indices into
    /// [`Tree::dirs`]).
    pub dirs: Vec<usize>,
    /// A library (three objects a source, archives) or a program.
    pub library: bool,
    /// Built first, as a cross tool, as well as with the world.
    pub cross_tool: bool,
}

/// The tree: its directories (parents first), files and what the build
/// makes of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Directories below the tree's root, parents first.
    pub dirs: Vec<String>,
    /// Files, directory by directory in the order of `dirs`.
    pub files: Vec<Entry>,
    /// What the build makes, in the order of the tree.
    pub units: Vec<Unit>,
    /// The directories whose files the build processes one for one
    /// (`share`), in the order of the tree.
    pub shared: Vec<usize>,
    /// The kernel's directories, searched by the grep phase.
    pub kernel: Vec<usize>,
    /// The headers `make includes` installs (indices into `files`).
    pub installed_headers: Vec<usize>,
    /// Each directory's files: a range of `files` (a directory's files
    /// follow each other).
    spans: Vec<Range<usize>>,
}

/// A size drawn log-uniformly from `low..=high`: most files small, a few
/// large, as in a source tree.
fn size(rng: &mut SmallRng, low: u64, high: u64) -> u64 {
    let (a, b) = ((low as f64).ln(), (high as f64).ln());
    rng.gen_range(a..=b).exp().round() as u64
}

/// A file of `kind`'s directory: its name and size, by its place `i`
/// among the directory's `n` files. `prefix` keeps the names of a
/// subdirectory's sources apart from its unit's others: they are compiled
/// into one object directory.
fn file(rng: &mut SmallRng, kind: Kind, prefix: &str, i: u32, n: u32) -> (String, u64) {
    let (name, low, high) = match kind {
        Kind::Program | Kind::Library | Kind::Reachover if i == 0 => ("Makefile".to_string(), 200, 2_000),
        Kind::Program | Kind::Reachover if i == n - 1 => (format!("{prefix}m{i}.1"), 1_000, 20_000),
        Kind::Reachover | Kind::Share | Kind::Data => (format!("t{i}"), 500, 40_000),
        Kind::Program | Kind::Library if i % 5 == 4 => (format!("{prefix}f{i}.h"), 300, 20_000),
        Kind::Program | Kind::Library => (format!("{prefix}f{i}.c"), 1_000, 60_000),
        Kind::Contrib | Kind::Kernel => match i % 7 {
            0 | 3 => (format!("{prefix}f{i}.h"), 300, 20_000),
            6 => (format!("t{i}"), 500, 40_000),
            _ => (format!("{prefix}f{i}.c"), 1_000, 120_000),
        },
        Kind::Headers => (format!("{prefix}f{i}.h"), 300, 20_000),
    };
    (name, size(rng, low, high))
}

impl Tree {
    /// The tree of [`PARTS`] at the full scale: about FreeBSD 4.5's.
    pub fn full() -> Tree {
        Tree::of(PARTS, 1.0)
    }

    /// A tree of `parts` with each part's directories scaled by `scale`
    /// (at least one each).
    pub fn of(parts: &[Part], scale: f64) -> Tree {
        let mut rng = SmallRng::seed_from_u64(TREE_SEED);
        let mut tree = Tree {
            dirs: Vec::new(),
            files: Vec::new(),
            units: Vec::new(),
            shared: Vec::new(),
            kernel: Vec::new(),
            installed_headers: Vec::new(),
            spans: Vec::new(),
        };
        let scaled = |p: &Part| ((p.groups as f64 * scale).round() as u32).max(1);
        let packages = parts.iter().find(|p| p.kind == Kind::Contrib).map(scaled).unwrap_or(0);
        let mut contrib: Vec<Vec<usize>> = Vec::new();
        let mut reachovers: Vec<String> = Vec::new();
        for p in parts {
            tree.add_path(p.path);
            let groups = if p.kind == Kind::Reachover { packages } else { scaled(p) };
            for g in 0..groups {
                let top = format!("{}/g{g}", p.path);
                let mut dirs = vec![tree.add_dir(&top, "", p, &mut rng)];
                for s in 0..rng.gen_range(0..=p.sub) {
                    dirs.push(tree.add_dir(&format!("{top}/s{s}"), &format!("s{s}"), p, &mut rng));
                }
                match p.kind {
                    Kind::Program | Kind::Library => tree.units.push(Unit {
                        obj: top,
                        dirs,
                        library: p.kind == Kind::Library,
                        cross_tool: false,
                    }),
                    Kind::Contrib => contrib.push(dirs),
                    Kind::Reachover => reachovers.push(top),
                    Kind::Kernel => {
                        if (g as usize) < INSTALLED_SYS_DIRS {
                            tree.install_headers(dirs[0]);
                        }
                        tree.kernel.extend(dirs);
                    }
                    Kind::Headers => dirs.iter().for_each(|&d| tree.install_headers(d)),
                    Kind::Share => tree.shared.extend(dirs),
                    Kind::Data => {}
                }
            }
        }
        // Each reach-over directory builds its package's sources.
        for (k, (obj, dirs)) in reachovers.into_iter().zip(contrib).enumerate() {
            tree.units.push(Unit { obj, dirs, library: false, cross_tool: k < CROSS_TOOLS });
        }
        // The libraries first (buildworld's `libraries` stage), then the
        // rest in the order of the tree.
        tree.units.sort_by_key(|u| !u.library);
        tree
    }

    /// Adds `path`'s missing ancestors and itself, with no files.
    fn add_path(&mut self, path: &str) {
        let mut at = String::new();
        for part in path.split('/') {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            if !self.dirs.contains(&at) {
                self.dirs.push(at.clone());
                self.spans.push(self.files.len()..self.files.len());
            }
        }
    }

    /// Adds directory `path` of part `p` with its files, their names
    /// starting with `prefix`.
    fn add_dir(&mut self, path: &str, prefix: &str, p: &Part, rng: &mut SmallRng) -> usize {
        let dir = self.dirs.len();
        self.dirs.push(path.to_string());
        let n = rng.gen_range(p.files.0..=p.files.1);
        let first = self.files.len();
        for i in 0..n {
            let (name, size) = file(rng, p.kind, prefix, i, n);
            self.files.push(Entry { dir, name, size });
        }
        self.spans.push(first..self.files.len());
        dir
    }

    /// Marks the headers of `dir` as installed by `make includes`.
    fn install_headers(&mut self, dir: usize) {
        let span = self.spans[dir].clone();
        self.installed_headers.extend(span.filter(|&i| self.files[i].is_header()));
    }

    /// Bytes of all the files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The files of directory `dir`.
    pub(super) fn files_in(&self, dir: usize) -> &[Entry] {
        &self.files[self.spans[dir].clone()]
    }

    /// The files of `unit`'s directories.
    pub(super) fn files_of<'a>(&'a self, unit: &'a Unit) -> impl Iterator<Item = &'a Entry> + 'a {
        unit.dirs.iter().flat_map(|&d| self.files_in(d))
    }

    /// The path of `f` below the tree's root.
    pub(super) fn path(&self, f: &Entry) -> String {
        format!("{}/{}", self.dirs[f.dir], f.name)
    }

    /// Bytes the build compiles: each source once a build of its unit,
    /// three times in a library, and the cross tools' twice.
    pub fn compiled_bytes(&self) -> u64 {
        self.units
            .iter()
            .map(|u| {
                let bytes: u64 = self.files_of(u).filter(|f| f.is_source()).map(|f| f.size).sum();
                bytes * if u.library { 3 } else { 1 } * if u.cross_tool { 2 } else { 1 }
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_tree_is_about_freebsd_4_5s_and_fixed() {
        let tree = Tree::full();
        let (files, dirs, mb) = (tree.files.len(), tree.dirs.len(), tree.bytes() >> 20);
        assert!((22_000..34_000).contains(&files), "{files} files");
        assert!((1_500..2_500).contains(&dirs), "{dirs} directories");
        assert!((200..400).contains(&mb), "{mb} MB");
        assert_eq!(Tree::full(), tree, "the same tree every time");
        let mut paths: Vec<String> = tree.files.iter().map(|f| tree.path(f)).collect();
        paths.extend(tree.dirs.iter().cloned());
        let all = paths.len();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), all, "no path twice");
        for (d, dir) in tree.dirs.iter().enumerate() {
            if let Some((parent, _)) = dir.rsplit_once('/') {
                let at = tree.dirs.iter().position(|p| p == parent).expect("a parent");
                assert!(at < d, "{parent} before {dir}");
            }
        }
        let libraries = tree.units.iter().take_while(|u| u.library).count();
        assert!(libraries > 0 && tree.units[libraries..].iter().all(|u| !u.library), "libraries first");
        assert_eq!(tree.units.iter().filter(|u| u.cross_tool).count(), CROSS_TOOLS);
        assert!(tree.units.iter().filter(|u| u.dirs.len() > 1).count() > 10, "units a few levels deep");
        assert!(!tree.kernel.is_empty() && !tree.installed_headers.is_empty());
        let smaller = Tree::of(PARTS, 0.1);
        assert!(
            smaller.files.len() * 6 < files && smaller.files.len() * 20 > files,
            "{}",
            smaller.files.len()
        );
    }
}
