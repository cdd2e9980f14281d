//! The numbers: statistics (tests, intervals, resampling), a metric's direction, and time series (trends, change points). Pure: no I/O.
//!
//! Its source lives under `src/` beside the other layers' (docs/ARCHITECTURE.md,
//! "Crates"): one tree to read, one crate per layer to compile. The
//! layers below are re-exported here so that `crate::` paths read the
//! same in every crate.

#[path = "../../src/metric.rs"]
pub mod metric;
#[path = "../../src/series/mod.rs"]
pub mod series;
#[path = "../../src/stats/mod.rs"]
pub mod stats;
