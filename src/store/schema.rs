//! The store's schema, as numbered migrations.
//!
//! Version N of the schema is the result of applying `MIGRATIONS[..N]` in
//! order. A store whose version is above `MIGRATIONS.len()` was written by a
//! newer sysdelta and is refused unchanged.

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
];
