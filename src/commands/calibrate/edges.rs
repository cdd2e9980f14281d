//! Part (e) of calibrate: the statistics at the edges (issue 31), in
//! simulation. The CI's coverage at 2 to 10 units a side; the boot-level
//! test's A/A rate and power at 3, 4, 6 and 10 boots for between-boot
//! shares 0.2, 0.5 and 0.9; plan-runs' recommendations against the power
//! the report's test really has; hosts named as differing in A/A fleets,
//! and the pooled CI's coverage; the heavy-tail cost of the verdict's
//! agreement rule. The figures the docs quote come from here.

use serde::Serialize;

use crate::analysis::hosts::{correct_differs, pool, HostEstimate, Pooled};
use crate::stats::bootstrap::stream_seed;
use crate::stats::calibrate::{calibration_cov, Shape, SHAPES};
use crate::stats::edges::{
    boot_level, heavy_tail_power, report_ratio_ci, small_coverage, BootLevel,
};
use crate::stats::power::{planner_reaches, units_for_power, ReportTest};

/// Units a side of the coverage table.
pub const SMALL_NS: [usize; 5] = [2, 3, 4, 6, 10];
/// Boots a side and between-boot shares of the boot-level table.
pub const BOOTS: [usize; 4] = [3, 4, 6, 10];
pub const SHARES: [f64; 3] = [0.2, 0.5, 0.9];
/// Runs per boot, and the shift (run CoV 1%) of the boot-level power.
pub const RUNS_PER_BOOT: usize = 5;
pub const BOOT_SHIFT: f64 = 0.015;
/// Hosts per A/A fleet and metrics per report.
pub const FLEET_HOSTS: [usize; 3] = [3, 5, 8];
pub const FLEET_METRICS: usize = 8;
/// Runs a side on each host of an A/A fleet.
pub const FLEET_RUNS: usize = 10;

/// How big part (e) is.
#[derive(Clone, Debug, Serialize)]
pub struct EdgeSizes {
    pub trials: usize,
    pub resamples: usize,
    /// Simulated fleet reports per fleet size.
    pub fleet_trials: usize,
    /// Simulated experiments per plan-runs check.
    pub plan_trials: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct CoverageRow {
    pub shape: Shape,
    /// (n, the report's CI, the expanded percentile bootstrap alone).
    pub cells: Vec<(usize, f64, f64)>,
}

/// Coverage of the 95% CI at [`SMALL_NS`] for every shape.
pub fn coverage_table(s: &EdgeSizes, seed: u64) -> Vec<CoverageRow> {
    SHAPES
        .iter()
        .enumerate()
        .map(|(i, &shape)| CoverageRow {
            shape,
            cells: SMALL_NS
                .iter()
                .enumerate()
                .map(|(j, &n)| {
                    let (r, b) = small_coverage(
                        shape,
                        n,
                        calibration_cov(shape),
                        0.02,
                        s.trials,
                        s.resamples,
                        stream_seed(seed, 300 + (i * 8 + j) as u64),
                    );
                    (n, r, b)
                })
                .collect(),
        })
        .collect()
}

/// The boot-level test at [`BOOTS`] x [`SHARES`].
pub fn boot_table(s: &EdgeSizes, seed: u64) -> Vec<BootLevel> {
    let mut out = Vec::new();
    for (i, &share) in SHARES.iter().enumerate() {
        for (j, &boots) in BOOTS.iter().enumerate() {
            out.push(boot_level(
                boots,
                RUNS_PER_BOOT,
                share,
                BOOT_SHIFT,
                0.05,
                s.trials,
                stream_seed(seed, 400 + (i * 8 + j) as u64),
            ));
        }
    }
    out
}

/// One plan-runs check: the effect (in standard deviations) at which the
/// planner's own power at `n` is 80%, so that it recommends n, and the
/// power an independent simulation of the report's verdict finds there.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PlanCheck {
    pub test: ReportTest,
    pub n: usize,
    pub es: f64,
    /// What plan-runs recommends at that effect (n, unless the planner's
    /// simulated power is not monotone there).
    pub recommended: usize,
    /// Power of the report's verdict at the recommendation, simulated with
    /// other draws than the planner's.
    pub realised: f64,
}

/// [`PlanCheck`] for every n in `ns` and the given test, at alpha 0.05.
pub fn plan_checks(test: ReportTest, ns: &[usize], s: &EdgeSizes, seed: u64) -> Vec<PlanCheck> {
    use crate::stats::power::PLAN_SEED as POWER_SEED;
    ns.iter()
        .map(|&n| {
            // The smallest effect at which the planner's power at n reaches
            // 80%, by bisection on the effect (power grows with it).
            let (mut lo, mut hi) = (0.0, 20.0);
            for _ in 0..40 {
                let mid = 0.5 * (lo + hi);
                if planner_reaches(test, mid, n, 0.05, 0.8, POWER_SEED) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let es = hi;
            let recommended =
                units_for_power(test, es * 0.01, 0.01, 0.05, 0.8, POWER_SEED).unwrap_or(0);
            let realised = verdict_power(test, es, recommended, s.plan_trials, seed ^ n as u64);
            PlanCheck {
                test,
                n,
                es,
                recommended,
                realised,
            }
        })
        .collect()
}

/// Power of the report's verdict (the U test with the rank shift agreeing,
/// or Welch's t) on normal values shifted by `es` sd, n a side.
fn verdict_power(test: ReportTest, es: f64, n: usize, trials: usize, seed: u64) -> f64 {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use rayon::prelude::*;
    let hits: usize = (0..trials as u64)
        .into_par_iter()
        .map(|t| {
            let mut rng = SmallRng::seed_from_u64(stream_seed(seed, t));
            let base: Vec<f64> = (0..n)
                .map(|_| crate::stats::calibrate::draw(Shape::Normal, 0.01, &mut rng))
                .collect();
            let other: Vec<f64> = (0..n)
                .map(|_| crate::stats::calibrate::draw(Shape::Normal, 0.01, &mut rng) + es)
                .collect();
            let hit = match test {
                ReportTest::Rank => crate::stats::calibrate::verdict(&base, &other, 0, 0),
                ReportTest::Welch => crate::stats::welch::welch_test(&base, &other)
                    .is_some_and(|w| w.p < 0.05 && w.t > 0.0),
            };
            usize::from(hit && other.iter().sum::<f64>() > base.iter().sum::<f64>())
        })
        .sum();
    hits as f64 / trials as f64
}

/// A/A fleets: per fleet size, the fraction of reports of
/// [`FLEET_METRICS`] metrics that name a host (Holm over the report, as the
/// fleet report decides), the same without any correction (each host's
/// residual against the normal quantile, as before), and the pooled 95%
/// CI's coverage of the true ratio 1.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FleetRow {
    pub hosts: usize,
    pub named: f64,
    pub named_uncorrected: f64,
    pub pooled_coverage: f64,
}

pub fn fleet_table(s: &EdgeSizes, seed: u64) -> Vec<FleetRow> {
    FLEET_HOSTS
        .iter()
        .map(|&k| {
            fleet_aa(
                k,
                FLEET_METRICS,
                s.fleet_trials,
                s.resamples.min(2000),
                seed ^ k as u64,
            )
        })
        .collect()
}

/// One [`FleetRow`]: `trials` reports of `metrics` metrics on `hosts`
/// identical hosts, [`FLEET_RUNS`] normal runs a side (CoV 1%) each, every
/// host's CI the report's.
pub fn fleet_aa(
    hosts: usize,
    metrics: usize,
    trials: usize,
    resamples: usize,
    seed: u64,
) -> FleetRow {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use rayon::prelude::*;
    let z = crate::stats::special::normal_quantile(0.975);
    let (named, raw, covered, pooled): (usize, usize, usize, usize) = (0..trials as u64)
        .into_par_iter()
        .map(|t| {
            let ts = stream_seed(seed, t);
            let mut rng = SmallRng::seed_from_u64(ts);
            let mut pools: Vec<Pooled> = (0..metrics)
                .map(|mi| {
                    let est: Vec<Option<HostEstimate>> = (0..hosts)
                        .map(|h| {
                            let mut side = || -> Vec<f64> {
                                (0..FLEET_RUNS)
                                    .map(|_| {
                                        crate::stats::calibrate::draw(Shape::Normal, 0.01, &mut rng)
                                    })
                                    .collect()
                            };
                            let (b, o) = (side(), side());
                            let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
                            let ci = report_ratio_ci(
                                &b,
                                &o,
                                resamples,
                                stream_seed(ts, (mi * hosts + h) as u64),
                            )?;
                            Some(HostEstimate {
                                ratio: mean(&o) / mean(&b),
                                ratio_ci: ci,
                                base_sign: 1.0,
                                df: Some((2 * FLEET_RUNS - 2) as f64),
                            })
                        })
                        .collect();
                    pool(&est, 0.95)
                })
                .collect();
            let raw = pools
                .iter()
                .any(|p| p.residual.iter().flatten().any(|r| r.abs() > z));
            let (cov, n) = match pools[0].ratio_ci {
                Some((lo, hi)) => (usize::from(lo <= 1.0 && 1.0 <= hi), 1),
                None => (0, 0),
            };
            let mut refs: Vec<&mut Pooled> = pools.iter_mut().collect();
            correct_differs(&mut refs, 0.95);
            let named = pools.iter().any(|p| p.differs.contains(&Some(true)));
            (usize::from(named), usize::from(raw), cov, n)
        })
        .reduce(
            || (0, 0, 0, 0),
            |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3),
        );
    FleetRow {
        hosts,
        named: named as f64 / trials as f64,
        named_uncorrected: raw as f64 / trials as f64,
        pooled_coverage: covered as f64 / pooled.max(1) as f64,
    }
}

/// The heavy-tail cost at n = 30, +20% and +40%, Pareto tail index 2.5 and 3:
/// (tail, shift, verdict's power, the U test's alone).
pub fn heavy_tail_table(s: &EdgeSizes, seed: u64) -> Vec<(f64, f64, f64, f64)> {
    let mut out = Vec::new();
    for (i, &tail) in [2.5, 3.0].iter().enumerate() {
        for (j, &shift) in [0.2, 0.4].iter().enumerate() {
            let (v, u) = heavy_tail_power(
                tail,
                30,
                shift,
                s.trials,
                stream_seed(seed, 500 + (i * 4 + j) as u64),
            );
            out.push((tail, shift, v, u));
        }
    }
    out
}

/// Everything part (e) prints.
#[derive(Clone, Debug, Serialize)]
pub struct Edges {
    pub coverage: Vec<CoverageRow>,
    pub boots: Vec<BootLevel>,
    pub plans: Vec<PlanCheck>,
    pub fleets: Vec<FleetRow>,
    pub heavy: Vec<(f64, f64, f64, f64)>,
}

impl EdgeSizes {
    pub fn new(quick: bool) -> EdgeSizes {
        EdgeSizes {
            trials: if quick { 2000 } else { 4000 },
            resamples: 2000,
            fleet_trials: if quick { 400 } else { 1000 },
            plan_trials: if quick { 4000 } else { 10_000 },
        }
    }
}

/// Every table of part (e).
pub fn edges(s: &EdgeSizes, seed: u64) -> Edges {
    let mut plans = plan_checks(ReportTest::Rank, &[4, 5, 6, 7, 8, 10, 14, 20], s, seed);
    plans.extend(plan_checks(ReportTest::Welch, &[3, 4, 5, 6, 7], s, seed));
    Edges {
        coverage: coverage_table(s, seed),
        boots: boot_table(s, seed),
        plans,
        fleets: fleet_table(s, seed),
        heavy: heavy_tail_table(s, seed),
    }
}
