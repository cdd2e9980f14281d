//! Precision-based sequential stopping: run until every ratio CI is
//! narrower than a target, instead of a fixed run count.
//!
//! Stopping on precision (CI width) rather than on significance does not
//! inflate the false-positive rate the way "stop when p < 0.05" does,
//! because the width does not depend on whether the configs differ
//! (Kruschke's "precision as the goal"). The runner calls this after each
//! block, with a minimum and maximum run count of its own.

use crate::stats::bootstrap::{ratio_cis_batch, BatchItem};

/// True when every CI is defined and hi - lo < `target_width` (in ratio
/// units: 0.02 means the whole interval spans less than 2%). False when
/// there are no CIs.
///
/// Assumes the CIs' widths do not depend on the difference between configs,
/// which is what keeps the false-positive rate of a test run after stopping
/// near its level; true for ratio CIs to first order (the width scales with
/// the ratio itself), not checked.
pub fn precision_reached(cis: &[Option<(f64, f64)>], target_width: f64) -> bool {
    !cis.is_empty()
        && cis
            .iter()
            .all(|ci| matches!(ci, Some((lo, hi)) if hi - lo < target_width))
}

/// Computes the percentile ratio CIs of every metric and compared config
/// (`ratio_cis_batch`) and applies [`precision_reached`] to all of them.
///
/// Assumes what [`precision_reached`] and the percentile CI
/// ([`crate::stats::bootstrap::ratio_ci`]) assume.
pub fn batch_precision_reached(
    items: &[BatchItem<'_>],
    resamples: usize,
    confidence: f64,
    target_width: f64,
) -> bool {
    let cis: Vec<Option<(f64, f64)>> = ratio_cis_batch(items, resamples, confidence)
        .into_iter()
        .flatten()
        .collect();
    precision_reached(&cis, target_width)
}
