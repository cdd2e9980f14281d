//! `sysdelta fleet`: one plan on several hosts over ssh, into one team
//! store (`run`, `resume`, `status`, `report`). The flags are parsed and
//! checked here (the hosts, the run flags each host gets, the plan); the
//! work is the library's `fleet` module.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use super::args::{overrides, ExecArgs, ReportFlags};
use crate::error::{bad, Error};
use crate::fleet::{self, Host, Outcome};
use crate::plan;
use crate::store::Store;

#[derive(Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub cmd: FleetCmd,
}

#[derive(Subcommand)]
pub enum FleetCmd {
    /// Run a plan on every host at once, each host's part an experiment
    /// in the team store (--store postgresql://...).
    Run(FleetRunArgs),
    /// Finish a fleet run: every host whose experiment is not complete.
    Resume(FleetResumeArgs),
    /// Each host of a fleet run: its experiment, status and runs.
    Status(FleetIdArgs),
    /// Each host's delta and CI and the hosts pooled (text, markdown, json).
    Report(FleetReportArgs),
}

/// Where the hosts come from: one of the two.
#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct HostsArgs {
    /// The hosts: ssh destinations, or NAME=DEST, separated by commas (a
    /// host's name defaults to the destination's host part).
    #[arg(long, value_name = "HOSTS")]
    pub hosts: Vec<String>,
    /// A TOML file of [[host]] tables: name, destination, ssh_options,
    /// workdir, env, sysdelta (docs/fleet.md).
    #[arg(long, value_name = "FILE")]
    pub hosts_file: Option<PathBuf>,
}

#[derive(Args)]
pub struct FleetRunArgs {
    /// The plan file.
    pub plan: PathBuf,
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// The fleet's seed: each host's run order is seeded from it and the
    /// host's name (default: a random seed per host).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Flags for each host's `sysdelta run`, after --: e.g. -- --runs 20 --quick.
    #[arg(last = true, value_name = "RUN FLAGS")]
    pub run_flags: Vec<String>,
}

#[derive(Args)]
pub struct FleetResumeArgs {
    /// The fleet run's id, or `last`.
    pub fleet: String,
    /// New ways to reach some of the hosts ([[host]] tables by name; a
    /// host's workdir cannot change).
    #[arg(long, value_name = "FILE")]
    pub hosts_file: Option<PathBuf>,
    /// The fleet's plan, given again (with its run flags after --): its
    /// text must be the one the fleet stored. A team store's plan runs
    /// only so, or with --trust-stored-plan.
    #[arg(long = "plan", value_name = "FILE")]
    pub plan_again: Option<PathBuf>,
    /// Run the fleet's stored plan, run flags and hosts' environments
    /// after showing them (anyone who can write the team store could have
    /// written them).
    #[arg(long)]
    pub trust_stored_plan: bool,
    /// With --plan: the run flags the fleet was started with, after --.
    #[arg(last = true, value_name = "RUN FLAGS", requires = "plan_again")]
    pub run_flags: Vec<String>,
}

#[derive(Args)]
pub struct FleetIdArgs {
    /// The fleet run's id, or `last`.
    pub fleet: String,
}

#[derive(Args)]
pub struct FleetReportArgs {
    /// The fleet run's id, or `last`.
    pub fleet: String,
    #[command(flatten)]
    pub flags: ReportFlags,
}

/// The run flags after `--`, parsed as `sysdelta run` parses them.
#[derive(Parser)]
#[command(name = "run flags", no_binary_name = true)]
struct RunFlags {
    #[command(flatten)]
    exec: ExecArgs,
}

/// Flags the fleet gives each host itself.
const FLEET_OWN: &[&str] = &["--seed", "--quiet", "-q", "--no-report", "--fleet-member"];

/// Check the run flags (each host's `sysdelta run` would refuse them
/// only once the fleet is stored) and give the plan's overrides.
fn run_flags(flags: &[String]) -> Result<crate::overrides::Overrides> {
    for f in flags {
        let name = f.split('=').next().unwrap_or(f);
        // A baseline names one experiment; a fleet run is one per host.
        if ["--save-baseline", "--against-baseline"].contains(&name) {
            return Err(bad(format!(
                "fleet run: {name} after --: a baseline is one experiment, a fleet run one per host (compare a host's with compare --host HOST --against-baseline NAME)"
            )));
        }
        if FLEET_OWN.contains(&name) {
            return Err(bad(format!(
                "fleet run: {name} after --: the fleet gives each host its own{}",
                if name == "--seed" {
                    " (give the fleet's --seed before --)"
                } else {
                    ""
                }
            )));
        }
    }
    let parsed = RunFlags::try_parse_from(flags).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        bad(format!("fleet run: the run flags after --: {first}"))
    })?;
    // As each host's `run` would refuse them, after the fleet is stored.
    super::args::report_options(&parsed.exec.report)?;
    parsed.exec.report.benchstat.layout()?;
    Ok(overrides(&parsed.exec))
}

pub fn run(a: &FleetArgs, store_path: &Path) -> Result<ExitCode> {
    match &a.cmd {
        FleetCmd::Run(r) => {
            let hosts = hosts_of(&r.hosts)?;
            let ov = run_flags(&r.run_flags)?;
            let plan = plan::load_file(&r.plan, &ov).map_err(Error::into_bad_input)?;
            let outcome = fleet::run(
                store_path,
                fleet::NewRun {
                    plan: &plan,
                    plan_path: &r.plan,
                    run_flags: &r.run_flags,
                    seed: r.seed,
                    hosts,
                    version: env!("SYSDELTA_VERSION"),
                },
            )?;
            Ok(exit(outcome))
        }
        FleetCmd::Resume(r) => {
            let file_hosts = r
                .hosts_file
                .as_deref()
                .map(fleet::hosts::from_file)
                .transpose()?;
            // The team store is checked first: an SQLite file has no fleets.
            let team = fleet::team::Team::of(store_path)?;
            let info = Store::open(store_path, false)?.fleet(&r.fleet)?;
            let asked = fleet::Asked::of(&info)?;
            let ov = run_flags(&asked.run_flags)?;
            let plan = plan::parse(&info.plan_source, &info.plan_text, &ov)
                .map_err(Error::into_bad_input)?;
            let consent = trust_fleet(r, &info, &asked, file_hosts.as_deref(), team.shown())?;
            Ok(exit(fleet::resume(
                store_path,
                &info,
                &plan,
                file_hosts,
                consent,
                env!("SYSDELTA_VERSION"),
            )?))
        }
        FleetCmd::Status(s) => {
            fleet::team::Team::of(store_path)?;
            let store = Store::open(store_path, false)?;
            print!("{}", fleet::status(&store, &s.fleet)?);
            Ok(ExitCode::SUCCESS)
        }
        FleetCmd::Report(r) => report(r, store_path),
    }
}

/// The trust rule (`cli::trust`) for `fleet resume`: a team store is never
/// the user's own, so its plan, run flags and stored hosts' environments
/// and sysdelta paths run only when given again or shown and confirmed.
fn trust_fleet(
    r: &FleetResumeArgs,
    info: &crate::store::fleet::FleetInfo,
    asked: &fleet::Asked,
    file_hosts: Option<&[Host]>,
    store: &str,
) -> Result<fleet::Consent> {
    let plan_given = r.plan_again.is_some();
    if plan_given && r.run_flags != asked.run_flags {
        return Err(bad(format!(
            "fleet {}: the run flags after -- ({}) are not the ones the fleet stored ({}); nothing was run",
            info.id,
            shlex::try_join(r.run_flags.iter().map(String::as_str)).unwrap_or_default(),
            shlex::try_join(asked.run_flags.iter().map(String::as_str)).unwrap_or_default()
        )));
    }
    let mut beside = Vec::new();
    if !plan_given && !asked.run_flags.is_empty() {
        beside.push((
            "the run flags".to_string(),
            shlex::try_join(asked.run_flags.iter().map(String::as_str)).unwrap_or_default(),
        ));
    }
    // A host given in --hosts-file comes from the user's hands.
    let given = |name: &str| file_hosts.is_some_and(|f| f.iter().any(|h| h.name == name));
    for h in fleet::hosts::from_json(&info.hosts)? {
        if given(&h.name) {
            continue;
        }
        // Where the host's sysdelta runs, and how ssh gets there: a row
        // that points a host elsewhere (its own server, a known-hosts file
        // that vouches for it) would be sent the store's password.
        beside.push((
            format!("host '{}''s ssh destination and options", h.name),
            shlex::try_join(
                std::iter::once(h.destination.as_str())
                    .chain(h.ssh_options.iter().map(String::as_str)),
            )
            .unwrap_or_default(),
        ));
        if !h.env.is_empty() {
            let env: Vec<String> = h.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            beside.push((
                format!("host '{}''s environment for its sysdelta", h.name),
                env.join(" "),
            ));
        }
        if let Some(s) = &h.sysdelta {
            beside.push((format!("host '{}''s sysdelta", h.name), s.clone()));
        }
    }
    super::trust::decide(
        &super::trust::Stored {
            what: format!("fleet {}", info.id),
            plan_source: &info.plan_source,
            plan_text: &info.plan_text,
            beside,
        },
        Some(format!(
            "the team store {store} (every writer of a PostgreSQL store could have written it)"
        )),
        super::trust::Consent {
            plan: r.plan_again.as_deref(),
            trust_stored: r.trust_stored_plan,
        },
    )?;
    Ok(fleet::Consent {
        plan_given,
        trust_stored: r.trust_stored_plan,
    })
}

/// `fleet report`: each host's delta and CI and the hosts pooled (see
/// `report::fleet`), in `--format` and each `--export-*` file that format
/// has (text, markdown, JSON).
fn report(r: &FleetReportArgs, store_path: &Path) -> Result<ExitCode> {
    fleet::team::Team::of(store_path)?;
    let store = Store::open(store_path, false)?;
    let info = store.fleet(&r.fleet)?;
    let members = store.fleet_members(info.id)?;
    if members.is_empty() {
        return Err(bad(format!(
            "fleet {}: no host has an experiment yet",
            info.id
        )));
    }
    super::report::check_exports(&r.flags)?;
    let mut opts = super::args::report_options(&r.flags)?;
    let formats = super::report::outputs(&r.flags, true);
    for (format, _) in &formats {
        crate::report::fleet::check_format(*format)?;
    }
    let hosts = members
        .iter()
        .map(|m| {
            Ok(crate::analysis::fleet::HostExperiment {
                host: m.host.clone(),
                data: store.load(m.experiment)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Analysed once, however many formats are written.
    let analysed = crate::analysis::fleet::analyze(&hosts, &opts.analysis)?;
    for (format, path) in formats {
        opts.format = format;
        super::output::emit(
            &crate::report::fleet::render_analyzed(&analysed, &opts)?,
            path,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn hosts_of(a: &HostsArgs) -> Result<Vec<Host>> {
    match &a.hosts_file {
        Some(f) => fleet::hosts::from_file(f),
        None => fleet::hosts::from_list(&a.hosts),
    }
}

fn exit(o: Outcome) -> ExitCode {
    match o {
        Outcome::Complete => ExitCode::SUCCESS,
        Outcome::Incomplete => ExitCode::FAILURE,
        Outcome::Interrupted => ExitCode::from(crate::runner::signals::INTERRUPTED as u8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str =
        "name = \"p\"\n[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n";

    fn info(hosts: &str) -> crate::store::fleet::FleetInfo {
        crate::store::fleet::FleetInfo {
            id: 4,
            uid: "u".into(),
            name: "p".into(),
            plan_source: "p.toml".into(),
            plan_text: PLAN.into(),
            overrides: r#"{"run_flags":["--runs","3"],"seed":1}"#.into(),
            hosts: hosts.into(),
            created_at: String::new(),
        }
    }

    fn args(plan: Option<&Path>, trust: bool, flags: &[&str]) -> FleetResumeArgs {
        FleetResumeArgs {
            fleet: "4".into(),
            hosts_file: None,
            plan_again: plan.map(Path::to_path_buf),
            trust_stored_plan: trust,
            run_flags: flags.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn report_flags_each_hosts_run_would_refuse_are_refused_before_the_fleet_is_stored() {
        let flags = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(run_flags(&flags(&["--runs", "3", "--row", ".name"])).is_ok());
        for bad in [
            &["--filter", "(bad"][..],
            &["--row", ".unit"],
            &["--alpha", "2"],
        ] {
            let e = run_flags(&flags(bad)).expect_err("refused");
            assert!(crate::error::user_problems(&e).is_some(), "{bad:?}: {e:#}");
        }
    }

    fn refused(r: Result<fleet::Consent>) -> String {
        let e = r.expect_err("refused");
        assert!(crate::error::user_problems(&e).is_some(), "{e:#}");
        let msg = format!("{e:#}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
        msg
    }

    #[test]
    fn fleet_resume_runs_a_stored_plan_only_given_again_or_confirmed() {
        let t = tempfile::tempdir().unwrap();
        let same = t.path().join("same.toml");
        std::fs::write(&same, PLAN).unwrap();
        let other = t.path().join("other.toml");
        std::fs::write(&other, PLAN.replace("true", "touch /tmp/owned")).unwrap();
        let i = info(r#"[{"name":"h1","destination":"h1"}]"#);
        let asked = fleet::Asked::of(&i).unwrap();
        let check = |a: &FleetResumeArgs| trust_fleet(a, &i, &asked, None, "postgresql://s/db");
        // Nothing said: refused (a team store is never the user's own).
        let msg = refused(check(&args(None, false, &[])));
        assert!(msg.contains("--trust-stored-plan"), "{msg}");
        // The plan given again with its run flags: the stored hosts (where
        // ssh goes, with which options) still need the confirmation...
        let msg = refused(check(&args(Some(&same), false, &["--runs", "3"])));
        assert!(msg.contains("ssh destination"), "{msg}");
        // ...unless given again in a hosts file: the hosts are told so.
        let from_file = fleet::hosts::from_list(&["h1".to_string()]).unwrap();
        let c = trust_fleet(
            &args(Some(&same), false, &["--runs", "3"]),
            &i,
            &asked,
            Some(&from_file),
            "postgresql://s/db",
        )
        .unwrap();
        assert!(c.plan_given && !c.trust_stored);
        // Another plan, or other run flags: refused.
        refused(check(&args(Some(&other), false, &["--runs", "3"])));
        let msg = refused(check(&args(Some(&same), false, &[])));
        assert!(msg.contains("run flags"), "{msg}");
        // Confirmed after being shown.
        let c = check(&args(None, true, &[])).unwrap();
        assert!(c.trust_stored && !c.plan_given);
    }

    #[test]
    fn a_stored_hosts_environment_needs_confirmation_unless_given_in_a_hosts_file() {
        let t = tempfile::tempdir().unwrap();
        let same = t.path().join("same.toml");
        std::fs::write(&same, PLAN).unwrap();
        let i = info(r#"[{"name":"h1","destination":"h1","env":{"LD_PRELOAD":"/tmp/x.so"}}]"#);
        let asked = fleet::Asked::of(&i).unwrap();
        let a = args(Some(&same), false, &["--runs", "3"]);
        let msg = refused(trust_fleet(&a, &i, &asked, None, "s"));
        assert!(msg.contains("environment"), "{msg}");
        let from_file = fleet::hosts::from_list(&["h1".to_string()]).unwrap();
        assert!(trust_fleet(&a, &i, &asked, Some(&from_file), "s").is_ok());
    }
}
