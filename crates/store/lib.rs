//! The store: every raw sample kept, in SQLite or a team's PostgreSQL, with the run log that makes each run durable before the next.
//!
//! Its source lives under `src/` beside the other layers' (docs/ARCHITECTURE.md,
//! "Crates"): one tree to read, one crate per layer to compile. The
//! layers below are re-exported here so that `crate::` paths read the
//! same in every crate.

pub use sysdelta_base::{error, monitor, overrides, process, status, sys, words};
pub use sysdelta_stats::{metric, series, stats};

#[path = "../../src/store/mod.rs"]
pub mod store;
