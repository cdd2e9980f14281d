//! The two databases a store can live in, SQLite (a file, the default)
//! and PostgreSQL (a team's server), behind the few calls the store makes:
//! execute, query, a batch of statements, and a transaction's begin,
//! commit and rollback.
//!
//! The store's SQL is written once, in the dialect both understand
//! (`INSERT ... ON CONFLICT`, `RETURNING`, `CAST(... AS BIGINT)`), with
//! SQLite's `?N` parameters, which become `$N` for PostgreSQL, and `{now}`
//! for the current UTC time as RFC 3339 text, which each database writes
//! its own way. Values go in as [`Value`] and come out through
//! [`FromCol`], so no statement knows which database runs it.
//!
//! PostgreSQL is reached over a network that can fail and a server that
//! can restart: a statement outside a transaction that fails because the
//! connection is gone is tried again on a new connection until
//! [`PATIENCE`] is up ([`Db::quickly`]: at once); inside a transaction the failure is
//! returned (the caller's transaction is gone with the connection) as
//! [`Unreachable`], which the run log's fold recognises (see
//! `store::fold`: the runs stay in the local log until the server is back).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use postgres::types::ToSql;

// The values are in value.rs; every statement here takes and gives them.
pub(crate) use super::value::vals;
pub use super::value::{CellRef, FromCol, Row, Value};

/// A PostgreSQL server could not be reached (the connection is gone and
/// did not come back in time): the error a run's fold waits out.
#[derive(Debug, thiserror::Error)]
#[error("{url}: the database cannot be reached ({why})")]
pub struct Unreachable {
    pub url: String,
    pub why: String,
}

/// An open store database.
pub enum Db {
    Sqlite(rusqlite::Connection),
    Pg(Box<Pg>),
}

/// A connection to a PostgreSQL server, made again when it is lost.
pub struct Pg {
    client: RefCell<postgres::Client>,
    config: postgres::Config,
    /// The URL without its password, for messages.
    shown: String,
    statements: RefCell<HashMap<String, postgres::Statement>>,
    in_tx: Cell<bool>,
    patience: Cell<Duration>,
}

/// How long a statement outside a transaction waits for a lost server by
/// default: a restarting server is back within seconds.
pub const PATIENCE: Duration = Duration::from_secs(60);

impl Pg {
    /// Connect; an error names the URL (without its password).
    pub fn connect(config: postgres::Config, shown: String) -> Result<Pg> {
        let client = config.connect(postgres::NoTls).map_err(|e| {
            let said =
                crate::error::Error::bad(format!("{shown}: cannot connect: {}", pg_reason(&e)));
            if lost(&e) {
                // Bad input all the same (exit 2, one line), but known as a
                // server out of reach ([`is_unreachable`]): what is local
                // (restore's journal, list's waiting runs) goes on without
                // it, where a refused password or a bad setting does not.
                anyhow::Error::new(Unreachable {
                    url: shown.clone(),
                    why: pg_reason(&e),
                })
                .context(said)
            } else {
                anyhow::Error::new(said)
            }
        })?;
        Ok(Pg {
            client: RefCell::new(client),
            config,
            shown,
            statements: RefCell::new(HashMap::new()),
            in_tx: Cell::new(false),
            patience: Cell::new(PATIENCE),
        })
    }

    /// The connection's settings (the store's writer makes its own).
    pub fn config(&self) -> &postgres::Config {
        &self.config
    }

    /// The URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Run `f` on the connection; a lost connection outside a transaction
    /// is made again and `f` tried again, until the patience is spent.
    fn with_client<T>(
        &self,
        mut f: impl FnMut(
            &mut postgres::Client,
            &mut HashMap<String, postgres::Statement>,
        ) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        let deadline = Instant::now() + self.patience.get();
        let mut wait = Duration::from_millis(50);
        let mut tries = 0;
        loop {
            let err = {
                let mut client = self.client.borrow_mut();
                let mut statements = self.statements.borrow_mut();
                match f(&mut client, &mut statements) {
                    Ok(v) => return Ok(v),
                    Err(e) => {
                        if !(lost(&e) || client.is_closed()) {
                            return Err(anyhow!("{}: {}", self.shown, pg_reason(&e)));
                        }
                        e
                    }
                }
            };
            // Inside a transaction the caller's work went with the
            // connection; outside, one new connection is always tried (a
            // server may close an idle one), then more until the deadline.
            if self.in_tx.get() || (tries > 0 && Instant::now() >= deadline) {
                self.in_tx.set(false);
                return Err(Unreachable {
                    url: self.shown.clone(),
                    why: pg_reason(&err),
                }
                .into());
            }
            if tries > 0 {
                std::thread::sleep(wait.min(deadline.saturating_duration_since(Instant::now())));
                wait = (wait * 2).min(Duration::from_secs(2));
            }
            tries += 1;
            if let Ok(c) = self.config.connect(postgres::NoTls) {
                *self.client.borrow_mut() = c;
                self.statements.borrow_mut().clear();
            }
        }
    }
}

/// Whether a PostgreSQL error means the connection is gone (closed, a
/// connection exception or the server shutting down, an I/O error on the
/// socket), not the statement: only those are waited out. A client-side
/// error (a parameter of the wrong type) is a bug, said at once.
fn lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(c) = e.code() {
        let c = c.code();
        return c.starts_with("08") || c.starts_with("57P");
    }
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        if inner.is::<std::io::Error>() {
            return true;
        }
        src = inner.source();
    }
    false
}

/// The server's message when there is one (`password authentication
/// failed for user ...`), else the client's.
pub fn pg_reason(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s = format!("{s}: {inner}");
                src = inner.source();
            }
            s
        }
    }
}

/// `?N` → `$N` for PostgreSQL (the store's SQL has no `?` elsewhere), and
/// `{now}` → each database's current UTC time as RFC 3339 text.
fn dialect<'s>(sql: &'s str, pg: bool) -> Cow<'s, str> {
    let mut s = Cow::Borrowed(sql);
    if s.contains("{now}") {
        let now = if pg {
            r#"to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')"#
        } else {
            "strftime('%Y-%m-%dT%H:%M:%SZ','now')"
        };
        s = Cow::Owned(s.replace("{now}", now));
    }
    if pg && s.contains('?') {
        s = Cow::Owned(s.replace('?', "$"));
    }
    s
}

impl Db {
    pub fn is_pg(&self) -> bool {
        matches!(self, Db::Pg(_))
    }

    /// `f` with no patience for a lost server: each statement outside a
    /// transaction tries one new connection and then gives up (what runs
    /// between two runs, which must not wait; it tries again later).
    /// Nothing changes for SQLite.
    pub fn quickly<T>(&self, f: impl FnOnce() -> T) -> T {
        let Db::Pg(pg) = self else {
            return f();
        };
        let patience = pg.patience.replace(Duration::ZERO);
        let done = f();
        pg.patience.set(patience);
        done
    }

    /// Run a statement; the number of rows it changed.
    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<usize> {
        match self {
            Db::Sqlite(c) => Ok(c
                .prepare_cached(&dialect(sql, false))?
                .execute(rusqlite::params_from_iter(params.iter()))?),
            Db::Pg(pg) => pg.with_client(|client, statements| {
                let st = statement(client, statements, sql)?;
                Ok(client.execute(&st, &pg_params(params))? as usize)
            }),
        }
    }

    /// Every row `sql` returns, each through `f`.
    pub fn query<T>(
        &self,
        sql: &str,
        params: &[Value],
        mut f: impl FnMut(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.for_each(sql, params, |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Hand each row `sql` returns to `f`, in order.
    pub fn for_each(
        &self,
        sql: &str,
        params: &[Value],
        mut f: impl FnMut(&Row) -> Result<()>,
    ) -> Result<()> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare_cached(&dialect(sql, false))?;
                let mut rows = st.query(rusqlite::params_from_iter(params.iter()))?;
                while let Some(r) = rows.next()? {
                    f(&Row::Sqlite(r))?;
                }
                Ok(())
            }
            Db::Pg(pg) => {
                let rows = pg.with_client(|client, statements| {
                    let st = statement(client, statements, sql)?;
                    client.query(&st, &pg_params(params))
                })?;
                for r in &rows {
                    f(&Row::Pg(r))?;
                }
                Ok(())
            }
        }
    }

    /// [`Db::query`] of a statement made for one use (a multi-row insert
    /// of as many rows as a fold holds), which is not kept prepared.
    pub fn query_once<T>(
        &self,
        sql: &str,
        params: &[Value],
        mut f: impl FnMut(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare(&dialect(sql, false))?;
                let mut rows = st.query(rusqlite::params_from_iter(params.iter()))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(f(&Row::Sqlite(r))?);
                }
                Ok(out)
            }
            Db::Pg(pg) => {
                let sql = dialect(sql, true);
                let rows =
                    pg.with_client(|client, _| client.query(sql.as_ref(), &pg_params(params)))?;
                rows.iter().map(|r| f(&Row::Pg(r))).collect()
            }
        }
    }

    /// The first row `sql` returns through `f`, if it returns one.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        params: &[Value],
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut f = Some(f);
        let mut out = None;
        self.for_each(sql, params, |r| {
            if let Some(f) = f.take() {
                out = Some(f(r)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The one row `sql` returns, through `f`; an error when there is none.
    pub fn query_one<T>(
        &self,
        sql: &str,
        params: &[Value],
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(sql, params, f)?
            .ok_or_else(|| anyhow!("no row returned by: {sql}"))
    }

    /// The first column of the one row `sql` returns.
    pub fn value<T: FromCol>(&self, sql: &str, params: &[Value]) -> Result<T> {
        self.query_one(sql, params, |r| r.get(0))
    }

    /// Whether `sql` returns a row.
    pub fn exists(&self, sql: &str, params: &[Value]) -> Result<bool> {
        Ok(self.query_opt(sql, params, |_| Ok(()))?.is_some())
    }

    /// Statements without parameters, one after the other (schema
    /// migrations, savepoints).
    pub fn batch(&self, sql: &str) -> Result<()> {
        match self {
            Db::Sqlite(c) => Ok(c.execute_batch(&dialect(sql, false))?),
            Db::Pg(pg) => {
                let sql = dialect(sql, true);
                pg.with_client(|client, _| client.batch_execute(&sql))
            }
        }
    }

    pub fn begin(&self) -> Result<()> {
        match self {
            Db::Sqlite(c) => {
                c.prepare_cached("BEGIN")?.execute([])?;
                Ok(())
            }
            Db::Pg(pg) => {
                pg.with_client(|client, _| client.batch_execute("BEGIN"))?;
                pg.in_tx.set(true);
                Ok(())
            }
        }
    }

    pub fn commit(&self) -> Result<()> {
        match self {
            Db::Sqlite(c) => {
                c.prepare_cached("COMMIT")?.execute([])?;
                Ok(())
            }
            Db::Pg(pg) => {
                let done = pg.with_client(|client, _| client.batch_execute("COMMIT"));
                pg.in_tx.set(false);
                done
            }
        }
    }

    /// Roll back the open transaction, if there is one (never leave it
    /// open: later writes would go into it and be lost).
    pub fn rollback(&self) {
        match self {
            Db::Sqlite(c) => {
                if !c.is_autocommit() {
                    let _ = c.execute_batch("ROLLBACK");
                }
            }
            Db::Pg(pg) => {
                if pg.in_tx.get() {
                    let _ = pg.with_client(|client, _| client.batch_execute("ROLLBACK"));
                    pg.in_tx.set(false);
                }
            }
        }
    }
}

/// The prepared statement of `sql` on this connection, prepared once.
fn statement(
    client: &mut postgres::Client,
    cache: &mut HashMap<String, postgres::Statement>,
    sql: &str,
) -> std::result::Result<postgres::Statement, postgres::Error> {
    if let Some(st) = cache.get(sql) {
        return Ok(st.clone());
    }
    let st = client.prepare(&dialect(sql, true))?;
    cache.insert(sql.to_string(), st.clone());
    Ok(st)
}

fn pg_params<'a>(params: &'a [Value]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// Whether `e` (from a store call) is a PostgreSQL server out of reach.
pub fn is_unreachable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<Unreachable>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_now_per_dialect() {
        let sql = "UPDATE t SET a = ?2, at = {now} WHERE id = ?1";
        assert_eq!(
            dialect(sql, true),
            r#"UPDATE t SET a = $2, at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') WHERE id = $1"#
        );
        assert_eq!(
            dialect(sql, false),
            "UPDATE t SET a = ?2, at = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?1"
        );
        assert!(matches!(dialect("SELECT 1", true), Cow::Borrowed(_)));
    }

    #[test]
    fn sqlite_round_trip_of_every_value() {
        let db = Db::Sqlite(rusqlite::Connection::open_in_memory().unwrap());
        db.batch("CREATE TABLE t (i INTEGER, r REAL, s TEXT, n TEXT)")
            .unwrap();
        db.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            &vals![7u32, 1.5, "x", None::<&str>],
        )
        .unwrap();
        let (i, r, s, n): (u32, f64, String, Option<String>) = db
            .query_one("SELECT i, r, s, n FROM t", &[], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap();
        assert_eq!((i, r, s.as_str(), n), (7, 1.5, "x", None));
        assert!(db.value::<u32>("SELECT -1", &[]).is_err());
    }
}
