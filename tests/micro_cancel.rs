//! Cancelling the suite (SIGINT) stops promptly and leaves no child.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sysdelta::micro::{self, Cancelled, MicroOptions, Selection};

/// Both tests count this process's children: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn children_of(parent: i32) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: i32 = rest.split(' ').nth(1).unwrap().parse().unwrap();
        if ppid == parent {
            v.push(pid);
        }
    }
    v
}

fn wait_for_children(parent: i32, at_least: usize) -> Vec<i32> {
    let t = Instant::now();
    loop {
        let c = children_of(parent);
        if c.len() >= at_least || t.elapsed() > Duration::from_secs(60) {
            return c;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn cancel_reaps_every_child() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut o = MicroOptions::quick();
    o.tmpdir = dir.path().to_path_buf();
    let cancel = Arc::new(AtomicBool::new(false));
    let c2 = Arc::clone(&cancel);
    let sel = Selection::parse(&["ctx.96p_0k".into(), "ctx.96p_4k".into()]).unwrap();
    let h = std::thread::spawn(move || micro::run_suite(&sel, &o, &c2));
    let me = std::process::id() as i32;
    let kids = wait_for_children(me, 95);
    assert!(
        kids.len() >= 95,
        "ring never started: {} children",
        kids.len()
    );
    let t = Instant::now();
    cancel.store(true, Ordering::Relaxed);
    let r = h.join().unwrap();
    eprintln!("stopped {:?} after cancel", t.elapsed());
    let e = r.expect_err("cancelled run must not succeed");
    assert!(e.downcast_ref::<Cancelled>().is_some(), "{e:#}");
    assert_eq!(children_of(me), Vec::<i32>::new(), "children left behind");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "scratch left behind"
    );
}

#[test]
fn sigint_to_the_cli_stops_it_and_its_children() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args(["micro", "--quick", "-q", "ctx.96p_0k", "ctx.96p_4k"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let kids = wait_for_children(pid, 95);
    assert!(
        kids.len() >= 95,
        "ring never started: {} children",
        kids.len()
    );
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let t = Instant::now();
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "sysdelta ignored SIGINT"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(!st.success());
    std::thread::sleep(Duration::from_millis(100));
    let left: Vec<i32> = kids
        .into_iter()
        .filter(|k| std::path::Path::new(&format!("/proc/{k}")).exists())
        .collect();
    assert_eq!(left, Vec::<i32>::new(), "ring processes outlived sysdelta");
}
