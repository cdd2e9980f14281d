//! A store an older sysdelta made (schema v4, before uids and fleets)
//! opens in this one: migrated to the current schema in place, its
//! experiments kept, each given its uid so it can be pushed. On SQLite and
//! on PostgreSQL.

use crate::common;

use sysdelta::store::schema::{for_postgresql, MIGRATIONS};
use sysdelta::store::Store;

/// The v4 schema and one experiment with one run, as sysdelta wrote it
/// before v5, by plain SQL on either database.
fn v4_statements(pg: bool) -> Vec<String> {
    let mut sql: Vec<String> = MIGRATIONS[..4]
        .iter()
        .map(|m| if pg { for_postgresql(m) } else { m.to_string() })
        .collect();
    sql.push(
        "INSERT INTO meta (key, value) VALUES ('app', 'sysdelta'), ('schema_version', '4');
         INSERT INTO experiments (name, plan_source, plan_text, overrides, host, fingerprint, seed,
             run_order, runs_per_cell, warmup, baseline, status)
         VALUES ('old', 'p.toml', '', '{}', 'h', '{}', 1, 'random-blocks', 1, 0, 'a', 'complete');
         INSERT INTO configs VALUES (1, 0, 'a');
         INSERT INTO workloads VALUES (1, 0, 'w');
         INSERT INTO metrics VALUES (1, 'w', 'wall', 's', 'lower', 0);
         INSERT INTO runs (experiment_id, block, seq, config, workload, warmup, status, started_at)
             VALUES (1, 0, 0, 'a', 'w', 0, 'ok', 1.5);
         INSERT INTO samples VALUES (1, 'wall', 0, 0.25);"
            .to_string(),
    );
    sql
}

both_stores! {
fn a_v4_store_is_migrated_in_place_and_keeps_its_experiments(sb) {
    match &sb.pg {
        None => {
            let c = rusqlite::Connection::open(sb.store()).unwrap();
            for s in v4_statements(false) {
                c.execute_batch(&s).unwrap();
            }
        }
        Some(pg) => {
            for s in v4_statements(true) {
                pg.psql(&s);
            }
        }
    }
    let store = Store::open(&sb.store(), false).unwrap();
    let data = store.load(1).unwrap();
    assert_eq!(data.info.name, "old");
    assert_eq!(data.runs.len(), 1);
    assert_eq!(data.runs[0].samples["wall"], vec![0.25]);
    assert_eq!(data.info.fleet_id, None);
    let uid = store.uid(1).unwrap();
    assert_eq!(uid.len(), 32, "{uid}");
    // Migrated to the newest schema, whose indexes are there.
    assert_eq!(
        sb.sql_number(&format!(
            "SELECT COUNT(*) FROM meta WHERE key = 'schema_version' AND value = '{}'",
            MIGRATIONS.len()
        )),
        1
    );
    let index = match &sb.pg {
        None => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'workloads_name'",
        Some(_) => "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'workloads_name'",
    };
    assert_eq!(sb.sql_number(index), 1, "the metrics' join has its index");
    drop(store);
    // A second open finds it current and changes nothing.
    let again = Store::open(&sb.store(), false).unwrap();
    assert_eq!(again.uid(1).unwrap(), uid);
}
}

both_stores! {
/// A new store indexes only the runs that have a boot (`runs_boot_set`,
/// partial: a NULL key cost every host or imported run a B-tree insert);
/// a store with an older sysdelta's index of every run's boot
/// (`runs_boot`) keeps it, and is given no second one: it is never
/// dropped, so a team store shared with older sysdeltas is not rebuilt
/// back and forth.
fn the_older_boot_index_is_kept_and_new_stores_get_the_partial_one(sb) {
    drop(Store::open(&sb.store(), true).unwrap());
    let count = |name: &str| {
        sb.sql_number(&match &sb.pg {
            None => format!("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = '{name}'"),
            Some(_) => format!("SELECT COUNT(*) FROM pg_indexes WHERE indexname = '{name}'"),
        })
    };
    assert_eq!((count("runs_boot"), count("runs_boot_set")), (0, 1));
    let older = "DROP INDEX runs_boot_set; CREATE INDEX runs_boot ON runs (boot_id)";
    match &sb.pg {
        None => rusqlite::Connection::open(sb.store())
            .unwrap()
            .execute_batch(older)
            .unwrap(),
        Some(pg) => {
            pg.psql(older);
        }
    }
    drop(Store::open(&sb.store(), true).unwrap());
    assert_eq!((count("runs_boot"), count("runs_boot_set")), (1, 0));
}
}
