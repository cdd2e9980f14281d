//! sysdelta's one error type: each variant is a way a command ends, with
//! its exit code.
//!
//! [`Error::BadInput`] is the user's input (a plan, an option, a store
//! file): the CLI prints one line a problem and exits with code 2, and
//! nothing stored is changed. [`Error::Failed`] is a runtime failure
//! (exit 1), as is any other error. [`Error::BrokenPipe`] is stdout's
//! reader gone away (exit 141, by SIGPIPE). An interrupted run is not an
//! error: it ends with code 130 as an outcome.
//!
//! anyhow carries runtime failures with context; an [`Error`] travels in
//! it like any other error, and [`of`] finds it again.

/// Exit code of bad input.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code of a runtime failure.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of an experiment whose team store stopped answering and did
/// not come back before its end: every run is safe on this machine, and
/// `sysdelta flush` sends them (sysexits' EX_TEMPFAIL, "try again later").
pub const EXIT_ONLY_LOCAL: u8 = 75;
/// Exit code of a report whose verdicts fail `--fail-on` (a regression,
/// for a CI job): distinct from a failure (1) and bad input (2).
pub const EXIT_GATE: u8 = 3;
/// Exit code of a closed stdout (128 + SIGPIPE).
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// How a command failed; the variant decides the exit code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Bad input: one problem, or several found together (a plan's
    /// preflight), each its own line when printed. Exit code 2.
    #[error("{}", .0.join("\n"))]
    BadInput(Vec<String>),
    /// A runtime failure, with its message. Exit code 1.
    #[error("{0}")]
    Failed(String),
    /// The reader of stdout went away. Exit code 141.
    #[error("broken pipe")]
    BrokenPipe,
}

/// A result whose error is an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Bad input with one problem.
    pub fn bad(msg: impl Into<String>) -> Error {
        Error::BadInput(vec![msg.into()])
    }

    /// A runtime failure with this message.
    pub fn failed(msg: impl Into<String>) -> Error {
        Error::Failed(msg.into())
    }

    /// The same message as a runtime failure (exit 1), whatever the
    /// variant: for a caller that counts a check's rejection as its own
    /// failure rather than the user's.
    pub fn into_failure(self) -> Error {
        match self {
            Error::Failed(_) => self,
            other => Error::Failed(other.to_string()),
        }
    }

    /// The same message as bad input (exit 2), whatever the variant.
    pub fn into_bad_input(self) -> Error {
        match self {
            Error::BadInput(_) => self,
            other => Error::BadInput(vec![other.to_string()]),
        }
    }

    /// The problems, one a line (a problem's text may itself hold a line
    /// break from the input: the CLI escapes it within its line). Empty
    /// unless bad input.
    pub fn problems(&self) -> &[String] {
        match self {
            Error::BadInput(p) => p,
            Error::Failed(_) | Error::BrokenPipe => &[],
        }
    }

    /// The exit code a command ending with this error ends with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::BadInput(_) => EXIT_BAD_INPUT,
            Error::Failed(_) => EXIT_FAILURE,
            Error::BrokenPipe => EXIT_BROKEN_PIPE,
        }
    }
}

/// Build an `anyhow::Error` that the CLI reports as bad input (exit 2).
pub fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Error::bad(msg))
}

/// Bad input with several problems, printed one a line.
pub fn bad_all(problems: Vec<String>) -> anyhow::Error {
    anyhow::Error::new(Error::BadInput(problems))
}

/// The [`Error`] an anyhow error carries (itself, under context, or
/// anywhere in its chain), or None for any other error.
pub fn of(e: &anyhow::Error) -> Option<&Error> {
    // anyhow's own downcast sees an [`Error`] given as context (which the
    // chain's plain `dyn Error`s do not): a store's "cannot connect" is
    // bad input as context over the `Unreachable` that says why.
    e.downcast_ref::<Error>()
        .or_else(|| e.chain().find_map(|c| c.downcast_ref::<Error>()))
}

/// The problems of a bad-input error, or None for any other error.
pub fn user_problems(e: &anyhow::Error) -> Option<&[String]> {
    match of(e) {
        Some(Error::BadInput(p)) => Some(p),
        _ => None,
    }
}

/// True when the error (or anything it wraps) is bad input.
pub fn is_user_error(e: &anyhow::Error) -> bool {
    user_problems(e).is_some()
}

/// The exit code of an error: its [`Error`]'s, or 1 for any other.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    of(e).map_or(EXIT_FAILURE, Error::exit_code)
}
