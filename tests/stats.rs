//! The statistics against exact values, reference vectors (SciPy,
//! statsmodels: tests/reference) and simulation, one module per subject.
//!
//! One test binary for the area, one module per file under tests/stats/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[path = "stats/bootstrap.rs"]
mod bootstrap;
#[path = "stats/calibrate.rs"]
mod calibrate;
#[path = "stats/edges.rs"]
mod edges;
#[path = "stats/exact_u.rs"]
mod exact_u;
#[path = "stats/methods.rs"]
mod methods;
#[path = "stats/reference.rs"]
mod reference;
#[path = "stats/variance.rs"]
mod variance;
