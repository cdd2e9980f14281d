//! The values an analysis is made of: options, cells, comparisons,
//! verdicts and the whole `Analysis`. Its own file so that the parts of the
//! analysis (`cis`, `warnings`, `boots`) and the reports can name these
//! types without importing the code that computes them.

use serde::Serialize;

use crate::metric::MetricSpec;
use crate::stats;
pub use crate::stats::summary::Summary;
pub use crate::stats::tost::Equivalence;
use crate::store::StoredRun;

#[derive(Clone, Debug)]
pub struct Options {
    pub baseline: Option<String>,
    pub alpha: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub correction: Correction,
    pub ci_method: CiMethod,
    /// TOST margin as a fraction (0.01 for "is the overhead under 1%?").
    pub equivalence: Option<f64>,
    /// Whether what only the full outputs show is computed. False only
    /// where no output shows it (benchstat's layout prints medians, the
    /// verdict and the p; the `--fail-on` gate alone prints its line), and
    /// no verdict reads it:
    /// - the CIs of the ratio of means: the bootstrap, most of such a
    ///   report's time, is skipped wherever it cannot change a verdict
    ///   (`cis::skippable`), and the comparison says so
    ///   ([`Comparison::ci_skipped`]);
    /// - the detectable effect (`mde_pct`), shown beside the CIs;
    /// - the data's warnings (bimodal cells, drift, outliers, comparisons
    ///   that cannot reject).
    pub full: bool,
}

/// How p-values are corrected for testing many comparisons in one report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// Holm step-down: the chance of any false flag is at most alpha.
    Holm,
    /// Benjamini-Hochberg: at most alpha of the flags are expected false.
    Bh,
}

/// Which bootstrap CI of the ratio of means drives the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CiMethod {
    Percentile,
    Bca,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            baseline: None,
            alpha: 0.05,
            confidence: 0.95,
            resamples: 10_000,
            seed: 0x5d_e17a,
            correction: Correction::Holm,
            ci_method: CiMethod::Percentile,
            equivalence: None,
            full: true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Better,
    Worse,
    /// Not beyond noise: printed as `~`.
    Noise,
    /// The statistics are undefined here (too few samples, zero baseline).
    Undefined,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Noise => "~",
            Verdict::Undefined => "n/a",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub config: String,
    /// One value per successful non-warmup run, in run order (a run with
    /// several samples of the metric contributes their median); for runs in
    /// boots (kernel configs), one value per boot, in boot order: the mean
    /// of its runs' values (see `report::boots`).
    pub values: Vec<f64>,
    pub summary: Option<Summary>,
    /// Runs in boots: the boots behind `values` (`values.len()`); absent
    /// for runs on the host, as are the fields below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boots: Option<usize>,
    /// Runs in boots: how many runs each value of `values` is the mean of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_runs: Option<Vec<usize>>,
    /// Runs in boots: the between-boot share of the variance of runs,
    /// sigma_b^2 / (sigma_b^2 + sigma_w^2) (`boot_variance`'s ICC(1)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_share: Option<f64>,
    /// Runs in boots: the one-way random-effects ANOVA of the runs' values
    /// grouped by boot ([`stats::variance::one_way`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_variance: Option<stats::variance::VarianceComponents>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub config: String,
    /// 100 * (mean - baseline mean) / |baseline mean|: 100 * (ratio - 1)
    /// for a positive baseline, and of the sign of the change for a
    /// negative one (-50 to -51 is -2%).
    pub delta_mean_pct: Option<f64>,
    /// The same of the medians.
    pub delta_median_pct: Option<f64>,
    /// CI of mean / baseline mean, by the report's CI method. None when it
    /// is not estimable (then `ci_note` says why).
    pub ratio_ci: Option<(f64, f64)>,
    /// `ratio_ci` as a CI of `delta_mean_pct` (percent), as reports print it.
    pub delta_ci_pct: Option<(f64, f64)>,
    /// The same CI by the other method (percentile or BCa), for reference.
    pub ratio_ci_other_method: Option<(f64, f64)>,
    /// `ratio_ci_other_method` in percent, as `delta_ci_pct`.
    pub delta_ci_pct_other_method: Option<(f64, f64)>,
    /// Why there is no `ratio_ci`, when there is none.
    pub ci_note: Option<String>,
    /// median / baseline median.
    pub median_ratio: Option<f64>,
    /// Hodges-Lehmann shift (config - baseline, in the metric's unit) with
    /// its rank-based CI: the effect that matches the rank test.
    pub hl_shift: Option<stats::hodges_lehmann::ShiftEstimate>,
    /// TOST verdict on the ratio of means, when a margin was asked for.
    pub equivalence: Option<stats::tost::Equivalence>,
    /// Smallest shift (%) this comparison could detect with 80% power at its
    /// observed CoV and run counts.
    pub mde_pct: Option<f64>,
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    /// The test that gave `p`: the rank test, or Welch's t on boot means
    /// with fewer than 8 boots a side (shown only then).
    #[serde(skip_serializing_if = "is_rank")]
    pub test: stats::power::ReportTest,
    /// True when `ratio_ci` is Welch's t interval on the log ratio (fewer
    /// than 5 units a side), not the bootstrap (shown only then).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ci_small_sample: bool,
    pub verdict: Verdict,
    /// Why the verdict is undefined, when it is.
    pub note: Option<String>,
    /// True when `ratio_ci` was not computed because no output shows it
    /// ([`Options::full`]) and it certainly exists: the verdict is
    /// the one it would have allowed. Never in a report that prints CIs.
    #[serde(skip)]
    pub ci_skipped: bool,
}

fn is_rank(t: &stats::power::ReportTest) -> bool {
    *t == stats::power::ReportTest::Rank
}

impl Comparison {
    /// The comparison of `config` before anything is estimated: no delta,
    /// no CI, no test, verdict undefined.
    pub fn undefined(config: String) -> Comparison {
        Comparison {
            config,
            delta_mean_pct: None,
            delta_median_pct: None,
            ratio_ci: None,
            delta_ci_pct: None,
            ratio_ci_other_method: None,
            delta_ci_pct_other_method: None,
            ci_note: None,
            median_ratio: None,
            hl_shift: None,
            equivalence: None,
            mde_pct: None,
            p: None,
            p_adjusted: None,
            test: stats::power::ReportTest::Rank,
            ci_small_sample: false,
            verdict: Verdict::Undefined,
            note: None,
            ci_skipped: false,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct MetricAnalysis {
    pub workload: String,
    #[serde(flatten)]
    pub spec: MetricSpec,
    pub cells: Vec<Cell>,
    pub comparisons: Vec<Comparison>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FailedRun {
    pub block: u32,
    pub config: String,
    pub workload: String,
    pub warmup: bool,
    pub reason: String,
    pub stderr_tail: String,
}

/// Per-run value of a metric: the median of its samples in that run.
pub(crate) fn run_value(r: &StoredRun, metric: &str) -> Option<f64> {
    r.samples
        .get(metric)
        .and_then(|v| stats::summary::median(v))
}

/// Coefficient of variation of two samples around their own means, pooled:
/// sqrt of the pooled variance over the mean of the two means.
pub(crate) fn pooled_cov(a: &[f64], b: &[f64]) -> Option<f64> {
    let (sa, sb) = (stats::summary::summarize(a)?, stats::summary::summarize(b)?);
    let (va, vb) = (sa.stddev? * sa.stddev?, sb.stddev? * sb.stddev?);
    let pooled =
        ((a.len() - 1) as f64 * va + (b.len() - 1) as f64 * vb) / (a.len() + b.len() - 2) as f64;
    let m = (sa.mean + sb.mean) / 2.0;
    (m != 0.0).then(|| pooled.sqrt() / m.abs())
}

/// Why a ratio-of-means CI is "not estimable", said once for every format.
pub const NOT_ESTIMABLE: &str = "CI not estimable";

/// True when the comparison's CI was attempted and is not estimable (as
/// opposed to missing for want of runs).
pub fn ci_not_estimable(c: &Comparison) -> bool {
    c.ci_note
        .as_deref()
        .is_some_and(|n| n.starts_with(NOT_ESTIMABLE))
}

/// The baseline with its monitors against the same config without them.
#[derive(Clone, Debug, Serialize)]
pub struct MonitorOverhead {
    /// The control config (the baseline with monitors off).
    pub control: String,
    /// Per workload metric (telemetry aside): the baseline's change
    /// against the control, with the statistics of any comparison (the
    /// p-values corrected over these lines, as a family of their own).
    pub lines: Vec<OverheadLine>,
    /// What the experiment recorded of the profile's rate and cost.
    pub profile_rate: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct OverheadLine {
    pub workload: String,
    #[serde(flatten)]
    pub spec: MetricSpec,
    pub runs_with: usize,
    pub runs_without: usize,
    /// The comparison's Hodges-Lehmann shift and its CI, [shift, lo, hi],
    /// in percent of the control's median: the overhead's headline,
    /// because the probe's runs have a heavy right tail on a shared VM
    /// (a run in ten slowed by something else) that the mean's CI carries
    /// and the rank statistics, which the verdict rests on, do not.
    pub shift_pct: Option<[f64; 3]>,
    pub comparison: Comparison,
}
