//! Metrics: a named quantity with a unit and a direction.

use serde::{Deserialize, Serialize};

/// Which way is good for a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Smaller values are better (times, latencies, CPU use).
    Lower,
    /// Larger values are better (throughput, bandwidth).
    Higher,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Lower => "lower",
            Direction::Higher => "higher",
        }
    }

    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "lower" => Some(Direction::Lower),
            "higher" => Some(Direction::Higher),
            _ => None,
        }
    }
}

/// Declaration of one metric a workload produces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSpec {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
}

impl MetricSpec {
    pub fn new(name: &str, unit: &str, direction: Direction) -> Self {
        MetricSpec {
            name: name.to_string(),
            unit: unit.to_string(),
            direction,
        }
    }
}

/// All samples of one metric from one run. Most workloads give one value per
/// metric per run; micro benchmarks give many (the run's value is their median).
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSamples {
    pub metric: String,
    pub values: Vec<f64>,
}

/// A metric a command workload extracts from its stdout.
#[derive(Clone, Debug)]
pub struct RegexMetric {
    pub spec: MetricSpec,
    /// Matched against stdout as bytes; the value is capture group `value`
    /// if the pattern names one, else group 1.
    pub regex: regex::bytes::Regex,
}
