//! Raw file-system bandwidth, 1993 §5.2.1 (Fig. 9 and 12): "creating a file
//! of size S and then either reading or writing the entire file 50 times".
//! Each write pass is one `write` of S bytes followed by `fsync` (the paper
//! times both: LFS writes only at the fsync, §5.2.1 and Fig. 10); before
//! each read pass the caches are dropped (the paper unmounts and remounts),
//! outside the timing.
//!
//! Records, for each S: `write` and `read` in MB/s (the experiment's MB).

use super::{contents, note_cache, rate, Record};
use crate::target::Target;
use std::io;
use std::time::Duration;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The file sizes S, in bytes.
    pub sizes: Vec<u64>,
    /// Passes per size (the paper: 50).
    pub passes: u32,
    /// Bytes per MB in the results.
    pub mb: f64,
}

impl Spec {
    /// The paper's: 50 passes, S from 4 KB to 4 MB by factors of 4.
    pub fn paper() -> Spec {
        Spec { sizes: (0..6).map(|i| 4096u64 << (2 * i)).collect(), passes: 50, mb: 1e6 }
    }

    /// A small configuration.
    pub fn quick() -> Spec {
        Spec { sizes: vec![16 << 10, 256 << 10], passes: 3, mb: 1e6 }
    }
}

/// Runs the test on `t`.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    for &size in &spec.sizes {
        let path = format!("bandwidth-{size}");
        let data = contents(size as usize, size);
        let fd = t.create(&path)?;
        t.write(fd, 0, &data)?;
        t.fsync(fd)?;
        let (_, phase) = t.phase(|t| {
            for _ in 0..spec.passes {
                t.write(fd, 0, &data)?;
                t.fsync(fd)?;
            }
            Ok(())
        })?;
        t.close(fd)?;
        rec.record("write", size as f64, "MB/s", rate(size * spec.passes as u64, phase.seconds(), spec.mb));

        let mut reading = Duration::ZERO;
        let mut buf = vec![0u8; size as usize];
        for _ in 0..spec.passes {
            t.drop_caches()?;
            let fd = t.open(&path)?;
            let (_, phase) = t.phase(|t| t.read(fd, 0, &mut buf))?;
            t.close(fd)?;
            reading += phase.elapsed;
        }
        if buf != data {
            return Err(io::Error::other(format!("{path}: read back different bytes")));
        }
        rec.record(
            "read",
            size as f64,
            "MB/s",
            rate(size * spec.passes as u64, reading.as_secs_f64(), spec.mb),
        );
        t.unlink(&path)?;
    }
    note_cache(t, rec);
    Ok(())
}
