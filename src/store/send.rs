//! The run path's side of a PostgreSQL store's background writer (see
//! `writer`): what waits (the run log's rows, the deferred state writes)
//! handed over when a fold falls due, the writer's answers taken without
//! waiting, the one warning when the server goes and the one line when it
//! is back, and the experiment's end, which waits for the server only a
//! bounded time and then leaves what is left on this machine, for
//! `sysdelta flush` (or any later command that opens the store).

// The types and imports of the store, whose impl this file continues.
use super::*;

use std::time::{Duration, Instant};

use super::writer::{Answer, Batch, Writer};

/// At the end of an experiment, how long to wait for a server found out
/// of reach before leaving what waits on this machine.
pub const END_GRACE: Duration = Duration::from_secs(10);

/// What an experiment left only on this machine: its server did not take
/// it before the end. `sysdelta flush` sends it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeftLocal {
    /// Runs in the run log, beside the anchor.
    pub runs: usize,
    /// State writes (config entered, events, status, the end) in
    /// `<anchor>.deferred`.
    pub writes: usize,
}

impl Store {
    /// From now on (a PostgreSQL store while an experiment runs), the
    /// server is written by the background writer. Nothing for SQLite.
    pub(super) fn start_writer(&self) -> Result<()> {
        let Db::Pg(pg) = &self.db else {
            return Ok(());
        };
        let w = Writer::start(pg.config(), pg.shown(), self.path.clone())
            .context("starting the store's writer")?;
        *self.writer.borrow_mut() = Some(w);
        Ok(())
    }

    /// How many of the deferred writes the batch in flight holds.
    pub(super) fn writes_in_flight(&self) -> usize {
        self.writer
            .borrow()
            .as_ref()
            .and_then(|w| w.in_flight.as_ref())
            .map_or(0, |f| f.writes)
    }

    /// Whether the background writer writes the server.
    pub(super) fn has_writer(&self) -> bool {
        self.writer.borrow().is_some()
    }

    /// Take the writer's answer to the batch in flight if it came within
    /// `wait`: what it stored leaves the run log and `.deferred`; the
    /// server's absence is said once (also when a batch has gone
    /// unanswered for `writer::WARN_AFTER`), its return once. A batch the
    /// server refused is an error.
    pub(super) fn take_answer(&self, wait: Duration) -> Result<()> {
        let got = {
            let mut w = self.writer.borrow_mut();
            let Some(writer) = w.as_mut() else {
                return Ok(());
            };
            match writer.answer(wait) {
                Some(got) => got,
                None => {
                    let stuck = writer
                        .in_flight
                        .as_ref()
                        .is_some_and(|f| f.since.elapsed() >= super::writer::WARN_AFTER);
                    drop(w);
                    if stuck {
                        self.note_unreachable(&self.unreachable_error(format!(
                            "no answer for {} s",
                            super::writer::WARN_AFTER.as_secs()
                        )));
                    }
                    return Ok(());
                }
            }
        };
        let (sent, answer) = got;
        match answer {
            Answer::Stored => {
                if let Some(log) = self.log.borrow_mut().as_mut() {
                    log.acked(sent.rows)?;
                }
                self.deferred.borrow_mut().drain(..sent.writes);
                self.keep_deferred()?;
                self.note_reachable();
                Ok(())
            }
            Answer::Unreachable(why) => {
                self.note_unreachable(&self.unreachable_error(why));
                Ok(())
            }
            Answer::Failed(why) => Err(anyhow::anyhow!("{}: {why}", self.shown())),
        }
    }

    fn unreachable_error(&self, why: String) -> anyhow::Error {
        db::Unreachable {
            url: self.shown(),
            why,
        }
        .into()
    }

    /// Hand the writer everything that waits, unless a batch is in flight
    /// (it then goes with the next one).
    pub(super) fn send_waiting(&self) {
        let mut w = self.writer.borrow_mut();
        let Some(writer) = w.as_mut().filter(|w| w.in_flight.is_none()) else {
            return;
        };
        let rows = match self.log.borrow_mut().as_mut() {
            Some(log) => {
                // The next fold is due a full FOLD_EVERY from now.
                log.retry_later();
                log.pending.clone()
            }
            None => Vec::new(),
        };
        let writes = self.deferred.borrow().clone();
        if !rows.is_empty() || !writes.is_empty() {
            writer.send(Batch { rows, writes });
        }
    }

    /// Whether nothing waits for the server and nothing is in flight.
    fn caught_up(&self) -> bool {
        let rows = self.log.borrow().as_ref().map_or(0, |l| l.pending.len());
        let in_flight = self
            .writer
            .borrow()
            .as_ref()
            .is_some_and(|w| w.in_flight.is_some());
        rows == 0 && self.deferred.borrow().is_empty() && !in_flight
    }

    /// Send what waits and wait for the writer to store it, until
    /// `give_up` says so (asked between answers); whether it was stored.
    pub(super) fn catch_up(&self, mut give_up: impl FnMut(Instant) -> bool) -> Result<bool> {
        let start = Instant::now();
        loop {
            self.send_waiting();
            if self.caught_up() {
                return Ok(true);
            }
            let in_flight = self
                .writer
                .borrow()
                .as_ref()
                .is_some_and(|w| w.in_flight.is_some());
            if !in_flight {
                // Something waits and could not be handed over: the
                // writer's thread is gone. The rest stays on this machine.
                return Err(anyhow::anyhow!(
                    "{}: the store's writer stopped; what waits stays on this machine",
                    self.shown()
                ));
            }
            if give_up(start) {
                return Ok(false);
            }
            self.take_answer(Duration::from_millis(100))?;
        }
    }

    /// The end's wait: while the writer is answering, up to
    /// `db::PATIENCE`; once the server is known out of reach, up to
    /// [`END_GRACE`] more. Whether everything reached the server; if not,
    /// the rest stays on this machine, and nothing more waits for it.
    pub(super) fn catch_up_at_end(&self) -> Result<bool> {
        if self.gave_up.get() {
            return Ok(false);
        }
        let mut gone_since: Option<Instant> = None;
        let stored = self.catch_up(|start| {
            if self.unreachable.get() {
                let since = *gone_since.get_or_insert_with(Instant::now);
                return since.elapsed() >= END_GRACE;
            }
            start.elapsed() >= db::PATIENCE
        })?;
        self.gave_up.set(!stored);
        Ok(stored)
    }

    /// What this experiment leaves only on this machine (None: nothing,
    /// the server has it all).
    pub fn left_local(&self) -> Option<LeftLocal> {
        let left = LeftLocal {
            runs: self.left_runs.get() + self.log.borrow().as_ref().map_or(0, |l| l.pending.len()),
            writes: self.deferred.borrow().len(),
        };
        (left != LeftLocal::default()).then_some(left)
    }
}

/// The line that says what experiment `exp` left only on this machine
/// (the store anchored at `anchor`) and the command that sends it.
pub fn left_local_line(exp: i64, anchor: &Path, left: LeftLocal) -> String {
    format!(
        "sysdelta: experiment {exp}: {} and {} are still only on this machine ({} did not answer); send them with: sysdelta flush --store {}",
        fold::plural(left.runs, "run"),
        fold::plural(left.writes, "other write"),
        pg::named(anchor),
        Store::beside(anchor, "").display()
    )
}

/// What waits on this machine for the store anchored at `anchor`, read
/// from its run log and `<anchor>.deferred` without the server: runs per
/// experiment, and the other writes (for `list` while the server is out of
/// reach, and `flush`).
pub fn waiting_here(anchor: &Path) -> (BTreeMap<i64, usize>, usize) {
    let mut runs = BTreeMap::new();
    if let Ok((contents, _)) = runlog::Contents::read(&runlog::path_for(anchor)) {
        for r in &contents.records {
            *runs.entry(r.row.experiment_id).or_insert(0) += 1;
        }
    }
    // Read as every file beside a store is (not through a link, not
    // another user's); one that fails the checks counts as nothing here,
    // and the store's open refuses it in one line.
    let writes = crate::sys::trust::read(&deferred::path_for(anchor))
        .ok()
        .flatten()
        .map(|b| {
            String::from_utf8_lossy(&b)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count()
        })
        .unwrap_or(0);
    (runs, writes)
}
