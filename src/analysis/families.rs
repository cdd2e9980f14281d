//! Two families of comparisons, each corrected on its own: the workloads'
//! own metrics (the headline) and the telemetry monitors add to each run
//! (`vmstat.*`, `profile.*`, ...).
//!
//! Why: one monitor adds dozens of metrics, and with them in one Holm family
//! the headline comparisons lose their power (16 comparisons became 90 with
//! vmstat alone; at 100 comparisons a true +1% shift at a CoV of 2% was
//! flagged in 2 runs of 20). Whether a monitor ran must not change what the
//! report says of the workload, so the headline family is exactly the one a
//! plan without monitors would have.

/// Adjusted p-values in input order: `pvals[i]` is telemetry when
/// `is_telemetry[i]`. Each family is corrected by `correct` (Holm or BH:
/// adjusted values in input order) over its own members only. Returns the
/// adjusted values and the size of each family (headline, telemetry).
pub(super) fn adjust(
    pvals: &[f64],
    is_telemetry: &[bool],
    correct: fn(&[f64]) -> Vec<f64>,
) -> (Vec<f64>, usize, usize) {
    let mut out = vec![f64::NAN; pvals.len()];
    let mut sizes = [0usize; 2];
    for (fam, want) in [false, true].into_iter().enumerate() {
        let idx: Vec<usize> = (0..pvals.len())
            .filter(|&i| is_telemetry[i] == want)
            .collect();
        let raw: Vec<f64> = idx.iter().map(|&i| pvals[i]).collect();
        let adj = correct(&raw);
        for (&i, a) in idx.iter().zip(adj) {
            out[i] = a;
        }
        sizes[fam] = idx.len();
    }
    (out, sizes[0], sizes[1])
}

/// The sentence a report adds when telemetry was compared: what its family
/// is and that it is corrected apart from the headline. `bh`: the report
/// corrects by Benjamini-Hochberg, not Holm.
pub fn telemetry_note(n_telemetry: usize, bh: bool) -> Option<String> {
    (n_telemetry > 0).then(|| {
        let c = if bh { "Benjamini-Hochberg" } else { "Holm" };
        format!(
            "Telemetry (the monitors' metrics: vmstat.*, profile.*, ...) is a family of its \
             own: {n_telemetry} comparisons, {c}-corrected among themselves, so monitors do \
             not change the workload metrics' p-values or verdicts."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats;

    #[test]
    fn headline_family_is_unchanged_by_telemetry() {
        let head = [0.01, 0.02, 0.04];
        let alone = stats::multiple::holm(&head);
        let mixed = [0.01, 0.5, 0.02, 0.001, 0.04, 0.3];
        let tele = [false, true, false, true, false, true];
        let (adj, nh, nt) = adjust(&mixed, &tele, stats::multiple::holm);
        assert_eq!((nh, nt), (3, 3));
        assert_eq!(vec![adj[0], adj[2], adj[4]], alone);
        assert_eq!(
            vec![adj[1], adj[3], adj[5]],
            stats::multiple::holm(&[0.5, 0.001, 0.3])
        );
    }
}
