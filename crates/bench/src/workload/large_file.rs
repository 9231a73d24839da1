//! Rosenblum's large-file test (1995 §2, Fig. 2): five passes over a
//! 100 MB file in 8 KB units — write it sequentially, read it sequentially,
//! write 100 KB at random 8 KB units, read 100 KB at random units, read it
//! sequentially again. Writes end with `fsync`; caches are dropped before
//! each read pass. Random units come from the run's seed.
//!
//! Records `seq-write`, `seq-read`, `rand-write`, `rand-read`, `seq-reread`
//! in MB/s (the experiment's MB).

use super::{contents, note_cache, rate, Record};
use crate::target::Target;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::io;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The file's size.
    pub file_bytes: u64,
    /// The I/O unit.
    pub unit: usize,
    /// Bytes written, and read, at random.
    pub random_bytes: u64,
    /// Bytes per MB in the results.
    pub mb: f64,
    /// Seeds the random units.
    pub seed: u64,
}

impl Spec {
    /// The paper's: 100 MB, 8 KB units, 100 KB at random.
    pub fn paper(seed: u64) -> Spec {
        Spec { file_bytes: 100 << 20, unit: 8192, random_bytes: 100 << 10, mb: (1 << 20) as f64, seed }
    }

    /// A small configuration.
    pub fn quick(seed: u64) -> Spec {
        Spec { file_bytes: 4 << 20, unit: 8192, random_bytes: 64 << 10, mb: (1 << 20) as f64, seed }
    }
}

/// Runs the test on `t`.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    let units = spec.file_bytes / spec.unit as u64;
    let random_units = spec.random_bytes.div_ceil(spec.unit as u64);
    let data = contents(spec.unit, 2);
    let mut buf = vec![0u8; spec.unit];
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let offsets: Vec<u64> =
        (0..random_units).map(|_| rng.gen_range(0..units.max(1)) * spec.unit as u64).collect();
    let fd = t.create("large")?;

    let (_, phase) = t.phase(|t| {
        for u in 0..units {
            t.write(fd, u * spec.unit as u64, &data)?;
        }
        t.fsync(fd)
    })?;
    rec.record("seq-write", 0.0, "MB/s", rate(units * spec.unit as u64, phase.seconds(), spec.mb));

    let sequential_read = |t: &mut Target, buf: &mut [u8]| -> io::Result<f64> {
        t.drop_caches()?;
        let fd = t.open("large")?;
        let (_, phase) = t.phase(|t| {
            for u in 0..units {
                t.read(fd, u * spec.unit as u64, buf)?;
            }
            Ok(())
        })?;
        t.close(fd)?;
        Ok(rate(units * spec.unit as u64, phase.seconds(), spec.mb))
    };
    t.close(fd)?;
    let mbs = sequential_read(t, &mut buf)?;
    if buf != data {
        return Err(io::Error::other("large file: read back different bytes"));
    }
    rec.record("seq-read", 0.0, "MB/s", mbs);

    let fd = t.open("large")?;
    let (_, phase) = t.phase(|t| {
        for &at in &offsets {
            t.write(fd, at, &data)?;
        }
        t.fsync(fd)
    })?;
    t.close(fd)?;
    rec.record("rand-write", 0.0, "MB/s", rate(random_units * spec.unit as u64, phase.seconds(), spec.mb));

    t.drop_caches()?;
    let fd = t.open("large")?;
    let (_, phase) = t.phase(|t| {
        for &at in &offsets {
            t.read(fd, at, &mut buf)?;
        }
        Ok(())
    })?;
    t.close(fd)?;
    rec.record("rand-read", 0.0, "MB/s", rate(random_units * spec.unit as u64, phase.seconds(), spec.mb));

    let mbs = sequential_read(t, &mut buf)?;
    rec.record("seq-reread", 0.0, "MB/s", mbs);
    t.unlink("large")?;
    note_cache(t, rec);
    Ok(())
}
