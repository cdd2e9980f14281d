//! Stores of kernel experiments, made through the library as the runner
//! makes them: boots begun, identified and ended, and each guest's runs
//! recorded as rows naming their boot. Included by the tests that need it
//! as `#[path = "common/boots.rs"] mod kernels;` next to `mod common;`:
//! each such binary uses a part of it.
#![allow(dead_code)]

use std::path::Path;

use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::boots::{BootEnd, BootIdentity};
use sysdelta::store::runlog::RunRow;
use sysdelta::store::{RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

/// A fixed pseudo-random stream (no dependence on rand's version) with
/// normal deviates by Box-Muller.
pub struct Noise(u64);

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// One kernel config of a synthetic experiment: every run's `wall` is
/// `level * (1 + sd_boot * b + sd_run * e)` with b drawn once per boot and
/// e once per run (standard normal), and `ops` is 1000 / wall.
#[derive(Clone, Copy)]
pub struct Kernel<'a> {
    pub name: &'a str,
    pub level: f64,
}

pub struct Shape {
    pub boots: u32,
    pub runs: u32,
    pub sd_boot: f64,
    pub sd_run: f64,
    pub accel: &'static str,
    pub seed: u64,
}

pub fn metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec::new("wall", "s", Direction::Lower),
        MetricSpec::new("ops", "ops/s", Direction::Higher),
    ]
}

/// Create the experiment in `store` and run it: `shape.boots` boot blocks,
/// each booting every kernel once (in an order that rotates with the
/// block), each boot running `shape.runs` runs of workload `w`. Returns
/// the experiment id.
pub fn experiment(store: &Store, kernels: &[Kernel], shape: &Shape) -> i64 {
    let names: Vec<&str> = kernels.iter().map(|k| k.name).collect();
    let exp = crate::common::create_experiment(
        store,
        "kernels",
        &names,
        shape.boots * shape.runs,
        &metrics(),
    );
    let mut noise = Noise::new(shape.seed);
    for block in 0..shape.boots {
        let mut seq = 0;
        for pos in 0..kernels.len() {
            let k = kernels[(pos + block as usize) % kernels.len()];
            let at = 1_800_000_000.0 + f64::from(block * 100 + pos as u32);
            let boot = store
                .begin_boot(exp, k.name, block, pos as u32, shape.accel, at)
                .unwrap();
            store
                .boot_identity(
                    boot,
                    &BootIdentity {
                        launch_to_hello_s: 2.0 + noise.uniform(),
                        uname: &format!("6.1.0-{}", k.name),
                        proc_version: "Linux version 6.1.0",
                        cmdline: "console=ttyS0",
                        cpus: 2,
                        mem_total_kib: 480_000,
                    },
                )
                .unwrap();
            let b = noise.normal();
            for _ in 0..shape.runs {
                let wall = k.level * (1.0 + shape.sd_boot * b + shape.sd_run * noise.normal());
                record(store, exp, block, seq, k.name, boot, wall);
                seq += 1;
            }
            store
                .end_boot(
                    boot,
                    &BootEnd {
                        ok: true,
                        runs: shape.runs,
                        ..Default::default()
                    },
                )
                .unwrap();
        }
    }
    store
        .set_status(exp, sysdelta::status::ExperimentStatus::Complete)
        .unwrap();
    exp
}

/// Record one measured run of `config` in `boot`, as a guest delivers it.
pub fn record(store: &Store, exp: i64, block: u32, seq: u32, config: &str, boot: i64, wall: f64) {
    let samples = [
        MetricSamples {
            metric: "wall".into(),
            values: vec![wall],
        },
        MetricSamples {
            metric: "ops".into(),
            values: vec![1000.0 / wall],
        },
    ];
    let rec: RunRecord =
        crate::common::run_record(exp, block, seq, config, RunResult::Ok(&samples));
    let mut row = RunRow::of(&rec).unwrap();
    row.boot = Some(boot);
    store.record_row(row).unwrap();
}

/// A store file at `path` with one experiment; returns the open store and
/// the experiment id.
pub fn store_with(path: &Path, kernels: &[Kernel], shape: &Shape) -> (Store, i64) {
    let store = Store::open(path, true).unwrap();
    let exp = experiment(&store, kernels, shape);
    (store, exp)
}

/// An A/A pair: two kernels at the same level.
pub const AA: [Kernel; 2] = [
    Kernel {
        name: "k1",
        level: 1.0,
    },
    Kernel {
        name: "k2",
        level: 1.0,
    },
];

/// The A/A kexec session the audit tests read: 6 boots x 5 runs of each
/// kernel (20% spread between boots, 2% between runs), and the seventh,
/// audit-failed boot of k2 ([`add_audit_failed_boot`]).
pub fn aa_with_audit_failed_boot(path: &Path) -> (Store, i64) {
    let shape = Shape {
        boots: 6,
        runs: 5,
        sd_boot: 0.2,
        sd_run: 0.02,
        accel: "kexec",
        seed: 1,
    };
    let (store, exp) = store_with(path, &AA, &shape);
    add_audit_failed_boot(&store, exp);
    (store, exp)
}

/// A seventh boot of `k2` (boot 6), on kexec, that ran 2 runs of 50 s (far
/// from the others) and then failed its machine audit, as a kexec session
/// records one.
pub fn add_audit_failed_boot(store: &Store, exp: i64) {
    let boot = store.begin_boot(exp, "k2", 6, 0, "kexec", 1.9e9).unwrap();
    record(store, exp, 6, 0, "k2", boot, 50.0);
    record(store, exp, 6, 1, "k2", boot, 50.0);
    let reason = format!("{}: dmesg: 1 error", sysdelta::status::AUDIT_FAILED);
    store
        .end_boot(
            boot,
            &BootEnd {
                ok: false,
                reason: Some(reason),
                runs: 2,
                ..Default::default()
            },
        )
        .unwrap();
}
