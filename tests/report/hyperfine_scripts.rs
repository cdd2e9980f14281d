//! `--export-hyperfine` writes hyperfine's JSON schema: hyperfine's own
//! scripts (tests/reference/hyperfine/, copied unchanged from its
//! repository) read it as they read `hyperfine --export-json`, and its
//! numbers are the runs' wall times in seconds.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, stderr, Sandbox};

/// A python3 that has matplotlib and numpy (the scripts' imports), with
/// matplotlib's non-interactive backend; None (after a SKIP line) if none.
fn python() -> Option<&'static str> {
    for p in ["python3", "/usr/bin/python3"] {
        let ok = Command::new(p)
            .args(["-c", "import matplotlib, numpy"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(p);
        }
    }
    common::skip(
        "hyperfine scripts: no python3 with matplotlib and numpy (apt install python3-matplotlib)",
    );
    None
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/hyperfine")
        .join(name)
}

/// Two configs of one quick command, exported in hyperfine's schema.
fn export(sb: &Sandbox) -> PathBuf {
    let file = sb.path("hf.json");
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "6",
        "--config",
        "fast=",
        "--config",
        "slow=",
        "--export-hyperfine",
        file.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    file
}

#[test]
fn the_export_has_hyperfines_fields_in_seconds() {
    let sb = Sandbox::new();
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(export(&sb)).unwrap()).unwrap();
    let results = v["results"].as_array().expect("results");
    let commands: Vec<_> = results
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["fast", "slow"]);
    for r in results {
        let times: Vec<f64> = r["times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert_eq!(times.len(), 6, "{r}");
        // `true` takes well under a second and more than nothing: seconds.
        assert!(times.iter().all(|t| *t > 0.0 && *t < 1.0), "{times:?}");
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let mean = times.iter().sum::<f64>() / 6.0;
        assert_eq!(r["min"].as_f64(), Some(min));
        assert!((r["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
        for k in ["stddev", "median", "user", "system", "max"] {
            assert!(r[k].is_f64(), "{k}: {r}");
        }
        assert_eq!(r["exit_codes"], serde_json::json!([0, 0, 0, 0, 0, 0]));
        assert_eq!(r["memory_usage_byte"].as_array().unwrap().len(), 6);
    }
}

#[test]
fn hyperfines_own_scripts_run_unchanged_on_the_export() {
    let Some(py) = python() else { return };
    let sb = Sandbox::new();
    let file = export(&sb);
    let run = |args: &[&str]| {
        let out = Command::new(py)
            .args(args)
            .env("MPLBACKEND", "Agg")
            .current_dir(sb.path(""))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let f = file.to_str().unwrap();
    for (s, png) in [
        ("plot_whisker.py", "whisker.png"),
        ("plot_histogram.py", "histogram.png"),
    ] {
        let out = sb.path(png);
        run(&[script(s).to_str().unwrap(), f, "-o", out.to_str().unwrap()]);
        let bytes = std::fs::read(&out).unwrap_or_else(|e| panic!("{s} wrote no {png}: {e}"));
        assert!(bytes.starts_with(b"\x89PNG"), "{s}: not a PNG");
    }
    let stats = run(&[script("advanced_statistics.py").to_str().unwrap(), f]);
    assert!(
        stats.contains("Command 'fast'") && stats.contains("Command 'slow'"),
        "{stats}"
    );
    assert!(stats.contains("runs:          6"), "{stats}");
}
