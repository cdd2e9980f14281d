//! Bootstrap workload of a large report: 100 metrics x 4 configs (one
//! baseline and 3 compared) x 1,000 samples, percentile CIs of the ratio of
//! means with 10,000 resamples each, via `ratio_cis_batch` (rayon across metrics).
//!
//! One timed operation is the whole batch (300 CIs, 400 x 10,000 resampled
//! means). The peer, measured in the same run on the same data, is one plain
//! pass computing the 400 sample means; the ratio of the two is printed.
//! Nothing is subtracted. Each is timed several times and the minimum and
//! median are printed.

use std::hint::black_box;
use std::time::{Duration, Instant};
use sysdelta::stats::bootstrap::{ratio_cis_batch, resample_means, BatchItem, DEFAULT_RESAMPLES};

const METRICS: usize = 100;
const CONFIGS: usize = 4;
const SAMPLES: usize = 1000;

/// Deterministic pseudo-normal data (sum of 12 uniforms) around 1000 with
/// 1% CoV, shifted per config.
fn data() -> Vec<Vec<Vec<f64>>> {
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..METRICS)
        .map(|_| {
            (0..CONFIGS)
                .map(|c| {
                    (0..SAMPLES)
                        .map(|_| {
                            let z: f64 = (0..12).map(|_| uniform()).sum::<f64>() - 6.0;
                            1000.0 * (1.0 + 0.01 * c as f64) * (1.0 + 0.01 * z)
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// CPU time consumed so far by all threads of this process.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time consumed so far by the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// (min wall, median wall, min process CPU) over `reps` calls of `f`.
fn time<F: FnMut()>(reps: usize, mut f: F) -> (Duration, Duration, Duration) {
    let mut walls = Vec::with_capacity(reps);
    let mut cpus = Vec::with_capacity(reps);
    for _ in 0..reps {
        let c = process_cpu();
        let t = Instant::now();
        f();
        walls.push(t.elapsed());
        cpus.push(process_cpu() - c);
    }
    walls.sort();
    cpus.sort();
    (walls[0], walls[reps / 2], cpus[0])
}

fn main() {
    let data = data();
    let items: Vec<BatchItem> = data
        .iter()
        .enumerate()
        .map(|(m, cfgs)| BatchItem {
            base: &cfgs[0],
            others: cfgs[1..].iter().map(|v| v.as_slice()).collect(),
            seed: m as u64,
        })
        .collect();
    // Single-thread kernel: one call of resample_means on 1,000 samples
    // (10,000 resampled means), minimum thread CPU time over 15 calls.
    let one = &data[0][0];
    let kernel = (0..15)
        .map(|i| {
            let c = thread_cpu();
            black_box(resample_means(black_box(one), DEFAULT_RESAMPLES, i));
            thread_cpu() - c
        })
        .min()
        .unwrap();
    println!(
        "single-thread resample_means(1000 samples, {DEFAULT_RESAMPLES} resamples): {:.2} ms CPU, \
         {:.3} ns per resampled index",
        kernel.as_secs_f64() * 1e3,
        kernel.as_secs_f64() * 1e9 / (SAMPLES * DEFAULT_RESAMPLES) as f64
    );
    let (boot_min, boot_med, boot_cpu) = time(5, || {
        black_box(ratio_cis_batch(black_box(&items), DEFAULT_RESAMPLES, 0.95));
    });
    let (mean_min, mean_med, _) = time(101, || {
        let means: Vec<f64> = black_box(&data)
            .iter()
            .flatten()
            .map(|xs| xs.iter().sum::<f64>() / xs.len() as f64)
            .collect();
        black_box(means);
    });
    let draws = (METRICS * CONFIGS * SAMPLES * DEFAULT_RESAMPLES) as f64;
    println!(
        "bootstrap batch ({METRICS} metrics x {CONFIGS} configs x {SAMPLES} samples, \
         {DEFAULT_RESAMPLES} resamples, {} threads): wall min {:.3} s, median {:.3} s; \
         CPU {:.3} s ({:.3} CPU-ns per resampled index)",
        rayon::current_num_threads(),
        boot_min.as_secs_f64(),
        boot_med.as_secs_f64(),
        boot_cpu.as_secs_f64(),
        boot_cpu.as_secs_f64() * 1e9 / draws
    );
    println!(
        "plain pass computing the {} means: min {:.1} us, median {:.1} us",
        METRICS * CONFIGS,
        mean_min.as_secs_f64() * 1e6,
        mean_med.as_secs_f64() * 1e6
    );
    println!(
        "ratio bootstrap / plain means pass: {:.0}",
        boot_min.as_secs_f64() / mean_min.as_secs_f64()
    );
    if std::env::args().any(|a| a == "--calibrate") {
        calibrate_figures();
    }
}

/// Calibration figures (not timed): 1,000 trials each, 10,000 resamples,
/// CoV from `calibration_cov`, 2% true shift for coverage, seed 2026. Run with `cargo bench --bench stats -- --calibrate`.
fn calibrate_figures() {
    use sysdelta::stats::calibrate::{
        aa_false_positive_rate, bca_coverage, calibration_cov, ci_coverage, detection_table, SHAPES,
    };
    let t = Instant::now();
    for n in [10, 20, 50] {
        for shape in SHAPES {
            let fpr = aa_false_positive_rate(
                shape,
                n,
                calibration_cov(shape),
                1000,
                DEFAULT_RESAMPLES,
                2026,
            );
            println!(
                "A/A false-positive rate, {shape:?}, n={n}: {:.1}%",
                fpr * 100.0
            );
        }
    }
    for n in [5, 10, 20] {
        for shape in SHAPES {
            let cov = ci_coverage(
                shape,
                n,
                calibration_cov(shape),
                0.02,
                1000,
                DEFAULT_RESAMPLES,
                2026,
            );
            let bca = bca_coverage(
                shape,
                n,
                calibration_cov(shape),
                0.02,
                1000,
                DEFAULT_RESAMPLES,
                2026,
            );
            println!(
                "95% CI coverage, {shape:?}, n={n}: percentile {:.1}%, BCa {:.1}%",
                cov * 100.0,
                bca * 100.0
            );
        }
    }
    for row in detection_table(
        0.01,
        &[0.005, 0.01, 0.02, 0.05],
        1000,
        DEFAULT_RESAMPLES,
        2026,
    ) {
        println!(
            "detection of a {:.1}% shift at CoV 1% with {} runs (known-variance minimum): {:.1}%",
            row.shift * 100.0,
            row.runs,
            row.rate * 100.0
        );
    }
    println!("calibration took {:.1} s", t.elapsed().as_secs_f64());
}
