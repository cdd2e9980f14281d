//! The fixtures the PostgreSQL-store and fleet tests stand on
//! (tests/common/pg.rs, tests/common/sshd.rs), tested for what those tests
//! will take for granted: a cluster takes its URL's password and refuses
//! another, stops and starts again with its data, and leaves no process
//! or dir behind; an SSH host logs root in with its key only, dies with
//! its sessions when killed, comes back, forwards a Unix socket the way a
//! fleet host reaches the cluster, and runs beside others on 127.0.0.x.
//! Each test skips, saying why, without root or the tools
//! (scripts/install-team-tools.sh installs them).

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::pg::{self, PgCluster};
use common::procs::{self, KillOnDrop};
use common::sshd::SshHost;

fn connect(url: &str) -> Result<postgres::Client, postgres::Error> {
    postgres::Client::connect(url, postgres::NoTls)
}

fn ssh(host: &SshHost, options: &[String], command: &str) -> Output {
    Command::new("ssh")
        .args(options)
        .arg(host.destination())
        .arg(command)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Live processes whose command line mentions `needle` (a fixture's dir).
fn processes_naming(needle: &Path) -> Vec<(i32, String)> {
    let needle = needle.to_string_lossy();
    procs::all()
        .into_iter()
        .map(|p| (p.pid, procs::cmdline(p.pid)))
        .filter(|(_, c)| c.contains(&*needle))
        .collect()
}

/// What a dropped fixture must have left: nothing of `pids` alive, no
/// process naming `dir`, no `dir`.
fn assert_all_gone(what: &str, dir: &Path, pids: &BTreeSet<i32>) {
    assert!(
        procs::wait_gone(pids, Duration::from_secs(10)),
        "{what}: processes left: {:?}",
        pids.iter()
            .filter(|p| procs::alive(**p))
            .map(|p| (*p, procs::cmdline(*p)))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        processes_naming(dir),
        vec![],
        "{what}: processes naming {dir:?}"
    );
    assert!(!dir.exists(), "{what}: {dir:?} is still there");
}

#[test]
fn pg_cluster_takes_its_password_restarts_and_leaves_nothing() {
    let t = Instant::now();
    let Some(pg) = PgCluster::start() else { return };
    println!(
        "PgCluster::start (initdb, start, createdb): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let url = pg.url();
    assert!(
        url.starts_with("postgresql://postgres:") && url.contains("@/sysdelta?host=/tmp/"),
        "{url}"
    );

    // The postgres crate reads the URL as the Unix socket: a session
    // there has no server address.
    let mut c = connect(&url).unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let row = c
        .query_one(
            "SELECT current_database(), current_user, inet_server_addr() IS NULL",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "sysdelta");
    assert_eq!(row.get::<_, String>(1), "postgres");
    assert!(row.get::<_, bool>(2), "not over the Unix socket");
    c.batch_execute("CREATE TABLE runs (id bigint PRIMARY KEY); INSERT INTO runs VALUES (7)")
        .unwrap();
    drop(c);
    // And so does libpq (psql, as the fleet's hosts would run it).
    let out = Command::new(pg::psql_bin())
        .args(["-X", "-A", "-t", "-d", &url, "-c", "SELECT id FROM runs"])
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(out.status.success(), "psql {url}: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "7");
    assert_eq!(pg.psql("SELECT count(*) FROM runs"), "1");

    // A wrong password is refused, and says so.
    let e = connect(&pg.url_with_password("not-the-password"))
        .err()
        .expect("a wrong password was taken");
    let db = e.as_db_error().unwrap_or_else(|| panic!("{e:?}"));
    assert!(
        db.message().contains("password authentication failed"),
        "{}",
        db.message()
    );
    assert_eq!(db.code(), &postgres::error::SqlState::INVALID_PASSWORD);

    // Another database of the same cluster: a store of its own.
    let other = pg.create_database("second_store");
    assert!(other.contains("@/second_store?host="), "{other}");
    let mut c2 = connect(&other).unwrap();
    c2.batch_execute("CREATE TABLE only_here (x int)").unwrap();
    drop(c2);
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'"),
        "0"
    );
    assert_eq!(
        pg.psql_in(
            "second_store",
            "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'"
        ),
        "1"
    );

    // Stopped, it takes no connection; started again, it has its data.
    let mut held = connect(&url).unwrap();
    pg.stop();
    assert!(pg.postmaster_pid().is_none());
    assert!(
        held.query_one("SELECT 1", &[]).is_err(),
        "a session outlived the stop"
    );
    let e = connect(&url).err().expect("connected to a stopped server");
    assert!(e.as_db_error().is_none(), "{e:?}");
    let t = Instant::now();
    pg.start_again();
    println!("PgCluster::start_again: {:.2} s", t.elapsed().as_secs_f64());
    let mut c = connect(&url).unwrap();
    let id: i64 = c.query_one("SELECT id FROM runs", &[]).unwrap().get(0);
    assert_eq!(id, 7);
    drop(c);

    // Dropped: the server and its children are gone, and so is the dir.
    let dir = pg.socket_dir().to_path_buf();
    let postmaster = pg.postmaster_pid().expect("postmaster.pid");
    let pids = procs::tree(postmaster);
    assert!(pids.len() > 1, "postmaster {postmaster} has no children?");
    drop(pg);
    assert_all_gone("PgCluster", &dir, &pids);
    assert!(connect(&url).is_err());
}

#[test]
fn pg_cluster_is_cleaned_up_after_a_panic() {
    let (tx, rx) = std::sync::mpsc::channel();
    let r = std::thread::spawn(move || {
        let Some(pg) = PgCluster::start() else {
            return;
        };
        let pid = pg.postmaster_pid().unwrap();
        tx.send((pg.socket_dir().to_path_buf(), procs::tree(pid)))
            .unwrap();
        panic!("a test fails with its cluster up");
    })
    .join();
    let Ok((dir, pids)) = rx.recv() else {
        return; // skipped
    };
    assert!(r.is_err());
    assert_all_gone("PgCluster after a panic", &dir, &pids);
}

#[test]
fn ssh_host_logs_in_with_its_key_only_dies_whole_and_comes_back() {
    let t = Instant::now();
    let Some(mut h) = SshHost::start("127.0.0.2") else {
        return;
    };
    println!(
        "SshHost::start (3 keys, sshd up): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(h.destination(), "root@127.0.0.2");
    let t = Instant::now();
    let out = ssh(&h, &h.ssh_options(), "echo hi");
    println!("ssh echo hi: {:.2} s", t.elapsed().as_secs_f64());
    assert!(
        out.status.success(),
        "{}\nsshd: {}",
        text(&out.stderr),
        h.log()
    );
    assert_eq!(text(&out.stdout), "hi\n");

    let out = ssh(&h, &h.wrong_key_options(), "echo hi");
    assert_eq!(out.status.code(), Some(255), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );

    // A session in progress, then kill(): the listener and the session's
    // processes die, and the client sees its connection drop.
    let sshd = h.pid().unwrap();
    let client = Command::new("ssh")
        .args(h.ssh_options())
        .arg(h.destination())
        .arg("sleep 600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut client = KillOnDrop(client);
    let until = Instant::now() + Duration::from_secs(15);
    let session = loop {
        let tree = procs::tree(sshd);
        if tree
            .iter()
            .any(|p| procs::cmdline(*p).starts_with("sleep 600"))
        {
            break tree;
        }
        assert!(Instant::now() < until, "no session under sshd {sshd}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The listener, the connection's sshd (for root, no unprivileged
    // half after login), the command.
    assert!(session.len() >= 3, "{session:?}");
    h.kill();
    assert!(h.pid().is_none());
    assert!(procs::wait_gone(&session, Duration::from_secs(10)));
    let config = h.config_path();
    assert_eq!(processes_naming(&config), vec![]);
    let until = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = client.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "the client outlived its sshd");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(255));
    let out = ssh(&h, &h.ssh_options(), "echo hi");
    assert_eq!(out.status.code(), Some(255), "{}", text(&out.stdout));

    // Back on the same address, port and host key.
    let port = h.port();
    let t = Instant::now();
    h.start_again();
    println!("SshHost::start_again: {:.2} s", t.elapsed().as_secs_f64());
    assert_eq!(h.port(), port);
    let out = ssh(&h, &h.ssh_options(), "echo hi");
    assert!(
        out.status.success(),
        "{}\nsshd: {}",
        text(&out.stderr),
        h.log()
    );
    assert_eq!(text(&out.stdout), "hi\n");

    let dir = h.dir().to_path_buf();
    let pids = procs::tree(h.pid().unwrap());
    drop(h);
    assert_all_gone("SshHost", &dir, &pids);
}

#[test]
fn ssh_host_is_cleaned_up_after_a_panic() {
    let (tx, rx) = std::sync::mpsc::channel();
    let r = std::thread::spawn(move || {
        // The client is dropped after the host: the host's Drop is what
        // must end the session.
        let client;
        let Some(h) = SshHost::start("127.0.0.2") else {
            return;
        };
        client = KillOnDrop(
            Command::new("ssh")
                .args(h.ssh_options())
                .arg(h.destination())
                .arg("sleep 600")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let sshd = h.pid().unwrap();
        let until = Instant::now() + Duration::from_secs(15);
        let tree = loop {
            let tree = procs::tree(sshd);
            if tree
                .iter()
                .any(|p| procs::cmdline(*p).starts_with("sleep 600"))
            {
                break tree;
            }
            assert!(Instant::now() < until, "no session under sshd {sshd}");
            std::thread::sleep(Duration::from_millis(50));
        };
        tx.send((h.dir().to_path_buf(), tree)).unwrap();
        let _ = &client;
        panic!("a test fails with its host up and a session open");
    })
    .join();
    let Ok((dir, pids)) = rx.recv() else {
        return; // skipped
    };
    assert!(r.is_err());
    assert_all_gone("SshHost after a panic", &dir, &pids);
}

/// `ssh -R REMOTE_SOCKET:LOCAL_SOCKET host COMMAND`, ExitOnForwardFailure.
fn forward(h: &SshHost, remote: &Path, local: &Path, command: &str) -> Command {
    let mut c = Command::new("ssh");
    c.args(h.ssh_options())
        .args(["-o", "ExitOnForwardFailure=yes", "-R"])
        .arg(format!("{}:{}", remote.display(), local.display()))
        .arg(h.destination())
        .arg(command)
        .stdin(Stdio::null());
    c
}

#[test]
fn ssh_host_forwards_a_unix_socket_back() {
    let Some(h) = SshHost::start("127.0.0.3") else {
        return;
    };
    let local_dir = tempfile::Builder::new()
        .prefix("sysdelta-fwd-")
        .tempdir_in("/tmp")
        .unwrap();
    let local = local_dir.path().join("local.sock");
    let listener = UnixListener::bind(&local).unwrap();
    let remote = h.dir().join("fwd.sock");
    assert!(remote.starts_with("/tmp"));

    // As written in the fleet's plan: the remote socket is there for the
    // command.
    let out = forward(
        &h,
        &remote,
        &local,
        &format!("test -S {} && echo ok", remote.display()),
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}\nsshd: {}",
        text(&out.stderr),
        h.log()
    );
    assert_eq!(text(&out.stdout), "ok\n");

    // And bytes go through it: a connection to the remote socket (on this
    // same machine) reaches the local listener.
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        s.write_all(b"pong").unwrap();
    });
    let mut session = KillOnDrop(
        forward(
            &h,
            &remote,
            &local,
            &format!("test -S {} && echo ok && sleep 600", remote.display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(session.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ok\n");
    let mut s = UnixStream::connect(&remote).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"pong");
    server.join().unwrap();
}

#[test]
fn ssh_host_reaches_the_cluster_through_a_forwarded_socket() {
    let Some(h) = SshHost::start("127.0.0.4") else {
        return;
    };
    let Some(pg) = PgCluster::start() else { return };
    // The cluster's socket, forwarded to <host dir>/pg/.s.PGSQL.5432: what
    // `psql -h <host dir>/pg` looks for on the host.
    let remote_dir: PathBuf = h.dir().join("pg");
    std::fs::create_dir(&remote_dir).unwrap();
    let socket = format!(".s.PGSQL.{}", pg::PORT);
    let out = forward(
        &h,
        &remote_dir.join(&socket),
        &pg.socket_dir().join(&socket),
        &format!(
            "PGPASSWORD={} {} -X -A -t -h {} -U postgres -d sysdelta -c 'SELECT 40 + 2'",
            pg.password(),
            pg::psql_bin().display(),
            remote_dir.display()
        ),
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}\nsshd: {}",
        text(&out.stderr),
        h.log()
    );
    assert_eq!(text(&out.stdout).trim(), "42");
}

#[test]
fn three_hosts_run_side_by_side() {
    let t = Instant::now();
    let hosts: Vec<SshHost> = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
        .iter()
        .map_while(|a| SshHost::start(a))
        .collect();
    if hosts.len() < 3 {
        return;
    }
    println!(
        "three SshHost::start in a row: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    // Each answers on its own address, with its own host key.
    for h in &hosts {
        let out = ssh(h, &h.ssh_options(), "echo $SSH_CONNECTION");
        assert!(
            out.status.success(),
            "{}\nsshd: {}",
            text(&out.stderr),
            h.log()
        );
        let conn = text(&out.stdout);
        let f: Vec<&str> = conn.split_whitespace().collect();
        assert_eq!(f.len(), 4, "{conn}");
        assert_eq!(f[2], h.addr(), "{conn}");
        assert_eq!(f[3], h.port().to_string(), "{conn}");
    }
    // Nothing went wrong on the way, the start-up probes included.
    for h in &hosts {
        assert_eq!(h.log(), "", "sshd on {}", h.addr());
    }
    let keys: BTreeSet<String> = hosts
        .iter()
        .map(|h| std::fs::read_to_string(h.dir().join("host_key.pub")).unwrap())
        .collect();
    assert_eq!(keys.len(), 3);
    // One host's known_hosts does not vouch for another host's key.
    let (a, b) = (&hosts[0], &hosts[1]);
    let mut opts = b.ssh_options();
    let known = opts
        .iter()
        .position(|o| o.starts_with("UserKnownHostsFile="))
        .unwrap();
    let forged = b.dir().join("known_hosts_of_a");
    let a_line = std::fs::read_to_string(a.dir().join("known_hosts")).unwrap();
    let (_, key) = a_line.split_once(' ').unwrap();
    std::fs::write(&forged, format!("[{}]:{} {key}", b.addr(), b.port())).unwrap();
    opts[known] = format!("UserKnownHostsFile={}", forged.display());
    let out = ssh(b, &opts, "echo hi");
    assert_eq!(out.status.code(), Some(255));
    assert!(
        text(&out.stderr).contains("HOST IDENTIFICATION HAS CHANGED")
            || text(&out.stderr).contains("Host key verification failed"),
        "{}",
        text(&out.stderr)
    );
}
