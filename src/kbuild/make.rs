//! Running the kernel's make (and its helper scripts) with every line of
//! output in the build log, and the log's last error line when it fails.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why a build step stopped: the commit's fault, or not.
#[derive(Debug, PartialEq)]
pub enum Stop {
    /// make, a patch or the config failed: the commit does not build.
    Failed(String),
    /// A signal killed make (Ctrl-C), or git, the cache or the disk
    /// failed: says nothing about the commit, so a bisection must not
    /// remember it as unbuildable.
    Other(String),
}

/// A plain message from a step is a build failure.
impl From<String> for Stop {
    fn from(s: String) -> Stop {
        Stop::Failed(s)
    }
}

/// What make and its scripts may see of our environment: PATH and HOME
/// only (ccache's default directory). ARCH, CROSS_COMPILE, KCFLAGS,
/// MAKEFLAGS, KCONFIG_CONFIG, CC and the like would change what is built
/// without changing the build's identity. C messages keep `last_error`'s
/// patterns matching.
const KEEP_ENV: &[&str] = &["PATH", "HOME"];

/// One build's make invocation settings.
pub struct Make {
    /// The checked-out source (`make -C`).
    pub src: PathBuf,
    /// The object directory (`O=`).
    pub obj: PathBuf,
    /// The build log every command appends to.
    pub log: PathBuf,
    /// `-j`: the host's online CPUs.
    pub jobs: usize,
    /// `CC=ccache gcc` when ccache is on PATH.
    pub ccache: bool,
}

impl Make {
    /// Run `program args` with its output appended to the log. Err: a
    /// line naming the command and the log's last error line.
    pub fn run(&self, program: &Path, args: &[String]) -> Result<(), Stop> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| Stop::Other(format!("{}: {e}", self.log.display())))?;
        let err = log
            .try_clone()
            .map_err(|e| Stop::Other(format!("{}: {e}", self.log.display())))?;
        let mut cmd = Command::new(program);
        cmd.env_clear();
        for k in KEEP_ENV {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
        let status = cmd
            .env("LC_ALL", "C")
            .args(args)
            .current_dir(&self.src)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .status()
            .map_err(|e| Stop::Other(format!("cannot run {}: {e}", program.display())))?;
        if status.success() {
            return Ok(());
        }
        let said = format!("{} {} failed ({status})", program.display(), args.join(" "));
        // No exit code: a signal ended it (the terminal's SIGINT reaches
        // make too), which is not the commit failing to build. Nor is a
        // code above 128: a shell's for a child a signal killed (130 for
        // SIGINT); make itself and the kernel's scripts end 1 or 2 on an
        // error.
        if status.code().is_none_or(|c| c > 128) {
            return Err(Stop::Other(said));
        }
        Err(Stop::Failed(last_error(&self.log).unwrap_or(said)))
    }
}

/// `make -C src O=obj -jN [CC="ccache gcc"] targets...`.
pub fn make(m: &Make, targets: &[&str]) -> Result<(), Stop> {
    let mut args = vec![
        "-C".to_string(),
        m.src.to_string_lossy().into_owned(),
        format!("O={}", m.obj.display()),
        format!("-j{}", m.jobs),
    ];
    if m.ccache {
        args.push("CC=ccache gcc".into());
    }
    args.extend(targets.iter().map(|t| t.to_string()));
    m.run(Path::new("make"), &args)
}

/// The log's last line that reads as an error (`error:`, `Error `,
/// `*** `), trimmed; None when there is none.
pub fn last_error(log: &Path) -> Option<String> {
    let text = std::fs::read(log).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .rev()
        .find(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("error:")
                || l.contains("error ")
                || l.contains("*** ")
                || l.contains("fatal:")
        })
        .map(|l| l.trim().chars().take(300).collect())
}

/// Is `name` an executable on PATH?
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make_in(d: &Path) -> Make {
        Make {
            src: d.to_path_buf(),
            obj: d.to_path_buf(),
            log: d.join("log"),
            jobs: 1,
            ccache: false,
        }
    }

    #[test]
    fn a_killed_step_is_not_a_failed_build_and_the_environment_is_ours() {
        let t = tempfile::tempdir().unwrap();
        let m = make_in(t.path());
        let sh = Path::new("/bin/sh");
        let run = |script: &str| m.run(sh, &["-c".into(), script.into()]);
        // A failing step is the commit's fault, with the log's error line.
        assert_eq!(
            run("echo 'foo.c:1: error: nope'; exit 2"),
            Err(Stop::Failed("foo.c:1: error: nope".into()))
        );
        // Killed by a signal (as Ctrl-C kills make): not the commit's fault.
        // SIGKILL, not SIGINT: a test run started in the background of a
        // non-interactive shell inherits SIGINT ignored, and the step would
        // survive its own `kill -INT`.
        assert!(matches!(run("kill -KILL $$"), Err(Stop::Other(_))));
        // Nor a script whose child was (a shell says 128 + the signal).
        assert!(matches!(run("exit 130"), Err(Stop::Other(_))));
        // Nothing of the caller's environment (ARCH, MAKEFLAGS, cargo's
        // own variables here) reaches make: only PATH, HOME and LC_ALL,
        // and what sh itself sets.
        let _ = std::fs::remove_file(&m.log);
        assert_eq!(run("env"), Ok(()));
        let text = std::fs::read_to_string(&m.log).unwrap();
        let names: Vec<&str> = text.lines().filter_map(|l| l.split('=').next()).collect();
        assert!(names.contains(&"LC_ALL"), "{names:?}");
        for n in &names {
            assert!(
                ["PATH", "HOME", "LC_ALL", "PWD", "OLDPWD", "SHLVL", "_"].contains(n),
                "{n} reached make: {names:?}"
            );
        }
    }
}
