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
            "SortInts-2/sec/op lower",
            "Join-2/sec/op lower",
            "Join-2/B/s higher",
            "Join-2/B/op lower",
            "Join-2/allocs/op lower"
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

/// A Go output of two packages, each with `BenchmarkFoo`, run with
/// `-cpu 1,2,4` in the first: each (package, name, GOMAXPROCS) is one
/// benchmark, as benchstat's rows are.
const GO_TWO_PACKAGES: &str = "goos: linux\ngoarch: amd64\npkg: example.com/a\ncpu: Xeon\n\
    BenchmarkFoo     100  100 ns/op\nBenchmarkFoo     100  102 ns/op\nBenchmarkFoo     100  98 ns/op\n\
    BenchmarkFoo-2   100  60 ns/op\nBenchmarkFoo-2   100  61 ns/op\n\
    BenchmarkFoo-4   100  40 ns/op\nBenchmarkFoo-4   100  41 ns/op\n\
    PASS\nok  \texample.com/a\t1.0s\n\
    pkg: example.com/b\nBenchmarkFoo     1  10000 ns/op\nBenchmarkFoo     1  10100 ns/op\n\
    PASS\nok  \texample.com/b\t1.0s\n";

#[test]
fn go_benchmarks_of_two_packages_and_gomaxprocs_stay_apart() {
    let sb = Sandbox::new();
    let old = sb.write("old.txt", GO_TWO_PACKAGES);
    let new = sb.write("new.txt", GO_TWO_PACKAGES);
    let id = import(
        &sb,
        &["gobench", old.to_str().unwrap(), new.to_str().unwrap()],
    );
    let v = sb.json_report(&id);
    let cells: Vec<(String, String, serde_json::Value)> = v["analysis"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["workload"].as_str().unwrap().to_string(),
                format!(
                    "{} {}",
                    m["name"].as_str().unwrap(),
                    m["unit"].as_str().unwrap()
                ),
                m["cells"][0]["values"].clone(),
            )
        })
        .collect();
    let want =
        |w: &str, values: serde_json::Value| (w.to_string(), "sec/op ns/op".to_string(), values);
    assert_eq!(
        cells,
        vec![
            want(
                "Foo [pkg=example.com/a]",
                serde_json::json!([100.0, 102.0, 98.0])
            ),
            want("Foo-2 [pkg=example.com/a]", serde_json::json!([60.0, 61.0])),
            want("Foo-4 [pkg=example.com/a]", serde_json::json!([40.0, 41.0])),
            want(
                "Foo [pkg=example.com/b]",
                serde_json::json!([10000.0, 10100.0])
            ),
        ]
    );
}

/// Go's times scale as benchstat shows them (`344526 ns/op` is 344.5 us),
/// `--time-unit` applies to them, and the Markdown header and the HTML
/// plot's label name the unit (they read `ns/op ()` and `( , lower is
/// better)`).
#[test]
fn go_units_scale_and_every_format_names_them() {
    let sb = Sandbox::new();
    let text = |ns: [u32; 3]| {
        ns.iter()
            .map(|n| format!("BenchmarkParse-8  3000  {n} ns/op  2048 B/op  12 allocs/op\n"))
            .collect::<String>()
    };
    let old = sb.write("old.txt", &text([344526, 350100, 340900]));
    let new = sb.write("new.txt", &text([300526, 310100, 305900]));
    let id = import(
        &sb,
        &["gobench", old.to_str().unwrap(), new.to_str().unwrap()],
    );
    let md = stdout(&sb.run(&["report", &id, "--format", "markdown"]));
    assert!(md.contains("| sec/op (us/op) |"), "{md}");
    assert!(md.contains("| B/op (KiB/op) |"), "{md}");
    assert!(md.contains("| allocs/op (allocs/op) |"), "{md}");
    assert!(md.contains("345.2"), "mean of old in us: {md}");
    let ms = stdout(&sb.run(&["report", &id, "--format", "markdown", "-u", "ms"]));
    assert!(ms.contains("| sec/op (ms/op) |"), "{ms}");
    assert!(ms.contains("0.3452"), "-u ms: {ms}");
    let html = stdout(&sb.run(&["report", &id, "--format", "html"]));
    assert!(html.contains("(us/op, lower is better)"), "html label");
    assert!(!html.contains("( , lower is better)"), "html label");
    let csv = stdout(&sb.run(&["report", &id, "--format", "csv"]));
    assert!(csv.contains(",us/op,"), "{csv}");
}
