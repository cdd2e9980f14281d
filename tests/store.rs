//! The store: every command on SQLite and PostgreSQL, migrations, a
//! team's server, read-only access, the run log.
//!
//! One test binary for the area, one module per file under tests/store/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;

#[path = "store/baselines.rs"]
mod baselines;
#[path = "store/commands.rs"]
mod commands;
#[path = "store/metric_runs.rs"]
mod metric_runs;
#[path = "store/migrate.rs"]
mod migrate;
#[path = "store/pg.rs"]
mod pg;
#[path = "store/readonly.rs"]
mod readonly;
#[path = "store/runlog.rs"]
mod runlog;
