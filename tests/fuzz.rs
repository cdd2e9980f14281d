//! Random and hostile input: plans, imports and run logs.
//!
//! One test binary for the area, one module per file under tests/fuzz/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;

#[path = "fuzz/inputs.rs"]
mod inputs;
#[path = "fuzz/runlog.rs"]
mod runlog;
