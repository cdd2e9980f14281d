//! Named baselines (`--save-baseline NAME`, `--against-baseline NAME`, as
//! criterion's `--save-baseline` / `--baseline`): a name pointing at one
//! experiment, kept in the `meta` table as `baseline:NAME` -> the ids it
//! has pointed at, oldest first, the last the current one. A row in a
//! table every schema version has: no migration, and older sysdeltas (which
//! read only `meta`'s `app` and `schema_version`) open the store as before.
//! Saving a name again moves it to the new experiment explicitly and keeps
//! the experiments it pointed at before, and their ids in the row.

use anyhow::Result;

use super::db::vals;
use super::Store;
use crate::error::bad;
use crate::sys::visible::terminal_safe as safe;

/// The `meta` key prefix of a baseline.
const PREFIX: &str = "baseline:";
/// The longest baseline name.
const NAME_MAX: usize = 64;

/// Bad input unless `name` is a baseline name: 1 to 64 letters, digits,
/// '.', '_' or '-' (it is shown in reports and typed in CI scripts).
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    match ok {
        true => Ok(()),
        false => Err(bad(format!(
            "baseline name '{}': use 1 to {NAME_MAX} letters, digits, '.', '_' or '-'",
            safe(name)
        ))),
    }
}

impl Store {
    /// The ids baseline `name` has pointed at, oldest first; empty when
    /// there is no such baseline.
    fn baseline_ids(&self, name: &str) -> Result<Vec<i64>> {
        let value: Option<String> = self.db.query_opt(
            "SELECT value FROM meta WHERE key = ?1",
            &vals![&format!("{PREFIX}{name}")],
            |r| r.get(0),
        )?;
        Ok(value
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|id| id.parse().ok())
            .collect())
    }

    /// The experiment baseline `name` points at now; bad input naming the
    /// saved baselines when there is no such one.
    pub fn baseline(&self, name: &str) -> Result<i64> {
        check_name(name)?;
        if let Some(id) = self.baseline_ids(name)?.last() {
            return Ok(*id);
        }
        let names = self.baselines()?;
        let saved = match names.is_empty() {
            true => "none is saved (run with --save-baseline NAME, or sysdelta save-baseline NAME)"
                .to_string(),
            false => format!(
                "saved: {}",
                // Names are checked on the way in, but the row is anyone's
                // with write access to the store: shown made safe.
                names
                    .iter()
                    .map(|b| safe(&b.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err(bad(format!(
            "no baseline '{name}' in {}; {saved}",
            self.shown()
        )))
    }

    /// Every baseline: its name and the ids it has pointed at, oldest
    /// first.
    pub fn baselines(&self) -> Result<Vec<(String, Vec<i64>)>> {
        let rows: Vec<(String, String)> = self.db.query(
            "SELECT key, value FROM meta WHERE key LIKE 'baseline:%' ORDER BY key",
            &[],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix(PREFIX)?.to_string();
                let ids = v
                    .split_whitespace()
                    .filter_map(|i| i.parse().ok())
                    .collect();
                Some((name, ids))
            })
            .collect())
    }

    /// Point baseline `name` at experiment `id` (which must exist),
    /// keeping the ids it pointed at before; the one it pointed at until
    /// now, if another.
    pub fn save_baseline(&self, name: &str, id: i64) -> Result<Option<i64>> {
        check_name(name)?;
        if let Some(why) = &self.read_only {
            return Err(bad(format!(
                "baseline '{name}': {} cannot be written ({why})",
                self.shown()
            )));
        }
        self.resolve(&id.to_string())?;
        // One statement appends the id (unless it is the last already), so
        // two runs saving at once both keep theirs: a read, then a write of
        // what was read, lost one. The row it returns says where the name
        // pointed before, whoever moved it there.
        let value: Option<String> = self.db.query_opt(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = meta.value || ' ' || excluded.value
             WHERE (' ' || meta.value) NOT LIKE ('% ' || excluded.value)
             RETURNING value",
            &vals![&format!("{PREFIX}{name}"), &id.to_string()],
            |r| r.get(0),
        )?;
        let Some(value) = value else {
            return Ok(None); // it points at `id` already
        };
        let ids: Vec<i64> = value
            .split_whitespace()
            .filter_map(|i| i.parse().ok())
            .collect();
        Ok(ids.len().checked_sub(2).map(|i| ids[i]))
    }
}

/// What a copy of an experiment (`push`, `pull`) did with a named baseline
/// that points at it in the store it was copied from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineCopy {
    /// The target had no baseline of that name: it now points at the copy.
    Made(String),
    /// The target's baseline of that name pointed at an experiment the
    /// source's had pointed at before (by uid): it moved on to the copy,
    /// as it did in the source, keeping the ids it pointed at before.
    /// Only where the copy may follow the source's history
    /// ([`Moves::FollowSource`]).
    Moved(String),
    /// The target's baseline pointed at the copy already.
    Same(String),
    /// The target's baseline points at experiment `there` (its id in the
    /// target), another than the copy: left as it is, never overwritten
    /// (two stores saved the name for different runs, or a pull, which
    /// never moves a name the target has).
    Kept { name: String, there: i64 },
}

/// Whether a copy may move on a name the target has for another
/// experiment, following the source's history of the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moves {
    /// `push`: the source is the user's own store, and so is the history
    /// of its names; the target's name moves on where the source's did.
    FollowSource,
    /// `pull`: the source's `meta` row is anyone's who can write that
    /// store, and the target is the user's own, whose names a CI job
    /// gates against (`--against-baseline main --fail-on`): a name the
    /// target has is never moved, only names it lacks are made.
    Never,
}

/// How often a name's row is read when another writer changes it between
/// the read and a write (a push from another host) before the copy gives
/// up (and is rolled back).
const RACE_RETRIES: usize = 3;

impl Store {
    /// Carry into `to` the baselines of `self` that point at experiment
    /// `id` now, as pointing at `dst` (its copy in `to`); called inside
    /// the copy's transaction of `to`. A name `to` lacks is made; one it
    /// has for another experiment moves on only under
    /// [`Moves::FollowSource`], when the source's name had pointed at that
    /// experiment before (the source moved on from it, as `to` now does);
    /// otherwise it is kept, and said. Names that are not baseline names
    /// (the `meta` row is anyone's who can write the store) are not
    /// carried.
    pub(super) fn copy_baselines(
        &self,
        id: i64,
        to: &Store,
        dst: i64,
        moves: Moves,
    ) -> Result<Vec<BaselineCopy>> {
        let mut out = Vec::new();
        for (name, ids) in self.baselines()? {
            if ids.last() != Some(&id) || check_name(&name).is_err() {
                continue;
            }
            let mut done = None;
            for _ in 0..RACE_RETRIES {
                done = self.carry(&name, &ids, to, dst, moves)?;
                if done.is_some() {
                    break;
                }
            }
            // Never met in practice: each retry needs another writer's
            // change in between. The copy is rolled back, to be run again.
            out.push(done.ok_or_else(|| {
                anyhow::anyhow!(
                    "baseline {name} in {} was changed by another writer {RACE_RETRIES} times \
                     while this copy read it; the experiment was not copied, copy it again",
                    to.shown()
                )
            })?);
        }
        Ok(out)
    }

    /// One try of carrying the source's baseline `name` (which has pointed
    /// at `ids`) into `to` as pointing at `dst`: what it did, or None when
    /// another writer changed the name in `to` between the read and the
    /// write (each write is conditional on the row as read, so nobody's
    /// change is overwritten), to be read again.
    fn carry(
        &self,
        name: &str,
        ids: &[i64],
        to: &Store,
        dst: i64,
        moves: Moves,
    ) -> Result<Option<BaselineCopy>> {
        let key = format!("{PREFIX}{name}");
        let value: Option<String> =
            to.db
                .query_opt("SELECT value FROM meta WHERE key = ?1", &vals![&key], |r| {
                    r.get(0)
                })?;
        let Some(value) = value else {
            // Made now, unless another writer made it since the read (a
            // unique-key error would roll the whole copy back).
            let made: Option<String> = to.db.query_opt(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO NOTHING RETURNING key",
                &vals![&key, &dst.to_string()],
                |r| r.get(0),
            )?;
            return Ok(made.map(|_| BaselineCopy::Made(name.to_string())));
        };
        let name = name.to_string();
        let there: Option<i64> = value
            .split_whitespace()
            .filter_map(|i| i.parse().ok())
            .next_back();
        let Some(there) = there else {
            // An empty or unreadable row: the name points nowhere, so the
            // copy takes it (no experiment loses its name).
            let n = to.db.execute(
                "UPDATE meta SET value = ?3 WHERE key = ?1 AND value = ?2",
                &vals![&key, &value, &dst.to_string()],
            )?;
            return Ok((n == 1).then_some(BaselineCopy::Made(name)));
        };
        if there == dst {
            return Ok(Some(BaselineCopy::Same(name)));
        }
        if moves == Moves::Never || !self.pointed_before(ids, to, there) {
            return Ok(Some(BaselineCopy::Kept { name, there }));
        }
        // Moved only from the value read: a name another writer moved
        // meanwhile is read again, not overwritten.
        let n = to.db.execute(
            "UPDATE meta SET value = value || ' ' || ?3 WHERE key = ?1 AND value = ?2",
            &vals![&key, &value, &dst.to_string()],
        )?;
        Ok((n == 1).then_some(BaselineCopy::Moved(name)))
    }

    /// Whether experiment `there` of `to` is one the source's name pointed
    /// at before its current one (`ids`, oldest first), by uid.
    fn pointed_before(&self, ids: &[i64], to: &Store, there: i64) -> bool {
        let Ok(uid) = to.uid(there) else {
            return false;
        };
        // An id whose experiment was since removed has no uid.
        ids[..ids.len().saturating_sub(1)]
            .iter()
            .any(|i| self.uid(*i).is_ok_and(|u| u == uid))
    }
}
