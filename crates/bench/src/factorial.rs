//! The 2002 paper's linear model with every interaction (§4.3, Tables 2
//! and 3), fitted to a full factorial: each of k optimisations on or off,
//! one system per combination, 2^k cells.
//!
//! The model is `t = C_base + Σ_S C_S · Π_{i∈S} δ_i` over every non-empty
//! set S of the factors, with δ_i = 1 when factor i is on and 0 when off
//! (the paper's coding, not Yates' ±1). It has 2^k coefficients for 2^k
//! cells, so least squares fits the cells' times exactly (the paper had
//! four runs a cell; a deterministic run needs one, and the model fitted
//! to the means is the same): each coefficient is the alternating sum of
//! the cells below it in the lattice,
//! `C_S = Σ_{T⊆S} (−1)^{|S|−|T|} t(T)` — C_SU is t(SU) − t(base); C_DP:SU
//! is t(DP+SU) − t(DP) − t(SU) + t(base), the saving the two fail to add
//! up to. [`fit`] computes them in k passes over the cells, as Yates'
//! algorithm computes ±1 effects.
//!
//! [`derive`] fits an experiment's lattice ([`Lattice`]) per phase and
//! records the other coefficients as percentages of the base time, beside each
//! cell's time as a percentage of the base's (Table 1's "Time%").

use crate::results::{Point, Results};

/// The metric of a cell's time as a percentage of the base cell's, in
/// the same phase (2002 Table 1's "Time%").
pub const OF_BASE: &str = "% base";

/// The metric of a coefficient as a percentage of the base time (2002
/// Table 2's "∆ %Time"); recorded with the term's name as the system.
pub const COEFFICIENT: &str = "coef %";

/// A full factorial an experiment runs: which system is which cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lattice {
    /// The factors' short names, in the order they join in an
    /// interaction's name: the paper's tables sort them ("DP:SU",
    /// "DH:SU").
    pub factors: &'static [&'static str],
    /// The system of each cell, indexed by its set of factors on: bit i
    /// of the index is `factors[i]`. Index 0, every factor off, is the
    /// base.
    pub systems: &'static [&'static str],
}

impl Lattice {
    /// The base cell's system: every factor off.
    pub fn base(&self) -> &'static str {
        self.systems[0]
    }

    /// The name of the term of the factors set in `mask`: "base" for
    /// none, else their names joined by ':' ("DP:SU").
    pub fn term(&self, mask: usize) -> String {
        if mask == 0 {
            return "base".into();
        }
        let names: Vec<&str> =
            self.factors.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, f)| *f).collect();
        names.join(":")
    }

    /// The factors set in the cell of `system`, if it is one.
    pub fn mask_of(&self, system: &str) -> Option<usize> {
        self.systems.iter().position(|s| *s == system)
    }
}

/// The coefficients of the model with every interaction, from the times
/// of a full factorial's cells (`times[mask]`, as [`Lattice::systems`]
/// indexes them): `coefficients[mask]` is C of that set of factors, and
/// `coefficients[0]` is the base. `None` unless there are 2^k cells.
pub fn fit(times: &[f64]) -> Option<Vec<f64>> {
    let cells = times.len();
    if cells == 0 || !cells.is_power_of_two() {
        return None;
    }
    let mut c = times.to_vec();
    // One pass per factor: within each pair of cells that differ in
    // factor `bit` alone, the one with it on keeps only what the factor
    // adds. After every pass, cell S holds the alternating sum above.
    let mut bit = 1;
    while bit < cells {
        for mask in 0..cells {
            if mask & bit != 0 {
                c[mask] -= c[mask ^ bit];
            }
        }
        bit <<= 1;
    }
    Some(c)
}

/// The model's time for the cell `mask`: the sum of the coefficients of
/// every set of factors within it (the inverse of [`fit`]).
pub fn predict(coefficients: &[f64], mask: usize) -> f64 {
    (0..coefficients.len()).filter(|s| s & !mask == 0).map(|s| coefficients[s]).sum()
}

/// Fits `lattice`, the systems of experiment `experiment`, in every phase
/// each cell measured in seconds, and records each cell's [`OF_BASE`] and
/// each term's [`COEFFICIENT`] (under the term's name as the system; the
/// base's, 100 by definition, is not recorded).
pub fn derive(experiment: &str, lattice: &Lattice, results: &mut Results) {
    // The run's points are one seed's: the derived ones carry it too.
    let mut phases: Vec<(String, u64)> = Vec::new();
    for p in results
        .points
        .iter()
        .filter(|p| p.experiment == experiment && p.system == lattice.base() && p.metric == "s")
    {
        if !phases.iter().any(|(phase, _)| *phase == p.phase) {
            phases.push((p.phase.clone(), p.seed));
        }
    }
    let mut derived = Vec::new();
    for (phase, seed) in phases {
        let times: Option<Vec<f64>> =
            lattice.systems.iter().map(|s| results.value(experiment, s, &phase, "s", 0.0)).collect();
        let Some(times) = times else { continue };
        let base = times[0];
        if base <= 0.0 {
            continue;
        }
        let Some(coefficients) = fit(&times) else { continue };
        let point = |system: String, metric: &str, value: f64| Point {
            experiment: experiment.to_string(),
            seed,
            system,
            phase: phase.clone(),
            x: 0.0,
            metric: metric.to_string(),
            value,
        };
        for (system, t) in lattice.systems.iter().zip(&times) {
            derived.push(point(system.to_string(), OF_BASE, 100.0 * t / base));
        }
        // The base's own coefficient is 100% by definition: left out.
        for (mask, c) in coefficients.iter().enumerate().skip(1) {
            derived.push(point(lattice.term(mask), COEFFICIENT, 100.0 * c / base));
        }
    }
    results.points.extend(derived);
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE: Lattice =
        Lattice { factors: &["DH", "DP", "SU"], systems: &["a", "b", "c", "d", "e", "f", "g", "h"] };

    #[test]
    fn the_fit_recovers_known_coefficients_exactly() {
        // A model with every kind of term: main effects, pairs, the triple.
        let known = [100.0, 0.5, -14.0, 1.25, -42.0, -0.75, 4.5, -0.25];
        let times: Vec<f64> = (0..8).map(|m| predict(&known, m)).collect();
        assert_eq!(times[0], 100.0);
        assert_eq!(times[0b110], 100.0 - 14.0 - 42.0 + 4.5, "SU and DP on: their overlap added back");
        assert_eq!(times[0b111], known.iter().sum::<f64>());
        let fitted = fit(&times).expect("eight cells");
        assert_eq!(fitted, known.to_vec(), "exact on a saturated factorial");
        for (m, t) in times.iter().enumerate() {
            assert_eq!(predict(&fitted, m), *t, "the fit reproduces cell {m}");
        }
        // A change in one cell moves the terms that contain it and no other.
        let mut moved = times.clone();
        moved[0b101] += 2.0;
        let refit = fit(&moved).expect("eight cells");
        assert_eq!(refit[0b101], known[0b101] + 2.0);
        assert_eq!(refit[0b111], known[0b111] - 2.0);
        assert_eq!(refit[0b011], known[0b011]);
        assert_eq!(fit(&[1.0, 2.0, 3.0]), None, "not a factorial");
        assert_eq!(fit(&[]), None);
    }

    /// 2002 Table 1's eight cells with vmiodir off (the ranks read by the
    /// linear model of Table 2, which fits them to within 0.05 points):
    /// their fit gives Table 2's coefficients, since with 0/1 coding a
    /// main effect is its cell against the base, whatever the other
    /// factors do.
    #[test]
    fn table_1_without_vmiodir_gives_table_2() {
        // DH, DP, SU as bits 0, 1, 2; Time% of Table 1.
        let times = [100.00, 100.07, 85.72, 86.30, 57.29, 57.07, 47.57, 48.76];
        let c = fit(&times).expect("eight cells");
        let term = |name: &str| (0..8).find(|&m| THREE.term(m) == name).map(|m| c[m]).expect("a term");
        assert!((term("SU") + 42.71).abs() < 0.01, "SU {}", term("SU"));
        assert!((term("DP") + 14.28).abs() < 0.01, "DP {}", term("DP"));
        assert!((term("DP:SU") - 4.57).abs() < 0.05, "DP:SU {}", term("DP:SU"));
        assert!(term("DH").abs() < 0.1, "DH, not significant in Table 2: {}", term("DH"));
        assert_eq!(term("base"), 100.0);
    }

    #[test]
    fn terms_are_named_as_the_papers_tables_name_them() {
        let names: Vec<String> = (0..8).map(|m| THREE.term(m)).collect();
        assert_eq!(names, ["base", "DH", "DP", "DH:DP", "SU", "DH:SU", "DP:SU", "DH:DP:SU"]);
        assert_eq!((THREE.base(), THREE.mask_of("g"), THREE.mask_of("z")), ("a", Some(6), None));
    }
}
