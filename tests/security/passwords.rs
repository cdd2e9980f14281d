//! Passwords as libpq handles them, and no secret of the store where a
//! workload, a stored row or a command line would show it:
//!
//! - a store named without a password reaches the server with
//!   `PGPASSWORD`, with `~/.pgpass` (0600; ignored with libpq's warning at
//!   0644, as `psql` does with the same file), or with a service file;
//! - a libpq `key=value` string is a store, not a file name;
//! - no workload, setup or prepare sees `SYSDELTA_STORE` or `PGPASSWORD`,
//!   and nothing stored or printed holds the password;
//! - the README's and docs' team set-up puts no password on a command line;
//! - a fleet host gets the password on its ssh connection's stdin, and no
//!   file there holds it.
//!
//! Each test starts a throwaway cluster (tests/common/pg.rs, password
//! authentication) and skips, saying why, without root or the server.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{self, pg::PgCluster};

/// Every variable libpq or sysdelta reads a store or a password from:
/// cleared for each command, so that only what a test gives counts.
const LIBPQ_VARS: &[&str] = &[
    "SYSDELTA_STORE",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGSYSCONFDIR",
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
];

fn skip(why: &str) {
    crate::common::skip(why);
}

/// A cluster, or None after a SKIP line.
fn cluster() -> Option<PgCluster> {
    let pg = PgCluster::start();
    if pg.is_none() {
        skip("no throwaway PostgreSQL cluster (root and PostgreSQL 15's server binaries needed)");
    }
    pg
}

/// A user's world: HOME (where `.pgpass` and `.pg_service.conf` are
/// looked for), the state and run dirs, and an empty working directory.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::Builder::new()
            .prefix("sdpw-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        for d in ["state", "run", "cwd"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        Home { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str, mode: u32) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    /// `program` with this HOME and none of libpq's variables.
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        for v in LIBPQ_VARS {
            c.env_remove(v);
        }
        c.env("HOME", self.dir.path())
            .env("LC_ALL", "C")
            .current_dir(self.path("cwd"))
            .stdin(Stdio::null());
        c
    }

    /// sysdelta with `--store store`, in this world.
    fn sysdelta(&self, store: &str, args: &[&str]) -> Command {
        let mut c = self.command(Path::new(common::bin()));
        c.arg("--store")
            .arg(store)
            .args(args)
            .env("SYSDELTA_STATE_DIR", self.path("state"))
            .env("SYSDELTA_RUN_DIR", self.path("run"));
        c
    }

    /// psql connecting with `conninfo` (never asking for a password).
    fn psql(&self, conninfo: &str) -> Command {
        let mut c = self.command(&common::pg::psql_bin());
        c.args(["-X", "-w", "-A", "-t", "-c", "SELECT 1", "-d", conninfo]);
        c
    }

    /// A two-config plan of `command`, two runs a cell.
    fn plan(&self, command: &str) -> PathBuf {
        self.write(
            "plan.toml",
            &format!(
                "runs = 2\nwarmup = 0\n[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n\
                 [[workload]]\nname = \"w\"\ncommand = {command:?}\n"
            ),
            0o644,
        )
    }

    /// Every file under the state dir (anchors, run logs) and the
    /// working directory, with its text.
    fn files(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        for d in ["state", "cwd"] {
            walk(&self.path(d), &mut out);
        }
        out
    }
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned();
            out.push((p, text));
        }
    }
}

/// The cluster's database `db` as user `user`, through its socket, with
/// no password in the URL.
fn url_without_password(pg: &PgCluster, user: &str, db: &str) -> String {
    format!(
        "postgresql://{user}@/{db}?host={}&port={}",
        pg.socket_dir().display(),
        common::pg::PORT
    )
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn assert_ok(what: &str, o: &Output) {
    assert!(o.status.success(), "{what}: {}\n{}", o.status, text(o));
}

/// The whole database `db` as SQL text (pg_dump), to look for a secret
/// in every row.
fn dump(pg: &PgCluster, db: &str) -> String {
    let out = Command::new(Path::new(common::pg::PG_BIN).join("pg_dump"))
        .args([
            "-h",
            &pg.socket_dir().display().to_string(),
            "-U",
            "postgres",
            db,
        ])
        .env("PGPASSWORD", pg.password())
        .env_remove("PGPASSFILE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ok("pg_dump", &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A login role `user` with `password`, owning a new database `db`.
fn role_with_database(pg: &PgCluster, user: &str, password: &str, db: &str) {
    pg.psql(&format!(
        "CREATE ROLE {user} LOGIN PASSWORD '{}'",
        password.replace('\'', "''")
    ));
    pg.create_database(db);
    pg.psql(&format!("ALTER DATABASE {db} OWNER TO {user}"));
}

#[test]
fn pgpassword_alone_opens_a_store_and_pushes_and_pulls_with_no_password_named_and_no_file_keeps_it()
{
    let Some(pg) = cluster() else { return };
    let home = Home::new();
    let url = url_without_password(&pg, "postgres", "sysdelta");
    let plan = home.plan("true");
    let out = home
        .sysdelta(
            &url,
            &["run", plan.to_str().unwrap(), "--quiet", "--no-report"],
        )
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert_ok("run with PGPASSWORD", &out);
    assert_eq!(pg.psql("SELECT COUNT(*) FROM runs"), "4");
    let out = home
        .sysdelta(&url, &["list"])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert_ok("list with PGPASSWORD", &out);
    // push and pull name the team store without a password too.
    let mine = home.path("mine.db").display().to_string();
    let out = home
        .sysdelta(
            &mine,
            &["run", plan.to_str().unwrap(), "--quiet", "--no-report"],
        )
        .output()
        .unwrap();
    assert_ok("run into a file", &out);
    let out = home
        .sysdelta(&mine, &["push", "--to", &url])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert_ok("push --to a URL without a password", &out);
    assert_eq!(pg.psql("SELECT COUNT(*) FROM experiments"), "2");
    let theirs = home.path("theirs.db").display().to_string();
    let out = home
        .sysdelta(&theirs, &["pull", "--from", &url])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert_ok("pull --from a URL without a password", &out);
    // Without it (and no password file), one line, exit 2.
    let out = home.sysdelta(&url, &["list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot connect"), "{}", text(&out));
    // The anchor (and the run log beside it) hold no password.
    let files = home.files();
    assert!(!files.is_empty(), "the store has an anchor here");
    for (p, t) in files {
        assert!(
            !t.contains(pg.password()),
            "{} holds the password",
            p.display()
        );
    }
}

#[test]
fn a_pgpass_file_serves_at_0600_and_is_ignored_with_libpqs_warning_at_0644_as_psql_does() {
    let Some(pg) = cluster() else { return };
    let home = Home::new();
    // A password with the characters a password file escapes.
    let password = r"a:b\c*d";
    role_with_database(&pg, "tester", password, "pw_b");
    let url = url_without_password(&pg, "tester", "pw_b");
    let libpq = format!(
        "host={} port={} dbname=pw_b user=tester",
        pg.socket_dir().display(),
        common::pg::PORT
    );
    // The socket directory is matched literally (only the default one is
    // `localhost`); the password's `:` and `\` are escaped.
    let pgpass = home.write(
        ".pgpass",
        &format!(
            "# not this one\n*:*:other:tester:wrong\n{}:{}:pw_b:tester:a\\:b\\\\c*d\n*:*:*:*:later\n",
            pg.socket_dir().display(),
            common::pg::PORT
        ),
        0o600,
    );
    let plan = home.plan("true");
    let out = home
        .sysdelta(
            &url,
            &["run", plan.to_str().unwrap(), "--quiet", "--no-report"],
        )
        .output()
        .unwrap();
    assert_ok("sysdelta with ~/.pgpass at 0600", &out);
    assert_ok(
        "psql with ~/.pgpass at 0600",
        &home.psql(&libpq).output().unwrap(),
    );
    // PGPASSFILE names another file, as for psql.
    let moved = home.path("elsewhere.pgpass");
    std::fs::rename(&pgpass, &moved).unwrap();
    let out = home
        .sysdelta(&url, &["list"])
        .env("PGPASSFILE", &moved)
        .output()
        .unwrap();
    assert_ok("sysdelta with PGPASSFILE", &out);
    std::fs::rename(&moved, &pgpass).unwrap();

    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ours = home.sysdelta(&url, &["list"]).output().unwrap();
    let theirs = home.psql(&libpq).output().unwrap();
    for (who, out) in [("sysdelta", &ours), ("psql", &theirs)] {
        assert_eq!(out.status.code(), Some(2), "{who}: {}", text(out));
        let warning = format!(
            "password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            pgpass.display()
        );
        assert!(text(out).contains(&warning), "{who}: {}", text(out));
    }
    assert_eq!(
        text(&ours).matches("has group or world access").count(),
        1,
        "said once: {}",
        text(&ours)
    );
}

#[test]
fn a_service_file_names_the_store_and_holds_its_password_as_for_psql() {
    let Some(pg) = cluster() else { return };
    let home = Home::new();
    let services = home.write(
        "services.conf",
        &format!(
            "# team\n[team]\nhost={}\nport={}\ndbname=sysdelta\nuser=postgres\npassword={}\n",
            pg.socket_dir().display(),
            common::pg::PORT,
            pg.password()
        ),
        0o600,
    );
    let plan = home.plan("true");
    let out = home
        .sysdelta(
            "service=team",
            &["run", plan.to_str().unwrap(), "--quiet", "--no-report"],
        )
        .env("PGSERVICEFILE", &services)
        .output()
        .unwrap();
    assert_ok("sysdelta --store service=team", &out);
    assert_ok(
        "psql service=team",
        &home
            .psql("service=team")
            .env("PGSERVICEFILE", &services)
            .output()
            .unwrap(),
    );
    // PGSERVICE names it when the string does not; ~/.pg_service.conf
    // is the user's file without PGSERVICEFILE.
    std::fs::copy(&services, home.path(".pg_service.conf")).unwrap();
    let out = home
        .sysdelta("dbname=sysdelta", &["list"])
        .env("PGSERVICE", "team")
        .output()
        .unwrap();
    assert_ok("sysdelta with PGSERVICE", &out);
    let out = home.sysdelta("service=nosuch", &["list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("definition of service \"nosuch\" not found"),
        "{}",
        text(&out)
    );
    for (p, t) in home.files() {
        assert!(
            !t.contains(pg.password()),
            "{} holds the password",
            p.display()
        );
    }
}

#[test]
fn a_key_value_string_is_a_store_and_makes_no_file_named_after_it() {
    let Some(pg) = cluster() else { return };
    let home = Home::new();
    let libpq = format!(
        "host={} port={} dbname=sysdelta user=postgres password={}",
        pg.socket_dir().display(),
        common::pg::PORT,
        pg.password()
    );
    let plan = home.plan("true");
    let out = home
        .sysdelta(
            &libpq,
            &["run", plan.to_str().unwrap(), "--quiet", "--no-report"],
        )
        .output()
        .unwrap();
    assert_ok("sysdelta --store 'host=... password=...'", &out);
    assert!(!text(&out).contains(pg.password()), "{}", text(&out));
    assert_eq!(pg.psql("SELECT COUNT(*) FROM runs"), "4");
    let here: Vec<_> = std::fs::read_dir(home.path("cwd")).unwrap().collect();
    assert!(
        here.is_empty(),
        "files made in the working directory: {here:?}"
    );
    // Given in the string, the password stays in the anchor, which only
    // its owner can read.
    for (p, t) in home.files() {
        if t.contains(pg.password()) {
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_eq!(
                mode & 0o077,
                0,
                "{} holds the password at {mode:o}",
                p.display()
            );
        }
    }
}

#[test]
fn no_workload_setup_or_prepare_sees_the_stores_url_or_password_and_nothing_stored_holds_it() {
    let Some(pg) = cluster() else { return };
    let home = Home::new();
    let url = pg.url();
    let seen = |name: &str| home.path(name).display().to_string();
    let plan = home.write(
        "plan.toml",
        &format!(
            "runs = 2\nwarmup = 0\nsetup = \"env > {}\"\n\
             [[config]]\nname = \"a\"\nsetup = \"env > {}\"\n[[config]]\nname = \"b\"\n\
             [[workload]]\nname = \"w\"\nprepare = \"env > {}\"\ncommand = \"env; env | grep -E '^(PG|SYSDELTA)' >&2; echo ENV-SHOWN >&2; exit 1\"\n",
            seen("plan-setup.env"),
            seen("config-setup.env"),
            seen("prepare.env"),
        ),
        0o644,
    );
    // The store named both ways, and libpq's password set as well.
    let out = home
        .sysdelta(&url, &["run", plan.to_str().unwrap()])
        .env("SYSDELTA_STORE", &url)
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    let said = text(&out);
    assert!(
        said.contains("ENV-SHOWN"),
        "the workloads' stderr reached the report: {said}"
    );
    for f in ["plan-setup.env", "config-setup.env", "prepare.env"] {
        let env = std::fs::read_to_string(home.path(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(env.contains("PATH="), "{f}: {env}");
        for secret in ["SYSDELTA_STORE", "PGPASSWORD", pg.password()] {
            assert!(!env.contains(secret), "{f} shows {secret}: {env}");
        }
    }
    assert!(!said.contains(pg.password()), "{said}");
    assert!(!said.contains("SYSDELTA_STORE="), "{said}");
    let stored =
        pg.psql("SELECT COUNT(*) FROM runs WHERE stderr_tail LIKE '%SYSDELTA_RUN_DIR=%ENV-SHOWN%'");
    assert_ne!(stored, "0", "the failing runs' stderr is stored");
    let all = dump(&pg, "sysdelta");
    assert!(!all.contains(pg.password()), "a row holds the password");
    assert!(!all.contains("PGPASSWORD"), "a row names PGPASSWORD");
    let report = home
        .sysdelta(&url, &["report", "last", "--format", "json"])
        .output()
        .unwrap();
    assert!(!text(&report).contains(pg.password()));
}

/// The fenced shell blocks of a markdown text that follow `heading`
/// (up to the next heading of that level or higher).
fn shell_blocks_under(md: &str, heading: &str) -> Vec<String> {
    let start = md
        .find(heading)
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    let level = heading.chars().take_while(|&c| c == '#').count();
    let rest = &md[start + heading.len()..];
    let end = rest
        .lines()
        .scan(0, |at, l| {
            let here = *at;
            *at += l.len() + 1;
            Some((here, l))
        })
        .find(|(_, l)| {
            let n = l.chars().take_while(|&c| c == '#').count();
            n > 0 && n <= level && l.chars().nth(n) == Some(' ')
        })
        .map_or(rest.len(), |(i, _)| i);
    rest[..end]
        .split("```")
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

#[test]
fn the_team_set_up_as_documented_puts_no_password_on_a_command_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let credential = regex::Regex::new(r"postgres(ql)?://[^@/\s'\x22]*:[^@\s'\x22]*@").unwrap();
    for (file, heading) in [
        ("README.md", "## A team's store"),
        ("docs/team.md", "## Set-up"),
        ("docs/fleet.md", "# Fleet runs"),
    ] {
        let md = std::fs::read_to_string(root.join(file)).unwrap();
        let blocks = shell_blocks_under(&md, heading);
        assert!(!blocks.is_empty(), "{file}: no commands under {heading:?}");
        for b in blocks {
            for line in b.lines() {
                assert!(
                    !credential.is_match(line) && !line.contains("password="),
                    "{file}: a password on a command line: {line}"
                );
                assert!(
                    !line.contains("PGPASSWORD=") || line.trim_start().starts_with('#'),
                    "{file}: a password in a shell line: {line}"
                );
            }
        }
    }
}

/// Every file under `dir` whose bytes hold `secret`.
fn files_holding(dir: &Path, secret: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(dir, &mut all);
    all.into_iter()
        .filter(|(_, t)| t.contains(secret))
        .map(|(p, _)| p)
        .collect()
}

#[test]
fn a_fleet_host_gets_the_password_on_stdin_and_keeps_no_file_of_it() {
    let Some(pg) = cluster() else { return };
    let Some(host) = common::sshd::SshHost::start("127.0.0.9") else {
        skip("no throwaway sshd (root and openssh-server needed)");
        return;
    };
    let home = Home::new();
    // Short: a forwarded socket's path must stay under 108 bytes.
    let dir = tempfile::Builder::new()
        .prefix("sdpwf-")
        .tempdir_in("/tmp")
        .unwrap();
    let d = |n: &str| dir.path().join(n).display().to_string();
    for n in ["run", "tmp"] {
        std::fs::create_dir(d(n)).unwrap();
    }
    let opts: Vec<String> = host
        .ssh_options()
        .iter()
        .map(|o| format!("{o:?}"))
        .collect();
    let hosts = home.write(
        "hosts.toml",
        &format!(
            "[[host]]\nname = \"h\"\ndestination = {:?}\nssh_options = [{}]\nworkdir = {:?}\n\
             env = {{ SYSDELTA_RUN_DIR = {:?}, TMPDIR = {:?} }}\n",
            host.destination(),
            opts.join(", "),
            d("w"),
            d("run"),
            d("tmp"),
        ),
        0o644,
    );
    let seen = d("workload.env");
    let plan = home.write(
        "fleet-plan.toml",
        &format!(
            "runs = 2\nwarmup = 0\n[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n\
             [[workload]]\nname = \"w\"\ncommand = \"env >> {seen}\"\n"
        ),
        0o644,
    );
    // The password reaches this machine's sysdelta in PGPASSWORD only.
    let url = url_without_password(&pg, "postgres", "sysdelta");
    let out = home
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
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert_ok("fleet run", &out);
    assert!(!text(&out).contains(pg.password()), "{}", text(&out));
    // The host reached the store with it: its runs are there.
    assert_eq!(
        pg.psql("SELECT COUNT(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.fleet_host = 'h'"),
        "4"
    );
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(env.contains("PATH="), "{env}");
    assert!(
        !env.contains(pg.password()) && !env.contains("PGPASSWORD"),
        "{env}"
    );
    // Nothing on the host (its workdir: anchor, run log, plan, state) or
    // here holds it.
    let held = files_holding(dir.path(), pg.password());
    assert!(held.is_empty(), "files holding the password: {held:?}");
    for (p, t) in home.files() {
        assert!(
            !t.contains(pg.password()),
            "{} holds the password",
            p.display()
        );
    }
    drop(host);
}
