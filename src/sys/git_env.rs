//! git run by sysdelta sees none of the caller's `GIT_*` variables: with
//! `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`,
//! `GIT_CONFIG_*` and the rest inherited, a `git -C repo` call would read
//! or write another repository than the one named (or run its hooks).

use std::process::Command;

/// Remove every `GIT_*` variable of this process from `cmd`'s environment.
pub fn clean(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
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
        // Only variables of this process can leak; set one for the test
        // and one that looks alike but is not git's.
        std::env::set_var("GIT_SYSDELTA_TEST_DIR", "/nowhere");
        let mut cmd = Command::new("env");
        clean(&mut cmd);
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(removed.iter().any(|k| k == "GIT_SYSDELTA_TEST_DIR"));
        assert!(removed.iter().all(|k| k.starts_with("GIT_")));
    }
}
