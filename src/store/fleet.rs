//! Fleet runs as stored: one row per fleet run (the plan every host ran,
//! the hosts), and each host's part an experiment that names the fleet
//! and the host (`experiments.fleet_id`, `fleet_host`).

use anyhow::Result;
use serde::Serialize;

use super::db::vals;
use super::Store;
use crate::error::bad;
use crate::status::ExperimentStatus;

/// What a new fleet run stores.
pub struct NewFleet<'a> {
    pub name: &'a str,
    pub plan_source: &'a str,
    pub plan_text: &'a str,
    /// JSON: the CLI overrides every host runs with.
    pub overrides: &'a str,
    /// JSON: each host's name, destination and options.
    pub hosts: &'a str,
}

/// A stored fleet run.
#[derive(Clone, Debug, Serialize)]
pub struct FleetInfo {
    pub id: i64,
    pub uid: String,
    pub name: String,
    pub plan_source: String,
    pub plan_text: String,
    pub overrides: String,
    pub hosts: String,
    pub created_at: String,
}

/// One host's part of a fleet run, as far as it got.
#[derive(Clone, Debug, Serialize)]
pub struct Member {
    pub host: String,
    pub experiment: i64,
    pub status: ExperimentStatus,
    /// Measured runs that gave samples, and every run stored (warm-ups
    /// and failures included).
    pub ok_runs: u64,
    pub stored_runs: u64,
}

impl Store {
    pub fn create_fleet(&self, f: &NewFleet) -> Result<i64> {
        self.db.value(
            "INSERT INTO fleets (uid, name, plan_source, plan_text, overrides, hosts, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, {now}) RETURNING id",
            &vals![
                &super::write::new_uid(),
                f.name,
                f.plan_source,
                f.plan_text,
                f.overrides,
                f.hosts
            ],
        )
    }

    /// A fleet run by id, or `last`.
    pub fn fleet(&self, what: &str) -> Result<FleetInfo> {
        let id: Option<i64> = match what {
            "last" | "--last" => self.db.value("SELECT MAX(id) FROM fleets", &[])?,
            _ => Some(
                what.parse()
                    .map_err(|_| bad(format!("fleet '{what}': expected a fleet id or 'last'")))?,
            ),
        };
        let shown = self.shown();
        let Some(id) = id else {
            return Err(bad(format!("{shown}: the store has no fleet runs")));
        };
        self.db
            .query_opt(
                "SELECT id, uid, name, plan_source, plan_text, overrides, hosts, created_at
                 FROM fleets WHERE id = ?1",
                &vals![id],
                |r| {
                    Ok(FleetInfo {
                        id: r.get(0)?,
                        uid: r.get(1)?,
                        name: r.get(2)?,
                        plan_source: r.get(3)?,
                        plan_text: r.get(4)?,
                        overrides: r.get(5)?,
                        hosts: r.get(6)?,
                        created_at: r.get(7)?,
                    })
                },
            )?
            .ok_or_else(|| bad(format!("no fleet run with id {id} in {shown}")))
    }

    /// Each host's experiment in fleet run `fleet`, by host name (the
    /// newest, should a host have started twice).
    pub fn fleet_members(&self, fleet: i64) -> Result<Vec<Member>> {
        self.flush_runs()?;
        self.db.query(
            "SELECT e.fleet_host, e.id, e.status,
                 (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id AND r.warmup = 0 AND r.status = 'ok'),
                 (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id)
             FROM experiments e WHERE e.fleet_id = ?1
               AND e.id = (SELECT MAX(x.id) FROM experiments x WHERE x.fleet_id = ?1 AND x.fleet_host = e.fleet_host)
             ORDER BY e.fleet_host",
            &vals![fleet],
            |r| {
                Ok(Member {
                    host: r.get(0)?,
                    experiment: r.get(1)?,
                    status: r.get(2)?,
                    ok_runs: r.get(3)?,
                    stored_runs: r.get(4)?,
                })
            },
        )
    }
}
