//! The layers of docs/ARCHITECTURE.md, enforced: a lower layer never names a
//! higher one. Module privacy cannot express "lfs may not use ufs" inside one
//! crate, so this test reads the sources, finds every path into the crate
//! that each file names (`use_paths`: `use` trees of any shape and paths
//! written inline, resolved from the crate root) and fails on a forbidden one.
//! From the same paths it finds files that import each other, in every
//! crate of the workspace, and fails on any cycle but the one allowed.

mod use_paths;

use std::fs;
use std::path::{Path, PathBuf};

/// Each layer and the top-level modules of this crate it must never name.
const RULES: &[(&str, &[&str])] = &[
    ("format", &["cache", "storage", "ufs", "lfs", "ffs", "bmap"]),
    ("cache", &["storage", "ufs", "lfs", "ffs", "bmap"]),
    ("bmap", &["cache", "storage", "ufs", "lfs", "ffs"]),
    ("lfs", &["ufs", "ffs"]),
    ("ffs", &["ufs", "lfs"]),
    ("ufs", &["lfs", "ffs", "cache", "bmap"]),
    ("storage", &["ufs", "lfs", "ffs", "cache", "bmap"]),
    ("time", &["format", "cache", "storage", "ufs", "lfs", "ffs", "bmap"]),
    ("durable", &["format", "cache", "storage", "ufs", "lfs", "ffs", "bmap", "time"]),
    ("memory", &["format", "cache", "storage", "ufs", "lfs", "ffs", "bmap", "time", "durable"]),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources_of(layer: &str) -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join(layer), &mut files);
    let single = src.join(format!("{layer}.rs"));
    if single.exists() {
        files.push(single);
    }
    files
}

/// The forbidden paths that `text`, the source of `file` in `layer`, names.
fn violations_in(layer: &str, forbidden: &[&str], file: &Path, text: &str) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let module = use_paths::module_of(file.strip_prefix(&src).unwrap_or(file));
    use_paths::crate_paths(text, &module)
        .into_iter()
        .filter(|named| named.path.first().is_some_and(|top| forbidden.contains(&top.as_str())))
        .map(|named| {
            format!("{}:{}: {layer} names crate::{}", file.display(), named.line, named.path.join("::"))
        })
        .collect()
}

#[test]
fn no_layer_names_a_layer_above_it() {
    let mut violations = Vec::new();
    for (layer, forbidden) in RULES {
        let files = sources_of(layer);
        assert!(!files.is_empty(), "layer {layer} has no sources: the rule table is out of date");
        for file in files {
            let text = fs::read_to_string(&file).expect("read source");
            violations.extend(violations_in(layer, forbidden, &file, &text));
        }
    }
    assert!(violations.is_empty(), "layering violations:\n{}", violations.join("\n"));
}

/// The check itself can fail: a forbidden import hidden in braces (which a
/// search for the text `crate::ufs` never found) is reported.
#[test]
fn a_forbidden_import_in_braces_is_a_violation() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lfs/example.rs");
    let found = violations_in("lfs", &["ufs"], &file, "use crate::{lfs, ufs::FileSystem};\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("lfs names crate::ufs::FileSystem"), "{found:?}");
}

#[test]
fn only_the_fuse_adapter_depends_on_fuser() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for entry in fs::read_dir(&crates).expect("crates directory").flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = fs::read_to_string(&manifest) else { continue };
        let is_fuse = entry.file_name() == "fuse";
        let names_fuser = text.lines().any(|l| l.trim_start().starts_with("fuser"));
        assert!(is_fuse || !names_fuser, "{} depends on fuser", manifest.display());
    }
}

/// The module files of `src` and, for each, the other module files the
/// paths it names (tests left out) reach: the module a path starts in is
/// the longest prefix of it that is a file. A module and its ancestors are
/// not edges (a parent declares its children; a child names its parent's
/// items by `super`).
fn file_graph(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: Vec<(String, PathBuf)> = files
        .into_iter()
        .filter(|f| {
            !f.file_name().is_some_and(|n| n == "tests.rs" || n.to_string_lossy().ends_with("_tests.rs"))
        })
        .map(|f| (use_paths::module_of(f.strip_prefix(src).unwrap_or(&f)).join("::"), f))
        .collect();
    let known: std::collections::BTreeSet<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
    let related =
        |a: &str, b: &str| a == b || b.starts_with(&format!("{a}::")) || a.starts_with(&format!("{b}::"));
    let mut graph = std::collections::BTreeMap::new();
    for (module, file) in &modules {
        let text = fs::read_to_string(file).expect("read source");
        // A file's own tests may reach anything: they are not its structure.
        let text = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or(&text);
        let here: Vec<String> =
            if module.is_empty() { Vec::new() } else { module.split("::").map(String::from).collect() };
        let mut edges = std::collections::BTreeSet::new();
        for named in use_paths::crate_paths(text, &here) {
            let target = (0..=named.path.len())
                .rev()
                .map(|n| named.path[..n].join("::"))
                .find(|p| known.contains(p.as_str()));
            if let Some(target) = target {
                if !target.is_empty() && !related(module, &target) {
                    edges.insert(target);
                }
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// The strongly connected sets of more than one module (Tarjan's
/// algorithm), each sorted.
fn cycles(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        index: std::collections::HashMap<&'g str, usize>,
        low: std::collections::HashMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, v: &'g str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for next in w.graph.get(v).into_iter().flatten() {
            let next = next.as_str();
            if !w.index.contains_key(next) {
                visit(w, next);
                let low = w.low[v].min(w.low[next]);
                w.low.insert(v, low);
            } else if w.stack.contains(&next) {
                let low = w.low[v].min(w.index[next]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut set = Vec::new();
            while let Some(top) = w.stack.pop() {
                set.push(top.to_string());
                if top == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                w.found.push(set);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: Default::default(),
        low: Default::default(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

#[test]
fn no_import_cycle_between_files() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for entry in fs::read_dir(&crates).expect("crates directory").flatten() {
        let src = entry.path().join("src");
        if !src.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        found.extend(cycles(&file_graph(&src)).into_iter().map(|set| format!("{name}: {set:?}")));
    }
    assert!(
        found.is_empty(),
        "files that import each other (split the types they share into a file of their own):\n{}",
        found.join("\n")
    );
}

/// The cycle check can fail: three modules naming each other round are one
/// cycle, and a module naming its parent is none.
#[test]
fn a_cycle_of_three_is_found_and_a_child_naming_its_parent_is_not() {
    let graph = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("c::d", &[])]
        .into_iter()
        .map(|(m, e)| (m.to_string(), e.iter().map(|s| s.to_string()).collect()))
        .collect();
    assert_eq!(cycles(&graph), vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
}
