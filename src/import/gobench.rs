//! Go benchmark output (`go test -bench`, benchstat's input): each file is
//! a config, each result line one run, each `value unit` pair a metric.
//!
//! A benchmark is what benchstat makes a row of: its full name (without
//! `Benchmark`, with its `-GOMAXPROCS` suffix, so `-cpu 1,2,4` gives three
//! workloads) under the file's `pkg`, `goos`, `goarch` and `cpu` lines
//! (benchstat's tables), so `BenchmarkFoo` of two packages is two
//! workloads. Those of the keys whose values differ within the import are
//! written after the name (`Foo-8 [pkg=example.com/a]`); a benchmark whose
//! keys differ between two files is two workloads, each in one config, as
//! benchstat puts them in two tables.
//!
//! A metric is named as benchstat names it (`sec/op`, `B/op`, `allocs/op`,
//! `B/s`, other units with `ns` as `sec` and `MB` as `B`) and keeps the
//! unit the file wrote (`ns/op`, ...), values as written, so that the
//! report scales it (`ns/op` shown as `us/op`, `ms/op`, `s/op`; `B/op` as
//! `KiB/op`, ...) and `--time-unit` applies to it.

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

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

/// The configuration keys `go test` writes that belong to a benchmark's
/// identity (benchstat groups its tables by them), in the order a
/// workload's name shows them.
const IDENTITY_KEYS: [&str; 4] = ["pkg", "goos", "goarch", "cpu"];

/// benchstat's name of a metric in `unit` (as its `benchunit.Tidy`):
/// nanoseconds become seconds and megabytes bytes in the numerator, so
/// `ns/op` is `sec/op` and `MB/s` is `B/s`. The stored unit stays the
/// file's; only the name follows benchstat.
fn metric_name(unit: &str) -> String {
    let (amount, per) = unit.split_at(unit.find('/').unwrap_or(unit.len()));
    match amount {
        "ns" => format!("sec{per}"),
        "MB" => format!("B{per}"),
        _ => unit.to_string(),
    }
}

/// The values of [`IDENTITY_KEYS`] in force at a line; shared, as every
/// result line under one `pkg:` line has the same.
type KeyValues = [Option<Rc<str>>; 4];

/// One result line, before its workload is named. It borrows from the
/// file's text: thousands of lines cost no copy of their words.
struct GoResult<'a> {
    /// The config: its index in [`Imported::configs`].
    config: usize,
    /// Where it stands, for errors: the file's path and the line number.
    path: &'a str,
    line: usize,
    /// The full name (`Foo/sub-8`).
    name: &'a str,
    keys: KeyValues,
    /// (metric name, unit, value) per pair, in line order.
    values: Vec<(String, &'a str, f64)>,
}

impl GoResult<'_> {
    /// "PATH:LINE", as errors name a line.
    fn at(&self) -> String {
        format!("{}:{}", self.path, self.line)
    }
}

/// A `key: value` line (`pkg: example.com/a`, `cpu: ...`) as (key, value
/// trimmed): a key is a lower-case ASCII letter, then anything but white
/// space and `:`, up to the line's first `:` (benchfmt's rule, which the
/// regex `^([a-z][^\s:]*):\s*(.*)$` said before; a compiled regex cost
/// more than parsing a whole file of results).
fn key_line(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(':')?;
    let starts = key.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    (starts && !key.contains(char::is_whitespace)).then(|| (key, value.trim()))
}

/// Parse one file as config `config` into `out` (its key lines into
/// `imp`'s notes and fingerprint).
fn parse_file<'a>(
    imp: &mut Imported,
    out: &mut Vec<GoResult<'a>>,
    config: &str,
    path: &'a str,
    text: &'a str,
) -> Result<(), Error> {
    let mut keys: KeyValues = Default::default();
    // About a result per line: grown once, not by doubling.
    out.reserve(text.len() / 32);
    let found = out.len();
    imp.add_config(config);
    let config_index = imp.configs.len() - 1;
    // A line's words after the name, in one buffer for every line.
    let mut rest: Vec<&str> = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let at = || format!("{path}:{}", ln + 1);
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if !first.starts_with("Benchmark") {
            if let Some((k, v)) = key_line(line) {
                let (k, v) = (k.to_string(), v.to_string());
                imp.notes.push_str(&format!("{config}: {k}: {v}\n"));
                if let Some(i) = IDENTITY_KEYS.iter().position(|x| *x == k) {
                    // A key line with no value unsets the key (benchfmt).
                    keys[i] = (!v.is_empty()).then(|| v.as_str().into());
                }
                if k == "cpu" {
                    imp.fingerprint.entry("cpu_model".into()).or_insert(v);
                } else if k == "goos" || k == "goarch" {
                    imp.fingerprint.entry(k).or_insert(v);
                }
            }
            continue;
        }
        rest.clear();
        rest.extend(fields);
        if rest.is_empty() {
            continue; // the name line `go test -v` prints before the result
        }
        // `first` has no white space: `Benchmark` and a name of at least
        // one character is the whole of benchfmt's rule.
        let name = first
            .strip_prefix("Benchmark")
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
        let mut values: Vec<(String, &str, f64)> = Vec::with_capacity(pairs.len() / 2);
        for p in pairs.chunks(2) {
            let v = value(p[0], p[1]).map_err(|m| Error::bad(format!("{}: {m}", at())))?;
            let metric = metric_name(p[1]);
            if let Some((_, u, _)) = values.iter().find(|(m, _, _)| *m == metric) {
                return Err(Error::bad(if *u == p[1] {
                    format!("{}: unit '{u}' appears twice", at())
                } else {
                    format!("{}: '{u}' and '{}' are both {metric}", at(), p[1])
                }));
            }
            values.push((metric, p[1], v));
        }
        out.push(GoResult {
            config: config_index,
            path,
            line: ln + 1,
            name,
            keys: keys.clone(),
            values,
        });
    }
    if out.len() == found {
        return Err(Error::bad(format!(
            "{path}: no Go benchmark result lines ('BenchmarkName-N  iters  value unit ...')"
        )));
    }
    Ok(())
}

/// Each result's workload name: its full name, followed by those identity
/// keys whose values differ between the results (a key absent from a
/// result is not written).
fn workload_names(results: &[GoResult]) -> Vec<String> {
    let varying: Vec<usize> = (0..IDENTITY_KEYS.len())
        .filter(|&i| {
            let seen: BTreeSet<Option<&str>> =
                results.iter().map(|r| r.keys[i].as_deref()).collect();
            seen.len() > 1
        })
        .collect();
    results
        .iter()
        .map(|r| {
            let keys: Vec<String> = varying
                .iter()
                .filter_map(|&i| {
                    r.keys[i]
                        .as_ref()
                        .map(|v| format!("{}={v}", IDENTITY_KEYS[i]))
                })
                .collect();
            if keys.is_empty() {
                r.name.to_string()
            } else {
                format!("{} [{}]", r.name, keys.join(" "))
            }
        })
        .collect()
}

/// The parsed results as workloads, metrics and runs, in file order. A
/// metric of one workload written in two units (`ns/op` here, `sec/op`
/// there) is refused: its values could not be compared.
fn assemble(imp: &mut Imported, results: Vec<GoResult>) -> Result<(), Error> {
    let names = workload_names(&results);
    // Each (workload, metric)'s unit, as first written; declared in that
    // order, once each.
    let mut units: HashMap<(&str, &str), &str> = HashMap::new();
    let mut first_seen = Vec::new();
    for (r, workload) in results.iter().zip(&names) {
        for (metric, unit, _) in &r.values {
            let known = *units.entry((workload, metric)).or_insert_with(|| {
                first_seen.push((workload.as_str(), metric.as_str(), *unit));
                unit
            });
            if known != *unit {
                return Err(Error::bad(format!(
                    "{}: {workload}'s {metric} is in '{unit}' here and in '{known}' before",
                    r.at()
                )));
            }
        }
    }
    for (workload, metric, unit) in first_seen {
        imp.declare(workload, MetricSpec::new(metric, unit, direction(unit)));
    }
    imp.runs.reserve(results.len());
    for (r, workload) in results.into_iter().zip(names) {
        let samples = (r.values.into_iter())
            .map(|(metric, _, v)| MetricSamples {
                metric,
                values: vec![v],
            })
            .collect();
        imp.runs.push(ImportedRun {
            config: imp.configs[r.config].clone(),
            workload,
            samples,
            failure: None,
            exit_code: None,
        });
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
    let mut results = Vec::new();
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
        parse_file(&mut imp, &mut results, &name, path, text)?;
    }
    assemble(&mut imp, results)?;
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
        assert_eq!(imp.metrics[0].0, "Join-2");
        assert_eq!(
            (specs[0].name.as_str(), specs[0].unit.as_str()),
            ("sec/op", "ns/op")
        );
        assert_eq!(
            (specs[1].name.as_str(), specs[1].unit.as_str()),
            ("B/s", "MB/s")
        );
        assert_eq!(specs[1].direction, Direction::Higher);
    }

    #[test]
    fn packages_and_gomaxprocs_are_distinct_benchmarks() {
        let t = "goos: linux\npkg: example.com/a\nBenchmarkFoo-2  1  100 ns/op\n\
                 pkg: example.com/b\nBenchmarkFoo-2  1  10000 ns/op\nBenchmarkFoo-4  1  9000 ns/op\n";
        let imp = parse(&[("x.txt".into(), t.into())]).unwrap();
        let names: Vec<&str> = imp.metrics.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "Foo-2 [pkg=example.com/a]",
                "Foo-2 [pkg=example.com/b]",
                "Foo-4 [pkg=example.com/b]"
            ]
        );
    }

    #[test]
    fn one_metric_in_two_units_is_refused() {
        let t = "BenchmarkFoo  1  100 ns/op\nBenchmarkFoo  1  1e-7 sec/op\n";
        let e = parse(&[("x.txt".into(), t.into())]).unwrap_err();
        assert!(e.to_string().starts_with("x.txt:2: Foo's sec/op"), "{e}");
        let t = "BenchmarkFoo  1  100 ns/op  1e-7 sec/op\n";
        let e = parse(&[("x.txt".into(), t.into())]).unwrap_err();
        assert!(e.to_string().contains("are both sec/op"), "{e}");
    }

    /// Key lines as benchfmt (and the regex this parser once used) reads
    /// them: a lower-case first letter, no white space or `:` in the key,
    /// the value trimmed; anything else is not a key line.
    #[test]
    fn key_lines_are_read_as_benchfmt_reads_them() {
        assert_eq!(
            key_line("pkg: example.com/a"),
            Some(("pkg", "example.com/a"))
        );
        assert_eq!(
            key_line("cpu:  Intel(R) Xeon  "),
            Some(("cpu", "Intel(R) Xeon"))
        );
        assert_eq!(key_line("goos:"), Some(("goos", "")));
        assert_eq!(key_line("a.b-c: x: y"), Some(("a.b-c", "x: y")));
        for not in [
            "PASS",
            "Pkg: x",
            "my key: x",
            " pkg: x",
            "1pkg: x",
            ": x",
            "ok  	x	1s",
        ] {
            assert_eq!(key_line(not), None, "{not}");
        }
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
