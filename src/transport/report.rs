//! Text output: the 2005 raw-data blocks, the per-transport summary, and
//! deltas between two configs' sweeps.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::calib::Calibration;
use super::step::StepResult;
use super::sysinfo::SysHeader;
use super::{fmt_buffer, fmt_volume};

const RULE: &str = "--------------------------------------";

/// The machine header, then one block per step, in the 2005 format
/// ("NETLINK with 1MB buffers / ... ns / call system + user time / ...").
pub fn print_raw_blocks(
    w: &mut dyn Write,
    header: &SysHeader,
    steps: &[StepResult],
) -> io::Result<()> {
    for l in header.lines() {
        writeln!(w, "{l}")?;
    }
    writeln!(w, "{RULE}")?;
    for s in steps {
        let name = s.transport.to_uppercase();
        if let Some(reason) = &s.skipped {
            writeln!(w, "{name} skipped: {reason}")?;
            writeln!(w, "{RULE}")?;
            continue;
        }
        let per = if s.transport == "ftrace" {
            " per CPU"
        } else {
            ""
        };
        writeln!(
            w,
            "{name} with {} buffers{per} (consumer -> {})",
            fmt_buffer(s.buffer),
            s.sink
        )?;
        writeln!(
            w,
            "write of {} bytes = {:.0} ns / record system + user time (user {:.0}, system {:.0}).",
            s.record_size,
            s.cpu_ns_per_record,
            s.user_ns as f64 / s.written.max(1) as f64,
            s.sys_ns as f64 / s.written.max(1) as f64
        )?;
        writeln!(
            w,
            "write of {} in {:.2} secs real time.",
            fmt_volume(s.volume),
            s.wall_s
        )?;
        writeln!(w, "Transfer rate = {:>7.2} MB/sec", s.mb_per_s)?;
        writeln!(w, "Transport failures: {}", s.dropped)?;
        writeln!(
            w,
            "  (records written {}, read {}; {})",
            s.written, s.read, s.detail
        )?;
        writeln!(w, "{RULE}")?;
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Per-transport figures derived from a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct TransportSummary {
    pub transport: String,
    /// Median MB/s over the steps without drops (all steps if none).
    pub sustained_mb_per_s: f64,
    /// Median producer CPU ns per record over the same steps.
    pub cpu_ns_per_record: f64,
    /// False when every step dropped records (figures then cover all steps).
    pub from_clean_steps: bool,
    pub steps: usize,
    pub steps_with_drops: usize,
    /// Per volume: the smallest buffer with zero drops (None: none tried
    /// up to `largest tried`).
    pub zero_drop_buffer: BTreeMap<u64, (Option<u64>, u64)>,
}

/// Summaries in first-seen transport order; skipped transports are left out.
pub fn summarize(steps: &[StepResult]) -> Vec<TransportSummary> {
    let mut order: Vec<&str> = Vec::new();
    for s in steps.iter().filter(|s| s.skipped.is_none()) {
        if !order.contains(&s.transport.as_str()) {
            order.push(&s.transport);
        }
    }
    order
        .into_iter()
        .map(|t| {
            let mine: Vec<&StepResult> = steps
                .iter()
                .filter(|s| s.transport == t && s.skipped.is_none())
                .collect();
            let clean: Vec<&&StepResult> = mine.iter().filter(|s| s.dropped == 0).collect();
            let basis: Vec<&StepResult> = if clean.is_empty() {
                mine.clone()
            } else {
                clean.iter().map(|s| **s).collect()
            };
            let mut zero = BTreeMap::new();
            for s in &mine {
                let e = zero.entry(s.volume).or_insert((None, 0u64));
                e.1 = e.1.max(s.buffer);
                if s.dropped == 0 {
                    e.0 = Some(e.0.map_or(s.buffer, |b: u64| b.min(s.buffer)));
                }
            }
            TransportSummary {
                transport: t.to_string(),
                sustained_mb_per_s: median(basis.iter().map(|s| s.mb_per_s).collect())
                    .unwrap_or(0.0),
                cpu_ns_per_record: median(basis.iter().map(|s| s.cpu_ns_per_record).collect())
                    .unwrap_or(0.0),
                from_clean_steps: !clean.is_empty(),
                steps: mine.len(),
                steps_with_drops: mine.len() - clean.len(),
                zero_drop_buffer: zero,
            }
        })
        .collect()
}

/// The summary table, the zero-drop buffer table, skipped transports, and
/// (with a calibration) the memcpy ceiling and the harness cost.
pub fn print_summary(
    w: &mut dyn Write,
    steps: &[StepResult],
    calib: Option<&Calibration>,
) -> io::Result<()> {
    let sums = summarize(steps);
    let rs = steps.first().map_or(0, |s| s.record_size);
    writeln!(
        w,
        "Summary: {rs}-byte records; MB = 10^6 bytes; CPU = producer user + system; medians over steps without drops"
    )?;
    writeln!(
        w,
        "{:<12} {:>14} {:>14} {:>11} {:>6} {:>13}",
        "transport", "sustained MB/s", "CPU ns/record", "of memcpy", "steps", "steps w/drops"
    )?;
    for s in &sums {
        let ceil = calib
            .map(|c| format!("{:.2}%", 100.0 * s.sustained_mb_per_s / c.memcpy_mb_per_s))
            .unwrap_or_else(|| "-".into());
        let mark = if s.from_clean_steps { "" } else { "*" };
        writeln!(
            w,
            "{:<12} {:>13.2}{mark:1} {:>13.0}{mark:1} {:>11} {:>6} {:>13}",
            s.transport,
            s.sustained_mb_per_s,
            s.cpu_ns_per_record,
            ceil,
            s.steps,
            s.steps_with_drops
        )?;
    }
    if sums.iter().any(|s| !s.from_clean_steps) {
        writeln!(w, "* every step dropped records: median over all steps")?;
    }
    if !sums.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "Smallest buffer with zero drops, per volume (ftrace: per CPU):"
        )?;
        write!(w, "{:<10}", "volume")?;
        for s in &sums {
            write!(w, " {:>12}", s.transport)?;
        }
        writeln!(w)?;
        let mut vols: Vec<u64> = sums
            .iter()
            .flat_map(|s| s.zero_drop_buffer.keys().copied())
            .collect();
        vols.sort_unstable();
        vols.dedup();
        for v in vols {
            write!(w, "{:<10}", fmt_volume(v))?;
            for s in &sums {
                let cell = match s.zero_drop_buffer.get(&v) {
                    Some((Some(b), _)) => fmt_buffer(*b),
                    Some((None, max)) => format!(">{}", fmt_buffer(*max)),
                    None => "-".into(),
                };
                write!(w, " {cell:>12}")?;
            }
            writeln!(w)?;
        }
    }
    for s in steps.iter().filter(|s| s.skipped.is_some()) {
        writeln!(
            w,
            "skipped: {}: {}",
            s.transport,
            s.skipped.as_deref().unwrap_or("")
        )?;
    }
    if let Some(c) = calib {
        writeln!(w)?;
        writeln!(
            w,
            "Ceiling: single-core memcpy of {}-byte records = {:.0} MB/sec",
            c.record_size, c.memcpy_mb_per_s
        )?;
        let cheapest = sums
            .iter()
            .filter(|s| s.cpu_ns_per_record > 0.0)
            .min_by(|a, b| a.cpu_ns_per_record.total_cmp(&b.cpu_ns_per_record));
        match cheapest {
            Some(s) => writeln!(
                w,
                "Harness cost: {:.2} ns per record = {:.2}% of the cheapest transport ({}, {:.0} ns per record)",
                c.harness_ns_per_record,
                100.0 * c.harness_ns_per_record / s.cpu_ns_per_record,
                s.transport,
                s.cpu_ns_per_record
            )?,
            None => writeln!(w, "Harness cost: {:.2} ns per record", c.harness_ns_per_record)?,
        }
    }
    Ok(())
}

/// Deltas of `other` against `base` per transport (sustained MB/s and CPU ns
/// per record), for sweeps run under two configs. Point estimates only: the
/// runner's report gives confidence intervals for the workload metrics.
pub fn print_deltas(
    w: &mut dyn Write,
    base_name: &str,
    base: &[StepResult],
    other_name: &str,
    other: &[StepResult],
) -> io::Result<()> {
    let b = summarize(base);
    let o = summarize(other);
    writeln!(w, "{other_name} vs {base_name}:")?;
    writeln!(
        w,
        "{:<12} {:>22} {:>22}",
        "transport", "sustained MB/s", "CPU ns/record"
    )?;
    let pct = |x: f64, y: f64| {
        if x > 0.0 {
            100.0 * (y - x) / x
        } else {
            f64::NAN
        }
    };
    for bs in &b {
        if let Some(os) = o.iter().find(|s| s.transport == bs.transport) {
            writeln!(
                w,
                "{:<12} {:>8.2} -> {:>8.2} {:>+6.1}% {:>7.0} -> {:>7.0} {:>+6.1}%",
                bs.transport,
                bs.sustained_mb_per_s,
                os.sustained_mb_per_s,
                pct(bs.sustained_mb_per_s, os.sustained_mb_per_s),
                bs.cpu_ns_per_record,
                os.cpu_ns_per_record,
                pct(bs.cpu_ns_per_record, os.cpu_ns_per_record)
            )?;
        }
    }
    Ok(())
}
