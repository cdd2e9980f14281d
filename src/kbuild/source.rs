//! The source a build compiles: a clone of the user's tree in the cache
//! (`git clone --shared --no-checkout`: it reads the tree's objects and
//! writes nothing there), checked out at the build's commit with its
//! patches applied. The user's tree and its work files are never touched.
//!
//! One checkout per tree serves every ref, and one object directory per
//! (tree, kconfig) serves every ref (`make O=`). That is correct under
//! make's mtime rule: `git checkout` rewrites only the files that differ
//! between the two commits and gives them the current time, newer than
//! every object built before, so exactly what depends on them is rebuilt,
//! whether the new commit is later or earlier than the last one built;
//! files that did not change keep their old times and their objects stay.
//! The same holds for a patched file: restored by the next checkout, it
//! is newer again than its object.

use std::path::Path;

use super::git::{git, git_in};
use super::make::Stop;
use crate::error::Error;

/// Make `src` a no-checkout clone of `tree` if it is not one yet. The
/// clone is made beside it and renamed into place, so a clone cut short
/// (SIGKILL, full disk) is never taken for a finished one. The caller
/// holds the tree's lock.
pub fn ensure_clone(tree: &Path, src: &Path) -> Result<(), Error> {
    if src.join(".git").is_dir() {
        return Ok(());
    }
    let parent = src.parent().expect("the cache has a parent");
    let mut partial = src.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    let _ = std::fs::remove_dir_all(&partial);
    let tree_s = tree.to_string_lossy();
    let partial_s = partial.to_string_lossy();
    git(
        parent,
        &[
            "clone",
            "-q",
            "--shared",
            "--no-checkout",
            &tree_s,
            &partial_s,
        ],
    )?;
    // A src without .git (left by an older sysdelta) is replaced.
    let _ = std::fs::remove_dir_all(src);
    std::fs::rename(&partial, src).map_err(|e| Error::failed(format!("{}: {e}", src.display())))
}

/// Check out `commit` (detached) in `src`, dropping what an earlier
/// build's patches changed or added, then apply the patches (`names`
/// for messages, `patches` their contents as hashed) in order.
/// Err: the one line that failed; only a patch that does not apply is
/// the build's failure (a stale lock or a full disk is not the commit's).
pub fn checkout(
    tree: &Path,
    src: &Path,
    commit: &str,
    names: &[std::path::PathBuf],
    patches: &[Vec<u8>],
) -> Result<(), Stop> {
    let other = |e: Error| Stop::Other(e.to_string());
    // The tree's new commits are reached through the clone's alternates,
    // but its refs are not: fetch the one commit if the clone lacks it.
    if git(src, &["cat-file", "-e", &format!("{commit}^{{commit}}")]).is_err() {
        let tree_s = tree.to_string_lossy();
        git(src, &["fetch", "-q", &tree_s, commit]).map_err(other)?;
    }
    git(
        src,
        &[
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "-q",
            "-f",
            "--detach",
            commit,
        ],
    )
    .map_err(other)?;
    git(src, &["clean", "-q", "-f", "-d", "-x"]).map_err(other)?;
    for (p, bytes) in names.iter().zip(patches) {
        git_in(src, &["apply", "--whitespace=nowarn", "-"], Some(bytes))
            .map_err(|e| Stop::Failed(format!("patch {} does not apply: {e}", p.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::kbuild::git::test_git as run;

    #[test]
    fn patches_apply_from_the_bytes_given_and_only_they_fail_the_build() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        run(&tree, &["init", "-q", "-b", "main"]);
        std::fs::write(tree.join("f"), "one\n").unwrap();
        run(&tree, &["add", "f"]);
        run(&tree, &["commit", "-q", "-m", "one"]);
        let commit = git(&tree, &["rev-parse", "HEAD"]).unwrap();
        // A clone cut short earlier is replaced, not taken for a clone.
        let src = t.path().join("src");
        std::fs::create_dir_all(t.path().join("src.partial/junk")).unwrap();
        ensure_clone(&tree, &src).unwrap();
        assert!(src.join(".git").is_dir() && !t.path().join("src.partial").exists());
        let patch = b"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-one\n+two\n".to_vec();
        // The file named may say anything by now: the bytes are applied.
        let name = t.path().join("gone.patch");
        checkout(&tree, &src, &commit, std::slice::from_ref(&name), &[patch]).unwrap();
        assert_eq!(std::fs::read_to_string(src.join("f")).unwrap(), "two\n");
        // A patch that does not apply is the build's failure...
        let bad = b"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-zzz\n+two\n".to_vec();
        let e = checkout(&tree, &src, &commit, &[name], &[bad]).unwrap_err();
        assert!(
            matches!(&e, Stop::Failed(m) if m.contains("gone.patch does not apply")),
            "{e:?}"
        );
        // ...a checkout git cannot do (here: a stale index.lock) is not.
        std::fs::write(src.join(".git/index.lock"), "").unwrap();
        let e = checkout(&tree, &src, &commit, &[], &[]).unwrap_err();
        assert!(matches!(e, Stop::Other(_)), "{e:?}");
    }
}
