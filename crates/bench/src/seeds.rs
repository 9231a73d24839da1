//! Several seeds. One seed is one rotational phase of the disks and one
//! set of the workloads' random choices, and a verdict a few per cent from
//! its threshold may hold on one and not on the next. This module reads
//! `--seeds` ([`parse`]), reduces a value measured on each seed to its
//! [`Spread`], reads an experiment's results seed by seed for the report
//! ([`BySeed`]) and combines a check's per-seed verdicts ([`combine`]).
//! With one seed everything here gives back the one value as it was.

use crate::claims::check::{Check, Outcome, Verdict};
use crate::results::Results;

/// The most seeds one `--seeds` may name: each is a whole run of every
/// experiment chosen, so a slip like `1..1000000` is refused rather than
/// started.
pub const MAX_SEEDS: usize = 1000;

/// Reads `--seeds`: a range `A..B` (both ends included: `1..5` is five
/// seeds), a list `1,2,3`, or both (`1..3,7`). The seeds come back in the
/// order given; naming one twice, a range that ends before it starts, or
/// more than [`MAX_SEEDS`] is an error that says which.
pub fn parse(text: &str) -> Result<Vec<u64>, String> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("`{}` is not a seed (a whole number, 0 or more)", s.trim()))
    };
    let mut seeds: Vec<u64> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("`{text}`: an empty item (write a range 1..5 or a list 1,2,3)"));
        }
        let (first, last) = match item.split_once("..") {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(item)?;
                (n, n)
            }
        };
        if last < first {
            return Err(format!("`{item}`: the range ends before it starts"));
        }
        if (last - first) as u128 + 1 + seeds.len() as u128 > MAX_SEEDS as u128 {
            return Err(format!("`{text}`: more than {MAX_SEEDS} seeds"));
        }
        for seed in first..=last {
            if seeds.contains(&seed) {
                return Err(format!("`{text}`: seed {seed} is named twice"));
            }
            seeds.push(seed);
        }
    }
    Ok(seeds)
}

/// Seeds as the report names them: runs of three or more consecutive ones
/// as `1–5`, others one by one (`1–3, 7, 9`).
pub fn seed_list(seeds: &[u64]) -> String {
    let mut sorted = seeds.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("{}–{}", sorted[i], sorted[j]));
        } else {
            parts.extend(sorted[i..=j].iter().map(u64::to_string));
        }
        i = j + 1;
    }
    parts.join(", ")
}

/// One value over the seeds that measured it: the least, the median and
/// the greatest. Invariant: `min <= median <= max` and `count >= 1`
/// (values that are not numbers sort last and so never hide a range).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The least value.
    pub min: f64,
    /// The middle value; of an even count, the mean of the two middle ones.
    pub median: f64,
    /// The greatest value.
    pub max: f64,
    /// How many seeds measured it.
    pub count: usize,
}

impl Spread {
    /// One seed's value.
    pub fn one(value: f64) -> Spread {
        Spread { min: value, median: value, max: value, count: 1 }
    }

    /// The spread of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        Some(Spread { min, median, max, count: n })
    }

    /// The value written by `write`: alone for one seed, else the median
    /// followed by the range, `1.98 (1.95–2.01)`.
    pub fn show(&self, write: impl Fn(f64) -> String) -> String {
        if self.count == 1 {
            write(self.median)
        } else {
            format!("{} ({}–{})", write(self.median), write(self.min), write(self.max))
        }
    }
}

/// How a check's measured value reads in the report: two decimals and the
/// check's unit, `1.98 (1.95–2.01) x FFS` over several seeds.
pub fn show_check_value(check: &Check, spread: &Spread) -> String {
    format!("{} {}", spread.show(|v| format!("{v:.2}")), check.unit)
}

/// A check's outcome over several seeds from its outcome on each, in seed
/// order: *reproduced* or *not reproduced* only when every seed says so,
/// *unstable* when they differ (naming the seeds where it is not
/// reproduced); *not yet* when a system it needs is missing; *not run*
/// when any seed lacks a point (naming the seed), since a verdict from the
/// other seeds would not be one over every seed.
pub fn combine(check: &Check, outcomes: &[(u64, Outcome)]) -> Outcome {
    let Some((_, first)) = outcomes.first() else {
        return Outcome { verdict: Verdict::NoData, measured: "no seed ran".into(), value: None };
    };
    if outcomes.len() == 1 {
        return first.clone();
    }
    if let Some((_, later)) = outcomes.iter().find(|(_, o)| o.verdict == Verdict::NotYet) {
        return later.clone();
    }
    let missing: Vec<&(u64, Outcome)> = outcomes.iter().filter(|(_, o)| o.value.is_none()).collect();
    if let Some((seed, o)) = missing.first() {
        if missing.len() == outcomes.len() && outcomes.iter().all(|(_, other)| other.measured == o.measured) {
            return o.clone();
        }
        return Outcome { verdict: o.verdict, measured: format!("seed {seed}: {}", o.measured), value: None };
    }
    let values: Vec<f64> = outcomes.iter().filter_map(|(_, o)| o.value).collect();
    let Some(spread) = Spread::of(&values) else {
        return first.clone();
    };
    let mut measured = show_check_value(check, &spread);
    let failing: Vec<u64> =
        outcomes.iter().filter(|(_, o)| o.verdict == Verdict::NotReproduced).map(|(s, _)| *s).collect();
    let verdict = if failing.is_empty() {
        Verdict::Reproduced
    } else if failing.len() == outcomes.len() {
        Verdict::NotReproduced
    } else {
        let seeds = if failing.len() == 1 { "seed" } else { "seeds" };
        measured.push_str(&format!("; not reproduced on {seeds} {}", seed_list(&failing)));
        Verdict::Unstable
    };
    Outcome { verdict, measured, value: Some(spread.median) }
}

/// One experiment's results read seed by seed, for the report's tables
/// and plots: each value read on every seed's view and reduced to its
/// [`Spread`]. With one seed the results are read as they are.
pub struct BySeed<'a> {
    results: &'a Results,
    /// Each seed's view, in seed order; empty for one seed.
    views: Vec<Results>,
}

impl<'a> BySeed<'a> {
    /// `experiment`'s results in `results`, seed by seed.
    pub fn new(results: &'a Results, experiment: &str) -> BySeed<'a> {
        let seeds = results.seeds(experiment);
        let views =
            if seeds.len() > 1 { seeds.iter().map(|&s| results.at_seed(s)).collect() } else { vec![] };
        BySeed { results, views }
    }

    /// Whether more than one seed ran.
    pub fn several(&self) -> bool {
        !self.views.is_empty()
    }

    /// What `read` finds on each seed that has it, as a spread.
    pub fn spread(&self, read: impl Fn(&Results) -> Option<f64>) -> Option<Spread> {
        if self.views.is_empty() {
            return read(self.results).map(Spread::one);
        }
        let values: Vec<f64> = self.views.iter().filter_map(&read).collect();
        Spread::of(&values)
    }

    /// [`Results::series`] over the seeds: at each x any seed measured, in
    /// order, the spread of the values there.
    pub fn series(&self, experiment: &str, system: &str, phase: &str, metric: &str) -> Vec<(f64, Spread)> {
        if self.views.is_empty() {
            return self
                .results
                .series(experiment, system, phase, metric)
                .into_iter()
                .map(|(x, v)| (x, Spread::one(v)))
                .collect();
        }
        let mut xs: Vec<f64> = self
            .views
            .iter()
            .flat_map(|r| r.series(experiment, system, phase, metric))
            .map(|(x, _)| x)
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.into_iter()
            .filter_map(|x| Some((x, self.spread(|r| r.value(experiment, system, phase, metric, x))?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_a_range_a_list_or_both_and_a_bad_one_is_named() {
        assert_eq!(parse("1..5"), Ok(vec![1, 2, 3, 4, 5]));
        assert_eq!(parse("1,2,3"), Ok(vec![1, 2, 3]));
        assert_eq!(parse(" 7 , 1..2 "), Ok(vec![7, 1, 2]));
        assert_eq!(parse("4"), Ok(vec![4]));
        assert_eq!(parse("3..3"), Ok(vec![3]));
        let err = |text: &str| parse(text).expect_err(text);
        assert!(err("5..1").contains("ends before it starts"), "{}", err("5..1"));
        assert!(err("1,x").contains("`x` is not a seed"), "{}", err("1,x"));
        assert!(err("-1").contains("not a seed"), "{}", err("-1"));
        assert!(err("1,,2").contains("empty item"), "{}", err("1,,2"));
        assert!(err("").contains("empty item"));
        assert!(err("1..3,2").contains("seed 2 is named twice"), "{}", err("1..3,2"));
        assert!(err("0..18446744073709551615").contains("more than 1000"));
        assert!(err("1..").contains("not a seed"));
    }

    #[test]
    fn seed_lists_shorten_runs() {
        assert_eq!(seed_list(&[1]), "1");
        assert_eq!(seed_list(&[5, 4, 3, 2, 1]), "1–5");
        assert_eq!(seed_list(&[1, 2, 7, 9, 10, 11]), "1, 2, 7, 9–11");
    }

    #[test]
    fn a_spread_is_the_least_the_median_and_the_greatest() {
        let s = Spread::of(&[2.01, 1.95, 1.98]).expect("values");
        assert_eq!((s.min, s.median, s.max, s.count), (1.95, 1.98, 2.01, 3));
        assert_eq!(s.show(|v| format!("{v:.2}")), "1.98 (1.95–2.01)");
        let even = Spread::of(&[4.0, 1.0, 2.0, 3.0]).expect("values");
        assert_eq!((even.min, even.median, even.max), (1.0, 2.5, 4.0));
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::one(1.5).show(|v| format!("{v}")), "1.5", "one seed: the value alone");
        let odd = Spread::of(&[1.0, f64::NAN, 3.0]).expect("values");
        assert!(odd.max.is_nan() && odd.min == 1.0, "not a number sorts last");
    }
}
