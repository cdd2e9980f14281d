//! `sysdelta import`: hyperfine JSON, Go benchmark output or LMbench 3
//! results, checked whole, then stored as one experiment.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::error::Error;
use crate::import;
use crate::store::Store;

/// The formats `import` takes, from the importers' registry, each with
/// its line of help.
fn formats() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        import::IMPORTERS
            .iter()
            .map(|i| clap::builder::PossibleValue::new(i.name).help(i.help)),
    )
}

#[derive(Args)]
pub struct ImportArgs {
    /// What the files hold.
    #[arg(value_parser = formats())]
    pub format: String,
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
    let importer = import::find(&a.format).expect("clap takes only registered formats");
    let options = import::ImportOptions {
        workload: &a.workload,
    };
    let imp = (importer.parse)(&files, &options).map_err(Error::into_bad_input)?;
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let store = Store::open(store_path, true)?;
    let id = import::store(&store, &imp, a.label.as_deref(), &names.join(", "))?;
    crate::sys::stderr::say!(
        "sysdelta: imported {} of {} as experiment {id} in {}",
        crate::words::count(imp.runs.len(), "run"),
        crate::words::count(imp.configs.len(), "config"),
        store_path.display()
    );
    println!("{id}");
    Ok(())
}
