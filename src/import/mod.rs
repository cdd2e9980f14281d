//! Import results people already have, so sysdelta can judge them:
//! hyperfine `--export-json`, Go benchmark output (benchstat's input), and
//! LMbench 3 result files.
//!
//! Every parser reads whole files first and checks every value (a finite
//! number, not negative where its unit cannot be) and fails with one line
//! naming the file and line before anything is stored; then the whole
//! experiment is stored in one transaction, as `complete`, or not at all.
//! The stored experiment is marked with its source (schema v2
//! `experiments.source`) and an `import` event, so every report says the
//! samples were not measured by sysdelta.

pub mod gobench;
pub mod hyperfine;
pub mod lmbench;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::Result;

use crate::error::{bad, Error};
use crate::metric::MetricSamples;
use crate::metric::MetricSpec;
use crate::overrides::{Order, Overrides};
use crate::store::whole::WholeExperiment;
use crate::store::{
    ExperimentData, NewExperiment, RunRecord, RunResult, RunStatus, Store, StoredRun,
};

/// What `sysdelta import` was given besides the format and the files.
#[derive(Clone, Debug)]
pub struct ImportOptions<'a> {
    /// hyperfine: the workload name of the imported `wall` metric.
    pub workload: &'a str,
}

/// One import format: the one declaration `sysdelta import`'s format
/// argument, its `--help` and the parsing read. Adding one is its file and
/// one entry in [`IMPORTERS`].
pub struct Importer {
    /// Its name on the command line (`sysdelta import NAME FILES...`).
    pub name: &'static str,
    /// One line for `--help`: what the files are and what becomes a config.
    pub help: &'static str,
    /// Parse the files, each (path, text), checking every value.
    pub parse: ParseFn,
}

/// How an importer reads its files, each (path, text).
pub type ParseFn = fn(&[(String, String)], &ImportOptions) -> Result<Imported, Error>;

/// Every import format, in the order `--help` lists them.
pub const IMPORTERS: &[Importer] = &[
    Importer {
        name: "hyperfine",
        help: "hyperfine --export-json: each command a config",
        parse: |files, o| match files {
            [(p, t)] => hyperfine::parse(p, t, o.workload),
            _ => Err(Error::bad("import hyperfine takes one JSON file")),
        },
    },
    Importer {
        name: "gobench",
        help: "go test -bench output: each file a config",
        parse: |files, _| gobench::parse(files),
    },
    Importer {
        name: "lmbench",
        help: "LMbench 3 results/<os>/<host>.N files: each file a run, configs by <os>/<host>",
        parse: |files, _| lmbench::parse(files),
    },
];

/// The import format `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Importer> {
    IMPORTERS.iter().find(|i| i.name == name)
}

/// One imported run: one execution of one workload under one config.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedRun {
    pub config: String,
    pub workload: String,
    pub samples: Vec<MetricSamples>,
    /// Set when the tool says the run failed; its samples are then not kept.
    pub failure: Option<Failure>,
    /// The status the tool says the run's command exited with (hyperfine's
    /// `exit_codes`), stored with an ok run as sysdelta's own are; None
    /// where the file does not say.
    pub exit_code: Option<i32>,
}

/// Why an imported run failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub reason: String,
    pub exit_code: Option<i32>,
}

/// Parsed results, ready to store as one experiment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Imported {
    /// The format, for the source note ("hyperfine JSON").
    pub format: String,
    pub name: String,
    pub configs: Vec<String>,
    /// (workload, its metrics) in first-seen order.
    pub metrics: Vec<(String, Vec<MetricSpec>)>,
    /// Runs in the order the tool executed them (as far as the file tells).
    pub runs: Vec<ImportedRun>,
    /// What the file says about the machine (LMbench headers, Go's cpu line).
    pub fingerprint: BTreeMap<String, String>,
    /// Human-readable summary of where the data came from, stored as the plan text.
    pub notes: String,
    /// Where each workload is in `metrics`, so that declaring is not a
    /// scan of every workload (100,000 Go benchmarks took 100 s).
    pub declared: Declared,
}

/// A workload's place in [`Imported::metrics`]; rebuilt from it when the
/// two disagree (`metrics` is public, and may be set directly). Equal to
/// any other: it says nothing `metrics` does not.
#[derive(Clone, Debug, Default)]
pub struct Declared(HashMap<String, usize>);

impl PartialEq for Declared {
    fn eq(&self, _: &Declared) -> bool {
        true
    }
}

impl Imported {
    /// Declare `spec` as a metric of `workload` (once; first-seen order).
    pub fn declare(&mut self, workload: &str, spec: MetricSpec) {
        let index = &mut self.declared.0;
        let stale = index
            .get(workload)
            .is_some_and(|&i| self.metrics.get(i).map(|(w, _)| w.as_str()) != Some(workload));
        if stale || index.len() != self.metrics.len() {
            index.clear();
            for (i, (w, _)) in self.metrics.iter().enumerate() {
                index.entry(w.clone()).or_insert(i);
            }
        }
        match index.get(workload) {
            Some(&i) => {
                let specs = &mut self.metrics[i].1;
                if !specs.iter().any(|s| s.name == spec.name) {
                    specs.push(spec);
                }
            }
            None => {
                index.insert(workload.to_string(), self.metrics.len());
                self.metrics.push((workload.to_string(), vec![spec]));
            }
        }
    }

    pub fn add_config(&mut self, name: &str) {
        if !self.configs.iter().any(|c| c == name) {
            self.configs.push(name.to_string());
        }
    }
}

/// Why the opened input `f` (its metadata `m`) is not read: a named FIFO
/// another user owns (its open or read waits on them: one planted in /tmp
/// held root's import forever), or a device other than a terminal (a link
/// to `/dev/zero` would be read until memory ran out). A pipe handed to
/// sysdelta (`<(hyperfine ...)`, `/dev/stdin`), whoever made it, and a
/// plain file are read.
fn not_readable_input(f: &std::fs::File, m: &std::fs::Metadata) -> Option<String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_char_device() || t.is_block_device() {
        return match nix::unistd::isatty(f) {
            Ok(true) => None,
            _ => Some("a device, not a file".into()),
        };
    }
    // What this descriptor is: "pipe:[N]" for a pipe with no name, which
    // only whoever started sysdelta could have handed it.
    let what = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).ok();
    let unnamed = what.is_some_and(|w| w.to_string_lossy().starts_with("pipe:"));
    if t.is_fifo() && !unnamed && !crate::sys::trust::trusted_uids().contains(&m.uid()) {
        return Some(format!(
            "a FIFO uid {} owns, not you or root (its writer could keep this waiting)",
            m.uid()
        ));
    }
    None
}

/// Read a file for import; a missing or unreadable file is bad input, and
/// so is an input [`not_readable_input`] refuses.
pub fn read(path: &Path) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: &dyn std::fmt::Display| bad(format!("{}: cannot read: {e}", path.display()));
    // Not blocking at the open: a FIFO without a writer would.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| cannot(&e))?;
    let m = f.metadata().map_err(|e| cannot(&e))?;
    if let Some(why) = not_readable_input(&f, &m) {
        return Err(bad(format!("{}: {why}", path.display())));
    }
    crate::sys::nonblock::make_blocking(&f).map_err(|e| cannot(&e))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| cannot(&e))?;
    String::from_utf8(bytes).map_err(|_| {
        bad(format!(
            "{}: not a text file (invalid UTF-8)",
            path.display()
        ))
    })
}

/// Store parsed results as a new, complete experiment in one transaction
/// (nothing is stored if any of it fails); returns its id. Runs are stored
/// in file order as blocks 0, 1, 2, ... (order `sequential`), so the
/// run-sequence plots show the order the tool used.
pub fn store(store: &Store, imp: &Imported, label: Option<&str>, source: &str) -> Result<i64> {
    whole(imp, label, source, |w| store.insert_whole(w))
}

/// [`store`], handing `report` the stored experiment as [`Store::load`]
/// would read it back, before it is committed (see
/// [`Store::insert_whole_reported`]: an error of `report` stores nothing).
pub fn store_reported<T>(
    store: &Store,
    imp: &Imported,
    label: Option<&str>,
    source: &str,
    report: impl FnOnce(&Store, ExperimentData) -> Result<T>,
) -> Result<T> {
    whole(imp, label, source, |w| {
        store.insert_whole_reported(w, report)
    })
}

/// What [`store_reported`] would hand on, with nothing stored anywhere (see
/// [`crate::store::whole::unstored_without_runs`]): `import --no-store`.
/// The runs are taken over, not copied: the number of `imp`'s run, from 1,
/// is its id.
pub fn unstored(mut imp: Imported, label: Option<&str>, source: &str) -> Result<ExperimentData> {
    let mut data = whole(
        &imp,
        label,
        source,
        crate::store::whole::unstored_without_runs,
    )?;
    data.runs = (std::mem::take(&mut imp.runs).into_iter())
        .enumerate()
        .map(|(i, r)| stored_run(i, r))
        .collect();
    Ok(data)
}

/// The `i`th imported run as it reads back once stored: what [`record`]
/// makes of it, as the store keeps that ([`Store::insert_whole_reported`]:
/// failed with an empty stderr tail, or ok with the file's exit code, -0
/// read back as 0, as SQLite does), its strings and samples moved, not
/// copied.
fn stored_run(i: usize, r: ImportedRun) -> StoredRun {
    let (status, reason, stderr_tail, exit_code, samples) = match r.failure {
        None => (
            RunStatus::Ok,
            None,
            None,
            r.exit_code,
            (r.samples.into_iter())
                .map(|mut m| {
                    for v in &mut m.values {
                        *v = crate::store::whole::as_read_back(*v, false);
                    }
                    (m.metric, m.values)
                })
                .collect(),
        ),
        Some(f) => (
            RunStatus::Failed,
            Some(f.reason),
            Some(String::new()),
            f.exit_code,
            BTreeMap::new(),
        ),
    };
    StoredRun {
        id: i as i64 + 1,
        block: i as u32,
        seq: 0,
        config: r.config,
        workload: r.workload,
        warmup: false,
        status,
        reason,
        stderr_tail,
        exit_code,
        started_at: 0.0,
        samples,
        boot_id: None,
    }
}

/// Where the samples of `imp`, read from the files `source`, came from,
/// as the store keeps it (`experiments.source`) and reports show it.
pub fn source_note(imp: &Imported, source: &str) -> String {
    format!("{} imported from {source}", imp.format)
}

/// `imp` as one whole experiment, handed to `insert`.
fn whole<T>(
    imp: &Imported,
    label: Option<&str>,
    source: &str,
    insert: impl FnOnce(&WholeExperiment) -> Result<T>,
) -> Result<T> {
    if imp.runs.is_empty() {
        return Err(bad(format!("{source}: no results to import")));
    }
    let workloads: Vec<String> = imp.metrics.iter().map(|(w, _)| w.clone()).collect();
    let mut per_cell: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for r in &imp.runs {
        *per_cell.entry((&r.config, &r.workload)).or_default() += 1;
    }
    let runs = per_cell.values().copied().max().unwrap_or(0);
    let host = imp
        .fingerprint
        .get("host")
        .cloned()
        .unwrap_or_else(|| "unknown (imported)".into());
    let overrides = Overrides::default();
    let note = source_note(imp, source);
    let whole = WholeExperiment {
        experiment: NewExperiment {
            name: &imp.name,
            label,
            plan_source: source,
            plan_text: &imp.notes,
            overrides: &overrides,
            host: &host,
            fingerprint: &imp.fingerprint,
            seed: 0,
            order: Order::Sequential,
            runs,
            warmup: 0,
            baseline: &imp.configs[0],
            configs: imp.configs.clone(),
            workloads,
        },
        metrics: &imp.metrics,
        runs: imp
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| record(i, r))
            .collect(),
        source: &note,
        events: vec![(
            "import",
            format!("samples {note}: not measured by sysdelta (run order as in the file, no randomized interleaving)"),
        )],
    };
    insert(&whole)
}

/// The record of the `i`th imported run (block `i`).
fn record(i: usize, r: &ImportedRun) -> RunRecord<'_> {
    RunRecord {
        experiment_id: 0,
        block: i as u32,
        seq: 0,
        config: &r.config,
        workload: &r.workload,
        warmup: false,
        started_at: 0.0,
        result: match &r.failure {
            None => match r.exit_code {
                Some(exit_code) => RunResult::Exited {
                    samples: &r.samples,
                    exit_code,
                },
                None => RunResult::Ok(&r.samples),
            },
            Some(f) => RunResult::Failed {
                reason: &f.reason,
                stderr_tail: "",
                exit_code: f.exit_code,
            },
        },
        series: &[],
        profile: &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Direction;

    fn spec(name: &str) -> MetricSpec {
        MetricSpec::new(name, "ns", Direction::Lower)
    }

    /// Workloads keep their first-seen order and each metric is declared
    /// once, however often a file repeats them, also after `metrics` was
    /// set directly.
    #[test]
    fn declare_keeps_first_seen_order_once_each() {
        let mut imp = Imported::default();
        for _ in 0..3 {
            for w in ["b", "a", "c"] {
                imp.declare(w, spec("ns/op"));
            }
            imp.declare("a", spec("B/op"));
        }
        let names = |imp: &Imported| -> Vec<(String, Vec<String>)> {
            (imp.metrics.iter())
                .map(|(w, s)| (w.clone(), s.iter().map(|m| m.name.clone()).collect()))
                .collect()
        };
        let want = |v: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> {
            v.iter()
                .map(|(w, s)| (w.to_string(), s.iter().map(|m| m.to_string()).collect()))
                .collect()
        };
        assert_eq!(
            names(&imp),
            want(&[
                ("b", &["ns/op"]),
                ("a", &["ns/op", "B/op"]),
                ("c", &["ns/op"])
            ])
        );
        imp.metrics = vec![("c".into(), vec![spec("x")]), ("z".into(), vec![])];
        imp.declare("z", spec("y"));
        imp.declare("b", spec("y"));
        imp.declare("c", spec("x"));
        assert_eq!(
            names(&imp),
            want(&[("c", &["x"]), ("z", &["y"]), ("b", &["y"])])
        );
    }
}
