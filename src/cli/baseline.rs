//! Named baselines on the command line: `run`/`ab` `--save-baseline NAME`
//! stores the finished experiment as baseline NAME (`save-baseline NAME
//! [EXPERIMENT]` a stored one), `--against-baseline
//! NAME` (also `compare --against-baseline`) compares with the experiment
//! it points at, with `compare`'s statistics. Named `--against-baseline`
//! rather than criterion's `--baseline`, which has long meant the
//! reference config of `run`, `ab` and `report` (docs/reports.md,
//! "Baselines").

use std::path::Path;

use anyhow::Result;

use super::args::{report_options, ExecArgs};
use super::output::emit;
use crate::analysis;
use crate::report::{self, ReportOptions};
use crate::store::{baselines::check_name, Store};
use crate::sys::stderr::say;
use crate::sys::visible::terminal_safe as safe;

/// Before anything runs: the names are names, and `--against-baseline`'s
/// exists in the store (bad input otherwise, nothing run or stored).
pub fn check(e: &ExecArgs, store_path: &Path) -> Result<()> {
    if let Some(n) = &e.save_baseline {
        check_name(n)?;
    }
    if let Some(n) = &e.against_baseline {
        check_name(n)?;
        Store::open(store_path, false)?.baseline(n)?;
    }
    Ok(())
}

/// After a complete experiment `id` with a result in every cell: compare it
/// with `--against-baseline`'s experiment, config by config, then save it
/// as `--save-baseline` (so a run may be compared with the old baseline and
/// become the new one). True when `--fail-on` failed on a comparison.
pub fn after(store: &Store, id: i64, e: &ExecArgs) -> Result<bool> {
    let mut gate_failed = false;
    if let Some(name) = &e.against_baseline {
        gate_failed = against(store, name, id, e)?;
    }
    if let Some(name) = &e.save_baseline {
        save(store, name, id)?;
    }
    Ok(gate_failed)
}

/// Make baseline `name` point at experiment `id`, and say so.
fn save(store: &Store, name: &str, id: i64) -> Result<()> {
    match store.save_baseline(name, id)? {
        Some(old) => say!(
            "sysdelta: baseline '{name}' moved from experiment {old} (kept) to experiment {id}"
        ),
        None => say!("sysdelta: baseline '{name}' is experiment {id}"),
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct SaveBaselineArgs {
    /// The baseline's name: 1 to 64 letters, digits, '.', '_' or '-'.
    pub name: String,
    /// The experiment it names: an id, a label or `last` (the default).
    pub experiment: Option<String>,
}

/// `sysdelta save-baseline NAME [EXPERIMENT]`: what `--save-baseline`
/// does at the end of a run, for an experiment already stored (imported,
/// pulled, or run without the flag), and as there only for a complete
/// experiment with a result in every cell that has runs. A store that
/// does not exist is not made.
pub fn save_stored(a: &SaveBaselineArgs, store_path: &Path) -> Result<()> {
    check_name(&a.name)?;
    // Opened to read first: a missing store is bad input, not a new one.
    drop(Store::open(store_path, false)?);
    let store = Store::open(store_path, true)?;
    let id = store.resolve(a.experiment.as_deref().unwrap_or("last"))?;
    let info = store.info(id)?;
    let not = |why: String| {
        crate::error::bad(format!(
            "experiment {id} {why}: not saved as baseline '{}'",
            a.name
        ))
    };
    if info.status != crate::status::ExperimentStatus::Complete {
        return Err(not(format!("is {}", info.status.as_str())));
    }
    let mut failed: Vec<String> = (store.cell_tallies(id)?.into_iter())
        .filter(|(_, t)| t.measured_ok == 0)
        .map(|((c, w), _)| format!("{}/{}", safe(&c), safe(&w)))
        .collect();
    if !failed.is_empty() {
        failed.sort();
        return Err(not(format!("has no result in {}", failed.join(", "))));
    }
    save(&store, &a.name, id)
}

/// Experiment `id` against baseline `name`'s, one comparison per config
/// both have (a plan's configs compared with themselves, not with the
/// baseline config), in the report's `--format` on stdout. Each comparison
/// is judged by `--fail-on` (a one-config CI run has no comparison of its
/// own: the baseline's is the one it is run for); true when one failed.
fn against(store: &Store, name: &str, id: i64, e: &ExecArgs) -> Result<bool> {
    let mut opts: ReportOptions = report_options(&e.report)?;
    let mut gate_failed = false;
    let base = store.baseline(name)?;
    let base_configs = store.info(base)?.configs;
    let configs: Vec<String> = store
        .info(id)?
        .configs
        .into_iter()
        .filter(|c| base_configs.contains(c))
        .collect();
    if configs.is_empty() {
        return Err(crate::error::bad(format!(
            "--against-baseline {name}: experiment {base} shares no config with experiment {id}"
        )));
    }
    // The comparison's configs are the two experiments: --baseline's
    // config name means nothing there.
    opts.analysis.baseline = None;
    for c in configs {
        say!(
            "sysdelta: experiment {id} against baseline '{name}' (experiment {base}), config {}:",
            safe(&c)
        );
        let specs = [format!("{base}:{c}"), format!("{id}:{c}")];
        let compared = analysis::compare::build(store, &specs)?;
        for w in &compared.warnings {
            say!("sysdelta: warning: {w}");
        }
        let view = analysis::compare::analyze(compared, &opts.analysis)?;
        emit(&report::compare::render(&view, &opts)?, None)?;
        gate_failed |= super::report::gate(&view.analysis, &e.report);
    }
    Ok(gate_failed)
}
