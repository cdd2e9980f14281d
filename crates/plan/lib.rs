//! What is run: configs (system states entered and left through the journal), workloads, the micro and transport suites, VMs and kernel builds, plans, and imports of other tools' output.
//!
//! Its source lives under `src/` beside the other layers' (docs/ARCHITECTURE.md,
//! "Crates"): one tree to read, one crate per layer to compile. The
//! layers below are re-exported here so that `crate::` paths read the
//! same in every crate.

pub use sysdelta_base::{error, monitor, overrides, process, status, sys, words};
pub use sysdelta_stats::{metric, series, stats};
pub use sysdelta_store::store;

#[path = "../../src/builtins.rs"]
pub mod builtins;
#[path = "../../src/config/mod.rs"]
pub mod config;
#[path = "../../src/import/mod.rs"]
pub mod import;
#[path = "../../src/kbuild/mod.rs"]
pub mod kbuild;
#[path = "../../src/micro/mod.rs"]
pub mod micro;
#[path = "../../src/plan/mod.rs"]
pub mod plan;
#[path = "../../src/transport/mod.rs"]
pub mod transport;
#[path = "../../src/vm/mod.rs"]
pub mod vm;
#[path = "../../src/workload/mod.rs"]
pub mod workload;
