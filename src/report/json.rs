//! JSON: every raw sample of every run and every statistic, and for
//! kernel configs every boot.

use crate::analysis::Analysis;
use crate::store::ExperimentData;

pub fn render(data: &ExperimentData, a: &Analysis) -> anyhow::Result<String> {
    let mut v = serde_json::json!({
        "format": "sysdelta-report-1",
        "experiment": &data.info,
        "metrics": &data.metrics,
        "runs": &data.runs,
        "events": &data.events,
        "analysis": a,
    });
    // Kernel configs: every boot as stored, console tails whole. Absent
    // for host experiments, whose report stays as it was.
    if !data.boots.is_empty() {
        v["boots"] = serde_json::to_value(&data.boots)?;
    }
    // serde_json escapes C0 controls; json_text the DEL and C1 controls
    // it leaves raw, so `cat report.json` is terminal-safe too.
    Ok(super::escape::json_text(serde_json::to_string_pretty(&v)?) + "\n")
}
