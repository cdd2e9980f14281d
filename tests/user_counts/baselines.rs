//! Named baselines (`--save-baseline NAME`) where a user looks for them:
//! `sysdelta list` shows them, and `push`/`pull` carry a baseline with the
//! experiment it names: `push` moves the target's name on as the source's
//! moved, never over one the target saved for another experiment; `pull`
//! never moves a name the user's store has, whatever the team store's
//! history of it says.

use crate::common;

use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::Store;

/// A new experiment in the store at `path` (made there if need be).
fn experiment(path: &std::path::Path, name: &str) -> i64 {
    let store = Store::open(path, true).unwrap();
    let wall = [MetricSpec::new("wall", "s", Direction::Lower)];
    common::create_experiment(&store, name, &["a"], 1, &wall)
}

fn save(path: &std::path::Path, name: &str, id: i64) {
    Store::open(path, true)
        .unwrap()
        .save_baseline(name, id)
        .unwrap();
}

/// `sysdelta --store STORE ARGS` in the sandbox.
fn run(sb: &common::Sandbox, store: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::bin())
        .arg("--store")
        .arg(store)
        .args(args)
        .env("SYSDELTA_RUN_DIR", sb.run_dir())
        .env("SYSDELTA_STATE_DIR", sb.state_dir())
        .current_dir(sb.dir.path())
        .output()
        .unwrap()
}

/// [`run`], which must succeed: (stdout, stderr).
fn ok(sb: &common::Sandbox, store: &std::path::Path, args: &[&str]) -> (String, String) {
    let o = run(sb, store, args);
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    (common::stdout(&o), common::stderr(&o))
}

/// Where baseline `name` of the store at `path` points now, and every id
/// it has pointed at.
fn pointed(path: &std::path::Path, name: &str) -> Vec<i64> {
    let store = Store::open(path, false).unwrap();
    let all = store.baselines().unwrap();
    all.into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, ids)| ids)
        .unwrap_or_default()
}

#[test]
fn list_shows_each_named_baseline_with_its_experiment() {
    let sb = common::Sandbox::sqlite();
    let local = sb.store();
    experiment(&local, "one");
    let two = experiment(&local, "two");
    save(&local, "main", 1);
    save(&local, "main", two);
    save(&local, "nightly", two);

    let (text, _) = ok(&sb, &local, &["list"]);
    assert!(
        text.contains(&format!("baseline main: experiment {two}\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("baseline nightly: experiment {two}\n")),
        "{text}"
    );
    let (json, _) = ok(&sb, &local, &["list", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v[0]["named_baselines"],
        serde_json::json!([]),
        "moved on: {v}"
    );
    assert_eq!(
        v[1]["named_baselines"],
        serde_json::json!(["main", "nightly"]),
        "{v}"
    );
}

#[test]
fn push_carries_a_baseline_and_moves_it_on_as_the_source_did() {
    let sb = common::Sandbox::sqlite();
    let (local, team) = (sb.store(), sb.path("team.db"));
    experiment(&team, "a run of someone else's, so ids differ");
    let first = experiment(&local, "nightly 1");
    save(&local, "main", first);
    let (out, _) = ok(&sb, &local, &["push", "--to", team.to_str().unwrap()]);
    assert!(
        out.contains("baseline main: now points at it there"),
        "{out}"
    );
    assert_eq!(
        pointed(&team, "main"),
        [2],
        "the copy of {first} is 2 there"
    );

    // The next night: main moved here, and moves there with the push.
    let second = experiment(&local, "nightly 2");
    save(&local, "main", second);
    let (out, err) = ok(&sb, &local, &["push", "--to", team.to_str().unwrap()]);
    assert!(out.contains("baseline main: moved on to it there"), "{out}");
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(pointed(&team, "main"), [2, 3], "moved, the old id kept");

    // Pushing again changes nothing.
    let (out, _) = ok(&sb, &local, &["push", "--to", team.to_str().unwrap()]);
    assert!(
        out.contains("baseline main: already points at it there"),
        "{out}"
    );
    assert_eq!(pointed(&team, "main"), [2, 3]);
    let (list, _) = ok(&sb, &team, &["list"]);
    assert!(list.contains("baseline main: experiment 3\n"), "{list}");
}

#[test]
fn a_baseline_the_target_saved_for_another_experiment_is_not_overwritten() {
    let sb = common::Sandbox::sqlite();
    let (local, team) = (sb.store(), sb.path("team.db"));
    let theirs = experiment(&team, "the team's main");
    save(&team, "main", theirs);
    let mine = experiment(&local, "mine");
    save(&local, "main", mine);

    let o = run(&sb, &local, &["push", "--to", team.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert!(o.status.success(), "the experiment is copied: {err}");
    assert!(
        err.contains(&format!(
            "warning: baseline main left as it is in {}, where it points at experiment {theirs}: \
             in {} it points at experiment {mine} (copied as 2), and never pointed at that experiment",
            team.display(),
            local.display()
        )),
        "{err}"
    );
    assert_eq!(pointed(&team, "main"), [theirs], "left as it was");
    assert_eq!(
        Store::open(&team, false)
            .unwrap()
            .experiment_ids()
            .unwrap()
            .len(),
        2,
        "the experiment itself was copied"
    );
}

#[test]
fn pull_carries_a_baseline_too() {
    let sb = common::Sandbox::sqlite();
    let (laptop, team) = (sb.store(), sb.path("team.db"));
    let id = experiment(&team, "ci");
    save(&team, "main", id);
    experiment(&team, "not the baseline");
    let (out, _) = ok(
        &sb,
        &laptop,
        &["pull", "--from", team.to_str().unwrap(), "-e", "1"],
    );
    assert!(
        out.contains("baseline main: now points at it there"),
        "{out}"
    );
    assert_eq!(pointed(&laptop, "main"), [1]);
}

/// The team store's `meta` row is anyone's who can write that store: a
/// history there that claims the user's baseline moved on from their
/// experiment to another must not repoint the user's own `main` (which
/// `--against-baseline main --fail-on` gates against) on a pull.
#[test]
fn pull_never_moves_a_baseline_the_local_store_has() {
    let sb = common::Sandbox::sqlite();
    let (local, team) = (sb.store(), sb.path("team.db"));
    experiment(&team, "someone else's, so ids differ");
    let mine = experiment(&local, "mine");
    save(&local, "main", mine);
    ok(&sb, &local, &["push", "--to", team.to_str().unwrap()]);
    assert_eq!(pointed(&team, "main"), [2], "the copy of {mine} is 2 there");
    // Someone who can write the team store points its main on from the
    // copy of mine to an experiment of theirs.
    let theirs = experiment(&team, "theirs");
    save(&team, "main", theirs);
    assert_eq!(pointed(&team, "main"), [2, theirs]);

    let o = run(&sb, &local, &["pull", "--from", team.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert!(o.status.success(), "the experiments are copied: {err}");
    assert!(
        err.contains(&format!(
            "warning: baseline main left as it is in {}, where it points at experiment {mine}: \
             in {} it points at experiment {theirs} (copied as 3), and a pull never moves a \
             name the store it copies into has",
            local.display(),
            team.display()
        )),
        "{err}"
    );
    assert!(
        !common::stdout(&o).contains("moved on"),
        "{}",
        common::stdout(&o)
    );
    assert_eq!(pointed(&local, "main"), [mine], "left as it was");
    let store = Store::open(&local, false).unwrap();
    assert_eq!(store.experiment_ids().unwrap().len(), 3, "all copied");
    let (list, _) = ok(&sb, &local, &["list"]);
    assert!(
        list.contains(&format!("baseline main: experiment {mine}\n")),
        "{list}"
    );
}

/// A team's PostgreSQL store, as a CI job pushes to it: the baseline is
/// made, then moved on, there too.
#[test]
fn push_to_a_team_store_carries_and_moves_the_baseline() {
    let Some(sb) = common::Sandbox::postgresql() else {
        return common::skip("push_to_a_team_store_carries_and_moves_the_baseline: no PostgreSQL");
    };
    let local = sb.path("local.db");
    let team = sb.store_arg();
    let first = experiment(&local, "nightly 1");
    save(&local, "main", first);
    let (out, _) = ok(&sb, &local, &["push", "--to", &team]);
    assert!(
        out.contains("baseline main: now points at it there"),
        "{out}"
    );
    let second = experiment(&local, "nightly 2");
    save(&local, "main", second);
    let (out, _) = ok(&sb, &local, &["push", "--to", &team]);
    assert!(out.contains("baseline main: moved on to it there"), "{out}");
    let there = pointed(&sb.store(), "main");
    assert_eq!(there.len(), 2, "{there:?}");
    let store = Store::open(&sb.store(), false).unwrap();
    assert_eq!(store.baseline("main").unwrap(), there[1]);
    assert_eq!(
        store.uid(there[1]).unwrap(),
        Store::open(&local, false).unwrap().uid(second).unwrap()
    );
}

/// Two hosts push a name to a team's PostgreSQL store at once: the push
/// whose copy finds the name made by the other between its read and its
/// write keeps the other's, says so, and still copies its experiment (a
/// unique-key error rolled the whole copy back). The other host is held
/// in its transaction here until the push waits on its row, so the race
/// is met every time.
#[test]
fn a_name_made_meanwhile_on_a_team_store_is_kept_and_the_push_goes_through() {
    let Some(sb) = common::Sandbox::postgresql() else {
        return common::skip("a_name_made_meanwhile_on_a_team_store_...: no PostgreSQL");
    };
    let local = sb.path("local.db");
    let mine = experiment(&local, "mine");
    save(&local, "main", mine);
    let other = experiment(&sb.store(), "the other host's");
    let pg = sb.pg.as_ref().unwrap();
    let mut other_host = postgres::Client::connect(&pg.url(), postgres::NoTls).unwrap();
    let mut tx = other_host.transaction().unwrap();
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('baseline:main', $1)",
        &[&other.to_string()],
    )
    .unwrap();

    let (out, err) = (sb.path("push.out"), sb.path("push.err"));
    let mut push = common::procs::KillOnDrop(
        std::process::Command::new(common::bin())
            .arg("--store")
            .arg(&local)
            .args(["push", "--to", &sb.store_arg()])
            .env("SYSDELTA_RUN_DIR", sb.run_dir())
            .env("SYSDELTA_STATE_DIR", sb.state_dir())
            .current_dir(sb.dir.path())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    // The push has read no name, and its insert waits on the other's.
    let waiting = "SELECT count(*) FROM pg_stat_activity \
                   WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO meta%'";
    // Not a timing: a bound on a hang (the push stuck somewhere else).
    let hang = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while pg.psql(waiting) == "0" {
        assert!(
            std::time::Instant::now() < hang,
            "the push never waited on the name"
        );
        if let Some(status) = push.0.try_wait().unwrap() {
            panic!(
                "the push ended ({status}) before it met the other host's name: {}",
                std::fs::read_to_string(&err).unwrap()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    tx.commit().unwrap();
    let status = push.0.wait().unwrap();
    let (out, err) = (
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&err).unwrap(),
    );
    assert!(status.success(), "{out}{err}");
    assert!(out.contains("experiment 1: stored as 2"), "{out}");
    assert!(
        err.contains(&format!(
            "warning: baseline main left as it is in {}, where it points at experiment {other}: \
             in {} it points at experiment {mine} (copied as 2)",
            Store::open(&sb.store(), false).unwrap().shown(),
            local.display()
        )),
        "{err}"
    );
    assert_eq!(
        pointed(&sb.store(), "main"),
        [other],
        "the other's, as made"
    );
}
