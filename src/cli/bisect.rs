//! `sysdelta bisect`: its flags, checked before anything is built or
//! stored, then [`crate::bisect::run`] and the answer on stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::bisect::{
    self, range, state::Params, subject::Userspace, subject_kernel::Kernel, Outcome,
};
use crate::error::{bad, Error};

#[derive(Args)]
pub struct BisectArgs {
    /// The git repository (its first-parent line from --good to --bad is
    /// searched; it is never written: commits are checked out in the cache).
    #[arg(long, required_unless_present = "resume")]
    pub repo: Option<PathBuf>,
    /// A commit, tag or branch where the metric is as it should be.
    #[arg(long, required_unless_present = "resume")]
    pub good: Option<String>,
    /// A later commit, tag or branch where it changed.
    #[arg(long, required_unless_present = "resume")]
    pub bad: Option<String>,
    /// The shell command that builds a checked-out commit (run in its
    /// directory; a non-zero exit skips the commit, as `git bisect skip`).
    #[arg(long, required_unless_present_any = ["resume", "config_template"])]
    pub build: Option<String>,
    /// A file holding the `[[config]]` table each commit runs as, with
    /// {name}, {commit} and {dir} (its build directory) filled in; e.g. a
    /// kernel config whose `[config.kernel]` names `ref = "{commit}"`.
    #[arg(long, value_name = "FILE")]
    pub config_template: Option<PathBuf>,
    /// WORKLOAD/METRIC decided on (with `-- CMD`: the workload's name and
    /// wall, user, sys, maxrss or the metric --regex gives).
    #[arg(long, required_unless_present = "resume")]
    pub metric: Option<String>,
    /// A plan file of workloads and settings, without configs: bisect adds
    /// one config a commit (its runs' directory is the commit's build).
    #[arg(long, conflicts_with = "command")]
    pub plan: Option<PathBuf>,
    /// With `-- CMD`: the metric from the command's stdout, the regex's
    /// `value` group (or first group).
    #[arg(long, requires = "command")]
    pub regex: Option<String>,
    /// The most runs a config one step may take (default 48).
    #[arg(long)]
    pub budget: Option<u32>,
    /// Runs a config each look adds (default 6).
    #[arg(long)]
    pub round: Option<u32>,
    /// Each decision's error allowance, spent over its looks (default 0.01).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Seed of the run orders and the bootstraps (default: random).
    #[arg(long)]
    pub seed: Option<u64>,
    /// No adaptivity: N runs a config a step, one look, each midpoint
    /// decided by its estimate alone (to compare with the adaptive mode).
    #[arg(long, value_name = "N")]
    pub fixed_runs: Option<u32>,
    /// Where commits are checked out and built [default:
    /// $XDG_CACHE_HOME/sysdelta/bisect or ~/.cache/sysdelta/bisect].
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// With --resume from a store not only yours (a team's PostgreSQL
    /// store): run the stored build command and template, shown first.
    #[arg(long, requires = "resume")]
    pub trust_stored_plan: bool,
    /// Finish an interrupted bisection (its id, as printed).
    #[arg(long, conflicts_with_all = ["repo", "good", "bad", "build", "metric", "plan", "command", "config_template"])]
    pub resume: Option<String>,
    /// The command to measure (instead of --plan).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `sysdelta bisect`.
pub fn run(a: &BisectArgs, store: &Path) -> Result<ExitCode> {
    let p = match &a.resume {
        Some(id) => {
            let changed = a.budget.is_some()
                || a.round.is_some()
                || a.alpha.is_some()
                || a.seed.is_some()
                || a.fixed_runs.is_some()
                || a.cache.is_some()
                || a.regex.is_some();
            if changed {
                return Err(bad(
                    "--resume finishes the bisection as it was started; its options cannot change",
                ));
            }
            // The stored parameters name a build command run as us: only
            // from a store we own (as `run --resume` runs a stored plan).
            crate::store::Store::check_trusted(store)?;
            let p = bisect::state::load(store, id)?;
            trust_resumed(store, &p, a.trust_stored_plan)?;
            p
        }
        None => params(a)?,
    };
    range::check_owned(&p.repo)?;
    // Ours alone, checked (a shared --cache could hold another user's
    // planted build outcomes), and one process a bisection at a time.
    if let Some(parent) = p.cache.parent() {
        private(parent)?;
    }
    private(&p.cache)?;
    let _lock = lock(&p.cache, &p.id)?;
    let cancel = crate::runner::signals::install()?;
    let commits = range::commits(&p.repo, &p.good, &p.bad)?;
    // A template's commits may be kernels built from a tree: the kernel
    // subject builds those first and hands any other to the userspace one.
    let subject = Kernel {
        inner: Userspace {
            repo: p.repo.clone(),
            cache: p.cache.clone(),
            build: p.build.clone(),
            template: p.config_template.clone(),
            cancel: cancel.clone(),
        },
        workloads_toml: p.workloads_toml.clone(),
    };
    crate::sys::stderr::say!(
        "sysdelta: bisect {}: {} commits from {} to {}; resume with: sysdelta bisect --resume {} --store {}",
        p.id,
        commits.len(),
        range::short(&p.good),
        range::short(&p.bad),
        p.id,
        store.display()
    );
    match bisect::run(store, &p, &subject, &commits, &cancel)? {
        // Its parameters are stored with its first experiment: one
        // interrupted before it (building the good or bad end) is started
        // again, not resumed.
        Outcome::Interrupted if bisect::state::load(store, &p.id).is_err() => {
            crate::sys::stderr::say!(
                "sysdelta: bisect {} interrupted before its first experiment; start it again with the same command (its builds so far are kept)",
                p.id
            );
            Ok(ExitCode::from(crate::runner::signals::INTERRUPTED as u8))
        }
        Outcome::Interrupted => {
            crate::sys::stderr::say!(
                "sysdelta: bisect {} interrupted; resume with: sysdelta bisect --resume {} --store {}",
                p.id,
                p.id,
                store.display()
            );
            Ok(ExitCode::from(crate::runner::signals::INTERRUPTED as u8))
        }
        Outcome::Answered(s) => {
            let mut out = std::io::stdout().lock();
            out.write_all(bisect::report::text(&s).as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A new bisection's parameters from the flags, every one checked.
fn params(a: &BisectArgs) -> Result<Params> {
    let need = |v: &Option<String>, f: &str| {
        v.clone()
            .ok_or_else(|| bad(format!("bisect needs {f} (or --resume ID)")))
    };
    let repo = a.repo.clone().ok_or_else(|| bad("bisect needs --repo"))?;
    range::check_owned(&repo)?;
    let repo = repo
        .canonicalize()
        .map_err(|e| bad(format!("--repo {}: {e}", repo.display())))?;
    let good = range::resolve(&repo, &need(&a.good, "--good")?, "--good")?;
    let bad_id = range::resolve(&repo, &need(&a.bad, "--bad")?, "--bad")?;
    if good == bad_id {
        return Err(bad("--good and --bad name the same commit"));
    }
    let metric = need(&a.metric, "--metric")?;
    let (workload, metric) = metric
        .split_once('/')
        .filter(|(w, m)| !w.is_empty() && !m.is_empty())
        .ok_or_else(|| bad(format!("--metric '{metric}': expected WORKLOAD/METRIC")))?;
    let workloads_toml = workloads_toml(a, workload, metric, &good)?;
    let (budget, round) = (a.budget.unwrap_or(48), a.round.unwrap_or(6));
    if round < 2 || budget < round {
        return Err(bad(format!(
            "--round {round} --budget {budget}: a round needs 2 runs or more, and the budget at least one round"
        )));
    }
    if a.fixed_runs.is_some_and(|n| n < 2) {
        return Err(bad("--fixed-runs: at least 2"));
    }
    let alpha = a.alpha.unwrap_or(0.01);
    if !(alpha > 0.0 && alpha < 0.5) {
        return Err(bad(format!(
            "--alpha {alpha}: expected a number in (0, 0.5)"
        )));
    }
    let config_template = template(a, &workloads_toml, &good)?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let id = format!("{:08x}", rand::random::<u32>());
    // Absolute: checkouts are cloned from inside it, and a resume may
    // start from another directory.
    let cache = match &a.cache {
        Some(c) => {
            std::path::absolute(c).map_err(|e| bad(format!("--cache {}: {e}", c.display())))?
        }
        None => default_cache()?,
    }
    .join(&id);
    Ok(Params {
        id,
        repo,
        good,
        bad: bad_id,
        build: a.build.clone(),
        config_template,
        workload: workload.to_string(),
        metric: metric.to_string(),
        workloads_toml,
        budget,
        round,
        alpha,
        seed,
        fixed_runs: a.fixed_runs,
        cache,
    })
}

/// The plan's text without configs: --plan's file, or one workload made
/// from `-- CMD`. Checked by parsing it with one config.
fn workloads_toml(a: &BisectArgs, workload: &str, metric: &str, good: &str) -> Result<String> {
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let text = match (&a.plan, a.command.is_empty()) {
        (Some(path), _) => std::fs::read_to_string(path)
            .map_err(|e| bad(format!("--plan {}: {e}", path.display())))?,
        (None, false) => {
            let mut t = format!(
                "[[workload]]\nname = {}\ncommand = {}\n",
                q(workload),
                q(&a.command.join(" "))
            );
            if let Some(re) = &a.regex {
                t.push_str(&format!(
                    "metrics = [{{ name = {}, regex = {} }}]\n",
                    q(metric),
                    q(re)
                ));
            }
            t
        }
        (None, true) => return Err(bad("bisect needs --plan PLAN or -- CMD")),
    };
    let shown = a
        .plan
        .as_ref()
        .map_or("the command".to_string(), |p| p.display().to_string());
    let table: toml::Table = text.parse().map_err(|e| bad(format!("{shown}: {e}")))?;
    if table.contains_key("config") {
        return Err(bad(format!(
            "{shown}: a bisect plan holds no [[config]]: bisect makes one for each commit"
        )));
    }
    // Checked with the config a commit will have: a kernel plan's settings
    // (boots) need the template's kernel config.
    let config = match &a.config_template {
        Some(path) => std::fs::read_to_string(path)
            .map(|t| crate::bisect::subject::fill(&t, "trial", good, Path::new("/")))
            .map_err(|e| bad(format!("--config-template {}: {e}", path.display())))?,
        None => "[[config]]\nname = \"trial\"\n".to_string(),
    };
    let trial = format!("{text}\n{config}");
    let plan =
        crate::plan::parse(&shown, &trial, &Default::default()).map_err(Error::into_bad_input)?;
    if !plan.workloads.iter().any(|w| w.name == workload) {
        return Err(bad(format!(
            "--metric {workload}/{metric}: {shown} has no workload '{workload}'"
        )));
    }
    Ok(text)
}

/// `--config-template`'s text, checked: one `[[config]]` that, filled in,
/// makes a valid plan with the workloads. Filled with the good commit: a
/// kernel config's `ref = "{commit}"` is resolved in its tree when parsed.
fn template(a: &BisectArgs, workloads: &str, good: &str) -> Result<Option<String>> {
    let Some(path) = &a.config_template else {
        return Ok(None);
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("--config-template {shown}: {e}")))?;
    let filled = crate::bisect::subject::fill(&text, "trial", good, Path::new("/"));
    let table: toml::Table = filled
        .parse()
        .map_err(|e| bad(format!("--config-template {shown}: {e}")))?;
    let configs = table
        .get("config")
        .and_then(|c| c.as_array())
        .map_or(0, Vec::len);
    if configs != 1 || table.len() != 1 {
        return Err(bad(format!(
            "--config-template {shown}: expected one [[config]] table and nothing else"
        )));
    }
    crate::plan::parse(&shown, &format!("{workloads}{filled}"), &Default::default())
        .map_err(Error::into_bad_input)?;
    Ok(Some(text))
}

/// `$XDG_CACHE_HOME/sysdelta/bisect`, else `~/.cache/sysdelta/bisect`.
fn default_cache() -> Result<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| bad("bisect: no HOME or XDG_CACHE_HOME for its cache; give --cache"))?;
    Ok(base.join("sysdelta").join("bisect"))
}

/// Refuse to run a build command and template read from a store that is
/// not only this user's (a PostgreSQL team store: any of its writers could
/// have written them), or from a bisection copied into the user's own by
/// pull or push, unless the user saw them and said --trust-stored-plan.
fn trust_resumed(store: &Path, p: &Params, trust: bool) -> Result<()> {
    let opened = crate::store::Store::open(store, false)?;
    // A store of the user's own, and the bisection written there, not
    // copied in by pull or push (whose parameters another store's writers
    // wrote).
    let not_owned = match crate::cli::trust::not_owned(&opened) {
        None => match bisect::state::first(&opened, &p.id)? {
            Some(exp) => crate::cli::trust::not_written_here(&opened, exp)?,
            None => None,
        },
        why => why,
    };
    let Some(why) = not_owned else {
        return Ok(());
    };
    let safe = crate::report::escape::terminal_safe;
    crate::sys::stderr::say!(
        "sysdelta: bisect {} would run, in checkouts of {}:\n  build: {}\n  template: {}",
        safe(&p.id),
        safe(&p.repo.display().to_string()),
        safe(p.build.as_deref().unwrap_or("(none)")),
        safe(p.config_template.as_deref().unwrap_or("(none)"))
    );
    if trust {
        return Ok(());
    }
    Err(bad(format!(
        "--resume {}: its build command and template (shown above) come from {why}: check them, then pass --trust-stored-plan; nothing was run",
        p.id
    )))
}

/// `dir` made 0700 if missing, refused unless ours and written by us
/// alone (kbuild's rule, whose messages name kernel builds).
fn private(dir: &Path) -> Result<()> {
    crate::kbuild::cache::private_dir(dir).map_err(|e| {
        let e = e.to_string();
        bad(format!(
            "bisect cache: {}",
            e.strip_prefix("kernel builds: ").unwrap_or(&e)
        ))
    })
}

/// An exclusive lock on `cache.lock` for the whole run: two processes
/// resuming one bisection would remove each other's checkouts and take
/// over each other's rounds.
fn lock(cache: &Path, id: &str) -> Result<nix::fcntl::Flock<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut path = cache.as_os_str().to_owned();
    path.push(".lock");
    let path = PathBuf::from(path);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| bad(format!("{}: {e}", path.display())))?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(|(_, e)| {
        bad(format!(
            "bisect {id}: another sysdelta is running it ({}: {e}); nothing was run",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_process_cannot_run_the_same_bisection() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("0a1b2c3d");
        let held = lock(&cache, "0a1b2c3d").unwrap();
        // flock is per open file: a second open, as a second process
        // makes, is refused while the first is held.
        let err = lock(&cache, "0a1b2c3d").unwrap_err().to_string();
        assert!(err.contains("another sysdelta is running it"), "{err}");
        drop(held);
        lock(&cache, "0a1b2c3d").unwrap();
    }
}
