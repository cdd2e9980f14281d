//! `ab` as hyperfine users write it: `-P`/`-L` give one workload (or
//! config) per value, `-n` names the command, and without `-n` the
//! workload is named after its command.

mod common;

use common::{stderr, Sandbox};

/// The workload and config names of the last experiment's report rows.
fn names(sb: &Sandbox) -> (Vec<String>, Vec<String>) {
    let r = sb.json_report("last");
    let mut workloads: Vec<String> = Vec::new();
    for m in r["analysis"]["metrics"].as_array().unwrap() {
        let w = m["workload"].as_str().unwrap().to_string();
        if !workloads.contains(&w) {
            workloads.push(w);
        }
    }
    let configs = r["analysis"]["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    (workloads, configs)
}

fn ab(sb: &Sandbox, args: &[&str]) {
    let mut all = vec!["ab", "-q", "--no-report", "-r", "2"];
    all.extend_from_slice(args);
    let out = sb.run(&all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
}

#[test]
fn a_range_scan_gives_one_workload_per_value() {
    let sb = Sandbox::new();
    ab(
        &sb,
        &["--config", "a=", "-P", "n", "1", "3", "--", "sleep 0.0{n}"],
    );
    let (w, _) = names(&sb);
    assert_eq!(w, ["sleep_0.01", "sleep_0.02", "sleep_0.03"]);
    // Each workload ran its own value: the slower the larger.
    let r = sb.json_report("last");
    let mean = |w: &str| {
        let runs = r["runs"].as_array().unwrap();
        let v: Vec<f64> = runs
            .iter()
            .filter(|x| x["workload"] == w && x["warmup"] == false)
            .map(|x| x["samples"]["wall"][0].as_f64().unwrap())
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(mean("sleep_0.03") > mean("sleep_0.01"));
    // With a step, decimals; -n names them, with the placeholder filled.
    ab(
        &sb,
        &[
            "--config",
            "a=",
            "-P",
            "t",
            "0.001",
            "0.003",
            "-D",
            "0.002",
            "-n",
            "nap-{t}",
            "--",
            "sleep {t}",
        ],
    );
    assert_eq!(names(&sb).0, ["nap-0.001", "nap-0.003"]);
}

#[test]
fn a_list_scan_gives_one_workload_or_config_per_value() {
    let sb = Sandbox::new();
    ab(
        &sb,
        &[
            "--config", "a=", "-L", "w", "x,yy", "-n", "echo", "--", "echo {w}",
        ],
    );
    assert_eq!(names(&sb).0, ["echo-x", "echo-yy"]);
    // In a config's setup: one config per value, one workload.
    ab(
        &sb,
        &[
            "--config",
            "base=",
            "--config",
            "v=export V={v}",
            "-L",
            "v",
            "1,2",
            "--",
            "test -n \"$V\" || test -z \"$V\"",
        ],
    );
    let (w, c) = names(&sb);
    assert_eq!(c, ["base", "v-1", "v-2"]);
    assert_eq!(w.len(), 1);
    // A placeholder used nowhere is bad input.
    let out = sb.run(&[
        "ab", "-r", "2", "--config", "a=", "-L", "q", "1,2", "--", "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("{q}"), "{}", stderr(&out));
}

#[test]
fn the_command_names_its_workload_unless_n_does() {
    let sb = Sandbox::new();
    ab(&sb, &["--config", "a=", "--", "sleep 0.001"]);
    assert_eq!(names(&sb).0, ["sleep_0.001"]);
    ab(&sb, &["--config", "a=", "-n", "nap", "--", "sleep 0.001"]);
    assert_eq!(names(&sb).0, ["nap"]);
}

#[test]
fn a_cleanup_puts_back_the_value_its_setup_found() {
    // The README's THP example, on a file instead of sysfs: the setup
    // exports what it found, the cleanup writes it back.
    let sb = Sandbox::new();
    let f = sb.write("knob", "madvise\n");
    let f = f.display();
    ab(
        &sb,
        &[
            "--config",
            "base=",
            "--config",
            &format!("off=export WAS=$(cat {f}); echo never > {f}"),
            "-c",
            &format!("off=echo $WAS > {f}"),
            "--",
            &format!("cat {f} >> {f}.seen"),
        ],
    );
    // The setup ran (runs in `off` saw `never`, in `base` `madvise`) ...
    let seen = std::fs::read_to_string(sb.path("knob.seen")).unwrap();
    assert!(seen.lines().any(|l| l == "never"), "{seen}");
    assert!(seen.lines().any(|l| l == "madvise"), "{seen}");
    // ... and the cleanup put back what the setup found.
    assert_eq!(
        std::fs::read_to_string(sb.path("knob")).unwrap(),
        "madvise\n"
    );
}

#[test]
fn a_plan_matrix_gives_one_workload_per_value() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "m.toml",
        r#"
runs = 2
[[config]]
name = "a"
[[config]]
name = "v"
setup = "export V={v}"
matrix = { v = ["x", "y"] }
[[workload]]
name = "nap-{ms}"
command = "sleep 0.00{ms}"
prepare = "echo {ms} >> prepared"
matrix = { ms = [1, 2] }
"#,
    );
    let out = sb.run(&["run", "-q", "--no-report", plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (w, c) = names(&sb);
    assert_eq!(w, ["nap-1", "nap-2"]);
    assert_eq!(c, ["a", "v-x", "v-y"]);
    // A workload's prepare gets its value too: 2 runs x 3 configs each.
    let prepared = std::fs::read_to_string(sb.path("prepared")).unwrap();
    for ms in ["1", "2"] {
        assert_eq!(
            prepared.lines().filter(|l| *l == ms).count(),
            6,
            "{prepared}"
        );
    }
    let bad = sb.write(
        "bad.toml",
        "[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\nmatrix = { a = [1], b = [2] }\n",
    );
    let out = sb.run(&["run", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.toml:6"), "{}", stderr(&out));
}
