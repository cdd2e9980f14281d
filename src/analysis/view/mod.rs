//! The one view of an experiment report: everything any format shows,
//! built once from the stored experiment and its analysis, so renderers
//! never read the store, compute a statistic or pick a unit.
//!
//! Every number of a metric comes with that metric's unit: [`ReportView::shown`]
//! is the analysis with each metric in its display unit (its spec's unit
//! renamed with it), [`ReportView::stored`] the same in stored units (what
//! JSON carries beside the raw samples), and the sections that draw or
//! tabulate values on their own (execution order, the LMbench summary)
//! hold them with the unit they are in ([`order::ExecutionOrder::unit`],
//! [`micro::MicroCell::unit`]), converted here by [`units`].

pub mod micro;
pub mod order;
pub mod sections;
pub mod trimmed;
pub mod units;

use anyhow::Result;

use crate::analysis::Analysis;
use crate::monitor::profile::Profile;
use crate::store::Store;
pub use crate::store::{
    Event, ExperimentData, ExperimentInfo, SeriesRecord, StoredBoot, StoredMetric, StoredRun,
};

/// One experiment the report covers: a report covers one, a comparison several.
#[derive(Clone, Debug)]
pub struct SourceExperiment {
    /// How the report names it: its label, or `#id`.
    pub title: String,
    pub info: ExperimentInfo,
    /// What it was imported from; None when sysdelta measured it.
    pub imported_from: Option<String>,
}

/// What a report shows beyond the analysis: where its experiments came
/// from, the series their runs recorded, and lines shown above everything.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub sources: Vec<SourceExperiment>,
    /// (config, workload, series) of every measured run that recorded one.
    pub series: Vec<(String, String, SeriesRecord)>,
    /// Shown above everything else (e.g. fingerprint differences of a comparison).
    pub banner: Vec<String>,
}

impl Extras {
    /// Extras of one experiment: its own info and the series its measured
    /// runs recorded (`ExperimentData::series`).
    pub fn from_data(data: &ExperimentData) -> Extras {
        Extras {
            sources: vec![SourceExperiment {
                title: (data.info.label.clone()).unwrap_or_else(|| data.info.shown_id()),
                info: data.info.clone(),
                imported_from: None,
            }],
            series: sections::run_series(data),
            banner: Vec::new(),
        }
    }

    /// [`Extras::from_data`] plus where the samples came from, if imported.
    pub fn from_store(store: &Store, data: &ExperimentData) -> Result<Extras> {
        let mut x = Extras::from_data(data);
        x.sources[0].imported_from = store.source(data.info.id)?;
        Ok(x)
    }

    /// [`Extras::from_data`] of an experiment whose samples came from
    /// `imported_from` (what [`Extras::from_store`] reads of a stored one).
    pub fn imported(data: &ExperimentData, imported_from: String) -> Extras {
        let mut x = Extras::from_data(data);
        x.sources[0].imported_from = Some(imported_from);
        x
    }
}

/// The stored records a report carries whole (JSON's raw samples).
#[derive(Clone, Debug)]
pub struct Raw {
    pub info: ExperimentInfo,
    pub metrics: Vec<StoredMetric>,
    pub runs: Vec<StoredRun>,
    pub events: Vec<Event>,
    pub boots: Vec<StoredBoot>,
}

/// What an experiment report says, in every unit it is shown in.
#[derive(Clone, Debug)]
pub struct ReportView {
    /// The analysis in the stored units.
    pub stored: Analysis,
    /// The analysis with each metric in its display unit.
    pub shown: Analysis,
    /// Per metric of `shown`: its runs in execution order, in its display unit.
    pub order: Vec<order::ExecutionOrder>,
    /// The LMbench summary's rows, in the units its headings name.
    pub micro: Vec<micro::MicroRow>,
    /// Per config, the kernel profile (empty: none recorded).
    pub profiles: Vec<(String, Profile)>,
    /// Series workloads reported per interval, medians per config.
    pub workload_series: Vec<sections::WorkloadSeries>,
    /// Runs per config and workload.
    pub run_counts: sections::RunCounts,
    pub extras: Extras,
    pub raw: Raw,
}

/// The view of `data` analysed as `a`, each metric shown in the unit
/// [`units::metric_scale`] picks (`time_unit` forces time metrics' unit).
pub fn build(
    data: &ExperimentData,
    a: &Analysis,
    time_unit: Option<units::TimeUnit>,
    extras: Extras,
) -> ReportView {
    from_parts(data.clone(), a.clone(), time_unit, extras)
}

/// [`build`], taking the data and its analysis over: the view keeps the
/// raw records JSON carries without copying every run.
pub fn from_parts(
    data: ExperimentData,
    a: Analysis,
    time_unit: Option<units::TimeUnit>,
    extras: Extras,
) -> ReportView {
    let scales: Vec<units::Scale> = a
        .metrics
        .iter()
        .map(|m| units::metric_scale(m, time_unit))
        .collect();
    let measured = order::measured_by_workload(&data);
    let order = a
        .metrics
        .iter()
        .zip(&scales)
        .map(|(m, s)| {
            let runs = measured
                .get(m.workload.as_str())
                .map_or(&[][..], Vec::as_slice);
            order::points(runs, &a.configs, &m.spec.name, s)
        })
        .collect();
    drop(measured);
    ReportView {
        shown: units::rescale(&a, time_unit),
        order,
        micro: micro::rows(&a),
        profiles: sections::profiles(&data, &a.configs),
        workload_series: sections::workload_series(&data, &a.configs),
        run_counts: sections::run_counts(&data, &a.configs),
        extras,
        raw: Raw {
            info: data.info,
            metrics: data.metrics,
            runs: data.runs,
            events: data.events,
            boots: data.boots,
        },
        stored: a,
    }
}
