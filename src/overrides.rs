//! How an experiment was asked to run, beyond its plan: the order of its
//! runs and the command line's overrides. The store keeps both with each
//! experiment so that `--resume` rebuilds the same schedule; they live on
//! the ground floor so that the store and the importers need not import
//! the plan parser.

use serde::{Deserialize, Serialize};

/// In which order the runs of an experiment happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Each block runs every (config, workload) cell once, in an order drawn
    /// from the seeded RNG; drift hits every config alike.
    RandomBlocks,
    /// All runs of one cell, then the next: for comparison only.
    Sequential,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::RandomBlocks => "random-blocks",
            Order::Sequential => "sequential",
        }
    }

    pub fn parse(s: &str) -> Option<Order> {
        match s {
            "random-blocks" => Some(Order::RandomBlocks),
            "sequential" => Some(Order::Sequential),
            _ => None,
        }
    }
}

/// What the CLI may override in a plan; stored with the experiment so that
/// `--resume` rebuilds exactly the same schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Overrides {
    pub runs: Option<u32>,
    pub warmup: Option<u32>,
    pub seed: Option<u64>,
    pub order: Option<Order>,
    pub quick: bool,
    /// Adaptive stopping: add blocks until every ratio CI is narrower than
    /// this (a fraction: 0.01 for `--until ci=1%`).
    pub until_ci: Option<f64>,
    /// With `until_ci`: the most measured runs per cell.
    pub max_runs: Option<u32>,
    /// With `until_ci`: only these metrics (`METRIC` or `WORKLOAD/METRIC`)
    /// must reach the target; empty means every compared metric.
    pub until_metrics: Vec<String>,
    /// `-i`: a command's non-zero exit status does not fail its run (its
    /// times are kept), as hyperfine's `--ignore-failure`.
    pub ignore_failure: bool,
    /// Stop the experiment once one cell has failed this many runs in a
    /// row (None: `plan::MAX_CONSECUTIVE_FAILURES`; 0: never stop).
    pub max_failures: Option<u32>,
    /// `--boots`: boots per kernel config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boots: Option<u32>,
}
