//! The ground floor: errors and exit codes, words, run statuses, overrides, the operating system's interfaces (sys), launching measured processes, and monitors.
//!
//! Its source lives under `src/` beside the other layers' (docs/ARCHITECTURE.md,
//! "Crates"): one tree to read, one crate per layer to compile. The
//! layers below are re-exported here so that `crate::` paths read the
//! same in every crate.

pub use sysdelta_stats::{metric, series, stats};

#[path = "../../src/error.rs"]
pub mod error;
#[path = "../../src/monitor/mod.rs"]
pub mod monitor;
#[path = "../../src/overrides.rs"]
pub mod overrides;
#[path = "../../src/process/mod.rs"]
pub mod process;
#[path = "../../src/status.rs"]
pub mod status;
#[path = "../../src/sys/mod.rs"]
pub mod sys;
#[path = "../../src/words.rs"]
pub mod words;
