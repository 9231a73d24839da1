//! Rosenblum's small-file test (Rosenblum and Ousterhout 1992; 1995 §2,
//! Fig. 1): create 10,000 files of 1 KB, read them in creation order,
//! delete them. Files go 100 to a directory. Each phase ends with `sync`,
//! so what was created or deleted is on the disk when the clock stops;
//! caches are dropped before the reads.
//!
//! Records `create`, `read`, `delete` in files/s, and each phase's CPU
//! share (`cpu%`, virtual time only: the 1995 paper measured 64% for LFS
//! creates, 73% for deletes, 5–6% for FFS).

use super::{contents, note_cache, per_second, Record};
use crate::target::{Phase, Target};
use std::io;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Files.
    pub files: u64,
    /// Bytes per file.
    pub file_bytes: usize,
    /// Files per directory.
    pub per_dir: u64,
}

impl Spec {
    /// Rosenblum's: 10,000 files of 1 KB.
    pub fn paper() -> Spec {
        Spec { files: 10_000, file_bytes: 1024, per_dir: 100 }
    }

    /// A small configuration.
    pub fn quick() -> Spec {
        Spec { files: 300, file_bytes: 1024, per_dir: 100 }
    }
}

fn path(spec: &Spec, i: u64) -> String {
    format!("small/d{}/f{i}", i / spec.per_dir)
}

fn record(rec: &mut dyn Record, name: &str, files: u64, phase: &Phase, virtual_time: bool) {
    rec.record(name, 0.0, "files/s", per_second(files, phase.seconds()));
    if virtual_time {
        rec.record(name, 0.0, "cpu%", 100.0 * phase.cpu_share());
    }
}

/// Runs the test on `t`.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    let data = contents(spec.file_bytes, 1);
    t.mkdir("small")?;
    let (_, create) = t.phase(|t| {
        for i in 0..spec.files {
            if i % spec.per_dir == 0 {
                t.mkdir(&format!("small/d{}", i / spec.per_dir))?;
            }
            let fd = t.create(&path(spec, i))?;
            t.write(fd, 0, &data)?;
            t.close(fd)?;
        }
        t.sync()
    })?;
    record(rec, "create", spec.files, &create, t.is_virtual());

    t.drop_caches()?;
    let mut buf = vec![0u8; spec.file_bytes];
    let (_, read) = t.phase(|t| {
        for i in 0..spec.files {
            let fd = t.open(&path(spec, i))?;
            t.read(fd, 0, &mut buf)?;
            t.close(fd)?;
        }
        Ok(())
    })?;
    if buf != data {
        return Err(io::Error::other("small files: read back different bytes"));
    }
    record(rec, "read", spec.files, &read, t.is_virtual());

    let (_, delete) = t.phase(|t| {
        for i in 0..spec.files {
            t.unlink(&path(spec, i))?;
        }
        t.sync()
    })?;
    record(rec, "delete", spec.files, &delete, t.is_virtual());
    note_cache(t, rec);
    Ok(())
}
