//! The background writer of a PostgreSQL store: while an experiment runs,
//! everything the run path sends the server (folds of the run log, the
//! config entered and its environment, events, status, the experiment's
//! end) goes through one thread, in order, on a connection of its own, so
//! that a server that stops answering (a crashed host, a partition that
//! drops packets) never holds up a run.
//!
//! The run path only appends: each run to the local run log, each state
//! write to `<anchor>.deferred` (both crash-safe on this machine before the
//! next run starts). At most one [`Batch`] is in flight: what waits is
//! handed over when a fold falls due (at least once a second) and the
//! writer sent the last one; its [`Answer`] is picked up without waiting at
//! the next run. A config switch thus costs a rename of a small local file,
//! not a synchronous commit on the server.
//!
//! Every call the writer makes is bounded: connecting by the URL's
//! `connect_timeout` (5 s unless given), data the server does not
//! acknowledge by a TCP user timeout of at most [`TCP_USER_TIMEOUT`], a
//! statement by the server's `statement_timeout` ([`STATEMENT_TIMEOUT`]).
//! The run path does not wait for any of them: it says the server is gone
//! when a batch has gone unanswered for [`WARN_AFTER`].

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::db::{self, Db, Pg};
use super::deferred::Write;
use super::runlog::RunRow;
use super::Store;

/// A batch unanswered this long means the server is gone (said once).
pub(super) const WARN_AFTER: Duration = Duration::from_secs(3);
/// The longest the writer's connection waits for the server to
/// acknowledge data it sent, before the connection counts as lost.
pub(super) const TCP_USER_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest one statement of the writer may run on the server.
pub(super) const STATEMENT_TIMEOUT: &str = "30s";

/// What waits for the server, handed to the writer whole: stored in one
/// transaction, runs first, then the state writes in their order.
pub(super) struct Batch {
    pub rows: Vec<RunRow>,
    pub writes: Vec<Write>,
}

/// How the writer's batch went.
pub(super) enum Answer {
    Stored,
    /// The server could not be reached, or did not answer in time.
    Unreachable(String),
    /// The server refused the batch (a bug, a changed database).
    Failed(String),
}

/// The batch in flight: how much of what waits it holds, since when.
pub(super) struct InFlight {
    pub rows: usize,
    pub writes: usize,
    pub since: Instant,
}

/// The run path's end of the writer.
pub(super) struct Writer {
    jobs: Option<mpsc::Sender<Batch>>,
    answers: mpsc::Receiver<Answer>,
    pub in_flight: Option<InFlight>,
}

impl Writer {
    /// Start the writer thread of the store whose connection is `config`
    /// (the URL's), anchored at `anchor`. It connects when it has a
    /// first batch.
    pub fn start(
        config: &postgres::Config,
        shown: &str,
        anchor: PathBuf,
    ) -> std::io::Result<Writer> {
        let config = bounded(config);
        let shown = shown.to_string();
        let (jobs, rx) = mpsc::channel::<Batch>();
        let (tx, answers) = mpsc::channel::<Answer>();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || serve(config, shown, anchor, rx, tx))?;
        Ok(Writer {
            jobs: Some(jobs),
            answers,
            in_flight: None,
        })
    }

    /// Hand `batch` over (nothing may be in flight).
    pub fn send(&mut self, batch: Batch) {
        debug_assert!(self.in_flight.is_none());
        self.in_flight = Some(InFlight {
            rows: batch.rows.len(),
            writes: batch.writes.len(),
            since: Instant::now(),
        });
        if let Some(jobs) = &self.jobs {
            if jobs.send(batch).is_err() {
                // The thread is gone (it panicked): say so as an answer.
                self.in_flight = None;
            }
        }
    }

    /// The answer to the batch in flight, if it comes within `wait`, with
    /// what that batch held.
    pub fn answer(&mut self, wait: Duration) -> Option<(InFlight, Answer)> {
        self.in_flight.as_ref()?;
        let got = match wait.is_zero() {
            true => self.answers.try_recv().ok(),
            false => self.answers.recv_timeout(wait).ok(),
        };
        got.map(|a| (self.in_flight.take().expect("checked above"), a))
    }
}

impl Drop for Writer {
    /// Closing the queue ends the thread after the batch it holds, if any
    /// (its calls are bounded); it is not waited for.
    fn drop(&mut self) {
        self.jobs = None;
    }
}

/// The URL's connection with the writer's bounds: a TCP user timeout of
/// at most [`TCP_USER_TIMEOUT`] and [`STATEMENT_TIMEOUT`] per statement.
fn bounded(config: &postgres::Config) -> postgres::Config {
    let mut c = config.clone();
    if c.get_tcp_user_timeout()
        .is_none_or(|t| *t > TCP_USER_TIMEOUT)
    {
        c.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    let options = match c.get_options() {
        Some(o) if !o.is_empty() => format!("{o} -c statement_timeout={STATEMENT_TIMEOUT}"),
        _ => format!("-c statement_timeout={STATEMENT_TIMEOUT}"),
    };
    c.options(&options);
    c
}

/// The writer thread: each batch stored in one transaction, answered.
fn serve(
    config: postgres::Config,
    shown: String,
    anchor: PathBuf,
    jobs: mpsc::Receiver<Batch>,
    answers: mpsc::Sender<Answer>,
) {
    let mut store: Option<Store> = None;
    for batch in jobs {
        let answer = store_batch(&mut store, &config, &shown, &anchor, &batch);
        if matches!(answer, Answer::Unreachable(_)) {
            // A connection that timed out is not used again.
            store = None;
        }
        if answers.send(answer).is_err() {
            return;
        }
    }
}

fn store_batch(
    store: &mut Option<Store>,
    config: &postgres::Config,
    shown: &str,
    anchor: &std::path::Path,
    batch: &Batch,
) -> Answer {
    if store.is_none() {
        match Pg::connect(config.clone(), shown.to_string()) {
            Ok(pg) => *store = Some(Store::with(Db::Pg(Box::new(pg)), anchor, None)),
            Err(e) => return Answer::Unreachable(reason(&e)),
        }
    }
    let s = store.as_ref().expect("connected above");
    let done = s.db.quickly(|| {
        s.in_transaction(|| {
            s.insert_rows(&batch.rows)?;
            batch.writes.iter().try_for_each(|w| s.apply(w))
        })
    });
    match done {
        Ok(()) => Answer::Stored,
        Err(e) if db::is_unreachable(&e) || timed_out(&e) => Answer::Unreachable(reason(&e)),
        Err(e) => Answer::Failed(format!("{e:#}")),
    }
}

/// The error's last word (why), without the URL the warning names.
fn reason(e: &anyhow::Error) -> String {
    match e.chain().find_map(|c| c.downcast_ref::<db::Unreachable>()) {
        Some(u) => u.why.clone(),
        None => format!("{e:#}"),
    }
}

/// A statement the server cancelled at its `statement_timeout` (SQLSTATE
/// 57014): a server too slow to answer is waited out like an absent one.
fn timed_out(e: &anyhow::Error) -> bool {
    format!("{e:#}").contains("statement timeout")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writers_connection_is_bounded_whatever_the_url_says() {
        let c: postgres::Config = "postgresql://u@h/db?options=-c%20work_mem%3D4MB"
            .parse()
            .unwrap();
        let b = bounded(&c);
        assert_eq!(b.get_tcp_user_timeout(), Some(&TCP_USER_TIMEOUT));
        let o = b.get_options().unwrap();
        assert!(
            o.contains("work_mem") && o.ends_with("statement_timeout=30s"),
            "{o}"
        );
        let mut long = c.clone();
        long.tcp_user_timeout(Duration::from_secs(120));
        assert_eq!(
            bounded(&long).get_tcp_user_timeout(),
            Some(&TCP_USER_TIMEOUT)
        );
    }
}
