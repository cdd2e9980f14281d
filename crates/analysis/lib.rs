//! Analysis: from stored runs to comparisons with intervals and verdicts, and the typed view every report format renders.
//!
//! Its source lives under `src/` beside the other layers' (docs/ARCHITECTURE.md,
//! "Crates"): one tree to read, one crate per layer to compile. The
//! layers below are re-exported here so that `crate::` paths read the
//! same in every crate.

pub use sysdelta_base::{error, monitor, overrides, process, status, sys, words};
pub use sysdelta_plan::{builtins, config, import, kbuild, micro, plan, transport, vm, workload};
pub use sysdelta_stats::{metric, series, stats};
pub use sysdelta_store::store;

#[path = "../../src/analysis/mod.rs"]
pub mod analysis;
