//! The trust boundaries of issue 28, tried from outside: each area's
//! promises in a module of its own under tests/security/ (docs/security.md
//! names the test behind each promise).

mod common;

#[path = "security/files.rs"]
mod files;
#[path = "security/outage.rs"]
mod outage;
#[path = "security/passwords.rs"]
mod passwords;
#[path = "security/resume.rs"]
mod resume;
#[path = "security/ssh.rs"]
mod ssh;
