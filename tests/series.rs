//! Trend analysis of per-interval series: reference vectors, trends, the
//! memory sweep.
//!
//! One test binary for the area, one module per file under tests/series/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;

#[path = "series/memsweep.rs"]
mod memsweep;
#[path = "series/reference.rs"]
mod reference;
#[path = "series/trend.rs"]
mod trend;
