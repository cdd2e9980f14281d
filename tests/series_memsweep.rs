//! The memsweep time-series workload: parameters and a short real run.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use sysdelta::workload::memsweep::{parse_duration, parse_size, MemsweepWorkload};
use sysdelta::workload::{RunContext, RunOutcome, Workload};

fn params(s: &str) -> Result<MemsweepWorkload, String> {
    MemsweepWorkload::from_params(&toml::from_str::<toml::Value>(s).unwrap())
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
