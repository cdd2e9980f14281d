//! The geometric-mean rows (`analysis::geomean`) as the text and markdown
//! reports print them under the tables, as benchstat does.

use super::cells::{fmt_pct, fmt_pct_bare};
use super::escape::ascii;
use crate::analysis::Analysis;

/// One line per (metric, config): "wall, slow vs base over 3 workloads:
/// +7.9% [+6.0,+9.8]". Empty when no metric is shared by two workloads.
pub fn lines(a: &Analysis) -> Vec<String> {
    a.geomean
        .iter()
        .map(|g| {
            format!(
                "{}, {} vs {} over {} workloads: {} [{},{}]",
                ascii(&g.metric),
                ascii(&g.config),
                ascii(&a.baseline),
                g.workloads,
                fmt_pct(g.delta_mean_pct),
                fmt_pct_bare(g.delta_ci_pct.0),
                fmt_pct_bare(g.delta_ci_pct.1)
            )
        })
        .collect()
}

/// The heading over the lines.
pub fn title(a: &Analysis) -> String {
    format!(
        "Geometric mean over workloads of the ratio of means, with its {:.0}% CI:",
        a.confidence * 100.0
    )
}
