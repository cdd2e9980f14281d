//! The monitor-overhead control: which runs measure what the monitors cost.
//!
//! A plan whose baseline runs monitors gets a control config, the baseline
//! with monitors off, and a probe workload, a fixed amount of CPU work
//! (the `spin` built-in). The probe runs in the baseline (monitors on) and
//! in the control (monitors off) only, and the control runs nothing else:
//! the overhead line compares the two. A CPU-bound probe is what a
//! sampling profile slows most (every sample interrupts it), so its delta
//! bounds what the monitors took from any workload; and it is short and
//! steady, so a few dozen runs give a CI of a fraction of a percent where
//! the plan's own workloads (a ten-minute swapping run, say) would need
//! hundreds.
//!
//! The cells are computed from names alone, so the runner (scheduling)
//! and the analysis (planned runs, the overhead line) agree on them for
//! any stored experiment.

/// The name of the control config a plan adds for its baseline: the same
/// config with monitors off. Config names in plans hold no spaces, so this
/// one cannot clash with a user's.
pub fn control_config(baseline: &str) -> String {
    format!("{baseline}{CONTROL_SUFFIX}")
}

/// See [`control_config`].
pub const CONTROL_SUFFIX: &str = " (monitors off)";

/// The probe workload's name (workload names in plans hold no spaces).
pub const PROBE_WORKLOAD: &str = "monitor probe";

/// The built-in the probe runs.
pub const PROBE_BUILTIN: &str = "spin";

/// The probe's metric, the one the overhead line reports (a config's own
/// metrics, a memory limit's peak say, are recorded for the probe's runs
/// too, and say nothing about the monitors).
pub const PROBE_METRIC: &str = "step";

/// Words in the probe's table: 256 KiB, within any x86-64 core's L2.
pub const PROBE_TABLE_WORDS: usize = 1 << 16;

/// The probe's table: a fixed pseudo-random fill, built once.
pub fn probe_table() -> &'static [u32] {
    static TABLE: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..PROBE_TABLE_WORDS)
            .map(|_| {
                x = probe_step(x, 0);
                (x >> 32) as u32
            })
            .collect()
    })
}

fn probe_step(x: u64, word: u32) -> u64 {
    (x ^ u64::from(word))
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407)
}

/// The probe's work: `n` steps of a dependent chain from `x`, each an LCG
/// step over the table word the previous step chose, so bound by the
/// multiplier's and the L2 cache's latency, with a working set that an
/// interrupt partly evicts. The profile's calibration runs the same work
/// (`profile::calibrate`), so its predicted cost is that of this loop.
pub fn probe_chain(mut x: u64, n: u64) -> u64 {
    let t = probe_table();
    let mask = t.len() - 1;
    for _ in 0..n {
        x = probe_step(x, t[(x >> 40) as usize & mask]);
    }
    x
}

/// The fewest probe runs per side: with runs of a steady CPU loop (CoV
/// about 0.5-1% on an idle machine) 20 a side put the CI's half-width
/// near 0.5%, so an overhead of 0.5% can be shown to be under 1%.
pub const PROBE_MIN_RUNS: u32 = 20;

/// The most probe runs per cell in one block.
pub const MAX_PROBE_REPEATS: u32 = 10;

/// How many times the probe runs in each of its two cells per block, so
/// that `runs` blocks give at least [`PROBE_MIN_RUNS`] a side (capped at
/// [`MAX_PROBE_REPEATS`]).
pub fn probe_repeats(runs: u32) -> u32 {
    PROBE_MIN_RUNS
        .div_ceil(runs.max(1))
        .clamp(1, MAX_PROBE_REPEATS)
}

/// The (config, workload) cells one block runs, as indices into `configs`
/// and `workloads`, config-major; a cell repeated is run that many times.
/// Without a control config this is every pair once (the full matrix).
/// With one: the control runs only the probe, the probe runs only in the
/// baseline and the control, [`probe_repeats`] times each.
pub fn cells<C: AsRef<str>, W: AsRef<str>>(
    configs: &[C],
    workloads: &[W],
    runs: u32,
) -> Vec<(usize, usize)> {
    let baseline = configs
        .iter()
        .find_map(|c| c.as_ref().strip_suffix(CONTROL_SUFFIX));
    let mut out = Vec::new();
    for (ci, c) in configs.iter().enumerate() {
        let c = c.as_ref();
        let control = c.ends_with(CONTROL_SUFFIX);
        for (wi, w) in workloads.iter().enumerate() {
            let probe = w.as_ref() == PROBE_WORKLOAD;
            let times = match (baseline, probe) {
                (None, _) => 1,
                (Some(_), false) if control => 0,
                (Some(_), false) => 1,
                (Some(b), true) if control || c == b => probe_repeats(runs),
                (Some(_), true) => 0,
            };
            out.extend(std::iter::repeat_n((ci, wi), times as usize));
        }
    }
    out
}

/// Each (config, workload) cell the plan runs, once: [`cells`] without
/// the repeats (for what is asked per cell, not per run).
pub fn distinct_cells<C: AsRef<str>, W: AsRef<str>>(
    configs: &[C],
    workloads: &[W],
) -> Vec<(usize, usize)> {
    let mut c = cells(configs, workloads, 1);
    // Repeats of a cell are adjacent (config-major order).
    c.dedup();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_chain_is_computed_not_folded() {
        let t = probe_table();
        assert_eq!(t.len(), PROBE_TABLE_WORDS);
        assert_eq!(probe_chain(1, 0), 1);
        // One step by hand: PCG's multiplier and increment over x ^ word.
        assert_eq!(
            probe_chain(1, 1),
            (1 ^ u64::from(t[0]))
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407)
        );
        assert_ne!(probe_chain(1, 1000), probe_chain(1, 1001));
    }

    #[test]
    fn without_a_control_every_pair_runs_once() {
        assert_eq!(
            cells(&["a", "b"], &["x", "y"], 3),
            vec![(0, 0), (0, 1), (1, 0), (1, 1)]
        );
    }

    #[test]
    fn the_control_runs_only_the_probe_and_the_probe_only_beside_it() {
        let configs = ["a", "b", "a (monitors off)"];
        let workloads = ["x", PROBE_WORKLOAD];
        // 2 runs: 10 probe runs per cell per block, 20 a side.
        let c = cells(&configs, &workloads, 2);
        let count = |cell: (usize, usize)| c.iter().filter(|x| **x == cell).count();
        assert_eq!(count((0, 0)), 1);
        assert_eq!(count((1, 0)), 1);
        assert_eq!(count((2, 0)), 0, "the control runs no workload of the plan");
        assert_eq!(count((0, 1)), 10);
        assert_eq!(count((1, 1)), 0, "the probe runs only in the baseline");
        assert_eq!(count((2, 1)), 10);
        assert_eq!(c.len(), 22);
        assert_eq!(
            distinct_cells(&configs, &workloads),
            vec![(0, 0), (0, 1), (1, 0), (2, 1)]
        );
    }

    #[test]
    fn probe_repeats_reach_the_minimum_within_the_cap() {
        assert_eq!(probe_repeats(1), MAX_PROBE_REPEATS);
        assert_eq!(probe_repeats(2), 10);
        assert_eq!(probe_repeats(3), 7);
        assert_eq!(probe_repeats(10), 2);
        assert_eq!(probe_repeats(30), 1);
        for runs in 2..100 {
            assert!(probe_repeats(runs) * runs >= PROBE_MIN_RUNS);
        }
    }
}
