//! `sysdelta fleet`: one plan run on several hosts at once, each host's
//! part an experiment of its own in one team store (PostgreSQL), named
//! after the fleet run and the host.
//!
//! Why this shape: the hosts are reached with the system's OpenSSH and
//! nothing else (no agent to install, no port to open), so whatever
//! reaches a host in the user's shell reaches it here; each host runs
//! the same sysdelta as a plain `sysdelta run`, with its own run log,
//! journal and lock on that host, so a host that dies mid-run is finished
//! by `run --resume` like any other experiment; and the hosts need no
//! route to the database: each reaches it through its own ssh connection
//! (a forwarded Unix socket, `team`).
//!
//! One file a job: `hosts` (who the hosts are: `--hosts`, hosts files,
//! their JSON in the fleet's row), `ssh_args` (ssh's arguments read as
//! OpenSSH reads them), `ssh_allow` (the ssh options a host may carry),
//! `ssh` (commands and quoting), `checks`
//! (every host checked, in parallel, before anything is stored), `team`
//! (the store as a host reaches it: URL, socket, anchor), `launch` (one
//! host's part started), `supervise` (progress, lost hosts, signals, the
//! summary), `start` (`fleet run` and `fleet resume` from those),
//! `status` (the hosts' table).

pub mod checks;
pub mod hosts;
pub mod launch;
pub mod ssh;
pub mod ssh_allow;
pub mod ssh_args;
pub mod start;
pub mod status;
pub mod supervise;
pub mod team;

pub use hosts::Host;
pub use launch::Consent;
pub use start::{resume, root_need, run, Asked, NewRun};
pub use status::status;
pub use supervise::Outcome;
