//! The run log's side of the store: appending each run before the next
//! starts, folding the log into the tables in batches, and folding (or
//! setting aside) what a dead run left.

// The types and imports of the store, whose impl this file continues.
use super::*;

impl Store {
    /// Fold the run log a dead `sysdelta run` left, unless a live one holds
    /// the store (it folds its own log; a reader then sees the runs up to
    /// its last fold, at most about a second old). Best effort, so that a
    /// log never stands in the way of the store: its records are folded up
    /// to the first that is damaged or does not belong to this store, and
    /// the lines from there on are set aside (see [`Store::set_aside`]).
    /// A store opened read-only folds nothing and says that the log's runs
    /// are not shown. `held`: this process holds the store's lock already.
    pub(super) fn fold_orphaned_log(&self, held: bool) -> Result<()> {
        let log = runlog::path_for(&self.path);
        if !log.exists() {
            return Ok(());
        }
        let _lock = match held {
            true => None,
            false => match Store::try_lock(&self.path) {
                Ok(Some(l)) => Some(l),
                _ => return Ok(()),
            },
        };
        let (contents, bytes) = match runlog::Contents::read(&log) {
            Ok(read) => read,
            Err(e) => {
                crate::sys::stderr::say!(
                    "sysdelta: warning: {e:#}; the runs in it are not in the store"
                );
                return Ok(());
            }
        };
        if let Some(why) = &self.read_only {
            return self.warn_not_folded(&log, &contents, why);
        }
        let refused = match self.fold_records(&contents.records) {
            Ok(refused) => refused,
            Err(e) => {
                crate::sys::stderr::say!(
                    "sysdelta: warning: {}: the runs a stopped sysdelta left could not be added to the store ({e:#}); the log stays for the next open",
                    log.display()
                );
                return Ok(());
            }
        };
        // The first line not folded: a record the store refused (records
        // all come before a damaged line), else the damaged line.
        let (folded, first_unfolded) = match (refused, &contents.damage) {
            (Some((i, e)), _) => {
                let r = &contents.records[i];
                // The store's refusal quotes the record's fields, which
                // whoever wrote the log chose: one line, shown escaped.
                let e = crate::sys::visible::terminal_safe(&format!("{e:#}"));
                let what = format!("{}:{}: {e}", log.display(), r.line);
                (i, Some((r.line, r.offset, what)))
            }
            (None, Some(d)) => {
                let what = format!(
                    "{}:{}:{}: not a run record ({})",
                    log.display(),
                    d.line,
                    d.column,
                    d.error
                );
                (contents.records.len(), Some((d.line, d.offset, what)))
            }
            (None, None) => (contents.records.len(), None),
        };
        match first_unfolded {
            None => {
                if contents.end > contents.used {
                    // A cut-short last line (a kill mid-append, or
                    // garbage): no run of it is stored; say so.
                    crate::sys::stderr::say!(
                        "sysdelta: warning: {}:{}: a cut-short line ({} bytes) that is no run record was dropped with the log",
                        log.display(),
                        contents.lines,
                        contents.end - contents.used
                    );
                }
                std::fs::remove_file(&log)
                    .with_context(|| format!("{}: cannot remove the folded run log", log.display()))
            }
            Some((line, offset, what)) => {
                let lines = line..=contents.lines;
                let rest = &bytes[offset..contents.end];
                Store::set_aside(&log, rest, lines, folded, &what);
                Ok(())
            }
        }
    }

    /// Keep `rest`, lines `lines` of a dead run's log that were not folded,
    /// as `<log>.unfolded-<time>`, remove the log, and say in one warning
    /// what was wrong at the first of them (`what`), how many runs before
    /// it are in the store, and what was set aside where. If that fails
    /// the log stays, and the next open folds it again (adding nothing
    /// twice).
    ///
    /// The records after the first unfolded line are set aside too, not
    /// folded: the log is written in order by one process, and a crash
    /// tears at most its last line (which is no record, and dropped). A
    /// complete line that is not a record, or that the store refuses, is
    /// damage from outside (a bad block, an editor, a second writer), and
    /// nothing tells how far it goes: a changed digit in a sample still
    /// parses. A wrong sample in the store is worse than a missing one,
    /// which `--resume` measures again.
    pub(super) fn set_aside(
        log: &Path,
        rest: &[u8],
        lines: std::ops::RangeInclusive<usize>,
        folded: usize,
        what: &str,
    ) {
        let aside = aside_path(log);
        // A new file, 0600 (the log's own mode), never through a link.
        let moved = crate::sys::trust::create_new(&aside)
            .map_err(std::io::Error::other)
            .and_then(|mut f| std::io::Write::write_all(&mut f, rest))
            .and_then(|()| std::fs::remove_file(log));
        let lines = if lines.start() == lines.end() {
            format!("line {}", lines.start())
        } else {
            format!("lines {}-{}", lines.start(), lines.end())
        };
        crate::sys::stderr::say!(
            "sysdelta: warning: {what}; {} before it {} in the store; {}",
            plural(folded, "run"),
            if folded == 1 { "is" } else { "are" },
            match moved {
                Ok(()) => format!("{lines} set aside in {}", aside.display()),
                Err(e) => format!(
                    "{lines} could not be set aside in {} ({e}) and stay in the log",
                    aside.display()
                ),
            }
        );
    }

    /// What a read-only store says about a dead run's log it cannot fold:
    /// one warning, if the log holds runs the store does not.
    pub(super) fn warn_not_folded(
        &self,
        log: &Path,
        contents: &runlog::Contents,
        why: &str,
    ) -> Result<()> {
        let mut missing = 0;
        for r in &contents.records {
            if !self.db.exists(
                "SELECT 1 FROM runs WHERE experiment_id = ?1 AND block = ?2 AND seq = ?3",
                &vals![r.row.experiment_id, r.row.block, r.row.seq],
            )? {
                missing += 1;
            }
        }
        if missing > 0 {
            crate::sys::stderr::say!(
                "sysdelta: warning: {}: {} a stopped sysdelta left {} not in the store and not shown until someone with write access opens it ({why})",
                log.display(),
                plural(missing, "run"),
                if missing == 1 { "is" } else { "are" },
            );
        }
        Ok(())
    }

    /// Insert a dead run's records in file order, in one transaction, up
    /// to the first the store refuses (see [`Store::check_fits`]): its
    /// index and why, if there is one. Each record has its own savepoint,
    /// so a refused one leaves nothing behind.
    pub(super) fn fold_records(
        &self,
        records: &[runlog::Record],
    ) -> Result<Option<(usize, anyhow::Error)>> {
        if records.is_empty() {
            return Ok(None);
        }
        self.in_transaction(|| {
            for (i, record) in records.iter().enumerate() {
                self.db.batch("SAVEPOINT fold_record")?;
                let inserted = self
                    .check_fits(&record.row)
                    .and_then(|()| self.insert_row(&record.row).map(drop));
                if let Err(e) = inserted {
                    self.db
                        .batch("ROLLBACK TO fold_record; RELEASE fold_record")?;
                    return Ok(Some((i, e)));
                }
                self.db.batch("RELEASE fold_record")?;
            }
            Ok(None)
        })
    }

    /// A record of a dead run's log belongs in the store: its experiment,
    /// config and workload are there, its status is one the store knows,
    /// and no sample is NaN. A log found after a crash may be damaged in
    /// ways JSON still parses; the running sysdelta's own rows need no
    /// such check.
    pub(super) fn check_fits(&self, r: &runlog::RunRow) -> Result<()> {
        let exp = r.experiment_id;
        let has =
            |sql: &str, name: &str| -> Result<bool> { self.db.exists(sql, &vals![exp, name]) };
        if !self
            .db
            .exists("SELECT 1 FROM experiments WHERE id = ?1", &vals![exp])?
        {
            return Err(anyhow::anyhow!("experiment {exp} is not in this store"));
        }
        if !has(
            "SELECT 1 FROM configs WHERE experiment_id = ?1 AND name = ?2",
            &r.config,
        )? {
            return Err(anyhow::anyhow!(
                "config '{}' is not one of experiment {exp}'s",
                r.config
            ));
        }
        if !has(
            "SELECT 1 FROM workloads WHERE experiment_id = ?1 AND name = ?2",
            &r.workload,
        )? {
            return Err(anyhow::anyhow!(
                "workload '{}' is not one of experiment {exp}'s",
                r.workload
            ));
        }
        if r.status != "ok" && r.status != "failed" {
            return Err(anyhow::anyhow!(
                "run status '{}' is neither ok nor failed",
                r.status
            ));
        }
        if let Some((metric, _)) = r
            .samples
            .iter()
            .find(|(_, bits)| bits.iter().any(|b| f64::from_bits(*b).is_nan()))
        {
            return Err(anyhow::anyhow!("metric '{metric}' has a NaN sample"));
        }
        Ok(())
    }

    /// From now on [`Store::record_run`] appends to the run log (opened or
    /// created next to the store) instead of committing each run. The
    /// caller holds the store's lock for as long as the log is open.
    ///
    /// On PostgreSQL, the server is from then on written by a background
    /// writer (see `writer`), so that a server that stops answering
    /// holds up no run.
    pub fn log_runs(&self) -> Result<()> {
        let log = runlog::RunLog::open(&runlog::path_for(&self.path))?;
        *self.log.borrow_mut() = Some(log);
        self.flush_runs()?;
        self.start_writer()
    }

    /// Fold the run log into the tables now, if it holds anything
    /// (before a read of runs, and at the end: a PostgreSQL server out of
    /// reach is waited for, up to the database's patience), after the
    /// state writes that waited for it.
    pub fn flush_runs(&self) -> Result<()> {
        if self.has_writer() {
            // Once the experiment's end gave up on the server, what is
            // left stays on this machine.
            if self.gave_up.get() || self.catch_up(|start| start.elapsed() >= db::PATIENCE)? {
                return Ok(());
            }
            return Err(db::Unreachable {
                url: self.shown(),
                why: format!("no answer for {} s", db::PATIENCE.as_secs()),
            }
            .into());
        }
        self.apply_deferred(true)?;
        let mut guard = self.log.borrow_mut();
        let Some(log) = guard.as_mut() else {
            return Ok(());
        };
        if log.pending.is_empty() {
            return Ok(());
        }
        self.fold_rows(&log.pending)?;
        log.emptied()
    }

    /// The fold that falls due while runs go on: with a PostgreSQL server
    /// out of reach (a network blip, a restart), the runs stay in the
    /// local log, the experiment goes on, and a later fold (tried again a
    /// second later) adds them.
    pub(super) fn fold_when_reachable(&self) -> Result<()> {
        if !self.db.is_pg() {
            return self.flush_runs();
        }
        if self.has_writer() {
            self.send_waiting();
            // A log grown this big while the server answers (runs faster
            // than its commits, so never emptied between two): wait once
            // for the writer to catch up, so that the file is emptied.
            let big = self
                .log
                .borrow()
                .as_ref()
                .is_some_and(|l| l.used() >= runlog::FOLD_AT_BYTES);
            if big && !self.unreachable.get() {
                let wait = std::time::Duration::from_secs(1);
                self.catch_up(|start| start.elapsed() >= wait)?;
            }
            return Ok(());
        }
        // One quick try to reconnect: the next fold tries again.
        let folded = self.db.quickly(|| {
            self.apply_deferred(false)
                .and_then(|caught_up| match caught_up {
                    true => self.flush_runs(),
                    false => Err(db::Unreachable {
                        url: self.shown(),
                        why: "writes still wait for it".into(),
                    }
                    .into()),
                })
        });
        match folded {
            Err(e) if db::is_unreachable(&e) => {
                self.note_unreachable(&e);
                if let Some(log) = self.log.borrow_mut().as_mut() {
                    log.retry_later();
                }
                Ok(())
            }
            Err(e) => Err(e),
            Ok(()) => {
                self.note_reachable();
                Ok(())
            }
        }
    }

    /// Fold what is left, remove the log file, and go back to committing
    /// each run. The log stays if the fold fails, for the next open.
    ///
    /// With the background writer, a server out of reach is waited for a
    /// bounded time (see [`Store::catch_up_at_end`]); then the log stays,
    /// its runs only on this machine (see [`Store::left_local`]).
    pub fn close_run_log(&self) -> Result<()> {
        if self.has_writer() && !self.catch_up_at_end()? {
            if let Some(log) = self.log.borrow_mut().take() {
                self.left_runs.set(self.left_runs.get() + log.pending.len());
            }
            return Ok(());
        }
        self.flush_runs()?;
        if let Some(log) = self.log.borrow_mut().take() {
            match std::fs::remove_file(log.path()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| {
                        format!("{}: cannot remove the folded run log", log.path().display())
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Insert rows in one transaction; a row whose run is already stored is
    /// skipped, which makes a repeated fold harmless.
    pub(super) fn fold_rows(&self, rows: &[runlog::RunRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.in_transaction(|| self.insert_rows(rows).map(drop))
    }

    /// Run `f` inside BEGIN ... COMMIT; roll back if either fails.
    pub(super) fn in_transaction<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.db.begin()?;
        let committed = f().and_then(|v| {
            self.db.commit()?;
            Ok(v)
        });
        if committed.is_err() {
            // Never leave the transaction open: later writes (the next run,
            // the experiment's status) would go into it and be lost.
            self.db.rollback();
        }
        committed
    }
}

/// `n thing` or `n things`.
pub(super) fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// Where the lines of a run log that were not folded are kept:
/// `<log>.unfolded-<unix time with nanoseconds>`.
pub(super) fn aside_path(log: &Path) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut aside = log.as_os_str().to_owned();
    aside.push(format!(
        ".unfolded-{}.{:09}",
        now.as_secs(),
        now.subsec_nanos()
    ));
    PathBuf::from(aside)
}
