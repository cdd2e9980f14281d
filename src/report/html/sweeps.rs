//! Transport sweeps: line plots of the median per cell of the metrics a
//! transport workload reports.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::Result;

use super::forest::NARROW_WIDTH;
use super::plot::{figure_two, PLOT_WIDTH};
use super::{esc, lines, plot};
use crate::analysis::Analysis;
use crate::report::text::fmt_num;

/// Quantities of the transport workload (`builtin = "transport"`, see
/// docs/transport.md): metric suffix and axis title.
const TRANSPORT_QUANTITIES: &[(&str, &str)] = &[
    ("mb_per_s", "MB/s"),
    ("dropped", "records dropped"),
    ("cpu_ns_per_record", "CPU ns per record"),
];

/// Transport sweeps: metrics named `<transport>.mb_per_s` (with
/// `.dropped`, `.cpu_ns_per_record`) mark a transport workload. With
/// several such workloads (one per volume, in plan order) the x axis is the
/// workload and each line a transport (per config when there are several);
/// with one, the x axis is the config. The value is the median per cell.
pub(super) fn sweeps(o: &mut String, a: &Analysis) -> Result<()> {
    let mut workloads: Vec<&str> = Vec::new();
    let mut transports: BTreeSet<&str> = BTreeSet::new();
    for m in &a.metrics {
        if let Some(t) = m.spec.name.strip_suffix(".mb_per_s") {
            transports.insert(t);
            if !workloads.contains(&m.workload.as_str()) {
                workloads.push(&m.workload);
            }
        }
    }
    if workloads.is_empty() {
        return Ok(());
    }
    o.push_str("<h2 id=\"sweeps\">Transport sweeps</h2>");
    let by_workload = workloads.len() > 1;
    let median = |w: &str, name: &str, ci: usize| {
        a.metrics
            .iter()
            .find(|m| m.workload == w && m.spec.name == name)
            .and_then(|m| m.cells[ci].summary.as_ref().map(|s| s.median))
    };
    let (categories, what_x): (Vec<String>, &str) = if by_workload {
        (
            workloads.iter().map(|w| w.to_string()).collect(),
            "workload",
        )
    } else {
        (a.configs.clone(), "config")
    };
    let _ = write!(
        o,
        "<p>Median per {what_x}{}.</p>",
        if by_workload {
            " (one workload per volume, in plan order)"
        } else {
            ""
        }
    );
    for (suffix, what) in TRANSPORT_QUANTITIES {
        let mut lines: Vec<(String, Vec<Option<f64>>)> = Vec::new();
        for t in &transports {
            let name = format!("{t}.{suffix}");
            if by_workload {
                for (ci, c) in a.configs.iter().enumerate() {
                    let vals: Vec<Option<f64>> =
                        workloads.iter().map(|w| median(w, &name, ci)).collect();
                    let title = if a.configs.len() > 1 {
                        format!("{t} [{c}]")
                    } else {
                        t.to_string()
                    };
                    lines.push((title, vals));
                }
            } else {
                let vals: Vec<Option<f64>> = (0..a.configs.len())
                    .map(|ci| median(workloads[0], &name, ci))
                    .collect();
                lines.push((t.to_string(), vals));
            }
        }
        lines.retain(|l| l.1.iter().any(Option::is_some));
        if lines.is_empty() {
            continue;
        }
        let mut alt = format!("{what} per transport against {what_x}:");
        let mut leg = String::from("<p class=\"legend\">");
        for (li, (t, vals)) in lines.iter().enumerate() {
            let _ = write!(
                leg,
                "<span><b style=\"color:{}\">{}</b> {}</span>",
                plot::css_color(li),
                plot::marker_glyph(li),
                esc(t)
            );
            let _ = write!(alt, " {t}:");
            for (c, v) in categories.iter().zip(vals) {
                let _ = write!(alt, " {c}={}", v.map(fmt_num).unwrap_or_else(|| "-".into()));
            }
            alt.push(';');
        }
        leg.push_str("</p>");
        let _ = write!(o, "<h4>{what}</h4>{leg}");
        let wide = lines::sweep(&categories, &lines, what, 2 * PLOT_WIDTH)?;
        let narrow = lines::sweep(&categories, &lines, what, NARROW_WIDTH)?;
        let cap = esc(&alt);
        figure_two(o, [&wide, &narrow], &alt, &cap);
    }
    Ok(())
}
