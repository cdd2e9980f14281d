//! What sysdelta refuses to do for someone it should not trust (issue 28):
//! one module per area, each test named after the promise it checks.

mod common;

#[path = "security/resume.rs"]
mod resume;
