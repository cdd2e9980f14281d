//! `sysdelta list`'s view: one row per stored experiment.

use anyhow::Result;

use crate::status::ExperimentStatus;
use crate::store::Store;

/// One stored experiment as `sysdelta list` shows it.
#[derive(Clone, Debug)]
pub struct ListRow {
    pub id: i64,
    /// As stored: "2026-11-26T16:16:48Z".
    pub created_at: String,
    pub status: ExperimentStatus,
    /// Successful measured runs (warm-ups aside): the report's "ok".
    pub runs_ok: usize,
    /// The machine's name it recorded.
    pub host: String,
    pub label: Option<String>,
    /// Baseline first.
    pub configs: Vec<String>,
}

/// Every stored experiment, oldest first.
pub fn list(store: &Store) -> Result<Vec<ListRow>> {
    Ok(store
        .listed()?
        .into_iter()
        .map(|e| ListRow {
            id: e.id,
            created_at: e.created_at,
            status: e.status,
            runs_ok: e.runs_ok,
            host: e.host,
            label: e.label,
            configs: e.configs,
        })
        .collect())
}
