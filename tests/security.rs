//! Root-only tests of issue 28's trust boundaries: what another local user
//! plants never makes root's sysdelta act. One module per area.

mod common;

#[path = "security/files.rs"]
mod files;
