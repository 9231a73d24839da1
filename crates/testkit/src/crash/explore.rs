//! Exploring a workload's crash states: [`explore`] enumerates them within
//! a [`Budget`] and checks each; [`explore_all`] does every workload on
//! several threads; [`Outcome`] counts and keeps the [`Violation`]s.

use super::check::check_state;
use super::record::{record, setup_image, Recorded};
use super::tree::Tree;
use super::workload::Workload;
use super::DISK_BYTES;
use disk::CrashState;
use std::fmt;

/// One broken promise, with everything needed to replay it.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The workload (name and steps).
    pub workload: String,
    /// The crash state's description (cut, what became of unflushed writes).
    pub state: String,
    /// The cut (events kept).
    pub cut: usize,
    /// The persistence points and their event counts.
    pub points: String,
    /// What was expected and what was found.
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "workload {}", self.workload)?;
        writeln!(f, "  crash state: {} (cut {})", self.state, self.cut)?;
        writeln!(f, "  persistence points: {}", self.points)?;
        write!(f, "  {}", self.what)
    }
}

/// What exploring one or more workloads found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Workloads run.
    pub workloads: usize,
    /// Crash states mounted and checked.
    pub states: usize,
    /// States whose mount applied roll-forward (partial segments applied).
    pub rolled_forward: usize,
    /// States whose mount discarded an unfinished directory operation.
    pub discarded: usize,
    /// Images after a second power cut (or recovery and unmount) checked.
    pub second_crashes: usize,
    /// Device events recorded by the workloads (setup excluded).
    pub events: usize,
    /// The violations, in the order found.
    pub violations: Vec<Violation>,
}

impl Outcome {
    /// Adds `other`'s counts and violations to this one.
    pub fn merge(&mut self, other: Outcome) {
        self.workloads += other.workloads;
        self.states += other.states;
        self.rolled_forward += other.rolled_forward;
        self.discarded += other.discarded;
        self.second_crashes += other.second_crashes;
        self.events += other.events;
        self.violations.extend(other.violations);
    }
}

/// How many crash states to try per workload, and with which seed.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// At most this many crash states per workload ([`CrashDisk::crash_states`]).
    pub max_states: usize,
    /// Seed for the crash-state sample (mixed with the workload's index).
    pub seed: u64,
    /// Second power cuts (during the recovery mount or its unmount) tried
    /// per crash state that recovered something, besides the image after
    /// the clean unmount.
    pub second_crashes: usize,
}

/// Runs `workload` and checks every crash state the budget allows. A state
/// stops at its first violation; the others are still checked.
pub fn explore(workload: &Workload, image: &[u8], setup: &Tree, budget: Budget, index: u64) -> Outcome {
    let rec = record(workload, image, setup);
    let mut outcome = Outcome { workloads: 1, events: rec.events, ..Outcome::default() };
    let seed = budget.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for state in rec.crash.crash_states(budget.max_states, seed) {
        outcome.states += 1;
        let CrashState { description, cut, disk, .. } = state;
        match check_state(&rec, disk, cut, budget.second_crashes, seed ^ cut as u64) {
            Ok(checked) => {
                outcome.rolled_forward += usize::from(checked.recovery.applied > 0);
                outcome.discarded += usize::from(checked.recovery.discarded > 0);
                outcome.second_crashes += checked.second_crashes;
            }
            Err(what) => outcome.violations.push(Violation {
                workload: workload.to_string(),
                state: description,
                cut,
                points: points_text(&rec),
                what,
            }),
        }
    }
    outcome
}

fn points_text(rec: &Recorded) -> String {
    rec.points
        .iter()
        .map(|p| match p.step {
            None => format!("setup sync (events ≤ {})", p.events),
            Some(step) => format!("step {step} {} after op {} (events ≤ {})", p.persist, p.state, p.events),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Explores every workload of `list` on `threads` threads (each workload on
/// one thread, in any order) and merges the outcomes; violations are sorted
/// by workload name so reports are stable.
pub fn explore_all(list: &[Workload], budget: Budget, threads: usize) -> Outcome {
    keep_images_off_mmap();
    let (image, setup) = setup_image();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let total = std::sync::Mutex::new(Outcome::default());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(workload) = list.get(i) else { break };
                let outcome = explore(workload, &image, &setup, budget, i as u64);
                total.lock().unwrap_or_else(|e| e.into_inner()).merge(outcome);
            });
        }
    });
    let mut total = total.into_inner().unwrap_or_else(|e| e.into_inner());
    total.violations.sort_by(|a, b| a.workload.cmp(&b.workload).then(a.cut.cmp(&b.cut)));
    total
}

/// Every crash state copies the device image a few times; glibc serves
/// blocks this large with `mmap` and returns them with `munmap`, and the page
/// faults cost more than the checks (half the run in the kernel). Raising
/// the threshold keeps them in the heap, where they are reused.
fn keep_images_off_mmap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let bytes = i32::try_from(4 * DISK_BYTES).unwrap_or(i32::MAX);
        // SAFETY: mallopt only changes allocator tuning parameters; it is
        // safe to call at any time, from any thread.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 16 * bytes);
        }
    }
}
