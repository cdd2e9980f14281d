//! Entering and leaving `memory_limit` and `swap` changes the system while
//! entered and leaves nothing behind: no cgroup, the same swap list, no
//! zram device, no swap file. Also prints what enter and leave cost.
//! Needs root (CI); skips with a printed reason otherwise.

mod common;
mod memkinds_support;

use std::process::Command;
use std::time::{Duration, Instant};

use memkinds_support::*;
use sysdelta::config::kinds::{self, memory_limit, swap};

#[test]
fn memory_limit_groups_the_workload_and_leave_removes_it() {
    if let Some(why) = skip_reason(false) {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP memory_limit enter/leave: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_s) = serial() else {
        return;
    };
    let mut g = Guard::new();
    let parent = memory_limit::locate_here().unwrap().parent;
    let before = groups_of(&parent, std::process::id());
    let mut k = build("memory_limit", "limit = \"64M\"\nswap = \"0\"", &g.journal);
    let mods = k.enter().unwrap();
    let procs = mods.cgroup_procs.clone().expect("cgroup_procs is set");
    let dir = procs.parent().unwrap().to_path_buf();
    g.groups.push(dir.clone());
    assert!(dir.is_dir() && dir.starts_with(&parent), "{dir:?}");
    let limit = ["memory.max", "memory.limit_in_bytes"]
        .iter()
        .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .unwrap();
    assert_eq!(limit.trim(), (64u64 << 20).to_string());
    assert!(!g.pending().is_empty(), "the group is journaled");

    // A process tree launched into it, still running at leave, is killed
    // (the shell's children too, which are not ours to wait for).
    let mut sh = Command::new("sh");
    sh.args(["-c", "sleep 60 & sleep 60 & wait"]);
    g.children.push(spawn_in(&procs, sh));
    let mut inside = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while inside.len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        inside = std::fs::read_to_string(&procs)
            .unwrap()
            .split_whitespace()
            .map(String::from)
            .collect();
    }
    assert_eq!(inside.len(), 3, "{inside:?}");
    assert!(inside.contains(&g.children[0].id().to_string()));

    k.leave().unwrap();
    let st = g.children[0].wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&st),
        Some(libc::SIGKILL)
    );
    for pid in &inside {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next();
        assert!(
            matches!(state, None | Some("Z") | Some("X")),
            "{pid} still runs: {stat}"
        );
    }
    assert!(!dir.exists(), "{} is left", dir.display());
    assert_eq!(groups_of(&parent, std::process::id()), before);
    assert!(g.pending().is_empty(), "{:?}", g.pending());
}

#[test]
fn swap_on_zram_is_on_while_entered_and_gone_after() {
    if let Some(why) = skip_reason(true) {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP swap zram enter/leave: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_s) = serial() else {
        return;
    };
    let g = Guard::new();
    let before = mem_state();
    let mut k = build("swap", "size = \"128M\"\ndevice = \"zram\"", &g.journal);
    k.enter().unwrap();
    let during = swap::active_swaps();
    let ours: Vec<_> = during
        .iter()
        .filter(|s| !before.swaps.contains(&s.name))
        .collect();
    assert_eq!(ours.len(), 1, "{during:?}");
    assert!(ours[0].name.starts_with("/dev/zram"), "{ours:?}");
    // mkswap keeps one page for its header.
    assert!(
        (128 * 1024 - 64..=128 * 1024).contains(&ours[0].kib),
        "{ours:?}"
    );
    assert_eq!(mem_state().zram.len(), before.zram.len() + 1);
    k.leave().unwrap();
    assert_eq!(mem_state(), before);
    assert!(g.pending().is_empty(), "{:?}", g.pending());
}

#[test]
fn swap_file_is_on_while_entered_and_removed_after() {
    if let Some(why) = skip_reason(false) {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP swap file enter/leave: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_s) = serial() else {
        return;
    };
    let g = Guard::new();
    let before = mem_state();
    let src = format!("size = \"64M\"\ndir = \"{}\"", g.dir.path().display());
    let mut k = build("swap", &src, &g.journal);
    k.enter().unwrap();
    let files: Vec<_> = std::fs::read_dir(g.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("sysdelta-swap-")
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let swaps = mem_state().swaps;
    assert!(
        swaps.iter().any(|s| std::path::Path::new(s) == files[0]),
        "{swaps:?}"
    );
    k.leave().unwrap();
    assert!(!files[0].exists());
    assert_eq!(mem_state(), before);
    assert!(g.pending().is_empty(), "{:?}", g.pending());
}

#[test]
fn preflight_names_what_is_wrong() {
    let d = tempfile::tempdir().unwrap();
    let j = sysdelta::config::journal::Journal::open_shared(&d.path().join("j")).unwrap();
    let k = kinds::build(
        "memory_limit",
        &toml::Value::String("100T".into()),
        j.clone(),
    )
    .unwrap();
    let lines = k.preflight();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("above this machine's memory")),
        "{lines:?}"
    );
    let v: toml::Value = toml::from_str("size = \"1G\"\ndir = \"/nonexistent/sd\"").unwrap();
    let lines = kinds::build("swap", &v, j.clone()).unwrap().preflight();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("/nonexistent/sd does not exist")),
        "{lines:?}"
    );
    let v: toml::Value = toml::from_str("size = \"100T\"\ndir = \"/var/tmp\"").unwrap();
    let lines = kinds::build("swap", &v, j).unwrap().preflight();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("free; a 102400.0 GiB swap file")),
        "{lines:?}"
    );
    for l in lines {
        assert!(!l.contains('\n') && l.starts_with("swap: "), "{l}");
    }
}

/// What one `enter()` and one `leave()` of a freshly built kind cost, wall
/// time, including their journal fsyncs (the journal lives in /var/tmp);
/// nothing is subtracted. Five cycles per kind; printed, not asserted.
#[test]
fn enter_leave_cost() {
    if let Some(why) = skip_reason(true) {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP enter/leave cost: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_s) = serial() else {
        return;
    };
    let g = Guard::new();
    let file_src = format!("size = \"1G\"\ndir = \"{}\"", g.dir.path().display());
    let cases = [
        (
            "memory_limit 1G",
            "memory_limit",
            "limit = \"1G\"\nswap = \"1G\"".to_string(),
        ),
        (
            "swap zram 1G",
            "swap",
            "size = \"1G\"\ndevice = \"zram\"".to_string(),
        ),
        ("swap file 1G", "swap", file_src),
    ];
    let before = mem_state();
    for (name, kind, src) in cases {
        let mut enter = Vec::new();
        let mut leave = Vec::new();
        for _ in 0..5 {
            let mut k = build(kind, &src, &g.journal);
            let t = Instant::now();
            k.enter().unwrap();
            enter.push(t.elapsed());
            let t = Instant::now();
            k.leave().unwrap();
            leave.push(t.elapsed());
        }
        enter.sort();
        leave.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        eprintln!(
            "COST {name}: enter median {:.2} ms (min {:.2}, max {:.2}); leave median {:.2} ms (min {:.2}, max {:.2})",
            ms(enter[2]), ms(enter[0]), ms(enter[4]), ms(leave[2]), ms(leave[0]), ms(leave[4])
        );
    }
    assert_eq!(mem_state(), before);
}

/// Every `memory_limit` and `swap` value in the docs/configs.md examples
/// builds.
#[test]
fn docs_examples_build() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configs.md")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let j = sysdelta::config::journal::Journal::open_shared(&d.path().join("j")).unwrap();
    let mut built = 0;
    for block in doc.split("```toml").skip(1) {
        let block = block.split("```").next().unwrap();
        let v: toml::Value = toml::from_str(block).unwrap();
        for c in v
            .get("config")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            for kind in ["memory_limit", "swap"] {
                if let Some(val) = c.get(kind) {
                    kinds::build(kind, val, j.clone()).unwrap_or_else(|e| panic!("{e}\n{block}"));
                    built += 1;
                }
            }
        }
    }
    assert!(built >= 6, "{built} examples");
}
