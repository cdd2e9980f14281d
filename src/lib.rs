//! sysdelta: measure what a system change costs, and whether it is beyond noise.
//!
//! The command line (`cli`, `commands`) is this crate; the layers it
//! stands on are crates of their own (docs/ARCHITECTURE.md, "Crates"),
//! re-exported here under the names they have always had, so that
//! `sysdelta::store::...` reads the same in the tests and benches.

pub use sysdelta_analysis::analysis;
pub use sysdelta_base::{error, monitor, overrides, process, status, sys, words};
pub use sysdelta_plan::{builtins, config, import, kbuild, micro, plan, transport, vm, workload};
pub use sysdelta_report::report;
pub use sysdelta_runner::{bisect, fleet, kexec, runner};
pub use sysdelta_stats::{metric, series, stats};
pub use sysdelta_store::store;

pub mod cli;
pub mod commands;
