//! The profile monitor: which kernel (and user) code the CPUs were running
//! during the run, like the 2001 posting's "Top 10 of /proc/profile".
//!
//! One sample = one expiry of the software cpu-clock event (an hrtimer, so
//! it works without a PMU) on one CPU, every 1/hz seconds of that CPU's time,
//! idle included (idle time shows up as the idle loop's symbols, as
//! `default_idle` did in 2001). Kernel samples are resolved through
//! /proc/kallsyms; user samples are attributed to the process name and the
//! file they ran in, "comm (libc.so.6)", flagged non-kernel: function names
//! inside user files are not resolved.

pub mod calibrate;
pub mod kallsyms;
pub mod perf;
pub mod usermaps;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use super::sampler::{Sample, SamplerThread};
use super::{Monitor, MonitorData, Series};
use crate::metric::{Direction, MetricSpec};

/// Sampling frequency per CPU when a plan does not say otherwise.
pub const DEFAULT_HZ: u64 = 1000;
/// Ring buffer pages per CPU (256 KiB with 4 KiB pages: at 1 kHz and 24
/// bytes per sample about 10 s of samples, far more than one drain period).
const RING_PAGES: usize = 64;
/// The ring is drained at least this often, whatever the interval.
const MAX_DRAIN: Duration = Duration::from_secs(1);

/// A run's profile: samples per symbol, most sampled first.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Profile {
    pub total_samples: u64,
    /// (symbol, is kernel, samples), sorted by samples descending then name.
    pub symbols: Vec<(String, bool, u64)>,
    /// Samples the kernel dropped because the ring was full.
    pub lost: u64,
}

impl Profile {
    /// Sum several runs' profiles (e.g. all runs of one config) into one.
    pub fn merge(profiles: &[Profile]) -> Profile {
        let mut by: HashMap<(&str, bool), u64> = HashMap::new();
        for p in profiles {
            for (s, k, n) in &p.symbols {
                *by.entry((s.as_str(), *k)).or_default() += n;
            }
        }
        let mut symbols: Vec<(String, bool, u64)> = by
            .into_iter()
            .map(|((s, k), n)| (s.to_string(), k, n))
            .collect();
        sort_symbols(&mut symbols);
        Profile {
            total_samples: profiles.iter().map(|p| p.total_samples).sum(),
            symbols,
            lost: profiles.iter().map(|p| p.lost).sum(),
        }
    }

    /// Share of all samples, in percent, per (symbol, kernel).
    fn shares(&self) -> HashMap<(&str, bool), f64> {
        let tot = self.total_samples.max(1) as f64;
        self.symbols
            .iter()
            .map(|(s, k, n)| ((s.as_str(), *k), 100.0 * *n as f64 / tot))
            .collect()
    }
}

/// Most samples first; ties by name, kernel before user, for stable output.
fn sort_symbols(v: &mut [(String, bool, u64)]) {
    v.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| a.0.cmp(&b.0))
            .then(b.1.cmp(&a.1))
    });
}

fn tag(kernel: bool) -> &'static str {
    if kernel {
        "[k]"
    } else {
        "[u]"
    }
}

/// Print the `n` most sampled symbols: samples, share of all samples, symbol.
pub fn print_top(p: &Profile, n: usize, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{:>10}  {:>6}  symbol", "samples", "share")?;
    let tot = p.total_samples.max(1) as f64;
    for (sym, k, c) in p.symbols.iter().take(n) {
        let share = 100.0 * *c as f64 / tot;
        // A stored symbol is anyone's text: shown, never acted on.
        let sym = crate::sys::visible::terminal_safe(sym);
        writeln!(out, "{c:>10}  {share:>5.1}%  {} {sym}", tag(*k))?;
    }
    writeln!(
        out,
        "{:>10}  total samples{}",
        p.total_samples,
        if p.lost > 0 {
            format!(", {} lost", p.lost)
        } else {
            String::new()
        }
    )
}

/// [`print_diff_labeled`] with columns labelled "a" and "b".
pub fn print_diff(a: &Profile, b: &Profile, n: usize, out: &mut dyn Write) -> std::io::Result<()> {
    print_diff_labeled("a", a, "b", b, n, out)
}

/// Print the `n` symbols whose share of samples changed most from `a` to
/// `b` (in percentage points of each profile's total), largest change first.
pub fn print_diff_labeled(
    a_name: &str,
    a: &Profile,
    b_name: &str,
    b: &Profile,
    n: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (sa, sb) = (a.shares(), b.shares());
    let mut keys: Vec<(&str, bool)> = sa.keys().chain(sb.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<((&str, bool), f64, f64)> = keys
        .into_iter()
        .map(|k| {
            (
                k,
                sa.get(&k).copied().unwrap_or(0.0),
                sb.get(&k).copied().unwrap_or(0.0),
            )
        })
        .collect();
    rows.sort_by(|x, y| {
        (y.2 - y.1)
            .abs()
            .total_cmp(&(x.2 - x.1).abs())
            .then(x.0.cmp(&y.0))
    });
    let safe = crate::sys::visible::terminal_safe;
    let (a_name, b_name) = (safe(a_name), safe(b_name));
    let w = crate::sys::visible::column(a_name.len().max(b_name.len()).max(7));
    writeln!(out, "{a_name:>w$}  {b_name:>w$}  {:>8}  symbol", "change")?;
    for ((sym, k), x, y) in rows.into_iter().take(n) {
        let sym = crate::sys::visible::terminal_safe(sym);
        writeln!(
            out,
            "{:>w$}  {:>w$}  {:>+7.1}pp  {} {sym}",
            format!("{x:.1}%"),
            format!("{y:.1}%"),
            y - x,
            tag(k)
        )?;
    }
    Ok(())
}

/// Per-interval sample counts, for the series.
#[derive(Clone, Copy, Default)]
struct Tick {
    t: f64,
    kernel: u64,
    user: u64,
    idle: u64,
}

struct Collector {
    rings: Vec<perf::Ring>,
    kernel_ips: HashMap<u64, u64>,
    /// (pid, mapped file or None) -> samples.
    user: HashMap<(u32, Option<Arc<str>>), u64>,
    comms: HashMap<u32, String>,
    maps: usermaps::UserMaps,
    cur: Tick,
    ticks: Vec<Tick>,
}

impl Collector {
    fn drain(&mut self) {
        let Collector {
            rings,
            kernel_ips,
            user,
            maps,
            cur,
            ..
        } = self;
        maps.next_drain();
        for r in rings.iter_mut() {
            r.drain(|s| {
                if s.kernel {
                    *kernel_ips.entry(s.ip).or_default() += 1;
                    if s.pid == 0 {
                        cur.idle += 1;
                    } else {
                        cur.kernel += 1;
                    }
                } else {
                    let file = maps.resolve(s.pid, s.ip);
                    *user.entry((s.pid, file)).or_default() += 1;
                    cur.user += 1;
                }
            });
        }
        // Name new processes while they (probably) still exist.
        for (pid, _) in self.user.keys() {
            self.comms.entry(*pid).or_insert_with(|| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| format!("pid {pid}"))
            });
        }
    }
}

impl Sample for Collector {
    fn sample(&mut self, t: f64) {
        self.drain();
        self.cur.t = t;
        self.ticks.push(self.cur);
        self.cur = Tick::default();
    }
}

pub struct ProfileMonitor {
    hz: u64,
    interval: Duration,
    thread: Option<SamplerThread<Collector>>,
    /// Kernel symbols, kept between runs while /proc/modules is unchanged
    /// (reading and sorting /proc/kallsyms takes tens of milliseconds).
    ksyms: Option<(String, Arc<kallsyms::Kallsyms>)>,
}

impl ProfileMonitor {
    /// Sample every CPU `hz` times per second of its clock; drain the
    /// rings and record per-interval counts every `interval` (at most 1 s).
    pub fn new(hz: u64, interval: Duration) -> Self {
        ProfileMonitor {
            hz: hz.clamp(1, 100_000),
            interval,
            thread: None,
            ksyms: None,
        }
    }

    fn kallsyms(&mut self) -> anyhow::Result<Arc<kallsyms::Kallsyms>> {
        let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
        if let Some((m, k)) = &self.ksyms {
            if *m == modules {
                return Ok(k.clone());
            }
        }
        let k = Arc::new(kallsyms::Kallsyms::load().context("monitor profile: /proc/kallsyms")?);
        self.ksyms = Some((modules, k.clone()));
        Ok(k)
    }
}

/// Whether the effective capability set holds CAP_PERFMON (38) or
/// CAP_SYS_ADMIN (21), which lift perf_event_paranoid.
fn has_perf_capability() -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 38 | 1 << 21) != 0)
}

/// The error for a perf_event_paranoid level, if it forbids system-wide
/// sampling of kernel and user code: allowed at level <= 0, or at any level
/// with CAP_PERFMON or CAP_SYS_ADMIN.
pub fn paranoid_error(paranoid: i64, privileged: bool) -> Option<String> {
    (paranoid > 0 && !privileged).then(|| format!(
        "monitor profile: kernel.perf_event_paranoid is {paranoid}; system-wide sampling needs it at most 0 (sysctl kernel.perf_event_paranoid=0) or root/CAP_PERFMON"
    ))
}

/// One line per reason profiling cannot work here; stops at the first, so
/// the user sees the root cause rather than its consequences.
pub fn profile_preflight() -> Vec<String> {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    let Some(paranoid) = paranoid else {
        return vec!["monitor profile: /proc/sys/kernel/perf_event_paranoid is missing: this kernel has no perf events".into()];
    };
    if let Some(e) = paranoid_error(paranoid, has_perf_capability()) {
        return vec![e];
    }
    let first = std::fs::File::open("/proc/kallsyms").and_then(|f| {
        let mut line = String::new();
        std::io::BufReader::new(f).read_line(&mut line)?;
        Ok(line)
    });
    match first {
        Err(e) => return vec![format!("monitor profile: cannot read /proc/kallsyms: {e}")],
        Ok(l)
            if l.split_whitespace()
                .next()
                .is_none_or(|a| a.trim_start_matches('0').is_empty()) =>
        {
            let kr = std::fs::read_to_string("/proc/sys/kernel/kptr_restrict").unwrap_or_default();
            return vec![format!(
                "monitor profile: /proc/kallsyms shows no addresses (kernel.kptr_restrict is {}); kernel symbols cannot be resolved",
                kr.trim()
            )];
        }
        Ok(_) => {}
    }
    let cpu = perf::online_cpus()
        .ok()
        .and_then(|c| c.first().copied())
        .unwrap_or(0);
    if let Err(e) = perf::open_cpu_clock(cpu, 1_000_000) {
        return vec![format!(
            "monitor profile: perf_event_open(cpu-clock, cpu {cpu}) failed: {e}"
        )];
    }
    Vec::new()
}

impl Monitor for ProfileMonitor {
    fn name(&self) -> &str {
        "profile"
    }

    fn preflight(&self) -> Vec<String> {
        profile_preflight()
    }

    fn set_rate_hz(&mut self, hz: u64) {
        self.hz = hz.clamp(1, 100_000);
    }

    fn start(&mut self) -> anyhow::Result<()> {
        if self.thread.is_some() {
            bail!("monitor profile: started twice");
        }
        let period_ns = 1_000_000_000 / self.hz;
        let mut rings = Vec::new();
        for cpu in perf::online_cpus().context("monitor profile: online cpus")? {
            let fd = perf::open_cpu_clock(cpu, period_ns)
                .with_context(|| format!("monitor profile: perf_event_open on cpu {cpu}"))?;
            rings.push(perf::Ring::new(fd, RING_PAGES).context("monitor profile: mmap ring")?);
        }
        for r in &rings {
            r.enable().context("monitor profile: enable")?;
        }
        let c = Collector {
            rings,
            kernel_ips: HashMap::new(),
            user: HashMap::new(),
            comms: HashMap::new(),
            maps: usermaps::UserMaps::default(),
            cur: Tick::default(),
            ticks: Vec::new(),
        };
        let drain = self.interval.min(MAX_DRAIN);
        self.thread = Some(SamplerThread::spawn(c, drain, "profile")?);
        Ok(())
    }

    fn stop(&mut self) -> anyhow::Result<MonitorData> {
        let Some(t) = self.thread.take() else {
            bail!("monitor profile: stopped without start");
        };
        let (mut c, cpu, wall) = t.stop()?;
        for r in &c.rings {
            let _ = r.disable();
        }
        c.drain();
        let lost: u64 = c.rings.iter().map(|r| r.lost).sum();
        c.rings.clear(); // unmap and close before the slow symbol work
        let ksyms = self.kallsyms()?;
        let mut by_sym: HashMap<(String, bool), u64> = HashMap::new();
        for (ip, n) in &c.kernel_ips {
            let name = ksyms
                .resolve(*ip)
                .map(str::to_string)
                .unwrap_or_else(|| format!("0x{ip:x}"));
            *by_sym.entry((name, true)).or_default() += n;
        }
        for ((pid, file), n) in &c.user {
            let comm = c
                .comms
                .get(pid)
                .cloned()
                .unwrap_or_else(|| format!("pid {pid}"));
            let name = match file {
                Some(f) => format!("{comm} ({f})"),
                None => format!("{comm} (?)"),
            };
            *by_sym.entry((name, false)).or_default() += n;
        }
        let mut symbols: Vec<(String, bool, u64)> =
            by_sym.into_iter().map(|((s, k), n)| (s, k, n)).collect();
        sort_symbols(&mut symbols);
        let total: u64 = symbols.iter().map(|s| s.2).sum();

        c.ticks.push(c.cur); // samples drained after the thread stopped
        let (mut kern, mut user, mut idle) = (Vec::new(), Vec::new(), Vec::new());
        let mut ts = Vec::new();
        // The first tick (t = 0) only holds samples from before the thread's
        // first drain; fold every tick into the interval that ends at it.
        for tk in c.ticks.iter().skip(1) {
            let n = (tk.kernel + tk.user + tk.idle).max(1) as f64;
            ts.push(tk.t);
            kern.push(100.0 * tk.kernel as f64 / n);
            user.push(100.0 * tk.user as f64 / n);
            idle.push(100.0 * tk.idle as f64 / n);
        }
        if let Some(last) = ts.last_mut() {
            *last = wall;
        }
        let mk = |name: &str, values: Vec<f64>| Series {
            name: format!("profile.{name}"),
            unit: "%".into(),
            t_offsets_s: ts.clone(),
            values,
        };
        let series = vec![
            mk("kernel_pct", kern),
            mk("user_pct", user),
            mk("idle_pct", idle),
        ];
        let sums = |f: fn(&Tick) -> u64| c.ticks.iter().map(f).sum::<u64>() as f64;
        let tot = (total.max(1)) as f64;
        let summaries = vec![
            (
                MetricSpec::new("profile.kernel_pct", "%", Direction::Lower),
                100.0 * sums(|t| t.kernel) / tot,
            ),
            (
                MetricSpec::new("profile.user_pct", "%", Direction::Lower),
                100.0 * sums(|t| t.user) / tot,
            ),
            (
                MetricSpec::new("profile.idle_pct", "%", Direction::Higher),
                100.0 * sums(|t| t.idle) / tot,
            ),
            (
                MetricSpec::new("profile.lost_samples", "samples", Direction::Lower),
                lost as f64,
            ),
        ];
        Ok(MonitorData {
            series,
            summaries,
            profile: Some(Profile {
                total_samples: total,
                symbols,
                lost,
            }),
            self_cpu_s: cpu,
            wall_s: wall,
        })
    }
}
