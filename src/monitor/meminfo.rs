//! The meminfo monitor: a snapshot of every /proc/meminfo field per
//! interval, one series per field (kB fields in KiB, HugePages_* counts in
//! pages), plus the run's lowest MemAvailable and highest swap use.

use std::time::Duration;

use anyhow::bail;

use super::procfs;
use super::sampler::{Sample, SamplerThread};
use super::{Monitor, MonitorData, Series};
use crate::metric::{Direction, MetricSpec};

struct Reader {
    /// Field names and units in file order, from the first good read.
    fields: Vec<(String, bool)>,
    /// One row per sample: (t, values in `fields` order).
    rows: Vec<(f64, Vec<u64>)>,
    buf: String,
    errors: u64,
}

impl Sample for Reader {
    fn sample(&mut self, t: f64) {
        if procfs::read_into("/proc/meminfo", &mut self.buf).is_err() {
            self.errors += 1;
            return;
        }
        let parsed = procfs::parse_meminfo(&self.buf);
        if self.fields.is_empty() {
            self.fields = parsed.iter().map(|f| (f.name.clone(), f.kb)).collect();
        }
        // Fields are matched by position, checked by name: the set of
        // fields does not change while the kernel runs.
        let mut row = Vec::with_capacity(self.fields.len());
        for (i, (name, _)) in self.fields.iter().enumerate() {
            let v = match parsed.get(i) {
                Some(f) if &f.name == name => f.value,
                _ => parsed
                    .iter()
                    .find(|f| &f.name == name)
                    .map(|f| f.value)
                    .unwrap_or(0),
            };
            row.push(v);
        }
        self.rows.push((t, row));
    }
}

pub struct MeminfoMonitor {
    interval: Duration,
    thread: Option<SamplerThread<Reader>>,
}

impl MeminfoMonitor {
    pub fn new(interval: Duration) -> Self {
        MeminfoMonitor {
            interval,
            thread: None,
        }
    }
}

impl Monitor for MeminfoMonitor {
    fn name(&self) -> &str {
        "meminfo"
    }

    fn preflight(&self) -> Vec<String> {
        let mut buf = String::new();
        match procfs::read_into("/proc/meminfo", &mut buf) {
            Ok(()) => Vec::new(),
            Err(e) => vec![format!("monitor meminfo: cannot read /proc/meminfo: {e}")],
        }
    }

    fn start(&mut self) -> anyhow::Result<()> {
        if self.thread.is_some() {
            bail!("monitor meminfo: started twice");
        }
        let r = Reader {
            fields: Vec::new(),
            rows: Vec::with_capacity(1024),
            buf: String::with_capacity(4096),
            errors: 0,
        };
        self.thread = Some(SamplerThread::spawn(r, self.interval, "meminfo")?);
        Ok(())
    }

    fn stop(&mut self) -> anyhow::Result<MonitorData> {
        let Some(t) = self.thread.take() else {
            bail!("monitor meminfo: stopped without start");
        };
        let (r, cpu, wall) = t.stop()?;
        if r.rows.is_empty() {
            bail!(
                "monitor meminfo: all {} reads of /proc/meminfo failed",
                r.errors
            );
        }
        let series = r
            .fields
            .iter()
            .enumerate()
            .map(|(i, (name, kb))| Series {
                name: format!("meminfo.{name}"),
                unit: if *kb { "KiB" } else { "pages" }.to_string(),
                t_offsets_s: r.rows.iter().map(|(t, _)| *t).collect(),
                values: r.rows.iter().map(|(_, v)| v[i] as f64).collect(),
            })
            .collect::<Vec<_>>();
        let col = |n: &str| series.iter().find(|s| s.name == format!("meminfo.{n}"));
        let mut summaries = Vec::new();
        if let Some(s) = col("MemAvailable") {
            let min = s.values.iter().cloned().fold(f64::INFINITY, f64::min);
            summaries.push((
                MetricSpec::new("meminfo.memavailable_min_kb", "KiB", Direction::Higher),
                min,
            ));
        }
        if let (Some(tot), Some(free)) = (col("SwapTotal"), col("SwapFree")) {
            let max = tot
                .values
                .iter()
                .zip(&free.values)
                .map(|(t, f)| t - f)
                .fold(0.0, f64::max);
            summaries.push((
                MetricSpec::new("meminfo.swap_used_max_kb", "KiB", Direction::Lower),
                max,
            ));
        }
        Ok(MonitorData {
            series,
            summaries,
            profile: None,
            self_cpu_s: cpu,
            wall_s: wall,
        })
    }
}
