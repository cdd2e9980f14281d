//! Running the kernel's make (and its helper scripts) with every line of
//! output in the build log, and the log's last error line when it fails.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
    pub fn run(&self, program: &Path, args: &[String]) -> Result<(), String> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let status = Command::new(program)
            .args(args)
            .current_dir(&self.src)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        if status.success() {
            return Ok(());
        }
        Err(last_error(&self.log).unwrap_or_else(|| {
            format!("{} {} failed ({status})", program.display(), args.join(" "))
        }))
    }
}

/// `make -C src O=obj -jN [CC="ccache gcc"] targets...`.
pub fn make(m: &Make, targets: &[&str]) -> Result<(), String> {
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
