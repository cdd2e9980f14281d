//! The ramp of the 2005 study: for each transport, volumes rise step by step;
//! when a step drops records the buffer doubles and the step repeats, up to a
//! buffer limit (past it the sweep moves on, with the drops reported).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::sink::SinkTarget;
use super::step::{run_step, StepEnv, StepParams, StepResult};
use super::tracefs::{Tracefs, TracefsError};
use super::{bad_input, check_record_size, check_volume, cpu, perf, BufferRefused, Kind};

/// Everything a sweep needs.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    pub transports: Vec<Kind>,
    /// The user named the transports: a missing permission is then an error,
    /// not a skip.
    pub transports_explicit: bool,
    pub record_size: usize,
    /// Volumes in bytes, in order.
    pub volumes: Vec<u64>,
    /// First buffer size in bytes.
    pub start_buffer: u64,
    /// Largest buffer the doubling may reach.
    pub max_buffer: u64,
    pub sink: SinkTarget,
    /// Keep the consumer's files.
    pub keep: bool,
    /// CPUs to use (None: this process's affinity).
    pub cpus: Option<Vec<usize>>,
    /// Print one line per step to stderr while running.
    pub progress: bool,
    /// Start each consumer only after its producer finished, so every step
    /// whose volume exceeds the buffer drops (see `StepParams`). Tests only.
    pub hold_consumer: bool,
}

/// Volumes from `from` to `to` by `step` (bytes).
pub fn ramp(from: u64, to: u64, step: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut x = from;
    while x <= to && step > 0 {
        v.push(x);
        x += step;
    }
    v
}

impl SweepOptions {
    /// The 2005 defaults: 100-byte records, 100 MB to 1 GB by 100 MB,
    /// buffers from 1 MiB doubling up to 64 MiB, into a file in the temp dir.
    pub fn classic() -> SweepOptions {
        SweepOptions {
            transports: vec![
                Kind::Ftrace,
                Kind::Netlink,
                Kind::UnixDgram,
                Kind::Pipe,
                Kind::Perf,
            ],
            transports_explicit: false,
            record_size: 100,
            volumes: ramp(100_000_000, 1_000_000_000, 100_000_000),
            start_buffer: 1 << 20,
            max_buffer: 64 << 20,
            sink: SinkTarget::Dir(std::env::temp_dir()),
            keep: false,
            cpus: None,
            progress: false,
            hold_consumer: false,
        }
    }

    /// The same ramp scaled down 20x (5 MB to 50 MB by 5 MB).
    pub fn quick() -> SweepOptions {
        SweepOptions {
            volumes: ramp(5_000_000, 50_000_000, 5_000_000),
            ..SweepOptions::classic()
        }
    }

    /// Reject bad input before anything is changed.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.transports.is_empty() {
            return Err(bad_input("no transport given"));
        }
        for &k in &self.transports {
            check_record_size(k, self.record_size)?;
        }
        if self.volumes.is_empty() {
            return Err(bad_input("empty volume ramp"));
        }
        for &v in &self.volumes {
            check_volume(v, self.record_size)?;
        }
        if self.start_buffer == 0 {
            return Err(bad_input("starting buffer size 0"));
        }
        if self.max_buffer < self.start_buffer {
            return Err(bad_input(format!(
                "buffer limit {} is below the starting buffer {}",
                self.max_buffer, self.start_buffer
            )));
        }
        if let SinkTarget::Dir(d) = &self.sink {
            if !d.is_dir() {
                return Err(bad_input(format!(
                    "consumer directory {} does not exist",
                    d.display()
                )));
            }
        }
        if let Some(c) = &self.cpus {
            if c.is_empty() {
                return Err(bad_input("empty CPU list"));
            }
        }
        Ok(())
    }
}

/// Why a transport cannot run here (None: it can). Errors are bad input
/// (no permission for tracefs when ftrace was asked for by name).
fn availability(
    kind: Kind,
    opts: &SweepOptions,
    env: &mut StepEnv,
    tracefs_err: &mut Option<TracefsError>,
) -> anyhow::Result<Option<String>> {
    if matches!(kind, Kind::Ftrace | Kind::Perf) && env.tracefs.is_none() && tracefs_err.is_none() {
        match Tracefs::open() {
            Ok(t) => env.tracefs = Some(t),
            Err(e) => *tracefs_err = Some(e),
        }
    }
    match kind {
        Kind::Ftrace | Kind::Perf => {
            if let Some(e) = tracefs_err {
                if matches!(e, TracefsError::NoPermission(_)) && opts.transports_explicit {
                    return Err(bad_input(e.to_string()));
                }
                return Ok(Some(e.to_string()));
            }
            if kind == Kind::Perf {
                let fs = env.tracefs.as_ref().expect("tracefs opened above");
                return Ok(perf::probe(fs).err().map(|e| e.to_string()));
            }
            Ok(None)
        }
        Kind::Netlink => Ok(super::netlink::probe().err().map(|e| e.to_string())),
        Kind::UnixDgram | Kind::Pipe => Ok(None),
    }
}

/// Run the whole sweep. Every system change (ftrace instance, private
/// tracefs mount, consumer files) is undone before this returns, on every
/// path; `cancel` (Ctrl-C) stops the current step promptly.
pub fn run_sweep(opts: &SweepOptions, cancel: &AtomicBool) -> anyhow::Result<Vec<StepResult>> {
    opts.validate()?;
    let cpus = opts.cpus.clone().unwrap_or_else(cpu::allowed_cpus);
    let mut env = StepEnv::default();
    let mut tracefs_err = None;
    let mut out = Vec::new();
    let mut index = 0;
    for &kind in &opts.transports {
        if let Some(reason) = availability(kind, opts, &mut env, &mut tracefs_err)? {
            if opts.progress {
                eprintln!("sysdelta transport: {kind} skipped: {reason}");
            }
            out.push(StepResult::skipped(kind, opts.record_size, reason));
            continue;
        }
        let mut buffer = opts.start_buffer;
        // Lowered when the kernel refuses a buffer size.
        let mut limit = opts.max_buffer;
        for &volume in &opts.volumes {
            let mut retry = false;
            loop {
                if cancel.load(Ordering::Relaxed) {
                    anyhow::bail!("interrupted");
                }
                let p = StepParams {
                    kind,
                    record_size: opts.record_size,
                    volume,
                    buffer,
                    sink: opts.sink.clone(),
                    keep: opts.keep,
                    cpus: cpus.clone(),
                    deadline: None,
                    index,
                    hold_consumer: opts.hold_consumer,
                };
                index += 1;
                let t0 = Instant::now();
                let mut r = match run_step(&p, &env, cancel) {
                    Ok(r) => r,
                    Err(e) if retry && e.is::<BufferRefused>() => {
                        // Stay at the largest size the kernel allowed; the
                        // drops of the previous step stand.
                        if opts.progress {
                            eprintln!(
                                "sysdelta transport: {kind}: {e}; staying at {}",
                                super::fmt_buffer(buffer / 2)
                            );
                        }
                        if let Some(last) = out.last_mut() {
                            let last: &mut StepResult = last;
                            last.detail
                                .push_str(&format!("; larger buffer refused: {e}"));
                        }
                        buffer /= 2;
                        limit = buffer;
                        break;
                    }
                    Err(e) if e.is::<BufferRefused>() => {
                        return Err(bad_input(format!("{kind}: starting buffer: {e}")));
                    }
                    Err(e) => return Err(e),
                };
                r.retry = retry;
                if opts.progress {
                    eprintln!(
                        "sysdelta transport: {kind} {} buffer {}: {:.1} MB/s, {:.0} ns/record, {} dropped ({:.1}s)",
                        super::fmt_volume(volume),
                        super::fmt_buffer(buffer),
                        r.mb_per_s,
                        r.cpu_ns_per_record,
                        r.dropped,
                        t0.elapsed().as_secs_f64()
                    );
                }
                let dropped = r.dropped > 0;
                out.push(r);
                if dropped && buffer * 2 <= limit {
                    buffer *= 2;
                    retry = true;
                    continue;
                }
                break;
            }
        }
    }
    Ok(out)
}
