//! The layers of docs/ARCHITECTURE.md, enforced: a lower layer never names a
//! higher one. Module privacy cannot express "lfs may not use ufs" inside one
//! crate, so this test reads the sources, finds every path into the crate
//! that each file names (`use_paths`: `use` trees of any shape and paths
//! written inline, resolved from the crate root) and fails on a forbidden one.

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
