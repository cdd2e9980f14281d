//! The host's side of kernel configs: boot each scheduled VM, check who
//! booted, assign the boot's runs, store each run as it arrives (before the
//! guest starts the next, as for runs on the host), and turn every fault of
//! a boot (no hello, wrong kernel, panic, hang, lost channel) into a failed
//! boot with its console tail, never into a crash of the experiment.
//!
//! Every VM is journaled before it can outlive sysdelta: the boot's
//! directory (`RemovePath`) before it is made, QEMU and virtiofsd
//! (`KillProcess`) right after each is spawned; both also die with
//! sysdelta by their parent-death signal. `sysdelta restore` kills what a
//! SIGKILL left, and `--resume` boots again for the runs not stored.
//!
//! The message loop of one VM is in `serve.rs`, storing what it delivered
//! in `record.rs`; this file boots the VMs and ends each boot.

mod record;
mod serve;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::protocol::AssignedSlot;
use super::schedule::{self, BootSlot};
use super::{KernelPrep, KernelSetup};
use crate::config::journal::UndoAction;
use crate::runner::progress::Progress;
use crate::runner::{now_unix, ExecOptions, Outcome, Prepared};
use crate::store::{BootEnd, Store};
use crate::vm;

/// Poll interval of the message loop: how soon a stop request or the VM's
/// exit is seen while the guest is quiet.
const SLICE: Duration = Duration::from_millis(100);
/// Grace after a run's own timeout before a silent guest is a hung guest:
/// the guest's watchdog ends the run at its timeout and says so.
const RUN_GRACE: Duration = Duration::from_secs(30);
/// How long a guest that said `done` may take to power off.
const POWEROFF: Duration = Duration::from_secs(30);
/// Console lines kept with a failed boot.
const TAIL_LINES: usize = 64;
/// The most notes (events) and metric declarations one boot may send: a
/// guest that sends more is flooding, not measuring.
const MAX_GUEST_NOTES: usize = 10_000;

/// Why a boot failed.
struct Fault {
    reason: String,
    /// The run in flight when it happened, recorded as failed (a kernel
    /// that hangs or panics under a workload is a result).
    in_flight: Option<AssignedSlot>,
    interrupted: bool,
}

impl Fault {
    fn new(reason: impl Into<String>) -> Fault {
        Fault {
            reason: reason.into(),
            in_flight: None,
            interrupted: false,
        }
    }
}

/// Everything one experiment's boots share.
struct Session<'a> {
    store: &'a Store,
    exp: i64,
    p: &'a Prepared,
    setup: &'a KernelSetup,
    /// Initramfs by config index.
    initramfs: Vec<PathBuf>,
    opts: &'a ExecOptions<'a>,
    progress: Progress,
    declared: HashSet<(String, String)>,
    runs_done: usize,
    runs_failed: usize,
    /// Failed runs in a row, per (config, workload).
    failing: crate::runner::streaks::Streaks,
    stopped: Option<String>,
}

/// Execute the runs of kernel plan `exp` that are not yet stored.
pub fn execute(store: &Store, exp: i64, p: &mut Prepared, opts: &ExecOptions) -> Result<Outcome> {
    p.arm()?;
    let t0 = Instant::now();
    let cpu0 = crate::runner::self_cpu();
    let setup = p
        .kernels
        .clone()
        .expect("prepare checked the kernels of a kernel plan");
    let plan = &p.plan;
    store.log_runs()?;
    let gone = store.fail_running_boots(exp, "sysdelta stopped during this boot")?;
    if gone > 0 {
        store.add_event(
            exp,
            "boot",
            &format!("{gone} boot(s) were cut short when sysdelta stopped; their missing runs boot again"),
        )?;
    }
    if let Some(note) = &setup.accel_note {
        let line = format!("guests run under {}: {note}", setup.accel);
        if !store.event_messages(exp, "accel")?.contains(&line) {
            store.add_event(exp, "accel", &line)?;
        }
    }
    crate::runner::declare_metrics(store, exp, p)?;
    let initramfs = build_initramfs(&setup, p.scratch())?;
    let shape = schedule::Shape {
        configs: plan.configs.len(),
        workloads: plan.workloads.len(),
        boots: plan.boots,
        rounds: plan.runs / plan.boots.max(1),
        warmup: plan.warmup,
    };
    let done = store.done_slots(exp)?;
    let todo: Vec<(BootSlot, Vec<AssignedSlot>)> = schedule::boots(&shape, plan.order, plan.seed)
        .into_iter()
        .filter_map(|b| {
            let missing = b
                .slots
                .iter()
                .any(|s| !s.warmup && !done.contains(&(s.block, s.seq)));
            // A boot redone for its missing runs warms up again: warm-up is
            // per boot. Warm-up runs already stored are not stored twice.
            let slots: Vec<AssignedSlot> = b
                .slots
                .iter()
                .filter(|s| s.warmup || !done.contains(&(s.block, s.seq)))
                .map(|s| AssignedSlot {
                    block: s.block,
                    seq: s.seq,
                    workload: s.workload,
                    warmup: s.warmup,
                })
                .collect();
            missing.then_some((b, slots))
        })
        .collect();
    let total: usize = todo.iter().map(|(_, s)| s.len()).sum();
    let max_failures = plan
        .overrides
        .max_failures
        .unwrap_or(crate::plan::MAX_CONSECUTIVE_FAILURES);
    let mut s = Session {
        store,
        exp,
        p,
        setup: &setup,
        initramfs,
        opts,
        progress: Progress::new(total as u64, opts.quiet),
        declared: HashSet::new(),
        runs_done: 0,
        runs_failed: 0,
        failing: crate::runner::streaks::Streaks::new(plan),
        stopped: None,
    };
    // Boots of one config that failed in a row; at `max_failures` its
    // remaining boots are skipped (a kernel that never boots is not booted
    // for an hour), the other configs go on.
    let mut boot_streak: HashMap<usize, u32> = HashMap::new();
    let mut interrupted = false;
    for (b, slots) in &todo {
        if opts.cancel.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        let streak = boot_streak.get(&b.config).copied().unwrap_or(0);
        if max_failures > 0 && streak >= max_failures {
            continue;
        }
        let ok = s.boot(b, slots)?;
        if opts.cancel.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        let streak = boot_streak.entry(b.config).or_default();
        *streak = if ok { 0 } else { *streak + 1 };
        if max_failures > 0 && *streak == max_failures {
            let msg = format!(
                "config '{}': {streak} boots failed in a row; its remaining boots are skipped",
                s.p.plan.configs[b.config].name
            );
            store.add_event(exp, "stop", &msg)?;
            s.progress.note(&msg);
        }
        if s.stopped.is_some() {
            break;
        }
    }
    s.progress.finish();
    let (runs_done, runs_failed, stopped) = (s.runs_done, s.runs_failed, s.stopped.take());
    let wall = t0.elapsed().as_secs_f64();
    let usage = crate::runner::usage(
        wall,
        (crate::runner::self_cpu() - cpu0).as_secs_f64(),
        runs_done,
    );
    store.close_run_log()?;
    crate::runner::finish(
        store,
        exp,
        interrupted,
        stopped,
        &usage,
        (runs_done, runs_failed),
    )
}

/// One initramfs per config (configs sharing a modules directory share
/// it), in the scratch directory.
fn build_initramfs(setup: &KernelSetup, scratch: &Path) -> Result<Vec<PathBuf>> {
    let argv = vec![setup.exe.display().to_string(), "guest".to_string()];
    let mut made: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    for k in &setup.kernels {
        if let Some(p) = made.get(&k.modules_dir) {
            out.push(p.clone());
            continue;
        }
        let path = scratch.join(format!("initramfs-{}.cpio", made.len()));
        vm::initramfs::build(&path, &setup.busybox, &k.modules, &argv)
            .map_err(|e| anyhow::anyhow!("building the initramfs for {}: {e}", k.image.version))?;
        made.insert(k.modules_dir.clone(), path.clone());
        out.push(path);
    }
    Ok(out)
}

/// sysdelta's own part of the kernel command line, then the config's.
fn cmdline(exp: i64, boot: i64, k: &KernelPrep) -> String {
    let mut c = format!("console=ttyS0 panic=-1 sysdelta.boot={exp}-{boot}");
    if !k.def.cmdline.is_empty() {
        c.push(' ');
        c.push_str(&k.def.cmdline);
    }
    c
}

/// The last `n` lines of a console text.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Session<'_> {
    /// Boot `b` for `slots`; true when the boot delivered every run.
    fn boot(&mut self, b: &BootSlot, slots: &[AssignedSlot]) -> Result<bool> {
        let cfg = &self.p.plan.configs[b.config];
        let k = &self.setup.kernels[b.config];
        let id = self.store.begin_boot(
            self.exp,
            &cfg.name,
            b.block,
            b.position,
            &self.setup.accel.to_string(),
            now_unix(),
        )?;
        let dir = self.p.scratch().join(format!("boot-{id}"));
        let mut entries = self.journal(vec![UndoAction::RemovePath {
            path: dir.clone(),
            recursive: true,
        }])?;
        std::fs::create_dir(&dir)?;
        let spec = vm::launch::VmSpec {
            kernel: k.image.path.clone(),
            initramfs: self.initramfs[b.config].clone(),
            cmdline: cmdline(self.exp, id, k),
            cpus: k.def.cpus,
            memory_mib: k.def.memory_mib,
            accel: self.setup.accel,
        };
        let launched = Instant::now();
        let journal = self.p.journal.clone();
        let mut spawned = Vec::new();
        let started = vm::launch::Boot::start(&spec, &dir, &mut |pid, start_time| {
            let mut j = journal.lock().unwrap_or_else(|e| e.into_inner());
            let ids = j
                .record_all(
                    "boot",
                    vec![UndoAction::KillProcess {
                        pid,
                        start_time,
                        group: true,
                    }],
                )
                .map_err(|e| crate::error::Error::failed(format!("{e:#}")))?;
            spawned.extend(ids);
            Ok(())
        });
        entries.extend(spawned);
        let mut received = 0u32;
        let result = match started {
            Ok(mut vm) => {
                let r = self.serve(&mut vm, id, b, slots, &spec, k, launched, &mut received);
                // Killed (and its console read to the end) first.
                vm.kill();
                let tail_text = tail(&vm.console_tail(), TAIL_LINES);
                let panic = vm.panic_line();
                r.map_err(|mut f| {
                    if let Some(p) = panic {
                        if !f.interrupted {
                            f.reason = format!("{}; the guest kernel panicked: {p}", f.reason);
                        }
                    }
                    (f, tail_text)
                })
            }
            Err(e) => Err((
                Fault::new(format!("the VM did not start: {e}")),
                String::new(),
            )),
        };
        // The VM is gone (reaped, or killed and reaped): its undo entries
        // and its directory go.
        {
            let mut j = self.p.journal.lock().unwrap_or_else(|e| e.into_inner());
            let _ = j.undo_entries(&entries);
        }
        let ok = result.is_ok();
        let end = match result {
            Ok(()) => BootEnd {
                ok: true,
                runs: received,
                ..Default::default()
            },
            Err((f, console)) => {
                if let Some(slot) = f.in_flight.filter(|_| !f.interrupted) {
                    self.record_failed(b, &slot, id, &f.reason)?;
                }
                let line = format!(
                    "boot {id} of '{}' (block {}) failed: {}",
                    cfg.name, b.block, f.reason
                );
                self.store.add_event(self.exp, "boot", &line)?;
                self.progress.note(&line);
                BootEnd {
                    ok: false,
                    reason: Some(f.reason),
                    console_tail: Some(console),
                    runs: received,
                }
            }
        };
        self.store.end_boot(id, &end)?;
        Ok(ok)
    }

    fn journal(&self, undos: Vec<UndoAction>) -> Result<Vec<u64>> {
        let mut j = self.p.journal.lock().unwrap_or_else(|e| e.into_inner());
        j.record_all("boot", undos)
    }
}
