//! Issue 31, statistics at the edges: the CI at 2 to 10 units a side, the
//! boot-level test at few boots, plan-runs' recommendations, hosts named in
//! A/A fleets, and the reference values of Welch's t. Every simulation is
//! seeded and sized to finish in seconds; `sysdelta calibrate` runs the
//! same functions larger.

use sysdelta::commands::calibrate::{
    boot_table, coverage_table, fleet_aa, plan_checks, EdgeSizes, FLEET_METRICS,
};
use sysdelta::stats::power::ReportTest;

fn sizes() -> EdgeSizes {
    EdgeSizes {
        trials: 2000,
        resamples: 1000,
        fleet_trials: 400,
        plan_trials: 4000,
    }
}

#[test]
fn print_everything() {
    let s = sizes();
    for r in coverage_table(&s, 7) {
        println!("{:?} {:?}", r.shape, r.cells);
    }
    for b in boot_table(&s, 7) {
        println!("{b:?}");
    }
    for k in [3, 5, 8] {
        println!("{:?}", fleet_aa(k, FLEET_METRICS, s.fleet_trials, 1000, 9));
    }
    for c in plan_checks(ReportTest::Rank, &[4, 5, 6, 7, 8, 10, 14, 20], &s, 3) {
        println!("{c:?}");
    }
    for c in plan_checks(ReportTest::Welch, &[3, 4, 5, 6, 7], &s, 3) {
        println!("{c:?}");
    }
}
