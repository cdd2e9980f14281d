//! Statistics: pure functions of samples and a seed.
//!
//! Every function here is deterministic given its inputs (and seed, where it
//! resamples), and is checked against reference values computed with SciPy
//! (`tests/reference/`).

pub mod bca;
pub mod bootstrap;
pub mod calibrate;
pub mod detect;
pub mod edges;
pub mod hodges_lehmann;
pub mod joint;
pub mod mannwhitney;
pub mod multiple;
pub mod power;
pub mod resample;
pub mod sequential;
pub mod special;
pub mod summary;
pub mod tost;
pub mod variance;
pub mod welch;
