//! One step of the sweep: one transport, one buffer size, one volume.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::sink::{Sink, SinkTarget};
use super::tracefs::Tracefs;
use super::Kind;

// The shared part lives in `pair`, below the transports; re-exported so that
// `transport::step::{StepParams, run_pair, ...}` keeps working.
pub use super::pair::{cvt, poll_in, run_pair, stop_check, Raw, StepParams};

/// One reported step (one raw-data block).
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    pub transport: String,
    pub record_size: usize,
    /// Buffer in bytes (see [`StepParams::buffer`]).
    pub buffer: u64,
    /// Bytes the producer was asked to write.
    pub volume: u64,
    /// "file" or "null".
    pub sink: String,
    /// Records the producer wrote (attempted).
    pub written: u64,
    /// Records the consumer received.
    pub read: u64,
    /// written - read: records lost.
    pub dropped: u64,
    /// The transport's own drop counter, for cross-checking `dropped`.
    pub kernel_dropped: Option<u64>,
    pub detail: String,
    /// Producer thread CPU time in ns (exact total, split user:system in
    /// the proportion sampled by getrusage).
    pub user_ns: u64,
    pub sys_ns: u64,
    /// (user + system CPU of the producer) / records written.
    pub cpu_ns_per_record: f64,
    /// From the first write until the consumer drained the last record.
    pub wall_s: f64,
    /// volume / wall, MB = 10^6 bytes (the whole volume, dropped records
    /// included, as in 2005).
    pub mb_per_s: f64,
    pub sink_bytes: u64,
    /// This step repeats the previous volume with a doubled buffer.
    pub retry: bool,
    /// Set when the transport is not offered here; numbers are then zero.
    pub skipped: Option<String>,
}

impl StepResult {
    pub fn skipped(kind: Kind, record_size: usize, reason: String) -> StepResult {
        StepResult {
            transport: kind.name().into(),
            record_size,
            buffer: 0,
            volume: 0,
            sink: String::new(),
            written: 0,
            read: 0,
            dropped: 0,
            kernel_dropped: None,
            detail: String::new(),
            user_ns: 0,
            sys_ns: 0,
            cpu_ns_per_record: 0.0,
            wall_s: 0.0,
            mb_per_s: 0.0,
            sink_bytes: 0,
            retry: false,
            skipped: Some(reason),
        }
    }
}

/// Shared state a step may need (the tracefs mount, kept across steps).
#[derive(Default)]
pub struct StepEnv {
    pub tracefs: Option<Tracefs>,
}

/// Run one step. `cancel` is the user's Ctrl-C flag.
pub fn run_step(p: &StepParams, env: &StepEnv, cancel: &AtomicBool) -> anyhow::Result<StepResult> {
    let name = format!(
        "sysdelta-transport-{}-{}-{}.out",
        p.kind.name(),
        std::process::id(),
        p.index
    );
    let mut sink = Sink::create(&p.sink, &name, p.keep)?;
    let raw = match p.kind {
        Kind::Pipe => super::sockets::run_pipe(p, &mut sink, cancel)?,
        Kind::UnixDgram => super::sockets::run_unix_dgram(p, &mut sink, cancel)?,
        Kind::Netlink => super::netlink::run(p, &mut sink, cancel)?,
        Kind::Ftrace => {
            let fs = env
                .tracefs
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("ftrace step without a tracefs mount"))?;
            super::ftrace::run(p, fs, &mut sink, cancel)?
        }
        Kind::Perf => {
            let fs = env
                .tracefs
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("perf step without a tracefs mount"))?;
            super::perf::run(p, fs, &mut sink, cancel)?
        }
    };
    if cancel.load(Ordering::Relaxed) {
        anyhow::bail!("interrupted");
    }
    if let Some(d) = p.deadline {
        if Instant::now() > d {
            anyhow::bail!("{} step exceeded its time limit", p.kind);
        }
    }
    let written = raw.produced.attempted;
    let wall = raw.ended.saturating_duration_since(raw.produced.started);
    let wall_s = wall.as_secs_f64().max(1e-9);
    let cpu = raw.produced.cpu;
    let (user, system) = cpu.split();
    Ok(StepResult {
        transport: p.kind.name().into(),
        record_size: p.record_size,
        buffer: p.buffer,
        volume: p.volume,
        sink: match p.sink {
            SinkTarget::Null => "null".into(),
            SinkTarget::Dir(_) => "file".into(),
        },
        written,
        read: raw.read,
        dropped: written.saturating_sub(raw.read),
        kernel_dropped: raw.kernel_dropped,
        detail: raw.detail,
        user_ns: user.as_nanos() as u64,
        sys_ns: system.as_nanos() as u64,
        cpu_ns_per_record: cpu.total().as_nanos() as f64 / written.max(1) as f64,
        wall_s,
        mb_per_s: p.volume as f64 / 1e6 / wall_s,
        sink_bytes: raw.sink_bytes,
        retry: false,
        skipped: None,
    })
}
