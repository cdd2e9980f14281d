//! benchstat's tables drawn: rows of benchmarks, column groups of
//! "median ± CI" and "vs base", a geomean row, numbers with benchstat's
//! SI suffixes (`1.718µ`, `307.3Mi`) in the metric's base unit.

use super::Item;
use crate::analysis::{Analysis, Comparison};
use crate::report::units::convert;

type Compared<'a> = dyn Fn(usize, &[&Item], &[&Item]) -> Option<&'a Comparison> + 'a;

/// Every table of `items`, in the order their first item comes.
/// `configs`: columns are configs, so a cell not compared by sysdelta
/// (values pooled by `--row`) is marked [`super::POOLED`].
pub(crate) fn render_all<'a>(
    a: &'a Analysis,
    items: &[Item],
    compared: &Compared<'a>,
    configs: bool,
) -> String {
    // (file-level key lines, metric name) -> its items.
    type Key<'k> = (&'k [String], &'k str);
    let mut tables: Vec<(Key, Vec<&Item>)> = Vec::new();
    for i in items {
        let key = (i.table.as_slice(), a.metrics[i.metric].spec.name.as_str());
        match tables.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => tables.push((key, vec![i])),
        }
    }
    let mut out = String::new();
    let mut keys_shown: Option<&[String]> = None;
    for ((keys, name), its) in &tables {
        if keys_shown != Some(*keys) {
            for k in keys.iter() {
                out.push_str(&crate::report::escape::terminal_safe(k));
                out.push('\n');
            }
            keys_shown = Some(keys);
        }
        out.push_str(&one(a, name, its, compared, configs));
        out.push('\n');
    }
    out
}

/// The values of `its` in the base unit of their metric (s, B, or the
/// stored unit), with the base unit's name.
fn base_values(a: &Analysis, it: &Item) -> (Vec<f64>, Base) {
    let unit = &a.metrics[it.metric].spec.unit;
    let tail = unit.find('/').map_or("", |i| &unit[i..]);
    // Go's MB/s is 10^6 bytes a second (benchstat tidies it to B/s).
    if unit.starts_with("MB/") {
        return (it.values.iter().map(|v| v * 1e6).collect(), Base::Bytes);
    }
    for (amount, base) in [("s", Base::Time), ("B", Base::Bytes)] {
        let to = format!("{amount}{tail}");
        if let Some(f) = convert(1.0, unit, &to) {
            return (it.values.iter().map(|v| v * f).collect(), base);
        }
    }
    (it.values.to_vec(), Base::Other)
}

#[derive(Clone, Copy, PartialEq)]
enum Base {
    Time,
    Bytes,
    Other,
}

/// One table: its header, a row per benchmark, the geomean row.
fn one<'a>(
    a: &'a Analysis,
    name: &str,
    its: &[&Item],
    compared: &Compared<'a>,
    configs: bool,
) -> String {
    let mut rows: Vec<&str> = Vec::new();
    let mut cols: Vec<&str> = Vec::new();
    for i in its {
        if !rows.contains(&i.row.as_str()) {
            rows.push(&i.row);
        }
        if !cols.contains(&i.col.as_str()) {
            cols.push(&i.col);
        }
    }
    let cell = |r: &str, c: &str| -> Vec<&Item> {
        its.iter()
            .filter(|i| i.row == r && i.col == c)
            .copied()
            .collect()
    };
    // One metric name, one family of units: the first item's says which.
    let base_kind = base_values(a, its[0]).1;
    let values =
        |cs: &[&Item]| -> Vec<f64> { cs.iter().flat_map(|i| base_values(a, i).0).collect() };
    // grid[r][c] = (median ± CI, vs base), medians[r][c] for the geomean.
    let mut grid: Vec<Vec<(String, String)>> = Vec::new();
    let mut medians: Vec<Vec<Option<f64>>> = Vec::new();
    for r in &rows {
        let base_items = cell(r, cols[0]);
        let base = sorted(values(&base_items));
        let (mut line, mut meds) = (Vec::new(), Vec::new());
        for (ci, c) in cols.iter().enumerate() {
            let items = cell(r, c);
            let v = sorted(values(&items));
            meds.push(median(&v));
            let delta = if ci == 0 {
                String::new()
            } else if let Some(cmp) = items
                .first()
                .and_then(|i| compared(i.metric, &base_items, &items))
            {
                super::sysdelta_delta(cmp, v.len())
            } else {
                let d = rank_delta(&base, &v, a.alpha);
                match configs && d != "n/a" {
                    true => format!("{d}{}", super::POOLED),
                    false => d,
                }
            };
            line.push((summary(&v, base_kind), delta));
        }
        grid.push(line);
        medians.push(meds);
    }
    let kind = base_kind;
    let name = crate::report::escape::terminal_safe(name);
    let header = match (name.contains('/'), kind) {
        (true, _) => name.to_string(),
        (false, Base::Time) => format!("{name} (s)"),
        (false, Base::Bytes) => format!("{name} (B)"),
        (false, Base::Other) => name.to_string(),
    };
    let geo = (rows.len() > 1).then(|| geomean_row(&medians, cols.len(), kind));
    draw(&rows, &cols, &grid, geo.as_ref(), &header)
}

/// Lay the table out.
fn draw(
    rows: &[&str],
    cols: &[&str],
    grid: &[Vec<(String, String)>],
    geo: Option<&Vec<(String, String)>>,
    unit: &str,
) -> String {
    let esc = crate::report::escape::terminal_safe;
    let w = |s: &str| s.chars().count();
    let all = || grid.iter().chain(geo);
    let w0 = rows
        .iter()
        .map(|r| w(&esc(r)))
        .chain([7])
        .max()
        .map_or(7, crate::sys::visible::column);
    let mut widths = Vec::new();
    for c in 0..cols.len() {
        let name = w(&esc(cols[c])) + 1;
        let wv = all()
            .map(|l| w(&l[c].0))
            .chain([w(unit), name])
            .max()
            .unwrap_or(0);
        let wd = all().map(|l| w(&l[c].1)).chain([7]).max().unwrap_or(0);
        let col = crate::sys::visible::column;
        widths.push((col(wv), if c == 0 { 0 } else { col(wd) }));
    }
    // The widest median of each column (the text before its " ±").
    let medians: Vec<usize> = (0..cols.len())
        .map(|c| {
            all()
                .map(|l| w(l[c].0.split(" ±").next().unwrap_or("")))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let group = |c: usize| 2 + widths[c].0 + if c == 0 { 0 } else { 2 + widths[c].1 };
    let center = |s: &str, n: usize| {
        let pad = n.saturating_sub(w(s));
        format!("{}{s}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
    };
    let mut out = format!("{:w0$}", "");
    for (c, name) in cols.iter().enumerate() {
        out.push('│');
        out.push_str(&center(&esc(name), group(c) - 1));
    }
    out.push_str("│\n");
    out.push_str(&format!("{:w0$}", ""));
    for (c, (wv, wd)) in widths.iter().enumerate() {
        // The unit over the values, "vs base" over the changes.
        out.push_str(&format!("│ {}", center(unit, *wv)));
        if c > 0 {
            out.push_str(&format!("  {:<wd$}", "vs base"));
        }
    }
    out.push_str("│\n");
    let names = rows
        .iter()
        .map(|r| esc(r))
        .chain(geo.map(|_| "geomean".to_string()));
    for (label, line) in names.zip(grid.iter().chain(geo)) {
        let mut l = format!("{label:<w0$}");
        for (c, (v, d)) in line.iter().enumerate() {
            // Medians right-aligned, as benchstat's, so their digits line up.
            let (m, ci) = v.split_at(v.find(" ±").unwrap_or(v.len()));
            let cell = format!("{m:>w$}{ci}", w = medians[c]);
            l.push_str(&format!("  {cell:<w$}", w = widths[c].0));
            if c > 0 {
                l.push_str(&format!("  {d:<w$}", w = widths[c].1));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

/// The geomean row: each column's geometric mean of its positive medians,
/// and its change against the first column over the rows both have.
fn geomean_row(medians: &[Vec<Option<f64>>], ncols: usize, kind: Base) -> Vec<(String, String)> {
    let gm = |xs: Vec<f64>| {
        (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
    };
    (0..ncols)
        .map(|c| {
            let own = gm(medians
                .iter()
                .filter_map(|r| r[c])
                .filter(|x| *x > 0.0)
                .collect());
            let ratio = gm(medians
                .iter()
                .filter_map(|r| match (r[0], r[c]) {
                    (Some(b), Some(x)) if b > 0.0 && x > 0.0 => Some(x / b),
                    _ => None,
                })
                .collect());
            let d = match ratio {
                Some(r) if c > 0 => format!("{:+.2}%", (r - 1.0) * 100.0),
                _ => String::new(),
            };
            (own.map_or("n/a".into(), |g| si(g, kind)), d)
        })
        .collect()
}

/// "vs base" of two groups sysdelta's analysis did not pair: the change of
/// the medians and a Mann-Whitney U test's p.
fn rank_delta(base: &[f64], v: &[f64], alpha: f64) -> String {
    let n = if base.len() == v.len() {
        format!("n={}", v.len())
    } else {
        format!("n={}+{}", base.len(), v.len())
    };
    let (Some(mb), Some(mv)) = (median(base), median(v)) else {
        return "n/a".into();
    };
    let Some(t) = crate::stats::mannwhitney::mann_whitney_u(base, v) else {
        return "n/a".into();
    };
    if t.p >= alpha || mb == 0.0 {
        format!("~ (p={:.3} {n})", t.p)
    } else {
        format!("{:+.2}% (p={:.3} {n})", (mv / mb - 1.0) * 100.0, t.p)
    }
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn median(s: &[f64]) -> Option<f64> {
    let n = s.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        }
    })
}

/// "median ± CI%" of sorted values, as benchstat prints a cell.
fn summary(s: &[f64], kind: Base) -> String {
    let Some(m) = median(s) else {
        return "n/a".into();
    };
    let ci = match median_ci(s) {
        Some((lo, hi)) if m != 0.0 => format!("{:.0}%", ((m - lo).max(hi - m) / m.abs()) * 100.0),
        _ => "∞".into(),
    };
    format!("{} ± {ci}", si(m, kind))
}

/// The distribution-free 95% confidence interval of the median of sorted
/// values: the order statistics x(k), x(n-1-k) with the largest k whose
/// coverage 1 - 2 P(Binom(n, 1/2) <= k) is at least 95% (benchstat's
/// interval). None when even [min, max] covers less (n <= 5).
fn median_ci(s: &[f64]) -> Option<(f64, f64)> {
    let n = s.len();
    // P(X <= k) summed in log space, so that 0.5^n does not underflow.
    let mut lp = -(n as f64) * std::f64::consts::LN_2;
    let mut cdf = 0.0;
    let mut k = None;
    for i in 0..n / 2 {
        cdf += lp.exp();
        if cdf > 0.025 {
            break;
        }
        k = Some(i);
        lp += ((n - i) as f64 / (i + 1) as f64).ln();
    }
    k.map(|k| (s[k], s[n - 1 - k]))
}

/// `v` with 4 significant digits and benchstat's suffix.
fn si(v: f64, kind: Base) -> String {
    let (step, up, down): (f64, &[&str], &[&str]) = match kind {
        Base::Bytes => (1024.0, &["Ki", "Mi", "Gi", "Ti"], &[]),
        Base::Time => (1000.0, &[], &["m", "µ", "n", "p"]),
        Base::Other => (1000.0, &["k", "M", "G", "T"], &["m", "µ", "n", "p"]),
    };
    let (mut x, mut suffix) = (v, "");
    for s in up {
        if x.abs() < step {
            break;
        }
        x /= step;
        suffix = s;
    }
    for s in down {
        if x == 0.0 || x.abs() >= 1.0 {
            break;
        }
        x *= 1000.0;
        suffix = s;
    }
    let a = x.abs();
    let digits = if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    format!("{x:.digits$}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_benchstat_prints_them() {
        assert_eq!(si(1.718e-6, Base::Time), "1.718µ");
        assert_eq!(si(46.55e-9, Base::Time), "46.55n");
        assert_eq!(si(237.5e-9, Base::Time), "237.5n");
        assert_eq!(si(307.3 * 1048576.0, Base::Bytes), "307.3Mi");
        assert_eq!(si(3.0, Base::Time), "3.000");
    }

    #[test]
    fn median_interval_needs_six_values() {
        let v: Vec<f64> = (1..=5).map(f64::from).collect();
        assert_eq!(median_ci(&v), None);
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        // n = 10: P(X <= 1) = 11/1024 <= 0.025 < P(X <= 2) = 56/1024.
        assert_eq!(median_ci(&v), Some((2.0, 9.0)));
    }
}
