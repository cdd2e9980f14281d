//! hyperfine `--export-json` files: each command becomes a config, its
//! `times` (wall-clock seconds of each timing run) the samples of metric
//! `wall` (unit s) of workload `workload` (default `hyperfine`; name it
//! like a sysdelta command workload to compare against its `wall`), one run
//! per time.

use serde_json::Value;

use super::{Imported, ImportedRun};
use crate::metric::{Direction, MetricSpec};
use crate::workload::MetricSamples;

pub const WORKLOAD: &str = "hyperfine";

/// Parse one export; `path` names the file in errors.
pub fn parse(path: &str, text: &str, workload: &str) -> Result<Imported, String> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| format!("{path}: not a hyperfine JSON export ({e})"))?;
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{path}: not a hyperfine JSON export: no \"results\" array"))?;
    if results.is_empty() {
        return Err(format!("{path}: hyperfine export has no results"));
    }
    let mut imp = Imported {
        format: "hyperfine JSON".into(),
        name: format!("hyperfine import of {path}"),
        ..Default::default()
    };
    imp.declare(workload, MetricSpec::new("wall", "s", Direction::Lower));
    let mut notes = format!("# imported from hyperfine --export-json file {path}\n");
    for (i, r) in results.iter().enumerate() {
        let command = r
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{path}: results[{i}] has no \"command\" string"))?;
        let times = r
            .get("times")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{path}: results[{i}] ({command}) has no \"times\" array"))?;
        let mut name = command.to_string();
        let mut k = 2;
        while imp.configs.contains(&name) {
            name = format!("{command} ({k})");
            k += 1;
        }
        imp.add_config(&name);
        notes.push_str(&format!("config {name:?}: {} timing runs\n", times.len()));
        for (j, t) in times.iter().enumerate() {
            let t = t
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| {
                    format!("{path}: results[{i}].times[{j}] is not a non-negative number")
                })?;
            imp.runs.push(ImportedRun {
                config: name.clone(),
                workload: workload.into(),
                samples: vec![MetricSamples {
                    metric: "wall".into(),
                    values: vec![t],
                }],
            });
        }
    }
    imp.notes = notes;
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_export_names_the_file() {
        let e = parse(
            "x.json",
            "{\"results\": [{\"command\": \"a\", \"times\": [0.1,",
            WORKLOAD,
        )
        .unwrap_err();
        assert!(e.starts_with("x.json: not a hyperfine JSON export"), "{e}");
    }

    #[test]
    fn each_command_is_a_config() {
        let t = r#"{"results":[{"command":"a","times":[1.0,2.0]},{"command":"a","times":[3.0]}]}"#;
        let imp = parse("f", t, WORKLOAD).unwrap();
        assert_eq!(imp.configs, vec!["a", "a (2)"]);
        assert_eq!(imp.runs.len(), 3);
        assert_eq!(imp.runs[2].samples[0].values, vec![3.0]);
    }
}
