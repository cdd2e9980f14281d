//! Watching a fleet run while its hosts run: once a second, one line per
//! host from the store (the runs it has stored, its experiment's status);
//! a host whose connection ends badly is recorded in its experiment (an
//! event, and `interrupted` if it was still `running`), said in one line,
//! and the others go on. The first SIGINT/SIGTERM stops every host
//! cleanly (their connections' stdin is closed, see `launch`); a second
//! ends the connections.

use std::process::ExitStatus;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::checks::Ready;
use super::hosts::Host;
use super::launch::Connection;
use super::status::{self, Row};
use crate::status::ExperimentStatus;
use crate::store::fleet::Member;
use crate::store::Store;

/// How one host's part ended (or stands, for one left alone).
#[derive(Clone, Debug)]
pub enum End {
    /// Its sysdelta ran to its end (exit 0), or it was complete already.
    Ok,
    /// It did not start, or its connection ended badly: why, after
    /// `lost:` or `stopped:` (by a signal to this sysdelta).
    Lost(String),
}

/// One host of the run, with its connection while it has one.
pub struct Part {
    pub host: Host,
    pub conn: Option<Connection>,
    pub end: Option<End>,
}

impl Part {
    /// A host that runs, through `conn`.
    pub fn running(ready: &Ready, conn: Connection) -> Part {
        Part {
            host: ready.host.clone(),
            conn: Some(conn),
            end: None,
        }
    }

    /// A host that ended before it ran (`Lost`), or needs nothing (`Ok`).
    pub fn ended(host: &Host, end: End) -> Part {
        Part {
            host: host.clone(),
            conn: None,
            end: Some(end),
        }
    }
}

impl Drop for Part {
    /// A connection still open when the run is left early (an error):
    /// its host is asked to stop (stdin closed) and given a while to do
    /// so, then the connection is ended.
    fn drop(&mut self) {
        if let Some(mut c) = self.conn.take() {
            drop(c.stdin.take());
            let until = Instant::now() + Duration::from_secs(90);
            while matches!(c.child.try_wait(), Ok(None)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.child.kill();
            let _ = c.child.wait();
        }
    }
}

/// How the whole run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every host's experiment is complete.
    Complete,
    /// Some host's is not: `fleet resume` finishes it.
    Incomplete,
    /// Stopped by a signal.
    Interrupted,
}

/// Watch `parts` until every connection has ended, then print the
/// summary table (stdout).
pub fn watch(store: &Store, fleet: i64, parts: &mut [Part]) -> Result<Outcome> {
    let signals = Arc::new(AtomicUsize::new(0));
    let _handler = catch_signals(&signals)?;
    let mut seen_signals = 0;
    let mut last_tick: Option<Instant> = None;
    let mut last_block = String::new();
    let mut members: Vec<Member> = Vec::new();
    loop {
        let n = signals.load(Ordering::SeqCst);
        if n > seen_signals {
            seen_signals = n;
            if n == 1 {
                crate::sys::stderr::say!(
                    "sysdelta: stopping every host after its config is torn down (again to end the connections)"
                );
                for p in parts.iter_mut() {
                    if let Some(c) = &mut p.conn {
                        drop(c.stdin.take());
                    }
                }
            } else {
                crate::sys::stderr::say!(
                    "sysdelta: second signal: ending every host's connection now"
                );
                for p in parts.iter_mut() {
                    if let Some(c) = &mut p.conn {
                        let _ = c.child.kill();
                    }
                }
            }
        }
        for p in parts.iter_mut() {
            let Some(c) = &mut p.conn else { continue };
            let Ok(Some(st)) = c.child.try_wait() else {
                continue;
            };
            let tail = c.tail.lock().unwrap_or_else(|e| e.into_inner()).clone();
            p.conn = None;
            if st.success() {
                p.end = Some(End::Ok);
                continue;
            }
            // Stopped by the signal, as asked, or lost.
            let word = if seen_signals > 0 && st.code() == Some(crate::runner::signals::INTERRUPTED)
            {
                "stopped"
            } else {
                "lost"
            };
            let why = format!("{word}: {}", why_lost(st, &tail));
            crate::sys::stderr::say!("sysdelta: {}: {why}", p.host.shown());
            if let Err(e) = record_loss(store, fleet, &p.host, &why) {
                crate::sys::stderr::say!(
                    "sysdelta: {}: could not record it in the store: {e:#}",
                    p.host.shown()
                );
            }
            p.end = Some(End::Lost(why));
        }
        let done = parts.iter().all(|p| p.conn.is_none());
        if done || last_tick.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            last_tick = Some(Instant::now());
            match store.fleet_members(fleet) {
                Ok(m) => members = m,
                Err(e) => crate::sys::stderr::say!(
                    "sysdelta: the store cannot say how the hosts stand: {e:#}"
                ),
            }
            let block = progress(parts, &members);
            if block != last_block && !done {
                eprint!("{block}");
                last_block = block;
            }
        }
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let rows: Vec<Row> = parts
        .iter()
        .map(|p| Row {
            host: &p.host,
            member: members.iter().find(|m| m.host == p.host.name),
            note: match &p.end {
                Some(End::Lost(why)) => Some(why.clone()),
                _ => None,
            },
        })
        .collect();
    print!("fleet {fleet}:\n{}", status::table(&rows));
    let complete = parts.iter().all(|p| {
        matches!(p.end, Some(End::Ok))
            && members
                .iter()
                .any(|m| m.host == p.host.name && m.status == ExperimentStatus::Complete)
    });
    Ok(if complete {
        Outcome::Complete
    } else if seen_signals > 0 {
        Outcome::Interrupted
    } else {
        Outcome::Incomplete
    })
}

/// One line per host: its experiment, status and runs stored, or that it
/// has none yet, and whether its connection was lost.
fn progress(parts: &[Part], members: &[Member]) -> String {
    let mut s = String::new();
    for p in parts {
        let m = members.iter().find(|m| m.host == p.host.name);
        let what = match m {
            Some(m) => format!(
                "experiment {} {}, {} runs stored ({} measured ok)",
                m.experiment, m.status, m.stored_runs, m.ok_runs
            ),
            None => "no experiment yet".into(),
        };
        let lost = match &p.end {
            Some(End::Lost(why)) => format!(", {}", why.split(':').next().unwrap_or("lost")),
            _ => String::new(),
        };
        s.push_str(&format!("sysdelta: [{}] {what}{lost}\n", p.host.name));
    }
    s
}

/// Why a connection ended badly: the remote's (or ssh's) last line, and
/// the exit status.
fn why_lost(st: ExitStatus, tail: &[String]) -> String {
    let status = match st.code() {
        Some(255) => {
            "ssh ended with exit status 255 (the connection failed or was lost)".to_string()
        }
        Some(c) => format!("its sysdelta ended with exit status {c}"),
        None => format!("ssh ended: {st}"),
    };
    match tail.last() {
        Some(l) => format!("{status}: {}", l.trim()),
        None => status,
    }
}

/// The host's experiment (if it has one) gets an event saying why, and
/// `interrupted` if it is still `running`. `why` begins with `lost:` or
/// `stopped:`.
fn record_loss(store: &Store, fleet: i64, host: &Host, why: &str) -> Result<()> {
    let members = store.fleet_members(fleet)?;
    let Some(m) = members.iter().find(|m| m.host == host.name) else {
        return Ok(());
    };
    store.add_event(m.experiment, "fleet", &format!("{}: {why}", host.shown()))?;
    if store.info(m.experiment)?.status == ExperimentStatus::Running {
        store.set_status(m.experiment, ExperimentStatus::Interrupted)?;
    }
    Ok(())
}

/// Count SIGINT and SIGTERM instead of dying of them (the hosts are
/// stopped through their connections); unregistered when dropped.
fn catch_signals(count: &Arc<AtomicUsize>) -> Result<SignalGuard> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let handle = signals.handle();
    let count = count.clone();
    std::thread::Builder::new()
        .name("fleet-signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        })?;
    Ok(SignalGuard(handle))
}

struct SignalGuard(signal_hook::iterator::Handle);

impl Drop for SignalGuard {
    fn drop(&mut self) {
        self.0.close();
    }
}
