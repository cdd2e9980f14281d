//! Behaviour of the decision helpers that have no library reference: TOST
//! classification, sequential stopping and the
//! warning detectors' thresholds.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sysdelta::stats::bootstrap::BatchItem;
use sysdelta::stats::detect::{looks_bimodal, mad_outliers, too_few_runs};
use sysdelta::stats::sequential::{batch_precision_reached, precision_reached};
use sysdelta::stats::tost::{tost_from_ci, tost_ratio, Equivalence};

fn normal(rng: &mut SmallRng) -> f64 {
    let u: f64 = rng.random();
    let v: f64 = rng.random();
    (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[test]
fn tost_rule_classifies_cis_against_the_band() {
    use Equivalence::*;
    assert_eq!(tost_from_ci((0.995, 1.004), 0.01), Equivalent);
    assert_eq!(tost_from_ci((0.99, 1.01), 0.01), Equivalent);
    assert_eq!(tost_from_ci((1.02, 1.05), 0.01), NotEquivalent);
    assert_eq!(tost_from_ci((0.90, 0.985), 0.01), NotEquivalent);
    assert_eq!(tost_from_ci((0.995, 1.02), 0.01), Undecided);
    assert_eq!(tost_from_ci((0.97, 1.03), 0.01), Undecided);
}

#[test]
fn tost_on_data() {
    let mut rng = SmallRng::seed_from_u64(5);
    let base: Vec<f64> = (0..50).map(|_| 100.0 + 0.3 * normal(&mut rng)).collect();
    let same: Vec<f64> = (0..50).map(|_| 100.0 + 0.3 * normal(&mut rng)).collect();
    let slower: Vec<f64> = (0..50).map(|_| 105.0 + 0.3 * normal(&mut rng)).collect();
    assert_eq!(
        tost_ratio(&base, &same, 0.01, 5000, 1),
        Some(Equivalence::Equivalent)
    );
    assert_eq!(
        tost_ratio(&base, &slower, 0.01, 5000, 1),
        Some(Equivalence::NotEquivalent)
    );
    assert_eq!(tost_ratio(&base, &same, 0.0, 5000, 1), None);
}

#[test]
fn precision_stopping_waits_for_every_ci() {
    assert!(precision_reached(
        &[Some((0.99, 1.005)), Some((1.0, 1.01))],
        0.02
    ));
    assert!(!precision_reached(
        &[Some((0.99, 1.005)), Some((0.9, 1.1))],
        0.02
    ));
    assert!(!precision_reached(&[Some((0.99, 1.005)), None], 0.02));
    assert!(!precision_reached(&[], 0.02));
    let mut rng = SmallRng::seed_from_u64(8);
    let base: Vec<f64> = (0..200).map(|_| 100.0 + normal(&mut rng)).collect();
    let other: Vec<f64> = (0..200).map(|_| 101.0 + normal(&mut rng)).collect();
    let items = [BatchItem {
        base: &base,
        others: vec![&other],
        seed: 1,
    }];
    // sd 1% per sample, n = 200: the 95% CI is about 0.55% wide.
    assert!(batch_precision_reached(&items, 2000, 0.95, 0.01));
    assert!(!batch_precision_reached(&items, 2000, 0.95, 0.002));
}

#[test]
fn too_few_runs_follows_the_smallest_exact_p() {
    // 3 vs 3: the smallest two-sided exact p is 2/20 = 0.1.
    assert!(too_few_runs(3, 3, 0.05, 1));
    // 5 vs 5: 2/252 = 0.0079, rejectable alone but not among 10 tests.
    assert!(!too_few_runs(5, 5, 0.05, 1));
    assert!(too_few_runs(5, 5, 0.05, 10));
    assert!(too_few_runs(0, 5, 0.05, 1));
}

#[test]
fn bimodality_and_outlier_rules() {
    let mut rng = SmallRng::seed_from_u64(4);
    let uni: Vec<f64> = (0..200).map(|_| normal(&mut rng)).collect();
    let bi: Vec<f64> = (0..200)
        .map(|i| normal(&mut rng) + if i % 2 == 0 { 0.0 } else { 6.0 })
        .collect();
    assert!(!looks_bimodal(&uni));
    assert!(looks_bimodal(&bi));
    assert!(!looks_bimodal(&bi[..9]), "needs n >= 10");
    let mut xs = vec![10.0, 10.2, 9.9, 10.1, 9.8, 10.0, 10.3, 9.7];
    xs.push(14.0);
    assert_eq!(mad_outliers(&xs), vec![8]);
    assert!(
        mad_outliers(&[1.0, 1.0, 1.0, 5.0]).is_empty(),
        "MAD 0: no scale"
    );
}
