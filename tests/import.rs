//! `sysdelta import`: the formats read, and the values refused.
//!
//! One test binary for the area, one module per file under tests/import/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;

#[path = "import/baseline.rs"]
mod baseline;
#[path = "import/formats.rs"]
mod formats;
#[path = "import/report_flag.rs"]
mod report_flag;
#[path = "import/validation.rs"]
mod validation;
