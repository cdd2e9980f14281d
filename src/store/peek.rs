//! A look into another store without opening it as a [`Store`]: no
//! migration, no fold of its run log, not a byte written in or next to it
//! (see [`read_only_connection`]), even when the run that looks is root
//! and the store another user's. Used by the machine-wide checks before a
//! run (`runner::machine`), which must learn whether some other store was
//! left with a config entered, whatever state it is in.
//!
//! [`Store`]: super::Store

use std::path::Path;

use super::read_only_connection;

/// The experiments of the store at `path` that a dead run left inside a
/// config (`entered_config` set while the experiment is still `running`),
/// as (id, name, config). Empty when the file cannot be read as a store:
/// what cannot be read cannot be resumed either.
pub fn entered_configs(path: &Path) -> Vec<(i64, String, String)> {
    let Ok(conn) = read_only_connection(path) else {
        return Vec::new();
    };
    let rows = conn
        .prepare(
            "SELECT id, name, entered_config FROM experiments \
             WHERE entered_config IS NOT NULL AND status = 'running' ORDER BY id",
        )
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()
        });
    rows.unwrap_or_default()
}
