//! Micro benchmarks of OS primitives, grouped and named as in the LMbench
//! 2.0 summary (processes, select, context switch, local communication
//! latency and bandwidth, file system and VM, memory latency), plus SysV
//! semaphores (ping-pong and semring) and the physical floor (ENOSYS).
//!
//! Entry points: [`Selection::parse`] for the filter, [`run_suite`] to
//! measure, [`table::print_lmbench_tables`] to print, [`workload`] for the
//! `builtin = "micro"` workload and [`cli`] for `sysdelta micro`. Each
//! benchmark's module doc says what one operation is and what is
//! subtracted; the harness is in [`harness`].

pub mod against;
pub mod catalog;
pub mod child;
pub mod cli;
pub mod ctx;
pub mod fdsel;
pub mod fs;
pub mod harness;
pub mod ipc;
pub mod mem;
pub mod net;
pub mod pin;
pub mod process;
pub mod selection;
pub mod sem;
pub mod signal;
pub mod syscall;
pub mod table;
pub mod vm;
pub mod workload;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::metric::Direction;

pub use catalog::{Entry, Kind, RingMetric, Table};
pub use harness::{Cancelled, SamplePlan};
pub use pin::Pinning;
pub use selection::Selection;
pub use sem::SemRingParams;

/// One measured metric of one suite run: every sample kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MicroResult {
    /// Summary group: proc, select, ctx, lat, bw, fs, vm, mem, sem, floor.
    pub group: String,
    /// Stable metric name, e.g. "proc.null_call", "lat.pipe.same_cpu".
    pub name: String,
    /// Column header text as in the LMbench summary, e.g. "null call".
    pub column: String,
    pub unit: String,
    pub direction: Direction,
    pub pinning: Pinning,
    /// Every kept sample, in the unit, in measurement order.
    pub samples: Vec<f64>,
    /// Median of `samples`: the run's value.
    pub median: f64,
    /// What exactly was measured here (sizes, subtracted overhead).
    pub detail: String,
}

/// A metric was measured, or could not be measured here (and why).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum MicroOutcome {
    Measured(MicroResult),
    Skipped { name: String, reason: String },
}

impl MicroOutcome {
    pub fn name(&self) -> &str {
        match self {
            MicroOutcome::Measured(r) => &r.name,
            MicroOutcome::Skipped { name, .. } => name,
        }
    }
}

/// Why a benchmark cannot run here (cross-cpu on one CPU, no L3, no SysV
/// IPC): its reason to be skipped, not a failure of the suite.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// How to run the suite.
/// The most samples a metric keeps (`samples`).
pub const MAX_SAMPLES: usize = 1_000_000;

#[derive(Clone, Debug)]
pub struct MicroOptions {
    /// Kept samples per metric (11 to [`MAX_SAMPLES`]).
    pub samples: usize,
    /// Minimum duration of one sample (at least 10 ms).
    pub min_sample: Duration,
    /// Quick mode (smaller main-memory chase, fewer semring laps).
    pub quick: bool,
    /// Where scratch files go (a private subdirectory is made and removed).
    pub tmpdir: PathBuf,
    /// Placement of benchmarks that have no fixed pinning (everything but
    /// the `.same_cpu`/`.cross_cpu` IPC variants): unpinned or same-cpu.
    pub pin: Pinning,
    /// Restrict the whole suite to these CPUs.
    pub cpus: Option<Vec<usize>>,
    /// Stop with [`Cancelled`] (timed_out) after this instant.
    pub deadline: Option<Instant>,
    pub semring: SemRingParams,
    /// Print one progress line per metric to stderr.
    pub progress: bool,
    /// Precision mode: sample length and count chosen per metric from a
    /// target CoV and a time budget; None: `samples` of `min_sample`.
    pub precision: Option<PrecisionOptions>,
}

/// Precision mode as the user asks for it (`--target-cov`, `--budget`, and
/// `--min-sample-ms` to fix the sample length).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrecisionOptions {
    /// Target CoV of each metric's run value, as a fraction (0 < x <= 1).
    pub target_cov: f64,
    /// Time for the kept samples of the whole selection, shared equally
    /// among its metrics (calibration and the pilot come on top).
    pub budget: Duration,
    /// Keep `min_sample` as the sample length and choose only the count.
    pub fix_sample: bool,
}

impl MicroOptions {
    /// The full suite: 21 samples of at least 20 ms.
    pub fn full() -> MicroOptions {
        MicroOptions {
            samples: 21,
            min_sample: Duration::from_millis(20),
            quick: false,
            tmpdir: std::env::temp_dir(),
            pin: Pinning::Unpinned,
            cpus: None,
            deadline: None,
            semring: SemRingParams {
                groups: 4,
                sems: 8,
                laps: 1000,
            },
            progress: false,
            precision: None,
        }
    }

    /// Quick mode: 11 samples of at least 10 ms.
    pub fn quick() -> MicroOptions {
        MicroOptions {
            samples: 11,
            min_sample: Duration::from_millis(10),
            quick: true,
            semring: SemRingParams {
                groups: 2,
                sems: 8,
                laps: 500,
            },
            ..MicroOptions::full()
        }
    }

    /// Check the options; the error is one line for the user.
    pub fn validate(&self) -> Result<(), Error> {
        if self.samples < 11 {
            return Err(Error::bad(format!(
                "micro: samples must be at least 11, got {}",
                self.samples
            )));
        }
        // Each metric keeps all its samples in memory.
        if self.samples > MAX_SAMPLES {
            return Err(Error::bad(format!(
                "micro: samples is too large (at most {MAX_SAMPLES}), got {}",
                self.samples
            )));
        }
        if self.min_sample < Duration::from_millis(10) {
            return Err(Error::bad(format!(
                "micro: minimum sample time must be at least 10 ms, got {:?}",
                self.min_sample
            )));
        }
        if self.pin == Pinning::CrossCpu {
            return Err(Error::bad(
                "micro: --pin cross-cpu applies only to two-process benchmarks, which always run both same-cpu and cross-cpu; use unpinned or same-cpu",
            ));
        }
        if let Some(c) = &self.cpus {
            if c.is_empty() {
                return Err(Error::bad("micro: empty CPU list"));
            }
        }
        if let Some(p) = &self.precision {
            if !(p.target_cov > 0.0 && p.target_cov <= 1.0) {
                return Err(Error::bad(format!(
                    "micro: target CoV must be above 0 % and at most 100 %, got {} %",
                    p.target_cov * 100.0
                )));
            }
            if p.budget.is_zero() {
                return Err(Error::bad("micro: the time budget must be positive"));
            }
        }
        self.semring
            .validate()
            .map_err(|e| Error::bad(format!("micro: {e}")))
    }
}

/// What a benchmark function hands back.
#[derive(Clone, Debug)]
pub enum BenchOut {
    /// Values in the metric's unit, and what exactly was measured.
    Samples {
        values: Vec<f64>,
        detail: String,
    },
    Skip(String),
}

/// ns per op -> us per op.
pub(crate) fn us(ns: Vec<f64>, detail: &str) -> BenchOut {
    BenchOut::Samples {
        values: ns.into_iter().map(|x| x / 1e3).collect(),
        detail: detail.to_string(),
    }
}

/// Bytes in the MB of every MB/s figure: 10^6, as LMbench 3
/// (`#define MB (1000*1000.0)` in its lib_timing.c), not 2^20.
pub const MB: f64 = 1e6;

/// ns per op of `bytes` -> MB/s (MB = [`MB`] = 10^6 bytes).
pub(crate) fn mbs(ns: Vec<f64>, bytes: usize, detail: &str) -> BenchOut {
    BenchOut::Samples {
        values: ns
            .into_iter()
            .map(|x| bytes as f64 / (x.max(1e-9) * 1e-9) / MB)
            .collect(),
        detail: detail.to_string(),
    }
}

/// What a benchmark can use.
pub struct Env<'a> {
    pub h: harness::Harness<'a>,
    /// Private scratch directory of this suite run.
    pub tmp: &'a Path,
    pub quick: bool,
    /// Context-switch hop overhead (ns) per data size, measured once per run.
    pub ctx_overhead: std::cell::RefCell<std::collections::HashMap<usize, f64>>,
}

/// A private scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(base: &Path) -> Result<Scratch, Error> {
        let bad = |e: std::io::Error| {
            Error::bad(format!(
                "micro: temp dir {} is not usable: {e}",
                base.display()
            ))
        };
        let dir = base.join(format!(
            "sysdelta-micro-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir(&dir).map_err(bad)?;
        let probe = dir.join("probe");
        if let Err(e) = std::fs::write(&probe, b"x") {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(bad(e));
        }
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Check what the selection needs before anything runs.
pub fn preflight(sel: &Selection, opts: &MicroOptions) -> Result<(), Error> {
    opts.validate()?;
    if let Some(p) = &opts.precision {
        let n = sel.names().len().max(1) as u32;
        let least = opts.min_sample * opts.samples as u32;
        if p.budget / n < least {
            return Err(Error::bad(format!(
                "micro: a budget of {:.1} s is too small for {n} metric(s): each needs at least {} samples of {} ms; give at least {:.1} s",
                p.budget.as_secs_f64(),
                opts.samples,
                opts.min_sample.as_millis(),
                (least * n).as_secs_f64()
            )));
        }
    }
    if sel.contains("proc.fork_sh") && !Path::new("/bin/sh").exists() {
        return Err(Error::bad(
            "micro: proc.fork_sh needs /bin/sh, which does not exist here (deselect it with a filter)",
        ));
    }
    if let Some(c) = &opts.cpus {
        let allowed = pin::allowed_cpus().unwrap_or_default();
        if let Some(bad) = c.iter().find(|x| !allowed.contains(x)) {
            return Err(Error::bad(format!(
                "micro: CPU {bad} is not available (allowed: {allowed:?})"
            )));
        }
    }
    Ok(())
}

/// Run the selected benchmarks. Returns one outcome per selected metric, in
/// catalogue order; a metric that cannot run here is `Skipped` with the
/// reason. Errors: [`Error::BadInput`] for bad options or an unusable temp dir,
/// [`Cancelled`] when `cancel` was set (all children are reaped and scratch
/// files removed before this returns).
pub fn run_suite(
    sel: &Selection,
    opts: &MicroOptions,
    cancel: &AtomicBool,
) -> anyhow::Result<Vec<MicroOutcome>> {
    Ok(run_suite_with_plans(sel, opts, cancel)?
        .into_iter()
        .map(|(o, _)| o)
        .collect())
}

/// [`run_suite`], with each outcome's sample plan in precision mode (None
/// outside it, and for metrics whose operation is a fixed workload:
/// semring, file create/delete, the per-fault page fault).
pub fn run_suite_with_plans(
    sel: &Selection,
    opts: &MicroOptions,
    cancel: &AtomicBool,
) -> anyhow::Result<Vec<(MicroOutcome, Option<SamplePlan>)>> {
    preflight(sel, opts)?;
    let scratch = Scratch::new(&opts.tmpdir)?;
    let _cpus = match &opts.cpus {
        Some(c) => Some(pin::AffinityGuard::set(c)?),
        None => None,
    };
    let empty_loop_ns = harness::empty_loop_ns(cancel)?;
    let env = Env {
        h: harness::Harness {
            samples: opts.samples,
            min_sample: opts.min_sample,
            empty_loop_ns,
            cancel,
            deadline: opts.deadline,
            precision: opts.precision.map(|p| harness::Precision {
                target_cov: p.target_cov,
                budget_per_metric: p.budget / sel.names().len().max(1) as u32,
                fixed_sample: p.fix_sample.then_some(opts.min_sample),
            }),
            plans: Default::default(),
        },
        tmp: &scratch.0,
        quick: opts.quick,
        ctx_overhead: Default::default(),
    };
    let mut out = Vec::new();
    let mut ring: Option<Result<Vec<sem::RingRep>, Unavailable>> = None;
    // Create and delete of one size are measured together (fs::create_delete).
    let mut fs_pairs: std::collections::HashMap<usize, anyhow::Result<(BenchOut, BenchOut)>> =
        std::collections::HashMap::new();
    for e in sel.entries() {
        env.h.check()?;
        let pinning = e.pinning.unwrap_or(opts.pin);
        if opts.progress {
            eprintln!("micro: {} ({})", e.name, pinning.as_str());
        }
        let t = Instant::now();
        let res = if let Kind::SemRing(which) = e.kind {
            if ring.is_none() {
                ring = Some(match sem::ring(&env, opts.semring) {
                    Ok(r) => r,
                    Err(err) if err.downcast_ref::<Cancelled>().is_some() => return Err(err),
                    Err(err) => Err(Unavailable(format!("failed: {err:#}"))),
                });
            }
            Ok(match ring.as_ref() {
                Some(Ok(reps)) => BenchOut::Samples {
                    values: reps
                        .iter()
                        .map(|r| match which {
                            RingMetric::Seconds => r.seconds,
                            RingMetric::UsPerProc => r.us_per_proc,
                            RingMetric::CpuUtil => r.cpu_util,
                        })
                        .collect(),
                    detail: format!(
                        "semopbench -g {} -s {} -n {}",
                        opts.semring.groups, opts.semring.sems, opts.semring.laps
                    ),
                },
                Some(Err(r)) => BenchOut::Skip(r.0.clone()),
                None => unreachable!("ring result set above"),
            })
        } else if let Kind::Create { kb } | Kind::Delete { kb } = e.kind {
            let pair = fs_pairs
                .entry(kb)
                .or_insert_with(|| fs::create_delete(&env, kb));
            match pair {
                Ok((c, d)) => Ok(if matches!(e.kind, Kind::Create { .. }) {
                    c.clone()
                } else {
                    d.clone()
                }),
                Err(err) if err.downcast_ref::<Cancelled>().is_some() => {
                    return Err(Cancelled { timed_out: false }.into())
                }
                Err(err) => Err(anyhow::anyhow!("{err:#}")),
            }
        } else {
            run_one(&env, &e, pinning)
        };
        let outcome = match res {
            Ok(BenchOut::Samples { values, detail }) => MicroOutcome::Measured(MicroResult {
                group: e.group.to_string(),
                name: e.name.clone(),
                column: e.column(),
                unit: e.unit.to_string(),
                direction: e.direction,
                pinning,
                median: harness::median(&values),
                samples: values,
                detail,
            }),
            Ok(BenchOut::Skip(reason)) => MicroOutcome::Skipped {
                name: e.name.clone(),
                reason,
            },
            Err(err) => {
                if err.downcast_ref::<Cancelled>().is_some() {
                    return Err(err);
                }
                MicroOutcome::Skipped {
                    name: e.name.clone(),
                    reason: format!("failed: {err:#}"),
                }
            }
        };
        if opts.progress {
            match &outcome {
                MicroOutcome::Measured(r) => eprintln!(
                    "micro:   {:.4} {} ({:.2}s)",
                    r.median,
                    r.unit,
                    t.elapsed().as_secs_f64()
                ),
                MicroOutcome::Skipped { reason, .. } => eprintln!("micro:   skipped: {reason}"),
            }
        }
        // The last measurement of a metric is its own; earlier ones (the
        // send cost under a signal catch, the remap under a page fault)
        // are its subtracted parts.
        let plan = env.h.plans.borrow_mut().drain(..).next_back();
        out.push((outcome, plan));
    }
    Ok(out)
}

/// Run one (non-semring) metric with the suite-wide placement applied.
fn run_one(env: &Env, e: &Entry, pinning: Pinning) -> anyhow::Result<BenchOut> {
    // Benchmarks without their own placement run on one CPU in same-cpu mode.
    let _pin = if e.pinning.is_none() && pinning == Pinning::SameCpu {
        let c = pin::allowed_cpus()?;
        Some(pin::AffinityGuard::set(&c[..1])?)
    } else {
        None
    };
    use Kind::*;
    match e.kind {
        NullCall => syscall::null_call(env),
        NullIo => syscall::null_io(env),
        Stat => syscall::stat(env),
        Fstat => syscall::fstat(env),
        OpenClose => syscall::open_close(env),
        SigInstall => signal::install(env),
        SigHandle => signal::handle(env),
        ForkExit => process::fork_exit(env),
        ForkExec => process::fork_exec(env),
        ForkSh => process::fork_sh(env),
        Select { tcp, n } => fdsel::select(env, n, tcp),
        Ctx { procs, kb } => ctx::ctx(env, procs, kb),
        PipeLat => ipc::pipe_lat(env, pinning),
        UnixLat => ipc::unix_lat(env, pinning),
        UdpLat => net::udp_lat(env, pinning),
        TcpLat => net::tcp_lat(env, pinning),
        TcpConnect => net::tcp_connect(env),
        PipeBw => ipc::pipe_bw(env, pinning),
        UnixBw => ipc::unix_bw(env, pinning),
        TcpBw => net::tcp_bw(env, pinning),
        FileReread => fs::file_reread(env),
        MmapReread => fs::mmap_reread(env),
        BcopyLibc => mem::bandwidth(env, mem::BwKind::CopyLibc),
        BcopyHand => mem::bandwidth(env, mem::BwKind::CopyHand),
        MemRead => mem::bandwidth(env, mem::BwKind::LmRead),
        MemWrite => mem::bandwidth(env, mem::BwKind::LmWrite),
        MemReadHuge => mem::bandwidth(env, mem::BwKind::Read),
        MemWriteHuge => mem::bandwidth(env, mem::BwKind::Write),
        Create { .. } | Delete { .. } => unreachable!("create/delete are run by run_suite"),
        MmapLat => vm::mmap_lat(env),
        ProtFault => signal::prot_fault(env),
        PageFault => vm::page_fault_lmbench(env),
        FaultEach => vm::page_fault(env),
        MemLat { level } => mem::latency(env, level),
        SemPingPong => sem::pingpong(env, pinning),
        SemRing(_) => unreachable!("semring is run by run_suite"),
        Enosys => syscall::enosys(env),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mb_per_second_counts_ten_to_the_sixth_bytes() {
        // 1,000,000 bytes in 1 ms is 1000 MB/s in LMbench's MB (953.7 in MiB).
        match mbs(vec![1e6], 1_000_000, "") {
            BenchOut::Samples { values, .. } => assert!((values[0] - 1000.0).abs() < 1e-9),
            BenchOut::Skip(_) => unreachable!(),
        }
    }
}
