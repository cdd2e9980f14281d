//! The fleet report in words: text (80 columns) and markdown, from the
//! analysed [`Fleet`](super::Fleet).

// The types and imports of the fleet report, whose rendering this is.
use super::*;

/// "a: experiment 3, complete, 96 of 96 runs".
fn host_line(h: &FleetHost) -> String {
    let runs = match h.runs_planned {
        Some(p) => format!("{} of {p} runs", h.runs_ok),
        None => format!("{} runs", h.runs_ok),
    };
    format!(
        "{}: experiment {}, {}, {runs}",
        h.host,
        h.experiment_id,
        h.status.as_str()
    )
}

/// A host's name in a row: with its status when it is not complete.
fn host_label(f: &Fleet, host: &str) -> String {
    match f.hosts.iter().find(|h| h.host == host) {
        Some(h) if h.status != ExperimentStatus::Complete => {
            format!("{host} ({})", h.status.as_str())
        }
        _ => host.to_string(),
    }
}

/// How the rows and the pooled line are computed, in words.
fn method(f: &Fleet) -> String {
    format!(
        "Each host's row is its own analysis (as sysdelta report gives it): the \
         change of the mean against baseline {}, its {:.0}% bootstrap CI and verdict; n \
         is runs (boots for kernel configs) of baseline/config. The pooled line combines \
         the hosts' log ratios by a random-effects meta-analysis (DerSimonian-Laird \
         between-host variance tau^2, Hartung-Knapp-Sidik-Jonkman CI on Student's t \
         with hosts - 1 degrees of freedom; one host gives no pooled CI); tau is the \
         spread of the change between hosts. A host differs when, with 3 hosts or more, \
         its estimate lies outside its own CI, widened by the other hosts' spread, \
         around their pooled estimate, after Holm's correction over every host of \
         every comparison in this report.",
        f.baseline,
        f.confidence * 100.0,
    )
}

/// The pooled line of a comparison, without a leading label.
fn pooled_words(c: &FleetComparison) -> String {
    let p = &c.pooled;
    let names = |keep: &dyn Fn(&HostRow) -> bool| -> Vec<String> {
        c.rows
            .iter()
            .filter(|r| keep(r))
            .map(|r| r.host.clone())
            .collect()
    };
    let mut s = match (p.delta_pct, p.delta_ci_pct) {
        (Some(d), Some((lo, hi))) => format!(
            "{} [{},{}] across {} hosts",
            fmt_pct(d),
            fmt_pct_bare(lo),
            fmt_pct_bare(hi),
            p.hosts
        ),
        (Some(d), None) => format!(
            "{} from one host ({}): no pooled CI",
            fmt_pct(d),
            names(&|r| r.pooled).join(", ")
        ),
        _ => p
            .note
            .clone()
            .unwrap_or_else(|| "no pooled estimate".into()),
    };
    if let Some(fit) = &p.fit {
        let _ = write!(s, "; tau {:.1}%", 100.0 * fit.tau2.sqrt());
    }
    let differ = names(&|r| r.differs == Some(true));
    match differ.as_slice() {
        [] => {}
        [one] => {
            let _ = write!(s, "; host {one} differs");
        }
        many => {
            let _ = write!(s, "; hosts {} differ", many.join(", "));
        }
    }
    let left = names(&|r| !r.pooled);
    if !left.is_empty() && p.hosts > 0 {
        let _ = write!(s, "; not pooled (no estimate): {}", left.join(", "));
    }
    s
}

/// "w/wall (ms, lower is better): slow against base".
fn comparison_title(c: &FleetComparison, unit: &str, baseline: &str) -> String {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!("{unit}, ")
    };
    format!(
        "{}/{} ({unit}{} is better): {} against {}",
        c.workload,
        c.metric,
        c.direction.as_str(),
        c.config,
        baseline
    )
}

/// The scale the means of `c` are shown in: one for all hosts.
fn scale(c: &FleetComparison, opts: &ReportOptions) -> units::Scale {
    let means = c
        .rows
        .iter()
        .flat_map(|r| [r.baseline_mean, r.mean])
        .flatten();
    units::choose(&c.unit, means, opts.time_unit)
}

fn mean_cell(v: Option<f64>, s: &units::Scale) -> String {
    v.map_or_else(|| "n/a".into(), |v| fmt_num(v * s.factor))
}

fn ci_text(r: &HostRow) -> String {
    match r.delta_ci_pct {
        Some((lo, hi)) => format!("[{},{}]", fmt_pct_bare(lo), fmt_pct_bare(hi)),
        None if r
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with(analysis::NOT_ESTIMABLE)) =>
        {
            "not estimable".into()
        }
        None => String::new(),
    }
}

fn delta_text(r: &HostRow) -> String {
    // The row's delta, CI and verdict only: the host's rank shift and
    // tests stay in its own report (no disagreement marks here).
    let c = analysis::Comparison {
        delta_mean_pct: r.delta_mean_pct,
        ratio_ci: r.ratio_ci,
        delta_ci_pct: r.delta_ci_pct,
        verdict: r.verdict,
        ..analysis::Comparison::undefined(String::new())
    };
    let d = delta_cell(&c);
    if r.differs == Some(true) {
        format!("{d} !")
    } else {
        d
    }
}

/// Headline comparisons (the workloads' own metrics) and how many
/// telemetry ones text and markdown leave to the JSON.
fn headline(f: &Fleet) -> (Vec<&FleetComparison>, usize) {
    let (tele, head): (Vec<&FleetComparison>, Vec<&FleetComparison>) = f
        .comparisons
        .iter()
        .partition(|c| crate::monitor::is_telemetry_metric(&c.metric));
    (head, tele.len())
}

/// The fingerprint differences as a table of keys x hosts, within 80
/// columns: values cut to fit end in `~` (the JSON has them whole). A
/// `; `-separated list (mitigations) shows only its items that are not
/// the same on every host. With too many hosts for columns, one line a key.
fn fingerprint_text(f: &Fleet) -> String {
    let mut o = String::new();
    if f.fingerprint_differences.is_empty() {
        o.push_str(&hang(
            "",
            "Environment: the hosts' fingerprints are the same (kernel, CPU, memory, \
             governor, THP, mitigations, SMT, ...), the host name aside.",
            "  ",
        ));
    } else {
        o.push_str(&hang(
            "",
            &format!(
                "Environment: the hosts' fingerprints differ in {}:",
                ascii(
                    &f.fingerprint_differences
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            ),
            "  ",
        ));
        let names: Vec<String> = f.hosts.iter().map(|h| ascii(&h.host)).collect();
        let rows: Vec<(String, Vec<String>)> = f
            .fingerprint_differences
            .iter()
            .map(|(k, vs)| (ascii(k), only_differing_items(vs)))
            .collect();
        let kw =
            crate::sys::visible::column(rows.iter().map(|r| r.0.len()).max().unwrap_or(3).max(3));
        let k = names.len();
        let room = WIDTH.saturating_sub(2 + kw + 2 * k);
        let cap = room / k.max(1);
        if cap >= 8 {
            let widths: Vec<usize> = (0..k)
                .map(|i| {
                    rows.iter()
                        .map(|r| r.1[i].chars().count())
                        .chain([names[i].chars().count()])
                        .max()
                        .unwrap_or(1)
                        .min(cap)
                })
                .collect();
            let mut line = |key: &str, cells: &[String]| {
                let mut l = format!("  {key:<kw$}");
                for (c, w) in cells.iter().zip(&widths) {
                    let _ = write!(l, "  {:<w$}", clip(c, *w));
                }
                o.push_str(l.trim_end());
                o.push('\n');
            };
            line("key", &names);
            for (key, cells) in &rows {
                line(key, cells);
            }
            if rows
                .iter()
                .any(|r| r.1.iter().zip(&widths).any(|(c, w)| c.chars().count() > *w))
            {
                o.push_str("  (values cut to fit end in ~; the JSON report has them whole)\n");
            }
        } else {
            for (key, cells) in &rows {
                let items: Vec<String> = names
                    .iter()
                    .zip(cells)
                    .map(|(n, c)| format!("{n}: {c}"))
                    .collect();
                o.push_str(&hang("  ", &format!("{key}: {}", items.join("; ")), "    "));
            }
        }
    }
    if !f.fingerprint_unrecorded.is_empty() {
        o.push_str(&hang(
            "",
            &format!(
                "Not recorded on every host (same or not is unknown): {}",
                ascii(&f.fingerprint_unrecorded.join(", "))
            ),
            "  ",
        ));
    }
    o
}

/// Each host's value of a key, terminal-safe ("-" where not recorded);
/// for `; `-separated lists, only the items not on every host.
fn only_differing_items(values: &[Option<String>]) -> Vec<String> {
    let lists = values
        .iter()
        .all(|v| v.as_deref().is_none_or(|v| v.contains("; ")));
    if !lists {
        return values
            .iter()
            .map(|v| ascii(v.as_deref().unwrap_or("-")))
            .collect();
    }
    let items: Vec<Vec<&str>> = values
        .iter()
        .map(|v| v.as_deref().map_or(Vec::new(), |v| v.split("; ").collect()))
        .collect();
    values
        .iter()
        .zip(&items)
        .map(|(v, mine)| match v {
            None => "-".into(),
            Some(_) => {
                let own: Vec<&str> = mine
                    .iter()
                    .filter(|x| !items.iter().all(|other| other.contains(x)))
                    .copied()
                    .collect();
                ascii(&own.join("; "))
            }
        })
        .collect()
}

/// `text` word-wrapped to 80 columns: the first line starts with `lead`,
/// the others with `cont`. A word longer than a line is left whole (the
/// text report's `fit` breaks it).
fn hang(lead: &str, text: &str, cont: &str) -> String {
    let mut out = String::new();
    let mut line = lead.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = cont.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// One comparison as a table of hosts within 80 columns, then its pooled
/// line.
fn comparison_text(f: &Fleet, c: &FleetComparison, opts: &ReportOptions) -> String {
    let s = scale(c, opts);
    let mut o = hang("", &ascii(&comparison_title(c, &s.unit, &f.baseline)), "  ");
    // The configs' names head their columns when they are short.
    let name = |n: &str, generic: &str| {
        if n.chars().count() <= 14 {
            ascii(n)
        } else {
            generic.to_string()
        }
    };
    let head = [
        "host".to_string(),
        name(&f.baseline, "baseline"),
        name(&c.config, "config"),
        "delta".into(),
        format!("{:.0}% CI", f.confidence * 100.0),
        "n".into(),
    ];
    let body: Vec<[String; 6]> = c
        .rows
        .iter()
        .map(|r| {
            [
                ascii(&host_label(f, &r.host)),
                mean_cell(r.baseline_mean, &s),
                mean_cell(r.mean, &s),
                delta_text(r),
                ci_text(r),
                format!("{}/{}", r.n_baseline, r.n),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = (0..6)
        .map(|i| {
            body.iter()
                .map(|r| r[i].chars().count())
                .chain([head[i].chars().count()])
                .max()
                .map_or(1, crate::sys::visible::column)
        })
        .collect();
    // A host name too long for what the numbers leave gets a line of its own.
    let rest: usize = widths[1..].iter().map(|w| w + 2).sum();
    let host_max = WIDTH.saturating_sub(2 + rest).max(6);
    widths[0] = widths[0].min(host_max);
    let line = |cells: &[String; 6]| {
        let mut l = String::from("  ");
        let label = &cells[0];
        let mut out = String::new();
        let first = if label.chars().count() > widths[0] {
            out.push_str(&format!("  {label}\n"));
            String::new()
        } else {
            label.clone()
        };
        let _ = write!(l, "{first:<w$}", w = widths[0]);
        for (i, cell) in cells.iter().enumerate().skip(1) {
            let _ = write!(l, "  {cell:>w$}", w = widths[i]);
        }
        out.push_str(l.trim_end());
        out.push('\n');
        out
    };
    o.push_str(&line(&head));
    for r in &body {
        o.push_str(&line(r));
    }
    o.push_str(&hang(
        "  ",
        &format!("pooled: {}", ascii(&pooled_words(c))),
        "    ",
    ));
    let notes: Vec<String> = c
        .rows
        .iter()
        .filter(|r| r.delta_ci_pct.is_none())
        .filter_map(|r| Some(format!("{}: {}", r.host, r.note.as_ref()?)))
        .collect();
    for n in notes {
        o.push_str(&hang("  ", &ascii(&n), "    "));
    }
    o.push('\n');
    o
}

pub(super) fn text(f: &Fleet, opts: &ReportOptions) -> String {
    let mut o = String::new();
    o.push_str(&hang(
        "",
        &format!(
            "sysdelta fleet report: \"{}\", {} hosts{}, baseline {}",
            ascii(&f.name),
            f.hosts.len(),
            f.fleet_id
                .map(|i| format!(" (fleet {i})"))
                .unwrap_or_default(),
            ascii(&f.baseline)
        ),
        "  ",
    ));
    for h in &f.hosts {
        o.push_str(&hang("  ", &ascii(&host_line(h)), "    "));
    }
    o.push('\n');
    for w in &f.warnings {
        o.push_str(&hang("WARNING: ", &ascii(w), "  "));
    }
    if !f.warnings.is_empty() {
        o.push('\n');
    }
    o.push_str(&fingerprint_text(f));
    o.push('\n');
    o.push_str(&hang("", &ascii(&method(f)), ""));
    o.push_str("A ! after a delta marks a host that differs.\n\n");
    let (head, telemetry) = headline(f);
    if head.is_empty() {
        o.push_str("No host has a comparison to show.\n\n");
    }
    for c in head {
        o.push_str(&comparison_text(f, c, opts));
    }
    if telemetry > 0 {
        o.push_str(&hang(
            "",
            &format!(
                "{telemetry} comparisons of telemetry (the monitors' metrics) are in the JSON \
                 fleet report and in each host's own report."
            ),
            "",
        ));
        o.push('\n');
    }
    let with_warnings: Vec<&FleetHost> =
        f.hosts.iter().filter(|h| !h.warnings.is_empty()).collect();
    if !with_warnings.is_empty() {
        o.push_str("Warnings of the hosts' own analyses:\n");
        for h in with_warnings {
            for w in &h.warnings {
                o.push_str(&hang(
                    "- ",
                    &format!("{}: {}", ascii(&h.host), ascii(w)),
                    "  ",
                ));
            }
        }
    }
    o
}

pub(super) fn markdown(f: &Fleet, opts: &ReportOptions) -> String {
    use super::escape::markdown as esc;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "## sysdelta fleet report: \"{}\", {} hosts{}\n",
        esc(&f.name),
        f.hosts.len(),
        f.fleet_id
            .map(|i| format!(" (fleet {i})"))
            .unwrap_or_default()
    );
    for w in &f.warnings {
        let _ = writeln!(o, "> **WARNING:** {}\n", esc(w));
    }
    o.push_str("| host | experiment | status | runs |\n|---|---:|---|---:|\n");
    for h in &f.hosts {
        let runs = match h.runs_planned {
            Some(p) => format!("{} of {p}", h.runs_ok),
            None => h.runs_ok.to_string(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {runs} |",
            esc(&h.host),
            h.experiment_id,
            h.status.as_str()
        );
    }
    o.push('\n');
    if f.fingerprint_differences.is_empty() {
        o.push_str("The hosts' fingerprints are the same, the host name aside.\n\n");
    } else {
        let _ = write!(o, "| fingerprint |");
        for h in &f.hosts {
            let _ = write!(o, " {} |", esc(&h.host));
        }
        let _ = writeln!(o, "\n|---|{}", "---|".repeat(f.hosts.len()));
        for (k, vs) in &f.fingerprint_differences {
            let _ = write!(o, "| {} |", esc(k));
            for v in only_differing_items(vs) {
                let _ = write!(o, " {} |", esc(&v));
            }
            o.push('\n');
        }
        o.push('\n');
    }
    if !f.fingerprint_unrecorded.is_empty() {
        let _ = writeln!(
            o,
            "Not recorded on every host: {}.\n",
            esc(&f.fingerprint_unrecorded.join(", "))
        );
    }
    let _ = writeln!(o, "{}\n", esc(&method(f)));
    let (head, telemetry) = headline(f);
    for c in head {
        let s = scale(c, opts);
        let _ = writeln!(
            o,
            "### {}\n",
            esc(&comparison_title(c, &s.unit, &f.baseline))
        );
        let _ = writeln!(
            o,
            "| host | {} | {} | delta | {:.0}% CI | n |\n|---|---:|---:|---:|---:|---:|",
            esc(&f.baseline),
            esc(&c.config),
            f.confidence * 100.0
        );
        for r in &c.rows {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {}/{} |",
                esc(&host_label(f, &r.host)),
                mean_cell(r.baseline_mean, &s),
                mean_cell(r.mean, &s),
                esc(&delta_text(r)),
                ci_text(r),
                r.n_baseline,
                r.n
            );
        }
        let _ = writeln!(o, "\n**pooled:** {}\n", esc(&pooled_words(c)));
    }
    if telemetry > 0 {
        let _ = writeln!(
            o,
            "{telemetry} comparisons of telemetry (the monitors' metrics) are in the JSON \
             fleet report and in each host's own report.\n"
        );
    }
    for h in &f.hosts {
        for w in &h.warnings {
            let _ = writeln!(o, "- {}: {}", esc(&h.host), esc(w));
        }
    }
    o
}
