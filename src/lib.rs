//! sysdelta: measure what a system change costs, and whether it is beyond noise.

pub mod config;
pub mod metric;
pub mod micro;
pub mod stats;
pub mod workload;
