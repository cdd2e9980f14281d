//! JSON: every raw sample of every run and every statistic.

use super::analysis::Analysis;
use crate::store::ExperimentData;

pub fn render(data: &ExperimentData, a: &Analysis) -> anyhow::Result<String> {
    let v = serde_json::json!({
        "format": "sysdelta-report-1",
        "experiment": &data.info,
        "metrics": &data.metrics,
        "runs": &data.runs,
        "events": &data.events,
        "analysis": a,
    });
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}
