//! The hook: a systemd oneshot unit that runs `sysdelta kexec step` at
//! every boot while a session lasts, installed by `start` and removed when
//! the session ends or is stopped. Its directory is the systemd unit
//! directory (`/etc/systemd/system`) on a machine; tests give another one,
//! whose units the test machine's init runs.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The unit's file name.
pub const UNIT: &str = "sysdelta-kexec.service";
/// Where `systemctl enable` would link it.
const WANTS: &str = "multi-user.target.wants";

/// The unit's text: `exe kexec step --state STATE`, restarted when it
/// fails (a killed step resumes from the journal, losing no run).
pub fn unit_text(exe: &Path, state: &Path) -> Result<String> {
    for p in [exe, state] {
        let s = p.to_str().unwrap_or("\u{0}");
        // systemd reads spaces, quotes, backslashes and % specially.
        if s.is_empty()
            || s.chars()
                .any(|c| c.is_whitespace() || "\"'\\%$\0".contains(c))
        {
            return Err(crate::error::bad(format!(
                "{}: a path the systemd unit cannot carry (space, quote, backslash, % or $)",
                p.display()
            )));
        }
    }
    Ok(format!(
        "# Installed by `sysdelta kexec start`; removed when the session ends\n\
         # (or by `sysdelta kexec stop`). Do not edit.\n\
         [Unit]\n\
         Description=sysdelta kexec session: the next boot's runs\n\
         After=local-fs.target network-online.target\n\
         # A step that keeps failing (a store out of reach, a run holding\n\
         # the machine) stops being restarted: `sysdelta kexec resume`.\n\
         StartLimitIntervalSec=600\n\
         StartLimitBurst=5\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         ExecStart={} kexec step --state {}\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        exe.display(),
        state.display()
    ))
}

/// Refuse a hook directory that is not a directory root (or this user)
/// owns and only its owner can write: a unit planted there runs as root.
pub fn check_dir(dir: &Path) -> Result<()> {
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| crate::error::bad(format!("--hook-dir {}: {e}", dir.display())))?;
    let me = nix::unistd::geteuid().as_raw();
    if !m.is_dir() || !(m.uid() == 0 || m.uid() == me) || m.mode() & 0o022 != 0 {
        return Err(crate::error::bad(format!(
            "--hook-dir {}: not a directory that only root can write (a symlink, another user's, or writable by others)",
            dir.display()
        )));
    }
    Ok(())
}

/// Install the unit (written beside, fsynced, renamed; never through a
/// symlink) and enable it as `systemctl enable` would.
pub fn install(dir: &Path, text: &str) -> Result<()> {
    check_dir(dir)?;
    let tmp = dir.join(format!(".{UNIT}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(UNIT))?;
    let wants = dir.join(WANTS);
    if std::fs::symlink_metadata(&wants).is_err() {
        std::fs::create_dir(&wants)?;
    }
    check_dir(&wants)?;
    let link = wants.join(UNIT);
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(Path::new("..").join(UNIT), &link)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// The state directory the unit installed in `dir` steps (what its
/// ExecStart names after `--state`); None when there is no unit (or it is
/// not one sysdelta wrote).
pub fn session_of(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join(UNIT)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .and_then(|l| l.rsplit_once(" kexec step --state "))
        .map(|(_, state)| PathBuf::from(state.trim()))
}

/// Whether `a` and `b` name the same state directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    if abs(a) == abs(b) {
        return true;
    }
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

/// Remove the unit and its link when the unit steps the session in
/// `state` (another session's is left as it is); true when one was
/// removed.
pub fn remove(dir: &Path, state: &Path) -> Result<bool> {
    let unit = dir.join(UNIT);
    let theirs = match session_of(dir) {
        Some(other) if !same_dir(&other, state) => Some(other.display().to_string()),
        Some(_) => None,
        // A unit of that name that sysdelta did not write is not ours.
        None if std::fs::symlink_metadata(&unit).is_ok() => Some("not sysdelta's".into()),
        None => None,
    };
    if let Some(other) = theirs {
        eprintln!(
            "sysdelta: {} steps another session ({other}): left in place",
            unit.display()
        );
        return Ok(false);
    }
    let mut found = false;
    for p in [dir.join(WANTS).join(UNIT), dir.join(UNIT)] {
        match std::fs::remove_file(&p) {
            Ok(()) => found = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(anyhow::anyhow!("removing {}: {e}", p.display())),
        }
    }
    // The wants directory goes when it was only ours.
    let _ = std::fs::remove_dir(dir.join(WANTS));
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(found)
}

/// The unit's path in `dir`.
pub fn unit_path(dir: &Path) -> PathBuf {
    dir.join(UNIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_the_step_and_is_removed_whole() {
        let d = tempfile::tempdir().unwrap();
        let text = unit_text(Path::new("/usr/bin/sysdelta"), Path::new("/var/lib/s")).unwrap();
        assert!(text.contains("ExecStart=/usr/bin/sysdelta kexec step --state /var/lib/s\n"));
        // A permanent error is not restarted forever.
        assert!(text.contains("\nStartLimitIntervalSec=600\nStartLimitBurst=5\n"));
        install(d.path(), &text).unwrap();
        assert_eq!(std::fs::read_to_string(unit_path(d.path())).unwrap(), text);
        assert!(std::fs::read_to_string(d.path().join(WANTS).join(UNIT)).is_ok());
        assert_eq!(session_of(d.path()).unwrap(), Path::new("/var/lib/s"));
        // Another session's stop or end leaves this one's unit alone.
        assert!(!remove(d.path(), Path::new("/var/lib/other")).unwrap());
        assert_eq!(std::fs::read_to_string(unit_path(d.path())).unwrap(), text);
        assert!(remove(d.path(), Path::new("/var/lib/s")).unwrap());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        assert!(!remove(d.path(), Path::new("/var/lib/s")).unwrap());
        // Nor is a unit of that name that sysdelta did not write removed.
        std::fs::write(unit_path(d.path()), "[Service]\nExecStart=/bin/true\n").unwrap();
        assert!(!remove(d.path(), Path::new("/var/lib/s")).unwrap());
        assert!(unit_path(d.path()).exists());
    }

    #[test]
    fn paths_systemd_would_split_are_refused() {
        assert!(unit_text(Path::new("/a b/sysdelta"), Path::new("/s")).is_err());
        assert!(unit_text(Path::new("/a/sysdelta"), Path::new("/s%n")).is_err());
    }
}
