//! Invariants of the primitives that a user relies on when reading the
//! tables. Values are compared only where the physics leaves no doubt.

use std::sync::atomic::AtomicBool;

use sysdelta::micro::{self, MicroOptions, MicroOutcome, MicroResult, Pinning, Selection};

/// Measurements: one test at a time, or they disturb each other (the test
/// harness runs a file's tests on parallel threads).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(filter: &[&str], tweak: impl FnOnce(&mut MicroOptions)) -> Vec<MicroOutcome> {
    let dir = tempfile::tempdir().unwrap();
    let mut o = MicroOptions::quick();
    o.tmpdir = dir.path().to_path_buf();
    tweak(&mut o);
    let sel = Selection::parse(&filter.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let out = micro::run_suite(&sel, &o, &AtomicBool::new(false)).unwrap();
    // Never silently absent: one outcome per selected metric, in order.
    let names: Vec<&str> = out.iter().map(|x| x.name()).collect();
    assert_eq!(
        names,
        sel.names().iter().map(String::as_str).collect::<Vec<_>>()
    );
    // Scratch files are gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    out
}

fn measured<'a>(out: &'a [MicroOutcome], name: &str) -> &'a MicroResult {
    match out.iter().find(|x| x.name() == name) {
        Some(MicroOutcome::Measured(r)) => r,
        other => panic!("{name} not measured: {other:?}"),
    }
}

fn check_result(r: &MicroResult, samples: usize) {
    assert_eq!(r.samples.len(), samples, "{}", r.name);
    let mut s = r.samples.clone();
    s.sort_by(|a, b| a.total_cmp(b));
    assert_eq!(r.median, s[s.len() / 2], "{}", r.name);
    assert!(r.samples.iter().all(|v| v.is_finite()), "{}", r.name);
    assert!(!r.detail.is_empty());
}

#[test]
fn syscalls_keep_every_sample_and_are_positive() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(
        &["proc.null_call", "proc.null_io", "proc.stat", "floor"],
        |_| {},
    );
    for n in ["proc.null_call", "proc.null_io", "proc.stat"] {
        let r = measured(&out, n);
        check_result(r, 11);
        assert_eq!(r.unit, "us");
        assert_eq!(r.pinning, Pinning::Unpinned);
        assert!(r.median > 0.0, "{n}: {}", r.median);
    }
    match &out[3] {
        MicroOutcome::Measured(r) => assert!(r.median > 0.0),
        MicroOutcome::Skipped { reason, .. } => {
            eprintln!("floor.enosys skipped here: {reason}");
            assert!(!reason.is_empty());
        }
    }
}

#[test]
fn ctx_with_64k_is_not_cheaper_than_with_0k() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Pinned to one CPU so every hop is a real switch on the same cache.
    // Compared per hop before the data-touch overhead is subtracted: a ring
    // that touches 64 KB per hop must cost more than one that touches
    // nothing. (After subtraction the 64 KB switch estimate is within noise
    // of the 0 KB one on this VM and can come out lower; see docs/micro.md.)
    //
    // Measured in rounds, each the two rings one after the other, and the
    // rounds' differences compared: a busy machine's other work shares the
    // pinned CPU for seconds at a time, shifting every sample of a ring by
    // its share (once: 0 KB at 3.32 us against 64 KB at 3.27 us; beside two
    // CPU hogs, the fastest of three measurements of each still came out in
    // the wrong order), and the two halves of a round see nearly the same
    // share. The median difference of five rounds is positive unless most
    // rounds were reversed.
    let raw = |r: &MicroResult| r.median + subtracted_us(&r.detail);
    let mut diffs = Vec::new();
    let mut details = Vec::new();
    for _ in 0..5 {
        let out = run(&["ctx.2p_0k", "ctx.2p_64k"], |o| o.pin = Pinning::SameCpu);
        let k0 = measured(&out, "ctx.2p_0k");
        let k64 = measured(&out, "ctx.2p_64k");
        check_result(k0, 11);
        assert_eq!(k64.pinning, Pinning::SameCpu);
        diffs.push(raw(k64) - raw(k0));
        details.push(format!("{} / {}", k64.detail, k0.detail));
    }
    let mut sorted = diffs.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(
        sorted[2] > 0.0,
        "64 KB ring minus 0 KB ring, us per hop, by round: {diffs:?} ({details:?})"
    );
}

/// The hop overhead a ctx result says it subtracted, in us.
fn subtracted_us(detail: &str) -> f64 {
    let after = detail
        .split("hop overhead ")
        .nth(1)
        .expect("ctx detail names its overhead");
    after.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn pipe_latency_measured_same_cpu_and_cross_cpu() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(&["lat.pipe"], |_| {});
    let same = measured(&out, "lat.pipe.same_cpu");
    assert_eq!(same.pinning, Pinning::SameCpu);
    check_result(same, 11);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    match out
        .iter()
        .find(|x| x.name() == "lat.pipe.cross_cpu")
        .unwrap()
    {
        MicroOutcome::Measured(r) => assert_eq!(r.pinning, Pinning::CrossCpu),
        MicroOutcome::Skipped { reason, .. } => {
            assert!(cpus < 2, "cross-cpu skipped on {cpus} CPUs: {reason}");
            eprintln!("single CPU: cross-cpu skipped: {reason}");
        }
    }
    assert_eq!(measured(&out, "lat.pipe").pinning, Pinning::Unpinned);
}

#[test]
fn cache_latency_grows_with_level_and_bandwidth_is_positive() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(
        &["mem.l1", "mem.l2", "bw.pipe.same_cpu", "bw.file_reread"],
        |_| {},
    );
    let l1 = measured(&out, "mem.l1");
    match out.iter().find(|x| x.name() == "mem.l2").unwrap() {
        MicroOutcome::Measured(l2) => assert!(
            l2.median > l1.median,
            "L2 {} <= L1 {}",
            l2.median,
            l1.median
        ),
        MicroOutcome::Skipped { reason, .. } => eprintln!("no L2 here: {reason}"),
    }
    for n in ["bw.pipe.same_cpu", "bw.file_reread"] {
        let r = measured(&out, n);
        assert_eq!(r.unit, "MB/s");
        assert!(r.median > 0.0);
    }
}

#[test]
fn fs_and_vm_primitives_run_and_clean_up() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(
        &[
            "fs.create_1k",
            "fs.delete_1k",
            "vm.page_fault",
            "vm.prot_fault",
        ],
        |_| {},
    );
    for n in ["fs.create_1k", "fs.delete_1k", "vm.page_fault"] {
        check_result(measured(&out, n), 11);
    }
    match out.iter().find(|x| x.name() == "vm.prot_fault").unwrap() {
        MicroOutcome::Measured(r) => assert!(r.median >= 0.0 && r.median < 1000.0),
        MicroOutcome::Skipped { reason, .. } => panic!("prot fault skipped: {reason}"),
    }
}

#[test]
fn tables_print_every_measured_group() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(
        &["proc.null_call", "lat.pipe.same_cpu", "sem.pingpong"],
        |_| {},
    );
    let rs: Vec<MicroResult> = out
        .into_iter()
        .filter_map(|o| match o {
            MicroOutcome::Measured(r) => Some(r),
            MicroOutcome::Skipped { .. } => None,
        })
        .collect();
    let mut buf = Vec::new();
    micro::table::print_lmbench_tables(
        &[("base".into(), rs.clone()), ("new".into(), rs)],
        true,
        &mut buf,
    )
    .unwrap();
    let s = String::from_utf8(buf).unwrap();
    assert!(s.contains("Processor, Processes"), "{s}");
    assert!(s.contains("by CPU placement"), "{s}");
    assert!(s.contains("delta %"), "{s}");
    assert!(s.contains("+0.0%"), "{s}");
}

#[test]
fn workload_reports_samples_and_keeps_skip_reasons() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    use std::time::Duration;
    use sysdelta::workload::{RunContext, RunOutcome, Workload};
    let params: toml::Value =
        toml::from_str("filter = [\"proc.null_call\", \"lat.pipe.cross_cpu\"]\nquick = true")
            .unwrap();
    let mut w = micro::workload::MicroWorkload::from_params(&params).unwrap();
    assert_eq!(w.metrics().len(), 2);
    let dir = tempfile::tempdir().unwrap();
    let cancel = AtomicBool::new(false);
    let before = sysdelta::micro::pin::allowed_cpus().unwrap();
    let cpus = [before[0]];
    let ctx = RunContext {
        env: &[],
        cwd: None,
        timeout: Duration::from_secs(120),
        cancel: &cancel,
        cpus: Some(&cpus),
        cgroup_procs: None,
        scratch: dir.path(),
    };
    match w.run(&ctx) {
        RunOutcome::Ok(s) => {
            assert_eq!(s.len(), 1, "{s:?}");
            assert_eq!(s[0].metric, "proc.null_call");
            assert_eq!(s[0].values.len(), 11);
        }
        RunOutcome::Failed { reason, .. } => panic!("run failed: {reason}"),
    }
    // One CPU allowed: the cross-cpu variant cannot run, and says why.
    assert_eq!(w.skipped().len(), 1);
    assert_eq!(w.skipped()[0].0, "lat.pipe.cross_cpu");
    assert!(w.skipped()[0].1.contains("2 CPUs"), "{:?}", w.skipped());
    // The affinity of the calling thread is restored.
    assert_eq!(sysdelta::micro::pin::allowed_cpus().unwrap(), before);
}

/// The metrics printed under LMbench names measure LMbench 3's quantity:
/// the details say what was done and what was subtracted.
#[test]
fn lmbench_named_metrics_use_lmbench_definitions() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(
        &[
            "proc.stat",
            "proc.sig_install",
            "proc.sig_handle",
            "vm.mmap",
            "vm.page_fault",
            "bw.mem_read",
        ],
        |_| {},
    );
    let detail = |n: &str| measured(&out, n).detail.clone();
    if std::path::Path::new("/usr/include/linux/types.h").is_file() {
        // lat_syscall's default file: the path depth is part of the cost.
        assert!(
            detail("proc.stat").contains("stat(/usr/include/linux/types.h), 4 components"),
            "{}",
            detail("proc.stat")
        );
    }
    assert!(detail("proc.sig_install").contains("&old"));
    let h = detail("proc.sig_handle");
    assert!(h.contains("minus the send with signal 0"), "{h}");
    assert!(detail("vm.mmap").contains("read-write"));
    // Page fault: LMbench's per-page figure and sysdelta's per-fault one,
    // side by side; a fault covers at least one page.
    let pp = measured(&out, "vm.page_fault");
    assert!(pp.detail.starts_with("per page"), "{}", pp.detail);
    // Both figures are differences (the faulting pass minus a remap, or
    // minus a re-read), so a time slice of a busy machine's other work
    // landing in the part subtracted makes a sample negative, and beside
    // two CPU hogs the median of 11 came out negative about one run in
    // two. A fault costs something, so that is a measurement the load
    // spoiled, not a definition gone wrong: measured again, up to three
    // times in all, and every try is shown if none comes out positive.
    let mut tries = Vec::new();
    let mut page_fault = |out: &[MicroOutcome]| {
        let (pp, pf) = (
            measured(out, "vm.page_fault").median,
            measured(out, "vm.page_fault.per_fault").median,
        );
        tries.push((pp, pf));
        pp > 0.0 && pf > 0.0
    };
    let positive = page_fault(&out) || (0..2).any(|_| page_fault(&run(&["vm.page_fault"], |_| {})));
    assert!(
        positive,
        "per page and per fault medians, us, of each try: {tries:?}"
    );
    for n in ["bw.mem_read", "bw.mem_read.huge"] {
        assert_eq!(measured(&out, n).unit, "MB/s");
    }
    assert!(detail("bw.mem_read").contains("every 4th int"));
    assert!(detail("bw.mem_read.huge").contains("MADV_HUGEPAGE"));
}
