//! Helpers shared by the end-to-end tests, which drive the real binary,
//! and by the tests that fill a store through the library.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use nix::sys::signal::Signal;
use sysdelta::metric::{MetricSamples, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::{NewExperiment, RunRecord, RunResult, Store};

/// A kernel git tree from the linux-source tarball, and patches on it.
pub mod kernel_tree;
/// The machine-wide lock, for tests that change shared kernel state.
pub mod machine;
/// A throwaway PostgreSQL cluster (Unix socket, password auth).
pub mod pg;
/// Processes in /proc: what a fixture's server spawned, and killing it.
pub mod procs;
/// Throwaway sshd "hosts" on 127.0.0.x.
pub mod sshd;

// A test that cannot run here passes after one `SKIP: reason` line, written
// with `std::io::Write::write_fmt(&mut std::io::stderr(), ...)`, not
// `eprintln!`: libtest captures what the print macros write in a passing
// test, and a skip that CI's log does not show is a skip nobody sees.

/// The one `SKIP: reason` line of a test that cannot run here (see above).
pub fn skip(why: impl std::fmt::Display) {
    std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP: {why}\n")).unwrap_or(());
}

/// A line that reaches the log of a passing test too (see above).
pub fn note(line: impl std::fmt::Display) {
    std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{line}\n")).unwrap_or(());
}

/// Root runs the tests that change the system (CI is root).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Why kernel configs cannot boot here, if they cannot: not root, or no
/// QEMU or virtiofsd (scripts/install-vm-tools.sh installs both).
pub fn vm_missing() -> Option<String> {
    if !is_root() {
        return Some("not root".into());
    }
    if Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_err()
    {
        return Some("qemu-system-x86_64 not installed".into());
    }
    if !Path::new("/usr/lib/qemu/virtiofsd").exists() {
        return Some("virtiofsd not installed".into());
    }
    None
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sysdelta")
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
    /// The throwaway PostgreSQL server the store is on, if it is not the
    /// SQLite file `sysdelta.db` (see [`Sandbox::postgresql`]); it has a
    /// temp dir of its own, and stops when the sandbox is dropped.
    pub pg: Option<pg::PgCluster>,
}

impl Sandbox {
    /// A sandbox with an SQLite store; with `SYSDELTA_TEST_STORE=postgresql`
    /// in the environment, one with a PostgreSQL store instead, so the
    /// whole suite can be run against PostgreSQL (tests that are about the
    /// SQLite file itself then fail: see docs/team.md for which and why).
    pub fn new() -> Sandbox {
        if std::env::var("SYSDELTA_TEST_STORE").as_deref() == Ok("postgresql") {
            return Sandbox::postgresql().expect("SYSDELTA_TEST_STORE=postgresql: no server");
        }
        Sandbox::sqlite()
    }

    /// A sandbox whose store is the SQLite file `sysdelta.db` in it.
    pub fn sqlite() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
            pg: None,
        }
    }

    /// A sandbox whose store is a database on a throwaway PostgreSQL
    /// server of its own; None (after a SKIP line) where there is none.
    pub fn postgresql() -> Option<Sandbox> {
        let cluster = pg::PgCluster::start()?;
        let sb = Sandbox {
            dir: tempfile::tempdir().unwrap(),
            pg: Some(cluster),
        };
        std::fs::create_dir_all(sb.state_dir()).unwrap();
        sysdelta::store::pg::anchor_in(&sb.store_arg(), &sb.state_dir()).unwrap();
        Some(sb)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The store as the library opens it: the SQLite file, or the
    /// PostgreSQL store's local anchor (what its run log sits beside).
    pub fn store(&self) -> PathBuf {
        match &self.pg {
            None => self.path("sysdelta.db"),
            Some(c) => sysdelta::store::pg::Url::parse(&c.url())
                .unwrap()
                .anchor_in(&self.state_dir()),
        }
    }

    /// The store as `--store` names it: the file, or the URL.
    pub fn store_arg(&self) -> String {
        match &self.pg {
            None => self.path("sysdelta.db").display().to_string(),
            Some(c) => c.url(),
        }
    }

    /// Which store this is, for messages: "sqlite" or "postgresql".
    pub fn backend(&self) -> &'static str {
        match self.pg {
            None => "sqlite",
            Some(_) => "postgresql",
        }
    }

    /// `SYSDELTA_STATE_DIR` of the sandbox's commands (anchors of
    /// PostgreSQL stores).
    pub fn state_dir(&self) -> PathBuf {
        self.path("state")
    }

    /// Whether the store holds anything yet (the file exists; the
    /// server's database has tables).
    pub fn store_exists(&self) -> bool {
        match &self.pg {
            None => self.store().exists(),
            Some(c) => !c
                .psql("SELECT 1 FROM information_schema.tables WHERE table_name = 'experiments'")
                .is_empty(),
        }
    }

    /// The one number `sql` gives, asked of the store directly (SQLite
    /// read-only, or psql), not through sysdelta.
    pub fn sql_number(&self, sql: &str) -> i64 {
        match &self.pg {
            None => {
                let c = rusqlite::Connection::open_with_flags(
                    self.store(),
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                )
                .unwrap();
                c.query_row(sql, [], |r| r.get(0)).unwrap()
            }
            Some(c) => c
                .psql(sql)
                .trim()
                .parse()
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
        }
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Go benchmark output `old` and `new` written here as old.txt and
    /// new.txt and imported (`sysdelta import gobench`) into the store,
    /// which must succeed; their paths.
    pub fn import_go(&self, old: &str, new: &str) -> (PathBuf, PathBuf) {
        let (old, new) = (self.write("old.txt", old), self.write("new.txt", new));
        let out = self.run(&[
            "import",
            "gobench",
            old.to_str().unwrap(),
            new.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        (old, new)
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
            .arg(self.store_arg())
            .env("SYSDELTA_RUN_DIR", self.run_dir())
            .env("SYSDELTA_STATE_DIR", self.state_dir())
            .current_dir(self.dir.path());
        c
    }

    /// Run sysdelta with `--store` pointing into the sandbox.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// `command()` with its scratch directory (`TMPDIR`) at `tmp`, where a
    /// test looks for what a run left behind.
    pub fn command_in(&self, tmp: &Path) -> Command {
        let mut c = self.command();
        c.env("TMPDIR", tmp);
        c
    }

    /// `sysdelta run PLAN --quiet --no-report` with its scratch directory
    /// at `tmp` and its output discarded: to spawn, and then signal.
    pub fn quiet_run(&self, plan: &Path, tmp: &Path) -> Command {
        let mut c = self.command_in(tmp);
        c.args(["run", plan.to_str().unwrap(), "--quiet", "--no-report"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
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

/// A kexec session made by hand, as `kexec start` leaves one: its state
/// in `state` (an empty schedule, a placeholder kernel) for experiment
/// `exp` of `store`, and the boot hook that resumes it installed in
/// `hook` (which exists). Returns the state, for steps to be added.
pub fn kexec_session_by_hand(
    state: &Path,
    hook: &Path,
    store: &Path,
    exp: i64,
) -> sysdelta::kexec::state::State {
    use sysdelta::kexec::{hook as boot_hook, state as s};
    let st = s::State::create(state).unwrap();
    let k = s::Kernel {
        image: "/boot/vmlinuz".into(),
        initrd: None,
        release: "r".into(),
        banner: "r".into(),
        sha256: String::new(),
        initrd_sha256: None,
    };
    st.write_session(&s::Session {
        store: store.to_path_buf(),
        experiment: exp,
        plan_source: "plan.toml".into(),
        plan_text: String::new(),
        overrides: Default::default(),
        cwd: None,
        env: vec![],
        start: k,
        start_cmdline: String::new(),
        hook_dir: hook.to_path_buf(),
        panic_s: 10,
        audit_ignore: vec![],
        boots: vec![],
    })
    .unwrap();
    let unit = boot_hook::unit_text(Path::new(bin()), state).unwrap();
    boot_hook::install(hook, &unit).unwrap();
    st
}

/// `git -C repo ARGS`, asserted to succeed: its stdout, trimmed.
pub fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
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

/// Tests that run twice, once on each store: `both_stores! { fn name(sb)
/// { ... } }` gives `name::sqlite` and `name::postgresql` (which skips,
/// saying why, where no PostgreSQL server can be started).
#[macro_export]
macro_rules! both_stores {
    ($($(#[$m:meta])* fn $name:ident($sb:ident) $body:block)*) => {$(
        $(#[$m])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn body($sb: &common::Sandbox) $body
            #[test]
            fn sqlite() {
                body(&common::Sandbox::sqlite())
            }
            #[test]
            fn postgresql() {
                if let Some(sb) = common::Sandbox::postgresql() {
                    body(&sb)
                }
            }
        }
    )*};
}

/// Send `sig` to `child` (an error when it is already gone and reaped).
pub fn signal(child: &Child, sig: Signal) -> nix::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig)
}

/// Create experiment `name` in `store` through the library: `configs`
/// (the first is the baseline), `runs` runs of each, of the one workload
/// `w`, which reports `metrics`; the rest is what any test experiment
/// holds. Returns its id.
pub fn create_experiment(
    store: &Store,
    name: &str,
    configs: &[&str],
    runs: u32,
    metrics: &[MetricSpec],
) -> i64 {
    let on = On {
        label: None,
        host: "test",
        fingerprint: &BTreeMap::new(),
    };
    create_experiment_on(store, name, &on, configs, runs, metrics)
}

/// Where and under which label a test experiment ran.
pub struct On<'a> {
    pub label: Option<&'a str>,
    pub host: &'a str,
    pub fingerprint: &'a BTreeMap<String, String>,
}

/// [`create_experiment`] with a label, a host and a fingerprint.
pub fn create_experiment_on(
    store: &Store,
    name: &str,
    on: &On,
    configs: &[&str],
    runs: u32,
    metrics: &[MetricSpec],
) -> i64 {
    let id = store
        .create_experiment(&NewExperiment {
            name,
            label: on.label,
            plan_source: "test",
            plan_text: "",
            overrides: &Overrides::default(),
            host: on.host,
            fingerprint: on.fingerprint,
            seed: 1,
            order: Order::RandomBlocks,
            runs,
            warmup: 0,
            baseline: configs[0],
            configs: configs.iter().map(|c| c.to_string()).collect(),
            workloads: vec!["w".into()],
        })
        .unwrap();
    store.declare_metrics(id, "w", metrics).unwrap();
    id
}

/// The measured (not warmup) run of `config` at (`block`, `seq`) of
/// experiment `exp`'s workload `w`, started at 0, with `result` and no
/// series or profile. Change a field with `RunRecord { .., ..run_record(..) }`.
pub fn run_record<'a>(
    exp: i64,
    block: u32,
    seq: u32,
    config: &'a str,
    result: RunResult<'a>,
) -> RunRecord<'a> {
    RunRecord {
        experiment_id: exp,
        block,
        seq,
        config,
        workload: "w",
        warmup: false,
        started_at: 0.0,
        result,
        series: &[],
        profile: &[],
    }
}

/// Record the measured run of `config` at (`block`, `seq`) of experiment
/// `exp`'s workload `w` as ok with `samples`, started at second `block`
/// (so the runs' order in time is the blocks').
pub fn record_ok(
    store: &Store,
    exp: i64,
    (block, seq): (u32, u32),
    config: &str,
    samples: &[MetricSamples],
) {
    store
        .record_run(&RunRecord {
            started_at: f64::from(block),
            ..run_record(exp, block, seq, config, RunResult::Ok(samples))
        })
        .unwrap();
}

/// The headless browser the HTML tests render in, or None after printing
/// why the test skips. Installed by .ci/run and the README's install step,
/// never by a test.
pub fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|b| {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {b}"))
            .output()
            .ok()?;
        o.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    });
    if found.is_none() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP: chromium is not installed (apt-get install chromium; .ci/run does)\n"
            ),
        )
        .unwrap_or(());
    }
    found
}
