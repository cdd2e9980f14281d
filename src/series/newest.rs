//! The newest experiment of a history judged against those before it: the
//! question a CI job asks of each commit ("did this one regress?"), which
//! change-point search cannot answer for the last one or two points (a
//! permutation test needs several on each side of a split).
//!
//! The test is on experiment medians, with the drift between experiments
//! as a random effect: each experiment's median is `level + drift + noise`,
//! where the drift (warm machine, other tenants, a reboot) is shared by all
//! runs of one experiment and the noise shrinks with its runs. A two-sample
//! test on the runs alone would take the drift of the newest experiment for
//! a change (its runs are not independent of each other across
//! experiments); the spread of the earlier medians measures the drift, and
//! the newest's own runs its noise. Kept apart from `changepoint` (which
//! looks for steps anywhere) on purpose.

use serde::Serialize;

/// The fewest earlier experiments a verdict needs: two degrees of freedom
/// for the spread of their medians.
pub const MIN_EARLIER: usize = 3;
/// The most earlier experiments used: the recent past is the reference a
/// commit is judged against, not the whole history.
pub const MAX_EARLIER: usize = 20;

/// One experiment as the test sees it: the median of its runs' values and
/// its runs' values themselves (for the median's own uncertainty).
#[derive(Clone, Debug)]
pub struct Experiment<'a> {
    pub median: f64,
    pub values: &'a [f64],
}

/// The newest `newest` experiments (1 or 2) against the earlier ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NewestTest {
    /// How many of the newest experiments were pooled (1 or 2).
    pub newest: usize,
    /// How many earlier experiments are the reference.
    pub earlier: usize,
    /// Mean of the earlier experiments' medians.
    pub reference: f64,
    /// Mean of the newest experiments' medians.
    pub level: f64,
    /// (level - reference) / its standard error.
    pub t: f64,
    /// Degrees of freedom of `t`: earlier - 1 (the drift's estimate).
    pub df: f64,
    /// The drift between experiments: its estimated standard deviation.
    pub drift_sd: f64,
}

impl NewestTest {
    /// The change relative to the reference level, e.g. 0.3 for +30%.
    pub fn relative(&self) -> f64 {
        self.level / self.reference - 1.0
    }
}

/// The squared standard error of a median of `values`: pi/2 times the
/// mean's (the median's asymptotic efficiency under normal noise). NaN for
/// fewer than 2 values.
fn median_var(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return f64::NAN;
    }
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    std::f64::consts::FRAC_PI_2 * var / n
}

/// The newest `newest` experiments of `exps` (oldest first) against up to
/// [`MAX_EARLIER`] experiments before them, starting at `from` (the first
/// experiment after the last earlier change point: a past step is not
/// drift). None when fewer than [`MIN_EARLIER`] earlier experiments remain
/// or a value is not finite.
///
/// With k earlier medians m_i of sample variance s_b^2 and mean squared
/// median error e^2, the drift's variance is tau^2 = max(0, s_b^2 - e^2);
/// the newest j experiments' mean median then has variance tau^2 / j plus
/// their own squared errors / j^2, and the reference's is s_b^2 / k. The
/// statistic is referred to Student's t with k - 1 degrees of freedom
/// (conservative: the drift's estimate is the scarcer one).
///
/// Assumes the earlier experiments share one level (no step among them
/// after `from`) and independent drift per experiment; not checked.
pub fn judge(exps: &[Experiment], from: usize, newest: usize) -> Option<NewestTest> {
    let n = exps.len();
    if newest == 0 || n < newest {
        return None;
    }
    let end = n - newest;
    let start = from.max(end.saturating_sub(MAX_EARLIER));
    let earlier = exps.get(start..end)?;
    let recent = &exps[end..];
    let k = earlier.len();
    if k < MIN_EARLIER {
        return None;
    }
    let ms: Vec<f64> = earlier.iter().map(|e| e.median).collect();
    let reference = ms.iter().sum::<f64>() / k as f64;
    let s_b2 = ms.iter().map(|m| (m - reference).powi(2)).sum::<f64>() / (k as f64 - 1.0);
    // Earlier experiments with one run have no own error: count them as
    // drift alone (the conservative side).
    let errs: Vec<f64> = earlier
        .iter()
        .map(|e| median_var(e.values))
        .filter(|v| v.is_finite())
        .collect();
    let e2 = match errs.len() {
        0 => 0.0,
        c => errs.iter().sum::<f64>() / c as f64,
    };
    let tau2 = (s_b2 - e2).max(0.0);
    let j = newest as f64;
    let level = recent.iter().map(|e| e.median).sum::<f64>() / j;
    // A newest experiment of one run has no error of its own: the earlier
    // ones' mean error stands in for it.
    let own: f64 = recent
        .iter()
        .map(|e| {
            Some(median_var(e.values))
                .filter(|v| v.is_finite())
                .unwrap_or(e2)
        })
        .sum();
    let var = tau2 / j + own / (j * j) + s_b2 / k as f64;
    let t = (level - reference) / var.sqrt();
    let finite = [reference, level, var].iter().all(|v| v.is_finite());
    (finite && var > 0.0).then_some(NewestTest {
        newest,
        earlier: k,
        reference,
        level,
        t,
        df: k as f64 - 1.0,
        drift_sd: tau2.sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(values: &[f64]) -> Experiment<'_> {
        let mut s = values.to_vec();
        s.sort_by(f64::total_cmp);
        Experiment {
            median: s[s.len() / 2],
            values,
        }
    }

    #[test]
    fn too_few_earlier_experiments_give_no_verdict() {
        let a = [1.0, 1.1, 0.9];
        let exps = vec![exp(&a), exp(&a), exp(&a)];
        assert!(judge(&exps, 0, 1).is_none());
        assert!(judge(&exps[..1], 0, 2).is_none());
    }

    #[test]
    fn drift_between_experiments_widens_the_test() {
        // Runs tight within each experiment (+-0.1%), medians 2% apart:
        // a within-run test would call the newest's +2% certain.
        let levels = [1.00, 1.02, 0.98, 1.01, 0.99, 1.02];
        let runs: Vec<Vec<f64>> = levels
            .iter()
            .map(|l| {
                (0..10)
                    .map(|i| l * (1.0 + 0.001 * (i % 3) as f64))
                    .collect()
            })
            .collect();
        let exps: Vec<Experiment> = runs.iter().map(|r| exp(r)).collect();
        let t = judge(&exps, 0, 1).unwrap();
        assert!(t.drift_sd > 0.01, "{t:?}");
        assert!(t.t.abs() < 2.0, "{t:?}");
    }
}
