//! `sysdelta fleet` end to end: throwaway sshd "hosts" on 127.0.0.2-4
//! (tests/common/sshd.rs) and a throwaway PostgreSQL cluster
//! (tests/common/pg.rs) as the team store, which the hosts reach only
//! through their ssh connections. A fleet run completes on three hosts
//! with every planned run stored once; a host killed mid-run is lost,
//! the others complete, and `fleet resume` finishes it without a
//! duplicate; bad input (a host ssh cannot reach, a refused key, a
//! workdir that cannot be written, a URL that does not parse, a wrong
//! password) is one line naming the host or the URL, exit 2, and nothing
//! in the store. Every test checks that no ssh, sshd, sysdelta or
//! postgres of its own is left. Each skips, saying why, without root or
//! the tools (scripts/install-team-tools.sh installs them).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::pg::PgCluster;
use common::procs::{self, KillOnDrop};
use common::sshd::SshHost;

/// One fleet test at a time: they share two cores, and test (b) times a
/// kill against the runs of a host.
static SERIAL: Mutex<()> = Mutex::new(());

/// A plan of two configs and one ~20 ms command, `runs` runs a cell.
fn plan(runs: u32, sleep: &str) -> String {
    format!(
        "name = \"fleet-test\"\nruns = {runs}\nwarmup = 0\n\n\
         [[config]]\nname = \"base\"\n\n\
         [[config]]\nname = \"other\"\nsetup = \"export X=1\"\n\n\
         [[workload]]\nname = \"nap\"\ncommand = \"sleep {sleep}\"\n"
    )
}

/// The cluster, the hosts, and a short temp dir (a forwarded socket's
/// path must stay under 108 bytes) holding each host's workdir, run dir
/// and TMPDIR, the controller's state and run dirs, plans and hosts
/// files. Dropped in that order: hosts (sshd and every session), the
/// cluster, the dir.
struct Fleet {
    hosts: Vec<(String, SshHost)>,
    pg: PgCluster,
    dir: tempfile::TempDir,
}

impl Fleet {
    /// None (having printed SKIP) without the tools.
    fn start(names: &[(&str, &str)]) -> Option<Fleet> {
        let pg = PgCluster::start()?;
        let mut hosts = Vec::new();
        for (name, addr) in names {
            hosts.push((name.to_string(), SshHost::start(addr)?));
        }
        let dir = tempfile::Builder::new()
            .prefix("sdfleet-")
            .tempdir_in("/tmp")
            .unwrap();
        for d in ["ctl-state", "ctl-run"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        for (name, _) in &hosts {
            for d in ["run", "tmp"] {
                std::fs::create_dir(dir.path().join(format!("{d}-{name}"))).unwrap();
            }
        }
        Some(Fleet { hosts, pg, dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn host(&self, name: &str) -> &SshHost {
        &self.hosts.iter().find(|(n, _)| n == name).unwrap().1
    }

    fn host_mut(&mut self, name: &str) -> &mut SshHost {
        &mut self.hosts.iter_mut().find(|(n, _)| n == name).unwrap().1
    }

    fn workdir(&self, name: &str) -> PathBuf {
        self.path(&format!("w-{name}"))
    }

    /// One `[[host]]` table: its own workdir, run dir and TMPDIR.
    fn entry(&self, name: &str, dest: &str, options: &[String], workdir: &Path) -> String {
        let opts: Vec<String> = options.iter().map(|o| format!("{o:?}")).collect();
        format!(
            "[[host]]\nname = {name:?}\ndestination = {dest:?}\nssh_options = [{}]\n\
             workdir = {:?}\nenv = {{ SYSDELTA_RUN_DIR = {:?}, TMPDIR = {:?} }}\n\n",
            opts.join(", "),
            workdir.display().to_string(),
            self.path(&format!("run-{name}")).display().to_string(),
            self.path(&format!("tmp-{name}")).display().to_string(),
        )
    }

    /// A hosts file of every host, as it should be.
    fn hosts_file(&self) -> PathBuf {
        let text: String = self
            .hosts
            .iter()
            .map(|(n, h)| self.entry(n, &h.destination(), &h.ssh_options(), &self.workdir(n)))
            .collect();
        self.write("hosts.toml", &text)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// sysdelta on this machine (the controller) with the team store.
    fn sysdelta(&self, store: &str, args: &[&str]) -> Command {
        let mut c = Command::new(common::bin());
        c.arg("--store")
            .arg(store)
            .args(args)
            .env_remove("SYSDELTA_STORE")
            .env("SYSDELTA_STATE_DIR", self.path("ctl-state"))
            .env("SYSDELTA_RUN_DIR", self.path("ctl-run"))
            .stdin(Stdio::null());
        c
    }

    fn run(&self, store: &str, args: &[&str]) -> Output {
        self.sysdelta(store, args).output().unwrap()
    }

    /// One number from the store; None while its tables are not there.
    fn count(&self, sql: &str) -> Option<i64> {
        if self.pg.psql("SELECT to_regclass('public.runs') IS NULL") == "t" {
            return None;
        }
        Some(self.pg.psql(sql).trim().parse().unwrap())
    }

    /// Rows of the store (`a|b` per row).
    fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        self.pg
            .psql(sql)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('|').map(String::from).collect())
            .collect()
    }

    /// Everything that names this test's dirs (its processes: ssh
    /// clients, the hosts' sysdelta, sshd, postgres), with the dirs.
    fn marks(&self) -> Vec<String> {
        let mut m = vec![self.dir.path().display().to_string()];
        m.extend(
            self.hosts
                .iter()
                .map(|(_, h)| h.dir().display().to_string()),
        );
        m.push(self.pg.socket_dir().display().to_string());
        m
    }
}

/// Drop the fleet (and everything it started), then check that no
/// process names any of its dirs and that the dirs are gone.
fn finish(f: Fleet) {
    let marks = f.marks();
    drop(f);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<(i32, String)> = procs::all()
            .into_iter()
            .map(|p| (p.pid, procs::cmdline(p.pid)))
            .filter(|(_, c)| marks.iter().any(|m| c.contains(m.as_str())))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < until, "processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    for m in &marks {
        assert!(!Path::new(m).exists(), "{m} is still there");
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The experiments of fleet `fleet`: host, id, status, seed.
fn experiments(f: &Fleet, fleet: i64) -> Vec<Vec<String>> {
    f.rows(&format!(
        "SELECT fleet_host, id, status, seed FROM experiments WHERE fleet_id = {fleet} ORDER BY fleet_host"
    ))
}

/// Runs of experiment `exp` stored, and distinct (block, seq) among them.
fn runs_of(f: &Fleet, exp: &str) -> (i64, i64) {
    let r = f.rows(&format!(
        "SELECT COUNT(*), COUNT(DISTINCT (experiment_id, block, seq)) FROM runs WHERE experiment_id = {exp}"
    ));
    (r[0][0].parse().unwrap(), r[0][1].parse().unwrap())
}

fn last_fleet(f: &Fleet) -> i64 {
    f.pg.psql("SELECT MAX(id) FROM fleets").parse().unwrap()
}

#[test]
fn a_fleet_run_completes_on_three_hosts_with_every_run_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = Fleet::start(&[("a", "127.0.0.2"), ("b", "127.0.0.3"), ("c", "127.0.0.4")])
    else {
        return;
    };
    // The copy is what is tested: no sysdelta in the hosts' PATH.
    let a = f.host("a");
    let which = Command::new("ssh")
        .args(a.ssh_options())
        .arg(a.destination())
        .arg("command -v sysdelta")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        !which.status.success(),
        "a sysdelta is in the hosts' PATH ({}): the copy would not be tested",
        text(&which.stdout).trim()
    );
    let plan = f.write("plan.toml", &plan(12, "0.02"));
    let hosts = f.hosts_file();
    let t = Instant::now();
    let out = f.run(
        &f.pg.url(),
        &[
            "fleet",
            "run",
            plan.to_str().unwrap(),
            "--hosts-file",
            hosts.to_str().unwrap(),
        ],
    );
    println!("fleet run on 3 hosts: {:.1} s", t.elapsed().as_secs_f64());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    println!("{stderr}{stdout}");
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains(f.pg.password()), "{stderr}");
    let fleet = last_fleet(&f);
    let exps = experiments(&f, fleet);
    assert_eq!(
        exps.iter().map(|e| e[0].as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"],
        "{exps:?}"
    );
    for e in &exps {
        assert_eq!(e[2], "complete", "{e:?}");
        assert_eq!(runs_of(&f, &e[1]), (24, 24), "host {}", e[0]);
        assert!(stdout.contains(&format!("{}  ", e[1])), "{stdout}");
    }
    let seeds: std::collections::BTreeSet<&str> = exps.iter().map(|e| e[3].as_str()).collect();
    assert_eq!(seeds.len(), 3, "seeds: {exps:?}");
    for (name, _) in &f.hosts {
        let copy = f.workdir(name).join("sysdelta");
        assert!(copy.is_file(), "{} was not copied", copy.display());
    }
    // status names each host and its runs.
    let st = f.run(&f.pg.url(), &["fleet", "status", &fleet.to_string()]);
    let st_out = text(&st.stdout);
    assert!(st.status.success(), "{}", text(&st.stderr));
    for (name, h) in &f.hosts {
        let line = st_out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{st_out}"));
        assert!(
            line.contains(&h.destination()) && line.contains("complete") && line.contains("24/24"),
            "{line}"
        );
    }
    // The report pools the three hosts: a row per host, and the pooled
    // estimate of every comparison across all three.
    let rep = f.run(&f.pg.url(), &["fleet", "report", &fleet.to_string()]);
    let rep_out = text(&rep.stdout);
    assert!(rep.status.success(), "{}", text(&rep.stderr));
    assert!(rep_out.contains("across 3 hosts"), "{rep_out}");
    assert!(
        rep_out.lines().all(|l| l.chars().count() <= 80),
        "{rep_out}"
    );
    let rep = f.run(
        &f.pg.url(),
        &["fleet", "report", &fleet.to_string(), "--format", "json"],
    );
    assert!(rep.status.success(), "{}", text(&rep.stderr));
    let v: serde_json::Value = serde_json::from_slice(&rep.stdout).unwrap();
    assert_eq!(v["hosts"].as_array().unwrap().len(), 3, "{v}");
    let comparisons = v["comparisons"].as_array().unwrap();
    for c in comparisons {
        assert_eq!(c["rows"].as_array().unwrap().len(), 3, "{c}");
    }
    // Wall time has a CI on every host (sys, mostly 0 s here, may not).
    let wall = comparisons
        .iter()
        .find(|c| c["metric"] == "wall")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(wall["pooled"]["hosts"], 3, "{wall}");
    assert!(
        wall["pooled"]["delta_ci_pct"].is_array(),
        "pooled CI: {wall}"
    );
    let rep = f.run(
        &f.pg.url(),
        &["fleet", "report", &fleet.to_string(), "--format", "csv"],
    );
    assert_eq!(rep.status.code(), Some(2), "{}", text(&rep.stderr));
    finish(f);
}

#[test]
fn b_a_host_killed_mid_run_is_lost_and_resume_finishes_it_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut f) = Fleet::start(&[("a", "127.0.0.2"), ("b", "127.0.0.3"), ("c", "127.0.0.4")])
    else {
        return;
    };
    let plan = f.write("plan.toml", &plan(40, "0.05"));
    let hosts = f.hosts_file();
    let url = f.pg.url();
    let t = Instant::now();
    let log = std::fs::File::create(f.path("fleet.err")).unwrap();
    let child = f
        .sysdelta(
            &url,
            &[
                "fleet",
                "run",
                plan.to_str().unwrap(),
                "--hosts-file",
                hosts.to_str().unwrap(),
                "--seed",
                "7",
            ],
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let c_runs = "SELECT COUNT(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id \
                  WHERE e.fleet_host = 'c'";
    let until = Instant::now() + Duration::from_secs(120);
    let seen = loop {
        if let Some(n) = f.count(c_runs).filter(|n| *n > 0) {
            break n;
        }
        assert!(Instant::now() < until, "host c stored no run in 120 s");
        assert!(
            matches!(child.0.try_wait(), Ok(None)),
            "fleet run ended early: {}",
            std::fs::read_to_string(f.path("fleet.err")).unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        seen < 80,
        "host c finished before it could be killed ({seen} runs)"
    );
    f.host_mut("c").kill();
    let status = child.0.wait().unwrap();
    println!(
        "fleet run with c killed: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let err = std::fs::read_to_string(f.path("fleet.err")).unwrap();
    println!("{err}");
    assert_eq!(status.code(), Some(1), "{err}");
    let c_dest = f.host("c").destination();
    assert!(
        err.lines()
            .any(|l| l.contains(&format!("host c ({c_dest}): lost"))),
        "{err}"
    );
    assert!(err.contains("resume with: sysdelta fleet resume"), "{err}");
    assert!(!err.contains(f.pg.password()), "{err}");
    let fleet = last_fleet(&f);
    let exps = experiments(&f, fleet);
    assert_eq!(exps.len(), 3, "{exps:?}");
    for e in &exps[..2] {
        assert_eq!(e[2], "complete", "{e:?}");
        assert_eq!(runs_of(&f, &e[1]), (80, 80), "host {}", e[0]);
    }
    let c = &exps[2];
    assert_eq!(
        (c[0].as_str(), c[2].as_str()),
        ("c", "interrupted"),
        "{exps:?}"
    );
    let (n, distinct) = runs_of(&f, &c[1]);
    assert!(n < 80 && n == distinct, "c: {n} runs, {distinct} distinct");
    let events = f.pg.psql(&format!(
        "SELECT COUNT(*) FROM events WHERE experiment_id = {} AND kind = 'fleet'",
        c[1]
    ));
    assert_eq!(events, "1");

    f.host_mut("c").start_again();
    let t = Instant::now();
    // The hosts file again: how to reach c, and where it works, unchanged.
    let out = f.run(
        &url,
        &[
            "fleet",
            "resume",
            &fleet.to_string(),
            "--trust-stored-plan",
            "--hosts-file",
            hosts.to_str().unwrap(),
        ],
    );
    println!("fleet resume of c: {:.1} s", t.elapsed().as_secs_f64());
    let err = text(&out.stderr);
    println!("{err}{}", text(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "{}\n{err}", text(&out.stdout));
    assert!(
        err.contains("host a (") && err.contains("complete, left alone"),
        "{err}"
    );
    let exps = experiments(&f, fleet);
    assert_eq!(exps.len(), 3, "resume made a new experiment: {exps:?}");
    for e in &exps {
        assert_eq!(e[2], "complete", "{e:?}");
        assert_eq!(runs_of(&f, &e[1]), (80, 80), "host {}", e[0]);
    }
    assert_eq!(exps[2][1], c[1], "c's experiment was resumed, not replaced");
    drop(child);
    finish(f);
}

#[test]
fn d_a_signal_stops_every_host_cleanly_and_resume_finishes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = Fleet::start(&[("a", "127.0.0.2"), ("b", "127.0.0.3")]) else {
        return;
    };
    let plan = f.write("plan.toml", &plan(40, "0.05"));
    let hosts = f.hosts_file();
    let url = f.pg.url();
    let log = std::fs::File::create(f.path("fleet.err")).unwrap();
    let child = f
        .sysdelta(
            &url,
            &[
                "fleet",
                "run",
                plan.to_str().unwrap(),
                "--hosts-file",
                hosts.to_str().unwrap(),
            ],
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let until = Instant::now() + Duration::from_secs(120);
    let started =
        "SELECT COUNT(DISTINCT e.id) FROM runs r JOIN experiments e ON e.id = r.experiment_id";
    while f.count(started).unwrap_or(0) < 2 {
        assert!(Instant::now() < until, "the hosts stored no run in 120 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    common::signal(&child.0, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.0.wait().unwrap();
    let err = std::fs::read_to_string(f.path("fleet.err")).unwrap();
    println!("{err}");
    assert_eq!(status.code(), Some(130), "{err}");
    // Each host's sysdelta stopped itself (no kill): its experiment says
    // interrupted, and nothing of it runs on.
    let left: Vec<String> = procs::all()
        .into_iter()
        .map(|p| procs::cmdline(p.pid))
        .filter(|c| c.contains(&*f.dir.path().to_string_lossy()) && c.contains(" run "))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    let fleet = last_fleet(&f);
    let exps = experiments(&f, fleet);
    assert_eq!(exps.len(), 2, "{exps:?}");
    for e in &exps {
        assert_eq!(e[2], "interrupted", "{e:?}");
        let (n, distinct) = runs_of(&f, &e[1]);
        assert!(
            n < 80 && n == distinct,
            "{e:?}: {n} runs, {distinct} distinct"
        );
    }
    let out = f.run(&url, &["fleet", "resume", "last", "--trust-stored-plan"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}\n{err}", text(&out.stdout));
    for e in &experiments(&f, fleet) {
        assert_eq!(e[2], "complete", "{e:?}");
        assert_eq!(runs_of(&f, &e[1]), (80, 80), "host {}", e[0]);
    }
    drop(child);
    finish(f);
}

/// `fleet run` with `store` and hosts file `hosts`: exit 2, one line
/// holding each of `says`, no password, and nothing in the store.
fn refused(f: &Fleet, store: &str, hosts: &Path, says: &[&str]) {
    let plan = f.write("plan.toml", &plan(2, "0.02"));
    let out = f.run(
        store,
        &[
            "fleet",
            "run",
            plan.to_str().unwrap(),
            "--hosts-file",
            hosts.to_str().unwrap(),
        ],
    );
    let err = text(&out.stderr);
    print!("{err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    for s in says {
        assert!(lines[0].contains(s), "{:?} does not say {s:?}", lines[0]);
    }
    assert!(!err.contains(f.pg.password()), "{err}");
    assert!(
        !err.contains("wrong-pw-123") && !err.contains("s3cret"),
        "{err}"
    );
    assert_eq!(f.count("SELECT COUNT(*) FROM fleets").unwrap_or(0), 0);
    assert_eq!(f.count("SELECT COUNT(*) FROM experiments").unwrap_or(0), 0);
}

#[test]
fn c_bad_hosts_and_urls_are_one_line_exit_2_and_nothing_stored() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = Fleet::start(&[("a", "127.0.0.2"), ("b", "127.0.0.3")]) else {
        return;
    };
    let a = f.host("a");
    let good = f.entry("a", &a.destination(), &a.ssh_options(), &f.workdir("a"));
    let url = f.pg.url();

    // Nothing listens there: a port the kernel just gave and took back.
    let port = std::net::TcpListener::bind("127.0.0.9:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut opts = a.ssh_options();
    let p = opts.iter().position(|o| o == "-p").unwrap();
    opts[p + 1] = port.to_string();
    let gone = f.entry("gone", "root@127.0.0.9", &opts, &f.workdir("gone"));
    let file = f.write("gone.toml", &format!("{good}{gone}"));
    refused(
        &f,
        &url,
        &file,
        &[
            "host gone (root@127.0.0.9): cannot reach it over ssh: ",
            "Connection refused",
        ],
    );

    let b = f.host("b");
    let wrong = f.entry(
        "b",
        &b.destination(),
        &b.wrong_key_options(),
        &f.workdir("b"),
    );
    let file = f.write("wrong-key.toml", &format!("{good}{wrong}"));
    refused(
        &f,
        &url,
        &file,
        &[
            &format!("host b ({}): cannot reach it over ssh: ", b.destination()),
            "Permission denied",
        ],
    );

    // A workdir under a file: nothing can be made there, and no sysdelta is.
    let stuck = f.entry(
        "b",
        &b.destination(),
        &b.ssh_options(),
        Path::new("/proc/version/fleet"),
    );
    let file = f.write("stuck.toml", &format!("{good}{stuck}"));
    refused(
        &f,
        &url,
        &file,
        &[
            &format!("host b ({}): no sysdelta ", b.destination()),
            "cannot be copied (",
            "/proc/version",
        ],
    );

    // A workdir others can write: they could swap what runs there.
    let open_dir = f.path("open-workdir");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(
        &open_dir,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let open = f.entry("b", &b.destination(), &b.ssh_options(), &open_dir);
    let file = f.write("open.toml", &format!("{good}{open}"));
    refused(
        &f,
        &url,
        &file,
        &[
            &format!("host b ({}): workdir ", b.destination()),
            "is not safe to run from",
            "can be written by others (mode 777)",
        ],
    );

    let file = f.write("good.toml", &good);
    let bad_url = format!(
        "postgresql://postgres:s3cret@/sysdelta?host={}&port=notaport",
        f.pg.socket_dir().display()
    );
    refused(
        &f,
        &bad_url,
        &file,
        &[
            "postgresql://postgres@/sysdelta?host=",
            "not a PostgreSQL URL",
        ],
    );
    refused(
        &f,
        &f.pg.url_with_password("wrong-pw-123"),
        &file,
        &[
            "postgresql://postgres@/sysdelta?host=",
            "password authentication failed",
        ],
    );
    let file_store = f.path("team.db").display().to_string();
    refused(&f, &file_store, &file, &["a fleet needs a team store"]);
    finish(f);
}
