//! The text a user reads: 2005-style raw blocks, the summary's figures, and
//! the smallest zero-drop buffer per volume.

use sysdelta::transport::calib::Calibration;
use sysdelta::transport::report::{print_deltas, print_raw_blocks, print_summary, summarize};
use sysdelta::transport::step::StepResult;
use sysdelta::transport::sysinfo::SysHeader;
use sysdelta::transport::Kind;

fn step(t: &str, buffer: u64, volume: u64, dropped: u64, mb: f64, ns: f64) -> StepResult {
    let mut s = StepResult::skipped(Kind::Pipe, 100, String::new());
    s.skipped = None;
    s.transport = t.into();
    s.buffer = buffer;
    s.volume = volume;
    s.written = volume / 100;
    s.read = s.written - dropped;
    s.dropped = dropped;
    s.mb_per_s = mb;
    s.cpu_ns_per_record = ns;
    s.wall_s = volume as f64 / 1e6 / mb;
    s.sink = "file".into();
    s
}

fn sample() -> Vec<StepResult> {
    vec![
        step("netlink", 1 << 20, 100_000_000, 0, 24.0, 2400.0),
        step("netlink", 1 << 20, 200_000_000, 956, 23.0, 2500.0),
        step("netlink", 2 << 20, 200_000_000, 0, 25.0, 2300.0),
        step("pipe", 1 << 20, 100_000_000, 7, 90.0, 500.0),
        StepResult::skipped(Kind::Perf, 100, "not here".into()),
    ]
}

#[test]
fn raw_blocks_follow_the_2005_shape() {
    let mut out = Vec::new();
    print_raw_blocks(&mut out, &SysHeader::capture(), &sample()).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(s.starts_with("TRANS BENCH for "), "{s}");
    assert!(s.contains("MemFree:"));
    assert!(s.contains("NETLINK with 2MB buffers"));
    assert!(s.contains("write of 200MB in "));
    assert!(s.contains("Transfer rate =   25.00 MB/sec"));
    assert!(s.contains("Transport failures: 956"));
    assert!(s.contains("PERF skipped: not here"));
}

#[test]
fn summary_uses_clean_steps_and_finds_smallest_zero_drop_buffer() {
    let sums = summarize(&sample());
    assert_eq!(sums.len(), 2);
    let nl = &sums[0];
    assert_eq!(nl.transport, "netlink");
    assert_eq!(nl.sustained_mb_per_s, 24.5, "median of the two clean steps");
    assert_eq!(nl.steps_with_drops, 1);
    assert_eq!(nl.zero_drop_buffer[&100_000_000], (Some(1 << 20), 1 << 20));
    assert_eq!(nl.zero_drop_buffer[&200_000_000], (Some(2 << 20), 2 << 20));
    assert!(!sums[1].from_clean_steps);

    let cal = Calibration {
        record_size: 100,
        harness_ns_per_record: 1.0,
        memcpy_mb_per_s: 5000.0,
    };
    let mut out = Vec::new();
    print_summary(&mut out, &sample(), Some(&cal)).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(s.contains(">1MB"), "pipe never ran clean: {s}");
    assert!(s.contains("skipped: perf: not here"));
    assert!(
        s.contains("= 0.20% of the cheapest transport (pipe, 500 ns"),
        "{s}"
    );
    assert!(s.contains("5000 MB/sec"));
}

#[test]
fn deltas_compare_two_sweeps() {
    let base = sample();
    let mut other = sample();
    for s in &mut other {
        s.mb_per_s *= 2.0;
    }
    let mut out = Vec::new();
    print_deltas(&mut out, "baseline", &base, "patched", &other).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(s.contains("patched vs baseline"));
    assert!(s.contains("+100.0%"), "{s}");
}
