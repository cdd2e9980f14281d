//! `sysdelta list`'s view: one row per stored experiment. The store's own
//! record of a listed experiment is the row (nothing is computed on it);
//! it is named here so that `report/` renders it without importing
//! `store/`.

use anyhow::Result;

use crate::store::Store;

/// One stored experiment as `sysdelta list` shows it.
pub use crate::store::ListedExperiment as ListRow;

/// Every stored experiment, oldest first.
pub fn list(store: &Store) -> Result<Vec<ListRow>> {
    store.listed()
}
