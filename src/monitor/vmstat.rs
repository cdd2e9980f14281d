//! The vmstat monitor: the columns of `vmstat` (procs r/b, memory
//! swpd/free/buff/cache, swap si/so, io bi/bo, system in/cs, cpu
//! us/sy/id/wa/st), computed from /proc/stat, /proc/vmstat and /proc/meminfo
//! the way procps computes them.
//!
//! The sampling thread only reads and parses the three files into a fixed
//! snapshot; rates are computed at stop. A rate sample at time t covers the
//! interval ending at t.

use std::time::Duration;

use anyhow::bail;

use super::procfs::{self, StatCounters, VmCounters};
use super::sampler::{Sample, SamplerThread};
use super::{Monitor, MonitorData, Series};
use crate::metric::{Direction, MetricSpec};

/// One reading of the counters and gauges vmstat needs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VmSnap {
    pub t: f64,
    pub stat: StatCounters,
    pub vm: VmCounters,
    pub swap_total_kb: u64,
    pub swap_free_kb: u64,
    pub mem_free_kb: u64,
    pub buffers_kb: u64,
    /// Cached + SReclaimable, as procps' vmstat "cache".
    pub cache_kb: u64,
}

impl VmSnap {
    /// Parse the three files' text into a snapshot taken at `t`.
    pub fn parse(t: f64, stat: &str, vmstat: &str, meminfo: &str) -> VmSnap {
        let m = |k| procfs::meminfo_value(meminfo, k).unwrap_or(0);
        VmSnap {
            t,
            stat: procfs::parse_stat(stat),
            vm: procfs::parse_vmstat(vmstat),
            swap_total_kb: m("SwapTotal"),
            swap_free_kb: m("SwapFree"),
            mem_free_kb: m("MemFree"),
            buffers_kb: m("Buffers"),
            cache_kb: m("Cached") + m("SReclaimable"),
        }
    }
}

struct Reader {
    snaps: Vec<VmSnap>,
    bufs: [String; 3],
    errors: u64,
}

impl Sample for Reader {
    fn sample(&mut self, t: f64) {
        let [a, b, c] = &mut self.bufs;
        let ok = procfs::read_into("/proc/stat", a).is_ok()
            && procfs::read_into("/proc/vmstat", b).is_ok()
            && procfs::read_into("/proc/meminfo", c).is_ok();
        if ok {
            self.snaps.push(VmSnap::parse(t, a, b, c));
        } else {
            self.errors += 1;
        }
    }
}

pub struct VmstatMonitor {
    interval: Duration,
    thread: Option<SamplerThread<Reader>>,
}

impl VmstatMonitor {
    pub fn new(interval: Duration) -> Self {
        VmstatMonitor {
            interval,
            thread: None,
        }
    }
}

fn page_kb() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as f64 / 1024.0
    } else {
        4.0
    }
}

/// The vmstat columns as (name, unit, value) between two snapshots; rates
/// per second over b.t - a.t, cpu shares in percent of all ticks, gauges
/// from `b`. `r` excludes the reading thread itself, as vmstat does.
pub fn columns(a: &VmSnap, b: &VmSnap, page_kb: f64) -> Vec<(&'static str, &'static str, f64)> {
    let dt = (b.t - a.t).max(1e-9);
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
    let rate = |x: u64, y: u64| d(x, y) / dt;
    let dc: Vec<f64> = (0..8).map(|i| d(a.stat.cpu[i], b.stat.cpu[i])).collect();
    let total: f64 = dc.iter().sum();
    let pct = |v: f64| if total > 0.0 { 100.0 * v / total } else { 0.0 };
    vec![
        ("r", "tasks", b.stat.procs_running.saturating_sub(1) as f64),
        ("b", "tasks", b.stat.procs_blocked as f64),
        (
            "swpd",
            "KiB",
            b.swap_total_kb.saturating_sub(b.swap_free_kb) as f64,
        ),
        ("free", "KiB", b.mem_free_kb as f64),
        ("buff", "KiB", b.buffers_kb as f64),
        ("cache", "KiB", b.cache_kb as f64),
        ("si", "KiB/s", rate(a.vm.pswpin, b.vm.pswpin) * page_kb),
        ("so", "KiB/s", rate(a.vm.pswpout, b.vm.pswpout) * page_kb),
        ("bi", "KiB/s", rate(a.vm.pgpgin, b.vm.pgpgin)),
        ("bo", "KiB/s", rate(a.vm.pgpgout, b.vm.pgpgout)),
        ("in", "1/s", rate(a.stat.intr, b.stat.intr)),
        ("cs", "1/s", rate(a.stat.ctxt, b.stat.ctxt)),
        ("us", "%", pct(dc[0] + dc[1])),
        ("sy", "%", pct(dc[2] + dc[5] + dc[6])),
        ("id", "%", pct(dc[3])),
        ("wa", "%", pct(dc[4])),
        ("st", "%", pct(dc[7])),
    ]
}

/// Series (one per column, one value per interval) and whole-run summaries.
pub fn analyze_snaps(snaps: &[VmSnap], page_kb: f64) -> (Vec<Series>, Vec<(MetricSpec, f64)>) {
    let mut series: Vec<Series> = Vec::new();
    for w in snaps.windows(2) {
        if w[1].t <= w[0].t {
            continue;
        }
        for (i, (name, unit, v)) in columns(&w[0], &w[1], page_kb).into_iter().enumerate() {
            if series.len() <= i {
                series.push(Series {
                    name: format!("vmstat.{name}"),
                    unit: unit.to_string(),
                    t_offsets_s: Vec::new(),
                    values: Vec::new(),
                });
            }
            series[i].t_offsets_s.push(w[1].t);
            series[i].values.push(v);
        }
    }
    let mut summaries = Vec::new();
    if let (Some(first), Some(last)) = (snaps.first(), snaps.last()) {
        if last.t > first.t {
            use Direction::*;
            for (name, unit, v) in columns(first, last, page_kb) {
                let dir = match name {
                    "id" => Higher,
                    _ => Lower,
                };
                let (metric, unit) = match unit {
                    "KiB/s" | "1/s" => (format!("vmstat.{name}_per_s"), unit),
                    "%" => (format!("vmstat.{name}_pct"), unit),
                    _ => continue, // gauges: summarized below
                };
                summaries.push((MetricSpec::new(&metric, unit, dir), v));
            }
            let max_swpd = snaps
                .iter()
                .map(|s| s.swap_total_kb.saturating_sub(s.swap_free_kb))
                .max()
                .unwrap_or(0);
            summaries.push((
                MetricSpec::new("vmstat.swpd_max_kb", "KiB", Lower),
                max_swpd as f64,
            ));
        }
    }
    (series, summaries)
}

impl Monitor for VmstatMonitor {
    fn name(&self) -> &str {
        "vmstat"
    }

    fn preflight(&self) -> Vec<String> {
        let mut buf = String::new();
        ["/proc/stat", "/proc/vmstat", "/proc/meminfo"]
            .iter()
            .filter_map(|p| {
                procfs::read_into(p, &mut buf)
                    .err()
                    .map(|e| format!("monitor vmstat: cannot read {p}: {e}"))
            })
            .collect()
    }

    fn start(&mut self) -> anyhow::Result<()> {
        if self.thread.is_some() {
            bail!("monitor vmstat: started twice");
        }
        let r = Reader {
            snaps: Vec::with_capacity(1024),
            bufs: Default::default(),
            errors: 0,
        };
        self.thread = Some(SamplerThread::spawn(r, self.interval, "vmstat")?);
        Ok(())
    }

    fn stop(&mut self) -> anyhow::Result<MonitorData> {
        let Some(t) = self.thread.take() else {
            bail!("monitor vmstat: stopped without start");
        };
        let (r, cpu, wall) = t.stop()?;
        if r.snaps.is_empty() {
            bail!("monitor vmstat: all {} reads of /proc failed", r.errors);
        }
        let (series, summaries) = analyze_snaps(&r.snaps, page_kb());
        Ok(MonitorData {
            series,
            summaries,
            profile: None,
            self_cpu_s: cpu,
            wall_s: wall,
        })
    }
}
