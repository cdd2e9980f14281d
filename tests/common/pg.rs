//! A throwaway PostgreSQL 15 cluster for the tests of the PostgreSQL store:
//! initdb'd into a temp dir, reached only through a Unix socket in that
//! dir (no TCP), password (scram-sha-256) authentication, one database
//! `sysdelta` and more on demand. Dropping it, also when the test panics,
//! stops the server and removes the dir.
//!
//! The server binaries come from scripts/install-team-tools.sh; without
//! them, or without root (initdb and the server run as the `postgres`
//! user), `PgCluster::start` prints `SKIP: ...` and gives None.
//!
//! ```ignore
//! let Some(pg) = common::pg::PgCluster::start() else { return };
//! let mut c = postgres::Client::connect(&pg.url(), postgres::NoTls)?;
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use rand::distr::{Alphanumeric, SampleString};

use super::procs;

pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The server's port: only the name of its socket (`.s.PGSQL.5432` in the
/// cluster's own dir), as it listens on no TCP address, so clusters side
/// by side, and the machine's own, do not collide.
pub const PORT: u16 = 5432;
const USER: &str = "postgres";

pub struct PgCluster {
    dir: tempfile::TempDir,
    password: String,
}

/// How a cluster is set up beyond the defaults of [`PgCluster::start`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// PostgreSQL's own durability (fsync, synchronous commits, full page
    /// writes): what a team's server runs with, for the benchmark. Off by
    /// default: a test's cluster is thrown away.
    pub durable: bool,
    /// Also listen on TCP 127.0.0.1:[`PORT`] (scram-sha-256, as initdb's
    /// host lines say): only inside a network namespace of the test's
    /// own, where that port is free and packets to it can be dropped
    /// (see [`PgCluster::tcp_url`]).
    pub tcp: bool,
}

/// `psql`: PostgreSQL 15's own, else the one in PATH.
pub fn psql_bin() -> PathBuf {
    let own = Path::new(PG_BIN).join("psql");
    if own.is_file() {
        own
    } else {
        PathBuf::from("psql")
    }
}

/// Percent-encode `s` for a URL's user info or query value: all but the
/// unreserved characters (and `/`, which a socket dir is made of).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn check(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl PgCluster {
    /// initdb, start, create database `sysdelta`; None (after printing
    /// `SKIP: ...`) when not root or the binaries are missing. Panics when
    /// a step fails on a machine that has them.
    pub fn start() -> Option<PgCluster> {
        PgCluster::start_with(Options::default())
    }

    /// [`PgCluster::start`] set up as `o` says.
    pub fn start_with(o: Options) -> Option<PgCluster> {
        if !super::is_root() {
            std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!(
                    "SKIP: PgCluster needs root (initdb and the server run as the postgres user)\n"
                ),
            )
            .unwrap_or(());
            return None;
        }
        for b in ["initdb", "pg_ctl", "postgres"] {
            if !Path::new(PG_BIN).join(b).is_file() {
                std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP: {PG_BIN}/{b} is missing (PostgreSQL 15; scripts/install-team-tools.sh installs it)\n")).unwrap_or(());
                return None;
            }
        }
        let Ok(Some(user)) = nix::unistd::User::from_name(USER) else {
            std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP: no user {USER} (the postgresql-15 package makes it; scripts/install-team-tools.sh installs it)\n")).unwrap_or(());
            return None;
        };
        if !Path::new("/usr/sbin/runuser").exists() && !Path::new("/sbin/runuser").exists() {
            std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIP: no runuser (util-linux) to run initdb as {USER}\n"),
            )
            .unwrap_or(());
            return None;
        }
        // In /tmp, not $TMPDIR: the postgres user must reach it, and a
        // socket's path must stay under 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("sysdelta-pg-")
            .tempdir_in("/tmp")
            .unwrap();
        let pg = PgCluster {
            dir,
            password: Alphanumeric.sample_string(&mut rand::rng(), 24),
        };
        // From here on a failed step panics and Drop cleans up.
        nix::unistd::chown(pg.socket_dir(), Some(user.uid), Some(user.gid)).unwrap();
        let pwfile = pg.socket_dir().join("pwfile");
        {
            let mut f = std::fs::File::create(&pwfile).unwrap();
            writeln!(f, "{}", pg.password).unwrap();
        }
        nix::unistd::chown(&pwfile, Some(user.uid), Some(user.gid)).unwrap();
        let mut initdb = pg.as_postgres(&Path::new(PG_BIN).join("initdb"));
        initdb
            .arg("-D")
            .arg(pg.data_dir())
            .args(["-U", USER, "--pwfile"])
            .arg(&pwfile)
            .args([
                "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]);
        check("initdb", initdb.output());
        std::fs::remove_file(&pwfile).unwrap();
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(pg.data_dir().join("postgresql.conf"))
            .unwrap();
        // Socket only (unless asked); durability traded for speed unless
        // asked (a test's cluster is thrown away, and a crash test kills
        // the server, not the kernel).
        write!(
            conf,
            "\n# tests/common/pg.rs\n\
             listen_addresses = '{}'\n\
             unix_socket_directories = '{}'\n\
             port = {PORT}\n\
             shared_buffers = 32MB\n",
            if o.tcp { "127.0.0.1" } else { "" },
            pg.socket_dir().display()
        )
        .unwrap();
        if !o.durable {
            write!(
                conf,
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
            )
            .unwrap();
        }
        drop(conf);
        pg.start_again();
        pg.psql_in("postgres", "CREATE DATABASE sysdelta");
        Some(pg)
    }

    /// `program` run as the postgres user (initdb and pg_ctl refuse root),
    /// in the cluster's dir, with C messages and the password at hand.
    fn as_postgres(&self, program: &Path) -> Command {
        let mut c = Command::new("runuser");
        c.args(["-u", USER, "--"])
            .arg(program)
            .current_dir(self.socket_dir())
            .env("LC_ALL", "C")
            .env("PGPASSWORD", &self.password)
            .stdin(Stdio::null());
        c
    }

    fn pg_ctl(&self, args: &[&str]) -> Command {
        let mut c = self.as_postgres(&Path::new(PG_BIN).join("pg_ctl"));
        c.arg("-D").arg(self.data_dir()).args(args);
        c
    }

    /// The dir holding the server's socket (`.s.PGSQL.5432`), its data
    /// (`data/`) and its log (`log`).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.socket_dir().join("data")
    }

    pub fn log_path(&self) -> PathBuf {
        self.socket_dir().join("log")
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// The URL of database `sysdelta` as superuser `postgres`.
    pub fn url(&self) -> String {
        self.url_for("sysdelta", &self.password)
    }

    /// The URL of database `sysdelta` over TCP, 127.0.0.1:[`PORT`] (a
    /// cluster started with [`Options::tcp`]).
    pub fn tcp_url(&self) -> String {
        format!(
            "postgresql://{USER}:{}@127.0.0.1:{PORT}/sysdelta",
            encode(&self.password)
        )
    }

    /// `url()` with another password (to see a wrong one refused).
    pub fn url_with_password(&self, password: &str) -> String {
        self.url_for("sysdelta", password)
    }

    /// The URL form both libpq and the `postgres` crate read as a Unix
    /// socket: no host between `@` and `/`, the socket's dir in `host=`.
    /// (With a host there too, the crate would try it first, over TCP,
    /// and take `host=` as a second host, where libpq replaces it.)
    fn url_for(&self, db: &str, password: &str) -> String {
        format!(
            "postgresql://{USER}:{}@/{}?host={}&port={PORT}",
            encode(password),
            encode(db),
            encode(&self.socket_dir().to_string_lossy())
        )
    }

    /// Create database `name` (letters, digits, `_`) and give its URL: one
    /// cluster serves several stores.
    pub fn create_database(&self, name: &str) -> String {
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "database name {name:?}: letters, digits and _ only"
        );
        self.psql(&format!("CREATE DATABASE \"{name}\""));
        self.url_for(name, &self.password)
    }

    /// Run `sql` with psql in database `sysdelta`; its output unaligned,
    /// tuples only (`a|b` a row per line), without the last newline.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("sysdelta", sql)
    }

    /// `psql` in database `db` (`postgres` exists from the start).
    pub fn psql_in(&self, db: &str, sql: &str) -> String {
        let mut c = self.as_postgres(&psql_bin());
        c.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir())
            .args(["-p", &PORT.to_string(), "-U", USER, "-d", db, "-c", sql]);
        let out = check(&format!("psql {sql:?}"), c.output());
        let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
        if s.ends_with('\n') {
            s.pop();
        }
        s
    }

    /// Stop the server (`pg_ctl -m fast stop`: sessions are ended, data
    /// kept); `start_again` brings it back.
    pub fn stop(&self) {
        check(
            "pg_ctl stop",
            self.pg_ctl(&["-m", "fast", "-w", "-t", "60", "stop"])
                .output(),
        );
    }

    /// Start the server (again): same data, socket and port.
    pub fn start_again(&self) {
        let log = self.log_path();
        let out = self
            .pg_ctl(&["-w", "-t", "60", "-l", log.to_str().unwrap(), "start"])
            .output();
        if !matches!(&out, Ok(o) if o.status.success()) {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            check(&format!("pg_ctl start (log:\n{log})"), out);
        }
    }

    /// The postmaster's pid while the server runs.
    pub fn postmaster_pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let Some(pid) = self.postmaster_pid() else {
            return;
        };
        // Immediate: the data goes with the dir anyway.
        let _ = self
            .pg_ctl(&["-m", "immediate", "-w", "-t", "30", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // Should pg_ctl have failed, the postmaster and its children are
        // killed: if that pid is still this cluster's postmaster (its
        // command line names the data dir).
        let data = self.data_dir();
        if procs::alive(pid) && procs::cmdline(pid).contains(&*data.to_string_lossy()) {
            let killed = procs::kill_tree(pid);
            procs::wait_gone(&killed, Duration::from_secs(10));
        }
    }
}
