//! A JSON report too big to hold whole goes out as it is made, to stdout
//! or to an `--export-json` file; when writing it fails half-way, the
//! failure is unmistakable: the file is never left truncated (nor an
//! earlier one clobbered), and a stdout cut short ends the command with a
//! non-zero status and one line on stderr saying the report is incomplete.

use crate::common::*;

use std::os::unix::process::CommandExt;
use std::process::{Output, Stdio};

use sysdelta::metric::{Direction, MetricSamples, MetricSpec};
use sysdelta::store::{RunResult, Store};

/// Runs per config: the JSON report is several times [`LIMIT`].
const RUNS: u32 = 600;

/// The largest file (bytes) the commands below may write.
const LIMIT: u64 = 128 * 1024;

/// One experiment of 2 configs x [`RUNS`] runs in the sandbox's store.
fn big_store(sb: &Sandbox) {
    let store = Store::open(&sb.store(), true).unwrap();
    let spec = MetricSpec::new("wall", "s", Direction::Lower);
    let id = create_experiment(&store, "big", &["a", "b"], RUNS, &[spec]);
    for seq in 0..RUNS {
        for (i, config) in ["a", "b"].into_iter().enumerate() {
            let samples = [MetricSamples {
                metric: "wall".into(),
                values: vec![1.0 + f64::from(seq % 7) * 0.01 + i as f64 * 0.1],
            }];
            store
                .record_run(&run_record(
                    id,
                    seq,
                    i as u32,
                    config,
                    RunResult::Ok(&samples),
                ))
                .unwrap();
        }
    }
    store
        .finish(id, sysdelta::status::ExperimentStatus::Complete, None)
        .unwrap();
}

/// `sysdelta ARGS` in `sb`, stdout into `stdout_file`, unable to make a
/// file larger than [`LIMIT`] bytes (`ulimit -f`; the write past it fails
/// with EFBIG, as on a full disk, rather than the process being killed).
fn limited(sb: &Sandbox, args: &[&str], stdout_file: &std::path::Path) -> Output {
    let out = std::fs::File::create(stdout_file).unwrap();
    let mut c = sb.command();
    c.args(args).stdout(Stdio::from(out)).stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.output().unwrap()
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_export_that_fails_half_way_leaves_the_earlier_file_whole() {
    let sb = Sandbox::new();
    big_store(&sb);
    // Unlimited, the export is written whole, and is the same document as
    // stdout's.
    let exports = sb.path("exports");
    std::fs::create_dir(&exports).unwrap();
    let file = exports.join("r.json");
    let out = sb.run(&[
        "report",
        "last",
        "--format",
        "json",
        "--export-json",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let whole = std::fs::read(&file).unwrap();
    assert_eq!(whole, out.stdout, "the file and stdout differ");
    assert!(whole.len() as u64 > 2 * LIMIT, "{} bytes", whole.len());
    let doc: serde_json::Value = serde_json::from_slice(&whole).unwrap();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 2 * RUNS as usize);

    // Limited, writing it fails half-way: the command fails in one line
    // naming the file, the earlier export stays as it was, and no
    // temporary file is left beside it.
    let before = files_in(&exports);
    let out = limited(
        &sb,
        &[
            "report",
            "last",
            "--format",
            "text",
            "--export-json",
            file.to_str().unwrap(),
        ],
        &sb.path("stdout.txt"),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(file.to_str().unwrap()) && err.contains("not written"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        whole,
        "the earlier export changed"
    );
    assert_eq!(files_in(&exports), before, "something left beside it");
}

#[test]
fn a_json_report_cut_short_on_stdout_fails_saying_so() {
    let sb = Sandbox::new();
    big_store(&sb);
    let stdout_file = sb.path("stdout.json");
    let out = limited(&sb, &["report", "last", "--format", "json"], &stdout_file);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("sysdelta: error: the report on stdout is incomplete ("),
        "{err}"
    );
    // What stdout got is a part of the document, not a document.
    let got = std::fs::read(&stdout_file).unwrap();
    assert!(
        !got.is_empty() && got.len() as u64 <= LIMIT,
        "{}",
        got.len()
    );
    assert!(serde_json::from_slice::<serde_json::Value>(&got).is_err());
}
