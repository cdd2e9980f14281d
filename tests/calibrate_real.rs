//! `sysdelta calibrate` part (c): one real A/A experiment through the
//! library, end to end, leaving nothing behind.

use sysdelta::commands::calibrate::real_aa_once;
use sysdelta::plan::Order;

fn leftovers() -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sysdelta-calibrate-"))
        .collect()
}

/// A small sequential A/A experiment (3 runs per config, 64 KiB per run)
/// runs, is analyzed (a wall delta of b against a exists) and removes its
/// temporary store. Whether it is flagged depends on this machine's noise,
/// so it is printed, not asserted.
#[test]
fn real_aa_experiment_runs_and_cleans_up() {
    let before = leftovers();
    let o = real_aa_once(Order::Sequential, 3, 1, 64 << 10).unwrap();
    eprintln!("sequential A/A: {o:?}");
    assert!(o.wall_delta_pct.is_some_and(f64::is_finite));
    let after = leftovers();
    let new: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
    assert!(new.is_empty(), "left behind: {new:?}");
}
