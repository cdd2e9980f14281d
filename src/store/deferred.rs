//! State writes that wait for a PostgreSQL server out of reach, so that a
//! network blip or a restarted server pauses nothing: the config entered
//! (and its environment), events and status changes of a running
//! experiment are kept, in order, in memory and in `<anchor>.deferred`
//! beside the store's anchor, and written when the server answers again:
//! before the next write or fold, and, if this sysdelta dies first, by the
//! next one that opens the store on this machine (as a dead run's log is
//! folded). Runs wait in the run log the same way (see `fold`).
//!
//! An event kept here is stamped with the time it reached the server.
//! Writes whose answer the runner needs (a new experiment's id, a boot's)
//! are not deferred: they wait for the server (see `db::PATIENCE`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::db::{self, vals};
use super::Store;

/// One deferred write.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) enum Write {
    Entered {
        exp: i64,
        config: Option<String>,
    },
    EnteredEnv {
        exp: i64,
        env: String,
    },
    Event {
        exp: i64,
        kind: String,
        message: String,
    },
    Status {
        exp: i64,
        status: String,
    },
    /// The experiment's end: its status, when, and what sysdelta used.
    Finish {
        exp: i64,
        status: String,
        self_usage: Option<String>,
    },
}

/// Drop from `pending[sent..]` (what the writer has not been handed yet)
/// the writes `w` makes void: the config entered (and its environment)
/// of the same experiment, which `w` sets again, so that a second of
/// config switches leaves one entered config to write, not hundreds.
fn supersede(pending: &mut Vec<Write>, sent: usize, w: &Write) {
    let voids = |old: &Write| match (w, old) {
        (Write::Entered { exp, .. }, Write::Entered { exp: e, .. })
        | (Write::Entered { exp, .. }, Write::EnteredEnv { exp: e, .. })
        | (Write::EnteredEnv { exp, .. }, Write::EnteredEnv { exp: e, .. }) => exp == e,
        _ => false,
    };
    let mut i = 0;
    pending.retain(|old| {
        let keep = i < sent || !voids(old);
        i += 1;
        keep
    });
}

/// `<anchor>.deferred`.
pub(super) fn path_for(store: &Path) -> PathBuf {
    Store::beside(store, ".deferred")
}

impl Store {
    /// Make `w` now, or, on a PostgreSQL store out of reach, keep it for
    /// when the server is back (see the module docs).
    pub(super) fn state_write(&self, w: Write) -> Result<()> {
        if !self.db.is_pg() {
            return self.apply(&w);
        }
        if self.has_writer() {
            // Kept here, crash-safe, and sent with the next fold: a config
            // switch waits for no commit on the server.
            let sent = self.writes_in_flight();
            supersede(&mut self.deferred.borrow_mut(), sent, &w);
            self.append_deferred(&w)?;
            self.deferred.borrow_mut().push(w);
            return Ok(());
        }
        if self.apply_deferred(false)? {
            match self.db.quickly(|| self.apply(&w)) {
                Err(e) if db::is_unreachable(&e) => self.note_unreachable(&e),
                other => return other,
            }
        }
        self.deferred.borrow_mut().push(w);
        self.keep_deferred()
    }

    /// Write what was deferred, in order, in one transaction; whether
    /// nothing is left waiting. `patient`: wait for the server up to the
    /// database's patience (before a read, at the end); else one quick
    /// try. Errors other than the server's absence are returned.
    pub(super) fn apply_deferred(&self, patient: bool) -> Result<bool> {
        if self.deferred.borrow().is_empty() {
            return Ok(true);
        }
        let pending = self.deferred.borrow().clone();
        let apply = || self.in_transaction(|| pending.iter().try_for_each(|w| self.apply(w)));
        let done = match patient {
            true => apply(),
            false => self.db.quickly(apply),
        };
        match done {
            Ok(()) => {
                self.deferred.borrow_mut().clear();
                let _ = std::fs::remove_file(path_for(&self.path));
                self.note_reachable();
                Ok(true)
            }
            Err(e) if db::is_unreachable(&e) && !patient => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Apply what a dead sysdelta on this machine left deferred (called
    /// on open, holding the store's lock). Best effort, as a dead run's
    /// log is folded: writes the store refuses (the database was made
    /// anew since, say) are set aside beside the file with one warning,
    /// and never stand in the way of the store.
    pub(super) fn apply_deferred_file(&self) -> Result<()> {
        let path = path_for(&self.path);
        // Only a file that is ours is obeyed; another is refused.
        let Some(bytes) = crate::sys::trust::read(&path).map_err(crate::error::bad)? else {
            return Ok(());
        };
        let text = String::from_utf8_lossy(&bytes);
        let writes: Vec<Write> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        *self.deferred.borrow_mut() = writes;
        match self.apply_deferred(true) {
            Ok(_) => Ok(()),
            Err(e) if db::is_unreachable(&e) => Err(e),
            Err(e) => {
                self.deferred.borrow_mut().clear();
                let aside = super::fold::aside_path(&path);
                let moved = std::fs::rename(&path, &aside);
                crate::sys::stderr::say!(
                    "sysdelta: warning: {}: the writes a stopped sysdelta left could not be stored ({}); {}",
                    path.display(),
                    crate::sys::visible::terminal_safe(&format!("{e:#}")),
                    match moved {
                        Ok(()) => format!("set aside in {}", aside.display()),
                        Err(m) => format!("they stay there ({m})"),
                    }
                );
                Ok(())
            }
        }
    }

    pub(super) fn apply(&self, w: &Write) -> Result<()> {
        match w {
            Write::Entered { exp, config } => self.db.execute(
                "UPDATE experiments SET entered_config = ?2, entered_env = NULL WHERE id = ?1",
                &vals![*exp, config.as_deref()],
            ),
            Write::EnteredEnv { exp, env } => self.db.execute(
                "UPDATE experiments SET entered_env = ?2 WHERE id = ?1",
                &vals![*exp, env],
            ),
            Write::Event { exp, kind, message } => self.db.execute(
                "INSERT INTO events (experiment_id, kind, message, at) VALUES (?1, ?2, ?3, {now})",
                &vals![*exp, kind, message],
            ),
            // Never undoes a `complete` (a write kept for days on a laptop
            // must not set back what a later resume finished).
            Write::Status { exp, status } => self.db.execute(
                "UPDATE experiments SET status = ?2 WHERE id = ?1 AND status <> 'complete'",
                &vals![*exp, status],
            ),
            Write::Finish {
                exp,
                status,
                self_usage,
            } => self.db.execute(
                "UPDATE experiments SET status = ?2, self_usage = COALESCE(?3, self_usage),
                     finished_at = {now} WHERE id = ?1",
                &vals![*exp, status, self_usage.as_deref()],
            ),
        }
        .map(drop)
    }

    /// Append `w` to `<anchor>.deferred` as one line (the writer's path):
    /// one `write`, where rewriting the file and renaming it into place
    /// cost about 2 ms on ext4 (a rename over a file flushes its data).
    /// The file may then hold writes `w` voids: applied in order after a
    /// crash, they end in the same state.
    fn append_deferred(&self, w: &Write) -> Result<()> {
        use std::io::Write as _;
        let path = path_for(&self.path);
        let mut out = self.deferred_out.borrow_mut();
        if out.is_none() {
            // Through the checks on files beside a store: made 0600, never
            // through a link, refused when another user's.
            *out = Some(crate::sys::trust::open_write(&path, true).map_err(|e| {
                crate::error::bad(format!(
                    "cannot keep the writes waiting for the server: {e}"
                ))
            })?);
        }
        let mut line = serde_json::to_string(w)?;
        line.push('\n');
        out.as_mut()
            .expect("opened above")
            .write_all(line.as_bytes())
            .with_context(|| {
                format!(
                    "{}: cannot keep the writes waiting for the server",
                    path.display()
                )
            })
    }

    /// Write the deferred writes whole to `<anchor>.deferred` (a
    /// temporary file renamed into place); none: the file is removed.
    pub(super) fn keep_deferred(&self) -> Result<()> {
        // The appending handle would write into the replaced file.
        *self.deferred_out.borrow_mut() = None;
        let path = path_for(&self.path);
        if self.deferred.borrow().is_empty() {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).with_context(|| {
                    format!(
                        "{}: cannot remove the writes the server has",
                        path.display()
                    )
                }),
                _ => Ok(()),
            };
        }
        let mut text = String::new();
        for w in self.deferred.borrow().iter() {
            text.push_str(&serde_json::to_string(w)?);
            text.push('\n');
        }
        // Whole, 0600, never through a link.
        crate::sys::trust::replace(&path, text.as_bytes())
            .map_err(std::io::Error::other)
            .with_context(|| {
                format!(
                    "{}: cannot keep the writes waiting for the server",
                    path.display()
                )
            })
    }

    /// Say once that the server is out of reach and what waits for it.
    pub(super) fn note_unreachable(&self, e: &anyhow::Error) {
        if !self.unreachable.replace(true) {
            crate::sys::stderr::say!(
                "sysdelta: warning: {e:#}; runs wait in {} and other writes in {} until it is back, and the experiment goes on",
                super::runlog::path_for(&self.path).display(),
                path_for(&self.path).display()
            );
        }
    }

    /// Say once that the server answers again.
    pub(super) fn note_reachable(&self) {
        if self.unreachable.replace(false) {
            crate::sys::stderr::say!(
                "sysdelta: {}: reachable again; what waited for it is stored",
                self.shown()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_entered_again_voids_what_was_not_sent_and_keeps_what_was() {
        let entered = |c: &str| Write::Entered {
            exp: 1,
            config: Some(c.into()),
        };
        let env = |e: &str| Write::EnteredEnv {
            exp: 1,
            env: e.into(),
        };
        let event = Write::Event {
            exp: 1,
            kind: "k".into(),
            message: "m".into(),
        };
        let mut pending = vec![
            entered("a"),
            env("A"),
            event.clone(),
            entered("b"),
            env("B"),
        ];
        // The first two are in flight: they stay, in order.
        supersede(&mut pending, 2, &entered("c"));
        assert_eq!(pending, vec![entered("a"), env("A"), event.clone()]);
        let other = Write::Entered {
            exp: 2,
            config: None,
        };
        pending.push(other.clone());
        supersede(&mut pending, 0, &env("C"));
        assert_eq!(pending, vec![entered("a"), event, other]);
    }
}
