//! Points derived from the measured ones after an experiment's systems
//! ran, one seed at a time: factors between systems, each system's time
//! relative to a base system, and an aged system's throughput over the
//! empty one's.

use crate::experiment::{aged_pair, factors, relative_to, Experiment, OF_EMPTY, RELATIVE};
use crate::results::{Point, Results};

/// Adds, for an experiment normalized to a system (`relative_to`), every
/// system's time relative to it in each phase and x both measured: the
/// base's seconds over the system's ([`RELATIVE`]; above 1 is faster).
pub fn derive_relative(e: &Experiment, results: &mut Results) {
    let Some(base) = relative_to(e) else { return };
    let derived: Vec<Point> = results
        .points
        .iter()
        .filter(|p| p.experiment == e.id && p.metric == "s" && p.value > 0.0)
        .filter_map(|p| {
            let b = results.value(e.id, base, &p.phase, "s", p.x)?;
            Some(Point {
                experiment: e.id.to_string(),
                seed: p.seed,
                system: p.system.clone(),
                phase: p.phase.clone(),
                x: p.x,
                metric: RELATIVE.to_string(),
                value: b / p.value,
            })
        })
        .collect();
    results.points.extend(derived);
}

/// Adds, for the aged-FFS experiment ([`aged_pair`]), the aged system's
/// MB/s over the empty one's in each phase and size both measured
/// ([`OF_EMPTY`]; 1995 Fig. 8's "percentage of the throughput").
pub fn derive_of_empty(e: &Experiment, results: &mut Results) {
    let Some((aged, empty)) = aged_pair(e) else { return };
    let derived: Vec<Point> = results
        .points
        .iter()
        .filter(|p| p.experiment == e.id && p.system == aged && p.metric == "MB/s")
        .filter_map(|p| {
            let base = results.value(e.id, empty, &p.phase, "MB/s", p.x).filter(|b| *b > 0.0)?;
            Some(Point { metric: OF_EMPTY.to_string(), value: p.value / base, ..p.clone() })
        })
        .collect();
    results.points.extend(derived);
}

/// Adds `e`'s factors (see [`factors`]) from the files/s its systems
/// measured: one point per phase both systems of a factor measured.
pub fn derive_factors(e: &Experiment, results: &mut Results) {
    let mut derived = Vec::new();
    for f in factors(e) {
        for p in results.points.iter().filter(|p| {
            p.experiment == e.id && p.system == f.faster && p.metric == "files/s" && p.value > 0.0
        }) {
            if let Some(slower) = results.value(e.id, f.slower, &p.phase, "files/s", p.x) {
                if slower > 0.0 {
                    derived.push(Point {
                        experiment: e.id.to_string(),
                        seed: p.seed,
                        system: f.faster.to_string(),
                        phase: p.phase.clone(),
                        x: p.x,
                        metric: f.metric.to_string(),
                        value: p.value / slower,
                    });
                }
            }
        }
    }
    results.points.extend(derived);
}
