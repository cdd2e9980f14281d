//! `sysdelta push` and `pull`: copy experiments between a machine's store
//! and a team's (or any two stores), by their uids, so a box that had no
//! network while it ran still ends up in the shared history. Pushing twice
//! stores once (see `store::copy`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::error::bad;
use crate::store::baselines::{BaselineCopy, Moves};
use crate::store::Store;

#[derive(Args)]
pub struct PushArgs {
    /// The store to copy into: postgresql://USER@HOST/DB (or a libpq
    /// 'host=... dbname=...' string; the password from PGPASSWORD or
    /// ~/.pgpass) or an SQLite file.
    #[arg(long, value_name = "URL|FILE")]
    pub to: String,
    /// Only this experiment (id, label or last); repeat for several.
    /// Default: every experiment.
    #[arg(long, short = 'e', value_name = "EXPERIMENT")]
    pub experiment: Vec<String>,
}

#[derive(Args)]
pub struct PullArgs {
    /// The store to copy from: postgresql://USER@HOST/DB (or a libpq
    /// 'host=... dbname=...' string; the password from PGPASSWORD or
    /// ~/.pgpass) or an SQLite file.
    #[arg(long, value_name = "URL|FILE")]
    pub from: String,
    /// Only this experiment of that store (id, label or last); repeat for
    /// several. Default: every experiment.
    #[arg(long, short = 'e', value_name = "EXPERIMENT")]
    pub experiment: Vec<String>,
}

/// `push`: from the store at `store` to `--to`.
pub fn push(a: &PushArgs, store: &Path) -> Result<()> {
    let from = Store::open(store, false)?;
    let ids = selected(&from, &a.experiment)?;
    let to = Store::open(&location(&a.to)?, true)?;
    // The names' history is the pusher's own: the target's move on with it.
    copy(&from, &to, &ids, Moves::FollowSource)
}

/// `pull`: from `--from` into the store at `store`.
pub fn pull(a: &PullArgs, store: &Path) -> Result<()> {
    let from = Store::open(&location(&a.from)?, false)?;
    let ids = selected(&from, &a.experiment)?;
    let to = Store::open(store, true)?;
    // The source's history of a name is anyone's who can write that
    // store: it moves none of the user's own (docs/reports.md, "Baselines").
    copy(&from, &to, &ids, Moves::Never)
}

/// A store named on the command line, as [`Store::open`] takes it.
fn location(named: &str) -> Result<PathBuf> {
    if named.contains("://") && !crate::store::pg::is_url(named) {
        return Err(bad(format!(
            "{}: not a store (an SQLite file, postgresql://... or host=... dbname=...)",
            crate::store::pg::without_password(named)
        )));
    }
    crate::store::pg::path_of(Path::new(named))
}

/// The experiments `selected` (all when empty) of `from`: every selector
/// is resolved before the target is opened (or made) at all.
fn selected(from: &Store, selected: &[String]) -> Result<Vec<i64>> {
    if selected.is_empty() {
        return from.experiment_ids();
    }
    selected.iter().map(|s| from.resolve(s)).collect()
}

/// The stores of one copy, as its lines name them.
struct Ends<'a> {
    from: &'a Store,
    to: &'a Store,
    moves: Moves,
}

/// A line on stdout per baseline a copy of experiment `id` (`copy` in
/// the target) carried, and a warning on stderr per one it left as the
/// target had it, naming both stores (a pull's target is the user's, a
/// push's the other one: no "here" or "there").
fn baseline_lines(done: &[BaselineCopy], ends: &Ends, id: i64, copy: i64) {
    for b in done {
        match b {
            BaselineCopy::Made(n) => println!("  baseline {n}: now points at it there"),
            BaselineCopy::Moved(n) => println!("  baseline {n}: moved on to it there"),
            BaselineCopy::Same(n) => println!("  baseline {n}: already points at it there"),
            BaselineCopy::Kept { name, there } => {
                let why = match ends.moves {
                    Moves::FollowSource => "and never pointed at that experiment",
                    Moves::Never => "and a pull never moves a name the store it copies into has",
                };
                crate::sys::stderr::say!(
                    "sysdelta: warning: baseline {name} left as it is in {}, where it points at \
                     experiment {there}: in {} it points at experiment {id} (copied as {copy}), \
                     {why} (docs/reports.md, \"Baselines\")",
                    ends.to.shown(),
                    ends.from.shown()
                )
            }
        }
    }
}

/// Copy experiments `ids` of `from` into `to`, one line each, moving on
/// the target's baselines as `moves` allows.
fn copy(from: &Store, to: &Store, ids: &[i64], moves: Moves) -> Result<()> {
    let ends = Ends { from, to, moves };
    let ids = ids.to_vec();
    let (mut new, mut grown, mut same) = (0, 0, 0);
    for id in ids {
        let c = from.copy_experiment_with(id, to, moves)?;
        let what = match (c.new, c.runs_added) {
            (true, n) => {
                new += 1;
                format!("stored as {}, {n} runs", c.id)
            }
            (false, 0) => {
                same += 1;
                format!("already there as {}", c.id)
            }
            (false, n) => {
                grown += 1;
                format!("{n} new runs added to {}", c.id)
            }
        };
        println!("experiment {id}: {what}");
        baseline_lines(&c.baselines, &ends, id, c.id);
    }
    crate::sys::stderr::say!(
        "sysdelta: {} -> {}: {new} new, {grown} grown, {same} already there",
        from.shown(),
        to.shown()
    );
    Ok(())
}
