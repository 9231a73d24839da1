//! The experiments: which paper's table or figure, on which disk and
//! machine, which systems, which workload, what to plot, and what the
//! paper published to set beside the results.
//!
//! This file holds what an experiment is ([`Experiment`], [`Workload`],
//! [`PlotSpec`], [`Published`]) and the questions asked of one (its
//! factors, lattice, base system, aged pair); `table.rs` holds
//! [`EXPERIMENTS`], one entry per table or figure, with the constants only
//! the table uses.

mod table;

pub use table::{BUILDWORLD_LATTICE, EXPERIMENTS};

use crate::cpu::Machine;
use crate::factorial::Lattice;

/// Which workload an experiment runs (see `crate::workload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// 1993 Fig. 9/12.
    Bandwidth,
    /// Rosenblum's small-file test.
    SmallFiles,
    /// Rosenblum's large-file test.
    LargeFile,
    /// 1995 Fig. 3–6.
    Sequential,
    /// The create and read phases of 1995 Fig. 3–4 on an FFS rebuilt
    /// from an aged free-space map and on an empty one (1995 §5, Fig. 8).
    AgedSequential,
    /// The 1997 paper's aging with the original allocator and with
    /// realloc, then its benchmarks on the aged images: the hot files read
    /// and rewritten (§5.2, Table 2) and the sequential benchmark (§5.1,
    /// Fig. 4).
    AgedRealloc,
    /// TPC-B across utilizations (1995 Fig. 7).
    TpcbByUtilization,
    /// TPC-B at 80% (1993 Table 7).
    TpcbAt80,
    /// The Andrew benchmark (1993 Table 6).
    Andrew,
    /// Per-operation cost against directory size (2002 Fig. 2–6).
    DirOps,
    /// The MH folder: create, pack, remove (2002 §4.1, Table 3).
    MhFolder,
    /// The 2000 paper's create/read/delete and create/delete
    /// microbenchmarks (Fig. 1–3).
    Microbench,
    /// PostMark 1.13, the 2000 paper's default set (§7.3.4, Fig. 5).
    PostMark,
    /// PostMark 1.13, the 2000 paper's large set (§7.3.4, Fig. 5).
    PostMarkLarge,
    /// Unpack, configure and build ssh-1.2.26 (2000 §7.3.1, Table 4).
    SshBuild,
    /// A news spool's unbatch and expire (2000 §7.3.2, Table 5).
    Netnews,
    /// A multi-user software-development mix in SDET's place (2000
    /// §7.3.3, Fig. 4).
    Sdet,
    /// Check out, build, search and remove a source tree (2002 §4.1,
    /// Tables 1-2, Fig. 10).
    Buildworld,
}

/// A plot of one metric: a line per (system, phase) among `phases`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlotSpec {
    /// File name (without extension).
    pub name: &'static str,
    /// Title.
    pub title: &'static str,
    /// Phases drawn.
    pub phases: &'static [&'static str],
    /// The metric drawn.
    pub metric: &'static str,
    /// X axis label.
    pub x_label: &'static str,
    /// Y axis label.
    pub y_label: &'static str,
    /// Whether x is on a log₂ scale (file sizes).
    pub log_x: bool,
    /// X values are divided by this for the axis (1024: bytes to KB).
    pub x_unit: f64,
}

/// A number the paper published, to set beside the measured one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Published {
    /// The system it is for.
    pub system: &'static str,
    /// The phase.
    pub phase: &'static str,
    /// The x it is at; `f64::INFINITY` for "the largest measured".
    pub x: f64,
    /// The metric.
    pub metric: &'static str,
    /// The paper's value.
    pub value: f64,
    /// Where it comes from.
    pub source: &'static str,
}

/// An experiment.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    /// Its id on the command line.
    pub id: &'static str,
    /// What it reproduces.
    pub title: &'static str,
    /// The paper's table or figure.
    pub source: &'static str,
    /// How it is run and how it differs from the paper.
    pub about: &'static str,
    /// The disk it runs on unless told otherwise: a drive of the
    /// catalogue, or `mem`.
    pub disk: &'static str,
    /// The machine its CPU model charges for.
    pub machine: Machine,
    /// The systems it compares.
    pub systems: &'static [&'static str],
    /// The workload.
    pub workload: Workload,
    /// Its plots.
    pub plots: &'static [PlotSpec],
    /// The paper's numbers.
    pub published: &'static [Published],
}

/// A speedup an experiment derives from two of its systems: `faster`'s
/// files/s over `slower`'s in each phase, recorded for `faster` under
/// `metric` (what the 2002 paper's factors are, §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Factor {
    /// The system with the optimisation on.
    pub faster: &'static str,
    /// The same system with it off.
    pub slower: &'static str,
    /// The metric the factor is recorded as.
    pub metric: &'static str,
}

/// The MH folder's factors: soft updates with dirhash off and on, dirhash
/// with soft updates on and off. The paper's path through its lattice
/// (Fig. 10) is soft updates first (dirhash off), then dirhash with soft
/// updates on.
pub const MH_FACTORS: &[Factor] = &[
    Factor { faster: "ffs-softdep-linear", slower: "ffs-linear", metric: "x SU" },
    Factor { faster: "ffs-softdep", slower: "ffs-m8r0", metric: "x SU" },
    Factor { faster: "ffs-softdep", slower: "ffs-softdep-linear", metric: "x DH" },
    Factor { faster: "ffs-m8r0", slower: "ffs-linear", metric: "x DH" },
];

/// The factors `e` derives once its systems have run.
pub fn factors(e: &Experiment) -> &'static [Factor] {
    match e.workload {
        Workload::MhFolder => MH_FACTORS,
        _ => &[],
    }
}

/// The full factorial `e`'s systems form, if they form one (see
/// `crate::factorial`).
pub fn lattice(e: &Experiment) -> Option<&'static Lattice> {
    match e.workload {
        Workload::Buildworld => Some(&BUILDWORLD_LATTICE),
        _ => None,
    }
}

/// The metric the 2000 paper's macrobenchmarks are normalized in (§8: "we
/// normalize performance by dividing [...] FFS-async [...] by each
/// measured result"): FFS-async's time over the system's.
pub const RELATIVE: &str = "x async";

/// The system `e`'s results are normalized to (see [`RELATIVE`]), if any.
pub fn relative_to(e: &Experiment) -> Option<&'static str> {
    match e.workload {
        Workload::PostMark
        | Workload::PostMarkLarge
        | Workload::SshBuild
        | Workload::Netnews
        | Workload::Sdet => Some("ffs-async"),
        _ => None,
    }
}

/// The metric of the aged-FFS experiment (1995 Fig. 8): the aged system's
/// throughput over the empty one's, in the same phase at the same size.
pub const OF_EMPTY: &str = "x empty";

/// The (aged, empty) pair of systems `e` compares in [`OF_EMPTY`], if any.
pub fn aged_pair(e: &Experiment) -> Option<(&'static str, &'static str)> {
    match e.workload {
        Workload::AgedSequential => Some(("ffs-aged", "ffs-m7r0")),
        _ => None,
    }
}

/// Whether `e` mounts its systems with dirhash off. The 2000 paper's
/// FreeBSD of January 2000 had no dirhash (it dates from 2001, 2002 §3),
/// and its macrobenchmarks hold directories large enough for dirhash to
/// hash (PostMark: 10,000 and 150,000 files in one). The microbenchmarks
/// keep the registry's setting: their 50 files a directory stay under
/// dirhash's 2.5 KB minimum, so they scan linearly either way.
pub fn dirhash_off(e: &Experiment) -> bool {
    relative_to(e).is_some()
}

/// The experiment called `id`.
pub fn by_id(id: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.id == id)
}

/// Systems that experiments name but the registry does not have, with why:
/// variants of a feature fslab lacks.
pub fn missing_feature(system: &str) -> Option<&'static str> {
    MISSING.iter().find(|(name, _)| *name == system).map(|(_, why)| *why)
}

/// Systems the papers compare that fslab has no way to run yet, and why
/// (none at present).
const MISSING: &[(&str, &str)] = &[];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_an_experiment_names_is_known_or_not_yet() {
        for e in EXPERIMENTS {
            for s in e.systems {
                assert!(crate::system::by_name(s).is_some() || missing_feature(s).is_some(), "{}: {s}", e.id);
            }
            assert_eq!(by_id(e.id).map(|f| f.id), Some(e.id));
            let terms: Vec<String> =
                lattice(e).map_or(Vec::new(), |l| (0..l.systems.len()).map(|m| l.term(m)).collect());
            for p in e.published {
                let known = e.systems.contains(&p.system) || terms.iter().any(|t| t == p.system);
                assert!(known, "{}: published for {}", e.id, p.system);
            }
            if let Some(l) = lattice(e) {
                assert!(
                    l.systems.len().is_power_of_two() && l.systems.len() == 1 << l.factors.len(),
                    "{}",
                    e.id
                );
                assert!(l.systems.iter().all(|s| e.systems.contains(s)), "{}: a cell it does not run", e.id);
            }
            for f in factors(e) {
                assert!(e.systems.contains(&f.faster) && e.systems.contains(&f.slower), "{}: {f:?}", e.id);
            }
            if let Some(base) = relative_to(e) {
                assert!(e.systems.contains(&base), "{}: normalized to {base}", e.id);
            }
            if let Some((aged, empty)) = aged_pair(e) {
                assert!(e.systems.contains(&aged) && e.systems.contains(&empty), "{}: {aged}/{empty}", e.id);
                assert!(crate::system::is_aged(aged) && !crate::system::is_aged(empty), "{}", e.id);
            }
        }
    }
}
