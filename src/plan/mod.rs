//! Experiment plans: the TOML file (or the `ab` shorthand) -> a validated [`Plan`].
//!
//! Nothing runs until the whole plan validates; every error names
//! `file:line:col`.

mod ab_commands;
mod ab_errors;
mod ab_plan;
mod bounds;
pub mod duration;
mod items;
pub mod kernel;
pub mod kernel_build;
mod launch;
pub mod load;
mod matrix;
pub mod model;
pub mod position;
mod raw;
mod raw_config;
pub mod reach;
pub mod scan;
pub mod scan_params;
pub mod shorthand;
pub mod telemetry;

pub use load::{load_file, parse};
pub use model::*;
