//! Running experiments: the runner (blocks, configs entered and left, runs measured, boots of kernel configs), kexec sessions, bisect, and fleets.
//!
//! Its source lives under `src/` beside the other layers' (docs/ARCHITECTURE.md,
//! "Crates"): one tree to read, one crate per layer to compile. The
//! layers below are re-exported here so that `crate::` paths read the
//! same in every crate.

pub use sysdelta_analysis::analysis;
pub use sysdelta_base::{error, monitor, overrides, process, status, sys, words};
pub use sysdelta_plan::{builtins, config, import, kbuild, micro, plan, transport, vm, workload};
pub use sysdelta_stats::{metric, series, stats};
pub use sysdelta_store::store;

#[path = "../../src/bisect/mod.rs"]
pub mod bisect;
#[path = "../../src/fleet/mod.rs"]
pub mod fleet;
#[path = "../../src/kexec/mod.rs"]
pub mod kexec;
#[path = "../../src/runner/mod.rs"]
pub mod runner;
