//! semring (semopbench): all processes run their laps and exit, none is
//! left behind, and the three figures are reported per repetition.

use std::sync::atomic::AtomicBool;

use sysdelta::micro::{self, MicroOptions, MicroOutcome, Selection};

/// Processes (alive or zombie) whose parent is this process.
fn my_children() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after "(comm)": state ppid ...
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: i32 = rest.split(' ').nth(1).unwrap().parse().unwrap();
        if ppid == me {
            v.push(pid);
        }
    }
    v
}

#[test]
fn semring_processes_all_exit() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = MicroOptions::quick();
    o.tmpdir = dir.path().to_path_buf();
    o.semring.groups = 3;
    o.semring.sems = 5;
    o.semring.laps = 200;
    let sel = Selection::parse(&["sem.ring*".into()]).unwrap();
    let out = micro::run_suite(&sel, &o, &AtomicBool::new(false)).unwrap();
    assert_eq!(out.len(), 3);
    for x in &out {
        match x {
            MicroOutcome::Measured(r) => {
                assert_eq!(r.samples.len(), 11, "{}", r.name);
                assert!(
                    r.samples.iter().all(|v| *v > 0.0),
                    "{}: {:?}",
                    r.name,
                    r.samples
                );
                assert!(r.detail.contains("-g 3 -s 5 -n 200"), "{}", r.detail);
            }
            MicroOutcome::Skipped { name, reason } => {
                eprintln!("SysV IPC unavailable, {name} skipped: {reason}");
                assert!(reason.contains("SysV"), "{reason}");
            }
        }
    }
    if let MicroOutcome::Measured(r) = &out[0] {
        // Each process's time is at most the whole repetition.
        let secs = &r.samples;
        if let MicroOutcome::Measured(per) = &out[1] {
            for (s, p) in secs.iter().zip(&per.samples) {
                assert!(
                    p / 1e6 <= *s * 1.0001,
                    "per-process {p} us > repetition {s} s"
                );
            }
        }
    }
    assert_eq!(my_children(), Vec::<i32>::new());
}
