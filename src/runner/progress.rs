//! Progress on stderr: a bar with ETA on a terminal, plain lines otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub enum Progress {
    Bar(ProgressBar),
    Lines {
        total: u64,
        done: u64,
        last: Option<Instant>,
    },
    Quiet,
}

impl Progress {
    pub fn new(total: u64, quiet: bool) -> Progress {
        if quiet {
            return Progress::Quiet;
        }
        if std::io::stderr().is_terminal() {
            let pb = ProgressBar::new(total);
            pb.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {eta} {msg}",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            Progress::Bar(pb)
        } else {
            Progress::Lines {
                total,
                done: 0,
                last: None,
            }
        }
    }

    /// One run finished; `what` describes it (made only when shown: it
    /// formats numbers, and runs can be a millisecond apart). Plain lines
    /// are printed at most once a second (and always for failures and the
    /// last run).
    pub fn run_done(&mut self, what: impl FnOnce() -> String, failed: bool) {
        match self {
            Progress::Bar(pb) => {
                let what = what();
                pb.inc(1);
                if failed {
                    pb.println(format!("failed: {what}"));
                }
                pb.set_message(what);
            }
            Progress::Lines { total, done, last } => {
                *done += 1;
                let due = last.is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
                if due || failed || *done == *total {
                    crate::sys::stderr::say!(
                        "sysdelta: [{done}/{total}] {}{}",
                        what(),
                        if failed { " FAILED" } else { "" }
                    );
                    *last = Some(Instant::now());
                }
            }
            Progress::Quiet => {}
        }
    }

    /// The number of runs to reach changed (`--min-time` decided on more).
    pub fn set_total(&mut self, n: u64) {
        match self {
            Progress::Bar(pb) => pb.set_length(n),
            Progress::Lines { total, .. } => *total = n,
            Progress::Quiet => {}
        }
    }

    pub fn note(&self, msg: &str) {
        match self {
            Progress::Bar(pb) => pb.println(msg),
            Progress::Lines { .. } => crate::sys::stderr::say!("sysdelta: {msg}"),
            Progress::Quiet => {}
        }
    }

    pub fn finish(&self) {
        if let Progress::Bar(pb) = self {
            pb.finish_and_clear();
        }
    }
}
