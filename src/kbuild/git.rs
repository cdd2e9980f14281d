//! The git commands a kernel build needs, run without the caller's
//! `GIT_*` variables (`sys::git_env`), so that a `GIT_DIR` or
//! `GIT_WORK_TREE` cannot point them elsewhere.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::Error;

/// `git -C dir ARGS`: its trimmed stdout, or one line with git's stderr.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, Error> {
    git_in(dir, args, None)
}

/// [`git`] with `input` on its stdin (a patch for `git apply -`).
pub fn git_in(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Result<String, Error> {
    let mut cmd = Command::new("git");
    crate::sys::git_env::clean(&mut cmd);
    let mut child = cmd
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::failed(format!("cannot run git: {e}")))?;
    let out = feed(&mut child, input)
        .map_err(|e| Error::failed(format!("git {}: {e}", args.join(" "))))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(Error::failed(format!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            last.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Write `input` to the child's stdin (from a thread: git may answer
/// before it has read everything) and wait for its output.
fn feed(
    child: &mut std::process::Child,
    input: Option<&[u8]>,
) -> std::io::Result<std::process::Output> {
    use std::io::Write;
    let stdin = child.stdin.take();
    let wrote = std::thread::scope(|s| {
        let writer = s.spawn(move || match (stdin, input) {
            // A child that stops reading (and fails) closes the pipe:
            // its exit status says what went wrong, not EPIPE.
            (Some(mut w), Some(bytes)) => match w.write_all(bytes) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r,
            },
            _ => Ok(()),
        });
        let out = wait(child);
        (writer.join().expect("stdin writer"), out)
    });
    wrote.0?;
    wrote.1
}

/// `wait_with_output` for a borrowed child.
fn wait(child: &mut std::process::Child) -> std::io::Result<std::process::Output> {
    use std::io::Read;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut err = child.stderr.take();
    let errs = std::thread::scope(|s| {
        let h = s.spawn(|| err.as_mut().map_or(Ok(0), |e| e.read_to_end(&mut stderr)));
        let o = child
            .stdout
            .take()
            .map_or(Ok(0), |mut o| o.read_to_end(&mut stdout));
        (h.join().expect("stderr reader"), o)
    });
    errs.0?;
    errs.1?;
    Ok(std::process::Output {
        status: child.wait()?,
        stdout,
        stderr,
    })
}

/// The full commit id `reference` (a tag, branch or commit) names in the
/// work tree `tree`.
pub fn resolve_ref(tree: &Path, reference: &str) -> Result<String, Error> {
    if reference.starts_with('-') || reference.is_empty() {
        return Err(Error::bad(format!("'{reference}' is not a ref")));
    }
    git(
        tree,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{reference}^{{commit}}"),
        ],
    )
    .map_err(|_| {
        Error::bad(format!(
            "'{reference}' names no commit in {}",
            tree.display()
        ))
    })
}

/// Git's blob id of some bytes (the same id `git hash-object` prints for
/// a file holding them): the patches' and the kconfig's identity.
pub fn hash_bytes(bytes: &[u8]) -> Result<String, Error> {
    let mut cmd = Command::new("git");
    crate::sys::git_env::clean(&mut cmd);
    let mut child = cmd
        .args(["hash-object", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::failed(format!("cannot run git: {e}")))?;
    let out = feed(&mut child, Some(bytes))
        .map_err(|e| Error::failed(format!("git hash-object: {e}")))?;
    blob_id(&out)
}

/// Git's blob id of some text (the build identity's key).
pub fn hash_text(text: &str) -> Result<String, Error> {
    hash_bytes(text.as_bytes())
}

/// hash-object's answer, checked: a failed or odd run must not give an
/// empty key, which would name `builds/` itself as a build's directory.
fn blob_id(out: &std::process::Output) -> Result<String, Error> {
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !is_blob_id(&id) {
        return Err(Error::failed(format!(
            "git hash-object failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(id)
}

/// 40 lowercase hex digits (or 64, in a SHA-256 git).
fn is_blob_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64)
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// For unit tests: run `git -C dir ARGS` as a throwaway committer and
/// assert it succeeded.
#[cfg(test)]
pub(crate) fn test_git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
        .args(args)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_id_is_checked_not_trusted() {
        let ok = hash_text("x").unwrap();
        assert_eq!(ok.len(), 40);
        let run = |sh: &str| Command::new("sh").args(["-c", sh]).output().unwrap();
        assert_eq!(blob_id(&run(&format!("echo {ok}"))).unwrap(), ok);
        // An empty answer, a failed run or stray text is an error, never a key.
        assert!(blob_id(&run("true")).is_err());
        assert!(blob_id(&run(&format!("echo {ok}; exit 1"))).is_err());
        assert!(blob_id(&run("echo 'fatal: no'")).is_err());
    }
}
