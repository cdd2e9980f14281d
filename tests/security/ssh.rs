//! A fleet host's ssh options come from the command line, a hosts file,
//! or the fleet's row in the team database, which anyone who can write
//! that database can change. Whatever their source, they are read as
//! ssh reads them and only the options a fleet needs pass
//! (`fleet::ssh_allow`): every spelling of an option that would run a
//! command here is refused with one line naming the host and the option,
//! exit 2, before anything is stored and before ssh runs (the marker the
//! option would create is never made).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{self, Sandbox};

/// Spellings of options that would run `touch MARKER` on this machine
/// when ssh connects (`{m}` is the marker).
const SPELLINGS: &[&[&str]] = &[
    &["-voProxyCommand=touch {m}"],
    &["-4oLocalCommand=touch {m}", "-oPermitLocalCommand=yes"],
    &["-o", "ProxyCommand touch {m}"],
    &["-o", "proxycommand=touch {m}"],
    &["-o", "PROXYCOMMAND = touch {m}"],
    &["-o", "\"ProxyCommand\" touch {m}"],
    &["-q", "-o", "KnownHostsCommand=/usr/bin/touch {m}"],
    &["-o", "Match exec \"touch {m}\""],
    &["-o", "PKCS11Provider={m}.so"],
    &["-A"],
    &["-R", "2222:localhost:22"],
    &["-E", "{m}"],
    &["-F", "{m}.conf"],
    &["-J", "jump"],
];

fn with_marker(s: &[&str], m: &Path) -> Vec<String> {
    s.iter()
        .map(|w| w.replace("{m}", &m.display().to_string()))
        .collect()
}

/// A directory of the test's (mode 0700) with a plan and where the
/// marker would go.
struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(0o700)).unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        std::fs::write(
            dir.path().join("plan.toml"),
            "name = \"p\"\nruns = 2\nwarmup = 0\n[[config]]\nname = \"a\"\n\
             [[workload]]\nname = \"w\"\ncommand = \"true\"\n",
        )
        .unwrap();
        Dir { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn marker(&self) -> PathBuf {
        self.path("marker")
    }

    /// sysdelta with `store`, its state dir in the test's directory.
    fn sysdelta(&self, store: &str, args: &[&str]) -> Output {
        Command::new(common::bin())
            .arg("--store")
            .arg(store)
            .args(args)
            .env_remove("SYSDELTA_STORE")
            .env("SYSDELTA_STATE_DIR", self.path("state"))
            .env("SYSDELTA_RUN_DIR", self.path("run"))
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

/// The first word of a spelling that is a refused option (`-q` passes).
fn refused_word(opts: &[String]) -> &str {
    opts.iter()
        .find(|o| o.starts_with('-') && *o != "-q")
        .unwrap()
}

/// Exit 2 and one line holding each of `says`; the marker not made.
fn refused(out: &Output, marker: &Path, says: &[&str]) {
    let err = common::stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    for s in says {
        assert!(lines[0].contains(s), "{:?} does not say {s:?}", lines[0]);
    }
    assert!(!marker.exists(), "{} was made", marker.display());
}

#[test]
fn ssh_options_in_hosts_are_refused_before_anything_is_stored() {
    let d = Dir::new();
    let store = d.path("team.db").display().to_string();
    let plan = d.path("plan.toml").display().to_string();
    // --hosts takes destinations only: an option there is no destination.
    for (item, says) in [
        (
            format!("a=-voProxyCommand=touch {}", d.marker().display()),
            "an ssh destination has no spaces and does not start with '-'",
        ),
        (
            "a=-oProxyCommand=x".to_string(),
            "an ssh destination has no spaces and does not start with '-'",
        ),
        ("-oProxyCommand=x".to_string(), "not a leading '-'"),
    ] {
        let arg = format!("--hosts={item}");
        let out = d.sysdelta(&store, &["fleet", "run", &plan, &arg]);
        refused(&out, &d.marker(), &["--hosts '", says]);
    }
    assert!(!d.path("team.db").exists(), "a store was made");
}

#[test]
fn every_spelling_of_a_forbidden_ssh_option_in_a_hosts_file_is_refused() {
    let d = Dir::new();
    let store = d.path("team.db").display().to_string();
    let plan = d.path("plan.toml").display().to_string();
    for s in SPELLINGS {
        let opts = with_marker(s, &d.marker());
        let quoted: Vec<String> = opts.iter().map(|o| format!("{o:?}")).collect();
        let file = d.path("hosts.toml");
        std::fs::write(
            &file,
            format!(
                "[[host]]\nname = \"ok\"\ndestination = \"root@127.0.0.2\"\n\
                 ssh_options = [\"-p\", \"2222\"]\n\n\
                 [[host]]\nname = \"bad\"\ndestination = \"root@127.0.0.3\"\n\
                 ssh_options = [{}]\n",
                quoted.join(", ")
            ),
        )
        .unwrap();
        let out = d.sysdelta(
            &store,
            &[
                "fleet",
                "run",
                &plan,
                "--hosts-file",
                file.to_str().unwrap(),
            ],
        );
        // The host by its name, and the option as written.
        let first = refused_word(&opts);
        refused(
            &out,
            &d.marker(),
            &["[[host]] number 2 ('bad')", "ssh option '", first],
        );
    }
    assert!(!d.path("team.db").exists(), "a store was made");
}

#[test]
fn a_fleet_row_edited_to_carry_a_forbidden_ssh_option_is_refused_on_resume() {
    let Some(sb) = Sandbox::postgresql() else {
        crate::common::skip("no PostgreSQL server (scripts/install-team-tools.sh)");
        return;
    };
    let pg = sb.pg.as_ref().unwrap();
    let d = Dir::new();
    let plan_text = std::fs::read_to_string(d.path("plan.toml")).unwrap();
    let good = r#"[{"name":"a","destination":"root@127.0.0.2","ssh_options":["-p","2222"],"workdir":"/nonexistent-sysdelta/w","env":{},"seed":1}]"#;
    {
        let store = sysdelta::store::Store::open(&sb.store(), true).unwrap();
        store
            .create_fleet(&sysdelta::store::fleet::NewFleet {
                name: "p",
                plan_source: "plan.toml",
                plan_text: &plan_text,
                overrides: r#"{"run_flags":[],"seed":1}"#,
                hosts: good,
            })
            .unwrap();
    }
    for s in SPELLINGS {
        let opts = with_marker(s, &d.marker());
        let host = serde_json::json!([{
            "name": "a",
            "destination": "root@127.0.0.2",
            "ssh_options": opts,
            "workdir": "/nonexistent-sysdelta/w",
            "env": {},
            "seed": 1
        }])
        .to_string();
        pg.psql(&format!(
            "UPDATE fleets SET hosts = '{}'",
            host.replace('\'', "''")
        ));
        let out = d.sysdelta(&pg.url(), &["fleet", "resume", "last"]);
        let first = refused_word(&opts);
        refused(
            &out,
            &d.marker(),
            &["stored host 'a'", "ssh option '", first],
        );
        // Nothing stored changed: the row as it was, no experiment.
        assert_eq!(pg.psql("SELECT hosts FROM fleets"), host);
        assert_eq!(pg.psql("SELECT COUNT(*) FROM experiments"), "0");
    }
}

#[test]
fn a_local_state_dir_others_can_write_is_refused_before_anything_is_stored() {
    let Some(sb) = Sandbox::postgresql() else {
        crate::common::skip("no PostgreSQL server (scripts/install-team-tools.sh)");
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let pg = sb.pg.as_ref().unwrap();
    let d = Dir::new();
    std::fs::set_permissions(d.path("state"), PermissionsExt::from_mode(0o777)).unwrap();
    let plan = d.path("plan.toml").display().to_string();
    let out = d.sysdelta(
        &pg.url(),
        &["fleet", "run", &plan, "--hosts", "root@127.0.0.2"],
    );
    refused(
        &out,
        &d.marker(),
        // The checks on files beside a store (src/sys/trust.rs) refuse it
        // first, as the anchor's directory; the fleet's own check, which
        // refuses even a shared or sticky one, stands behind them.
        &[
            "state",
            "can be written by others (mode ",
            "777",
            "SYSDELTA_",
        ],
    );
    assert!(
        !pg.psql("SELECT to_regclass('public.fleets') IS NOT NULL")
            .contains('t')
            || pg.psql("SELECT COUNT(*) FROM fleets") == "0"
    );
}
