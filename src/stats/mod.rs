//! Statistics: pure functions of samples and a seed.
//!
//! Every function here is deterministic given its inputs (and seed, where it
//! resamples), and is checked against reference values computed with SciPy
//! (`tests/reference/`).

pub mod bootstrap;
pub mod joint;
pub mod mannwhitney;
pub mod multiple;
pub mod summary;
