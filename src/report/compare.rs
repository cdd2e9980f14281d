//! Comparisons across experiments (placeholder).
