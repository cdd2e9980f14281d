//! Errors that are the user's input, not sysdelta's failure.
//!
//! A [`UserError`] is bad input (a plan, an option, a store file): the CLI
//! prints its one line and exits with code 2, and nothing stored is changed.
//! Everything else is a runtime failure (exit 1).

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct UserError(pub String);

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

/// Build an `anyhow::Error` that the CLI reports as bad input (exit 2).
pub fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError(msg.into()))
}

/// True when the error (or anything it wraps) is bad input.
pub fn is_user_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<UserError>().is_some())
}
