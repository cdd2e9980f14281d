//! `sysdelta guest`: what the VM's init runs, in a chroot of the host's
//! root file system (read-only under a writable layer in guest memory).
//!
//! It says who booted, takes the boot's assignment, enters the config's
//! other kinds (sysctl, cpus, shell setup, ...) inside the guest, and
//! measures each assigned run with the host's own code
//! (`runner::slot::measure`), sending each as soon as it is done. What it
//! changes lives and dies with the VM; its journal and scratch directory
//! are on the guest's tmpfs.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{anyhow, Context, Result};

use super::protocol::{self, Assignment, GuestMsg, HostMsg};
use crate::runner::schedule::Slot;
use crate::runner::{now_unix, settle_after_enter, slot};
use crate::store::runlog::RunRow;
use crate::store::RunRecord;

/// Where the guest keeps what would sit beside a store (its journal, the
/// setup's environment dump): the guest's /run, a tmpfs.
const GUEST_STATE: &str = "/run/sysdelta-guest/guest.db";

/// Serve one boot over the port named `port`.
pub fn serve(port: &str) -> Result<()> {
    let dev = crate::vm::port::open(port).with_context(|| format!("opening port {port}"))?;
    // Lines written while the host is not connected would be lost.
    crate::vm::port::wait_host(&dev, std::time::Duration::from_secs(60))?;
    let mut out = dev.try_clone()?;
    let mut input = BufReader::new(dev);
    send(&mut out, &hello()?)?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    let HostMsg::Assign(a) =
        serde_json::from_str(&line).map_err(|e| anyhow!("the host's assignment: {e}"))?
    else {
        anyhow::bail!("the host's first message was not an assignment");
    };
    match run(&a, &mut out, &mut input) {
        Ok(()) => send(&mut out, &GuestMsg::Done),
        Err(e) => {
            let message = format!("{e:#}");
            send(&mut out, &GuestMsg::Error { message })?;
            Err(e)
        }
    }
}

fn send(out: &mut impl Write, m: &GuestMsg) -> Result<()> {
    out.write_all(&protocol::line(m))?;
    out.flush()?;
    Ok(())
}

/// Who booted: checked by the host against the config before it assigns
/// anything.
fn hello() -> Result<GuestMsg> {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string());
    let uname = nix::sys::utsname::uname()?;
    let mem_total_kib = crate::monitor::fingerprint::meminfo_kib("MemTotal").unwrap_or(0);
    Ok(GuestMsg::Hello {
        v: protocol::VERSION,
        uname: uname.release().to_string_lossy().into_owned(),
        proc_version: read("/proc/version")?,
        cmdline: read("/proc/cmdline")?,
        cpus: online_cpus(&read("/sys/devices/system/cpu/online")?),
        mem_total_kib,
        exe: protocol::exe_identity(&std::fs::read_link("/proc/self/exe")?),
    })
}

/// The number of CPUs in a list such as `0-1,3`.
fn online_cpus(list: &str) -> u32 {
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().unwrap_or(0), b.parse().unwrap_or(0));
                b.saturating_sub(a) + 1
            }
            None => 1,
        })
        .sum()
}

/// Measure the assigned runs, sending each.
fn run(a: &Assignment, out: &mut impl Write, input: &mut impl BufRead) -> Result<()> {
    if let Some(d) = &a.cwd {
        // The host's preflight checked it is on the root file system.
        std::env::set_current_dir(d)
            .with_context(|| format!("the host's working directory {d}"))?;
    }
    let plan = crate::plan::parse(&a.plan_source, &a.plan_text, &a.overrides)
        .map_err(|e| anyhow!("the plan: {e}"))?;
    let config = plan
        .config_index(&a.config)
        .ok_or_else(|| anyhow!("the plan has no config '{}'", a.config))?;
    std::fs::create_dir_all(Path::new(GUEST_STATE).parent().expect("a parent"))?;
    let mut p = crate::runner::prepare_guest(plan, Path::new(GUEST_STATE))?;
    p.arm()?;
    let cancel = AtomicBool::new(false);
    for (def, w) in p.workloads.iter_mut() {
        w.prepare(&p.scratch)
            .with_context(|| format!("preparing workload '{}'", def.name))?;
    }
    // Entered once: the whole boot belongs to this config.
    let entered = p.configs[config].enter();
    // What the config's setup put on PATH (and what `prepare` found
    // before it) is looked up afresh.
    crate::process::forget_found();
    if entered.is_ok() {
        settle_after_enter(&p.configs[config].mods.env);
    }
    let mut declared: HashSet<(usize, String)> = HashSet::new();
    let mut noted: HashSet<String> = HashSet::new();
    let result = (|| -> Result<()> {
        for s in &a.slots {
            let slot = Slot {
                block: s.block,
                seq: s.seq,
                config,
                workload: s.workload,
                warmup: s.warmup,
            };
            send(
                out,
                &GuestMsg::Start {
                    block: s.block,
                    seq: s.seq,
                },
            )?;
            let started_at = now_unix();
            let measured = match &entered {
                Ok(()) => slot::measure(&mut p, &slot, &cancel),
                Err(e) => slot::Measured::failed(format!("config '{}': {e:#}", a.config)),
            };
            for line in measured.notes.iter().filter(|l| noted.insert((*l).clone())) {
                send(
                    out,
                    &GuestMsg::Event {
                        kind: "skipped".into(),
                        message: line.clone(),
                    },
                )?;
            }
            for e in &measured.monitor_errors {
                send(
                    out,
                    &GuestMsg::Event {
                        kind: "monitor".into(),
                        message: e.clone(),
                    },
                )?;
            }
            let wname = p.workloads[s.workload].0.name.clone();
            let extras = slot::extras(&p, &slot, &measured, &mut declared);
            if !extras.new_specs.is_empty() {
                send(
                    out,
                    &GuestMsg::Metrics {
                        workload: wname.clone(),
                        specs: extras.new_specs.clone(),
                    },
                )?;
            }
            let row = RunRow::of(&RunRecord {
                experiment_id: a.experiment,
                block: s.block,
                seq: s.seq,
                config: &a.config,
                workload: &wname,
                warmup: s.warmup,
                started_at,
                result: slot::result_of(&measured),
                series: &extras.series,
                profile: &extras.profile,
            })?;
            send(out, &GuestMsg::Run { row: Box::new(row) })?;
            // Wait until the host stored it: its fold and progress output
            // do not overlap the next run.
            let mut line = String::new();
            input.read_line(&mut line)?;
            match serde_json::from_str(&line) {
                Ok(HostMsg::Stored { block, seq }) if (block, seq) == (s.block, s.seq) => {}
                _ => anyhow::bail!(
                    "expected the host's stored {}/{}, got {line:?}",
                    s.block,
                    s.seq
                ),
            }
        }
        Ok(())
    })();
    let left = p.configs[config].leave();
    for (_, w) in p.workloads.iter_mut() {
        w.cleanup();
    }
    result?;
    left.map_err(|e| anyhow!("leaving config '{}': {e:#}", a.config))
}

#[cfg(test)]
mod tests {
    #[test]
    fn online_cpu_lists_count_every_cpu() {
        assert_eq!(super::online_cpus("0"), 1);
        assert_eq!(super::online_cpus("0-1"), 2);
        assert_eq!(super::online_cpus("0-3,6,8-9"), 7);
    }
}
