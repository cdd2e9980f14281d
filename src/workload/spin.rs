//! `spin`: a fixed amount of CPU work and nothing else, timed. It is the
//! probe of the monitor-overhead control (`monitor::control`): a sampling
//! profile interrupts whatever runs on a CPU, so the same work with and
//! without monitors shows what they took from a CPU-bound process, and a
//! steady loop shows it with a small CI. Usable in plans too
//! (`builtin = "spin"`), e.g. as a CPU-bound reference beside a workload.
//!
//! The work is `monitor::control::probe_chain`: each step multiplies and
//! adds (an LCG) and loads the next word of a 256 KiB table at an index
//! the previous step chose, so it is bound by the multiplier's and the L2
//! cache's latency and cannot be vectorised or folded away. The table gives the
//! loop a working set: an interrupt that evicts part of it costs the
//! loop its refills afterwards, as it costs a real workload (a loop in
//! registers alone would see only the interrupt). `iterations` fixes the
//! amount (not a time, so every run, also after `--resume`, does the same
//! work).
//!
//! The work is timed in [`CHUNKS`] equal chunks of about 12 ms, and a
//! run's value, the metric `step` (ns per step), is its lower-quartile
//! chunk. On this 2-vCPU VM, runs lost 10-25% of their speed for 50-200 ms
//! stretches, with monitors and without (something else on the core or
//! its sibling: the slow chunks ran at 7.0-7.3 ns a step against 5.7),
//! and such a stretch covered half a run often enough that neither the
//! run's total nor its median chunk gave a CI under several percent. The
//! lower quartile is the loop's speed when nothing else contends for it.
//! What a monitor costs evenly is in every chunk (each profile sample:
//! about 5 per chunk at 400 Hz), so it is in the quartile; what a monitor
//! costs in bursts (its own threads contending for the core, a stall) is
//! not, and neither is a wake-up once a second (vmstat). Before timing,
//! a run waits up to 3 s for the CPU to run the loop as fast as the
//! latest runs did ([`settle`]): whole runs, not only chunks, were slow
//! after a heavy swapping run.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::compile::{param_table, param_usize};
use crate::error::Error;
use crate::metric::{Direction, MetricSpec};
use crate::monitor::control::{self, probe_chain as chain};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

const KEYS: &[&str] = &["iterations"];

/// Chunks a run's work is timed in (samples of `step`).
pub const CHUNKS: u64 = 32;

/// Default work: about 0.4 s on a 2-3 GHz core (32 chunks of 12 ms).
pub const DEFAULT_ITERATIONS: usize = 1 << 26;

pub struct SpinWorkload {
    iterations: u64,
    /// The values (`step`, ns) of this experiment's latest runs, at most
    /// [`RECENT`], oldest first: what [`settle`] waits for.
    recent_steps: VecDeque<f64>,
}

/// How many of the latest runs' values the full-speed gate reads.
const RECENT: usize = 5;

/// The speed [`settle`] waits for: the median of the latest runs' values
/// (`recent`; of an even count the upper one, the more lenient; None
/// before the first run, which does not wait). The runs are every
/// config's: the baseline's with monitors and the control's without.
/// Not the fastest chunk ever timed, as it was: a chunk rarely came
/// within 3% of that lucky moment, even on a quiet machine, so most probe
/// runs waited their whole 3 s (`examples/monitor-overhead.toml --quick`
/// took 94-129 s here, now 25-38 s; docs/plan.md said the probe added
/// 10 s). A state the machine stays in is the state both sides are
/// measured in (the blocks interleave them); a passing slowdown, as after
/// a swapping run, is still slower than the runs before it.
fn full_speed(recent: &VecDeque<f64>) -> Option<f64> {
    let mut v: Vec<f64> = recent.iter().copied().collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

impl SpinWorkload {
    /// Parameters: `iterations` (default 2^26, 32 to 2^40; rounded down to
    /// a multiple of the 32 chunks).
    pub fn from_params(v: &toml::Value) -> Result<Self, Error> {
        let t = param_table("spin", v, KEYS)?;
        let iterations = param_usize(
            "spin",
            t,
            "iterations",
            DEFAULT_ITERATIONS,
            CHUNKS as usize,
            1 << 40,
        )?;
        Ok(SpinWorkload {
            iterations: iterations as u64 / CHUNKS * CHUNKS,
            recent_steps: VecDeque::new(),
        })
    }

    /// Keep a run's value for the next runs' gate, the oldest dropped.
    fn remember(&mut self, step: f64) {
        self.recent_steps.push_back(step);
        if self.recent_steps.len() > RECENT {
            self.recent_steps.pop_front();
        }
    }
}

impl Workload for SpinWorkload {
    fn metrics(&self) -> Vec<MetricSpec> {
        vec![MetricSpec::new(
            control::PROBE_METRIC,
            "ns",
            Direction::Lower,
        )]
    }

    /// One run: the chain on a thread of its own, restricted to the
    /// config's CPUs when it names some, started once the CPU runs it as
    /// fast as the latest runs (see [`settle`]); the lower-quartile
    /// chunk's wall time per step.
    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        let per_chunk = self.iterations / CHUNKS;
        let cpus = ctx.cpus.map(<[usize]>::to_vec);
        let full = full_speed(&self.recent_steps);
        let cancel = ctx.cancel;
        let result = std::thread::scope(|s| {
            s.spawn(move || -> std::io::Result<f64> {
                if let Some(c) = &cpus {
                    crate::sys::affinity::pin_current(c)?;
                }
                // One pass to bring the table into the cache, untimed.
                let mut x = chain(1, control::PROBE_TABLE_WORDS as u64);
                x = settle(x, per_chunk, full, cancel);
                let mut steps_ns = Vec::with_capacity(CHUNKS as usize);
                for _ in 0..CHUNKS {
                    let start = Instant::now();
                    x = chain(black_box(x), per_chunk);
                    steps_ns.push(start.elapsed().as_nanos() as f64 / per_chunk as f64);
                }
                black_box(x);
                Ok(lower_quartile(steps_ns))
            })
            .join()
        });
        match result {
            Ok(Ok(step)) => {
                self.remember(step);
                RunOutcome::Ok(vec![MetricSamples {
                    metric: control::PROBE_METRIC.into(),
                    values: vec![step],
                }])
            }
            Ok(Err(e)) => failed(format!("spin: cannot run on the config's CPUs: {e}")),
            Err(_) => failed("spin: the worker thread panicked".into()),
        }
    }
}

/// A chunk within this share of [`full_speed`] counts as full speed.
const FULL_SPEED: f64 = 1.03;

/// The longest a run waits for full speed before it measures anyway.
const MOST_SETTLE: Duration = Duration::from_secs(3);

/// Wait, up to [`MOST_SETTLE`], until one chunk runs within
/// [`FULL_SPEED`] of `full` (the latest runs' median value, see
/// [`full_speed`]; None: do not wait), checking every 100 ms; returns the
/// chain's state. Why: after a run that swapped heavily, this VM's vCPUs
/// ran 15-20% slower for about 5 s while the guest itself was idle
/// (`vmstat`: 100% idle, no steal reported), the host catching up on the
/// I/O; probe runs in that window, with or without monitors, scattered the
/// overhead's CI over several percent. Waiting selects quiet moments for
/// both sides alike; a monitor whose steady cost is under 3% passes the
/// gate on either side, and one above it may make its side's runs wait
/// the 3 s and measure in whatever state (how often depends on how many
/// of the latest runs were its side's), which can only overstate its
/// cost.
fn settle(mut x: u64, n: u64, full: Option<f64>, cancel: &AtomicBool) -> u64 {
    let deadline = Instant::now() + MOST_SETTLE;
    loop {
        let start = Instant::now();
        x = chain(black_box(x), n);
        let step = start.elapsed().as_nanos() as f64 / n as f64;
        let fast = full.is_none_or(|f| step <= f * FULL_SPEED);
        if fast || Instant::now() >= deadline || cancel.load(Ordering::Relaxed) {
            return x;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The lower quartile of `v` (the value a quarter of the way up, by
/// nearest rank: the 8th lowest of 32, the 4th of 16).
fn lower_quartile(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 4]
}

fn failed(reason: String) -> RunOutcome {
    RunOutcome::Failed {
        reason,
        stderr_tail: String::new(),
        exit_code: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gate waits for the latest runs' typical speed: a machine that
    /// stays slower sets it within a few runs, and one lucky fast run
    /// does not make every later run wait for its speed.
    #[test]
    fn full_speed_is_the_latest_runs_median() {
        let mut w = SpinWorkload::from_params(&toml::Value::Table(Default::default())).unwrap();
        assert_eq!(full_speed(&w.recent_steps), None);
        let seen = |w: &mut SpinWorkload, step: f64| {
            w.remember(step);
            full_speed(&w.recent_steps).unwrap()
        };
        assert_eq!(seen(&mut w, 5.0), 5.0);
        assert_eq!(seen(&mut w, 4.0), 5.0, "one fast run is not the bar");
        for _ in 0..2 {
            seen(&mut w, 6.5);
        }
        assert_eq!(seen(&mut w, 6.5), 6.5, "a lasting slowdown is");
        // The oldest go: once 5.0 and 4.0 and one 6.5 have left, three
        // runs at 6.0 of the five are the bar.
        assert_eq!(seen(&mut w, 6.0), 6.5);
        assert_eq!(seen(&mut w, 6.0), 6.5);
        assert_eq!(seen(&mut w, 6.0), 6.0);
        assert_eq!(w.recent_steps, [6.5, 6.5, 6.0, 6.0, 6.0]);
    }

    #[test]
    fn lower_quartile_is_the_fourth_lowest_of_sixteen() {
        let v: Vec<f64> = (1..=16).rev().map(f64::from).collect();
        assert_eq!(lower_quartile(v), 4.0);
        assert_eq!(lower_quartile(vec![7.0]), 7.0);
    }

    #[test]
    fn parameters_are_checked() {
        assert!(SpinWorkload::from_params(&toml::Value::Table(Default::default())).is_ok());
        let bad: toml::Value = toml::from_str("iterations = 15").unwrap();
        assert!(SpinWorkload::from_params(&bad).is_err());
        let unknown: toml::Value = toml::from_str("seconds = 1").unwrap();
        let Err(e) = SpinWorkload::from_params(&unknown) else {
            panic!("an unknown parameter is refused");
        };
        assert!(e.to_string().contains("unknown parameter `seconds`"), "{e}");
    }
}
