//! Where a command's output goes: stdout, or a file written atomically;
//! and how sysdelta ends when the reader of stdout goes away.

use std::path::Path;

use anyhow::Result;

use crate::error::{bad, Error};

/// Write `text` to `path` atomically (temporary file in the same directory,
/// then rename; mode 0666 less the umask, as any file a command writes),
/// or to stdout.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    // Ended in `main`, once everything a run holds (its
                    // scratch directory, its locks) is put away.
                    return Err(anyhow::Error::new(Error::BrokenPipe));
                }
                return Err(e.into());
            }
        }
        Some(p) => {
            let dir = existing_dir(p)?;
            let mut tmp = tempfile::Builder::new()
                .permissions(std::fs::Permissions::from_mode(0o666))
                .tempfile_in(dir)
                .map_err(|e| bad(format!("{}: cannot write there: {e}", p.display())))?;
            tmp.write_all(text.as_bytes())?;
            tmp.persist(p)
                .map_err(|e| bad(format!("{}: {}", p.display(), e.error)))?;
        }
    }
    Ok(())
}

/// The reader of stdout went away (`sysdelta list | head -1`): end as
/// coreutils do, killed by SIGPIPE, with nothing on stderr. Rust ignores
/// SIGPIPE (so that sockets and pipes inside the benchmarks report EPIPE);
/// it is put back to its default only here.
pub fn die_of_broken_pipe() -> ! {
    // SAFETY: plain calls; nothing runs after the signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(crate::error::EXIT_BROKEN_PIPE.into())
}

/// `println!` panics when stdout is a closed pipe; the subcommands that
/// print as they go (micro, transport) end like `emit` then.
pub fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            die_of_broken_pipe();
        }
        default(info)
    }));
}

/// The directory `p` is to be written in, which must exist: bad input
/// naming both otherwise (checked for every output before any is written).
pub fn existing_dir(p: &Path) -> Result<&Path> {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(format!(
            "{}: directory {} does not exist",
            p.display(),
            dir.display()
        )));
    }
    Ok(dir)
}
