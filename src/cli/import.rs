//! `sysdelta import`: hyperfine JSON, Go benchmark output or LMbench 3
//! results, checked whole, then stored as one experiment.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::error::{bad, Error};
use crate::import;
use crate::store::Store;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ImportFormat {
    /// hyperfine --export-json: each command a config.
    Hyperfine,
    /// go test -bench output: each file a config.
    Gobench,
    /// LMbench 3 results/<os>/<host>.N files: each file a run, configs by <os>/<host>.
    Lmbench,
}

#[derive(Args)]
pub struct ImportArgs {
    /// What the files hold.
    #[arg(value_enum)]
    pub format: ImportFormat,
    /// The files to import.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Label the experiment (for `compare` and `history`).
    #[arg(long)]
    pub label: Option<String>,
    /// hyperfine: the workload name of the imported `wall` metric.
    #[arg(long, default_value = "hyperfine")]
    pub workload: String,
}

/// `sysdelta import`; prints the new experiment's id.
pub fn run(a: &ImportArgs, store_path: &Path) -> Result<()> {
    let mut files = Vec::new();
    for f in &a.files {
        files.push((f.display().to_string(), import::read(f)?));
    }
    let imp = match a.format {
        ImportFormat::Hyperfine => {
            let [(p, t)] = files.as_slice() else {
                return Err(bad("import hyperfine takes one JSON file"));
            };
            import::hyperfine::parse(p, t, &a.workload)
        }
        ImportFormat::Gobench => import::gobench::parse(&files),
        ImportFormat::Lmbench => import::lmbench::parse(&files),
    }
    .map_err(Error::into_bad_input)?;
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let store = Store::open(store_path, true)?;
    let id = import::store(&store, &imp, a.label.as_deref(), &names.join(", "))?;
    crate::sys::stderr::say!(
        "sysdelta: imported {} runs of {} configs as experiment {id} in {}",
        imp.runs.len(),
        imp.configs.len(),
        store_path.display()
    );
    println!("{id}");
    Ok(())
}
