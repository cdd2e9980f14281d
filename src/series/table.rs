//! The 2001-style side-by-side table: one column per config, one row per
//! interval, and under it each column's trend flag, slope and asymptotic level.

use std::io::{self, Write};

use super::{analyze, asymptotic_ratio, Trend};

/// Format a value with about four significant digits, no exponent.
fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// Print `cols` (name, values in time order) side by side, followed by each
/// column's trend flag, Theil-Sen slope per interval, number of change
/// points, asymptotic level and its ratio to the first column.
///
/// Slopes are per interval (the table does not know the interval length);
/// use [`print_side_by_side_with`] for slopes per second.
pub fn print_side_by_side(cols: &[(String, Vec<f64>)], out: &mut dyn Write) -> io::Result<()> {
    print_side_by_side_with(cols, 1.0, "interval", out)
}

/// As [`print_side_by_side`], analysing with `interval_s` and labelling the
/// slope unit "per `per`".
pub fn print_side_by_side_with(
    cols: &[(String, Vec<f64>)],
    interval_s: f64,
    per: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let trends: Vec<Trend> = cols.iter().map(|(_, v)| analyze(v, interval_s)).collect();
    let rows = cols.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let mut foot: Vec<Vec<String>> = vec![Vec::new(); 5];
    for t in &trends {
        foot[0].push(t.flag.as_str().to_string());
        foot[1].push(if t.theil_sen_slope.is_finite() {
            let v = t.theil_sen_slope * interval_s;
            let sign = if v >= 0.0 { "+" } else { "" };
            format!("{sign}{}", fmt_value(v))
        } else {
            "-".into()
        });
        foot[2].push(t.change_points.len().to_string());
        foot[3].push(fmt_value(t.asymptotic_level));
        foot[4].push(match asymptotic_ratio(&trends[0], t) {
            Some(r) => format!("{r:.2}x"),
            None => "-".into(),
        });
    }
    let labels = [
        "trend (MK p<0.05, slope CI excludes 0, change >5%)".to_string(),
        format!("Theil-Sen slope per {per}"),
        "change points (PELT)".to_string(),
        "asymptotic level (median of last third)".to_string(),
        format!(
            "ratio to {}",
            cols.first().map(|c| c.0.as_str()).unwrap_or("-")
        ),
    ];
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, (name, v))| {
            let w = v.iter().map(|x| fmt_value(*x).len()).max().unwrap_or(0);
            let f = foot.iter().map(|r| r[i].len()).max().unwrap_or(0);
            // At most 1000, as sys::visible::WIDEST_COLUMN (the stats
            // crate cannot reach sys): `{:>w$}` panics above 65,535 and a
            // store's writer names the series.
            name.len().max(w).max(f).clamp(6, 1000)
        })
        .collect();
    let line = |out: &mut dyn Write, cells: &[String], tail: &str| -> io::Result<()> {
        let mut s = String::new();
        for (c, w) in cells.iter().zip(&widths) {
            s.push_str(&format!("{c:>w$}  ", w = *w));
        }
        s.push_str(tail);
        writeln!(out, "{}", s.trim_end())
    };
    let names: Vec<String> = cols.iter().map(|c| c.0.clone()).collect();
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(out, &names, "")?;
    line(out, &rule, "")?;
    for r in 0..rows {
        let cells: Vec<String> = cols
            .iter()
            .map(|(_, v)| v.get(r).map(|x| fmt_value(*x)).unwrap_or_default())
            .collect();
        line(out, &cells, "")?;
    }
    line(out, &rule, "")?;
    for (cells, label) in foot.iter().zip(&labels) {
        line(out, cells, label)?;
    }
    Ok(())
}
