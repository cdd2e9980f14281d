//! Markdown: the same configs x metrics table, one per workload.

use std::fmt::Write as _;

use super::cells::{disagreement, footnotes};
use super::escape::markdown as esc;
use super::text::{ci_cell, delta_cell, fmt_num};
use crate::analysis::Analysis;

pub fn render(a: &Analysis) -> String {
    let mut out = String::new();
    let i = &a.info;
    let _ = writeln!(
        out,
        "## sysdelta: experiment {} \"{}\" ({})\n",
        i.number(),
        esc(&i.name),
        esc(i.status.as_str())
    );
    // Stored strings are escaped text, never code spans (where the escapes
    // would show literally).
    let f = |k: &str| esc(i.fingerprint.get(k).map(String::as_str).unwrap_or("-"));
    let _ = writeln!(
        out,
        "Host {}, Linux {}, {} x {}, memory {}. {} runs per cell, {} order, seed {}; {}. \
         Baseline {}; deltas are of the mean with a {:.0}% bootstrap CI; a verdict needs {}-corrected \
         Mann-Whitney p < {} over {} comparisons with the mean and the rank shift agreeing in direction, else `~`.\n",
        esc(&i.host),
        f("kernel"),
        f("cpus_online"),
        f("cpu_model"),
        f("memory"),
        i.runs_per_cell,
        esc(&i.order),
        i.seed,
        crate::words::runs_tally(a.runs_ok, a.runs_left_out, a.runs_failed),
        esc(&a.baseline),
        a.confidence * 100.0,
        match a.correction {
            crate::analysis::Correction::Holm => "Holm",
            crate::analysis::Correction::Bh => "Benjamini-Hochberg",
        },
        a.alpha,
        a.n_comparisons
    );
    if let Some(t) = crate::analysis::families::telemetry_note(
        a.n_telemetry_comparisons,
        a.correction == crate::analysis::Correction::Bh,
    ) {
        let _ = writeln!(out, "{}\n", esc(&t));
    }
    let overhead = super::overhead::text_lines(a);
    if let Some((head, rest)) = overhead.split_first() {
        let _ = writeln!(out, "{}\n", esc(head));
        for l in rest {
            let _ = writeln!(out, "- {}", esc(l.trim()));
        }
        out.push('\n');
    }
    let shell = super::shell_cost::text_lines(a);
    if let Some((head, rest)) = shell.split_first() {
        let _ = writeln!(out, "{}\n", esc(head));
        for l in rest {
            let _ = writeln!(out, "- {}", esc(l.trim()));
        }
        out.push('\n');
    }
    if super::boots_text::by_boot(a) {
        let _ = writeln!(
            out,
            "Configs ran in VMs, several runs per boot: the unit of replication is {} (values, \
             deltas, CIs and tests are of per-boot values).\n",
            esc(&a.unit_of_replication)
        );
    }
    if let Some(note) = a.boots.as_ref().and_then(|b| b.timing_note.as_ref()) {
        let _ = writeln!(out, "> **warning:** {}\n", esc(note));
    }
    let mut workloads: Vec<&str> = a.metrics.iter().map(|m| m.workload.as_str()).collect();
    workloads.dedup();
    // Each workload's metrics, gathered once (not a scan per workload).
    let mut of_workload: std::collections::HashMap<&str, Vec<_>> = std::collections::HashMap::new();
    for m in &a.metrics {
        of_workload.entry(m.workload.as_str()).or_default().push(m);
    }
    for w in workloads {
        let ms: Vec<_> = of_workload[w].clone();
        let _ = writeln!(out, "### {}\n", esc(w));
        let _ = write!(out, "| config |");
        for m in &ms {
            let _ = write!(out, " {} ({}) |", esc(&m.spec.name), esc(&m.spec.unit));
        }
        let _ = write!(out, "\n|---|");
        for _ in &ms {
            let _ = write!(out, "---:|");
        }
        out.push('\n');
        for (ci, c) in a.configs.iter().enumerate() {
            let _ = write!(out, "| {} |", esc(c));
            for m in &ms {
                let v = m.cells[ci]
                    .summary
                    .as_ref()
                    .map(|s| fmt_num(s.mean))
                    .unwrap_or_else(|| "n/a".into());
                if ci == 0 {
                    let _ = write!(out, " {v} |");
                } else {
                    let cmp = &m.comparisons[ci - 1];
                    let mark = disagreement(cmp, a.alpha).map_or("", |d| d.mark());
                    let d = format!("{}{}", delta_cell(cmp), esc(mark));
                    let _ = write!(out, " {v} {d} {} |", ci_cell(cmp));
                }
            }
            out.push('\n');
        }
        let marks = ms
            .iter()
            .flat_map(|m| m.comparisons.iter())
            .filter_map(|c| disagreement(c, a.alpha))
            .collect();
        let notes = footnotes(marks);
        if !notes.is_empty() {
            out.push('\n');
            for n in notes {
                let _ = writeln!(out, "{}  ", esc(&n));
            }
        }
        out.push('\n');
    }
    let geo = super::geomean::lines(a);
    if !geo.is_empty() {
        let _ = writeln!(out, "{}\n", esc(&super::geomean::title(a)));
        for l in &geo {
            let _ = writeln!(out, "- {}", super::escape::markdown_item(l));
        }
        out.push('\n');
    }
    out.push_str(&super::boots_text::markdown_section(a));
    if !a.failed.is_empty() {
        let _ = writeln!(out, "**Failed runs:** {}\n", a.failed.len());
        for fr in &a.failed {
            let _ = writeln!(
                out,
                "- block {} {}/{}: {}",
                fr.block,
                esc(&fr.config),
                esc(&fr.workload),
                esc(&fr.reason)
            );
        }
        out.push('\n');
    }
    for wmsg in &a.warnings {
        let _ = writeln!(out, "> warning: {}", esc(wmsg));
    }
    out
}

/// The Markdown format: the text report's tables as GitHub tables.
pub struct Markdown;

impl super::format::ReportFormat for Markdown {
    fn report(
        &self,
        v: &crate::analysis::view::ReportView,
        _: &super::ReportOptions,
    ) -> anyhow::Result<String> {
        Ok(super::escape::terminal_safe_lines(&render(&v.shown)))
    }
}
