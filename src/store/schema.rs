//! The store's schema, as numbered migrations.
//!
//! Version N of the schema is the result of applying `MIGRATIONS[..N]` in
//! order. A store whose version is above `MIGRATIONS.len()` was written by a
//! newer sysdelta and is refused unchanged.
//!
//! The migrations are written once, in SQLite's words; a PostgreSQL store
//! gets the same ones through [`for_postgresql`], which changes the column
//! types only (SQLite's INTEGER and REAL are 64-bit, as BIGINT and DOUBLE
//! PRECISION are), so both stores hold the same columns at every version.

pub const APP_ID: &str = "sysdelta";

pub const MIGRATIONS: &[&str] = &[
    // v1: experiments, their runs and every sample.
    r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE experiments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    label TEXT,
    plan_source TEXT NOT NULL,
    plan_text TEXT NOT NULL,
    overrides TEXT NOT NULL,          -- JSON: CLI overrides, so --resume rebuilds the same schedule
    host TEXT NOT NULL,
    fingerprint TEXT NOT NULL,        -- JSON object: environment fingerprint
    seed INTEGER NOT NULL,
    run_order TEXT NOT NULL,
    runs_per_cell INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    baseline TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
    finished_at TEXT,
    status TEXT NOT NULL,             -- running | complete | interrupted | failed
    entered_config TEXT,              -- set while a config is entered: a crash leaves it set
    self_usage TEXT                   -- JSON: sysdelta's own CPU and RSS while it ran
);
CREATE TABLE configs (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (experiment_id, idx)
);
CREATE TABLE workloads (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (experiment_id, idx)
);
CREATE TABLE metrics (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    workload TEXT NOT NULL,
    name TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    ord INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, workload, name)
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    block INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    config TEXT NOT NULL,
    workload TEXT NOT NULL,
    warmup INTEGER NOT NULL,
    status TEXT NOT NULL,             -- ok | failed
    reason TEXT,
    stderr_tail TEXT,
    exit_code INTEGER,
    started_at REAL NOT NULL,         -- Unix time, seconds
    UNIQUE (experiment_id, block, seq)
);
CREATE TABLE samples (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    metric TEXT NOT NULL,
    idx INTEGER NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, metric, idx)
) WITHOUT ROWID;
CREATE TABLE series (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    unit TEXT NOT NULL,
    t_json TEXT NOT NULL,             -- JSON array: seconds since run start
    v_json TEXT NOT NULL,             -- JSON array: values
    PRIMARY KEY (run_id, name)
);
CREATE TABLE profiles (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    symbol TEXT NOT NULL,
    kernel INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    PRIMARY KEY (run_id, symbol, kernel)
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
"#,
    // v2: where an experiment's samples came from: NULL when sysdelta ran
    // it, else a description of the imported file(s) (hyperfine, go test
    // -bench, LMbench).
    "ALTER TABLE experiments ADD COLUMN source TEXT;",
    // v3: the environment the entered config's setup exported (JSON array
    // of [name, value]), so a teardown after a crash sees what its setup
    // exported, as it would have in the run that died.
    "ALTER TABLE experiments ADD COLUMN entered_env TEXT;",
    // v4: boots of kernel configs (each config that names a kernel runs in
    // a VM booted for it; a boot is the unit of replication), and which
    // boot each run ran in (NULL for runs on the host).
    r#"
CREATE TABLE boots (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    config TEXT NOT NULL,
    block INTEGER NOT NULL,           -- the boot block (one boot of every kernel config)
    position INTEGER NOT NULL,        -- place in the block's randomized order
    accel TEXT NOT NULL,              -- KVM | TCG
    started_at REAL NOT NULL,         -- Unix time, seconds: QEMU launched
    launch_to_hello_s REAL,           -- launch until the guest sysdelta said hello
    status TEXT NOT NULL,             -- running | ok | failed
    reason TEXT,                      -- why a boot failed
    console_tail TEXT,                -- last lines of the serial console of a failed boot
    uname TEXT,                       -- what the guest said: uname -r
    proc_version TEXT,                --   /proc/version
    cmdline TEXT,                     --   /proc/cmdline
    cpus INTEGER,                     --   online CPUs
    mem_total_kib INTEGER,            --   MemTotal
    runs INTEGER NOT NULL DEFAULT 0   -- runs received from the guest
);
ALTER TABLE runs ADD COLUMN boot_id INTEGER;
"#,
    // v5: team stores. Each experiment gets a random uid, by which `push`
    // and `pull` know it in any store (filled in for older experiments by
    // the migration's code: see `UIDS_FROM`). A fleet run is one plan run
    // on several hosts at once, each host's part one experiment.
    r#"
ALTER TABLE experiments ADD COLUMN uid TEXT;
CREATE UNIQUE INDEX experiments_uid ON experiments (uid);
CREATE TABLE fleets (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    plan_source TEXT NOT NULL,
    plan_text TEXT NOT NULL,
    overrides TEXT NOT NULL,          -- JSON: the CLI overrides every host runs with
    hosts TEXT NOT NULL,              -- JSON array: each host's name, destination and options
    created_at TEXT NOT NULL
);
ALTER TABLE experiments ADD COLUMN fleet_id INTEGER REFERENCES fleets(id);
ALTER TABLE experiments ADD COLUMN fleet_host TEXT;
CREATE INDEX events_experiment ON events (experiment_id);
"#,
];

/// Indexes for the look-ups by name that v1 left to a scan, kept outside
/// the numbered migrations: they change no stored data, so adding them
/// must not raise the schema version (a raised version would lock every
/// older sysdelta out of a shared team store and make a read-only reader
/// of an older store fail with "must be upgraded"). A store opened for
/// writing gets the ones it lacks ([`missing_indexes`]); one only read
/// works without them, at a scan's cost. The metrics' join to their
/// workloads' order (and every folded run's check that its config and
/// workload exist) looked a workload up by (experiment_id, name) through
/// a scan of the experiment's workloads: `report` of one experiment with
/// 8,000 workloads took 38.6 s, 0.11 s with the index. Labels (`report
/// LABEL`, `compare`, `history`), a fleet's experiments, an experiment's
/// boots and a boot's runs are found the same way.
pub const INDEXES: &[(&str, &str)] = &[
    (
        "workloads_name",
        "CREATE INDEX workloads_name ON workloads (experiment_id, name)",
    ),
    (
        "configs_name",
        "CREATE INDEX configs_name ON configs (experiment_id, name)",
    ),
    (
        "experiments_label",
        "CREATE INDEX experiments_label ON experiments (label)",
    ),
    (
        "experiments_fleet",
        "CREATE INDEX experiments_fleet ON experiments (fleet_id, fleet_host)",
    ),
    (
        "boots_experiment",
        "CREATE INDEX boots_experiment ON boots (experiment_id)",
    ),
    // Only runs of a kernel config have a boot: an index of every run
    // cost each imported or host run a fourth B-tree insert (an import of
    // 6,000 runs spent a millisecond in it) for a key that is always NULL.
    // `boot_id = x` implies `boot_id IS NOT NULL`, so both SQLite and
    // PostgreSQL use the partial index for a boot's runs.
    (
        "runs_boot_set",
        "CREATE INDEX runs_boot_set ON runs (boot_id) WHERE boot_id IS NOT NULL",
    ),
];

/// (index, an older sysdelta's index that serves its look-ups): a store
/// that has the older one is not given the new one, and the older one is
/// never dropped. A team store shared with older sysdeltas would
/// otherwise have it made again by them and dropped by this one at every
/// open, each a build or a lock of the whole runs table.
pub const COVERED_BY: &[(&str, &str)] = &[("runs_boot_set", "runs_boot")];

/// The statements that create those of [`INDEXES`] not in `present` (the
/// store's index names), in order.
pub fn missing_indexes(present: &[String]) -> Vec<&'static str> {
    let has = |name: &str| present.iter().any(|p| p == name);
    let covered = |name: &str| (COVERED_BY.iter()).any(|(n, by)| *n == name && has(by));
    INDEXES
        .iter()
        .filter(|(name, _)| !has(name) && !covered(name))
        .map(|(_, sql)| *sql)
        .collect()
}

/// The version whose migration adds `experiments.uid`: migrating to it
/// gives every experiment already stored its uid.
pub const UIDS_FROM: usize = 5;

/// A migration in PostgreSQL's words: integer keys become identity
/// columns (the server hands out ids, so many hosts writing at once never
/// clash), INTEGER becomes BIGINT, REAL DOUBLE PRECISION, and SQLite's
/// `strftime` default the same text from `now()`.
pub fn for_postgresql(sqlite: &str) -> String {
    let now_sqlite = "(strftime('%Y-%m-%dT%H:%M:%SZ','now'))";
    let now_pg = r#"(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))"#;
    let mut out = String::new();
    for line in sqlite.lines() {
        let (code, comment) = match line.find("--") {
            Some(i) => line.split_at(i),
            None => (line, ""),
        };
        let code = code
            .replace(
                "INTEGER PRIMARY KEY",
                "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
            )
            .replace("INTEGER", "BIGINT")
            .replace("REAL", "DOUBLE PRECISION")
            .replace(") WITHOUT ROWID;", ");")
            .replace(now_sqlite, now_pg);
        out.push_str(&code);
        out.push_str(comment);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every SQL string literal that reads the tables in `source` (the
    /// store's own files, read as text, so a look-up added there is
    /// checked too).
    fn statements(source: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = source;
        while let Some(i) = rest.find("\"SELECT ").or_else(|| rest.find("\"UPDATE ")) {
            let body = &rest[i + 1..];
            let end = body.find('"').expect("a closed string");
            out.push(body[..end].to_string());
            rest = &body[end..];
        }
        out
    }

    /// SQLite's plan of `sql`, one line per step.
    fn plan(c: &rusqlite::Connection, sql: &str) -> Vec<String> {
        let mut stmt = c
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
        stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// The look-up indexes change no stored data, so they raise no schema
    /// version (an older sysdelta still opens a store that has them); a
    /// store is given only the ones it lacks.
    #[test]
    fn indexes_raise_no_version_and_only_missing_ones_are_made() {
        assert_eq!(MIGRATIONS.len(), 5, "v6 would lock older sysdeltas out");
        assert!(MIGRATIONS.iter().all(|m| !m.contains("workloads_name")));
        assert_eq!(missing_indexes(&[]).len(), INDEXES.len());
        // A store with the older index of the runs' boots keeps it, alone.
        let older: Vec<String> = (INDEXES.iter())
            .map(|(n, _)| n.to_string())
            .filter(|n| n != "runs_boot_set")
            .chain(["runs_boot".to_string()])
            .collect();
        assert!(missing_indexes(&older).is_empty());
        let all: Vec<String> = INDEXES.iter().map(|(n, _)| n.to_string()).collect();
        assert!(missing_indexes(&all).is_empty());
        assert_eq!(
            missing_indexes(&all[1..]),
            vec![INDEXES[0].1],
            "only the one missing"
        );
    }

    /// The look-ups of one experiment (its runs, samples, metrics, series,
    /// profiles, events, boots), of a label, of a fleet's hosts and of a
    /// folded run's config and workload each go through an index: none
    /// reads a whole table, so a report's cost follows the experiment's
    /// size, not the store's or its number of workloads. Only the
    /// commands over every experiment (`list`, `last`, labels by prefix)
    /// read the experiments table whole.
    #[test]
    fn every_hot_look_up_uses_an_index() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        for m in MIGRATIONS {
            c.execute_batch(m).unwrap();
        }
        for sql in missing_indexes(&[]) {
            c.execute_batch(sql).unwrap();
        }
        let whole_store = [
            "SELECT id FROM experiments ORDER BY id",
            "SELECT MAX(id) FROM experiments",
            "SELECT MAX(id) FROM fleets",
            "SELECT id, label FROM experiments WHERE label IS NOT NULL ORDER BY id",
        ];
        let mut checked = 0;
        for source in [
            include_str!("read.rs"),
            include_str!("boots.rs"),
            include_str!("fleet.rs"),
            include_str!("fold.rs"),
            include_str!("write.rs"),
            include_str!("recent.rs"),
            include_str!("tally.rs"),
        ] {
            for sql in statements(source) {
                if whole_store.contains(&sql.as_str()) {
                    continue;
                }
                let steps = plan(&c, &sql);
                let scans: Vec<&String> = steps.iter().filter(|s| s.starts_with("SCAN ")).collect();
                assert!(scans.is_empty(), "{sql}\nreads a whole table: {steps:?}");
                checked += 1;
            }
        }
        // The experiment's load, the fold's checks and the boots are there.
        assert!(checked >= 20, "{checked} statements checked");
        // The tally at the end of a run walks the runs in run order along
        // the (experiment_id, block, seq) index: no sort, whose cost would
        // follow the runs (tally.rs).
        let tally = statements(include_str!("tally.rs"));
        assert_eq!(tally.len(), 1, "{tally:?}");
        let steps = plan(&c, &tally[0]);
        assert!(
            steps.iter().all(|s| !s.contains("TEMP B-TREE"))
                && steps
                    .iter()
                    .any(|s| s.starts_with("SEARCH runs USING INDEX")),
            "{}\nsorts or reads no index: {steps:?}",
            tally[0]
        );
        let metrics = plan(
            &c,
            "SELECT m.workload FROM metrics m
             LEFT JOIN workloads w ON w.experiment_id = m.experiment_id AND w.name = m.workload
             WHERE m.experiment_id = ?1 ORDER BY w.idx, m.ord",
        );
        assert!(
            metrics.iter().any(|s| s.contains("workloads_name")),
            "{metrics:?}"
        );
    }

    #[test]
    fn postgresql_words_change_types_only() {
        let pg = for_postgresql(MIGRATIONS[0]);
        assert!(pg.contains("id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"));
        assert!(pg.contains("started_at DOUBLE PRECISION NOT NULL,         -- Unix time, seconds"));
        assert!(pg.contains("PRIMARY KEY (run_id, metric, idx)\n);"));
        assert!(!pg.contains("INTEGER") && !pg.contains("strftime") && !pg.contains("ROWID"));
        // Comments keep their words (one says "REAL"-free things like "Unix time").
        assert_eq!(pg.lines().count(), MIGRATIONS[0].lines().count());
    }
}
