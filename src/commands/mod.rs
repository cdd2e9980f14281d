//! Subcommands that are more than a call into the library: each module
//! holds one command's arguments, its computation and its output.

pub mod calibrate;
pub mod plan_runs;
