//! Where a command's output goes: stdout, or a file written atomically;
//! and how sysdelta ends when the reader of stdout goes away.

use std::path::Path;

use anyhow::Result;

use crate::error::{bad, Error};

/// Write `text` to `path` atomically (see [`write_file`]), or to stdout.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    use std::io::Write;
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
        Some(p) => write_file(p, |w| Ok(w.write_all(text.as_bytes())?))?,
    }
    Ok(())
}

/// Write to `path` what `write` writes as it goes (a JSON report of every
/// run, never held whole), atomically: into a temporary file in the same
/// directory (mode 0666 less the umask, as any file a command writes),
/// renamed over `path` only once it is whole. A failure half-way (a full
/// disk, an error making the document) removes the temporary file and
/// leaves `path` as it was: never a truncated file, never an earlier one
/// lost.
pub fn write_file(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>,
) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = existing_dir(path)?;
    let tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| bad(format!("{}: cannot write there: {e}", path.display())))?;
    let mut out = std::io::BufWriter::new(tmp);
    write(&mut out)
        .and_then(|()| Ok(out.flush()?))
        .map_err(|e| e.context(format!("{}: not written", path.display())))?;
    // Flushed above: the buffer is empty, so taking the file loses nothing.
    let tmp = out.into_inner().map_err(|e| e.into_error())?;
    tmp.persist(path)
        .map_err(|e| bad(format!("{}: {}", path.display(), e.error)))?;
    Ok(())
}

/// [`emit`] on stdout of what `write` writes as it goes (a JSON report
/// of every run, never held whole); a closed pipe ends as in `emit`. Any
/// other failure once something was written (an error making the
/// document, a full disk under a redirection) leaves stdout with part of
/// the document: the error then says so, as the one line on stderr of a
/// command that exits 1.
pub fn stream(write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(Counted {
        inner: std::io::stdout().lock(),
        written: 0,
    });
    let written = write(&mut out).and_then(|()| Ok(out.flush()?));
    let sent = out.get_ref().written;
    match written {
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Err(anyhow::Error::new(Error::BrokenPipe))
        }
        Err(e) => Err(e.context(format!(
            "the report on stdout is incomplete ({sent} bytes of it written, then it failed)"
        ))),
        Ok(()) => Ok(()),
    }
}

/// A writer that counts the bytes its inner writer took.
struct Counted<W> {
    inner: W,
    written: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
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

/// `--style`, as hyperfine's: whether verdicts are coloured and whether
/// progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Style {
    /// Colours and progress where stdout/stderr is a terminal and NO_COLOR
    /// is not set (never in a pipe or a file).
    #[default]
    Auto,
    /// Colours and progress, wherever the output goes.
    Full,
    /// Neither colours nor progress.
    Basic,
    /// Progress, no colours.
    Nocolor,
    /// Colours, no progress.
    Color,
    /// Neither colours nor progress (as basic).
    None,
}

static STYLE: std::sync::OnceLock<Style> = std::sync::OnceLock::new();

impl Style {
    /// The style of this process (set once by `cli::dispatch`).
    pub fn get() -> Style {
        STYLE.get().copied().unwrap_or_default()
    }

    /// Make `self` the style of this process.
    pub fn set(self) {
        let _ = STYLE.set(self);
    }

    /// Whether the text report on stdout is coloured.
    pub fn colours_stdout(self) -> bool {
        use std::io::IsTerminal as _;
        match self {
            Style::Full | Style::Color => true,
            Style::Basic | Style::Nocolor | Style::None => false,
            Style::Auto => {
                // https://no-color.org: set and not empty means no colour.
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
                !no_color && !dumb && std::io::stdout().is_terminal()
            }
        }
    }

    /// Whether progress is shown (as without -q).
    pub fn progress(self) -> bool {
        matches!(self, Style::Auto | Style::Full | Style::Nocolor)
    }
}

/// `text` (a text report) with its verdict cells coloured when the style
/// colours stdout: worse red, better green, within noise dimmed. Only the
/// table rows (`| ... |`) are touched, and only inside a cell's padding,
/// so every column keeps its width on screen.
pub fn paint_verdicts(text: &str) -> String {
    if !Style::get().colours_stdout() {
        return text.to_string();
    }
    paint(text)
}

fn paint(text: &str) -> String {
    use anstyle::{AnsiColor, Style as Ansi};
    let worse = Ansi::new().fg_color(Some(AnsiColor::Red.into())).bold();
    let better = Ansi::new().fg_color(Some(AnsiColor::Green.into())).bold();
    let noise = Ansi::new().dimmed();
    let mut out = String::with_capacity(text.len() + 256);
    for line in text.split_inclusive('\n') {
        if !line.starts_with('|') {
            out.push_str(line);
            continue;
        }
        let cells: Vec<String> = line
            .split('|')
            .map(|cell| {
                let t = cell.trim();
                // A mark after the verdict (`*`, `#`, `^`) keeps its colour.
                let word = t.trim_end_matches(['*', '#', '^']);
                let style = if word.ends_with(" worse") {
                    worse
                } else if word.ends_with(" better") {
                    better
                } else if t.starts_with("~ ") {
                    noise
                } else {
                    return cell.to_string();
                };
                let at = cell.find(t).unwrap_or(0);
                format!(
                    "{}{style}{t}{style:#}{}",
                    &cell[..at],
                    &cell[at + t.len()..]
                )
            })
            .collect();
        out.push_str(&cells.join("|"));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn verdict_cells_are_coloured_and_keep_their_width() {
        let table = "| config  |   +138% worse |  ~ +2.3% |  n/a |\n| fast    |  5.197 |\nplain worse line\n";
        let painted = super::paint(table);
        assert!(
            painted.contains("\x1b[1m\x1b[31m+138% worse\x1b[0m |"),
            "{painted:?}"
        );
        assert!(painted.contains("\x1b[2m~ +2.3%\x1b[0m |"), "{painted:?}");
        assert!(painted.contains("plain worse line"));
        // Without the escapes it is the table as it was.
        let plain = regex::Regex::new("\x1b\\[[0-9;]*m")
            .unwrap()
            .replace_all(&painted, "");
        assert_eq!(plain, table);
    }
}
