//! The HTML report: one self-contained file (inline CSS and SVG, no
//! scripts, no network fetches) with the forest-plot summary, every sample
//! per metric, time series, transport sweeps and the environment.
//!
//! Plots are drawn by plotters' SVG backend (see `plot.rs`); every piece of
//! text that comes from a command, plan, host or store is escaped by [`esc`].

mod forest;
mod lines;
mod page;
mod plot;
mod samples;

use std::collections::HashMap;

use anyhow::Result;

use super::analysis::{self, Analysis};
use crate::error::bad;
use crate::store::{ExperimentData, ExperimentInfo, SeriesRecord, Store};

pub use samples::median_ci;

/// One experiment the report covers: a report covers one, a comparison several.
#[derive(Clone, Debug)]
pub struct SourceExperiment {
    /// How the report names it: its label, or `#id`.
    pub title: String,
    pub info: ExperimentInfo,
    /// What it was imported from; None when sysdelta measured it.
    pub imported_from: Option<String>,
}

/// What the HTML report shows beyond the analysis.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub sources: Vec<SourceExperiment>,
    /// (config, workload, series) of every measured run that recorded one.
    pub series: Vec<(String, String, SeriesRecord)>,
    /// Shown above everything else (e.g. fingerprint differences of a comparison).
    pub banner: Vec<String>,
}

impl Extras {
    /// Extras of one stored experiment: its own info, source and series.
    pub fn from_store(store: &Store, data: &ExperimentData) -> Result<Extras> {
        let id = data.info.id;
        let runs: HashMap<i64, (&str, &str, bool)> = data
            .runs
            .iter()
            .map(|r| (r.id, (r.config.as_str(), r.workload.as_str(), r.warmup)))
            .collect();
        let series = store
            .series(id)?
            .into_iter()
            .filter_map(|(run, s)| {
                let (c, w, warm) = runs.get(&run)?;
                (!warm).then(|| (c.to_string(), w.to_string(), s))
            })
            .collect();
        Ok(Extras {
            sources: vec![SourceExperiment {
                title: data.info.label.clone().unwrap_or_else(|| format!("#{id}")),
                info: data.info.clone(),
                imported_from: store.source(id)?,
            }],
            series,
            banner: Vec::new(),
        })
    }
}

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Render the HTML report of analysed data.
pub fn render(data: &ExperimentData, a: &Analysis, x: &Extras) -> Result<String> {
    page::render(data, a, x)
}

/// The HTML report of one stored experiment, with its series and source.
pub fn render_stored(store: &Store, id: i64, opts: &analysis::Options) -> Result<String> {
    let data = store.load(id)?;
    let a = analysis::analyze(&data, opts).map_err(bad)?;
    let x = Extras::from_store(store, &data)?;
    render(&data, &a, &x)
}
