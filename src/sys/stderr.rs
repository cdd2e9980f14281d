//! Saying things on stderr without ever dying of it.
//!
//! `eprintln!` panics when stderr cannot be written (a closed pipe: EPIPE),
//! which turned the first warning of a store's outage into exit 101 in the
//! middle of an experiment. [`line`] writes and ignores the error: a
//! warning nobody can read is not worth an experiment. [`keep_std_fds`]
//! makes sure fds 0-2 are open (on /dev/null if they were closed, `2>&-`),
//! so that no file sysdelta opens (the run log, the store) becomes fd 2
//! and receives its warnings.

use std::io::Write;

/// `eprintln!` that never panics: one line to stderr through [`line`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::sys::stderr::line(format_args!($($arg)*)) };
}
pub use crate::say;

/// Write one line (`args` and a newline) to stderr, ignoring any error.
/// What a terminal would act on is shown escaped, line breaks kept
/// (`sys::visible::terminal_safe_lines`): a warning quotes what it found
/// (a run log's field, a store's name), and whoever wrote that chose it.
pub fn line(args: std::fmt::Arguments) {
    let text = match args.as_str() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(args.to_string()),
    };
    let shown = crate::sys::visible::terminal_safe_lines(&text);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(shown.as_bytes());
    let _ = err.write_all(b"\n");
}

/// Open /dev/null on whichever of fds 0, 1 and 2 is closed (the lowest
/// free fd is the one `open` returns), as OpenSSH and daemons do.
pub fn keep_std_fds() {
    use nix::fcntl::{fcntl, FcntlArg};
    for fd in 0..=2 {
        // SAFETY: only asks whether `fd` is open; borrows nothing.
        let fd_ref = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        if fcntl(fd_ref, FcntlArg::F_GETFD) == Err(nix::errno::Errno::EBADF) {
            if let Ok(f) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
            {
                use std::os::fd::IntoRawFd;
                let got = f.into_raw_fd();
                if got != fd {
                    // Not the lowest free fd after all: nothing to keep.
                    // SAFETY: `got` was just opened here and is ours.
                    drop(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(got) });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_line_to_a_closed_pipe_is_no_panic() {
        // Whatever stderr is in the test harness, line() returns.
        super::line(format_args!("sysdelta: test line {}", 1));
    }
}
