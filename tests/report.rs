//! What `report`, `compare`, `history` and the fleet report print, in each
//! format, from stores made for the purpose.
//!
//! One test binary for the area, one module per file under tests/report/
//! (each was a binary of its own: grouped, the suite links fewer). The
//! tests of one binary run on parallel threads: none of these changes
//! shared machine state (those that do hold the machine lock, see
//! tests/common/machine.rs, and stay binaries of their own).

#[macro_use]
mod common;
#[path = "common/boots.rs"]
mod kernels;

#[path = "report/audit.rs"]
mod audit;
#[path = "report/benchstat_layout.rs"]
mod benchstat_layout;
#[path = "report/benchstat_verdicts.rs"]
mod benchstat_verdicts;
#[path = "report/boots.rs"]
mod boots;
#[path = "report/ci_estimable.rs"]
mod ci_estimable;
#[path = "report/compare_labels.rs"]
mod compare_labels;
#[path = "report/escaping.rs"]
mod escaping;
#[path = "report/fleet.rs"]
mod fleet;
#[path = "report/history_newest.rs"]
mod history_newest;
#[path = "report/history_steps.rs"]
mod history_steps;
#[path = "report/host_filter.rs"]
mod host_filter;
#[path = "report/host_golden.rs"]
mod host_golden;
#[path = "report/hostile_values.rs"]
mod hostile_values;
#[path = "report/html.rs"]
mod html;
#[path = "report/html_phone.rs"]
mod html_phone;
#[path = "report/html_short_runs.rs"]
mod html_short_runs;
#[path = "report/html_summary_plot.rs"]
mod html_summary_plot;
#[path = "report/hyperfine_scripts.rs"]
mod hyperfine_scripts;
#[path = "report/json_files.rs"]
mod json_files;
#[path = "report/readable.rs"]
mod readable;
#[path = "report/schema.rs"]
mod schema;
#[path = "report/telemetry_family.rs"]
mod telemetry_family;
#[path = "report/units.rs"]
mod units;
