//! The boots of a kernel experiment in the text and markdown reports: the
//! between-boot share of variance per cell, and per config its boots (ok,
//! failed, kernel, CPUs, accel, launch-to-hello) with each failed boot's
//! reason and console tail. Host experiments print none of it.

use std::fmt::Write as _;

use super::cells::{clip, fmt_num, wrap};
use super::escape::{ascii, markdown as md};
use crate::analysis::{Analysis, Cell};

/// Console lines a failed boot shows in the text report (all of it is in
/// JSON and HTML).
const CONSOLE_LINES: usize = 10;

/// "1 run", "5 runs".
pub fn runs(n: u32) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} runs")
    }
}

/// True when some cell's runs ran in boots (its values are per boot).
pub fn by_boot(a: &Analysis) -> bool {
    a.metrics
        .iter()
        .any(|m| m.cells.iter().any(|c| c.boots.is_some()))
}

/// "83%", "0.4%", or "n/a" (fewer than 2 boots, or one run per boot).
pub fn share_cell(c: &Cell) -> String {
    match c.boot_share {
        Some(s) if s >= 0.01 || s == 0.0 => format!("{:.0}%", 100.0 * s),
        Some(s) => format!("{:.1}%", 100.0 * s),
        None => "n/a".into(),
    }
}

/// "2.9 [2.7, 3.1]": the median launch-to-hello time and its range, as
/// the text, markdown and HTML tables print it.
pub fn hello_range(t: Option<&crate::analysis::boots::HelloTimes>) -> String {
    t.map(|h| {
        format!(
            "{} [{}, {}]",
            fmt_num(h.median),
            fmt_num(h.min),
            fmt_num(h.max)
        )
    })
    .unwrap_or_else(|| "-".into())
}

/// "a-b" or "a" for the range of `xs` (None when empty).
fn range(xs: impl Iterator<Item = usize>) -> Option<String> {
    let v: Vec<usize> = xs.collect();
    let (lo, hi) = (*v.iter().min()?, *v.iter().max()?);
    Some(if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    })
}

/// The header's line on how many boots and runs the values stand for,
/// instead of the host report's "runs: N per cell".
pub fn header_line(a: &Analysis) -> String {
    let i = &a.info;
    let cells = || a.metrics.iter().flat_map(|m| m.cells.iter());
    // Cells a config cannot measure (cross-CPU on one CPU) have no boots.
    let boots =
        range(cells().filter_map(|c| c.boots).filter(|&n| n > 0)).unwrap_or_else(|| "0".into());
    let runs = range(cells().flat_map(|c| c.boot_runs.iter().flatten().copied()))
        .unwrap_or_else(|| "0".into());
    format!(
        "boots: {boots} per config, {runs} runs each{}, {} order, seed {}; runs {}\n",
        if i.warmup > 0 {
            format!(" + {} warm-up", i.warmup)
        } else {
            String::new()
        },
        ascii(&i.order),
        i.seed,
        crate::words::runs_tally(a.runs_ok, a.runs_left_out, a.runs_failed)
    )
}

/// What the header adds for boots: how to read the `boot share` row, and
/// the TCG warning.
pub fn header_note(a: &Analysis) -> String {
    let mut out = wrap(
        "boot share: the between-boot share of the variance of runs (one-way random-effects \
         ANOVA, ICC(1)); where it is high, more boots narrow the CI and more runs per boot do \
         not (sysdelta plan-runs says how many).",
        "",
    );
    if a.boots.as_ref().is_some_and(|b| b.tcg) {
        out.push_str(&wrap(
            &format!("WARNING: {}.", crate::analysis::boots::TCG_WARNING),
            "",
        ));
    }
    out
}

fn join<T: ToString>(xs: &[T]) -> String {
    if xs.is_empty() {
        return "-".into();
    }
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The boots section of the text report (empty for a host experiment).
pub fn text_section(a: &Analysis) -> String {
    let Some(b) = &a.boots else {
        return String::new();
    };
    let mut out = String::new();
    out.push_str(&wrap(
        "Boots (a VM booted per boot; kernel and CPUs as the guests of the ok boots reported \
         them, checked against the config before any run):",
        "",
    ));
    let _ = writeln!(
        out,
        "{:<14} {:>5} {:>3} {:>6}  {:<26} {:>4} {:<5} {:>7}",
        "config", "boots", "ok", "failed", "kernel (uname -r)", "cpus", "accel", "hello s"
    );
    for c in &b.configs {
        let _ = writeln!(
            out,
            "{} {:>5} {:>3} {:>6}  {:<26} {:>4} {:<5} {:>7}",
            super::cells::label(&ascii(&c.config), 14),
            c.boots,
            c.ok,
            c.failed,
            clip(&ascii(&join(&c.kernels)), 26),
            clip(&join(&c.cpus), 4),
            clip(&ascii(&join(&c.accel)), 5),
            c.launch_to_hello_s
                .as_ref()
                .map(|h| fmt_num(h.median))
                .unwrap_or_else(|| "-".into()),
        );
    }
    out.push_str("(hello s: median time from launch to the guest's hello)\n");
    let running: usize = b.configs.iter().map(|c| c.running).sum();
    if running > 0 {
        out.push_str(&wrap(
            &format!(
                "{running} boots still running, or left running by a sysdelta that died \
                 (`--resume` marks those failed)."
            ),
            "",
        ));
    }
    let failed: Vec<_> = b
        .configs
        .iter()
        .flat_map(|c| c.failed_boots.iter().map(move |f| (c, f)))
        .collect();
    if !failed.is_empty() {
        // An audit-failed boot's runs are left out of the analysis
        // (analysis::boots::counted_runs); other failed boots' are kept.
        let audit = failed
            .iter()
            .filter(|(_, f)| f.reason.starts_with(crate::status::AUDIT_FAILED))
            .count();
        let kept = match audit {
            0 => "the runs they delivered kept",
            _ if audit == failed.len() => "their runs left out (the audit failed)",
            _ => "the runs they delivered kept, except where the audit failed",
        };
        let _ = writeln!(out, "\nFailed boots ({}), {kept}:", failed.len());
        for (c, f) in failed {
            out.push_str(&wrap(
                &format!(
                    "- {} boot {} (block {}, {}): {}",
                    ascii(&c.config),
                    f.id,
                    f.block,
                    runs(f.runs),
                    ascii(&f.reason)
                ),
                "",
            ));
            let lines: Vec<&str> = f
                .console_tail
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect();
            for l in &lines[lines.len().saturating_sub(CONSOLE_LINES)..] {
                let _ = writeln!(out, "    | {}", clip(&ascii(l), super::cells::WIDTH - 6));
            }
        }
    }
    out.push('\n');
    out
}

/// The markdown report's boots: the between-boot share per config and
/// metric, the boots table and the failed boots with their console tail
/// (empty for a host experiment).
pub fn markdown_section(a: &Analysis) -> String {
    let mut out = String::new();
    if by_boot(a) {
        out.push_str(
            "### Between-boot share of variance\n\nThe share of the variance of runs that is \
             between boots (one-way random-effects ANOVA, ICC(1)); where it is high, more boots \
             narrow the CI and more runs per boot do not.\n\n| config |",
        );
        for m in &a.metrics {
            let _ = write!(out, " {}/{} |", md(&m.workload), md(&m.spec.name));
        }
        out.push_str("\n|---|");
        for _ in &a.metrics {
            out.push_str("---:|");
        }
        out.push('\n');
        for (ci, c) in a.configs.iter().enumerate() {
            let _ = write!(out, "| {} |", md(c));
            for m in &a.metrics {
                let _ = write!(out, " {} |", share_cell(&m.cells[ci]));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    let Some(b) = &a.boots else {
        return out;
    };
    out.push_str(
        "### Boots\n\nKernel and CPUs as the guests of the ok boots reported them, checked \
         against the config before any run.\n\n| config | boots | ok | failed | kernel (uname -r) \
         | cpus | accel | launch to hello (s), median [range] |\n|---|---:|---:|---:|---|---:|---|---:|\n",
    );
    for c in &b.configs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            md(&c.config),
            c.boots,
            c.ok,
            c.failed,
            md(&join(&c.kernels)),
            join(&c.cpus),
            md(&join(&c.accel)),
            hello_range(c.launch_to_hello_s.as_ref())
        );
    }
    out.push('\n');
    for c in &b.configs {
        for f in &c.failed_boots {
            let _ = writeln!(
                out,
                "**Failed boot** {} of {} (block {}, {} delivered): {}\n",
                f.id,
                md(&c.config),
                f.block,
                runs(f.runs),
                md(&f.reason)
            );
            let lines: Vec<&str> = f
                .console_tail
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect();
            for l in &lines[lines.len().saturating_sub(CONSOLE_LINES)..] {
                let _ = writeln!(out, "> {}  ", md(l));
            }
            if !lines.is_empty() {
                out.push('\n');
            }
        }
    }
    out
}
