//! LMbench 3 result files (`results/<os>/<host>.N`, as `make results`
//! writes them): each file is one run; files of the same `<os>/<host>` form
//! one config. Parsed: the `[KEY: value]` header (host, kernel release,
//! machine, processors, MHz) and the summary lines `NAME: VALUE UNIT` with
//! UNIT microseconds (lower is better), MB/sec or KB/sec (higher is
//! better), e.g. "Simple syscall:", "Pipe latency:", "Process fork+exit:",
//! "Pipe bandwidth:", plus the context-switch table (`"size=Nk ovr=X`
//! followed by `NPROCS MICROSECONDS` lines) as metrics `ctxsw size=Nk Np`.

use regex::Regex;

use super::{Imported, ImportedRun};
use crate::error::Error;
use crate::metric::{Direction, MetricSpec};
use crate::workload::MetricSamples;

pub const WORKLOAD: &str = "lmbench";

fn config_of(path: &str) -> String {
    let p = std::path::Path::new(path);
    let file = p
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.into());
    // host.N -> host
    let host = match file.rsplit_once('.') {
        Some((h, n)) if n.chars().all(|c| c.is_ascii_digit()) && !h.is_empty() => h.to_string(),
        _ => file,
    };
    match p.parent().and_then(|d| d.file_name()) {
        Some(os) => format!("{}/{host}", os.to_string_lossy()),
        None => host,
    }
}

/// A value as a result line may hold it: LMbench prints digits, but a
/// broken run or an edited file can hold `nan`, `inf` or a sign, which
/// must be refused, not skipped as a line that is no result.
const NUMBER: &str =
    r"[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+|(?i:nan|inf(?:inity)?))";

/// A time or a bandwidth as the file writes it: refused unless it is a
/// finite number (not `nan`, `inf`, nor `1e999`, which overflows) and not
/// negative, which neither can be.
fn value(text: &str, at: &str) -> Result<f64, Error> {
    match text.parse::<f64>() {
        Ok(v) if !v.is_finite() => {
            Err(Error::bad(format!("{at}: '{text}' is not a finite number")))
        }
        Ok(v) if v < 0.0 => Err(Error::bad(format!(
            "{at}: '{text}' is negative, which no LMbench time or bandwidth can be"
        ))),
        Ok(v) => Ok(v),
        Err(_) => Err(Error::bad(format!("{at}: '{text}' is not a number"))),
    }
}

/// Parse one result file into `imp` as one run of config `config`.
fn parse_into(imp: &mut Imported, config: &str, path: &str, text: &str) -> Result<(), Error> {
    let line_re = Regex::new(&format!(
        r"^([A-Za-z][^:\x22\[]*?):\s*({NUMBER})\s+(microseconds|MB/sec|KB/sec)\s*$"
    ))
    .expect("valid regex");
    let header_re = Regex::new(r"^\[([A-Z_ ]+):\s*(.*)\]\s*$").expect("valid regex");
    let ctx_re = Regex::new(r#"^"size=(\d+[kKmM]?) ovr=([0-9.]+)\s*$"#).expect("valid regex");
    let pair_re = Regex::new(&format!(r"^(\d+)\s+({NUMBER})\s*$")).expect("valid regex");
    let mut samples: Vec<MetricSamples> = Vec::new();
    let mut push = |imp: &mut Imported, name: String, unit: &str, dir: Direction, v: f64| {
        imp.declare(WORKLOAD, MetricSpec::new(&name, unit, dir));
        match samples.iter_mut().find(|s| s.metric == name) {
            Some(s) => s.values.push(v),
            None => samples.push(MetricSamples {
                metric: name,
                values: vec![v],
            }),
        }
    };
    let mut saw_header = false;
    let mut ctx_size: Option<String> = None;
    for (ln, line) in text.lines().enumerate() {
        let at = format!("{path}:{}", ln + 1);
        let l = line.trim_end();
        if let Some(c) = header_re.captures(l) {
            saw_header = true;
            let key = match &c[1] {
                "HOSTNAME" => Some("host"),
                "RELEASE" => Some("kernel"),
                "MACHINE" => Some("arch"),
                "PROCESSORS" => Some("cpus_online"),
                "MHZ" => Some("cpu_mhz"),
                "LMBENCH VERSION" | "LMBENCH_VER" => Some("lmbench"),
                _ => None,
            };
            if let Some(k) = key {
                imp.fingerprint
                    .entry(k.into())
                    .or_insert_with(|| c[2].trim().to_string());
            }
            continue;
        }
        if l.starts_with("[lmbench") {
            saw_header = true;
            continue;
        }
        if let Some(c) = ctx_re.captures(l) {
            ctx_size = Some(c[1].to_string());
            continue;
        }
        if let Some(size) = &ctx_size {
            if let Some(c) = pair_re.captures(l) {
                let v = value(&c[2], &at)?;
                push(
                    imp,
                    format!("ctxsw size={size} {}p", &c[1]),
                    "us",
                    Direction::Lower,
                    v,
                );
                continue;
            }
            ctx_size = None;
        }
        if let Some(c) = line_re.captures(l) {
            let v = value(&c[2], &at)?;
            let (unit, dir) = match &c[3] {
                "microseconds" => ("us", Direction::Lower),
                "MB/sec" => ("MB/s", Direction::Higher),
                _ => ("KB/s", Direction::Higher),
            };
            push(imp, c[1].trim().to_string(), unit, dir, v);
        }
    }
    if samples.is_empty() {
        return Err(Error::bad(format!(
            "{path}: no LMbench results (expected lines like 'Simple syscall: 0.1 microseconds'){}",
            if saw_header { " - truncated?" } else { "" }
        )));
    }
    imp.runs.push(ImportedRun {
        config: config.into(),
        workload: WORKLOAD.into(),
        samples,
        failure: None,
        exit_code: None,
    });
    Ok(())
}

/// Parse result files (one run each), grouped into configs by `<os>/<host>`.
pub fn parse(files: &[(String, String)]) -> Result<Imported, Error> {
    let mut imp = Imported {
        format: "LMbench results".into(),
        name: "LMbench import".into(),
        ..Default::default()
    };
    for (path, text) in files {
        let config = config_of(path);
        imp.add_config(&config);
        imp.notes
            .push_str(&format!("# run of config {config}: {path}\n"));
        parse_into(&mut imp, &config, path, text)?;
    }
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_and_context_switches() {
        let t = "[lmbench3.0 results for Linux h 6.1]\n[RELEASE: 6.1.0]\nSimple syscall: 0.0435 microseconds\n\
                 Pipe bandwidth: 3066.99 MB/sec\n\"size=0k ovr=0.89\n2 2.07\n4 2.26\n\nPipe latency: 4.5 microseconds\n";
        let imp = parse(&[("results/x86_64-linux-gnu/h.0".into(), t.into())]).unwrap();
        assert_eq!(imp.configs, vec!["x86_64-linux-gnu/h"]);
        let s = &imp.runs[0].samples;
        let names: Vec<&str> = s.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "Simple syscall",
                "Pipe bandwidth",
                "ctxsw size=0k 2p",
                "ctxsw size=0k 4p",
                "Pipe latency"
            ]
        );
        assert_eq!(imp.fingerprint["kernel"], "6.1.0");
    }
}
