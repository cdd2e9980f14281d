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
    // serde_json escapes C0 controls; json_text the DEL and C1 controls
    // it leaves raw, so `cat report.json` is terminal-safe too.
    Ok(super::escape::json_text(serde_json::to_string_pretty(&v)?) + "\n")
}
