//! Importing hyperfine JSON, Go benchmark output and LMbench results:
//! real-format fixtures in, judged experiments out, marked as imported;
//! wrong or truncated files are bad input and change nothing stored.

use crate::common;

use common::{stdout, Sandbox};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn import(sb: &Sandbox, args: &[&str]) -> String {
    let mut a = vec!["import"];
    a.extend_from_slice(args);
    let out = sb.run(&a);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out).trim().to_string()
}

fn experiments(sb: &Sandbox) -> usize {
    let out = sb.run(&["list"]);
    if !out.status.success() {
        return 0;
    }
    stdout(&out).lines().count().saturating_sub(1)
}

#[test]
fn hyperfine_commands_become_configs() {
    let sb = Sandbox::new();
    let id = import(
        &sb,
        &["hyperfine", &fixture("hyperfine.json"), "--label", "hf"],
    );
    let v = sb.json_report(&id);
    let a = &v["analysis"];
    assert_eq!(
        a["configs"],
        serde_json::json!(["sort /etc/services", "sort -r /etc/services"])
    );
    let m = &a["metrics"][0];
    assert_eq!(
        (
            m["workload"].as_str(),
            m["name"].as_str(),
            m["unit"].as_str()
        ),
        (Some("hyperfine"), Some("wall"), Some("s"))
    );
    assert_eq!(m["cells"][0]["values"].as_array().unwrap().len(), 10);
    assert_eq!(
        m["cells"][0]["values"][0].as_f64(),
        Some(0.005258996),
        "samples are hyperfine's times, in order"
    );
    // The report says the samples were imported.
    let text = stdout(&sb.run(&["report", &id]));
    assert!(text.contains("hyperfine JSON imported from"), "{text}");
    let html = stdout(&sb.run(&["report", &id, "--format", "html"]));
    assert!(html.contains("Imported samples."));
}

#[test]
fn go_benchmark_files_become_configs() {
    let sb = Sandbox::new();
    let id = import(
        &sb,
        &[
            "gobench",
            &fixture("gobench-old.txt"),
            &fixture("gobench-new.txt"),
        ],
    );
    let v = sb.json_report(&id);
    let a = &v["analysis"];
    assert_eq!(
        a["configs"],
        serde_json::json!(["gobench-old", "gobench-new"])
    );
    let names: Vec<String> = a["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{} {}",
                m["workload"].as_str().unwrap(),
                m["name"].as_str().unwrap(),
                m["direction"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            "SortInts/ns/op lower",
            "Join/ns/op lower",
            "Join/MB/s higher",
            "Join/B/op lower",
            "Join/allocs/op lower"
        ]
    );
    assert_eq!(
        a["metrics"][0]["cells"][0]["values"]
            .as_array()
            .unwrap()
            .len(),
        5,
        "-count=5"
    );
    assert_eq!(
        a["metrics"][0]["cells"][0]["values"][0].as_f64(),
        Some(21159.0)
    );
}

#[test]
fn lmbench_result_files_are_runs() {
    let sb = Sandbox::new();
    let dir = fixture("lmbench/x86_64-linux-gnu");
    let files: Vec<String> = (0..3).map(|i| format!("{dir}/bench1.{i}")).collect();
    let mut args = vec!["lmbench"];
    args.extend(files.iter().map(String::as_str));
    let id = import(&sb, &args);
    let v = sb.json_report(&id);
    let a = &v["analysis"];
    assert_eq!(a["configs"], serde_json::json!(["x86_64-linux-gnu/bench1"]));
    let find = |n: &str| {
        a["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    for n in [
        "Simple syscall",
        "Pipe latency",
        "Process fork+exit",
        "ctxsw size=0k 2p",
        "Pipe bandwidth",
    ] {
        assert_eq!(
            find(n)["cells"][0]["values"].as_array().unwrap().len(),
            3,
            "{n}: one value per file"
        );
    }
    assert_eq!(find("Pipe bandwidth")["direction"], "higher");
    assert_eq!(find("Process fork+exit")["unit"], "us");
    assert_eq!(v["experiment"]["fingerprint"]["kernel"], "6.1.0-18-amd64");
    assert_eq!(v["experiment"]["host"], "bench1");
}

#[test]
fn wrong_or_truncated_files_are_bad_input_and_store_nothing() {
    let sb = Sandbox::new();
    import(&sb, &["hyperfine", &fixture("hyperfine-one.json")]);
    let before = experiments(&sb);
    assert_eq!(before, 1);
    let go = std::fs::read_to_string(fixture("gobench-old.txt")).unwrap();
    let cut = go.find("ns/op").unwrap() - 3; // mid-value of the first result line
    let trunc_go = sb.write("trunc.txt", &go[..cut]);
    let hf = std::fs::read_to_string(fixture("hyperfine.json")).unwrap();
    let trunc_hf = sb.write("trunc.json", &hf[..hf.len() / 2]);
    let lm = sb.write(
        "empty.0",
        "[lmbench3.0 results for Linux h 6.1]\n[RELEASE: 6.1]\n",
    );
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["gobench".into(), trunc_go.display().to_string()],
            "trunc.txt:5: expected 'value unit' pairs",
        ),
        (
            vec!["hyperfine".into(), trunc_hf.display().to_string()],
            "trunc.json:37: not a hyperfine JSON export: EOF while parsing",
        ),
        (
            vec!["hyperfine".into(), fixture("gobench-old.txt")],
            "gobench-old.txt:1: not a hyperfine JSON export",
        ),
        (
            vec!["gobench".into(), fixture("hyperfine.json")],
            "hyperfine.json: no Go benchmark result lines",
        ),
        (
            vec!["lmbench".into(), lm.display().to_string()],
            "empty.0: no LMbench results",
        ),
        (
            vec!["lmbench".into(), sb.path("absent.0").display().to_string()],
            "absent.0: cannot read",
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["import"];
        a.extend(args.iter().map(String::as_str));
        let out = sb.run(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "want {want:?}, got {err}");
    }
    assert_eq!(experiments(&sb), before, "a failed import stored something");
}
