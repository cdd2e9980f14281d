//! The trust boundaries of issue 28, tried from outside: each area's
//! promises in a module of its own under tests/security/.

mod common;

#[path = "security/passwords.rs"]
mod passwords;
