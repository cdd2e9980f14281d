//! Parts (a) and (b) of calibrate, in simulation: the A/A false-positive
//! rate and CI coverage per noise shape, and the detection rate and the
//! runs really needed for injected shifts. Separate from the real
//! experiments (real.rs) and from the printing (render.rs).

use serde::Serialize;

use crate::stats::bootstrap::stream_seed;
use crate::stats::calibrate::{
    aa_false_positive_rate, calibration_cov, ci_coverage, detection_rate, Shape, SHAPES,
};
use crate::stats::power::{runs_for_power_u_test, runs_known_variance};

use super::Sizes;

pub const AA_BAND: (f64, f64) = (0.036, 0.064);
pub const COVERAGE_BAND: (f64, f64) = (0.93, 0.97);
/// True shift of the coverage simulations (the ratio CI must contain 1.02).
pub const COVERAGE_SHIFT: f64 = 0.02;

// ---------------------------------------------------------------- (a)

#[derive(Clone, Debug, Serialize)]
pub struct AaCell {
    pub n: usize,
    pub false_positive: f64,
    pub coverage: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AaRow {
    pub shape: Shape,
    pub cov: f64,
    pub cells: Vec<AaCell>,
}

/// A/A false-positive rate and CI coverage for every shape and n.
pub fn aa_table(s: &Sizes, seed: u64) -> Vec<AaRow> {
    SHAPES
        .iter()
        .enumerate()
        .map(|(si, &shape)| {
            let cov = calibration_cov(shape);
            let cells =
                s.ns.iter()
                    .enumerate()
                    .map(|(ni, &n)| {
                        let k = (si * 16 + ni) as u64;
                        AaCell {
                            n,
                            false_positive: aa_false_positive_rate(
                                shape,
                                n,
                                cov,
                                s.trials,
                                s.resamples,
                                stream_seed(seed, 2 * k),
                            ),
                            coverage: ci_coverage(
                                shape,
                                n,
                                cov,
                                COVERAGE_SHIFT,
                                s.trials,
                                s.resamples,
                                stream_seed(seed, 2 * k + 1),
                            ),
                        }
                    })
                    .collect();
            AaRow { shape, cov, cells }
        })
        .collect()
}

// ---------------------------------------------------------------- (b)

pub const SHIFTS: [f64; 4] = [0.005, 0.01, 0.02, 0.05];
pub const SHIFT_COV: f64 = 0.01;

#[derive(Clone, Debug, Serialize)]
pub struct ShiftRow {
    pub shift: f64,
    /// Known-variance t-test (z-test) runs per side for 80% power: the
    /// theoretical minimum.
    pub known_variance_runs: usize,
    /// Detection rate of the verdict at that many runs.
    pub rate_at_known_variance: f64,
    /// The U-test-aware formula (t-test runs x pi/3).
    pub u_test_runs: usize,
    /// Smallest n at which the simulated verdict detects >= 80%.
    pub runs_needed: usize,
    pub rate_at_needed: f64,
}

/// Smallest n >= `start` at which `rate(n) >= 0.8`: doubling, then
/// bisection. `rate` is a simulation with a fixed seed, so the answer is
/// exact up to its Monte-Carlo noise (about 1.3 points at 80%).
fn search_runs(start: usize, rate: impl Fn(usize) -> f64) -> (usize, f64) {
    let start = start.max(2);
    let r0 = rate(start);
    if r0 >= 0.8 {
        return (start, r0);
    }
    let (mut lo, mut hi) = (start, start * 2);
    let mut r_hi = rate(hi);
    while r_hi < 0.8 && hi < 4096 {
        lo = hi;
        hi *= 2;
        r_hi = rate(hi);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let r = rate(mid);
        if r >= 0.8 {
            hi = mid;
            r_hi = r;
        } else {
            lo = mid;
        }
    }
    (hi, r_hi)
}

pub fn shift_table(s: &Sizes, seed: u64) -> Vec<ShiftRow> {
    SHIFTS
        .iter()
        .enumerate()
        .map(|(i, &shift)| {
            let kv = runs_known_variance(shift, SHIFT_COV, 0.05, 0.8)
                .unwrap_or(2)
                .max(2);
            let sd = stream_seed(seed, 100 + i as u64);
            let rate = |n: usize| {
                detection_rate(
                    Shape::Normal,
                    n,
                    SHIFT_COV,
                    shift,
                    s.trials,
                    s.resamples,
                    sd,
                )
            };
            let rate_kv = rate(kv);
            let (needed, rate_needed) = if rate_kv >= 0.8 {
                (kv, rate_kv)
            } else {
                search_runs(kv + 1, rate)
            };
            ShiftRow {
                shift,
                known_variance_runs: kv,
                rate_at_known_variance: rate_kv,
                u_test_runs: runs_for_power_u_test(shift, SHIFT_COV, 0.05, 0.8).unwrap_or(2),
                runs_needed: needed,
                rate_at_needed: rate_needed,
            }
        })
        .collect()
}
