//! Plans: every bound, and `plan-runs` for runs and for boots.
//!
//! One test binary for the area, one module per file under tests/plan/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;
#[path = "common/boots.rs"]
mod kernels;

#[path = "plan/bounds.rs"]
mod bounds;
#[path = "plan/reach.rs"]
mod reach;
#[path = "plan/runs_boots.rs"]
mod runs_boots;
#[path = "plan/runs_cli.rs"]
mod runs_cli;
