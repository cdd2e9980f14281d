//! Errors that are the user's input, not sysdelta's failure.
//!
//! A [`UserError`] is bad input (a plan, an option, a store file): the CLI
//! prints its one line and exits with code 2, and nothing stored is changed.
//! Everything else is a runtime failure (exit 1).

use std::fmt;

/// Bad input: one problem, or several found together (a plan's preflight),
/// each its own line when printed.
#[derive(Debug, Clone, PartialEq)]
pub struct UserError(pub Vec<String>);

impl UserError {
    /// The problems, one a line (a problem's text may itself hold a line
    /// break from the input: the CLI escapes it within its line).
    pub fn problems(&self) -> &[String] {
        &self.0
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("\n"))
    }
}

impl std::error::Error for UserError {}

/// Build an `anyhow::Error` that the CLI reports as bad input (exit 2).
pub fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError(vec![msg.into()]))
}

/// Bad input with several problems, printed one a line.
pub fn bad_all(problems: Vec<String>) -> anyhow::Error {
    anyhow::Error::new(UserError(problems))
}

/// The problems of a bad-input error, or None for any other error.
pub fn user_problems(e: &anyhow::Error) -> Option<&[String]> {
    e.chain()
        .find_map(|c| c.downcast_ref::<UserError>())
        .map(UserError::problems)
}

/// True when the error (or anything it wraps) is bad input.
pub fn is_user_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<UserError>().is_some())
}
