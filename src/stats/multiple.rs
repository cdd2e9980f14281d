//! Multiple-comparison corrections.

/// Holm step-down adjusted p-values (family-wise error), in input order.
pub fn holm(_p: &[f64]) -> Vec<f64> {
    todo!("stats helper")
}
