//! Chaos: runs with shell, sysctl and ftrace configs are killed at random
//! points (SIGKILL, one SIGTERM, or two SIGTERMs a random moment apart),
//! then `sysdelta restore` and `run --resume` must leave the machine as it
//! was and the store complete: every planned run stored once, the
//! experiment complete, no scratch directory, crash file or shell state
//! left. Bounded in time (a budget, not a count); the seed is printed, and
//! `CHAOS_SEED=N` replays a failure. sysctl and ftrace need root (and
//! tracefs); without them the shell configs alone are tried, and the test
//! says so.

use crate::common;
use common::*;

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rand::{Rng, SeedableRng};

/// Wall time the whole test may spend on new iterations.
const BUDGET: Duration = Duration::from_secs(70);
const MIN_ITERATIONS: usize = 4;
const RUNS: u32 = 3;

fn tracefs_ok() -> bool {
    sysdelta::config::kinds::tracefs::supported()
}

/// What the configs change, as one comparable text: the sysctls, whether
/// tracefs is mounted, and (when it is) the tracing files ftrace touches.
fn system_state() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_else(|e| format!("<{e}>"));
    let mut s = format!(
        "vfs_cache_pressure={}swappiness={}",
        read("/proc/sys/vm/vfs_cache_pressure"),
        read("/proc/sys/vm/swappiness")
    );
    let t = "/sys/kernel/tracing";
    let mounted = Path::new(t).join("trace").exists();
    s.push_str(&format!("tracefs mounted={mounted}\n"));
    if mounted {
        for f in [
            "current_tracer",
            "set_event",
            "tracing_on",
            "buffer_size_kb",
        ] {
            s.push_str(&format!("{f}={}", read(&format!("{t}/{f}"))));
        }
    }
    s
}

fn plan(sb: &Sandbox, system: bool) -> (std::path::PathBuf, u32) {
    let state = sb.path("shell-state");
    let mut text = format!(
        "runs = {RUNS}\nwarmup = 0\n\
         [[config]]\nname = \"base\"\n\
         [[config]]\nname = \"shell\"\n\
         setup = 'touch {s}; export CHAOS=1'\nteardown = 'sleep 0.05; rm -f {s}'\n",
        s = state.display()
    );
    let mut configs = 2;
    if system {
        text.push_str(
            "[[config]]\nname = \"sysctl\"\n[config.sysctl]\n\
             \"vm.vfs_cache_pressure\" = 137\n\"vm.swappiness\" = 13\n\
             [[config]]\nname = \"ftrace\"\n[config.ftrace]\n\
             events = [\"sched:sched_switch\"]\nbuffer_size_kb = 1024\ntracing_on = false\n",
        );
        configs += 2;
    }
    text.push_str("[[workload]]\nname = \"w\"\ncommand = \"sleep 0.03\"\n");
    (sb.write("plan.toml", &text), configs * RUNS)
}

fn count(store: &Path, sql: &str) -> i64 {
    let c =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn leftovers(sb: &Sandbox, tmp: &Path) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| format!("tmp/{}", e.file_name().to_string_lossy()))
        .collect();
    for suffix in [".step", ".setup-env", ".runlog"] {
        let mut p = sb.store().into_os_string();
        p.push(suffix);
        if Path::new(&p).exists() {
            left.push(format!("store{suffix}"));
        }
    }
    if sb.path("shell-state").exists() {
        left.push("shell-state".into());
    }
    left
}

/// The machine's safety net when an assertion fails half-way: the sandbox's
/// journal is restored and the sysctls put back (what the test checks is
/// sysdelta's own restore, before this runs).
struct PutBack<'a> {
    sb: &'a Sandbox,
    sysctls: Vec<(&'static str, String)>,
}

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        let _ = self.sb.command().arg("restore").output();
        for (p, v) in &self.sysctls {
            let _ = std::fs::write(p, v);
        }
    }
}

#[test]
fn kills_and_double_signals_at_random_points_lose_nothing_and_leave_nothing() {
    let system = is_root() && tracefs_ok();
    if !system {
        skip("chaos: not root or no tracefs: sysctl and ftrace configs not tried, shell configs only");
    }
    // The sysctl and ftrace configs change the machine: not beside a real
    // experiment (tests/common/machine.rs).
    let _machine = match system {
        true => match common::machine::hold("chaos") {
            Some(l) => Some(l),
            None => return,
        },
        false => None,
    };
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("chaos: seed {seed} (CHAOS_SEED={seed} replays it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let before = system_state();
    let start = Instant::now();
    let mut iteration = 0;
    while iteration < MIN_ITERATIONS || start.elapsed() < BUDGET {
        iteration += 1;
        let sb = Sandbox::new();
        let _put_back = PutBack {
            sb: &sb,
            sysctls: ["/proc/sys/vm/vfs_cache_pressure", "/proc/sys/vm/swappiness"]
                .into_iter()
                .map(|p| (p, std::fs::read_to_string(p).unwrap_or_default()))
                .collect(),
        };
        let tmp = sb.path("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let (p, planned) = plan(&sb, system);
        let mode = rng.random_range(0..3);
        let at = Duration::from_millis(rng.random_range(0..1200));
        let gap = Duration::from_millis(rng.random_range(0..300));
        let what = match mode {
            0 => format!("SIGKILL at {at:?}"),
            1 => format!("SIGTERM at {at:?}"),
            _ => format!("SIGTERM at {at:?}, again {gap:?} later"),
        };
        eprintln!("chaos: iteration {iteration}: {what}");
        let mut child = sb.quiet_run(&p, &tmp).spawn().unwrap();
        std::thread::sleep(at);
        match mode {
            0 => {
                let _ = signal(&child, Signal::SIGKILL);
            }
            1 => {
                let _ = signal(&child, Signal::SIGTERM);
            }
            _ => {
                let _ = signal(&child, Signal::SIGTERM);
                std::thread::sleep(gap);
                let _ = signal(&child, Signal::SIGTERM);
            }
        }
        let status = child.wait().unwrap();
        let ctx = format!("seed {seed}, iteration {iteration} ({what}), exit {status:?}");
        // A first signal that came after the end changes nothing: the run
        // then ended with 0; otherwise it says it was interrupted.
        if mode != 0 {
            // Before sysdelta installs its handlers (its first milliseconds)
            // SIGTERM ends it at once, before it has done anything.
            use std::os::unix::process::ExitStatusExt;
            let early = status.signal() == Some(libc::SIGTERM) && !sb.store().exists();
            assert!(
                early || matches!(status.code(), Some(0) | Some(130)),
                "{ctx}: a signalled run must exit 130"
            );
        }
        let out = sb.command_in(&tmp).arg("restore").output().unwrap();
        assert!(out.status.success(), "{ctx}: restore: {}", stderr(&out));
        assert_eq!(
            system_state(),
            before,
            "{ctx}: restore left the system changed"
        );
        if !sb.store().exists() {
            // Killed before the experiment was created: nothing to resume.
            assert_eq!(leftovers(&sb, &tmp), Vec::<String>::new(), "{ctx}");
            continue;
        }
        let complete = count(
            &sb.store(),
            "SELECT COUNT(*) FROM experiments WHERE status = 'complete'",
        );
        let experiments = count(&sb.store(), "SELECT COUNT(*) FROM experiments");
        if experiments == 1 && complete == 0 {
            let out = sb
                .command_in(&tmp)
                .args([
                    "run",
                    "--resume",
                    "1",
                    "--trust-stored-plan",
                    "--quiet",
                    "--no-report",
                ])
                .output()
                .unwrap();
            assert!(out.status.success(), "{ctx}: resume: {}", stderr(&out));
        }
        if experiments == 1 {
            let runs = count(&sb.store(), "SELECT COUNT(*) FROM runs");
            let slots = count(
                &sb.store(),
                "SELECT COUNT(*) FROM (SELECT DISTINCT block, seq FROM runs)",
            );
            let ok = count(&sb.store(), "SELECT COUNT(*) FROM runs WHERE status = 'ok'");
            assert_eq!(
                (runs, slots, ok),
                (planned as i64, planned as i64, planned as i64),
                "{ctx}"
            );
            assert_eq!(
                count(
                    &sb.store(),
                    "SELECT COUNT(*) FROM experiments WHERE status = 'complete'"
                ),
                1,
                "{ctx}"
            );
        }
        assert_eq!(leftovers(&sb, &tmp), Vec::<String>::new(), "{ctx}");
        assert_eq!(
            system_state(),
            before,
            "{ctx}: resume left the system changed"
        );
        let out = sb.command().arg("restore").output().unwrap();
        assert!(
            stdout(&out).contains("nothing to restore"),
            "{ctx}: {}",
            stdout(&out)
        );
    }
    eprintln!(
        "chaos: {iteration} iterations in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
