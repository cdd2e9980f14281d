//! `fleet run` and `fleet resume`: check every host, and only then write
//! to the store (the fleet's row, for a new run) and start each host's
//! part, all at once; then watch them to their end (`supervise`).

use std::path::Path;

use anyhow::Result;

use super::checks::{self, Needs, Ready};
use super::hosts::{self, Host};
use super::launch::{self, Consent, What};
use super::supervise::{self, End, Outcome, Part};
use super::team::{HostPaths, Team};
use crate::error::{bad, bad_all};
use crate::plan::Plan;
use crate::status::ExperimentStatus;
use crate::store::fleet::{FleetInfo, NewFleet};
use crate::store::Store;

/// A new fleet run, as the command line gave it (its plan loaded with
/// the run flags' overrides, and so checked).
pub struct NewRun<'a> {
    pub plan: &'a Plan,
    pub plan_path: &'a Path,
    /// Flags each host's `sysdelta run` gets (`--runs 20 --quick`).
    pub run_flags: &'a [String],
    /// The fleet's seed, from which each host's is derived; None: each
    /// host's is random.
    pub seed: Option<u64>,
    pub hosts: Vec<Host>,
    /// What this binary was built as (`SYSDELTA_VERSION`): each host runs
    /// a sysdelta that says the same.
    pub version: &'a str,
}

/// What a fleet's row keeps of how it was asked to run (`overrides`).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Asked {
    pub run_flags: Vec<String>,
    pub seed: Option<u64>,
}

impl Asked {
    /// What fleet `info` was asked.
    pub fn of(info: &FleetInfo) -> Result<Asked> {
        serde_json::from_str(&info.overrides).map_err(|e| {
            anyhow::anyhow!(
                "fleet {}: its overrides are not what sysdelta stores: {e}",
                info.id
            )
        })
    }
}

/// Why `plan` needs root on each host, if it does: when it changes the
/// system, as `sysdelta run` decides it.
pub fn root_need(plan: &Plan) -> Option<String> {
    crate::runner::plan_changes_system(plan).then(|| {
        "the plan changes the system (config kinds such as sysctl or tracers, \
         fsops, or kernels)"
            .to_string()
    })
}

/// `fleet run`.
pub fn run(store_path: &Path, r: NewRun) -> Result<Outcome> {
    let team = Team::of(store_path)?;
    team.check_local_dir()?;
    let needs = Needs {
        root: root_need(r.plan),
        port: team.port,
        version: checks::our_version(r.version),
    };
    let mut ready = checks::check_all(&r.hosts, &needs)?;
    for h in &mut ready {
        h.host.seed = Some(host_seed(r.seed, &h.host.name));
    }
    // Every check passed: from here on the store is written.
    let store = Store::open(&team.anchor, true)?;
    let kept: Vec<Host> = ready.iter().map(|h| h.host.clone()).collect();
    let asked = serde_json::to_string(&Asked {
        run_flags: r.run_flags.to_vec(),
        seed: r.seed,
    })?;
    let id = store.create_fleet(&NewFleet {
        name: &r.plan.name,
        plan_source: &r.plan_path.display().to_string(),
        plan_text: &r.plan.text,
        overrides: &asked,
        hosts: &hosts::to_json(&kept),
    })?;
    let info = store.fleet(&id.to_string())?;
    let _lock = FleetLock::take(&team, &info)?;
    crate::sys::stderr::say!(
        "sysdelta: fleet {id}: plan {} on {} hosts ({}), store {}",
        info.plan_source,
        ready.len(),
        ready
            .iter()
            .map(|h| match h.copied {
                true => format!("{} (sysdelta copied)", h.host.name),
                false => h.host.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        team.shown()
    );
    let what = |h: &Ready| What::Fresh {
        fleet: id,
        seed: h.host.seed.unwrap_or_default(),
        flags: r.run_flags,
    };
    let mut parts = start(&team, &info, &ready, &what);
    let outcome = supervise::watch(&store, id, &mut parts)?;
    say_resume(outcome, id, &team);
    Ok(outcome)
}

/// `fleet resume`: every host whose experiment is not complete, or that
/// has none, checked and started again: `run --resume` where it has an
/// experiment (through the same URL and state dir, so that a dead run's
/// log there is folded first), a fresh run of the fleet's plan where it
/// has none. `file_hosts` (a hosts file) replace the stored entries of
/// the hosts they name: how to reach them may have changed, not where
/// they work. `consent`: how the user accepted the stored plan (checked
/// by the caller), passed on to each host's `run --resume`.
pub fn resume(
    store_path: &Path,
    info: &FleetInfo,
    plan: &Plan,
    file_hosts: Option<Vec<Host>>,
    consent: Consent,
    version: &str,
) -> Result<Outcome> {
    let team = Team::of(store_path)?;
    team.check_local_dir()?;
    let store = Store::open(&team.anchor, false)?;
    let _lock = FleetLock::take(&team, info)?;
    let asked = Asked::of(info)?;
    let stored = hosts::from_json(&info.hosts)?;
    let hosts = match file_hosts {
        Some(given) => with_file_hosts(&stored, given, info.id)?,
        // Stored hosts' ssh options passed the allowlist in from_json.
        None => stored.clone(),
    };
    let members = store.fleet_members(info.id)?;
    let todo: Vec<Host> = hosts
        .iter()
        .filter(|h| {
            !members
                .iter()
                .any(|m| m.host == h.name && m.status == ExperimentStatus::Complete)
        })
        .cloned()
        .collect();
    if todo.is_empty() {
        return Err(bad(format!(
            "fleet {}: every host's experiment is complete; nothing to resume",
            info.id
        )));
    }
    let needs = Needs {
        root: root_need(plan),
        port: team.port,
        version: checks::our_version(version),
    };
    let ready = checks::check_all(&todo, &needs)?;
    // The URL and the state dir derive from the workdir: another one
    // would not find the run log a dead run left.
    let moved: Vec<String> = ready
        .iter()
        .filter_map(|r| {
            let was = &stored.iter().find(|h| h.name == r.host.name)?.workdir;
            (*was != r.host.workdir).then(|| {
                format!(
                    "{}: workdir {} is not the fleet's {was} (its state and run log are there)",
                    r.host.shown(),
                    r.host.workdir
                )
            })
        })
        .collect();
    if !moved.is_empty() {
        return Err(bad_all(moved));
    }
    for h in &hosts {
        if !todo.iter().any(|t| t.name == h.name) {
            crate::sys::stderr::say!("sysdelta: {}: complete, left alone", h.shown());
        }
    }
    crate::sys::stderr::say!(
        "sysdelta: fleet {}: resuming {} of {} hosts ({}), store {}",
        info.id,
        ready.len(),
        hosts.len(),
        ready
            .iter()
            .map(|h| h.host.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        team.shown()
    );
    let what = |h: &Ready| match members.iter().find(|m| m.host == h.host.name) {
        Some(m) => What::Resume {
            experiment: m.experiment,
            consent,
        },
        None => What::Fresh {
            fleet: info.id,
            seed: h
                .host
                .seed
                .unwrap_or_else(|| host_seed(asked.seed, &h.host.name)),
            flags: &asked.run_flags,
        },
    };
    // Every host in the summary, those left alone too, in the fleet's
    // order (which `ready` keeps).
    let mut started = start(&team, info, &ready, &what).into_iter().peekable();
    let mut parts: Vec<Part> = hosts
        .iter()
        .map(|h| {
            started
                .next_if(|p| p.host.name == h.name)
                .unwrap_or_else(|| Part::ended(h, End::Ok))
        })
        .collect();
    let outcome = supervise::watch(&store, info.id, &mut parts)?;
    say_resume(outcome, info.id, &team);
    Ok(outcome)
}

/// The fleet's hosts with the entries of a hosts file in place of the
/// stored ones they name. A host keeps its seed, and its stored workdir
/// when the file gives none (a workdir it does give must resolve to the
/// stored one: the checks resolve it, `resume` compares).
fn with_file_hosts(stored: &[Host], given: Vec<Host>, fleet: i64) -> Result<Vec<Host>> {
    let mut hosts = stored.to_vec();
    for g in given {
        let Some(h) = hosts.iter_mut().find(|h| h.name == g.name) else {
            let names: Vec<&str> = stored.iter().map(|h| h.name.as_str()).collect();
            return Err(bad(format!(
                "host '{}' of the hosts file is not one of fleet {fleet}'s ({})",
                g.name,
                names.join(", ")
            )));
        };
        let workdir = if g.workdir == hosts::DEFAULT_WORKDIR {
            h.workdir.clone()
        } else {
            g.workdir.clone()
        };
        *h = Host {
            seed: h.seed,
            workdir,
            ..g
        };
    }
    Ok(hosts)
}

/// Put what each ready host needs there and start its connection, all
/// hosts at once; a host where either fails is lost from the start.
fn start<'f>(
    team: &Team,
    info: &FleetInfo,
    ready: &[Ready],
    what: &dyn Fn(&Ready) -> What<'f>,
) -> Vec<Part> {
    let put: Vec<std::result::Result<HostPaths, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = ready
            .iter()
            .map(|r| {
                s.spawn(move || {
                    let paths = HostPaths::new(team, &r.host.workdir, &info.uid)
                        .map_err(|e| e.to_string())?;
                    launch::put(r, &paths, &info.plan_text)?;
                    Ok(paths)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("its start panicked".into()))
            })
            .collect()
    });
    ready
        .iter()
        .zip(put)
        .map(|(r, paths)| {
            let started = paths
                .and_then(|p| launch::spawn(r, team, &p, &what(r)).map_err(|e| format!("{e:#}")));
            match started {
                Ok(conn) => Part::running(r, conn),
                Err(why) => {
                    let why = format!("lost: {why}");
                    crate::sys::stderr::say!("sysdelta: {}: {why}", r.host.shown());
                    Part::ended(&r.host, End::Lost(why))
                }
            }
        })
        .collect()
}

/// One `fleet run` or `fleet resume` of a fleet at a time on this
/// machine: a second would take the first's hosts from under it (their
/// forwarded sockets are replaced when a host starts). A lock file beside
/// the store's anchor, removed when done.
struct FleetLock {
    path: std::path::PathBuf,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl FleetLock {
    fn take(team: &Team, info: &FleetInfo) -> Result<FleetLock> {
        super::team::check_uid(&info.uid)?;
        let path = Store::beside(&team.anchor, &format!(".fleet-{}.lock", info.uid));
        // 0600, not through a link, refused when another user's.
        let file = crate::sys::trust::open_write(&path, true)
            .map_err(|e| crate::error::bad(format!("cannot open the fleet's lock: {e}")))?;
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(l) => Ok(FleetLock { path, _lock: l }),
            Err(_) => Err(bad(format!(
                "fleet {}: another sysdelta here is running or resuming it; wait for it to end, or stop it first",
                info.id
            ))),
        }
    }
}

impl Drop for FleetLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn say_resume(outcome: Outcome, id: i64, team: &Team) {
    if outcome != Outcome::Complete {
        crate::sys::stderr::say!(
            "sysdelta: resume with: sysdelta fleet resume {id} --store {} --plan PLAN -- RUN FLAGS (the plan and flags given again; docs/plan.md, \"Resuming\")",
            team.shown()
        );
    }
}

/// A host's seed: from the fleet's seed and the host's name (SplitMix64
/// of the seed mixed with the name's FNV-1a hash), so that hosts differ
/// and a fleet run with a seed is repeatable; random without one. Kept
/// below 2^63 (the store keeps seeds as signed 64-bit integers).
pub fn host_seed(fleet: Option<u64>, name: &str) -> u64 {
    let Some(seed) = fleet else {
        return rand::random::<u64>() >> 1;
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = (seed ^ h).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) >> 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_needed_where_run_takes_the_machine_lock() {
        let ov = crate::overrides::Overrides::default();
        let shell = "[[config]]\nname = \"a\"\nsetup = \"export X=1\"\n\
                     [[workload]]\nname = \"w\"\ncommand = \"true\"\n";
        let plan = crate::plan::parse("p.toml", shell, &ov).unwrap();
        assert_eq!(root_need(&plan), None);
        let sysctl = "[[config]]\nname = \"a\"\n[config.sysctl]\n\
                      \"kernel.sched_autogroup_enabled\" = 0\n\
                      [[workload]]\nname = \"w\"\ncommand = \"true\"\n";
        let plan = crate::plan::parse("p.toml", sysctl, &ov).unwrap();
        assert!(root_need(&plan).is_some());
        let cpus = "[[config]]\nname = \"a\"\ncpus = \"0\"\n\
                    [[workload]]\nname = \"w\"\ncommand = \"true\"\n";
        let plan = crate::plan::parse("p.toml", cpus, &ov).unwrap();
        assert_eq!(root_need(&plan), None, "cpus is the run's own affinity");
    }

    #[test]
    fn seeds_differ_per_host_and_repeat() {
        assert_ne!(host_seed(Some(1), "a"), host_seed(Some(1), "b"));
        assert_eq!(host_seed(Some(1), "a"), host_seed(Some(1), "a"));
        assert_ne!(host_seed(Some(1), "a"), host_seed(Some(2), "a"));
        assert!(host_seed(Some(u64::MAX), "z") < 1 << 63);
        assert!(host_seed(None, "a") < 1 << 63);
    }
}
