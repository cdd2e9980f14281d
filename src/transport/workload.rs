//! `builtin = "transport"`: one run is one sweep step (a fixed volume and
//! buffer) per transport.
//!
//! Params (all optional): `transports` (array or comma string; default
//! ftrace, netlink, unix-dgram, pipe; perf may be added), `record_size` (100), `volume_mb`
//! (10, MB = 10^6 bytes), `buffer_kb` (1024), `sink` ("file" in the
//! experiment's scratch directory, or "null").
//!
//! Metrics per transport `<t>` (`unix_dgram` for unix-dgram):
//! `<t>.mb_per_s`, `<t>.cpu_ns_per_record`, `<t>.dropped`.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::metric::{Direction, MetricSpec};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

use super::sink::SinkTarget;
use super::step::{run_step, StepEnv, StepParams};
use super::tracefs::Tracefs;
use super::{bad_input, check_record_size, check_volume, cpu, parse_kinds, Kind};

pub struct TransportWorkload {
    pub transports: Vec<Kind>,
    pub record_size: usize,
    pub volume: u64,
    pub buffer: u64,
    pub null_sink: bool,
    env: StepEnv,
    runs: usize,
}

/// The most one run may send: a terabyte (10^6 MB).
const MAX_VOLUME_MB: u64 = 1_000_000;
/// The largest buffer: 1 GiB.
const MAX_BUFFER_KB: u64 = 1 << 20;

fn get_u64(t: &toml::Table, key: &str, default: u64) -> anyhow::Result<u64> {
    match t.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_integer()
            .filter(|&i| i >= 0)
            .map(|i| i as u64)
            .or_else(|| {
                v.as_float()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| {
                bad_input(format!(
                    "transport workload: {key} must be a non-negative integer"
                ))
            }),
    }
}

impl TransportWorkload {
    /// Build from the plan's params table (see the module doc).
    pub fn from_params(params: &toml::Value) -> anyhow::Result<TransportWorkload> {
        let empty = toml::Table::new();
        let t = match params {
            toml::Value::Table(t) => t,
            _ => &empty,
        };
        for key in t.keys() {
            if ![
                "transports",
                "record_size",
                "volume_mb",
                "buffer_kb",
                "sink",
            ]
            .contains(&key.as_str())
            {
                return Err(bad_input(format!(
                    "transport workload: unknown parameter '{key}' (known: transports, record_size, volume_mb, buffer_kb, sink)"
                )));
            }
        }
        let transports = match t.get("transports") {
            None => vec![Kind::Ftrace, Kind::Netlink, Kind::UnixDgram, Kind::Pipe],
            Some(toml::Value::String(s)) => parse_kinds(s)?,
            Some(toml::Value::Array(a)) => {
                let names: Vec<String> = a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| bad_input("transport workload: transports must be strings"))?;
                parse_kinds(&names.join(","))?
            }
            Some(_) => {
                return Err(bad_input(
                    "transport workload: transports must be a list of names",
                ))
            }
        };
        let record_size = get_u64(t, "record_size", 100)?.min(usize::MAX as u64) as usize;
        let volume = get_u64(t, "volume_mb", 10)?;
        if volume > MAX_VOLUME_MB {
            return Err(bad_input(format!(
                "transport workload: volume_mb is too large (at most {MAX_VOLUME_MB}), got {volume}"
            )));
        }
        let volume = volume * 1_000_000;
        let buffer = get_u64(t, "buffer_kb", 1024)?;
        if buffer > MAX_BUFFER_KB {
            return Err(bad_input(format!(
                "transport workload: buffer_kb is too large (at most {MAX_BUFFER_KB}), got {buffer}"
            )));
        }
        let buffer = buffer * 1024;
        let null_sink = match t.get("sink").and_then(|v| v.as_str()) {
            None | Some("file") => false,
            Some("null") => true,
            Some(o) => {
                return Err(bad_input(format!(
                    "transport workload: sink '{o}' (use file or null)"
                )))
            }
        };
        for &k in &transports {
            check_record_size(k, record_size)?;
        }
        check_volume(volume, record_size)?;
        if buffer == 0 {
            return Err(bad_input("transport workload: buffer_kb must be positive"));
        }
        Ok(TransportWorkload {
            transports,
            record_size,
            volume,
            buffer,
            null_sink,
            env: StepEnv::default(),
            runs: 0,
        })
    }
}

impl Workload for TransportWorkload {
    fn metrics(&self) -> Vec<MetricSpec> {
        self.transports
            .iter()
            .flat_map(|k| {
                let p = k.metric_prefix();
                [
                    MetricSpec::new(&format!("{p}.mb_per_s"), "MB/s", Direction::Higher),
                    MetricSpec::new(&format!("{p}.cpu_ns_per_record"), "ns", Direction::Lower),
                    MetricSpec::new(&format!("{p}.dropped"), "records", Direction::Lower),
                ]
            })
            .collect()
    }

    fn prepare(&mut self, _scratch: &Path) -> anyhow::Result<()> {
        if self.transports.contains(&Kind::Ftrace) || self.transports.contains(&Kind::Perf) {
            self.env.tracefs = Some(Tracefs::open().map_err(|e| bad_input(e.to_string()))?);
        }
        if self.transports.contains(&Kind::Perf) {
            let fs = self.env.tracefs.as_ref().expect("opened above");
            super::perf::probe(fs).map_err(|e| anyhow::anyhow!("perf: {e}"))?;
        }
        if self.transports.contains(&Kind::Netlink) {
            super::netlink::probe().map_err(crate::error::Error::into_failure)?;
        }
        Ok(())
    }

    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        let started = Instant::now();
        let cpus = ctx
            .cpus
            .map(<[usize]>::to_vec)
            .unwrap_or_else(cpu::allowed_cpus);
        let mut samples = Vec::new();
        for &kind in &self.transports {
            let p = StepParams {
                kind,
                record_size: self.record_size,
                volume: self.volume,
                buffer: self.buffer,
                sink: if self.null_sink {
                    SinkTarget::Null
                } else {
                    SinkTarget::Dir(ctx.scratch.to_path_buf())
                },
                keep: false,
                cpus: cpus.clone(),
                deadline: Some(started + ctx.timeout),
                index: self.runs,
                hold_consumer: false,
            };
            self.runs += 1;
            let cancel: &AtomicBool = ctx.cancel;
            match run_step(&p, &self.env, cancel) {
                Ok(r) => {
                    let pre = kind.metric_prefix();
                    samples.push(MetricSamples {
                        metric: format!("{pre}.mb_per_s"),
                        values: vec![r.mb_per_s],
                    });
                    samples.push(MetricSamples {
                        metric: format!("{pre}.cpu_ns_per_record"),
                        values: vec![r.cpu_ns_per_record],
                    });
                    samples.push(MetricSamples {
                        metric: format!("{pre}.dropped"),
                        values: vec![r.dropped as f64],
                    });
                }
                Err(e) => {
                    return RunOutcome::Failed {
                        reason: format!("{kind}: {e:#}"),
                        stderr_tail: String::new(),
                        exit_code: None,
                    }
                }
            }
        }
        RunOutcome::Ok(samples)
    }

    fn cleanup(&mut self) {
        // Unmounts a tracefs we mounted ourselves.
        self.env.tracefs = None;
    }
}
