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

/// Where a measured command's stdout (and, to the terminal, its stderr)
/// goes: hyperfine's `--output`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandOutput {
    /// /dev/null (stderr is still kept for the report of a failed run).
    #[default]
    Null,
    /// Read by sysdelta and thrown away: a command that writes to a pipe
    /// behaves (and costs) as it does in a shell pipeline.
    Pipe,
    /// sysdelta's own stdout and stderr: `--show-output`.
    Inherit,
    /// Appended to this file (absolute path), emptied when the run starts.
    File(std::path::PathBuf),
}

impl CommandOutput {
    /// `null`, `pipe`, `inherit`, or anything else as a file name.
    pub fn parse(s: &str) -> CommandOutput {
        match s {
            "null" => CommandOutput::Null,
            "pipe" => CommandOutput::Pipe,
            "inherit" => CommandOutput::Inherit,
            f => CommandOutput::File(f.into()),
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
    /// With `until_ci` or `min_time`: the most measured runs per cell.
    pub max_runs: Option<u32>,
    /// `--min-runs`: the fewest measured runs per cell (the count the
    /// schedule starts with) when `runs` is not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_runs: Option<u32>,
    /// `--min-time`, seconds: add blocks until every cell's measured runs
    /// add up to this much wall time, as hyperfine's 3 s minimum (`ab`'s
    /// default), so a 1 ms command is not settled on 10 runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_time: Option<f64>,
    /// With `min_time` (`ab`'s default rule): stop before the time is
    /// filled once every wall time comparison's 95% CI is narrower than
    /// this fraction of the reference's mean (0.02: within about ±1%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enough_ci: Option<f64>,
    /// With `until_ci`: only these metrics (`METRIC` or `WORKLOAD/METRIC`)
    /// must reach the target; empty means every compared metric.
    pub until_metrics: Vec<String>,
    /// `-i`: a command's non-zero exit status does not fail its run (its
    /// times are kept), as hyperfine's `--ignore-failure`.
    pub ignore_failure: bool,
    /// Stop the experiment once one cell has failed this many runs in a
    /// row (None: `plan::MAX_CONSECUTIVE_FAILURES`; 0: never stop).
    pub max_failures: Option<u32>,
    /// `--output` / `--show-output`: where measured commands write.
    #[serde(skip_serializing_if = "is_null_output")]
    pub output: CommandOutput,
    /// `--boots`: boots per kernel config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boots: Option<u32>,
}

fn is_null_output(o: &CommandOutput) -> bool {
    *o == CommandOutput::Null
}
