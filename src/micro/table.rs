//! The LMbench 2.0 summary layout: one table per group, one row per config
//! or label, the columns of the 2002 postings; in comparisons each row
//! after the first (the baseline) is followed by a "delta %" row.

use std::collections::HashMap;
use std::io::{self, Write};

use super::catalog::{catalog, Entry, Table, CTX_KB};
use super::MicroResult;

/// Every table, in print order, with its title.
pub fn tables() -> Vec<(Table, String)> {
    let mut v = vec![
        (
            Table::Proc,
            "Processor, Processes - times in microseconds - smaller is better".to_string(),
        ),
        (
            Table::Select,
            "File select - times in microseconds - smaller is better".into(),
        ),
    ];
    for kb in CTX_KB {
        v.push((
            Table::Ctx(kb),
            format!("Context switching with {kb}K - times in microseconds - smaller is better"),
        ));
    }
    v.extend([
        (
            Table::FsVm,
            "File create/delete and VM system latencies in microseconds - smaller is better".into(),
        ),
        (
            Table::Lat,
            "*Local* Communication latencies in microseconds - smaller is better (no RPC)".into(),
        ),
        (
            Table::LatPinned,
            "*Local* Communication latencies by CPU placement in microseconds - smaller is better"
                .into(),
        ),
        (
            Table::Bw,
            "*Local* Communication bandwidths in MB/s (MB = 10^6 bytes) - bigger is better".into(),
        ),
        (
            Table::BwPinned,
            "*Local* Communication bandwidths by CPU placement in MB/s (MB = 10^6 bytes) - bigger is better".into(),
        ),
        (
            Table::MemLat,
            "Memory latencies in nanoseconds - smaller is better".into(),
        ),
        (
            Table::Sem,
            "SysV semaphores: semop round trip (us), semring per repetition - smaller is better"
                .into(),
        ),
        (
            Table::Floor,
            "Physical floor and ceiling: ENOSYS syscall vs null call (us), peak memory bandwidth (MB/s, MB = 10^6 bytes)"
                .into(),
        ),
    ]);
    v
}

/// The columns of one table.
fn columns(t: Table, cat: &[Entry]) -> Vec<Entry> {
    let mut cols: Vec<Entry> = cat.iter().filter(|e| e.table == t).cloned().collect();
    if t == Table::Floor {
        for n in ["proc.null_call", "bw.mem_read.huge", "bw.mem_write.huge"] {
            if let Some(e) = cat.iter().find(|e| e.name == n) {
                cols.push(e.clone());
            }
        }
    }
    cols
}

/// LMbench-like number formatting: 3 decimals below 1000, then fewer.
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a < 1000.0 {
        format!("{v:.3}")
    } else if a < 100_000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Percentage change of `v` against `base`.
pub fn fmt_delta(v: f64, base: f64) -> String {
    if base == 0.0 || !base.is_finite() || !v.is_finite() {
        return "-".into();
    }
    format!("{:+.1}%", (v - base) / base * 100.0)
}

/// Print every table that has at least one value. `rows` are (label,
/// results of that config or label); the first row is the baseline.
pub fn print_lmbench_tables(
    rows: &[(String, Vec<MicroResult>)],
    deltas: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let cat = catalog();
    let maps: Vec<HashMap<&str, f64>> = rows
        .iter()
        .map(|(_, rs)| rs.iter().map(|r| (r.name.as_str(), r.median)).collect())
        .collect();
    writeln!(
        out,
        "L M B E N C H  2 . 0  S U M M A R Y   (sysdelta micro)"
    )?;
    writeln!(out, "------------------------------------")?;
    for (t, title) in tables() {
        let cols: Vec<Entry> = columns(t, &cat)
            .into_iter()
            .filter(|c| maps.iter().any(|m| m.contains_key(c.name.as_str())))
            .collect();
        if cols.is_empty() {
            continue;
        }
        // Cells: one line per row (and delta rows), label first.
        let mut lines: Vec<Vec<String>> = Vec::new();
        let base = maps.first();
        for (i, ((label, _), m)) in rows.iter().zip(&maps).enumerate() {
            let mut l = vec![label.clone()];
            for c in &cols {
                l.push(m.get(c.name.as_str()).map_or("-".into(), |v| fmt_value(*v)));
            }
            lines.push(l);
            if deltas && i > 0 {
                let mut d = vec!["delta %".to_string()];
                for c in &cols {
                    let b = base.and_then(|b| b.get(c.name.as_str()));
                    let v = m.get(c.name.as_str());
                    d.push(match (v, b) {
                        (Some(v), Some(b)) => fmt_delta(*v, *b),
                        _ => "-".into(),
                    });
                }
                lines.push(d);
            }
        }
        let mut h1 = vec![String::new()];
        let mut h2 = vec!["config".to_string()];
        for c in &cols {
            h1.push(c.head.0.clone());
            h2.push(c.head.1.clone());
        }
        let ncol = cols.len() + 1;
        let width: Vec<usize> = (0..ncol)
            .map(|j| {
                lines
                    .iter()
                    .map(|l| l[j].len())
                    .chain([h1[j].len(), h2[j].len(), 7])
                    .max()
                    .map_or(7, crate::sys::visible::column)
            })
            .collect();
        writeln!(out)?;
        writeln!(out, "{title}")?;
        writeln!(out, "{}", "-".repeat(title.len()))?;
        let print = |out: &mut dyn Write, cells: &[String]| -> io::Result<()> {
            let mut s = format!("{:<w$}", cells[0], w = width[0]);
            for j in 1..ncol {
                s.push_str(&format!(" {:>w$}", cells[j], w = width[j]));
            }
            writeln!(out, "{}", s.trim_end())
        };
        if h1.iter().any(|h| !h.is_empty()) {
            print(out, &h1)?;
        }
        print(out, &h2)?;
        let dashes: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        print(out, &dashes)?;
        for l in &lines {
            print(out, l)?;
        }
    }
    print_notes(&cat, &maps, out)
}

/// Under the tables: every shown metric whose definition is not LMbench
/// 3's, with that definition, so no figure passes for LMbench's when it is
/// a different quantity.
fn print_notes(cat: &[Entry], maps: &[HashMap<&str, f64>], out: &mut dyn Write) -> io::Result<()> {
    let shown: Vec<&Entry> = cat
        .iter()
        .filter(|e| e.note.is_some() && maps.iter().any(|m| m.contains_key(e.name.as_str())))
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    let title = "Not LMbench 3's quantity (definitions: docs/micro.md)";
    writeln!(out, "\n{title}")?;
    writeln!(out, "{}", "-".repeat(title.len()))?;
    for e in shown {
        writeln!(
            out,
            "{:<24} {}: {}",
            e.name,
            e.column(),
            e.note.unwrap_or_default()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Direction;
    use crate::micro::Pinning;

    fn r(name: &str, v: f64) -> MicroResult {
        MicroResult {
            group: name.split('.').next().unwrap().into(),
            name: name.into(),
            column: String::new(),
            unit: "us".into(),
            direction: Direction::Lower,
            pinning: Pinning::Unpinned,
            samples: vec![v],
            median: v,
            detail: String::new(),
        }
    }

    #[test]
    fn delta_rows_follow_non_baseline_rows() {
        let rows = vec![
            ("A".to_string(), vec![r("proc.null_call", 0.5)]),
            ("D".to_string(), vec![r("proc.null_call", 1.0)]),
        ];
        let mut out = Vec::new();
        print_lmbench_tables(&rows, true, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("Processor, Processes"), "{s}");
        assert!(!s.contains("File select"), "{s}");
        let lines: Vec<&str> = s.lines().collect();
        let d = lines.iter().position(|l| l.starts_with("D ")).unwrap();
        assert!(lines[d + 1].starts_with("delta %"), "{s}");
        assert!(lines[d + 1].contains("+100.0%"), "{s}");
        assert!(!lines[..d].iter().any(|l| l.starts_with("delta")), "{s}");
    }
}
