//! The trust boundaries of issue 28, tried from outside: each area's
//! promises in a module of its own under tests/security/ (docs/security.md
//! names the test behind each promise). A module of the `long` test
//! binary (tests/long.rs): its outage test mostly waits.

mod files;
mod outage;
mod passwords;
mod resume;
mod ssh;
