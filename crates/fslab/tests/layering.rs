//! The layers of ARCHITECTURE.md, enforced: a lower layer never names a
//! higher one. Module privacy cannot express "lfs may not use ufs" inside one
//! crate, so this test reads the sources and fails on a forbidden path.

use std::fs;
use std::path::{Path, PathBuf};

/// Each layer and the modules of this crate it must never name.
const RULES: &[(&str, &[&str])] = &[
    ("format", &["crate::cache", "crate::storage", "crate::ufs", "crate::lfs", "crate::ffs"]),
    ("cache", &["crate::storage", "crate::ufs", "crate::lfs", "crate::ffs"]),
    ("lfs", &["crate::ufs", "crate::ffs"]),
    ("ffs", &["crate::ufs", "crate::lfs"]),
    ("ufs", &["crate::lfs", "crate::ffs", "crate::cache"]),
    ("storage", &["crate::ufs", "crate::lfs", "crate::ffs", "crate::cache"]),
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

#[test]
fn no_layer_names_a_layer_above_it() {
    let mut violations = Vec::new();
    for (layer, forbidden) in RULES {
        let files = sources_of(layer);
        assert!(!files.is_empty(), "layer {layer} has no sources: the rule table is out of date");
        for file in files {
            let text = fs::read_to_string(&file).expect("read source");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for path in *forbidden {
                    if code.contains(path) {
                        violations.push(format!("{}:{}: {layer} names {path}", file.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(violations.is_empty(), "layering violations:\n{}", violations.join("\n"));
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
