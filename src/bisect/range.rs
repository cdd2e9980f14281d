//! The commits a bisection walks: refs resolved once to commit ids, and
//! the first-parent line from good to bad (`git rev-list`), as
//! `git bisect --first-parent` walks it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::error::bad;

/// `git -C repo ARGS`: its stdout, or the one line of its stderr. No
/// `GIT_*` variable of ours reaches it: `repo` is the repository used.
pub fn git(repo: &Path, args: &[&str]) -> std::result::Result<String, String> {
    let out = crate::sys::git_env::clean(&mut Command::new("git"))
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(err.lines().next().unwrap_or("git failed").to_string())
    }
}

/// Refuse a repository this user does not own: bisect runs its build
/// command in checkouts of it, and another user's repository names code
/// that would run as us.
pub fn check_owned(repo: &Path) -> Result<()> {
    let meta =
        std::fs::metadata(repo).map_err(|e| bad(format!("--repo {}: {e}", repo.display())))?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(bad(format!(
            "--repo {}: owned by uid {}, not by you (uid {me}); bisect builds and runs its commits",
            repo.display(),
            meta.uid()
        )));
    }
    git(repo, &["rev-parse", "--git-dir"]).map_err(|e| {
        bad(format!(
            "--repo {}: not a git repository ({e})",
            repo.display()
        ))
    })?;
    Ok(())
}

/// A ref's commit id (full hex).
pub fn resolve(repo: &Path, what: &str, flag: &str) -> Result<String> {
    git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{what}^{{commit}}"),
        ],
    )
    .ok()
    .filter(|s| !s.is_empty())
    .ok_or_else(|| bad(format!("{flag} '{what}': no such commit in the repository")))
}

/// good, then each first-parent commit up to bad: `[good, ..., bad]`.
/// Bad input when good is not a first-parent ancestor of bad.
pub fn commits(repo: &Path, good: &str, bad_id: &str) -> Result<Vec<String>> {
    let list = git(
        repo,
        &[
            "rev-list",
            "--first-parent",
            "--reverse",
            &format!("{good}..{bad_id}"),
        ],
    )
    .map_err(|e| bad(format!("git rev-list {good}..{bad_id}: {e}")))?;
    let mut out = vec![good.to_string()];
    out.extend(list.lines().map(str::to_string));
    if out.len() < 2 || out.last().map(String::as_str) != Some(bad_id) {
        return Err(bad(format!(
            "--good {}: not an ancestor of --bad {} on its first-parent line",
            short(good),
            short(bad_id)
        )));
    }
    // The first commit after good must have good as its first parent;
    // otherwise good lies on a merged side branch.
    let parent = git(repo, &["rev-parse", &format!("{}^1", out[1])]).unwrap_or_default();
    if parent != good {
        return Err(bad(format!(
            "--good {}: not on --bad {}'s first-parent line",
            short(good),
            short(bad_id)
        )));
    }
    Ok(out)
}

/// A commit's subject line, for the answer.
pub fn subject(repo: &Path, commit: &str) -> String {
    git(repo, &["log", "-1", "--format=%s", commit]).unwrap_or_default()
}

/// The 12-digit form shown.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}
