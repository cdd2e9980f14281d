//! The runs section: ok / failed / warm-up counts per config and
//! workload, failed runs with their stderr tails, events and warnings.

use std::fmt::Write as _;

use super::esc;
use crate::analysis::view::ReportView;

pub(super) fn runs(o: &mut String, v: &ReportView) {
    let (a, x, n) = (&v.shown, &v.extras, &v.run_counts);
    o.push_str("<h2 id=\"runs\">Runs</h2>");
    // One row per workload and a column per config: a report of a
    // thousand workloads is a long table, not a thousand columns wide.
    o.push_str("<div class=\"scroll\"><table><thead><tr><th class=\"l\">workload</th>");
    for c in &a.configs {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr></thead><tbody>");
    for (wi, w) in n.workloads.iter().enumerate() {
        let _ = write!(o, "<tr><td class=\"l\">{}</td>", esc(w));
        for n in n.counts.iter().filter_map(|c| c.get(wi)) {
            let (ok, failed, warm) = (n.ok, n.failed, n.warmup);
            let _ = write!(
                o,
                "<td>{ok} ok{}{}{}</td>",
                // Succeeded, but of a boot that failed its machine audit.
                if n.left_out > 0 {
                    format!(", <b>{} left out</b> (machine audit)", n.left_out)
                } else {
                    String::new()
                },
                if failed > 0 {
                    format!(", <b>{failed} failed</b>")
                } else {
                    String::new()
                },
                if warm > 0 {
                    format!(", {warm} warm-up")
                } else {
                    String::new()
                }
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    if !a.failed.is_empty() {
        let _ = write!(
            o,
            "<h3>Failed runs ({}), never used as samples</h3>",
            a.failed.len()
        );
        for f in &a.failed {
            let _ = write!(
                o,
                "<p>block {}{} <b>{}/{}</b>: {}</p>",
                f.block,
                if f.warmup { " (warm-up)" } else { "" },
                esc(&f.config),
                esc(&f.workload),
                esc(&f.reason)
            );
            if !f.stderr_tail.trim().is_empty() {
                let _ = write!(o, "<pre>{}</pre>", esc(&f.stderr_tail));
            }
        }
    }
    if !a.events.is_empty() {
        o.push_str("<h3>Events</h3><ul>");
        for e in &a.events {
            let _ = write!(
                o,
                "<li>{} {}: {}</li>",
                esc(&e.at),
                esc(&e.kind),
                esc(&e.message)
            );
        }
        o.push_str("</ul>");
    }
    if !x.banner.is_empty() || !a.warnings.is_empty() {
        o.push_str("<h3>Warnings</h3><ul>");
        for w in x.banner.iter().chain(&a.warnings) {
            let _ = write!(o, "<li>{}</li>", esc(w));
        }
        o.push_str("</ul>");
    }
}
