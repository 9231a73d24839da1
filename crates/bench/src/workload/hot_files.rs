//! The 1997 paper's benchmark of recently modified files (Smith and
//! Seltzer, §5.2, Table 2): on an aged file system, the "hot" files —
//! those modified during the last month of aging
//! (`crate::aging::run::hot_files` picks them) — read whole and then
//! rewritten in place.
//!
//! * **read** — every file opened and read from start to end, in the
//!   order given (sorted by directory: "multiple files would be read from
//!   one cylinder group before moving to another"), in I/Os of at most
//!   [`Spec::max_io`] (the paper's sequential benchmark's 4 MB, §5.1; it
//!   gives none for this one).
//! * **write** — every file opened and overwritten from its first byte to
//!   its last, in the same order and I/O size, then `sync`: "in order to
//!   preserve the layout of the original files, the write phase of this
//!   benchmark overwrote the existing files. Thus the write performance
//!   does not include the overhead of creating the files or of allocating
//!   disk space to them".
//!
//! Caches are dropped before each phase, so each starts as the paper's
//! separate runs did, with none of the set in memory (59.5 MB of it could
//! not fit in any case, §5.2). Before the phases, where the target places
//! blocks, the set's aggregate layout score (§3.3, Table 2's "Layout
//! Score").
//!
//! Records, at x = 0, under the set's name ([`Spec::name`], `hot` for the
//! paper's): `hot` `files` (the set's size), `MB` (its bytes) and `score`;
//! `hot-read` and `hot-write` in `MB/s`.

use super::{contents, rate, Record};
use crate::aging::run::LiveFile;
use crate::aging::score;
use crate::target::Target;
use std::collections::HashSet;
use std::io;

/// The parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// The set's name: its phases are `NAME`, `NAME-read`, `NAME-write`.
    pub name: &'static str,
    /// The largest single read or write.
    pub max_io: u64,
    /// Bytes per MB in the results.
    pub mb: f64,
}

impl Spec {
    /// The set `hot`, 4 MB I/Os (§5.1's), MB = 2^20 bytes.
    pub fn paper() -> Spec {
        Spec { name: "hot", max_io: 4 << 20, mb: (1 << 20) as f64 }
    }
}

/// The aggregate layout score (the primary variant) of the files at
/// `paths`, where `t` places blocks; `Ok(None)` where it does not or none
/// of them has a score.
pub fn layout_score(t: &mut Target, paths: &[&str]) -> io::Result<Option<f64>> {
    let mut inodes = HashSet::with_capacity(paths.len());
    for path in paths {
        match t.inode(path) {
            Some(ino) => inodes.insert(ino?),
            None => return Ok(None),
        };
    }
    let placements = match t.placements() {
        Some(p) => p?,
        None => return Ok(None),
    };
    let chosen: Vec<_> = placements.files.into_iter().filter(|f| inodes.contains(&f.ino)).collect();
    Ok(score::score(&chosen, placements.frags_per_block).primary().score())
}

/// Reads, then rewrites, `files` on `t`, in their order.
pub fn run(t: &mut Target, files: &[LiveFile], spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let name = spec.name;
    rec.record(name, 0.0, "files", files.len() as f64);
    rec.record(name, 0.0, "MB", bytes as f64 / spec.mb);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    if let Some(s) = layout_score(t, &paths)? {
        rec.record(name, 0.0, "score", s);
    }
    let largest = files.iter().map(|f| f.size).max().unwrap_or(0).min(spec.max_io) as usize;
    let mut buf = vec![0u8; largest];

    t.drop_caches()?;
    let (_, read) = t.phase(|t| {
        for f in files {
            let fd = t.open(&f.path)?;
            let mut at = 0;
            while at < f.size {
                let len = (f.size - at).min(spec.max_io) as usize;
                t.read(fd, at, &mut buf[..len])?;
                at += len as u64;
            }
            t.close(fd)?;
        }
        Ok(())
    })?;
    rec.record(&format!("{name}-read"), 0.0, "MB/s", rate(bytes, read.seconds(), spec.mb));

    // New bytes, not the aged ones: no layer may skip an unchanged block.
    let data = contents(largest, 97);
    t.drop_caches()?;
    let (_, write) = t.phase(|t| {
        for f in files {
            let fd = t.open(&f.path)?;
            let mut at = 0;
            while at < f.size {
                let len = (f.size - at).min(spec.max_io) as usize;
                t.write(fd, at, &data[..len])?;
                at += len as u64;
            }
            t.close(fd)?;
        }
        t.sync()
    })?;
    rec.record(&format!("{name}-write"), 0.0, "MB/s", rate(bytes, write.seconds(), spec.mb));
    Ok(())
}
