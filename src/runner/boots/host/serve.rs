//! One running VM's message loop: read what the guest sends until it is
//! done, and turn every way it can go wrong into the boot's `Fault`.
//! Separate from mod.rs, which boots the VM and ends the boot, because
//! this loop is the protocol's host side and reads best alone.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{Fault, Session, MAX_GUEST_NOTES, POWEROFF, RUN_GRACE, SLICE};
use crate::config::shell::SHELL_STEP_TIMEOUT;
use crate::metric::MetricSpec;
use crate::runner::boots::checks::{check_identity, check_row};
use crate::runner::boots::lines::{Got, Lines};
use crate::runner::boots::protocol::{self, AssignedSlot, Assignment, GuestMsg, HostMsg};
use crate::runner::boots::schedule::BootSlot;
use crate::runner::boots::KernelPrep;
use crate::store::boots::BootIdentity;
use crate::store::runlog::RunRow;
use crate::vm;

/// What the host knows of one boot's assigned runs while the guest works
/// through them.
struct Exchange {
    /// The runs assigned and not received yet, by (block, seq).
    waiting: HashMap<(u32, u32), AssignedSlot>,
    /// The run the guest said it started and has not sent yet.
    in_flight: Option<AssignedSlot>,
    started: HashSet<(u32, u32)>,
    /// The notes this boot sent, each stored once.
    noted: HashSet<String>,
    boot_timeout: Duration,
    /// Before the first run the guest prepares the workloads and enters
    /// the config (a setup shell may take its whole step timeout), and
    /// after the last it leaves it; between runs it does little.
    setup_allowance: Duration,
    /// When a guest that sent nothing is a hung guest.
    deadline: Instant,
}

impl Exchange {
    fn new(slots: &[AssignedSlot], boot_timeout: Duration) -> Exchange {
        let setup_allowance = boot_timeout + SHELL_STEP_TIMEOUT;
        Exchange {
            waiting: slots.iter().map(|s| ((s.block, s.seq), *s)).collect(),
            in_flight: None,
            started: HashSet::new(),
            noted: HashSet::new(),
            boot_timeout,
            setup_allowance,
            deadline: Instant::now() + setup_allowance,
        }
    }
}

impl Session<'_> {
    /// Talk to one running VM until its guest is done; any fault is the
    /// boot's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn serve(
        &mut self,
        vm: &mut vm::launch::Boot,
        id: i64,
        b: &BootSlot,
        slots: &[AssignedSlot],
        spec: &vm::launch::VmSpec,
        k: &KernelPrep,
        launched: Instant,
        received: &mut u32,
    ) -> Result<(), Fault> {
        let stream = vm
            .channel(Duration::from_secs(10))
            .map_err(|e| Fault::new(format!("no channel to the guest: {e}")))?;
        let writer = stream
            .try_clone()
            .map_err(|e| Fault::new(format!("channel: {e}")))?;
        let mut lines = Lines::new(stream, protocol::MAX_LINE);
        self.hello(vm, &mut lines, id, spec, k, launched)?;
        self.assign(&writer, id, b, slots)?;
        let mut x = Exchange::new(slots, k.def.boot_timeout);
        loop {
            match self.next_within(vm, &mut lines, &x)? {
                GuestMsg::Start { block, seq } => self.on_start(&mut x, block, seq)?,
                GuestMsg::Run { row } => self.on_run(&mut x, *row, b, id, &writer, received)?,
                GuestMsg::Metrics { workload, specs } => self.on_metrics(workload, specs)?,
                GuestMsg::Event { kind, message } => self.on_event(&mut x, &kind, message)?,
                GuestMsg::Done => return on_done(vm, &x),
                GuestMsg::Error { message } => {
                    return Err(Fault::new(format!("the guest sysdelta: {message}")))
                }
                GuestMsg::Hello { .. } => return Err(Fault::new("a second hello from the guest")),
            }
        }
    }

    /// The guest's hello within the boot timeout, its identity stored with
    /// the boot, then checked: the kernel, command line and CPUs asked
    /// for, and the sysdelta binary this experiment started with.
    fn hello(
        &mut self,
        vm: &mut vm::launch::Boot,
        lines: &mut Lines<UnixStream>,
        id: i64,
        spec: &vm::launch::VmSpec,
        k: &KernelPrep,
        launched: Instant,
    ) -> Result<(), Fault> {
        let boot_timeout = k.def.boot_timeout;
        let hello = match self.next(vm, lines, launched + boot_timeout, None)? {
            Some(m) => m,
            None => {
                return Err(Fault::new(format!(
                    "no hello from the guest within {}s of launch (boot_timeout)",
                    boot_timeout.as_secs_f64()
                )))
            }
        };
        let launch_to_hello = launched.elapsed().as_secs_f64();
        let GuestMsg::Hello {
            v,
            uname,
            proc_version,
            cmdline,
            cpus,
            mem_total_kib,
            exe,
        } = hello
        else {
            return Err(Fault::new("the guest's first message was not a hello"));
        };
        let _ = self.store.boot_identity(
            id,
            &BootIdentity {
                launch_to_hello_s: launch_to_hello,
                uname: &uname,
                proc_version: &proc_version,
                cmdline: &cmdline,
                cpus,
                mem_total_kib,
            },
        );
        check_identity(v, &uname, &proc_version, &cmdline, cpus, spec, k)
            .map_err(|e| Fault::new(e.to_string()))?;
        if exe != self.setup.exe_identity {
            return Err(Fault::new(format!(
                "the guest's sysdelta ({exe}) is not the one this experiment started with ({}): \
                 {} was rebuilt or replaced",
                self.setup.exe_identity,
                self.setup.exe.display()
            )));
        }
        Ok(())
    }

    /// Send the guest its assignment: the plan, the config, the slots.
    fn assign(
        &self,
        writer: &UnixStream,
        id: i64,
        b: &BootSlot,
        slots: &[AssignedSlot],
    ) -> Result<(), Fault> {
        let plan = &self.p.plan;
        let assign = HostMsg::Assign(Box::new(Assignment {
            experiment: self.exp,
            boot: id,
            config: plan.configs[b.config].name.clone(),
            plan_source: plan.source_name.clone(),
            plan_text: plan.text.clone(),
            overrides: plan.overrides.clone(),
            cwd: std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string()),
            slots: slots.to_vec(),
        }));
        // A guest that stops reading must not block the host.
        let _ = writer.set_write_timeout(Some(Duration::from_secs(10)));
        (&*writer)
            .write_all(&protocol::line(&assign))
            .map_err(|e| Fault::new(format!("sending the assignment: {e}")))
    }

    /// The guest's next message before the exchange's deadline; its
    /// silence past it is a fault naming the run in flight, if any.
    fn next_within(
        &self,
        vm: &mut vm::launch::Boot,
        lines: &mut Lines<UnixStream>,
        x: &Exchange,
    ) -> Result<GuestMsg, Fault> {
        let got = match self.next(vm, lines, x.deadline, x.in_flight) {
            // A guest that keeps talking is held to the same deadline
            // as a silent one.
            Ok(Some(_)) if Instant::now() > x.deadline => Ok(None),
            other => other,
        };
        match got {
            Ok(Some(m)) => Ok(m),
            Ok(None) => {
                let what = match x.in_flight {
                    Some(s) => format!(
                        "the guest was silent for {}s during run block {} seq {} ({}): hung or panicked",
                        (self.timeout_of(&s) + RUN_GRACE).as_secs(),
                        s.block,
                        s.seq,
                        self.p.plan.workloads[s.workload].name
                    ),
                    None => format!(
                        "the guest sent no run for {}s: hung or panicked outside a run",
                        if x.started.is_empty() || x.waiting.is_empty() {
                            x.setup_allowance.as_secs()
                        } else {
                            x.boot_timeout.as_secs()
                        }
                    ),
                };
                Err(Fault {
                    reason: what,
                    in_flight: x.in_flight,
                    interrupted: false,
                })
            }
            Err(mut f) => {
                f.in_flight = x.in_flight;
                Err(f)
            }
        }
    }

    /// The guest started an assigned run, once: it is in flight, and the
    /// guest has the run's timeout and a grace to send it.
    fn on_start(&self, x: &mut Exchange, block: u32, seq: u32) -> Result<(), Fault> {
        if !x.started.insert((block, seq)) {
            return Err(Fault::new(format!(
                "the guest started run block {block} seq {seq} twice"
            )));
        }
        let s = *x.waiting.get(&(block, seq)).ok_or_else(|| {
            Fault::new(format!(
                "the guest started run block {block} seq {seq}, which this boot was not assigned"
            ))
        })?;
        x.in_flight = Some(s);
        x.deadline = Instant::now() + self.timeout_of(&s) + RUN_GRACE;
        Ok(())
    }

    /// A run the guest sent: one it was assigned and had not sent, in the
    /// assigned config and workload, a run the store takes; stored, and
    /// the guest told so. A stop (too many failures in a row) ends the
    /// boot after it.
    fn on_run(
        &mut self,
        x: &mut Exchange,
        row: RunRow,
        b: &BootSlot,
        id: i64,
        writer: &UnixStream,
        received: &mut u32,
    ) -> Result<(), Fault> {
        let key = (row.block, row.seq);
        let s = x.waiting.remove(&key).ok_or_else(|| {
            Fault::new(format!(
                "the guest sent run block {} seq {}, which this boot was not assigned or already sent",
                row.block, row.seq
            ))
        })?;
        let wname = &self.p.plan.workloads[s.workload].name;
        let cname = &self.p.plan.configs[b.config].name;
        if &row.workload != wname || &row.config != cname || row.warmup != s.warmup {
            return Err(Fault::new(format!(
                "the guest's run block {} seq {} is {}/{}, assigned as {cname}/{wname}",
                row.block, row.seq, row.config, row.workload
            )));
        }
        check_row(&row).map_err(|e| {
            Fault::new(format!(
                "the guest's run block {} seq {} is not a run: {e}",
                row.block, row.seq
            ))
        })?;
        x.in_flight = None;
        x.deadline = Instant::now()
            + if x.waiting.is_empty() {
                x.setup_allowance
            } else {
                x.boot_timeout
            };
        *received += u32::from(!s.warmup);
        self.store_run(row, b, &s, id)
            .map_err(|e| Fault::new(format!("{e:#}")))?;
        (&*writer)
            .write_all(&protocol::line(&HostMsg::Stored {
                block: s.block,
                seq: s.seq,
            }))
            .map_err(|e| Fault::new(format!("telling the guest a run is stored: {e}")))?;
        if self.stopped.is_some() {
            return Err(Fault::new(self.stopped.clone().unwrap_or_default()));
        }
        Ok(())
    }

    /// Metrics a workload reported beyond those declared: each declared
    /// once, for a workload of the plan, up to a bound.
    fn on_metrics(&mut self, workload: String, specs: Vec<MetricSpec>) -> Result<(), Fault> {
        if self.declared.len() + specs.len() > MAX_GUEST_NOTES {
            return Err(Fault::new(
                "the guest declared more metrics than any workload reports",
            ));
        }
        let new: Vec<MetricSpec> = specs
            .into_iter()
            .filter(|m| self.declared.insert((workload.clone(), m.name.clone())))
            .collect();
        let plan = &self.p.plan;
        if !new.is_empty() && plan.workloads.iter().any(|w| w.name == workload) {
            self.store
                .declare_metrics(self.exp, &workload, &new)
                .map_err(|e| Fault::new(format!("{e:#}")))?;
        }
        Ok(())
    }

    /// A note of the guest's (a monitor's error, a skipped metric):
    /// stored and shown once per experiment, up to a bound per boot.
    fn on_event(&mut self, x: &mut Exchange, kind: &str, message: String) -> Result<(), Fault> {
        let kind = if kind == "monitor" {
            "monitor"
        } else {
            "skipped"
        };
        if x.noted.len() >= MAX_GUEST_NOTES {
            return Err(Fault::new(
                "the guest sent more notes than a boot has runs to explain",
            ));
        }
        if x.noted.insert(message.clone())
            && !self
                .store
                .event_messages(self.exp, kind)
                .unwrap_or_default()
                .contains(&message)
        {
            let _ = self.store.add_event(self.exp, kind, &message);
            self.progress.note(&message);
        }
        Ok(())
    }

    /// The next message before `until`; None at the deadline. A stop
    /// request, the VM's exit, a closed channel or a line that is not a
    /// message are faults.
    pub(super) fn next(
        &self,
        vm: &mut vm::launch::Boot,
        lines: &mut Lines<std::os::unix::net::UnixStream>,
        until: Instant,
        in_flight: Option<AssignedSlot>,
    ) -> Result<Option<GuestMsg>, Fault> {
        loop {
            if self.opts.cancel.load(Ordering::SeqCst) {
                return Err(Fault {
                    reason: "interrupted: sysdelta was asked to stop".into(),
                    in_flight,
                    interrupted: true,
                });
            }
            match lines.next(until, SLICE) {
                Ok(Got::Line(l)) => {
                    return serde_json::from_slice(&l).map(Some).map_err(|e| {
                        Fault::new(format!(
                            "the guest sent a line that is not a message (before byte {}): {e}",
                            lines.offset
                        ))
                    })
                }
                Ok(Got::Timeout) => {
                    if let Some(st) = vm.try_wait() {
                        // What the guest wrote just before it powered off
                        // may still be in the socket: read it first.
                        let drain = Instant::now() + Duration::from_secs(2);
                        if let Ok(Got::Line(l)) = lines.next(drain, SLICE) {
                            return serde_json::from_slice(&l).map(Some).map_err(|e| {
                                Fault::new(format!(
                                    "the guest sent a line that is not a message: {e}"
                                ))
                            });
                        }
                        return Err(Fault::new(format!(
                            "the VM stopped ({st}) before the guest sent every run"
                        )));
                    }
                    if Instant::now() >= until {
                        return Ok(None);
                    }
                }
                Ok(Got::Eof) => {
                    let st = vm.wait_timeout(Duration::from_secs(5));
                    return Err(Fault::new(match st {
                        Some(st) => {
                            format!("the VM stopped ({st}) before the guest sent every run")
                        }
                        None => "the guest closed its channel".into(),
                    }));
                }
                Err(e) => return Err(Fault::new(format!("channel: {e}"))),
            }
        }
    }

    pub(super) fn timeout_of(&self, s: &AssignedSlot) -> Duration {
        self.p.plan.workloads[s.workload].timeout
    }
}

/// The guest said it is done: every assigned run sent, and the VM powers
/// off in time.
fn on_done(vm: &mut vm::launch::Boot, x: &Exchange) -> Result<(), Fault> {
    if !x.waiting.is_empty() {
        return Err(Fault::new(format!(
            "the guest ended with {} assigned runs not sent",
            x.waiting.len()
        )));
    }
    if vm.wait_timeout(POWEROFF).is_none() {
        return Err(Fault::new(format!(
            "the guest sent every run but did not end (reset) within {}s",
            POWEROFF.as_secs()
        )));
    }
    Ok(())
}
