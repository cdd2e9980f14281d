//! What every boot of a session runs with, checked at `start` and again
//! at each step before anything runs: the recorded environment (nothing
//! that makes root's later processes load code from elsewhere) and the
//! directories it names (each PATH entry and the working directory, and
//! the latter's parent, writable by root or the user only). A step that
//! finds one changed fails its boot with the reason and runs nothing.

use std::path::Path;

/// Variables that make a program (a dynamic loader, a shell, an
/// interpreter) load code from where they say: root's later boots would
/// run it. Names ending in `_` are prefixes.
const REFUSED: &[&str] = &[
    "LD_",
    "BASH_ENV",
    "ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PERL5LIB",
    "PERLLIB",
    "PERL5OPT",
    "RUBYLIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "GCONV_PATH",
    "LOCPATH",
    crate::sys::trust::SHARED_VAR,
];

fn refused(name: &str) -> bool {
    REFUSED.iter().any(|r| {
        if r.ends_with('_') {
            name.starts_with(r)
        } else {
            name == *r
        }
    })
}

/// The problems of an environment `start` would record, one line each:
/// a refused variable, or a PATH entry that is not absolute or not
/// trusted ([`check_dir`]).
pub fn check_env(env: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (k, v) in env {
        if refused(k) {
            problems.push(format!(
                "the environment variable {k}: a kexec session re-applies its environment to root's later boots, and {k} makes programs load code from elsewhere; unset it to start"
            ));
        } else if k == "PATH" {
            if let Err(e) = check_path(v) {
                problems.push(e);
            }
        }
    }
    problems
}

/// Every PATH entry absolute and a directory only root (or the user)
/// can write. Err: the first that is not, one line.
pub fn check_path(path: &str) -> Result<(), String> {
    for e in path.split(':') {
        if !e.starts_with('/') {
            return Err(format!(
                "PATH entry '{e}' is not absolute: every boot of a kexec session runs as root with this PATH"
            ));
        }
        check_dir(Path::new(e)).map_err(|why| format!("PATH entry {why}"))?;
    }
    Ok(())
}

/// `dir` (followed if a link, as a PATH lookup does) is a directory that
/// root or the user owns and nobody else can write (not even a sticky
/// one: a planted file there would be run). Err: why not, one line.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    let m = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let f = crate::sys::trust::Facts::of(&m);
    let group_write = f.mode & 0o020 != 0 && !f.private_group;
    if !m.is_dir()
        || !crate::sys::trust::trusted_uids().contains(&f.uid)
        || f.mode & 0o002 != 0
        || group_write
    {
        return Err(format!(
            "{}: must be a directory owned by root (or you) and writable by nobody else (mode {:04o}, uid {})",
            dir.display(),
            f.mode & 0o7777,
            f.uid
        ));
    }
    Ok(())
}

/// The working directory every boot's runs start in: UTF-8, trusted as
/// [`check_dir`], and its parent at least as a state directory's is (a
/// sticky one such as /tmp will do: nobody else can rename it there).
pub fn check_cwd(cwd: &Path) -> Result<(), String> {
    let hint = "every boot's runs start there as root; start from another directory";
    if cwd.to_str().is_none() {
        return Err(format!(
            "the working directory {} is not UTF-8: {hint}",
            cwd.display()
        ));
    }
    check_dir(cwd).map_err(|e| format!("the working directory {e}: {hint}"))?;
    if let Some(parent) = cwd.parent() {
        let m = std::fs::metadata(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let f = crate::sys::trust::Facts::of(&m);
        if let Some(why) =
            crate::sys::trust::judge_dir(f, &crate::sys::trust::trusted_uids(), false)
        {
            return Err(format!(
                "the working directory's parent {} {why}: {hint}",
                parent.display()
            ));
        }
    }
    Ok(())
}

/// Before a step runs anything: its PATH and working directory are still
/// what `start` accepted. Err: why the boot fails, one line.
pub fn recheck(env: &[(String, String)], cwd: Option<&str>) -> Result<(), String> {
    if let Some((_, path)) = env.iter().find(|(k, _)| k == "PATH") {
        check_path(path)?;
    }
    if let Some(d) = cwd {
        check_cwd(Path::new(d))?;
    }
    Ok(())
}

/// The PATH `start` records: its entries that exist (one that does not
/// could be made later by whoever can write its parent).
pub fn existing_path(path: &str) -> String {
    path.split(':')
        .filter(|e| !e.starts_with('/') || Path::new(e).exists())
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn variables_that_load_code_are_refused_by_name() {
        let p = check_env(&vars(&[
            ("LD_PRELOAD", "/x.so"),
            ("BASH_ENV", "/x"),
            ("PYTHONPATH", "/x"),
            ("SYSDELTA_SHARED_DIRS", "/srv"),
            ("HOME", "/root"),
            ("LANG", "C"),
            ("ENVIRONMENT", "prod"),
        ]));
        assert_eq!(p.len(), 4, "{p:?}");
        for (line, var) in p.iter().zip([
            "LD_PRELOAD",
            "BASH_ENV",
            "PYTHONPATH",
            "SYSDELTA_SHARED_DIRS",
        ]) {
            assert!(line.contains(&format!("variable {var}:")), "{line}");
            assert!(!line.contains('\n'));
        }
    }

    #[test]
    fn path_entries_must_be_absolute_and_trusted() {
        assert!(check_path("/usr/bin:/bin").is_ok());
        assert!(check_path("/usr/bin::/bin")
            .unwrap_err()
            .contains("'' is not absolute"));
        assert!(check_path("bin:/bin")
            .unwrap_err()
            .contains("'bin' is not absolute"));
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let p = format!("/usr/bin:{}", open.display());
        let e = check_path(&p).unwrap_err();
        assert!(e.contains("writable by nobody else"), "{e}");
        // A step finds a PATH entry opened since start: its boot fails.
        let fine = d.path().join("fine");
        std::fs::create_dir(&fine).unwrap();
        let env = vars(&[("PATH", fine.to_str().unwrap())]);
        assert!(recheck(&env, None).is_ok());
        std::fs::set_permissions(&fine, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(recheck(&env, None).is_err());
        assert_eq!(
            existing_path(&format!("/usr/bin:{}/gone:rel", d.path().display())),
            "/usr/bin:rel"
        );
    }

    #[test]
    fn the_working_directory_and_its_parent_are_checked_again() {
        let d = tempfile::tempdir().unwrap();
        let cwd = d.path().join("w");
        std::fs::create_dir(&cwd).unwrap();
        assert!(recheck(&[], Some(cwd.to_str().unwrap())).is_ok());
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = recheck(&[], Some(cwd.to_str().unwrap())).unwrap_err();
        assert!(e.contains("parent"), "{e}");
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff"));
        assert!(check_cwd(odd).unwrap_err().contains("not UTF-8"));
    }
}
