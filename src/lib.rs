//! sysdelta: measure what a system change costs, and whether it is beyond noise.

pub mod analysis;
pub mod bisect;
pub mod builtins;
pub mod cli;
pub mod commands;
pub mod config;
pub mod error;
pub mod fleet;
pub mod import;
pub mod kbuild;
pub mod metric;
pub mod micro;
pub mod monitor;
pub mod overrides;
pub mod plan;
pub mod process;
pub mod report;
pub mod runner;
pub mod series;
pub mod stats;
pub mod status;
pub mod store;
pub mod sys;
pub mod transport;
pub mod vm;
pub mod workload;
