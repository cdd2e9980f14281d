//! git run by sysdelta sees none of the caller's `GIT_*` variables: with
//! `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`,
//! `GIT_CONFIG_*` and the rest inherited, a `git -C repo` call would read
//! or write another repository than the one named (or run its hooks).

use std::process::Command;

/// Remove every `GIT_*` variable of this process from `cmd`'s environment.
pub fn clean(cmd: &mut Command) -> &mut Command {
    remove_git_vars(cmd, std::env::vars_os().map(|(k, _)| k))
}

/// Remove from `cmd` those of `names` that are git's (`GIT_*`): apart from
/// [`clean`] so a test can hand it names without setting them in its own
/// environment (which races with the other test threads reading it).
fn remove_git_vars(
    cmd: &mut Command,
    names: impl Iterator<Item = std::ffi::OsString>,
) -> &mut Command {
    for k in names {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(&k);
        }
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_every_git_variable_it_inherits() {
        // Only variables of this process can leak: a git one, and two that
        // look alike but are not git's.
        let names = ["GIT_SYSDELTA_TEST_DIR", "GITX", "MY_GIT_DIR"].map(std::ffi::OsString::from);
        let mut cmd = Command::new("env");
        remove_git_vars(&mut cmd, names.into_iter());
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(removed.iter().any(|k| k == "GIT_SYSDELTA_TEST_DIR"));
        assert!(removed.iter().all(|k| k.starts_with("GIT_")));
    }
}
