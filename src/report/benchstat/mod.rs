//! benchstat's layout (golang.org/x/perf/cmd/benchstat): one table per
//! unit (and per file-level key such as `pkg` that neither `--row` nor
//! `--col` uses), one row per benchmark, one column per config, each cell
//! the median and its 95% confidence interval, each column after the first
//! its change against the first with the test's p and the run count, and a
//! geomean row. `--filter`, `--row` and `--col` take benchstat's keys
//! (`keys.rs`) and filter syntax (`filter.rs`).
//!
//! Where columns are configs (the default) the change and its `~` are
//! sysdelta's own comparison (its verdict, its corrected p). Columns of any
//! other key compare results sysdelta's analysis never paired: there the
//! p is a Mann-Whitney U test's, uncorrected, as benchstat's, and the
//! report says so.

pub mod filter;
pub mod keys;
mod table;

use anyhow::Result;

use crate::analysis::view::ReportView;
use crate::analysis::{Comparison, Verdict};
use crate::error::bad;
use keys::Keys;

/// How results are projected into tables, rows and columns.
pub struct Layout {
    pub filter: Option<filter::Filter>,
    pub row: Vec<String>,
    pub col: Vec<String>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            filter: None,
            row: vec![".fullname".into()],
            col: vec![".config".into()],
        }
    }
}

impl Layout {
    /// The layout `--filter`, `--row` and `--col` ask for (benchstat's
    /// defaults for those not given).
    pub fn parse(filter: Option<&str>, row: Option<&str>, col: Option<&str>) -> Result<Layout> {
        let mut l = Layout::default();
        if let Some(f) = filter {
            l.filter = Some(filter::parse(f)?);
        }
        if let Some(r) = row {
            l.row = keys::parse_list("--row", r)?;
        }
        if let Some(c) = col {
            l.col = keys::parse_list("--col", c)?;
        }
        for k in l.row.iter().chain(&l.col) {
            if k == ".unit" {
                return Err(bad("--row/--col: .unit is not a row or column key: each unit is a table of its own"));
            }
        }
        if let Some(k) = l.row.iter().find(|k| l.col.contains(k)) {
            return Err(bad(format!("--row and --col both name {k}")));
        }
        Ok(l)
    }

    /// Whether `--filter` keeps any of these (workload, config, metric)
    /// results (always, without a filter): what [`render`] refuses when
    /// none is kept, asked before there is a report.
    pub fn keeps_any<'a>(
        &self,
        results: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> bool {
        (results.into_iter()).any(|(w, c, m)| self.keeps(&Keys::new(w, c, m)))
    }

    /// Whether `--filter` keeps the result of these keys.
    fn keeps(&self, k: &Keys) -> bool {
        (self.filter.as_ref()).is_none_or(|f| f.matches(&|key| k.get(key)))
    }

    fn cols_are_configs(&self) -> bool {
        self.col.iter().all(|k| k == ".config" || k == ".file")
    }
}

/// The benchstat format with its default layout, for `--format benchstat`
/// where no `--filter`/`--row`/`--col` reach it (`cli::report` passes them).
pub struct Benchstat;

impl super::format::ReportFormat for Benchstat {
    fn report(&self, v: &ReportView, _: &super::ReportOptions) -> Result<String> {
        render(v, &Layout::default())
    }
}

/// One (workload, config, metric) of the report, projected.
pub(crate) struct Item<'a> {
    /// "key: value" lines of the file-level keys no row or column uses.
    pub table: Vec<String>,
    /// The metric's index in the analysis.
    pub metric: usize,
    pub row: String,
    pub col: String,
    pub config: &'a str,
    pub values: &'a [f64],
}

/// The text of a key list's values for one item: one value alone, else
/// `key=value` words (a `.`-key's value bare).
fn label(k: &Keys, keys: &[String]) -> String {
    let part = |key: &String| {
        let v = k.get(key).unwrap_or_else(|| "-".into());
        if keys.len() == 1 || key.starts_with('.') {
            v
        } else {
            format!("{}={v}", key.trim_start_matches('/'))
        }
    };
    keys.iter().map(part).collect::<Vec<_>>().join(" ")
}

/// The report of `v` in benchstat's layout.
pub fn render(v: &ReportView, layout: &Layout) -> Result<String> {
    // Stored units: one metric of many benchmarks shares them, and the
    // cells print each value in its base unit with an SI suffix.
    let a = &v.stored;
    let mut items = Vec::new();
    for (mi, m) in a.metrics.iter().enumerate() {
        for c in &m.cells {
            let k = Keys::new(&m.workload, &c.config, &m.spec.name);
            if !layout.keeps(&k) {
                continue;
            }
            let table = k
                .file_key_names()
                .filter(|n| !layout.row.iter().chain(&layout.col).any(|x| x == n))
                .map(|n| format!("{n}: {}", k.get(n).unwrap_or_default()))
                .collect();
            items.push(Item {
                table,
                metric: mi,
                row: label(&k, &layout.row),
                col: label(&k, &layout.col),
                config: &c.config,
                values: &c.values,
            });
        }
    }
    if items.is_empty() {
        return Err(bad("--filter: no result matches"));
    }
    // Configs as columns: the baseline first, as every comparison's base.
    if layout.cols_are_configs() {
        items.sort_by_key(|i| i.config != a.baseline);
    }
    let sysdelta_cmp = layout.cols_are_configs();
    let compared = |metric: usize, base: &[&Item], cell: &[&Item]| -> Option<&Comparison> {
        // sysdelta compared exactly these two cells: one config each of one workload.
        let ([b], [c]) = (base, cell) else {
            return None;
        };
        (sysdelta_cmp && b.config == a.baseline && b.metric == metric)
            .then(|| {
                a.metrics[metric]
                    .comparisons
                    .iter()
                    .find(|x| x.config == c.config)
            })
            .flatten()
    };
    let mut out = table::render_all(a, &items, &compared, sysdelta_cmp);
    if out.contains("± ∞") {
        out.push_str("± ∞: a confidence interval of the median at 95% needs 6 runs or more\n");
    }
    out.push_str(&footnote(a, sysdelta_cmp));
    // The footnote's p is most cells'; the others are marked and said.
    if out.contains(WELCH) {
        out.push_str(&format!(
            "{WELCH}: p of Welch's t on boot means (fewer than 8 boots a side), adjusted as the rank test's\n"
        ));
    }
    if out.contains(POOLED) {
        out.push_str(&format!(
            "{POOLED}: cells pooled by --row/--col, not a comparison sysdelta made: p of a Mann-Whitney U test, not corrected; ~ where p >= {}\n",
            a.alpha
        ));
    }
    Ok(out)
}

/// The mark of a cell whose p is Welch's t on boot means, not the rank test's.
pub(crate) const WELCH: &str = "†";
/// The mark of a cell, where columns are configs, whose p is an uncorrected
/// Mann-Whitney U test of pooled values (not one of sysdelta's comparisons).
pub(crate) const POOLED: &str = "‡";

/// What the p and the `~` are.
fn footnote(a: &crate::analysis::Analysis, configs: bool) -> String {
    if configs {
        format!(
            "vs base: change of the medians; ~ where sysdelta's verdict is noise; p of the rank test, {}-adjusted over {} comparisons (alpha {})\n",
            match a.correction {
                crate::analysis::Correction::Holm => "Holm",
                crate::analysis::Correction::Bh => "BH",
            },
            a.n_comparisons,
            a.alpha
        )
    } else {
        format!(
            "vs base: change of the medians; p of a Mann-Whitney U test, not corrected for multiple comparisons (columns are not configs: sysdelta's analysis did not pair them); ~ where p >= {}\n",
            a.alpha
        )
    }
}

/// The "vs base" text of a comparison sysdelta made.
pub(crate) fn sysdelta_delta(c: &Comparison, n: usize) -> String {
    let p = c.p_adjusted.or(c.p);
    let mark = match c.test {
        crate::stats::power::ReportTest::Welch => WELCH,
        crate::stats::power::ReportTest::Rank => "",
    };
    let pn = match p {
        Some(p) => format!("(p={p:.3} n={n}){mark}"),
        None => format!("(n={n})"),
    };
    match (c.verdict, c.delta_median_pct) {
        (Verdict::Better | Verdict::Worse, Some(d)) => format!("{d:+.2}% {pn}"),
        (Verdict::Noise, _) => format!("~ {pn}"),
        _ => "n/a".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::power::ReportTest;

    #[test]
    fn a_welch_p_is_marked_as_not_the_rank_tests() {
        let mut c = Comparison::undefined("new".into());
        c.verdict = Verdict::Noise;
        c.p = Some(0.2);
        c.p_adjusted = Some(0.4);
        assert_eq!(sysdelta_delta(&c, 5), "~ (p=0.400 n=5)");
        c.test = ReportTest::Welch;
        assert_eq!(sysdelta_delta(&c, 5), format!("~ (p=0.400 n=5){WELCH}"));
    }
}
