mod common;

#[path = "security/ssh.rs"]
mod ssh;
