//! Assembling the page: sections in reading order, each plot in a
//! `<figure>` with a text alternative.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::Result;

use super::cells::{ci_text, delta_text, footnote_html, legend, verdict_class, verdict_text};
use super::plot::PLOT_WIDTH;
use super::{esc, forest, lines, plot, Extras};
use crate::analysis::view::{ReportView, SeriesRecord};
use crate::analysis::{Analysis, Comparison, MetricAnalysis, Verdict};
use crate::report::text::fmt_num;

/// The report's style sheet; the history page uses it too.
pub(super) const CSS: &str = r#"
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111;background:#fff;margin:0 auto;max-width:1180px;padding:0 12px 40px}
h1{font-size:1.5em;margin:.6em 0 .2em}h2{font-size:1.25em;border-bottom:2px solid #333;margin-top:1.6em}h3{font-size:1.1em;margin-top:1.4em}h4{margin:1.2em 0 .3em;font-size:1em}
.meta{color:#333}
.box{border:2px solid #333;border-left-width:8px;padding:.5em .8em;margin:.8em 0;background:#f4f4f4}
.box.warn{border-color:#8a4b00;background:#fff4e0}
.box ul{margin:.2em 0;padding-left:1.2em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.4em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right;vertical-align:top}
th{background:#eee}
td.l,th.l{text-align:left}
tr.noise td{color:#6b6b6b;background:#fafafa}
tr.worse td.v{font-weight:bold}
tr.better td.v{font-weight:bold}
tr.diff td{background:#ffe9b3;font-weight:bold}
tr.diff td:first-child::before{content:"\2260  "}
figure{margin:.5em 0 1em}
.plots{display:flex;flex-wrap:wrap;gap:8px}
.plots>div{flex:0 1 auto;min-width:0;overflow-x:auto}
svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.85em;color:#333}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;border:1px solid #ddd;padding:6px;font-size:.85em;max-height:30em;overflow:auto}
.legend span{margin-right:1em;white-space:nowrap}
details>summary{cursor:pointer}
.narrow{display:none}
[role=img]{overflow-x:auto;max-width:100%}
@media (max-width:640px){body{font-size:14px;padding:0 6px}th,td{padding:1px 3px;overflow-wrap:anywhere}.wide{display:none}.narrow{display:block}
table.cells,table.cells tbody{display:block}table.cells thead{display:none}
table.cells tr{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));border:1px solid #ccc;margin:0 0 6px}
table.cells td{border:0;text-align:left}table.cells td:first-child,table.cells td.v{grid-column:1/-1}
table.cells td:first-child{background:#eee}table.cells td:empty{display:none}
table.cells td[data-l]::before{content:attr(data-l)": ";color:#555}}
@media print{.box{break-inside:avoid}}
"#;

/// (config, workload, series) as `Extras::series` holds them.
type SeriesEntry = (String, String, SeriesRecord);

const FOREST_CHUNK: usize = 60;

/// The most rows the forest plot draws (its first chunks): verdicts come
/// first, so a report of thousands of comparisons still plots every change
/// beyond noise up to this many, and the grey rows after them are in the
/// table only. All 3,000 rows of 1,000 Go benchmarks were 3 MB of SVG.
const FOREST_MAX_ROWS: usize = 3 * FOREST_CHUNK;

pub fn render(v: &ReportView) -> Result<String> {
    let (a, x) = (&v.shown, &v.extras);
    let mut o = String::with_capacity(1 << 20);
    let i = &a.info;
    let title = format!("sysdelta report: {}", i.name);
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body>",
        esc(&title)
    );
    let _ = write!(o, "<h1>{}</h1>", esc(&title));
    let _ = write!(
        o,
        "<p class=\"meta\">Experiment {} &ldquo;{}&rdquo;{}, {}. Host {}. {} ok runs, {}{} failed, {} planned. \
         Baseline <b>{}</b>.</p>",
        i.number(),
        esc(&i.name),
        i.label.as_ref().map(|l| format!(", label <b>{}</b>", esc(l))).unwrap_or_default(),
        esc(i.status.as_str()),
        esc(&i.host),
        a.runs_ok,
        // Succeeded, but of a boot that failed its machine audit.
        match a.runs_left_out {
            0 => String::new(),
            n => format!("<b>{n} left out</b> (machine audit failed), "),
        },
        a.runs_failed,
        a.runs_planned,
        esc(&a.baseline)
    );
    super::banners::banners(&mut o, a, x);
    summary(&mut o, a)?;
    super::metrics::metrics(&mut o, v)?;
    series(&mut o, a, x)?;
    profiles(&mut o, v);
    super::sweeps::sweeps(&mut o, a)?;
    super::boots::section(&mut o, a);
    environment(&mut o, x);
    super::runs::runs(&mut o, v);
    o.push_str("</body></html>\n");
    Ok(o)
}

/// The forest plot of the summary (its first [`FOREST_MAX_ROWS`] rows, in
/// parts of [`FOREST_CHUNK`]), and the line that counts the verdicts.
fn forest_plot(o: &mut String, a: &Analysis) -> Result<()> {
    let rows = forest::rows(a);
    if rows.is_empty() {
        o.push_str("<p>No comparison has a ratio to plot.</p>");
    } else {
        let band = forest::noise_band(&rows);
        let xr = forest::x_range(&rows, band);
        let n_sig = rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Better | Verdict::Worse))
            .count();
        let drawn = &rows[..rows.len().min(FOREST_MAX_ROWS)];
        for (k, chunk) in drawn.chunks(FOREST_CHUNK).enumerate() {
            let alt = format!(
                "Forest plot{}: {} comparisons, {} beyond noise. The same numbers are in the table below.",
                if drawn.len() > FOREST_CHUNK { format!(" part {}", k + 1) } else { String::new() },
                chunk.len(),
                chunk.iter().filter(|r| matches!(r.verdict, Verdict::Better | Verdict::Worse)).count()
            );
            // Two drawings of one plot: labels beside the rows for a wide
            // window, above them for a phone. CSS shows one; a mail
            // client without media queries shows the wide one, scaled.
            let _ = write!(o, "<figure>");
            for (class, layout) in [
                ("wide", forest::Layout::Wide),
                ("narrow", forest::Layout::Narrow),
            ] {
                let svg = forest::draw(chunk, xr, band, layout)?;
                o.push_str(&plot::plot_div(Some(class), &alt, &svg));
            }
            o.push_str("</figure>");
        }
        let _ = write!(
            o,
            "<p>{} of {} comparisons are beyond noise.{}{}</p>",
            n_sig,
            rows.len(),
            if drawn.len() < rows.len() {
                format!(
                    " The plot shows the first {} (those beyond noise first); all {} are in the table below.",
                    drawn.len(),
                    rows.len()
                )
            } else {
                String::new()
            },
            band.map(|b| format!(
                " Grey band: ratios within &times;{:.3}&ndash;{:.3}, the median CI half-width of this report.",
                1.0 / b,
                b
            ))
            .unwrap_or_default()
        );
    }
    Ok(())
}

fn summary(o: &mut String, a: &Analysis) -> Result<()> {
    o.push_str("<h2 id=\"summary\">Summary</h2>");
    let _ = write!(
        o,
        "<p>Each row is one metric under one config against the baseline <b>{}</b>: the marker is the ratio of means \
         (1&times; = no change), the bar its {:.0}% bootstrap CI ({} resamples). A verdict needs a Mann-Whitney p &lt; {} after \
         Holm correction over {} comparisons, with the mean and the rank (Hodges-Lehmann) shift pointing the same way{}. \
         <b>&#9650;</b> worse, <b>&#9632;</b> better, &#9675; grey: within noise, \
         <b style=\"color:#8a4b00\">&#10005;</b> no CI (not estimable, or too few runs): no verdict can be read from it. \
         Each point's change is written beside it. Changes beyond noise first, then the rest; largest first in each.</p>",
        esc(&a.baseline),
        a.confidence * 100.0,
        a.resamples,
        a.alpha,
        a.n_comparisons,
        if crate::report::boots_text::by_boot(a) {
            " (with fewer than 8 boots a side: Welch's t on the boot means, and the mean's direction)"
        } else {
            ""
        }
    );
    if let Some(t) = crate::analysis::families::telemetry_note(
        a.n_telemetry_comparisons,
        a.correction == crate::analysis::Correction::Bh,
    ) {
        let _ = write!(
            o,
            "<p>{} Telemetry is left out of this plot; it is in the table below.</p>",
            esc(&t)
        );
    }
    forest_plot(o, a)?;
    // The monitor-overhead and shell start-up notes come after the plot:
    // on a phone they filled the first screen and pushed the plot below it.
    let overhead = crate::report::overhead::text_lines(a);
    if let Some((head, rest)) = overhead.split_first() {
        let _ = write!(o, "<p id=\"monitor-overhead\"><b>{}</b></p><ul>", esc(head));
        for l in rest {
            let _ = write!(o, "<li>{}</li>", esc(l.trim()));
        }
        o.push_str("</ul>");
    }
    let shell = crate::report::shell_cost::text_lines(a);
    if let Some((head, rest)) = shell.split_first() {
        let _ = write!(o, "<p id=\"shell-startup\"><b>{}</b></p><ul>", esc(head));
        for l in rest {
            let _ = write!(o, "<li>{}</li>", esc(l.trim()));
        }
        o.push_str("</ul>");
    }
    // The table is the text alternative of the forest plot, in the same order.
    // The p column is adjusted by the report's correction, and says which.
    let correction = match a.correction {
        crate::analysis::Correction::Holm => "Holm",
        crate::analysis::Correction::Bh => "BH",
    };
    let _ = write!(
        o,
        "<details><summary>All comparisons as a table</summary><div class=\"scroll\"><table class=\"cells\"><thead><tr>\
        <th class=\"l\">metric</th><th class=\"l\">config</th><th>delta of mean</th><th>CI</th><th>p ({correction})</th><th class=\"l v\">verdict</th>\
        </tr></thead><tbody>"
    );
    let mut all: Vec<(&MetricAnalysis, &Comparison)> = a
        .metrics
        .iter()
        .flat_map(|m| m.comparisons.iter().map(move |c| (m, c)))
        .collect();
    all.sort_by(|x, y| {
        let k = |c: &Comparison| {
            c.delta_mean_pct
                .map(|d| (1.0 + d / 100.0).max(1e-300).ln().abs())
                .unwrap_or(-1.0)
        };
        forest::significant(y.1.verdict)
            .cmp(&forest::significant(x.1.verdict))
            .then(k(y.1).total_cmp(&k(x.1)))
    });
    for (m, c) in all {
        let _ = write!(
            o,
            "<tr class=\"{}\"><td class=\"l\">{}/{} ({})</td><td class=\"l\" data-l=\"config\">{}</td><td data-l=\"delta\">{}</td>\
             <td data-l=\"CI\">{}</td><td data-l=\"p\">{}</td><td class=\"l v\">{}</td></tr>",
            verdict_class(c.verdict),
            esc(&m.workload),
            esc(&m.spec.name),
            esc(&m.spec.unit),
            esc(&c.config),
            delta_text(c),
            ci_text(c),
            c.p_adjusted.map(|p| format!("{p:.3}")).unwrap_or_else(|| "-".into()),
            esc(&verdict_text(c, a.alpha))
        );
    }
    o.push_str("</tbody></table></div>");
    let every = a.metrics.iter().flat_map(|m| m.comparisons.iter());
    footnote_html(o, every, a.alpha);
    o.push_str("</details>");
    Ok(())
}

fn series(o: &mut String, a: &Analysis, x: &Extras) -> Result<()> {
    if x.series.is_empty() {
        return Ok(());
    }
    o.push_str("<h2 id=\"series\">Time series</h2>");
    let _ = write!(
        o,
        "<p>Monitors and per-interval workload output, one line per run (at most {} runs per config), coloured by config; \
         where most runs have fewer than {} values (runs shorter than a few monitor intervals), one point per run, the mean of its values.</p>{}",
        lines::MAX_RUNS_PER_CONFIG,
        lines::MIN_POINTS_PER_RUN,
        legend(&a.configs)
    );
    let mut groups: BTreeMap<(&str, &str), Vec<&SeriesEntry>> = BTreeMap::new();
    for s in &x.series {
        groups
            .entry((s.1.as_str(), s.2.name.as_str()))
            .or_default()
            .push(s);
    }
    for ((w, name), recs) in groups {
        let per: Vec<Vec<&SeriesRecord>> = a
            .configs
            .iter()
            .map(|c| recs.iter().filter(|r| r.0 == *c).map(|r| &r.2).collect())
            .collect();
        let unit = recs.first().map(|r| r.2.unit.clone()).unwrap_or_default();
        // A series no run has a value of gets a line of text, not an empty plot.
        let Some(shape) = lines::shape(&per) else {
            let _ = write!(
                o,
                "<h4>{} / {}</h4><p>No values recorded in any run.</p>",
                esc(w),
                esc(name)
            );
            continue;
        };
        let _ = write!(
            o,
            "<h4>{} / {} <small>({})</small></h4>",
            esc(w),
            esc(name),
            esc(&unit)
        );
        let wide = lines::time_series(&per, &unit, shape, 2 * PLOT_WIDTH)?;
        let narrow = lines::time_series(&per, &unit, shape, forest::NARROW_WIDTH)?;
        let mut alt = match shape {
            lines::SeriesShape::PerInterval => format!("Time series {name} of {w}:"),
            lines::SeriesShape::PerRun => format!(
                "Time series {name} of {w}, one point per run (runs had fewer than {} values each):",
                lines::MIN_POINTS_PER_RUN
            ),
        };
        for (c, runs) in a.configs.iter().zip(&per) {
            let all: Vec<f64> = runs.iter().flat_map(|r| r.v.iter().copied()).collect();
            if !all.is_empty() && all.iter().all(|x| x.is_finite()) {
                let (min, max) = all
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                        (l.min(*v), h.max(*v))
                    });
                let mean = all.iter().sum::<f64>() / all.len() as f64;
                let _ = write!(
                    alt,
                    " {c}: {} runs, values {}..{}, mean {};",
                    runs.len(),
                    fmt_num(min),
                    fmt_num(max),
                    fmt_num(mean)
                );
            }
        }
        let cap = esc(&alt);
        plot::figure_two(o, [&wide, &narrow], &alt, &cap);
    }
    Ok(())
}

/// The kernel profile per config and its differential view, as the text
/// report prints them (the 2001 and 2002 postings' evidence); nothing when
/// no profile was recorded.
fn profiles(o: &mut String, v: &ReportView) {
    let text = crate::report::sections::profiles(&v.profiles, 10);
    if text.trim().is_empty() {
        return;
    }
    o.push_str("<h2 id=\"profiles\">Profiles</h2>");
    let _ = write!(
        o,
        "<div class=\"scroll\"><pre>{}</pre></div>",
        esc(text.trim_end())
    );
}

fn environment(o: &mut String, x: &Extras) {
    o.push_str("<h2 id=\"environment\">Environment</h2>");
    if x.sources.is_empty() {
        return;
    }
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for s in &x.sources {
        keys.extend(s.info.fingerprint.keys().map(String::as_str));
    }
    if x.sources.len() > 1 {
        o.push_str("<p>Rows marked &ne; (highlighted) differ between the experiments.</p>");
    }
    o.push_str("<div class=\"scroll\"><table><thead><tr><th class=\"l\">key</th>");
    for s in &x.sources {
        let _ = write!(o, "<th class=\"l\">{}</th>", esc(&titled(s)));
    }
    o.push_str("</tr></thead><tbody>");
    for k in keys {
        let vals: Vec<&str> = x
            .sources
            .iter()
            .map(|s| s.info.fingerprint.get(k).map(String::as_str).unwrap_or("-"))
            .collect();
        // Unknown ("-", or no value: an import) is no difference.
        let known: Vec<&str> = x
            .sources
            .iter()
            .filter_map(|s| crate::monitor::fingerprint::known(&s.info.fingerprint, k))
            .collect();
        let differs = known.iter().any(|v| *v != known[0])
            && !crate::monitor::fingerprint::VOLATILE_KEYS.contains(&k);
        let _ = write!(
            o,
            "<tr{}><td class=\"l\">{}</td>",
            if differs { " class=\"diff\"" } else { "" },
            esc(k)
        );
        for v in vals {
            let _ = write!(o, "<td class=\"l\">{}</td>", esc(v));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    for s in &x.sources {
        // `main (#12, plan.toml, ...)`, or `#12 (plan.toml, ...)`.
        let id = s.info.shown_id();
        let named = match s.title == id {
            true => format!("{id} ("),
            false => format!("{} ({id}, ", s.title),
        };
        let _ = write!(
            o,
            "<details><summary>Plan of {}{}, seed {}, {} order)</summary><pre>{}</pre></details>",
            esc(&named),
            esc(&s.info.plan_source),
            s.info.seed,
            esc(&s.info.order),
            esc(&s.info.plan_text)
        );
    }
}

/// An experiment as the environment table names it: its title, with its
/// id after a label (`main (#12)`); the id alone where that is the title.
fn titled(s: &crate::analysis::view::SourceExperiment) -> String {
    let id = s.info.shown_id();
    match s.title == id {
        true => id,
        false => format!("{} ({id})", s.title),
    }
}
