//! `sysdelta kexec step`: what the hook runs at every boot of a session
//! (and `kexec resume` by hand). It reads where the session stands from
//! the journal and what booted from `/proc/cmdline`, then:
//!
//! - on a boot of the schedule (`sysdelta.kexec=<n>`): checks who came up,
//!   audits the machine, runs the boot's runs not yet stored, marks it done;
//! - on the machine's own kernel (no mark: the firmware booted it, after a
//!   panic's `panic=N` reboot or a power cut): a boot armed but not done is
//!   a failed boot;
//!
//! then arms the next boot and kexecs into it, or, with none left, kexecs
//! back to the starting kernel, where the next step removes the hook and
//! finishes the experiment.

use anyhow::{anyhow, Result};

use super::audit::Audit;
use super::exec::{self, Identity};
use super::hook;
use super::state::{Session, Standing, State, Step};
use crate::runner::boots::on_machine::{self, MachineBoot};
use crate::status::ExperimentStatus;
use crate::store::boots::BootIdentity;
use crate::store::{BootEnd, Store};

/// The `accel` of a boot row: the machine's own CPU, no VM.
const ON_MACHINE: &str = "kexec";
const FIRST_AUDIT: &str = "audit-first.json";

/// One step of the session in `state` (see the module's doc). Returns only
/// when the session is over or stopped; otherwise it kexecs.
pub fn step(state: &std::path::Path) -> Result<()> {
    let Some(st) = State::find(state)? else {
        // Ended or stopped: a hook left behind (or a resume by hand) has
        // nothing to do, and must not be restarted as if it failed.
        println!(
            "sysdelta: no kexec session in {}: nothing to do",
            state.display()
        );
        return Ok(());
    };
    let s = st.session()?;
    super::state::apply_env(&s.env);
    // The whole step under the session's lock: the journal and the
    // store's done runs are read by one step at a time.
    let _step = st.lock()?;
    let steps = st.steps()?;
    if steps.contains(&Step::Finished) {
        // The last step died between its end and its clean-up: finish that.
        hook::remove(&s.hook_dir, st.path())?;
        std::fs::remove_dir_all(st.path())?;
        return Ok(());
    }
    // No other run changes the machine while this step does. Taken before
    // anything is stored: a refusal (exit 2) is not a failed boot, and the
    // step can be resumed once the other run ended.
    let _machine = crate::runner::machine::MachineLock::acquire(Some(&s.store), "kexec step")?;
    let store = Store::open(&s.store, false)?;
    store.log_runs()?;
    let id = Identity::read()?;
    let mut stand = super::state::standings(s.boots.len(), &steps);
    let mark = exec::marker(&id.cmdline);
    if let Some(Some(n)) = mark.filter(|m| matches!(m, Some(n) if *n < s.boots.len())) {
        if matches!(stand[n], Standing::Armed(_) | Standing::Up(_)) {
            stand[n] = on_boot(&st, &s, &store, n, &stand[n], &id)?;
        }
    }
    // Any other boot armed and not resolved did not come back, unless it
    // was armed from this very boot: the step died before its kexec, and
    // it is armed again.
    let this_boot = boot_id();
    for (n, b) in stand.iter_mut().enumerate() {
        if matches!(b, Standing::Armed(from) if *from == this_boot) {
            *b = Standing::Todo;
            continue;
        }
        let reason = match b {
            Standing::Armed(_) => "its kernel did not come up: the machine came back on its default kernel (a panic's panic=N reboot, or a reset)",
            Standing::Up(_) => "the machine restarted during this boot's runs",
            _ => continue,
        };
        let row = match b {
            Standing::Up(id) => *id,
            _ => begin(&store, &s, n)?,
        };
        fail(&st, &s, &store, n, row, reason)?;
        *b = Standing::Failed;
    }
    next(&st, &s, &store, &stand, mark.is_some_and(|m| m.is_some()))
}

/// Boot `n` came up: checked, audited, its runs run. Its new standing.
fn on_boot(
    st: &State,
    s: &Session,
    store: &Store,
    n: usize,
    was: &Standing,
    id: &Identity,
) -> Result<Standing> {
    let b = &s.boots[n];
    let row = match was {
        Standing::Up(row) => *row,
        _ => {
            let row = begin(store, s, n)?;
            store.boot_identity(
                row,
                &BootIdentity {
                    // From the kernel's start to this step: the VM
                    // path's launch-to-hello, on the machine.
                    launch_to_hello_s: uptime(),
                    uname: &id.uname,
                    proc_version: &id.proc_version,
                    cmdline: &id.cmdline,
                    cpus: online_cpus(),
                    mem_total_kib: crate::monitor::fingerprint::meminfo_kib("MemTotal")
                        .unwrap_or(0),
                },
            )?;
            if let Err(why) = exec::check_identity(&b.kernel, &b.cmdline, id) {
                fail(st, s, store, n, row, &why)?;
                return Ok(Standing::Failed);
            }
            st.append(&Step::Up { n, boot: row })?;
            row
        }
    };
    // What the runs run with is still what `start` accepted: a PATH entry
    // or the working directory opened to others since fails the boot,
    // before anything runs.
    if let Err(why) = super::guard::recheck(&s.env, s.cwd.as_deref()) {
        fail(st, s, store, n, row, &why)?;
        return Ok(Standing::Failed);
    }
    let problems = audit(st, s, store, n)?;
    let stored = on_machine::runs(
        &MachineBoot {
            store_path: &s.store,
            experiment: s.experiment,
            plan_source: &s.plan_source,
            plan_text: &s.plan_text,
            overrides: &s.overrides,
            cwd: s.cwd.as_deref(),
            config: &b.config,
            slots: &b.slots,
        },
        store,
        row,
    );
    if let Err(e) = stored {
        fail(st, s, store, n, row, &format!("{e:#}"))?;
        return Ok(Standing::Failed);
    }
    store.close_run_log()?;
    let runs = b.slots.iter().filter(|x| !x.warmup).count() as u32;
    if !problems.is_empty() {
        // Kept apart: the runs are stored, the boot is not a good one.
        let reason = format!("{}: {}", crate::status::AUDIT_FAILED, problems.join("; "));
        fail(st, s, store, n, row, &reason)?;
        return Ok(Standing::Failed);
    }
    store.end_boot(
        row,
        &BootEnd {
            ok: true,
            runs,
            ..Default::default()
        },
    )?;
    st.append(&Step::Done { n })?;
    Ok(Standing::Done)
}

/// The audit of boot `n`, compared with the first boot of its config (a
/// kernel's own traits, such as MemTotal, differ between configs by
/// design); its problems.
fn audit(st: &State, s: &Session, store: &Store, n: usize) -> Result<Vec<String>> {
    let a = Audit::read();
    let config = &s.boots[n].config;
    let mut firsts: std::collections::BTreeMap<String, Audit> = st
        .read_file(FIRST_AUDIT)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let ignore: Vec<regex::Regex> = s
        .audit_ignore
        .iter()
        .filter_map(|r| regex::Regex::new(r).ok())
        .collect();
    let problems = a.problems(firsts.get(config), &ignore);
    if keep_first(&mut firsts, config, &a, problems.is_empty()) {
        st.write_file(FIRST_AUDIT, &serde_json::to_vec(&firsts)?)?;
    }
    let line = format!(
        "boot {n} ('{config}'): audit {}: {}",
        if problems.is_empty() {
            "passed"
        } else {
            "failed"
        },
        a.summary()
    );
    store.add_event(s.experiment, "audit", &line)?;
    Ok(problems)
}

/// Record `a` as `config`'s reference audit when it has none and `a`
/// passed (a failed one, a hot machine or a changed governor, would make
/// later boots that differ from a good one pass); whether it was.
fn keep_first(
    firsts: &mut std::collections::BTreeMap<String, Audit>,
    config: &str,
    a: &Audit,
    passed: bool,
) -> bool {
    if !passed || firsts.contains_key(config) {
        return false;
    }
    firsts.insert(config.to_string(), a.clone());
    true
}

fn begin(store: &Store, s: &Session, n: usize) -> Result<i64> {
    let b = &s.boots[n];
    store.begin_boot(
        s.experiment,
        &b.config,
        b.block,
        b.position,
        ON_MACHINE,
        crate::runner::now_unix(),
    )
}

/// Boot `n` (row `row`) failed: stored, an event, journaled.
fn fail(st: &State, s: &Session, store: &Store, n: usize, row: i64, reason: &str) -> Result<()> {
    let line = format!(
        "kexec boot {n} of '{}' (block {}) failed: {reason}",
        s.boots[n].config, s.boots[n].block
    );
    eprintln!("sysdelta: {line}");
    store.add_event(s.experiment, "boot", &line)?;
    store.end_boot(
        row,
        &BootEnd {
            ok: false,
            reason: Some(reason.to_string()),
            ..Default::default()
        },
    )?;
    store.close_run_log()?;
    st.append(&Step::Failed {
        n,
        reason: reason.to_string(),
    })
}

/// Arm and kexec the next boot; none left: back to the starting kernel
/// (`on_session_kernel`) or the end of the session.
fn next(
    st: &State,
    s: &Session,
    store: &Store,
    stand: &[Standing],
    on_session_kernel: bool,
) -> Result<()> {
    for (n, b) in stand.iter().enumerate() {
        if *b != Standing::Todo {
            continue;
        }
        st.append(&Step::Armed { n, from: boot_id() })?;
        store.close_run_log()?;
        let k = &s.boots[n];
        match exec::load(&k.kernel, &k.cmdline) {
            Ok(()) => return exec::execute(),
            Err(e) => {
                let row = begin(store, s, n)?;
                fail(st, s, store, n, row, &format!("{e:#}"))?;
            }
        }
    }
    if on_session_kernel {
        st.append(&Step::Returning)?;
        store.close_run_log()?;
        let line = exec::cmdline(&s.start_cmdline, "", s.panic_s, "end");
        exec::load(&s.start, &line)
            .map_err(|e| anyhow!("{e:#}: the machine stays on this kernel; reboot it into its default kernel to end the session"))?;
        return exec::execute();
    }
    finish(st, s, store, stand)
}

/// On the starting kernel with every boot resolved: the hook goes, the
/// experiment is finished, the state directory removed.
fn finish(st: &State, s: &Session, store: &Store, stand: &[Standing]) -> Result<()> {
    let removed = hook::remove(&s.hook_dir, st.path())?;
    let uname = Identity::read()?.uname;
    if uname != s.start.release {
        store.add_event(
            s.experiment,
            "boot",
            &format!(
                "the session ended on kernel {uname}, not the starting {}",
                s.start.release
            ),
        )?;
    }
    let names: Vec<&str> = s.boots.iter().map(|b| b.config.as_str()).collect();
    // A config none of whose boots came up and ran has no result: the
    // experiment is not complete, whatever the others did (nor is a
    // session with no boot at all).
    let why = match configs_without_done(&names, stand) {
        Some(missing) => Some(format!(
            "no boot of config(s) {} came up and ran: the experiment failed (the other configs' boots are kept)",
            missing.join(", ")
        )),
        None if !stand.contains(&Standing::Done) => {
            Some("no boot of the kexec session came up and ran: the experiment failed".into())
        }
        None => None,
    };
    let status = match why {
        None => ExperimentStatus::Complete,
        Some(why) => {
            store.add_event(s.experiment, "boot", &why)?;
            ExperimentStatus::Failed
        }
    };
    store.finish(s.experiment, status, None)?;
    st.append(&Step::Finished)?;
    // Nothing of the session is left: its state goes after its last step.
    std::fs::remove_dir_all(st.path())?;
    println!(
        "sysdelta: kexec session done on {uname}{}: `sysdelta --store {} report {}`",
        if removed { ", hook removed" } else { "" },
        s.store.display(),
        s.experiment
    );
    Ok(())
}

/// The configs (each boot's, in schedule order) with no Done boot;
/// None when every config has one.
fn configs_without_done(boot_configs: &[&str], stand: &[Standing]) -> Option<Vec<String>> {
    let mut missing: Vec<String> = Vec::new();
    for c in boot_configs {
        let done = boot_configs
            .iter()
            .zip(stand)
            .any(|(b, st)| b == c && *st == Standing::Done);
        if !done && !missing.iter().any(|m| m == c) {
            missing.push(c.to_string());
        }
    }
    (!missing.is_empty()).then_some(missing)
}

/// This boot's random id: it tells the boot a kexec was armed from from a
/// later one.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn uptime() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_only_when_every_config_has_a_done_boot() {
        let names = ["a", "b", "a", "b"];
        use Standing::{Done, Failed};
        assert_eq!(
            configs_without_done(&names, &[Done, Failed, Failed, Done]),
            None
        );
        assert_eq!(
            configs_without_done(&names, &[Done, Failed, Done, Failed]),
            Some(vec!["b".to_string()])
        );
        assert_eq!(
            configs_without_done(&names, &[Failed, Failed, Failed, Failed]),
            Some(vec!["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn only_a_passed_audit_is_a_reference() {
        let mut firsts = std::collections::BTreeMap::new();
        let a = Audit::default();
        assert!(!keep_first(&mut firsts, "a", &a, false));
        assert!(firsts.is_empty());
        assert!(keep_first(&mut firsts, "a", &a, true));
        assert!(!keep_first(&mut firsts, "a", &a, true));
        assert_eq!(firsts.len(), 1);
    }
}
