//! The workload cleaners are measured with (Rosenblum and Ousterhout 1992
//! §5.2, and the 1993 paper §5): fill a file system with files to a given
//! utilization, then overwrite whole files chosen at random — uniformly, or
//! hot-and-cold (a small part of the files takes most of the writes) — until
//! several times the disk's size has been written. Every file's contents
//! are derived from its number and version, so all of them can be checked
//! at any point.

use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::Lfs;
use fslab::ufs::{Creds, FileSystem};
use fslab::Result;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Which files the overwrites go to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Access {
    /// Every file equally likely.
    Uniform,
    /// `hot_writes` of the writes go to the first `hot_files` of the files
    /// (0.9 and 0.1: "90% of writes to 10% of the data").
    HotCold {
        /// Share of the files that are hot.
        hot_files: f64,
        /// Share of the writes that go to them.
        hot_writes: f64,
    },
}

impl Access {
    /// The hot-and-cold split of the 1992 paper: 90% of writes to 10% of files.
    pub const HOT_COLD: Access = Access::HotCold { hot_files: 0.1, hot_writes: 0.9 };
}

/// One run of the workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// Live bytes (file data and inodes) over the space statfs reports.
    pub utilization: f64,
    /// Blocks per file.
    pub file_blocks: u64,
    /// Bytes to overwrite, as a multiple of the space statfs reports.
    pub write_multiple: f64,
    /// Which files the overwrites go to.
    pub access: Access,
    /// Seed of the random choices.
    pub seed: u64,
}

/// What a run did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Outcome {
    /// Files the file system was filled with.
    pub files: u64,
    /// Bytes overwritten (after the fill).
    pub bytes_overwritten: u64,
    /// Overwrites refused with ENOSPC.
    pub enospc: u64,
    /// Time the overwrite phase took.
    pub elapsed: Duration,
}

/// The files of a run and the version each holds.
pub struct Files {
    inos: Vec<Ino>,
    versions: Vec<u32>,
    file_blocks: u64,
    block_size: usize,
}

/// Fills `buf` with what block `block` of file `file` holds at `version`.
fn contents(file: u64, version: u32, block: u64, buf: &mut [u8]) {
    let mut x = (file << 32 | u64::from(version)) ^ block.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

impl Files {
    /// Creates files in the root of `fs` until live data reaches
    /// `spec.utilization` of the space statfs reports.
    pub fn fill(fs: &mut FileSystem<Lfs>, spec: &Spec) -> Result<Files> {
        let st = fs.statfs()?;
        let bs = st.block_size as u64;
        // Data, the indirect blocks past the inode's 12 direct pointers, the
        // inode and a directory entry.
        let indirect = spec.file_blocks.saturating_sub(12).div_ceil(bs / 4);
        let per_file = (spec.file_blocks + indirect) * bs + fslab::format::inode::INODE_SIZE as u64 + 32;
        let n = (spec.utilization * (st.total_blocks * bs) as f64 / per_file as f64) as u64;
        let mut files = Files {
            inos: Vec::with_capacity(n as usize),
            versions: Vec::with_capacity(n as usize),
            file_blocks: spec.file_blocks,
            block_size: bs as usize,
        };
        for i in 0..n {
            let name = format!("f{i}");
            let inode = fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, Creds::default())?;
            files.inos.push(inode.ino);
            files.versions.push(0);
            files.write(fs, i as usize)?;
        }
        fs.sync()?;
        Ok(files)
    }

    /// How many files there are.
    pub fn len(&self) -> usize {
        self.inos.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.inos.is_empty()
    }

    /// Writes file `i` whole at its current version.
    fn write(&self, fs: &mut FileSystem<Lfs>, i: usize) -> Result<()> {
        let mut buf = vec![0u8; (self.file_blocks as usize) * self.block_size];
        for (b, chunk) in buf.chunks_mut(self.block_size).enumerate() {
            contents(i as u64, self.versions[i], b as u64, chunk);
        }
        fs.write(self.inos[i], 0, &buf)?;
        Ok(())
    }

    /// Overwrites whole files chosen by `spec.access` until
    /// `spec.write_multiple` times the space statfs reports has been
    /// written. An overwrite refused with ENOSPC is counted, and the file
    /// keeps its old version (what it held must still read back).
    pub fn overwrite(&mut self, fs: &mut FileSystem<Lfs>, spec: &Spec) -> Result<Outcome> {
        let st = fs.statfs()?;
        let target = (spec.write_multiple * (st.total_blocks * st.block_size as u64) as f64) as u64;
        let file_bytes = self.file_blocks * self.block_size as u64;
        let mut rng = SmallRng::seed_from_u64(spec.seed);
        let mut outcome = Outcome { files: self.len() as u64, ..Outcome::default() };
        let n = self.len();
        if n == 0 {
            return Ok(outcome);
        }
        let start = Instant::now();
        while outcome.bytes_overwritten < target {
            let i = match spec.access {
                Access::Uniform => rng.gen_range(0..n),
                Access::HotCold { hot_files, hot_writes } => {
                    let hot = ((n as f64 * hot_files) as usize).clamp(1, n);
                    if rng.gen_bool(hot_writes) || hot == n {
                        rng.gen_range(0..hot)
                    } else {
                        rng.gen_range(hot..n)
                    }
                }
            };
            self.versions[i] += 1;
            match self.write(fs, i) {
                Ok(()) => {}
                Err(e) if e.errno() == libc::ENOSPC => {
                    // Nothing of a refused block was accepted, but earlier
                    // blocks of the file may have been: write the old
                    // version back whole.
                    outcome.enospc += 1;
                    self.versions[i] -= 1;
                    let _ = self.write(fs, i);
                }
                Err(e) => return Err(e),
            }
            outcome.bytes_overwritten += file_bytes;
        }
        outcome.elapsed = start.elapsed();
        Ok(outcome)
    }

    /// Reads every file back and compares it with what it should hold.
    /// Returns the first file that differs.
    pub fn verify(&self, fs: &mut FileSystem<Lfs>) -> std::result::Result<(), String> {
        let mut want = vec![0u8; self.block_size];
        for (i, &ino) in self.inos.iter().enumerate() {
            let got = fs
                .read(ino, 0, (self.file_blocks as usize) * self.block_size)
                .map_err(|e| format!("file {i} (inode {ino}): read failed: {e}"))?;
            if got.len() != (self.file_blocks as usize) * self.block_size {
                return Err(format!("file {i} (inode {ino}) is {} bytes long", got.len()));
            }
            for (b, chunk) in got.chunks(self.block_size).enumerate() {
                contents(i as u64, self.versions[i], b as u64, &mut want);
                if chunk != &want[..] {
                    return Err(format!(
                        "file {i} (inode {ino}) block {b} differs from version {}",
                        self.versions[i]
                    ));
                }
            }
        }
        Ok(())
    }
}
