//! `sysdelta bisect` on generated userspace repositories: about 30
//! commits whose build writes a script printing a metric with seeded noise
//! (sd 2%) in every run, one commit adding 5%. It must name that commit,
//! say "no regression" where there is none, skip a commit that does not
//! build, and finish after a SIGKILL without repeating a finished step.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{git, note, Sandbox};

/// Commits after the good one.
const COMMITS: usize = 30;

/// The build: writes run.sh, which prints `value: V` with V = 100 x shift
/// x (1 + 0.02 z), z normal from awk's rand seeded by the repository's
/// seed, the commit and a run counter kept in the build directory.
const BUILD: &str = r#". ./params
[ "$broken" = 1 ] && { echo "does not compile" >&2; exit 1; }
cat > run.sh <<EOS
exec awk -v shift=$shift -v seed=$seed -v idx=$idx 'BEGIN { f = "counter"; c = 0; if ((getline c < f) <= 0) c = 0; close(f); print c + 1 > f; close(f); srand(seed * 100003 + idx * 1009 + c); u1 = rand(); u2 = rand(); if (u1 < 1e-12) u1 = 1e-12; z = sqrt(-2 * log(u1)) * cos(6.283185307 * u2); printf "value: %.4f\n", 100 * shift * (1 + 0.02 * z) }'
EOS
"#;

const PLAN: &str = r#"[[workload]]
name = "w"
command = "sh run.sh"
shell = "none"
metrics = [{ name = "value", regex = 'value: (?P<value>[0-9.]+)' }]
"#;

/// A repository of 1 + COMMITS commits (returned oldest first): the shift
/// starts at commit `culprit` (None: never), commit `broken` fails to
/// build.
fn repo(dir: &Path, culprit: Option<usize>, seed: u64, broken: Option<usize>) -> Vec<String> {
    let shift = |i: usize| match culprit {
        Some(c) if i >= c => "1.05",
        _ => "1.00",
    };
    repo_with(dir, shift, seed, broken)
}

/// As [`repo`], commit i's shift given by `shift`.
fn repo_with(
    dir: &Path,
    shift: impl Fn(usize) -> &'static str,
    seed: u64,
    broken: Option<usize>,
) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "t"]);
    std::fs::write(dir.join("build.sh"), BUILD).unwrap();
    for i in 0..=COMMITS {
        let shift = shift(i);
        let b = u8::from(broken == Some(i));
        let params = format!("idx={i}\nshift={shift}\nseed={seed}\nbroken={b}\n");
        std::fs::write(dir.join("params"), params).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", &format!("commit {i}")]);
    }
    git(dir, &["rev-list", "--reverse", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The bisect command line over `repo` (good: its first commit, bad: HEAD).
fn bisect(sb: &Sandbox, repo: &Path, seed: u64, extra: &[&str]) -> Command {
    bisect_cached(sb, repo, seed, &sb.path("cache"), extra)
}

/// As [`bisect`], its cache at `cache`.
fn bisect_cached(sb: &Sandbox, repo: &Path, seed: u64, cache: &Path, extra: &[&str]) -> Command {
    let plan = sb.write("plan.toml", PLAN);
    let mut c = sb.command();
    c.arg("bisect")
        .arg("--repo")
        .arg(repo)
        .args([
            "--good",
            "HEAD~30",
            "--bad",
            "HEAD",
            "--build",
            "sh build.sh",
        ])
        .args(["--metric", "w/value", "--plan"])
        .arg(plan)
        .args(["--seed", &seed.to_string(), "--cache"])
        .arg(cache)
        .args(extra);
    c
}

fn run(c: &mut Command) -> (Output, String) {
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bisect failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// The commit the answer names (12 hex digits), if any.
fn named(text: &str) -> Option<String> {
    let rest = text.split("first bad commit ").nth(1)?;
    Some(rest.split_whitespace().next()?.to_string())
}

fn runs_used(text: &str) -> usize {
    let rest = text.split("runs used: ").nth(1).expect(text);
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// One seeded case: (named the culprit, runs used).
fn case(seed: u64, extra: &[&str]) -> (bool, usize) {
    let sb = Sandbox::sqlite();
    let culprit = 2 + (seed as usize * 7) % (COMMITS - 2);
    let commits = repo(&sb.path("repo"), Some(culprit), seed, None);
    let (_, text) = run(&mut bisect(&sb, &sb.path("repo"), seed, extra));
    let right = named(&text).as_deref() == Some(&commits[culprit][..12]);
    (right, runs_used(&text))
}

/// Ten seeds, two at a time: how many named the culprit, and the runs.
fn sweep(extra: &[&str]) -> (usize, usize) {
    let seeds: Vec<u64> = (1..=10).collect();
    let results: Vec<(bool, usize)> = std::thread::scope(|s| {
        let halves: Vec<_> = seeds
            .chunks(5)
            .map(|chunk| s.spawn(move || chunk.iter().map(|&k| case(k, extra)).collect::<Vec<_>>()))
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let right = results.iter().filter(|r| r.0).count();
    (right, results.iter().map(|r| r.1).sum())
}

#[test]
fn names_the_commit_that_added_5_percent_and_compares_with_fixed_runs() {
    let (right, runs) = sweep(&[]);
    note(format!(
        "bisect adaptive: named the culprit in {right} of 10, {runs} runs in all"
    ));
    assert!(right >= 9, "named the culprit in {right} of 10");
    // The fixed-runs bisection with the fewest runs a step that is as
    // accurate (the list stops at the first that is).
    for n in [8, 16, 32] {
        let (fixed_right, fixed_runs) = sweep(&["--fixed-runs", &n.to_string()]);
        note(format!(
            "bisect --fixed-runs {n}: named the culprit in {fixed_right} of 10, {fixed_runs} runs in all (adaptive: {runs})"
        ));
        if fixed_right >= 9 {
            break;
        }
    }
}

#[test]
fn says_no_regression_when_good_and_bad_do_not_differ() {
    let sb = Sandbox::sqlite();
    repo(&sb.path("repo"), None, 3, None);
    let (_, text) = run(&mut bisect(&sb, &sb.path("repo"), 3, &[]));
    assert!(
        text.contains("no regression between good and bad"),
        "{text}"
    );
    assert!(named(&text).is_none(), "{text}");
}

#[test]
fn says_when_the_change_is_spread_over_several_commits() {
    let sb = Sandbox::sqlite();
    // +2.5% at commit 10 and again at commit 20: the first midpoint (15)
    // sits halfway.
    let shift = |i: usize| match i {
        0..=9 => "1.00",
        10..=19 => "1.025",
        _ => "1.05",
    };
    repo_with(&sb.path("repo"), shift, 6, None);
    let (_, text) = run(&mut bisect(&sb, &sb.path("repo"), 6, &[]));
    assert!(
        text.contains("the change is spread over several commits"),
        "{text}"
    );
    assert!(named(&text).is_none(), "{text}");
}

#[test]
fn a_config_template_makes_each_commits_config() {
    let sb = Sandbox::sqlite();
    let commits = repo(&sb.path("repo"), Some(12), 7, None);
    // The setup fails (and so every run) unless {dir} holds {commit}.
    let template = sb.write(
        "config.toml",
        r#"[[config]]
name = "{name}"
workdir = "{dir}"
setup = 'test "$(git -C {dir} rev-parse HEAD)" = {commit}'
"#,
    );
    let t = template.to_str().unwrap();
    let (_, text) = run(&mut bisect(
        &sb,
        &sb.path("repo"),
        7,
        &["--config-template", t],
    ));
    assert_eq!(named(&text).as_deref(), Some(&commits[12][..12]), "{text}");
}

#[test]
fn skips_a_commit_that_does_not_build() {
    let sb = Sandbox::sqlite();
    // Commit 15 is the first midpoint: it does not build.
    let commits = repo(&sb.path("repo"), Some(9), 4, Some(15));
    let (out, text) = run(&mut bisect(&sb, &sb.path("repo"), 4, &[]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{} does not build, skipped", &commits[15][..12])),
        "{err}"
    );
    assert!(
        text.contains(&format!("skipped (build failed): {}", &commits[15][..12])),
        "{text}"
    );
    assert_eq!(named(&text).as_deref(), Some(&commits[9][..12]), "{text}");
}

/// The bisection's experiments in the store: (id, label, status, runs).
fn experiments(store: &Path) -> Vec<(i64, String, String, i64)> {
    let c =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut st = c
        .prepare(
            "SELECT e.id, e.label, e.status, (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id)
             FROM experiments e WHERE e.label LIKE 'bisect %' ORDER BY e.id",
        )
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Kills the child on drop, whatever the test's end.
struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn resumes_after_sigkill_without_repeating_a_finished_step() {
    let sb = Sandbox::sqlite();
    let commits = repo(&sb.path("repo"), Some(21), 5, None);
    let mut c = bisect(&sb, &sb.path("repo"), 5, &[]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Killed(c.spawn().unwrap());
    // Kill once three experiments are complete and a fourth has begun.
    let store = sb.store();
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let done = store.exists() && experiments(&store).len() >= 4;
        if done || start.elapsed() > Duration::from_secs(120) {
            break;
        }
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "bisect ended before the kill"
        );
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let before: Vec<_> = experiments(&store)
        .into_iter()
        .filter(|e| e.2 == "complete")
        .collect();
    assert!(before.len() >= 3, "{before:?}");
    let id = before[0].1.split_whitespace().nth(1).unwrap().to_string();
    let out = sb.run(&["bisect", "--resume", &id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(named(&text).as_deref(), Some(&commits[21][..12]), "{text}");
    let after = experiments(&store);
    // Every label once, and each experiment complete before the kill
    // unchanged: nothing finished ran again.
    let mut labels: Vec<&String> = after.iter().map(|e| &e.1).collect();
    labels.dedup();
    assert_eq!(labels.len(), after.len(), "{after:?}");
    for e in &before {
        assert!(after.contains(e), "{e:?} changed: {after:?}");
    }
    // The answer counts every stored run of the bisection once.
    let stored: i64 = after.iter().map(|e| e.3).sum();
    assert_eq!(runs_used(&text) as i64, stored, "{text}");
    // And the same seed uninterrupted names the same commit.
    let again = Sandbox::sqlite();
    let fresh: PathBuf = sb.path("repo");
    let (_, direct) = run(&mut bisect(&again, &fresh, 5, &[]));
    assert_eq!(named(&direct), named(&text), "{direct}\n{text}");
}

#[test]
fn refuses_bad_input_in_one_line() {
    let sb = Sandbox::sqlite();
    repo(&sb.path("repo"), None, 1, None);
    let out = sb.run(&[
        "bisect",
        "--repo",
        sb.path("repo").to_str().unwrap(),
        "--good",
        "nope",
        "--bad",
        "HEAD",
        "--build",
        "true",
        "--metric",
        "w/value",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--good 'nope'"), "{err}");
    assert!(!sb.store_exists(), "a refused bisect stores nothing");
}

#[test]
fn a_relative_cache_is_made_absolute_and_private() {
    let sb = Sandbox::sqlite();
    let commits = repo(&sb.path("repo"), Some(12), 6, None);
    // Run in the sandbox, so "rel" names sandbox/rel: checkouts were once
    // cloned into rel/<id>/rel/<id>/<commit> from inside it.
    let mut c = bisect_cached(&sb, &sb.path("repo"), 6, Path::new("rel"), &[]);
    c.current_dir(sb.dir.path());
    let (_, text) = run(&mut c);
    assert_eq!(named(&text).as_deref(), Some(&commits[12][..12]), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let rel = sb.path("rel");
    let mode = std::fs::metadata(&rel).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the cache is private");
    // The stored parameters hold the absolute cache (a resume from
    // elsewhere finds it).
    let c = rusqlite::Connection::open(sb.store()).unwrap();
    let plan: String = c
        .query_row(
            "SELECT plan_text FROM experiments ORDER BY id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let abs = rel.canonicalize().unwrap();
    assert!(
        plan.lines().next().unwrap().contains(abs.to_str().unwrap()),
        "{plan}"
    );
}

#[test]
fn refuses_a_cache_another_user_owns() {
    if !common::is_root() {
        return common::skip("refuses_a_cache_another_user_owns: needs root to chown");
    }
    let sb = Sandbox::sqlite();
    repo(&sb.path("repo"), Some(12), 7, None);
    // A cache an attacker made (and could fill with status=ok and a
    // checkout whose programs would run as us).
    let cache = sb.path("planted");
    std::fs::create_dir(&cache).unwrap();
    std::os::unix::fs::lchown(&cache, Some(65534), Some(65534)).unwrap();
    let mut c = bisect_cached(&sb, &sb.path("repo"), 7, &cache, &[]);
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a directory of this user's"), "{err}");
    assert!(!sb.store_exists(), "a refused bisect stores nothing");
}

#[test]
fn a_stored_round_with_another_plan_is_not_run() {
    let sb = Sandbox::sqlite();
    repo(&sb.path("repo"), Some(12), 8, None);
    run(&mut bisect(&sb, &sb.path("repo"), 8, &[]));
    let store = sb.store();
    let all = experiments(&store);
    let id = all[0].1.split_whitespace().nth(1).unwrap().to_string();
    // Someone who can write the store rewrites a later round's plan (its
    // commands would run as us) and marks it interrupted, to be finished.
    let c = rusqlite::Connection::open(&store).unwrap();
    c.execute(
        "UPDATE experiments SET status = 'interrupted', plan_text = plan_text || '\n# planted' WHERE id = ?1",
        [all[1].0],
    )
    .unwrap();
    drop(c);
    let out = sb.run(&["bisect", "--resume", &id]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("holds another plan"), "{err}");
    assert_eq!(experiments(&store).len(), all.len(), "nothing new was run");
}

#[test]
fn resuming_from_a_team_store_needs_trust_stored_plan() {
    let Some(sb) = Sandbox::postgresql() else {
        return common::skip("resuming_from_a_team_store_needs_trust_stored_plan: no PostgreSQL");
    };
    let commits = repo(&sb.path("repo"), Some(12), 9, None);
    run(&mut bisect(&sb, &sb.path("repo"), 9, &[]));
    let label: String = {
        let out = sb.run(&["list", "--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let s = v.to_string();
        let at = s.find("bisect ").expect(&s);
        s[at..].split_whitespace().nth(1).unwrap().to_string()
    };
    // Any writer of the team store could have written the build command.
    let out = sb.run(&["bisect", "--resume", &label]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("build: sh build.sh"), "shown first: {err}");
    assert!(err.contains("--trust-stored-plan"), "{err}");
    let out = sb.run(&["bisect", "--resume", &label, "--trust-stored-plan"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(named(&text).as_deref(), Some(&commits[12][..12]), "{text}");
}
