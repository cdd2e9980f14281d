//! The oracle's plumbing: whether its Python can run here, every format of
//! one experiment's report written to files, and `tests/reference/oracle.py`
//! run over them. Each failed check is one line naming the format, the
//! experiment, the metric and the two numbers.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, Sandbox};

/// The independent implementation: tests/reference/oracle.py.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/oracle.py")
}

/// The python3 that has NumPy and SciPy: the one on PATH, else the
/// system's (a pyenv or virtualenv python3 first on PATH may lack them
/// where the distribution's packages, which .ci/run installs, have them).
pub fn python() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        ["python3", "/usr/bin/python3"].into_iter().find(|p| {
            Command::new(p)
                .args(["-c", "import numpy, scipy.stats"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
    })
}

/// Whether python3 with NumPy and SciPy is here; otherwise a SKIP line.
pub fn ready() -> bool {
    let ok = python().is_some();
    // CI sets SYSDELTA_ORACLE_REQUIRED: there the oracle is the check
    // that every printed number is right, and a skip would pass unseen.
    if !ok && std::env::var_os("SYSDELTA_ORACLE_REQUIRED").is_some() {
        panic!("SYSDELTA_ORACLE_REQUIRED is set but python3 with numpy and scipy is not installed (apt-get install python3-numpy python3-scipy)");
    }
    if !ok {
        common::skip("python3 with numpy and scipy is not installed (apt-get install python3-numpy python3-scipy; .ci/run does)");
    }
    ok
}

/// The formats `report --format` writes, each with the file the script
/// reads it from.
const FORMATS: [(&str, &str); 5] = [
    ("text", "report.txt"),
    ("markdown", "report.md"),
    ("csv", "report.csv"),
    ("json", "report.json"),
    ("html", "report.html"),
];

/// Experiment `id` of the sandbox's SQLite store, rendered in every format
/// and checked by the script: the failed checks, one line each.
pub fn check(sb: &Sandbox, id: &str, name: &str) -> Vec<String> {
    let dir = sb.path(&format!("oracle-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    for (format, file) in FORMATS {
        let out = sb.run(&["report", id, "--format", format]);
        assert!(
            out.status.success(),
            "report --format {format} of {name}: {}",
            common::stderr(&out)
        );
        std::fs::write(dir.join(file), &out.stdout).unwrap();
    }
    run_script(&[
        "check",
        "--store",
        sb.store().to_str().unwrap(),
        "--id",
        id,
        "--dir",
        dir.to_str().unwrap(),
        "--name",
        name,
    ])
}

/// The script with `args`: the lines it printed (its failed checks). A
/// crash of the script is a failure of the test, with its stderr.
pub fn run_script(args: &[&str]) -> Vec<String> {
    let out = Command::new(python().expect("ready() first"))
        .arg(script())
        .args(args)
        .output()
        .unwrap();
    let stdout = common::stdout(&out);
    let lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert!(
        out.status.success() || !lines.is_empty(),
        "oracle.py {args:?} failed: {}",
        common::stderr(&out)
    );
    lines
}

/// Fail with every failed check listed, if there is one.
pub fn assert_none(fails: &[String]) {
    assert!(
        fails.is_empty(),
        "{} oracle check(s) failed:\n{}",
        fails.len(),
        fails.join("\n")
    );
}

/// The id `sysdelta run|ab|import` printed, from `list`'s last row.
pub fn last_id(sb: &Sandbox) -> String {
    let out = sb.run(&["list"]);
    let text = common::stdout(&out);
    let last = text.lines().last().unwrap_or("");
    last.split_whitespace().next().unwrap_or("").to_string()
}

/// Fleet run `fleet` of the sandbox's store: the fleet report in text,
/// Markdown and JSON (rendered through the library, as the fleet tests
/// do: `fleet report` needs a PostgreSQL store, which the script does not
/// read), and each host's own `report --format json`, checked by the
/// script: the failed checks, one line each.
pub fn check_fleet(sb: &Sandbox, fleet: i64, name: &str) -> Vec<String> {
    use sysdelta::report::{fleet, Format, ReportOptions};
    let dir = sb.path(&format!("oracle-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let store = sysdelta::store::Store::open(&sb.store(), false).unwrap();
    let members = store.fleet_members(fleet).unwrap();
    let hosts: Vec<fleet::HostExperiment> = members
        .iter()
        .map(|m| {
            let mut data = store.load(m.experiment).unwrap();
            // The store does not read fleet hosts yet (as tests/fleet_report.rs).
            data.info.fleet_host = Some(m.host.clone());
            fleet::HostExperiment::new(data)
        })
        .collect();
    for (format, file) in [
        (Format::Text, "fleet.txt"),
        (Format::Markdown, "fleet.md"),
        (Format::Json, "fleet.json"),
    ] {
        let opts = ReportOptions {
            format,
            detail: false,
            trim: None,
            time_unit: None,
            analysis: Default::default(),
        };
        std::fs::write(dir.join(file), fleet::render(&hosts, &opts).unwrap()).unwrap();
    }
    for m in &members {
        let out = sb.run(&["report", &m.experiment.to_string(), "--format", "json"]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        std::fs::write(dir.join(format!("host-{}.json", m.host)), &out.stdout).unwrap();
    }
    run_script(&[
        "fleet",
        "--store",
        sb.store().to_str().unwrap(),
        "--id",
        &fleet.to_string(),
        "--dir",
        dir.to_str().unwrap(),
        "--name",
        name,
    ])
}
