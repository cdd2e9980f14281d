//! The counters monitor: `perf stat -a` over each run. Counting (not
//! sampling) perf events on every online CPU, all tasks, read once at the
//! start and once at the end of the run; no thread and no interrupts, so it
//! costs a few system calls per run.
//!
//! Hardware counters (cycles, instructions, cache misses) need a PMU. A VM
//! without one (`perf stat -e instructions true` says "not supported")
//! refuses them; the monitor then says so once ([`Monitor::notes`]) and
//! counts the software events alone, which every kernel with perf events
//! has. It never fails a run for want of a counter.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

use anyhow::bail;

use super::profile::perf::online_cpus;
use super::{Monitor, MonitorData};
use crate::metric::{Direction, MetricSpec};
use crate::sys::perf::{perf_event_open, PerfEventAttr, FLAG_DISABLED, PERF_TYPE_SOFTWARE};

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// One counter: its metric name (after `counters.`), perf type and config.
struct Counter {
    name: &'static str,
    type_: u32,
    config: u64,
    unit: &'static str,
}

/// Hardware counters, as `perf stat` names them: cycles, instructions,
/// cache-misses (the last-level cache's, as the kernel maps it).
const HARDWARE: &[Counter] = &[
    Counter {
        name: "cycles",
        type_: PERF_TYPE_HARDWARE,
        config: 0,
        unit: "cycles",
    },
    Counter {
        name: "instructions",
        type_: PERF_TYPE_HARDWARE,
        config: 1,
        unit: "instructions",
    },
    Counter {
        name: "cache_misses",
        type_: PERF_TYPE_HARDWARE,
        config: 3,
        unit: "misses",
    },
];

/// Software counters: every kernel with perf events has them.
const SOFTWARE: &[Counter] = &[
    Counter {
        name: "context_switches",
        type_: PERF_TYPE_SOFTWARE,
        config: 3,
        unit: "switches",
    },
    Counter {
        name: "cpu_migrations",
        type_: PERF_TYPE_SOFTWARE,
        config: 4,
        unit: "migrations",
    },
    Counter {
        name: "page_faults",
        type_: PERF_TYPE_SOFTWARE,
        config: 2,
        unit: "faults",
    },
];

/// Open a disabled counting event on `cpu` for all tasks.
fn open(c: &Counter, cpu: usize) -> std::io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        flags: FLAG_DISABLED,
        ..PerfEventAttr::new(c.type_, c.config)
    };
    perf_event_open(&attr, -1, cpu as i32)
}

fn ioctl(fd: &OwnedFd, req: libc::c_ulong) {
    // SAFETY: a perf ioctl without argument on our own fd.
    unsafe { libc::ioctl(fd.as_raw_fd(), req as _, 0) };
}

fn read_count(fd: &OwnedFd) -> Option<u64> {
    let mut v = 0u64;
    // SAFETY: reading the 8-byte count of a counting perf event (no
    // read_format flags) into a u64.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    (n == 8).then_some(v)
}

/// Which counters this machine has: the hardware ones when the first can be
/// opened on the first CPU, and why not otherwise.
fn probe() -> (bool, Option<String>) {
    let cpu = online_cpus()
        .ok()
        .and_then(|c| c.first().copied())
        .unwrap_or(0);
    match open(&HARDWARE[0], cpu) {
        Ok(_) => (true, None),
        Err(e) => (
            false,
            Some(format!(
                "monitor counters: no hardware counters here (perf_event_open(cycles): {e}; a VM without a PMU); counting the software events only: {}",
                SOFTWARE.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
            )),
        ),
    }
}

pub struct CountersMonitor {
    /// Probed on first use: (hardware available, the note saying it is not).
    probed: Option<(bool, Option<String>)>,
    /// Per counter in use, one fd per CPU.
    open: Vec<(&'static Counter, Vec<OwnedFd>)>,
    started: Option<Instant>,
}

impl Default for CountersMonitor {
    fn default() -> Self {
        Self::new()
    }
}

impl CountersMonitor {
    pub fn new() -> Self {
        CountersMonitor {
            probed: None,
            open: Vec::new(),
            started: None,
        }
    }

    fn probed(&mut self) -> &(bool, Option<String>) {
        self.probed.get_or_insert_with(probe)
    }

    /// The counters this monitor counts here, hardware first.
    pub fn counters(&mut self) -> Vec<&'static str> {
        let hw = self.probed().0;
        HARDWARE
            .iter()
            .filter(|_| hw)
            .chain(SOFTWARE)
            .map(|c| c.name)
            .collect()
    }
}

impl Monitor for CountersMonitor {
    fn name(&self) -> &str {
        "counters"
    }

    fn preflight(&self) -> Vec<String> {
        match std::fs::metadata("/proc/sys/kernel/perf_event_paranoid") {
            Err(_) => vec!["monitor counters: /proc/sys/kernel/perf_event_paranoid is missing: this kernel has no perf events".into()],
            Ok(_) => {
                let cpu = online_cpus().ok().and_then(|c| c.first().copied()).unwrap_or(0);
                match open(&SOFTWARE[0], cpu) {
                    Ok(_) => Vec::new(),
                    Err(e) => vec![format!(
                        "monitor counters: perf_event_open(context-switches, all tasks, cpu {cpu}) failed: {e} (system-wide counting needs root/CAP_PERFMON or kernel.perf_event_paranoid <= 0)"
                    )],
                }
            }
        }
    }

    fn notes(&mut self) -> Vec<String> {
        self.probed().1.iter().cloned().collect()
    }

    fn start(&mut self) -> anyhow::Result<()> {
        if self.started.is_some() {
            bail!("monitor counters: started twice");
        }
        let hw = self.probed().0;
        let cpus = online_cpus()?;
        self.open.clear();
        for c in HARDWARE.iter().filter(|_| hw).chain(SOFTWARE) {
            // A counter one CPU refuses is left out rather than counted on
            // some CPUs only: the total would mean something else.
            let fds: std::io::Result<Vec<OwnedFd>> = cpus.iter().map(|&cpu| open(c, cpu)).collect();
            if let Ok(fds) = fds {
                self.open.push((c, fds));
            }
        }
        for (_, fds) in &self.open {
            for fd in fds {
                ioctl(fd, PERF_EVENT_IOC_ENABLE);
            }
        }
        self.started = Some(Instant::now());
        Ok(())
    }

    fn stop(&mut self) -> anyhow::Result<MonitorData> {
        let Some(t0) = self.started.take() else {
            bail!("monitor counters: stopped without start");
        };
        let cpu0 = super::sampler::thread_cpu_s();
        for (_, fds) in &self.open {
            for fd in fds {
                ioctl(fd, PERF_EVENT_IOC_DISABLE);
            }
        }
        let wall = t0.elapsed().as_secs_f64();
        let mut summaries = Vec::new();
        let mut totals = std::collections::HashMap::new();
        for (c, fds) in self.open.drain(..) {
            let total: Option<u64> = fds.iter().map(read_count).sum();
            if let Some(total) = total {
                totals.insert(c.name, total as f64);
                summaries.push((
                    MetricSpec::new(&format!("counters.{}", c.name), c.unit, Direction::Lower),
                    total as f64,
                ));
            }
        } // the fds close here: nothing stays open between runs
        if let (Some(cy), Some(ins)) = (totals.get("cycles"), totals.get("instructions")) {
            if *cy > 0.0 {
                summaries.push((
                    MetricSpec::new("counters.ipc", "instructions/cycle", Direction::Higher),
                    ins / cy,
                ));
            }
        }
        Ok(MonitorData {
            series: Vec::new(),
            summaries,
            profile: None,
            self_cpu_s: super::sampler::thread_cpu_s() - cpu0,
            wall_s: wall,
        })
    }
}
