//! The transport sweep's input checks and its report.
//!
//! One test binary for the area, one module per file under tests/transport/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;

#[path = "transport/input.rs"]
mod input;
#[path = "transport/report.rs"]
mod report;
