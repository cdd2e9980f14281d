//! Experiments by the host they ran on (the `--host NAME` filter of
//! `compare` and `history`, and the fleet report's rows). An experiment's
//! host is its name in a fleet, else the machine name it recorded
//! ([`ExperimentInfo::ran_on`]).

// The types and imports of the store, whose impl this file continues.
use super::*;
use crate::sys::visible::terminal_safe as safe;

impl ExperimentInfo {
    /// The host an experiment ran on: its name in the fleet when it is one
    /// host's part of a fleet run (`fleet_host`), else the machine's name it
    /// recorded (`host`). Fleet reports and the `--host` filters go by this.
    pub fn ran_on(&self) -> &str {
        self.fleet_host.as_deref().unwrap_or(&self.host)
    }
}

impl Store {
    /// The ids of the experiments that ran on host `name`, oldest first. Bad
    /// input (one line, naming the hosts the store has) when none did.
    pub fn experiments_on(&self, name: &str) -> Result<Vec<i64>> {
        let mut ids = Vec::new();
        let mut hosts: Vec<String> = Vec::new();
        for id in self.experiment_ids()? {
            let info = self.info(id)?;
            let host = info.ran_on();
            if host == name {
                ids.push(id);
            } else if !hosts.iter().any(|h| h == host) {
                hosts.push(host.to_string());
            }
        }
        if ids.is_empty() {
            hosts.sort();
            return Err(bad(format!(
                "--host {}: no experiment in {} ran on that host ({})",
                safe(name),
                safe(&self.path().display().to_string()),
                if hosts.is_empty() {
                    "the store has no experiments".to_string()
                } else {
                    format!("hosts: {}", safe(&hosts.join(", ")))
                }
            )));
        }
        Ok(ids)
    }

    /// [`Store::resolve`] among the experiments `ids` of host `host`
    /// ([`Store::experiments_on`]): `last` is the newest of them, an id
    /// must be one of them, and a label names the one of them that has it
    /// (a label a fleet gave every host's experiment is one experiment per
    /// host).
    pub fn resolve_on(&self, what: &str, host: &str, ids: &[i64]) -> Result<i64> {
        if what == "last" || what == "--last" {
            // `experiments_on` never returns an empty list.
            return ids
                .iter()
                .copied()
                .max()
                .ok_or_else(|| bad(format!("--host {}: no experiments", safe(host))));
        }
        if what.parse::<i64>().is_ok() {
            let id = self.resolve(what)?;
            if ids.contains(&id) {
                return Ok(id);
            }
            let info = self.info(id)?;
            return Err(bad(format!(
                "experiment {id} ran on host {}, not {}",
                safe(info.ran_on()),
                safe(host)
            )));
        }
        let mut found = Vec::new();
        for &id in ids {
            if self.info(id)?.label.as_deref() == Some(what) {
                found.push(id);
            }
        }
        match found.as_slice() {
            [] => Err(bad(format!(
                "no experiment on host {} has id or label '{}' in {}",
                safe(host),
                safe(what),
                safe(&self.path().display().to_string())
            ))),
            [id] => Ok(*id),
            many => Err(bad(format!(
                "label '{}' matches {} experiments on host {} ({}); name one by id",
                safe(what),
                many.len(),
                safe(host),
                many.iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}
