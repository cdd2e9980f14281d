//! `sysdelta calibrate [--quick]`: checks, on this machine and in
//! simulation, that the report's statistics keep their promises.
//!
//! (a) A/A false-positive rate of the verdict (U test p < 0.05, the mean
//!     and the Hodges-Lehmann shift pointing the same way) and the coverage
//!     of the 95% CI of the ratio of means (expanded percentile), for
//!     normal, log-normal, bimodal and heavy-tailed (t, 3 df) noise
//!     (`stats::calibrate`).
//! (b) Injected shifts at CoV 1%: the verdict's detection rate at the
//!     known-variance minimum run count, and the run count it really needs
//!     for 80% detection (found by search over simulated experiments).
//! (c) Real A/A experiments on this machine, through the library (plan,
//!     runner, store, analysis), in sequential and in random-blocks order,
//!     with a workload whose cost drifts by construction.
//! (d) Adaptive stopping on precision: add one run per side until the CI
//!     is narrow enough, and compare the runs it uses with the
//!     known-variance t-test runs.
//! (e) The edges (issue 31): the CI's coverage at 2-10 units a side, the
//!     boot-level test's A/A rate and power at 3, 4, 6 and 10 boots for
//!     between-boot shares 0.2, 0.5 and 0.9, plan-runs' recommendations
//!     against the report's real power, hosts named in A/A fleets, and the
//!     heavy-tail cost of the verdict's agreement rule.
//!
//! Each part is a file (sim.rs: a and b, real.rs, adaptive.rs, edges.rs), the text
//! they print is render.rs; this file holds the sizes and the command.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

#[derive(Args, Debug, Clone)]
pub struct CalibrateArgs {
    /// Smaller sizes (1,000 trials still; fewer n, fewer real experiments).
    #[arg(long)]
    pub quick: bool,
    /// Skip the real A/A experiments on this machine (part c).
    #[arg(long)]
    pub no_real: bool,
    /// Seed of every simulation (the figures are reproducible given it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// How big each part is.
#[derive(Clone, Debug, Serialize)]
pub struct Sizes {
    /// Simulated experiments per figure in (a) and (b).
    pub trials: usize,
    /// Bootstrap resamples per CI in (a) and (b).
    pub resamples: usize,
    /// Runs per side in (a).
    pub ns: Vec<usize>,
    /// Real A/A experiments per order in (c).
    pub real_reps: usize,
    /// Runs per config in each real experiment.
    pub real_runs: u32,
    /// Bytes each real run appends to the file it reads.
    pub real_chunk: usize,
    /// Simulated experiments per figure in (d).
    pub adaptive_trials: usize,
    /// Resamples per CI in (d), where a CI follows every added run.
    pub adaptive_resamples: usize,
}

impl Sizes {
    pub fn quick() -> Sizes {
        Sizes {
            trials: 1000,
            resamples: 10_000,
            ns: vec![5, 10, 20],
            real_reps: 20,
            real_runs: 8,
            real_chunk: 1 << 20,
            adaptive_trials: 2000,
            adaptive_resamples: 2000,
        }
    }

    pub fn full() -> Sizes {
        Sizes {
            trials: 1000,
            resamples: 10_000,
            ns: vec![5, 10, 20, 40],
            real_reps: 50,
            real_runs: 10,
            real_chunk: 1 << 20,
            adaptive_trials: 2000,
            adaptive_resamples: 10_000,
        }
    }
}

mod adaptive;
mod edges;
mod real;
mod render;
mod sim;

// Every part's public items at the path they have always had
// (`commands::calibrate::aa_table`, ...), which the tests use.
pub use adaptive::*;
pub use edges::*;
pub use real::*;
pub use render::*;
pub use sim::*;

fn took(since: Instant) -> String {
    format!("    ({:.1} s)\n", since.elapsed().as_secs_f64())
}

/// Print one part as soon as it is done, so a long run shows progress.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // The band marks leave a blank at the end of some lines: drop it.
    for line in text.lines() {
        let _ = out.write_all(line.trim_end().as_bytes());
        let _ = out.write_all(b"\n");
    }
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// The store is not used: the real experiments go into a temporary store.
pub fn run(args: &CalibrateArgs, _store_path: &Path) -> Result<()> {
    let t0 = Instant::now();
    let s = if args.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    emit(&format!(
        "sysdelta calibrate{}: seed {}, {} threads\n",
        if args.quick { " --quick" } else { "" },
        args.seed,
        rayon::current_num_threads()
    ));
    let part = Instant::now();
    emit(&(render_aa(&aa_table(&s, args.seed), &s) + &took(part)));
    let part = Instant::now();
    emit(&(render_shift(&shift_table(&s, args.seed), &s) + &took(part)));
    let part = Instant::now();
    if args.no_real {
        emit("(c) Real A/A experiments: skipped (--no-real).\n");
    } else {
        emit(&(render_real(&real_table(&s, args.seed)?, &s) + &took(part)));
    }
    let part = Instant::now();
    let rows: Vec<AdaptiveResult> = RULES
        .iter()
        .map(|&r| adaptive(r, s.adaptive_trials, s.adaptive_resamples, args.seed))
        .collect();
    emit(&(render_adaptive(&rows) + &took(part)));
    let part = Instant::now();
    let e = EdgeSizes::new(args.quick);
    emit(&(render_edges(&edges(&e, args.seed), &e) + &took(part)));
    emit(&format!("wall time: {:.1} s", t0.elapsed().as_secs_f64()));
    Ok(())
}
