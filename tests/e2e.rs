//! End to end through the real binary: bad input, interrupts, prepare and
//! conclude, setups' environments, shells, verdicts.
//!
//! One test binary for the area, one module per file under tests/e2e/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;

#[path = "e2e/bad_input.rs"]
mod bad_input;
#[path = "e2e/interrupt.rs"]
mod interrupt;
#[path = "e2e/prepare.rs"]
mod prepare;
#[path = "e2e/setup_env.rs"]
mod setup_env;
#[path = "e2e/shell.rs"]
mod shell;
#[path = "e2e/verdicts.rs"]
mod verdicts;
