//! The MH folder benchmark (2002 paper §4.1, Table 3, Fig. 10): create a
//! mailbox's numerically named files in one directory in the order the
//! mailbox held them, `folder -pack` (rename them to 1…N, keeping their
//! numerical order), then remove the directory.
//!
//! The paper's mailbox (33,164 messages, 12 years in use) is not public.
//! Its numbers are sparse, as messages were deleted between packs; here
//! they are increasing with gaps of one to three, and are created in a
//! seeded random order, the order a long-used directory's reused slots
//! list them in. The messages' contents are not given: the files are
//! empty, so the benchmark is names and inodes only.
//!
//! The phases follow each other without a sync, as the paper's commands
//! did (it synced between runs only, §4.2); what a phase leaves dirty is
//! written during the next one, or at the end, untimed. Records `create`,
//! `pack` and `remove` in seconds (`s`) and files per second (`files/s`),
//! at x = the number of files.

use super::{per_second, Record};
use crate::target::Target;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::io;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Messages in the folder.
    pub files: u64,
    /// Seeds the message numbers and the creation order.
    pub seed: u64,
}

impl Spec {
    /// The paper's folder: 33,164 messages (§4.1).
    pub fn paper(seed: u64) -> Spec {
        Spec { files: 33_164, seed }
    }

    /// A small configuration.
    pub fn quick(seed: u64) -> Spec {
        Spec { files: 2_000, seed }
    }
}

/// The folder's directory.
const FOLDER: &str = "inbox";

fn path(number: u64) -> String {
    format!("{FOLDER}/{number}")
}

/// The messages' numbers, ascending, and the order they are created in.
pub fn mailbox(spec: &Spec) -> (Vec<u64>, Vec<u64>) {
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut numbers = Vec::with_capacity(spec.files as usize);
    let mut next = 0;
    for _ in 0..spec.files {
        next += rng.gen_range(1..=3);
        numbers.push(next);
    }
    let mut order = numbers.clone();
    order.shuffle(&mut rng);
    (numbers, order)
}

fn record(rec: &mut dyn Record, phase: &str, files: u64, seconds: f64) {
    rec.record(phase, files as f64, "s", seconds);
    rec.record(phase, files as f64, "files/s", per_second(files, seconds));
}

/// Runs the benchmark on `t`.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<()> {
    let (numbers, order) = mailbox(spec);
    let files = spec.files;
    t.mkdir(FOLDER)?;
    t.sync()?;
    let (_, create) = t.phase(|t| {
        for &n in &order {
            let fd = t.create(&path(n))?;
            t.close(fd)?;
        }
        Ok(())
    })?;
    record(rec, "create", files, create.seconds());

    // `folder -pack`: message k (in numerical order) becomes k. Going up,
    // a new name is the old name of a message already moved, or its own:
    // no rename replaces a message.
    let (_, pack) = t.phase(|t| {
        for (k, &n) in numbers.iter().enumerate() {
            let k = k as u64 + 1;
            if k != n {
                t.rename(&path(n), &path(k))?;
            }
        }
        Ok(())
    })?;
    record(rec, "pack", files, pack.seconds());

    // `rm -r`: the messages in order, then the directory.
    let (_, remove) = t.phase(|t| {
        for k in 1..=files {
            t.unlink(&path(k))?;
        }
        t.rmdir(FOLDER)
    })?;
    record(rec, "remove", files, remove.seconds());
    t.sync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mailbox_is_sparse_and_created_out_of_order() {
        let spec = Spec { files: 500, seed: 3 };
        let (numbers, order) = mailbox(&spec);
        assert_eq!(numbers.len(), 500);
        assert!(numbers.windows(2).all(|w| w[0] < w[1]));
        assert!(numbers.iter().enumerate().all(|(k, &n)| n > k as u64), "k <= n: packing never collides");
        assert!(*numbers.last().unwrap_or(&0) > 500, "sparse");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, numbers);
        assert_ne!(order, numbers);
        assert_eq!(mailbox(&spec), (numbers, order), "seeded");
    }
}
