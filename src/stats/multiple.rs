//! Multiple-comparison corrections.
//!
//! Both functions return adjusted p-values in input order, as
//! `statsmodels.stats.multitest.multipletests(p, method=...)[1]` does.
//! A NaN p-value stays NaN and is left out of the family (R's `p.adjust`
//! rule), so one missing test does not make the others stricter.

/// Indices of the non-NaN p-values, sorted by ascending p (stable).
fn sorted_valid(p: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    idx
}

/// Holm step-down adjusted p-values (family-wise error), in input order.
///
/// With the m p-values sorted ascending, p_(i) (i from 0) becomes
/// max over j <= i of min(1, (m - j) * p_(j)) (statsmodels 'holm').
///
/// Assumes valid p-values (uniform or stochastically larger under their null)
/// and nothing about their dependence: Holm controls the family-wise error
/// under any dependence between the tests.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let idx = sorted_valid(p);
    let m = idx.len();
    let mut out = vec![f64::NAN; p.len()];
    let mut running = 0.0f64;
    for (j, &i) in idx.iter().enumerate() {
        let adj = ((m - j) as f64 * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

/// Benjamini-Hochberg adjusted p-values (false discovery rate), in input
/// order.
///
/// With the m p-values sorted ascending, p_(i) (rank i + 1) becomes
/// min over j >= i of min(1, p_(j) * m / (j + 1)) (statsmodels 'fdr_bh').
///
/// Assumes valid p-values that are independent or positively dependent
/// (PRDS, Benjamini & Yekutieli 2001); not checked. Comparisons that share a
/// baseline are positively correlated, where it holds in practice; under
/// arbitrary dependence the FDR can exceed its level.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let idx = sorted_valid(p);
    let m = idx.len();
    let mut out = vec![f64::NAN; p.len()];
    let mut running = 1.0f64;
    for (j, &i) in idx.iter().enumerate().rev() {
        let adj = (p[i] * m as f64 / (j + 1) as f64).min(1.0);
        running = running.min(adj);
        out[i] = running;
    }
    out
}
