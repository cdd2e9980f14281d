//! Plan values that a config kind turns into paths it writes as root: a
//! sysctl key, a block device, a trace or profile output. Each must stay
//! where the kind means it to (inside /proc/sys, inside /sys/block, a file
//! sysdelta made or may replace); anything else is bad input: exit 2, one
//! line naming the plan line, the config, the kind and the value, before
//! anything is changed, and no experiment stored.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;

use sysdelta::config::journal::{Journal, JournalHandle};
use sysdelta::config::kind::ConfigKind;
use sysdelta::config::kinds::{self, tracefs};

/// tracefs is global: the tests that enter a tracing kind take turns.
static TRACEFS: Mutex<()> = Mutex::new(());

/// Exit 2 and one line on stderr holding every needle.
fn assert_one_bad_line(out: &std::process::Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "exit 2; stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for n in needles {
        assert!(err.contains(n), "expected '{n}' in: {err}");
    }
}

/// Nothing stored: no store file, or one that lists no experiment.
fn assert_nothing_stored(sb: &Sandbox) {
    if !sb.store().exists() {
        return;
    }
    let out = sb.run(&["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end().lines().count(),
        1,
        "only the header: {}",
        stdout(&out)
    );
}

/// `sysdelta run` on a plan with one config holding `kind_toml`, whose
/// workload copies `watched` to `seen` (so a test sees what the file held
/// while the config was entered, if it ever was).
fn run_plan(
    sb: &Sandbox,
    config: &str,
    kind_toml: &str,
    watched: &Path,
    seen: &Path,
) -> std::process::Output {
    let text = format!(
        "runs = 2\n[[config]]\nname = \"{config}\"\n{kind_toml}\n\
         [[workload]]\nname = \"peek\"\ncommand = \"cp {} {}\"\n",
        watched.display(),
        seen.display()
    );
    let p = sb.write("plan.toml", &text);
    sb.run(&["run", p.to_str().unwrap()])
}

#[test]
fn sysctl_key_that_leaves_proc_sys_is_bad_input_and_nothing_is_written() {
    let sb = Sandbox::new();
    let target = sb.write("x", "precious\n");
    let seen = sb.path("seen");
    // /proc/sys/../.. is /: this key names the sandbox's file.
    let escape = format!("../..{}", target.display());
    for key in [escape.as_str(), "../../../tmp/x", "vm/../../../etc/passwd"] {
        let out = run_plan(
            &sb,
            "escape",
            &format!("[config.sysctl]\n\"{key}\" = 1"),
            &target,
            &seen,
        );
        assert_one_bad_line(
            &out,
            &[
                "plan.toml:",
                "config 'escape', sysctl: ",
                &format!("key `{key}` is not a sysctl name"),
            ],
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
        assert!(!seen.exists(), "the config was never entered");
        assert_nothing_stored(&sb);
    }
}

#[test]
fn real_sysctl_keys_dotted_and_slashed_still_run() {
    if !is_root() {
        common::skip("writing /proc/sys needs root");
        return;
    }
    let Some(_serial) = common::machine::serial(&TRACEFS) else {
        return;
    };
    let sb = Sandbox::new();
    // Their current values: the run changes nothing.
    let swappiness = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
    let dirty = std::fs::read_to_string("/proc/sys/vm/dirty_ratio").unwrap();
    let p = sb.write(
        "plan.toml",
        &format!(
            "runs = 2\n[[config]]\nname = \"same\"\n[config.sysctl]\n\
             \"vm.swappiness\" = {}\n\"vm/dirty_ratio\" = {}\n\
             [[workload]]\nname = \"w\"\ncommand = \"true\"\n",
            swappiness.trim(),
            dirty.trim()
        ),
    );
    let out = sb.run(&["run", p.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap(),
        swappiness
    );
}

#[test]
fn blktrace_device_outside_sys_block_is_bad_input_and_nothing_is_written() {
    let sb = Sandbox::new();
    // What `/sys/block/<name>/trace/enable` would be for a name that climbs
    // out of /sys/block into the sandbox.
    let fake = sb.path("disk");
    std::fs::create_dir_all(fake.join("trace")).unwrap();
    let enable = fake.join("trace/enable");
    std::fs::write(&enable, "0\n").unwrap();
    let seen = sb.path("seen");
    let device = format!("../..{}", fake.display());
    let out = run_plan(
        &sb,
        "blk",
        &format!(
            "[config.blktrace]\ndevices = [\"{device}\"]\ndir = \"{}\"",
            sb.path("trace").display()
        ),
        &enable,
        &seen,
    );
    assert_one_bad_line(
        &out,
        &[
            "config 'blk', blktrace: ",
            &format!("blktrace.devices: `{device}` is not a whole disk's name"),
        ],
    );
    assert_eq!(std::fs::read_to_string(&enable).unwrap(), "0\n");
    assert!(!seen.exists(), "the config was never entered");
    assert_nothing_stored(&sb);
}

#[test]
fn perf_record_output_naming_a_file_is_refused_and_the_file_kept() {
    let sb = Sandbox::new();
    let victim = sb.write("notes.txt", "precious\n");
    let seen = sb.path("seen");
    let out = run_plan(
        &sb,
        "prof",
        &format!("[config.perf_record]\noutput = \"{}\"", victim.display()),
        &victim,
        &seen,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = format!(
        "config 'prof', perf_record: perf_record: output {}: it exists and is not a perf.data file",
        victim.display()
    );
    assert!(err.contains(&line), "expected '{line}' in: {err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!seen.exists());
    assert_nothing_stored(&sb);
}

#[test]
fn trace_dir_that_other_users_can_write_is_refused() {
    let sb = Sandbox::new();
    let open = sb.path("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let seen = sb.path("seen");
    let watched = sb.write("watched", "x");
    let out = run_plan(
        &sb,
        "traced",
        &format!(
            "[config.trace_reader]\ndir = \"{}\"",
            open.join("out").display()
        ),
        &watched,
        &seen,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = format!(
        "config 'traced', trace_reader: trace_reader: dir {}: {} can be written by other users (mode 777)",
        open.join("out").display(),
        open.display()
    );
    assert!(err.contains(&line), "expected '{line}' in: {err}");
    assert!(!seen.exists());
    assert!(!open.join("out").exists());
    assert_nothing_stored(&sb);
}

fn journal(dir: &Path) -> JournalHandle {
    Journal::open_shared(&dir.join("store.journal")).unwrap()
}

fn build(kind: &str, src: &str, j: &JournalHandle) -> Box<dyn ConfigKind> {
    let v: toml::Value = toml::from_str(src).unwrap();
    kinds::build(kind, &v, j.clone()).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// Even past preflight (a symlink made after it), a trace file is never
/// written through a symlink: the reader refuses to start.
#[test]
fn trace_reader_never_writes_through_a_symlink() {
    if !is_root() || !tracefs::supported() {
        common::skip("needs root and tracefs");
        return;
    }
    let Some(_serial) = common::machine::serial(&TRACEFS) else {
        return;
    };
    let sb = Sandbox::new();
    let victim = sb.write("victim", "precious\n");
    let out = sb.path("out");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("trace.cpu0")).unwrap();
    let j = journal(sb.dir.path());
    let mut r = build("trace_reader", &format!("dir = \"{}\"", out.display()), &j);
    let lines = r.preflight();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("trace.cpu0 is not a regular file")),
        "{lines:?}"
    );
    r.enter().unwrap();
    let started = r.before_run();
    if started.is_ok() {
        let _ = r.after_run();
    }
    r.leave().unwrap();
    let e = started.expect_err("the reader must not open trace.cpu0");
    assert!(format!("{e:#}").contains("trace.cpu0"), "{e:#}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!Journal::is_pending(&sb.path("store.journal")).unwrap());
}

/// Past preflight too, perf_record neither removes nor replaces a file
/// that is not an earlier profile (enter refuses before journaling its
/// removal, so leave does not delete it either).
#[test]
fn perf_record_never_replaces_a_file_that_is_not_a_profile() {
    let sb = Sandbox::new();
    let victim = sb.write("victim.data", "precious\n");
    let j = journal(sb.dir.path());
    let mut p = build(
        "perf_record",
        &format!("output = \"{}\"", victim.display()),
        &j,
    );
    let entered = p.enter();
    if entered.is_ok() {
        let _ = p.before_run();
        let _ = p.after_run();
    }
    p.leave().unwrap();
    let e = entered.expect_err("enter must refuse");
    assert!(
        format!("{e:#}").contains("is not a perf.data file"),
        "{e:#}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!Journal::is_pending(&sb.path("store.journal")).unwrap());
}
