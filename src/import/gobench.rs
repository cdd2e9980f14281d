//! Go benchmark output (`go test -bench`, benchstat's input): each file is
//! a config, each benchmark a workload (its name without `Benchmark` and
//! the `-GOMAXPROCS` suffix), each `value unit` pair a metric named by its
//! unit (`ns/op`, `B/op`, `MB/s`; the name is the unit, so the unit field
//! stays empty), and each result line one run.

use regex::Regex;

use super::{Imported, ImportedRun};
use crate::error::Error;
use crate::metric::{Direction, MetricSpec};
use crate::workload::MetricSamples;

/// Units where larger is better: throughputs (`MB/s`, `ops/s`, ...).
fn direction(unit: &str) -> Direction {
    if unit.ends_with("/s") {
        Direction::Higher
    } else {
        Direction::Lower
    }
}

/// Whether a value of `unit` can never be negative: the units `go test`
/// writes (`ns/op`, `B/op`, `allocs/op`, `MB/s`), any rate (`.../s`) and any
/// time, size or allocation count per something (`ns/elem`, `bytes/op`).
/// Other units from `b.ReportMetric` may be negative.
fn never_negative(unit: &str) -> bool {
    const AMOUNTS: &[&str] = &[
        "ns", "us", "µs", "ms", "s", "sec", "B", "KB", "MB", "GB", "KiB", "MiB", "GiB", "bytes",
        "allocs",
    ];
    let amount = unit.split('/').next().unwrap_or(unit);
    unit.ends_with("/s") || AMOUNTS.contains(&amount)
}

/// A value of `unit` as written in a result line: a finite number, and not
/// negative where the unit cannot be.
fn value(text: &str, unit: &str) -> Result<f64, Error> {
    let v: f64 = text
        .parse()
        .map_err(|_| Error::bad(format!("'{text}' is not a number (before unit '{unit}')")))?;
    if !v.is_finite() {
        return Err(Error::bad(format!(
            "'{text} {unit}' is not a finite number"
        )));
    }
    if v < 0.0 && never_negative(unit) {
        return Err(Error::bad(format!(
            "'{text} {unit}' is negative, which {unit} cannot be"
        )));
    }
    Ok(v)
}

/// Parse one file as config `config` into `imp`.
pub fn parse_into(imp: &mut Imported, config: &str, path: &str, text: &str) -> Result<(), Error> {
    let name_re = Regex::new(r"^Benchmark(\S*?)(?:-\d+)?$").expect("valid regex");
    let key_re = Regex::new(r"^([a-z][^\s:]*):\s*(.*)$").expect("valid regex");
    let mut found = 0usize;
    imp.add_config(config);
    for (ln, line) in text.lines().enumerate() {
        let at = || format!("{path}:{}", ln + 1);
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if !first.starts_with("Benchmark") {
            if let Some(c) = key_re.captures(line) {
                let (k, v) = (c[1].to_string(), c[2].trim().to_string());
                imp.notes.push_str(&format!("{config}: {k}: {v}\n"));
                if k == "cpu" {
                    imp.fingerprint.entry("cpu_model".into()).or_insert(v);
                } else if k == "goos" || k == "goarch" {
                    imp.fingerprint.entry(k).or_insert(v);
                }
            }
            continue;
        }
        let rest: Vec<&str> = fields.collect();
        if rest.is_empty() {
            continue; // the name line `go test -v` prints before the result
        }
        let name = name_re
            .captures(first)
            .map(|c| c[1].to_string())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::bad(format!("{}: malformed benchmark name '{first}'", at())))?;
        let iters: u64 = rest[0].parse().map_err(|_| {
            Error::bad(format!(
                "{}: expected an iteration count after {first}, found '{}'",
                at(),
                rest[0]
            ))
        })?;
        if iters == 0 {
            return Err(Error::bad(format!(
                "{}: iteration count 0 after {first}: a result is at least one iteration",
                at()
            )));
        }
        let pairs = &rest[1..];
        if pairs.is_empty() || pairs.len() % 2 != 0 {
            return Err(Error::bad(format!(
                "{}: expected 'value unit' pairs after the iteration count (truncated line?)",
                at()
            )));
        }
        let mut samples = Vec::new();
        for p in pairs.chunks(2) {
            let v = value(p[0], p[1]).map_err(|m| Error::bad(format!("{}: {m}", at())))?;
            if samples.iter().any(|s: &MetricSamples| s.metric == p[1]) {
                return Err(Error::bad(format!(
                    "{}: unit '{}' appears twice",
                    at(),
                    p[1]
                )));
            }
            imp.declare(&name, MetricSpec::new(p[1], "", direction(p[1])));
            samples.push(MetricSamples {
                metric: p[1].to_string(),
                values: vec![v],
            });
        }
        imp.runs.push(ImportedRun {
            config: config.into(),
            workload: name,
            samples,
            failure: None,
        });
        found += 1;
    }
    if found == 0 {
        return Err(Error::bad(format!(
            "{path}: no Go benchmark result lines ('BenchmarkName-N  iters  value unit ...')"
        )));
    }
    Ok(())
}

/// Parse files, each a config named by its file stem (deduplicated).
pub fn parse(files: &[(String, String)]) -> Result<Imported, Error> {
    let mut imp = Imported {
        format: "Go benchmark output".into(),
        name: "go test -bench import".into(),
        ..Default::default()
    };
    for (path, text) in files {
        let stem = std::path::Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.clone());
        let mut name = stem.clone();
        let mut k = 2;
        while imp.configs.contains(&name) {
            name = format!("{stem}-{k}");
            k += 1;
        }
        imp.notes.push_str(&format!("# config {name}: {path}\n"));
        parse_into(&mut imp, &name, path, text)?;
    }
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_become_metrics_and_lines_runs() {
        let t = "goos: linux\nBenchmarkJoin-2  20000  58.3 ns/op  171.4 MB/s\nBenchmarkJoin-2  20000  42.6 ns/op  234.4 MB/s\nPASS\n";
        let imp = parse(&[("a/old.txt".into(), t.into())]).unwrap();
        assert_eq!(imp.configs, vec!["old"]);
        assert_eq!(imp.runs.len(), 2);
        let specs = &imp.metrics[0].1;
        assert_eq!(imp.metrics[0].0, "Join");
        assert_eq!(specs[1].name, "MB/s");
        assert_eq!(specs[1].direction, Direction::Higher);
    }

    #[test]
    fn truncated_line_is_reported_with_its_number() {
        let t = "BenchmarkJoin-2  20000  58.3 ns/op\nBenchmarkJoin-2  20000  58.3\n";
        let e = parse(&[("x.txt".into(), t.into())]).unwrap_err();
        assert!(e.to_string().starts_with("x.txt:2:"), "{e}");
        let e = parse(&[("y.txt".into(), "{\"json\": 1}".into())]).unwrap_err();
        assert!(
            e.to_string().contains("no Go benchmark result lines"),
            "{e}"
        );
    }
}
