//! Running the docs' blocks side by side. Most of the test's time is
//! `ab` filling its default `--min-time` and runs that wait on the disk,
//! which take as long beside other blocks as alone; run one after
//! another they took about 140 s on an idle machine.
//!
//! Each block runs in its own copy of the scratch directory, so each has
//! a store of its own (two runs on one store refuse each other, and a
//! block's `--last` must be its own experiment). Blocks that change
//! shared system state and put it back ([`EXCLUSIVE`]) run one at a time,
//! in their order, in one lane, while the other lanes run the rest: two
//! of them at once could each save what the other set, and leave the
//! machine changed, but a block beside one only runs while the state is
//! changed, as it would on a user's machine. (Run alone, before the
//! others, the README's block of `ab` commands that holds the THP example
//! was about 60 s of the test's 99 s with one lane busy.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::SystemTime;

/// Pieces of a command that mark its block as changing shared state.
pub const EXCLUSIVE: &[&str] = &["transparent_hugepage"];

/// Blocks run at once, at most: enough to overlap the waits, few enough
/// for a 2-core machine.
const LANES: usize = 4;

/// One block to run: where it is in the docs, its script, and whether it
/// changes shared state (and so runs in the lane of such blocks).
pub struct Job {
    pub at: String,
    pub script: String,
    pub exclusive: bool,
}

/// What a block's run gave: its output and when it ended.
pub struct Done {
    pub at: String,
    pub out: Output,
    pub ended: SystemTime,
}

/// Run `jobs`, up to [`LANES`] at once: the exclusive ones one after
/// another in their order in the first lane (which then helps with the
/// rest), the others in any lane, each with `sh -c` in its own copy of
/// `scratch` (files and symlinks at its top level), with `env` set.
/// Returns one [`Done`] per job, in the jobs' order.
pub fn run(jobs: Vec<Job>, scratch: &Path, env: &[(&str, String)]) -> Vec<Done> {
    let dirs: Vec<PathBuf> = (0..jobs.len())
        .map(|i| copy_scratch(scratch, &scratch.join(format!("block-{i}"))))
        .collect();
    let run_one = |i: usize| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(&jobs[i].script)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env_remove("SYSDELTA_STORE")
            .current_dir(&dirs[i])
            .output()
            .unwrap();
        Done {
            at: jobs[i].at.clone(),
            out,
            ended: SystemTime::now(),
        }
    };
    let exclusive: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].exclusive).collect();
    // The likely longest first, so that no long block starts last and
    // runs alone at the end (blocks of `ab` commands, which fill their
    // --min-time, were the doc order's tail); otherwise in doc order.
    let mut rest: Vec<usize> = (0..jobs.len()).filter(|&i| !jobs[i].exclusive).collect();
    rest.sort_by_key(|&i| std::cmp::Reverse(experiments(&jobs[i].script)));
    let queue = Mutex::new(rest.into_iter());
    let results = Mutex::new(Vec::new());
    let lane = |alone: &[usize]| {
        for &i in alone {
            let d = run_one(i);
            results.lock().unwrap().push((i, d));
        }
        loop {
            let Some(i) = queue.lock().unwrap().next() else {
                break;
            };
            let d = run_one(i);
            results.lock().unwrap().push((i, d));
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| lane(&exclusive));
        for _ in 1..LANES {
            s.spawn(|| lane(&[]));
        }
    });
    let mut done: Vec<Option<Done>> = (0..jobs.len()).map(|_| None).collect();
    for (i, d) in results.into_inner().unwrap() {
        done[i] = Some(d);
    }
    done.into_iter().map(Option::unwrap).collect()
}

/// How many experiments a block's script runs (`sysdelta ab` and
/// `sysdelta run` commands): what most of a block's time goes to.
fn experiments(script: &str) -> usize {
    script
        .lines()
        .filter(|l| l.contains("sysdelta ab ") || l.contains("sysdelta run "))
        .count()
}

/// A copy of `from`'s top level at `to`: files copied (the store among
/// them), symlinks made again; directories (the PATH directory, the run
/// directory) are left where they are and reached by absolute path.
fn copy_scratch(from: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), dest).unwrap();
        } else if t.is_file() {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
    to.to_path_buf()
}
