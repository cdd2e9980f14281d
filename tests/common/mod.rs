//! Helpers shared by the end-to-end tests: they drive the real binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sysdelta")
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn store(&self) -> PathBuf {
        self.path("sysdelta.db")
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The sandbox's own run directory (`SYSDELTA_RUN_DIR`: the machine
    /// lock and the register of stores, `/run/sysdelta` by default), so
    /// that tests running side by side do not see each other's stores;
    /// the tests of the machine-wide checks share one on purpose.
    pub fn run_dir(&self) -> PathBuf {
        self.path("run")
    }

    /// sysdelta with `--store` pointing into the sandbox, run there, with
    /// the sandbox's run directory.
    pub fn command(&self) -> Command {
        let mut c = Command::new(bin());
        c.arg("--store")
            .arg(self.store())
            .env("SYSDELTA_RUN_DIR", self.run_dir())
            .current_dir(self.dir.path());
        c
    }

    /// Run sysdelta with `--store` pointing into the sandbox.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    pub fn json_report(&self, id: &str) -> serde_json::Value {
        let out = self.run(&["report", id, "--format", "json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The comparison of `config` for `workload/metric` in a JSON report.
pub fn comparison<'a>(
    report: &'a serde_json::Value,
    workload: &str,
    metric: &str,
    config: &str,
) -> &'a serde_json::Value {
    let metrics = report["analysis"]["metrics"].as_array().unwrap();
    let m = metrics
        .iter()
        .find(|m| m["workload"] == workload && m["name"] == metric)
        .unwrap_or_else(|| panic!("no metric {workload}/{metric}"));
    m["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["config"] == config)
        .unwrap_or_else(|| panic!("no comparison for {config}"))
}

pub fn file_bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}
