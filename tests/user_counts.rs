//! Leftovers a user could hit, each where the user sees it: counts that
//! agree with the report's header (`list`, warnings), named baselines in
//! `list`, `push` and `pull`, hyperfine's `parameters` in the hyperfine
//! export, the benchstat-layout flags of `run` checked before it
//! measures, and `--fail-on` for chosen metrics.
//!
//! One test binary, one module per file under tests/user_counts/. None
//! changes shared machine state: the tests run on parallel threads.

#[macro_use]
mod common;
#[path = "common/boots.rs"]
mod kernels;

#[path = "user_counts/audit_counts.rs"]
mod audit_counts;
#[path = "user_counts/baselines.rs"]
mod baselines;
#[path = "user_counts/fail_on_metric.rs"]
mod fail_on_metric;
#[path = "user_counts/hyperfine_params.rs"]
mod hyperfine_params;
#[path = "user_counts/run_flags.rs"]
mod run_flags;
