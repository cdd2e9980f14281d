//! The LMbench 2.0 summary's numbers: per config, each micro-suite
//! metric's mean in the unit its table's heading names (the catalog's:
//! microseconds for times, nanoseconds for memory latencies, MB/s for
//! bandwidths), converted from the stored unit. The summary must not take
//! the display units the main table picks (a fork of 22,204 us once
//! printed as 22.204 under "times in microseconds").

use serde::Serialize;

use super::units::convert;
use crate::analysis::Analysis;
use crate::metric::Direction;

/// One metric's figure in one config's row.
#[derive(Clone, Debug, Serialize)]
pub struct MicroCell {
    pub name: String,
    /// The unit of `mean` and `samples`: the catalog's for this metric.
    pub unit: String,
    pub direction: Direction,
    /// The config's mean over its runs (units of replication).
    pub mean: f64,
    pub samples: Vec<f64>,
}

/// One config's row of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct MicroRow {
    pub config: String,
    pub cells: Vec<MicroCell>,
}

/// The summary's rows (baseline first) from the analysis in stored
/// units; empty when no metric of the micro suite was measured. A metric
/// whose stored unit cannot be converted to its table's is left out of
/// the summary (the main table still shows it).
pub fn rows(stored: &Analysis) -> Vec<MicroRow> {
    let catalog = crate::micro::catalog::catalog();
    let micro: Vec<_> = stored
        .metrics
        .iter()
        .filter_map(|m| {
            let e = catalog.iter().find(|e| e.name == m.spec.name)?;
            convert(1.0, &m.spec.unit, e.unit).map(|f| (m, e.unit, f))
        })
        .collect();
    if micro.is_empty() {
        return Vec::new();
    }
    stored
        .configs
        .iter()
        .enumerate()
        .map(|(ci, c)| MicroRow {
            config: c.clone(),
            cells: micro
                .iter()
                .filter_map(|(m, unit, f)| {
                    let s = m.cells[ci].summary.as_ref()?;
                    Some(MicroCell {
                        name: m.spec.name.clone(),
                        unit: unit.to_string(),
                        direction: m.spec.direction,
                        mean: s.mean * f,
                        samples: m.cells[ci].values.iter().map(|v| v * f).collect(),
                    })
                })
                .collect(),
        })
        .collect()
}
