//! A plan whose units per config can never reach a verdict is named before
//! it runs (`plan::reach`), with the report's rule: the U test's floor on
//! runs (and on boots from 8 a side) after Holm over the headline family;
//! Welch's t on boot means below 8 boots, which has none.

use sysdelta::plan::{self, reach, Overrides};

use crate::common;

/// Two configs (one compared), one command workload: a family of 4
/// (wall, user, sys, maxrss).
fn host_plan(runs: u32) -> plan::Plan {
    let text = format!(
        "runs = {runs}\n[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n\
         [[workload]]\nname = \"w\"\ncommand = \"true\"\n"
    );
    plan::parse("p.toml", &text, &Overrides::default()).unwrap()
}

/// The same with two kernel configs: the boot is the unit.
fn kernel_plan(boots: u32) -> plan::Plan {
    let mut text = format!("boots = {boots}\nruns = {boots}\n");
    for name in ["a", "b"] {
        text.push_str(&format!(
            "[[config]]\nname = \"{name}\"\n[config.kernel]\nimage = \"/boot/vmlinuz-x\"\ncpus = 1\n"
        ));
    }
    text.push_str("[[workload]]\nname = \"w\"\ncommand = \"true\"\n");
    plan::parse("k.toml", &text, &Overrides::default()).unwrap()
}

#[test]
fn three_runs_per_config_warn_and_five_do_not() {
    let w = reach::warning(&host_plan(3), 0.05).expect("3 runs a side cannot reach 0.05");
    assert_eq!(
        w,
        "3 runs per config: the smallest possible p-value is 0.100, above alpha 0.05 after \
         correction over 4 comparisons, so no difference can be flagged; 5 runs per config can"
    );
    // 4 a side: 2 / C(8, 4) = 0.0286, times 4 comparisons is above 0.05.
    assert!(reach::warning(&host_plan(4), 0.05).is_some());
    // 5 a side: 0.0079 x 4 = 0.032.
    assert_eq!(reach::warning(&host_plan(5), 0.05), None);
}

#[test]
fn boots_follow_welch_below_eight_and_the_u_test_from_eight() {
    // Welch's t on boot means has no floor on p: 3 boots can reach a
    // verdict (with little power; docs/statistics.md).
    assert_eq!(reach::warning(&kernel_plan(3), 0.05), None);
    assert_eq!(reach::warning(&kernel_plan(5), 0.05), None);
    let one = reach::warning(&kernel_plan(1), 0.05).expect("1 boot allows no test");
    assert!(
        one.starts_with("1 boot per config: no test is possible"),
        "{one}"
    );
    assert!(one.ends_with("; 2 boots per config can"), "{one}");
    // One run a side: the U test needs 5 a side for 4 comparisons.
    let one = reach::warning(&host_plan(1), 0.05).expect("1 run allows no test");
    assert!(one.ends_with("; 5 runs per config can"), "{one}");
    // From 8 boots the U test decides: 2 / C(16, 8) x 4 = 6.2e-4.
    assert_eq!(reach::warning(&kernel_plan(8), 0.001), None);
    let w = reach::warning(&kernel_plan(8), 0.0005).expect("above 0.0005");
    assert!(
        w.starts_with("8 boots per config: the smallest possible p-value is 0.000155"),
        "{w}"
    );
    assert!(w.ends_with("; 9 boots per config can"), "{w}");
}

/// The warning comes before the first run, from the binary, and the report
/// says the same afterwards.
#[test]
fn ab_with_three_runs_says_so_before_running_and_in_the_report() {
    let sb = common::Sandbox::new();
    let out = sb.run(&[
        "ab", "--runs", "3", "--config", "a=", "--config", "b=", "--", "true",
    ]);
    let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
    assert!(out.status.success(), "{stderr}");
    let line = "sysdelta: warning: 3 runs per config: the smallest possible p-value is 0.100";
    let warned = stderr.find(line).expect(&stderr);
    let stored = stderr.find("measured runs ok").expect(&stderr);
    assert!(warned < stored, "warned before the runs: {stderr}");
    assert!(
        stdout.contains("the smallest possible p-value is 0.100"),
        "the report says it too: {stdout}"
    );
}

/// `examples/kernels.toml --quick` is built to reach a verdict (the real
/// run is too slow for CI; its figures are in docs/kernels-recipe.md
/// A.10): 8 boots a config, so the U test decides (distribution-free:
/// under TCG a boot's values carry the host's load, heavy-tailed), and
/// its p survives Holm over the example's family even when host load
/// swaps two boots across the sides.
#[test]
fn the_quick_kernel_example_can_reach_a_verdict() {
    let ov = Overrides {
        quick: true,
        ..Default::default()
    };
    let p = plan::load_file(std::path::Path::new("examples/kernels.toml"), &ov).unwrap();
    assert!(p.has_kernels());
    assert_eq!(reach::warning(&p, 0.05), None);
    let n = p.boots as usize;
    assert!(
        n >= sysdelta::stats::welch::BOOT_WELCH_BELOW,
        "{n} boots: Welch's t on boot means, not the U test"
    );
    assert_eq!(
        p.runs, p.boots,
        "one run per boot: boots, not runs, buy power"
    );
    // 2 configs against the baseline x (proc.null_call, proc.fork_exit,
    // lat.pipe and its .same_cpu and .cross_cpu, build_time).
    let family = 2.0 * 6.0;
    // Two of the n x n pairs the other way round: U = 2.
    let base: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let mut other: Vec<f64> = (0..n).map(|i| (n + i) as f64).collect();
    other[0] = base[n - 2] - 0.5;
    let u = sysdelta::stats::mannwhitney::mann_whitney_u(&base, &other).unwrap();
    assert!(u.p * family < 0.05, "p {} x {family}", u.p);
}

/// Bad input still says one line: the warning waits until nothing can
/// refuse the run (here its scratch directory's place, TMPDIR).
#[test]
fn a_refused_run_says_only_why() {
    let sb = common::Sandbox::new();
    let out = sb
        .command()
        .env("TMPDIR", sb.path("no-such-dir"))
        .args([
            "ab", "--runs", "3", "--config", "a=", "--config", "b=", "--", "true",
        ])
        .output()
        .unwrap();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("TMPDIR"), "{err}");
}
