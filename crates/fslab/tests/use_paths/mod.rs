//! The paths into this crate that a source file names, for the layering
//! test: every `use` tree (nested braces, `self`, `super::super`, renames,
//! `pub use`, statements over several lines) and every path written inline
//! (`crate::lfs::Lfs::mount(..)`), each resolved against the module the
//! file (and any inline `mod` block) defines, to a path from the crate root.
//!
//! A small tokenizer that knows Rust's comments and literals, so that a
//! path inside a string or a comment names nothing; no dependency.

use std::collections::HashMap;

/// A path from the crate root, by segment: `crate::lfs::Lfs` is
/// `["lfs", "Lfs"]`, the crate root itself `[]`.
pub type CratePath = Vec<String>;

/// One path a file names, and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub path: CratePath,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// Splits Rust source into identifiers, `::` and single punctuation,
/// dropping whitespace, comments (nested block comments too) and the
/// contents of string, byte-string, raw-string and character literals.
fn tokenize(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let newlines = |from: usize, to: usize| b[from..to].iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += newlines(start, i);
        } else if let Some(end) = raw_string_end(b, i) {
            line += newlines(start, end);
            i = end;
        } else if c == b'"' || (c == b'b' && b.get(i + 1) == Some(&b'"')) {
            i += if c == b'b' { 2 } else { 1 };
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            line += newlines(start, i.min(b.len()));
        } else if c == b'\'' || (c == b'b' && b.get(i + 1) == Some(&b'\'')) {
            i = char_literal_end(src, i).unwrap_or(i + 1);
        } else if c == b'_' || c.is_ascii_alphabetic() {
            // `r#ident` is the identifier `ident`.
            if b[i..].starts_with(b"r#") {
                i += 2;
            }
            let word = i;
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(src[word..i].to_string()), line });
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
        } else if b[i..].starts_with(b"::") {
            out.push(Token { tok: Tok::PathSep, line });
            i += 2;
        } else {
            let ch = src.get(i..).and_then(|s| s.chars().next()).unwrap_or(' ');
            out.push(Token { tok: Tok::Punct(ch), line });
            i += ch.len_utf8();
        }
    }
    out
}

/// The end of a raw (byte) string literal starting at `i`, if one does.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
    while j < b.len() {
        if b[j..].starts_with(&close) {
            return Some(j + close.len());
        }
        j += 1;
    }
    Some(b.len())
}

/// The end of a character literal at `i` (`'a'`, `'\n'`, `b'x'`,
/// `'\u{1F600}'`); `None` for a lifetime or label (`'a`), whose quote is
/// then skipped and whose name becomes an identifier.
fn char_literal_end(src: &str, i: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut j = i + if b[i] == b'b' { 2 } else { 1 };
    if b.get(j) == Some(&b'\\') {
        j += 2;
        while j < b.len() && b[j] != b'\'' && b[j] != b'\n' {
            j += 1;
        }
        return (b.get(j) == Some(&b'\'')).then_some(j + 1);
    }
    let len = src.get(j..)?.chars().next()?.len_utf8();
    (b.get(j + len) == Some(&b'\'')).then_some(j + len + 1)
}

/// The module a source file defines, from its path under `src/`:
/// `lfs/bmap.rs` is `["lfs", "bmap"]`, `lfs/mod.rs` and `lfs.rs` are
/// `["lfs"]`, `lib.rs` is the root.
pub fn module_of(relative: &std::path::Path) -> CratePath {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
        if stem != "mod" && stem != "lib" && stem != "main" {
            parts.push(stem);
        }
    }
    parts
}

/// Resolves a path as written in module `module` to a path from the crate
/// root; `None` for a path that does not start inside this crate
/// (`std::…`, another crate, a local name) or climbs above the root.
fn resolve(
    segments: &[String],
    module: &[String],
    aliases: &HashMap<String, CratePath>,
) -> Option<CratePath> {
    let (first, rest) = segments.split_first()?;
    let mut base: CratePath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module.get(..module.len().checked_sub(1)?)?.to_vec(),
        name => aliases.get(name)?.clone(),
    };
    for segment in rest {
        if segment == "super" {
            base.pop()?;
        } else if segment != "self" {
            base.push(segment.clone());
        }
    }
    Some(base)
}

/// Every path into this crate that `src`, the source of module `module`,
/// names: in `use` trees, `extern crate self as …`, and inline.
pub fn crate_paths(src: &str, module: &[String]) -> Vec<Named> {
    let toks = tokenize(src);
    let mut found = Vec::new();
    // Names bound by `use … as NAME` (or a `use` ending in a module) to a
    // path of this crate: `use crate as root; root::ufs::X` names ufs.
    let mut aliases: HashMap<String, CratePath> = HashMap::new();
    // The module of inline `mod NAME { … }` blocks: (name, brace depth).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let here: CratePath = module.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
        match &toks[i].tok {
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Punct('{'))) =
                    (toks.get(i + 1).map(|t| &t.tok), toks.get(i + 2).map(|t| &t.tok))
                {
                    inline.push((name.clone(), depth + 1));
                    depth += 1;
                    i += 3;
                } else {
                    i += 1;
                }
            }
            Tok::Ident(w) if w == "use" => {
                let line = toks[i].line;
                let mut leaves = Vec::new();
                i = parse_use_tree(&toks, i + 1, &mut Vec::new(), &mut leaves);
                for (segments, binding) in leaves {
                    if let Some(path) = resolve(&segments, &here, &aliases) {
                        if let Some(name) = binding {
                            aliases.insert(name, path.clone());
                        }
                        found.push(Named { path, line });
                    }
                }
            }
            Tok::Ident(w) if w == "extern" => {
                // `extern crate self as NAME;` makes NAME the crate root.
                let words: Vec<Option<&Tok>> = (1..=4).map(|k| toks.get(i + k).map(|t| &t.tok)).collect();
                if let [Some(Tok::Ident(c)), Some(Tok::Ident(s)), Some(Tok::Ident(a)), Some(Tok::Ident(name))] =
                    words.as_slice()
                {
                    if c == "crate" && s == "self" && a == "as" {
                        aliases.insert(name.clone(), Vec::new());
                    }
                }
                i += 1;
            }
            Tok::Ident(first) if toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::PathSep) => {
                // An inline path: `first::a::b…`, whatever follows it.
                let line = toks[i].line;
                let mut segments = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    match toks.get(j + 1).map(|t| &t.tok) {
                        Some(Tok::Ident(s)) => {
                            segments.push(s.clone());
                            j += 2;
                        }
                        _ => break,
                    }
                }
                if let Some(path) = resolve(&segments, &here, &aliases) {
                    found.push(Named { path, line });
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    found
}

/// Parses one use tree starting at `i` with `prefix` already read, pushing
/// each leaf (its full path and the name it binds, if it is renamed or
/// could be a module) onto `leaves`; returns the index after the tree (and
/// after the `;` at the top level).
fn parse_use_tree(
    toks: &[Token],
    mut i: usize,
    prefix: &mut Vec<String>,
    leaves: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    let top = prefix.is_empty();
    let depth_at_entry = prefix.len();
    // A leading `::` (2015-style absolute path) names no crate module here.
    if toks.get(i).map(|t| &t.tok) == Some(&Tok::PathSep) {
        i += 1;
    }
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) if s != "as" => {
                prefix.push(s.clone());
                i += 1;
                if toks.get(i).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    i += 1;
                    continue;
                }
                // A leaf, perhaps renamed.
                let mut binding = prefix.last().cloned();
                if let (Some(Tok::Ident(a)), Some(Tok::Ident(name))) =
                    (toks.get(i).map(|t| &t.tok), toks.get(i + 1).map(|t| &t.tok))
                {
                    if a == "as" {
                        binding = (name != "_").then(|| name.clone());
                        i += 2;
                    }
                }
                // `self` in braces binds the prefix's last name.
                if prefix.last().is_some_and(|s| s == "self")
                    && prefix.len() >= 2
                    && binding.as_deref() == Some("self")
                {
                    binding = prefix.get(prefix.len() - 2).cloned();
                }
                leaves.push((prefix.clone(), binding));
                break;
            }
            Some(Tok::Punct('*')) => {
                prefix.push("*".to_string());
                leaves.push((prefix[..prefix.len() - 1].to_vec(), None));
                i += 1;
                break;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.tok) {
                        Some(Tok::Punct('}')) => {
                            i += 1;
                            break;
                        }
                        Some(Tok::Punct(',')) => i += 1,
                        None => break,
                        _ => {
                            let mut inner = prefix.clone();
                            i = parse_use_tree(toks, i, &mut inner, leaves);
                        }
                    }
                }
                break;
            }
            _ => break,
        }
    }
    prefix.truncate(depth_at_entry);
    if top {
        // Skip to the end of the statement.
        while let Some(t) = toks.get(i) {
            i += 1;
            if t.tok == Tok::Punct(';') {
                break;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str, module: &[&str]) -> Vec<String> {
        let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
        crate_paths(src, &module).into_iter().map(|n| n.path.join("::")).collect()
    }

    #[test]
    fn braces_that_the_substring_check_missed_are_caught() {
        let src = "use crate::{lfs, ufs};\n";
        // The substring the old test looked for is not there at all.
        assert!(!src.contains("crate::ufs"));
        assert_eq!(names(src, &["lfs"]), ["lfs", "ufs"]);
    }

    #[test]
    fn nested_braces_self_renames_and_pub_use_resolve_to_full_paths() {
        let src = "pub use crate::{format::{Ino, inode::{self, Inode as I}}, ufs::{self as names}};";
        assert_eq!(names(src, &["lfs"]), ["format::Ino", "format::inode", "format::inode::Inode", "ufs"]);
        let src = "pub(crate) use crate::lfs::*;";
        assert_eq!(names(src, &["ufs"]), ["lfs"]);
    }

    #[test]
    fn super_and_self_resolve_against_the_files_module() {
        assert_eq!(names("use super::super::ufs::FileSystem;", &["lfs", "bmap"]), ["ufs::FileSystem"]);
        assert_eq!(names("use super::ufs;", &["lfs"]), ["ufs"]);
        assert_eq!(names("use self::writer::Writer;", &["lfs"]), ["lfs::writer::Writer"]);
        // From the crate root `super` leaves the crate: nothing to report.
        assert!(names("use super::x;", &[]).is_empty());
    }

    #[test]
    fn inline_mod_blocks_shift_what_super_means() {
        let src = "mod tests {\n    use super::super::ufs;\n}\nuse super::cache;";
        assert_eq!(names(src, &["lfs"]), ["ufs", "cache"]);
    }

    #[test]
    fn statements_over_several_lines_are_one_use() {
        let src = "use crate::{\n    // comment with crate::cache inside\n    storage,\n    ufs::{\n        FileSystem,\n    },\n};";
        let found = crate_paths(src, &["lfs".to_string()]);
        let paths: Vec<String> = found.iter().map(|n| n.path.join("::")).collect();
        assert_eq!(paths, ["storage", "ufs::FileSystem"]);
        assert!(found.iter().all(|n| n.line == 1), "{found:?}");
    }

    #[test]
    fn inline_paths_and_aliases_are_caught() {
        let src = "fn f() { let fs = crate::lfs::Lfs::mount(dev, o)?; }";
        assert_eq!(names(src, &["ufs"]), ["lfs::Lfs::mount"]);
        let src = "use crate as root;\nfn f() { root::ufs::FileSystem::new(s); }";
        assert_eq!(names(src, &["lfs"]), ["", "ufs::FileSystem::new"]);
        let src = "use super::super as top;\nfn f() -> top::ufs::Creds { todo!() }";
        assert_eq!(names(src, &["lfs", "bmap"]), ["", "ufs::Creds"]);
        let src = "extern crate self as me;\nfn f() { me::ufs::x(); }";
        assert_eq!(names(src, &["lfs"]), ["ufs::x"]);
    }

    #[test]
    fn strings_comments_lifetimes_and_other_crates_name_nothing() {
        let src = r####"
            // use crate::ufs;
            /* crate::ufs /* nested crate::ufs */ crate::ufs */
            const A: &str = "crate::ufs::X";
            const B: &[u8] = br#"crate::ufs " still raw"#;
            const C: char = '"';
            const D: u8 = b'\'';
            fn f<'a>(x: &'a str) -> std::io::Result<()> { fslab::ufs::x(); Self::y(); Ok(()) }
            pub(crate) fn g() {}
        "####;
        assert!(names(src, &["lfs"]).is_empty(), "{:?}", names(src, &["lfs"]));
    }

    #[test]
    fn module_of_a_file_follows_the_module_tree() {
        use std::path::Path;
        assert_eq!(module_of(Path::new("lfs/bmap.rs")), ["lfs", "bmap"]);
        assert_eq!(module_of(Path::new("lfs/mod.rs")), ["lfs"]);
        assert_eq!(module_of(Path::new("storage.rs")), ["storage"]);
        assert!(module_of(Path::new("lib.rs")).is_empty());
    }
}
