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

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// Settings and shared state of the harness for one suite run.
pub struct Harness<'a> {
    pub samples: usize,
    pub min_sample: Duration,
    /// ns per turn of the empty counted loop.
    pub empty_loop_ns: f64,
    pub cancel: &'a AtomicBool,
    pub deadline: Option<Instant>,
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
        let mut out = Vec::with_capacity(self.samples);
        for _ in 0..self.samples {
            let (el, ops) = self.one(b, iters)?;
            let per_op = el.as_nanos() as f64 / ops as f64;
            let loop_cost = self.empty_loop_ns * iters as f64 / ops as f64;
            out.push(per_op - loop_cost - extra_ns);
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
        };
        let e = h.measure(&mut Never, 0.0).unwrap_err();
        assert!(e.downcast_ref::<Cancelled>().is_some());
    }
}
