//! What a check is and what evaluating one gives: the vocabulary the
//! claims, the seeds' combination (`crate::seeds`) and the report share,
//! apart from the claims so that `seeds` names no claim.

use crate::results::Results;

/// A check's or claim's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the criterion.
    Reproduced,
    /// Evaluated and outside it.
    NotReproduced,
    /// A system or feature it needs is not in fslab yet.
    NotYet,
    /// Its experiment has not been run.
    NoData,
    /// Reproduced on some seeds and not on others.
    Unstable,
}

impl Verdict {
    /// The words the report uses.
    pub fn words(&self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::NotReproduced => "not reproduced",
            Verdict::NotYet => "not yet",
            Verdict::NoData => "not run",
            Verdict::Unstable => "unstable",
        }
    }
}

/// A check's evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// What was measured (or why nothing was).
    pub measured: String,
    /// The value measured (over several seeds, their median), if any.
    pub value: Option<f64>,
}

/// One part of a claim's pass criterion.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// What is checked, and the expected range.
    pub text: &'static str,
    /// The experiment it reads.
    pub experiment: &'static str,
    /// The systems it needs.
    pub needs: &'static [&'static str],
    /// Computes the measured value from the results (`None`: a point is
    /// missing) and whether it passes.
    pub eval: fn(&Results) -> Option<(f64, bool)>,
    /// How to print the measured value.
    pub unit: &'static str,
    /// Why the lab does not reproduce it, where that is known (empty
    /// otherwise): printed under the check when it is not reproduced.
    /// `docs/lab/analysis.md` gives the measurements behind each.
    pub why_not: &'static str,
}
