//! hyperfine `--export-json` files: each command becomes a config, its
//! `times` (wall-clock seconds of each timing run) the samples of metric
//! `wall` (unit s) of workload `workload` (default `hyperfine`; name it
//! like a sysdelta command workload to compare against its `wall`), one run
//! per time.

use serde::Deserialize;

use super::{Imported, ImportedRun};
use crate::error::Error;
use crate::metric::{Direction, MetricSpec};
use crate::workload::MetricSamples;

pub const WORKLOAD: &str = "hyperfine";

/// The part of an export sysdelta reads (other fields are ignored).
/// Every check is made while parsing (`try_from`), so that serde_json
/// gives each error the line it found it on.
#[derive(Deserialize)]
#[serde(try_from = "RawExport")]
struct Export {
    results: Vec<Command>,
}

#[derive(Deserialize)]
struct RawExport {
    results: Vec<Command>,
}

impl TryFrom<RawExport> for Export {
    type Error = Error;
    fn try_from(raw: RawExport) -> Result<Export, Error> {
        if raw.results.is_empty() {
            return Err(Error::bad("hyperfine export has no results"));
        }
        Ok(Export {
            results: raw.results,
        })
    }
}

#[derive(Deserialize)]
#[serde(try_from = "RawCommand")]
struct Command {
    command: String,
    times: Vec<Seconds>,
    /// One per time; written with `-i`, null when a signal ended the run.
    exit_codes: Option<Vec<Option<i32>>>,
}

#[derive(Deserialize)]
struct RawCommand {
    command: String,
    times: Vec<Seconds>,
    #[serde(default)]
    exit_codes: Option<Vec<Option<i32>>>,
}

impl TryFrom<RawCommand> for Command {
    type Error = Error;
    fn try_from(r: RawCommand) -> Result<Command, Error> {
        if let Some(codes) = &r.exit_codes {
            if codes.len() != r.times.len() {
                return Err(Error::bad(format!(
                    "command {:?} has {} times but {} exit_codes",
                    r.command,
                    r.times.len(),
                    codes.len()
                )));
            }
        }
        Ok(Command {
            command: r.command,
            times: r.times,
            exit_codes: r.exit_codes,
        })
    }
}

/// A wall time, refused while parsing unless it is a finite number of
/// seconds >= 0, so that the error carries the line it stands on.
struct Seconds(f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = f64::deserialize(d)?;
        if !t.is_finite() || t < 0.0 {
            return Err(serde::de::Error::custom(format!(
                "time {t} is not a non-negative number of seconds"
            )));
        }
        Ok(Seconds(t))
    }
}

/// "PATH:LINE: what" of a serde_json error (its message without the
/// " at line L column C" it appends).
fn json_error(path: &str, e: &serde_json::Error) -> Error {
    let text = e.to_string();
    let what = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(what, _)| what);
    let kind = match e.classify() {
        serde_json::error::Category::Data => "",
        _ => "not a hyperfine JSON export: ",
    };
    Error::bad(format!("{path}:{}: {kind}{what}", e.line()))
}

/// Parse one export; `path` names the file in errors. A run whose exit
/// code is not 0 (`exit_codes`, written with `-i`) is a failed run.
pub fn parse(path: &str, text: &str, workload: &str) -> Result<Imported, Error> {
    let export: Export = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
    let mut imp = Imported {
        format: "hyperfine JSON".into(),
        name: format!("hyperfine import of {path}"),
        ..Default::default()
    };
    imp.declare(workload, MetricSpec::new("wall", "s", Direction::Lower));
    let mut notes = format!("# imported from hyperfine --export-json file {path}\n");
    for r in &export.results {
        let mut name = r.command.clone();
        let mut k = 2;
        while imp.configs.contains(&name) {
            name = format!("{} ({k})", r.command);
            k += 1;
        }
        imp.add_config(&name);
        notes.push_str(&format!("config {name:?}: {} timing runs\n", r.times.len()));
        for (j, t) in r.times.iter().enumerate() {
            // Without `exit_codes` (an older hyperfine) the file does not
            // say: the run is kept, its status unknown.
            let (failure, exit_code) = match &r.exit_codes {
                Some(codes) => (failure(codes[j]), codes[j]),
                None => (None, None),
            };
            imp.runs.push(ImportedRun {
                config: name.clone(),
                workload: workload.into(),
                samples: vec![MetricSamples {
                    metric: "wall".into(),
                    values: vec![t.0],
                }],
                failure,
                exit_code,
            });
        }
    }
    imp.notes = notes;
    Ok(imp)
}

/// Why a run with this exit status failed (None: it did not).
fn failure(exit_code: Option<i32>) -> Option<super::Failure> {
    match exit_code {
        Some(0) => None,
        Some(code) => Some(super::Failure {
            reason: format!("exit code {code} (hyperfine exit_codes)"),
            exit_code: Some(code),
        }),
        None => Some(super::Failure {
            reason: "ended by a signal (hyperfine exit_codes: null)".into(),
            exit_code: None,
        }),
    }
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
        assert!(
            e.to_string()
                .starts_with("x.json:1: not a hyperfine JSON export"),
            "{e}"
        );
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
