//! The timing harness shared by every micro benchmark.
//!
//! Clock: `std::time::Instant` (CLOCK_MONOTONIC). One *sample* is one timed
//! call of [`Bench::run`] doing `iters` operations; `iters` is calibrated so
//! a sample lasts at least `min_sample` (10 ms by default). After
//! calibration one more sample is run and discarded (warm-up), then
//! `samples` samples are kept. Each kept value is
//! `elapsed / ops - empty_loop_per_iter * iters / ops - extra`, in ns per
//! operation, where `empty_loop_per_iter` is the measured cost of one turn of
//! an empty counted loop (see [`empty_loop_ns`]) and `extra` is a
//! benchmark-specific overhead (for example the pipe and data-touch cost in
//! the context-switch ring).
//!
//! Precision mode ([`Precision`]): instead of a fixed count of samples of
//! the minimum length, the harness takes a short pilot (5 samples of the
//! minimum length) after warm-up, and from its spread picks the sample
//! length and count expected to bring the run value's CoV to the target
//! within the metric's share of the time budget (see [`plan_samples`]).
//! The plan, the expected and the measured spread are logged per
//! measurement ([`SamplePlan`]) and printed by `sysdelta micro`.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Returned (inside an anyhow error) when the cancel flag or the deadline
/// stopped a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled {
    pub timed_out: bool,
}

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.timed_out {
            write!(f, "micro benchmark suite stopped: run timeout exceeded")
        } else {
            write!(f, "micro benchmark suite cancelled")
        }
    }
}

impl std::error::Error for Cancelled {}

/// One benchmark, seen by the harness.
pub trait Bench {
    /// Untimed preparation of a sample of `iters` operations (create the
    /// files a delete sample removes, map the region a fault sample touches).
    fn before(&mut self, _iters: u64) -> anyhow::Result<()> {
        Ok(())
    }
    /// Timed: do `iters` operations, return how many operations were done
    /// (usually `iters`; null I/O does two per iteration).
    fn run(&mut self, iters: u64) -> anyhow::Result<u64>;
    /// Untimed clean-up after a sample.
    fn after(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Precision mode: buy a target spread with time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Precision {
    /// Target coefficient of variation of a run's value (the median of its
    /// samples), as a fraction (0.02 = 2 %).
    pub target_cov: f64,
    /// Time one metric's kept samples may take.
    pub budget_per_metric: Duration,
    /// Sample length fixed by the user (only the count is chosen), or None
    /// (both are chosen).
    pub fixed_sample: Option<Duration>,
}

/// Samples a pilot takes in precision mode.
pub const PILOT_SAMPLES: usize = 5;

/// The efficiency factor of the median: for normal noise the median of n
/// samples has sqrt(pi/2) times the standard error of their mean.
pub const MEDIAN_FACTOR: f64 = 1.2533;

/// What precision mode chose for one measurement, and what it got.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SamplePlan {
    /// Length of one kept sample.
    pub sample_ms: f64,
    /// Kept samples.
    pub samples: usize,
    /// CoV of one pilot sample (fraction) at the pilot length.
    pub pilot_cov: f64,
    pub pilot_ms: f64,
    /// Expected CoV of the run value (fraction) under the model.
    pub expected_cov: f64,
    /// CoV of the run value estimated from the kept samples themselves
    /// (MEDIAN_FACTOR x their CoV / sqrt(n)).
    pub measured_cov: f64,
    /// The budget, not the target, set the plan: expect more spread than
    /// asked for.
    pub budget_limited: bool,
}

/// Choose sample length (seconds) and count for a target CoV of the median.
///
/// Model: the noise of a sample averages out with its length like
/// independent noise, so one sample of length t has CoV
/// `c0 * sqrt(t0 / t)` when the pilot's samples of length `t0` had `c0`,
/// and the median of n such samples has `MEDIAN_FACTOR * c(t) / sqrt(n)`.
/// The target then needs `n * t >= t0 * (MEDIAN_FACTOR * c0 / target)^2`.
/// Longer samples are preferred to more of them (n stays at `min_n`),
/// because slow drifts of a shared machine are what short samples do not
/// average out; with a fixed length only n is chosen. Both stay within
/// `budget` (n * t <= budget, but never under `min_n` samples of `t0`).
/// Real machines have slow noise the model ignores, so the measured spread
/// is printed beside the expected one.
/// Returns (sample length s, samples, expected CoV, budget-limited).
pub fn plan_samples(c0: f64, t0: f64, min_n: usize, p: &Precision) -> (f64, usize, f64, bool) {
    let budget = p.budget_per_metric.as_secs_f64();
    let need = t0 * (MEDIAN_FACTOR * c0 / p.target_cov).powi(2);
    let (t, n, limited) = match p.fixed_sample {
        Some(fixed) => {
            let t = fixed.as_secs_f64().max(t0);
            let want = (need / t).ceil().max(min_n as f64);
            let cap = (budget / t).floor().max(min_n as f64);
            (t, want.min(cap) as usize, want > cap)
        }
        None => {
            let want = (need / min_n as f64).max(t0);
            let cap = (budget / min_n as f64).max(t0);
            (want.min(cap), min_n, want > cap)
        }
    };
    let expected = MEDIAN_FACTOR * c0 * (t0 / t).sqrt() / (n as f64).sqrt();
    (t, n, expected, limited)
}

/// Settings and shared state of the harness for one suite run.
pub struct Harness<'a> {
    pub samples: usize,
    pub min_sample: Duration,
    /// ns per turn of the empty counted loop.
    pub empty_loop_ns: f64,
    pub cancel: &'a AtomicBool,
    pub deadline: Option<Instant>,
    /// Precision mode, or None (fixed `samples` of `min_sample`).
    pub precision: Option<Precision>,
    /// One entry per measurement made in precision mode, in order.
    pub plans: std::cell::RefCell<Vec<SamplePlan>>,
}

impl Harness<'_> {
    /// Fail with [`Cancelled`] if the user interrupted or time is up.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Cancelled { timed_out: false }.into());
        }
        if let Some(d) = self.deadline {
            if Instant::now() >= d {
                return Err(Cancelled { timed_out: true }.into());
            }
        }
        Ok(())
    }

    fn one(&self, b: &mut dyn Bench, iters: u64) -> anyhow::Result<(Duration, u64)> {
        self.check()?;
        b.before(iters)?;
        let t = Instant::now();
        let ops = b.run(iters)?;
        let el = t.elapsed();
        b.after()?;
        anyhow::ensure!(ops > 0, "benchmark did no operation");
        Ok((el, ops))
    }

    /// Calibrate, warm up, and return `samples` values in ns per operation,
    /// with the empty-loop cost and `extra_ns` per operation subtracted.
    pub fn measure(&self, b: &mut dyn Bench, extra_ns: f64) -> anyhow::Result<Vec<f64>> {
        let mut iters = self.calibrate(b)?;
        // Warm-up, discarded; it must also reach the minimum duration (a
        // cold first call can end calibration too early).
        loop {
            let (el, _) = self.one(b, iters)?;
            if el >= self.min_sample || iters >= 1 << 40 {
                break;
            }
            iters = self.grow(iters, el);
        }
        let mut samples = self.samples;
        let mut plan = None;
        if let Some(p) = self.precision {
            // Pilot at the calibrated length; its spread sets the plan.
            let mut pilot = Vec::with_capacity(PILOT_SAMPLES);
            let mut el_sum = 0.0;
            for _ in 0..PILOT_SAMPLES {
                let (el, ops) = self.one(b, iters)?;
                el_sum += el.as_secs_f64();
                pilot.push(el.as_nanos() as f64 / ops as f64);
            }
            let t0 = el_sum / PILOT_SAMPLES as f64;
            let c0 = cov(&pilot);
            let (t, n, expected, limited) = plan_samples(c0, t0, self.samples, &p);
            if t > t0 * 1.05 {
                iters = ((iters as f64) * t / t0).ceil() as u64;
                // Warm-up at the new length, discarded.
                self.one(b, iters)?;
            }
            samples = n;
            plan = Some(SamplePlan {
                sample_ms: t * 1e3,
                samples: n,
                pilot_cov: c0,
                pilot_ms: t0 * 1e3,
                expected_cov: expected,
                measured_cov: f64::NAN,
                budget_limited: limited,
            });
        }
        let mut out = Vec::with_capacity(samples);
        for _ in 0..samples {
            let (el, ops) = self.one(b, iters)?;
            let per_op = el.as_nanos() as f64 / ops as f64;
            let loop_cost = self.empty_loop_ns * iters as f64 / ops as f64;
            out.push(per_op - loop_cost - extra_ns);
        }
        if let Some(mut p) = plan {
            p.measured_cov = MEDIAN_FACTOR * cov(&out) / (out.len() as f64).sqrt();
            self.plans.borrow_mut().push(p);
        }
        Ok(out)
    }

    /// Smallest iteration count (grown geometrically) whose sample lasts at
    /// least `min_sample`.
    /// The first call (cold caches, first-touch faults) is discarded.
    pub fn calibrate(&self, b: &mut dyn Bench) -> anyhow::Result<u64> {
        self.one(b, 1)?;
        let mut iters: u64 = 1;
        loop {
            let (el, _) = self.one(b, iters)?;
            if el >= self.min_sample || iters >= 1 << 40 {
                return Ok(iters);
            }
            iters = self.grow(iters, el);
        }
    }

    /// Next iteration count: aim 20% above the target, grow at least 2x,
    /// at most 100x per step.
    pub fn grow(&self, iters: u64, el: Duration) -> u64 {
        let want = self.min_sample.as_nanos() as f64 * 1.2;
        let got = el.as_nanos().max(1) as f64;
        let factor = (want / got).clamp(2.0, 100.0);
        ((iters as f64) * factor).ceil() as u64
    }

    /// Run a benchmark whose operation is a whole fixed workload (semring):
    /// one warm-up, then `samples` timed calls of `f`, which returns the
    /// sample itself. Nothing is subtracted.
    pub fn repeat<T>(
        &self,
        mut f: impl FnMut() -> anyhow::Result<T>,
        samples: usize,
    ) -> anyhow::Result<Vec<T>> {
        self.check()?;
        f()?;
        let mut out = Vec::with_capacity(samples);
        for _ in 0..samples {
            self.check()?;
            out.push(f()?);
        }
        Ok(out)
    }
}

/// The cost in ns of one turn of an empty counted loop, the loop every
/// benchmark's `run` wraps around its operation. Median of 11 samples of at
/// least 10 ms each.
pub fn empty_loop_ns(cancel: &AtomicBool) -> anyhow::Result<f64> {
    struct Empty;
    impl Bench for Empty {
        fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
            for i in 0..iters {
                black_box(i);
            }
            Ok(iters)
        }
    }
    let h = Harness {
        samples: 11,
        min_sample: Duration::from_millis(10),
        empty_loop_ns: 0.0,
        cancel,
        deadline: None,
        precision: None,
        plans: Default::default(),
    };
    let v = h.measure(&mut Empty, 0.0)?;
    Ok(median(&v).max(0.0))
}

/// Median of a non-empty slice (mean of the middle two for even lengths).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Coefficient of variation (sample standard deviation / mean), as a fraction.
pub fn cov(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn calibration_reaches_min_sample_and_keeps_all_samples() {
        struct Spin;
        impl Bench for Spin {
            fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
                for i in 0..iters {
                    black_box(i * 3);
                }
                Ok(iters)
            }
        }
        let cancel = AtomicBool::new(false);
        let h = Harness {
            samples: 11,
            min_sample: Duration::from_millis(2),
            empty_loop_ns: 0.0,
            cancel: &cancel,
            deadline: None,
            precision: None,
            plans: Default::default(),
        };
        let iters = h.calibrate(&mut Spin).unwrap();
        assert!(iters > 1);
        let v = h.measure(&mut Spin, 0.0).unwrap();
        assert_eq!(v.len(), 11);
    }

    #[test]
    fn cancel_stops_measurement() {
        struct Never;
        impl Bench for Never {
            fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
                Ok(iters)
            }
        }
        let cancel = AtomicBool::new(true);
        let h = Harness {
            samples: 11,
            min_sample: Duration::from_millis(2),
            empty_loop_ns: 0.0,
            cancel: &cancel,
            deadline: None,
            precision: None,
            plans: Default::default(),
        };
        let e = h.measure(&mut Never, 0.0).unwrap_err();
        assert!(e.downcast_ref::<Cancelled>().is_some());
    }

    fn prec(target: f64, budget_s: f64, fixed: Option<f64>) -> Precision {
        Precision {
            target_cov: target,
            budget_per_metric: Duration::from_secs_f64(budget_s),
            fixed_sample: fixed.map(Duration::from_secs_f64),
        }
    }

    #[test]
    fn plan_lengthens_samples_to_reach_the_target() {
        // Pilot: 12 % per 20 ms sample; 2 % target; 21 samples.
        let (t, n, exp, limited) = plan_samples(0.12, 0.02, 21, &prec(0.02, 1e6, None));
        assert_eq!(n, 21);
        assert!(!limited);
        // n * t = t0 * (1.2533 * 0.12 / 0.02)^2 = 1.131 s.
        assert!((t * 21.0 - 0.02 * (MEDIAN_FACTOR * 6.0f64).powi(2)).abs() < 1e-9);
        assert!((exp - 0.02).abs() < 1e-9, "{exp}");
    }

    #[test]
    fn plan_never_goes_below_the_pilot_length_or_count() {
        let (t, n, exp, limited) = plan_samples(0.001, 0.02, 11, &prec(0.05, 100.0, None));
        assert_eq!((t, n, limited), (0.02, 11, false));
        assert!(exp < 0.05);
    }

    #[test]
    fn plan_stays_within_budget_and_says_so() {
        // Needs far more than 11 s; 11 s of budget: 11 samples of 1 s.
        let (t, n, exp, limited) = plan_samples(0.5, 0.02, 11, &prec(0.001, 11.0, None));
        assert!(limited);
        assert_eq!(n, 11);
        assert!((t - 1.0).abs() < 1e-9);
        assert!(exp > 0.001);
    }

    #[test]
    fn fixed_sample_length_chooses_only_the_count() {
        // 1 s samples; needs n * t = 0.02 * (1.2533 * 0.1 / 0.01)^2 = 3.14 s.
        let (t, n, _, limited) = plan_samples(0.1, 0.02, 11, &prec(0.01, 1e6, Some(1.0)));
        assert_eq!((t, n, limited), (1.0, 11, false));
        let (t, n, _, limited) = plan_samples(0.3, 0.02, 11, &prec(0.01, 1e6, Some(1.0)));
        // 0.02 * (1.2533 * 30)^2 = 28.3 s -> 29 samples.
        assert_eq!((t, n, limited), (1.0, 29, false));
        let (_, n, _, limited) = plan_samples(0.3, 0.02, 11, &prec(0.01, 15.0, Some(1.0)));
        assert_eq!((n, limited), (15, true));
    }
}
