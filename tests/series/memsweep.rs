//! The memsweep time-series workload: parameters and a short real run.

use crate::common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use sysdelta::workload::memsweep::{parse_duration, parse_size, MemsweepWorkload};
use sysdelta::workload::{RunContext, RunOutcome, Workload};

fn params(s: &str) -> Result<MemsweepWorkload, String> {
    MemsweepWorkload::from_params(&toml::from_str::<toml::Value>(s).unwrap())
        .map_err(|e| e.to_string())
}

#[test]
fn sizes_and_durations_parse() {
    assert_eq!(parse_size("512M"), Some(512 << 20));
    assert_eq!(parse_size("2GiB"), Some(2 << 30));
    assert_eq!(parse_size("4096"), Some(4096));
    assert_eq!(parse_size("12Q"), None);
    assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(parse_duration("x"), None);
}

#[test]
fn bad_parameters_are_one_clear_error() {
    let e = params("working_set = \"1G\"\nduration = \"10s\"\ninterval = \"5ms\"")
        .err()
        .unwrap();
    assert!(e.contains("interval") && e.contains("10ms"), "{e}");
    let e = params("duration = \"10s\"").err().unwrap();
    assert!(e.contains("working_set"), "{e}");
    let e = params("working_set = \"lots\"\nduration = \"10s\"")
        .err()
        .unwrap();
    assert!(e.contains("working_set") && e.contains("lots"), "{e}");
    let e = params("working_set = \"1G\"\nduration = \"10s\"\nspeed = 3")
        .err()
        .unwrap();
    assert!(e.contains("speed"), "{e}");
}

#[test]
fn short_run_reports_one_rate_per_interval_in_order() {
    let mut w = params("working_set = \"32M\"\nduration = \"1s\"\ninterval = \"200ms\"").unwrap();
    assert_eq!(w.intervals(), 5);
    let cancel = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    let ctx = RunContext {
        env: &[],
        cwd: None,
        timeout: Duration::from_secs(60),
        cancel: &cancel,
        cpus: None,
        cgroup_procs: None,
        scratch: dir.path(),
    };
    let RunOutcome::Ok(ms) = w.run(&ctx) else {
        panic!("memsweep failed");
    };
    let steps = &ms
        .iter()
        .find(|m| m.metric == "memsweep.steps_per_s")
        .unwrap()
        .values;
    assert_eq!(steps.len(), 5);
    assert!(steps.iter().all(|v| *v > 10.0), "{steps:?}");
    let prefill = &ms
        .iter()
        .find(|m| m.metric == "memsweep.prefill_s")
        .unwrap()
        .values;
    assert_eq!(prefill.len(), 1);
    eprintln!("steps/s per interval: {steps:?}, prefill {prefill:?} s");
}

/// Experiment, not a check: memsweep with and without a memory limit,
/// vmstat alongside, printed side by side with the trend analysis.
/// Needs a prepared cgroup (and swap, for swapping rather than OOM):
/// SYSDELTA_MEMSWEEP_CGROUP=/sys/fs/cgroup/memory/x/cgroup.procs
/// cargo test --release --test series memsweep -- --ignored --nocapture
#[test]
#[ignore]
fn pressure_experiment() {
    let Ok(procs) = std::env::var("SYSDELTA_MEMSWEEP_CGROUP") else {
        common::skip("SYSDELTA_MEMSWEEP_CGROUP is not set");
        return;
    };
    let ws = std::env::var("SYSDELTA_MEMSWEEP_WS").unwrap_or("512M".into());
    let dur = std::env::var("SYSDELTA_MEMSWEEP_DURATION").unwrap_or("40s".into());
    let mut w = params(&format!(
        "working_set = \"{ws}\"\nduration = \"{dur}\"\ninterval = \"2s\""
    ))
    .unwrap();
    let cancel = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    let mut cols = Vec::new();
    for (label, cg) in [("unlimited", None), ("limited", Some(procs.as_str()))] {
        let path = cg.map(std::path::Path::new);
        let ctx = RunContext {
            env: &[],
            cwd: None,
            timeout: Duration::from_secs(3600),
            cancel: &cancel,
            cpus: None,
            cgroup_procs: path,
            scratch: dir.path(),
        };
        let mut vm = sysdelta::monitor::build("vmstat", Duration::from_secs(2)).unwrap();
        vm.start().unwrap();
        let out = w.run(&ctx);
        let data = vm.stop().unwrap();
        for (m, v) in &data.summaries {
            if [
                "vmstat.si_per_s",
                "vmstat.so_per_s",
                "vmstat.cs_per_s",
                "vmstat.us_pct",
                "vmstat.sy_pct",
                "vmstat.wa_pct",
            ]
            .contains(&m.name.as_str())
            {
                eprintln!("{label}: {} = {v:.1} {}", m.name, m.unit);
            }
        }
        match out {
            RunOutcome::Ok(ms) => {
                let s = ms
                    .iter()
                    .find(|m| m.metric == "memsweep.steps_per_s")
                    .unwrap();
                cols.push((label.to_string(), s.values.clone()));
                let si = data.series.iter().find(|s| s.name == "vmstat.si").unwrap();
                cols.push((format!("{label} si"), si.values.clone()));
            }
            other => eprintln!("{label}: {other:?}"),
        }
    }
    let mut out = Vec::new();
    sysdelta::series::table::print_side_by_side_with(&cols, 2.0, "2 s", &mut out).unwrap();
    eprint!("{}", String::from_utf8(out).unwrap());
}
