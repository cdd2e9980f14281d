//! docs/report.schema.json describes what `--format json` writes: real
//! reports (a command run with a failed run, imported Go benchmarks and
//! hyperfine results, a kernel experiment with boots) validate against it
//! with python3's `jsonschema` (Draft 2020-12), and a report with a wrong
//! verdict word or an unknown top-level key does not.

use std::process::Command;

use crate::common::{self, stderr, Sandbox};
use crate::kernels::{self, Kernel, Shape};

/// Validates every file named after the schema; prints "FILE: N" error
/// counts, then the first errors.
const CHECK: &str = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
for f in sys.argv[2:]:
    errs = list(v.iter_errors(json.load(open(f))))
    print(f"{f}: {len(errs)}")
    for e in errs[:5]:
        print("   ", list(e.absolute_path), e.message[:200])
"#;

/// A python3 with jsonschema; None (after a SKIP line) without one.
fn python() -> Option<&'static str> {
    for p in ["python3", "/usr/bin/python3"] {
        let ok = Command::new(p)
            .args(["-c", "import jsonschema"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(p);
        }
    }
    common::skip("report schema: no python3 with jsonschema (apt install python3-jsonschema)");
    None
}

/// Error counts per file, in order.
fn validate(py: &str, files: &[std::path::PathBuf]) -> Vec<(String, usize, String)> {
    let schema = format!("{}/docs/report.schema.json", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(py)
        .args(["-c", CHECK, &schema])
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    files
        .iter()
        .map(|f| {
            let f = f.display().to_string();
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{f}: ")))
                .unwrap();
            let n = line.rsplit(' ').next().unwrap().parse().unwrap();
            (f, n, text.clone())
        })
        .collect()
}

fn json_report(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let out = sb.run(&["report", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = sb.path(name);
    std::fs::write(&p, &out.stdout).unwrap();
    p
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn real_reports_validate_against_the_published_schema() {
    let Some(py) = python() else { return };
    let mut files = Vec::new();
    // A command run, one config's runs failing.
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "3",
        "--ignore-failure",
        "--config",
        "ok=",
        "--config",
        "bad=export FAIL=1",
        "--",
        "test -z \"$FAIL\"",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    files.push(json_report(&sb, "run.json"));
    // Imported Go benchmarks and hyperfine results.
    let go = Sandbox::new();
    let out = go.run(&[
        "import",
        "gobench",
        &fixture("gobench-old.txt"),
        &fixture("gobench-new.txt"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    files.push(json_report(&go, "go.json"));
    let hf = Sandbox::new();
    let out = hf.run(&["import", "hyperfine", &fixture("hyperfine.json")]);
    assert!(out.status.success(), "{}", stderr(&out));
    files.push(json_report(&hf, "hf.json"));
    // A kernel experiment: boots and per-boot cells.
    let kb = Sandbox::new();
    let shape = Shape {
        boots: 3,
        runs: 2,
        sd_boot: 0.1,
        sd_run: 0.01,
        accel: "KVM",
        seed: 7,
    };
    let ks = [
        Kernel {
            name: "k1",
            level: 1.0,
        },
        Kernel {
            name: "k2",
            level: 1.1,
        },
    ];
    drop(kernels::store_with(&kb.store(), &ks, &shape));
    files.push(json_report(&kb, "kernels.json"));
    for (f, n, text) in validate(py, &files) {
        assert_eq!(n, 0, "{f} does not follow docs/report.schema.json:\n{text}");
    }
    // The schema is not vacuous: a wrong verdict word and a new top-level
    // key are caught.
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    v["analysis"]["metrics"][0]["comparisons"][0]["verdict"] = "faster".into();
    v["extra"] = 1.into();
    let broken = sb.path("broken.json");
    std::fs::write(&broken, serde_json::to_vec(&v).unwrap()).unwrap();
    let (_, n, text) = validate(py, &[broken]).remove(0);
    assert_eq!(n, 2, "{text}");
}
