//! What one profile sample costs on this machine, and the sampling rate
//! that keeps the profile under a budget of CPU time.
//!
//! A cpu-clock sample is an hrtimer interrupt on the sampled CPU: on bare
//! metal a few microseconds, on a VM without a PMU about 20 us (the
//! interrupt plus its VM exit), so a fixed 1 kHz costs 0.3% on one machine
//! and 2% on another. The rate is therefore chosen from a measurement:
//! a fixed loop (the monitor probe's) on one pinned thread, timed by the
//! thread's CPU clock, alternately with and without a cpu-clock sampling event on that
//! CPU at an amplifying rate, in interleaved pairs. Without
//! CONFIG_IRQ_TIME_ACCOUNTING the interrupts that land on the thread are
//! charged to its CPU time (and so is the hypervisor's part on a VM, as
//! time the guest clock advanced while it ran); the thread CPU clock does
//! not see other tasks, so a busy machine slows the calibration but does
//! not bias it.

use std::time::Instant;

use super::perf;
use crate::monitor::sampler::thread_cpu_s;

/// Highest rate chosen: the 1 kHz the 2001 posting's readprofile had.
pub const MAX_HZ: u64 = 1000;
/// Default budget: half a percent of a CPU for the profile.
pub const DEFAULT_BUDGET: f64 = 0.005;
/// The amplifying rate of the calibration: high enough that the loop's
/// extra time is tens of times the noise between pairs.
pub const CALIBRATION_HZ: u64 = 10_000;
/// Off/on pairs measured.
const PAIRS: usize = 12;
/// Iterations of the loop per measurement (about 20 ms here).
const LOOP_ITERS: u64 = 3_500_000;

/// The measured cost of one sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleCost {
    /// CPU time one sample takes from the interrupted CPU, seconds (median
    /// over the pairs of extra time / samples taken).
    pub per_sample_s: f64,
    /// Pairs measured, and their spread: the lowest and highest per-pair
    /// estimate, seconds.
    pub pairs: usize,
    pub range_s: (f64, f64),
}

/// The rate a plan's profile samples at, and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateChoice {
    pub hz: u64,
    /// Predicted CPU share of the profile: per-sample cost x rate (0.005 is
    /// 0.5% of a CPU).
    pub predicted: f64,
    pub budget: f64,
    /// The plan named the rate (`profile_hz`); otherwise it was chosen.
    pub explicit: bool,
}

impl RateChoice {
    /// The rate for a measured per-sample cost: `explicit` when the plan
    /// named one, else the highest rate up to [`MAX_HZ`] whose predicted
    /// cost is within `budget` (at least 1 Hz).
    pub fn choose(per_sample_s: f64, budget: f64, explicit: Option<u64>) -> RateChoice {
        let hz = match explicit {
            Some(hz) => hz,
            // The relative nudge keeps 0.005 / 20e-6 (249.99999... in
            // floating point) at the 250 Hz it is.
            None if per_sample_s > 0.0 => {
                ((budget / per_sample_s * (1.0 + 1e-9)).floor() as u64).clamp(1, MAX_HZ)
            }
            None => MAX_HZ,
        };
        RateChoice {
            hz,
            predicted: per_sample_s * hz as f64,
            budget,
            explicit: explicit.is_some(),
        }
    }

    /// True when the rate is over its budget (only an explicit one can be).
    pub fn over_budget(&self) -> bool {
        self.predicted > self.budget
    }

    /// The line the experiment records: rate, cost, prediction.
    pub fn describe(&self, cost: &SampleCost) -> String {
        let how = if self.explicit {
            "as the plan's profile_hz says".to_string()
        } else {
            format!("the highest rate up to {MAX_HZ} Hz within the budget")
        };
        let mut s = format!(
            "profile rate {} Hz ({how}): one sample costs {:.1} us of CPU here (calibration: {} pairs at {} Hz, per-pair {:.1}..{:.1} us); predicted overhead {:.2}% of a CPU, budget {:.2}%",
            self.hz,
            cost.per_sample_s * 1e6,
            cost.pairs,
            CALIBRATION_HZ,
            cost.range_s.0 * 1e6,
            cost.range_s.1 * 1e6,
            self.predicted * 100.0,
            self.budget * 100.0
        );
        if self.over_budget() {
            s.push_str(" (over budget: the plan's rate is kept)");
        }
        s
    }
}

/// The fixed work: the monitor probe's chain (`monitor::control`), `iters`
/// steps, so that the predicted cost of a sample is what the probe, which
/// measures it, sees: a loop in registers alone missed the refills of
/// what each interrupt evicts and predicted 0.5% where the probe measured
/// 0.5-0.8%. Public so that the monitors' bench loads the CPU the same way.
pub fn spin(iters: u64) -> u64 {
    std::hint::black_box(crate::monitor::control::probe_chain(1, iters))
}

/// CPU seconds of one loop, and the samples that fell in our process while
/// the loop ran (0 without a ring).
fn timed(ring: Option<&mut perf::Ring>) -> std::io::Result<(f64, u64)> {
    if let Some(r) = &ring {
        r.enable()?;
    }
    let c0 = thread_cpu_s();
    spin(LOOP_ITERS);
    let dt = thread_cpu_s() - c0;
    let mut n = 0u64;
    if let Some(r) = ring {
        r.disable()?;
        let me = std::process::id();
        r.drain(|s| n += u64::from(s.pid == me));
    }
    Ok((dt, n))
}

/// The CPU this thread may run on, as a set of one, and the set it had.
fn pin_here() -> std::io::Result<(usize, libc::cpu_set_t)> {
    // SAFETY: plain libc calls on this thread with valid out-pointers.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cpu = libc::sched_getcpu();
        if cpu < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut one);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((cpu as usize, old))
    }
}

fn unpin(old: &libc::cpu_set_t) {
    // SAFETY: restoring the set sched_getaffinity returned.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), old) };
}

/// Measure the cost of one cpu-clock sample on this machine (about half a
/// second). Runs on a thread of its own, pinned, so the caller's affinity
/// is untouched; the event is closed before it returns.
pub fn measure() -> std::io::Result<SampleCost> {
    std::thread::Builder::new()
        .name("profile-calibrate".into())
        .spawn(measure_here)?
        .join()
        .map_err(|_| std::io::Error::other("calibration thread panicked"))?
}

fn measure_here() -> std::io::Result<SampleCost> {
    let (cpu, old) = pin_here()?;
    let result = (|| {
        let fd = perf::open_cpu_clock(cpu, 1_000_000_000 / CALIBRATION_HZ)?;
        let mut ring = perf::Ring::new(fd, 16)?;
        timed(None)?; // warm the loop's code and the CPU's frequency
        let t0 = Instant::now();
        let mut est = Vec::with_capacity(PAIRS);
        for k in 0..PAIRS {
            // Alternate which half goes first, so a trend within the
            // calibration does not favour either.
            let (off, (on, n)) = if k % 2 == 0 {
                let off = timed(None)?.0;
                (off, timed(Some(&mut ring))?)
            } else {
                let on = timed(Some(&mut ring))?;
                (timed(None)?.0, on)
            };
            if n > 0 {
                est.push(((on - off) / n as f64).max(0.0));
            }
            // A machine so busy that the pairs take ages: use what we have.
            if t0.elapsed().as_secs() > 10 && est.len() >= 3 {
                break;
            }
        }
        if est.is_empty() {
            return Err(std::io::Error::other(
                "no cpu-clock sample landed on the calibration loop",
            ));
        }
        est.sort_by(f64::total_cmp);
        Ok(SampleCost {
            per_sample_s: crate::stats::summary::median(&est).unwrap_or(0.0),
            pairs: est.len(),
            range_s: (est[0], est[est.len() - 1]),
        })
    })();
    unpin(&old);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_the_highest_rate_within_budget() {
        // This VM: about 20 us a sample -> 250 Hz for 0.5%.
        let c = RateChoice::choose(20e-6, 0.005, None);
        assert_eq!(c.hz, 250);
        assert!(!c.over_budget());
        // Bare metal: 2 us -> capped at 1 kHz.
        assert_eq!(RateChoice::choose(2e-6, 0.005, None).hz, MAX_HZ);
        // An explicit rate is kept, and said to be over budget.
        let e = RateChoice::choose(20e-6, 0.005, Some(1000));
        assert_eq!(e.hz, 1000);
        assert!(e.over_budget());
        assert!((e.predicted - 0.02).abs() < 1e-12);
    }
}
