//! The README's CI recipe, its shell version run as written (taken from
//! between its marker comments) over a small git repository, one commit at
//! a time, as a CI job would: it passes on the fast commits and fails,
//! naming the regression, on the slow one.

#[macro_use]
#[allow(unused_macros)]
mod common;

use std::path::Path;
use std::process::{Command, Output};

/// The ```sh block between `<!-- ci-recipe:shell -->` and its end marker.
fn recipe() -> String {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("<!-- ci-recipe:shell -->")
        .expect("the README's CI recipe marker");
    let end = readme
        .find("<!-- /ci-recipe:shell -->")
        .expect("its end marker");
    let block = &readme[start..end];
    let body = &block[block.find("```sh\n").expect("a sh block") + 6..];
    body[..body.find("```").unwrap()].to_string()
}

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=ci", "-c", "user.email=ci@example.invalid"])
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        common::stderr(&out)
    );
}

/// Commit a `bench.sh` that sleeps `secs`, then run the recipe in the
/// repository, with `sysdelta` on PATH.
fn commit_and_job(repo: &Path, bin_dir: &Path, run_dir: &Path, secs: &str, n: usize) -> Output {
    let bench = repo.join("bench.sh");
    std::fs::write(&bench, format!("#!/bin/sh\n# commit {n}\nsleep {secs}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&bench, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(repo, &["add", "bench.sh"]);
    git(repo, &["commit", "-q", "-m", &format!("commit {n}")]);
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .arg("-c")
        .arg(recipe())
        .current_dir(repo)
        .env("PATH", path)
        .env_remove("SYSDELTA_STORE")
        .env("SYSDELTA_RUN_DIR", run_dir)
        .output()
        .unwrap()
}

#[test]
fn the_readme_ci_job_passes_fast_commits_and_fails_the_slow_one() {
    if Command::new("git").arg("--version").output().is_err() {
        common::skip("git is not installed");
        return;
    }
    let sb = common::Sandbox::sqlite();
    let (repo, bin_dir) = (sb.path("repo"), sb.path("bin"));
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(common::bin(), bin_dir.join("sysdelta")).unwrap();
    git(&repo, &["init", "-q"]);
    for n in 1..=4 {
        let out = commit_and_job(&repo, &bin_dir, &sb.run_dir(), "0.01", n);
        let text = common::stdout(&out);
        assert!(
            out.status.success(),
            "fast commit {n} failed the job:\n{text}\n{}",
            common::stderr(&out)
        );
        assert!(text.contains("history of bench/wall"), "{text}");
    }
    // The fourth was judged against the three before it.
    let out = commit_and_job(&repo, &bin_dir, &sb.run_dir(), "0.03", 5);
    let text = common::stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the slow commit must fail the job:\n{text}\n{}",
        common::stderr(&out)
    );
    assert!(text.contains("REGRESSED at the newest"), "{text}");
    assert!(
        common::stderr(&out).contains("regressed at the newest"),
        "{}",
        common::stderr(&out)
    );
    // The store was kept where the recipe says, inside the checkout.
    assert!(repo.join(".sysdelta-ci/sysdelta.db").exists());
}
