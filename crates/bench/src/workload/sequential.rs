//! Sequential performance as a function of file size (1995 §3, Fig. 3–6):
//! 32 MB of data as files of one size (or ten files, whichever is more
//! data), at most 100 to a directory; four phases:
//!
//! * **create** — each file with the fewest writes: one for files of 4 MB
//!   or less, 4 MB writes above;
//! * **read** — every file, in creation order, with the same I/O sizes;
//! * **overwrite** — every file rewritten in place, in creation order;
//! * **delete** — every file removed.
//!
//! Each size starts on a fresh file system (the paper: a new LFS per size,
//! FFS emptied between sizes). Writing phases end with `sync`; caches are
//! dropped before the reads and before the deletes. The paper's deletes
//! read each file's indirect block from the disk (§3.4: "the indirect block
//! must be retrieved from disk in order to free blocks (in FFS) or mark them
//! dead (in LFS)"), as a least-recently-used cache of the SparcStation's
//! 1.8 MB must after 32 MB of overwrites. fslab's cache keeps data written
//! and not read again apart, on probation, so a stream of writes does not
//! push metadata out: without the drop its deletes found every indirect
//! block in memory.
//!
//! [`Spec::aged`] runs only the create and read phases, 25 files to a
//! directory (1995 §5.3); [`Spec::ss97`] is the 1997 paper's version of the
//! same (§5.1, Fig. 4), which also scores the layout of the files it
//! created (Fig. 5).
//!
//! Records `create`, `read`, `overwrite` in MB/s and `delete` in files/s,
//! each at x = the file size in bytes; with [`Spec::score_layout`], on a
//! target that places blocks, `seq-layout` `score` too.

use super::{contents, note_cache, per_second, rate, Fresh, Record};
use crate::target::Target;
use std::io;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// File sizes, in bytes.
    pub sizes: Vec<u64>,
    /// Data per size (more when ten files need more).
    pub total_bytes: u64,
    /// At least this many files.
    pub min_files: u64,
    /// Files per directory.
    pub per_dir: u64,
    /// The largest single I/O.
    pub max_io: u64,
    /// Bytes per MB in the results.
    pub mb: f64,
    /// Whether the overwrite and delete phases follow the read (the 1995
    /// paper's §5.3 used "the create and read phases" only).
    pub overwrite_and_delete: bool,
    /// Whether the aggregate layout score of the files created is
    /// recorded after the create phase (1997 Fig. 5).
    pub score_layout: bool,
    /// Whether every file is opened and closed, untimed, between the cache
    /// drop and the deletes: the inodes a 4.4BSD vnode cache would have
    /// kept, which the drop (a remount) empties with the buffer cache.
    pub load_inodes_before_delete: bool,
}

/// What the lab appends to the delete phase's name when the inodes were
/// loaded before it ([`Spec::load_inodes_before_delete`]).
pub const INODES_LOADED: &str = " (inodes loaded)";

impl Spec {
    /// The paper's: 1 KB to 64 MB by powers of two, 32 MB per size.
    pub fn paper() -> Spec {
        Spec {
            sizes: (0..17).map(|i| 1024u64 << i).collect(),
            total_bytes: 32 << 20,
            min_files: 10,
            per_dir: 100,
            max_io: 4 << 20,
            mb: (1 << 20) as f64,
            overwrite_and_delete: true,
            score_layout: false,
            load_inodes_before_delete: false,
        }
    }

    /// The 1997 paper's sequential benchmark on its aged file systems
    /// (§5.1, Fig. 4): "thirty-two megabytes of data, which was decomposed
    /// into the appropriate number of files for the file size" (a single
    /// file at 32 MB), "no more than twenty-five files" a directory, files
    /// of 4 MB or less written in one write and larger ones in 4 MB writes,
    /// then read in creation order in the same units. Its sizes run "from
    /// sixteen kilobytes (two file blocks) to thirty-two megabytes": powers
    /// of two, with the points the text discusses (56 KB, the cluster; 96
    /// KB, the last size without an indirect block; 104 KB, the first with
    /// one).
    pub fn ss97() -> Spec {
        let mut sizes: Vec<u64> = (0..12).map(|i| 16u64 << (10 + i)).collect();
        sizes.extend([56 << 10, 96 << 10, 104 << 10]);
        sizes.sort_unstable();
        Spec {
            sizes,
            total_bytes: 32 << 20,
            min_files: 1,
            per_dir: 25,
            overwrite_and_delete: false,
            score_layout: true,
            ..Spec::paper()
        }
    }

    /// [`Spec::ss97`] with 4 MB per size, at four sizes about the
    /// cluster and the first indirect block.
    pub fn ss97_quick() -> Spec {
        Spec { sizes: vec![16 << 10, 64 << 10, 104 << 10, 1 << 20], total_bytes: 4 << 20, ..Spec::ss97() }
    }

    /// The 1995 paper's fragmentation benchmark (§5.3): the create and
    /// read phases of [`Spec::paper`] at 8 KB, 64 KB and 1 MB, "twenty-five
    /// files per directory" instead of a hundred, 32 MB per size.
    pub fn aged() -> Spec {
        Spec {
            sizes: vec![8 << 10, 64 << 10, 1 << 20],
            per_dir: 25,
            overwrite_and_delete: false,
            ..Spec::paper()
        }
    }

    /// [`Spec::aged`] with 4 MB per size.
    pub fn aged_quick() -> Spec {
        Spec { total_bytes: 4 << 20, min_files: 4, ..Spec::aged() }
    }

    /// A small configuration.
    pub fn quick() -> Spec {
        Spec {
            sizes: vec![1024, 16 << 10, 256 << 10],
            total_bytes: 2 << 20,
            min_files: 4,
            per_dir: 100,
            max_io: 4 << 20,
            mb: (1 << 20) as f64,
            overwrite_and_delete: true,
            score_layout: false,
            load_inodes_before_delete: false,
        }
    }

    /// Files of `size` bytes the phase uses.
    pub fn files(&self, size: u64) -> u64 {
        (self.total_bytes / size.max(1)).max(self.min_files)
    }
}

fn path(spec: &Spec, i: u64) -> String {
    format!("seq/d{}/f{i}", i / spec.per_dir)
}

/// Writes every file in full, `create`ing them or opening them.
fn write_all(t: &mut Target, spec: &Spec, size: u64, n: u64, create: bool, chunk: &[u8]) -> io::Result<()> {
    for i in 0..n {
        let p = path(spec, i);
        if create && i % spec.per_dir == 0 {
            t.mkdir(&format!("seq/d{}", i / spec.per_dir))?;
        }
        let fd = if create { t.create(&p)? } else { t.open(&p)? };
        let mut at = 0;
        while at < size {
            let len = (size - at).min(spec.max_io) as usize;
            t.write(fd, at, &chunk[..len])?;
            at += len as u64;
        }
        t.close(fd)?;
    }
    t.sync()
}

/// Runs the four phases at every size, each size on `fresh()`.
pub fn run(fresh: &mut Fresh<'_>, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    for &size in &spec.sizes {
        let mut t = fresh()?;
        let n = spec.files(size);
        let bytes = n * size;
        let chunk = contents(size.min(spec.max_io) as usize, size);
        t.mkdir("seq")?;
        let (_, create) = t.phase(|t| write_all(t, spec, size, n, true, &chunk))?;
        rec.record("create", size as f64, "MB/s", rate(bytes, create.seconds(), spec.mb));
        if spec.score_layout {
            let paths: Vec<String> = (0..n).map(|i| path(spec, i)).collect();
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            if let Some(s) = super::hot_files::layout_score(&mut t, &paths)? {
                rec.record("seq-layout", size as f64, "score", s);
            }
        }

        t.drop_caches()?;
        let mut buf = vec![0u8; size.min(spec.max_io) as usize];
        let (_, read) = t.phase(|t| {
            for i in 0..n {
                let fd = t.open(&path(spec, i))?;
                let mut at = 0;
                while at < size {
                    let len = (size - at).min(spec.max_io) as usize;
                    t.read(fd, at, &mut buf[..len])?;
                    at += len as u64;
                }
                t.close(fd)?;
            }
            Ok(())
        })?;
        if buf[..] != chunk[..buf.len()] {
            return Err(io::Error::other(format!("{size}-byte files: read back different bytes")));
        }
        rec.record("read", size as f64, "MB/s", rate(bytes, read.seconds(), spec.mb));
        if !spec.overwrite_and_delete {
            note_cache(&t, rec);
            t.finish()?;
            continue;
        }

        let (_, overwrite) = t.phase(|t| write_all(t, spec, size, n, false, &chunk))?;
        rec.record("overwrite", size as f64, "MB/s", rate(bytes, overwrite.seconds(), spec.mb));

        t.drop_caches()?;
        if spec.load_inodes_before_delete {
            for i in 0..n {
                let fd = t.open(&path(spec, i))?;
                t.close(fd)?;
            }
        }
        let (_, delete) = t.phase(|t| {
            for i in 0..n {
                t.unlink(&path(spec, i))?;
            }
            t.sync()
        })?;
        rec.record("delete", size as f64, "files/s", per_second(n, delete.seconds()));
        note_cache(&t, rec);
        t.finish()?;
    }
    Ok(())
}
