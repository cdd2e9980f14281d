//! The two reference figures shown next to the results: the harness's own
//! cost per record, and the single-core memcpy ceiling for the record size.

use std::hint::black_box;
use std::time::Instant;

use super::cpu::CpuTime;
use super::producer::{produce, Sent};

#[derive(Clone, Debug, serde::Serialize)]
pub struct Calibration {
    pub record_size: usize,
    /// CPU ns per record of the producer loop with a transport that does
    /// nothing: the per-record cost the harness adds to every measurement.
    pub harness_ns_per_record: f64,
    /// MB/s (10^6 bytes) of copying records of this size one after another
    /// into a 64 MiB buffer on one core.
    pub memcpy_mb_per_s: f64,
}

/// One operation: one pass of [`produce`]'s loop body calling a `send` that
/// only passes the record to `black_box`. Nothing subtracted; 50M records,
/// timed by the thread's exact CPU clock.
pub fn harness_ns_per_record(size: usize) -> f64 {
    let n = 50_000_000u64;
    let never = || false;
    let p = produce(n, size, &never, |rec| {
        black_box(rec);
        Ok(Sent::Accepted)
    });
    match p {
        Ok(p) => p.cpu.total().as_nanos() as f64 / p.attempted.max(1) as f64,
        Err(_) => f64::NAN,
    }
}

/// One operation: copy one `size`-byte record to the next slot of a 64 MiB
/// destination (wrapping), i.e. the cheapest possible "transport" of a record
/// into memory the consumer could read. Timed over 512 MiB by thread CPU.
pub fn memcpy_mb_per_s(size: usize) -> f64 {
    let size = size.max(1);
    let dst_len = (64usize << 20) / size * size;
    let mut dst = vec![0u8; dst_len];
    let src = vec![0x5au8; size];
    // Touch the destination once so page faults are not timed.
    dst.iter_mut().step_by(4096).for_each(|b| *b = 1);
    let total: usize = 512 << 20;
    let copies = total / size;
    let c0 = CpuTime::now();
    let t0 = Instant::now();
    let mut off = 0;
    for _ in 0..copies {
        dst[off..off + size].copy_from_slice(black_box(&src));
        off += size;
        if off == dst_len {
            off = 0;
        }
    }
    black_box(&dst);
    let cpu = CpuTime::now().since(c0).total().as_secs_f64();
    let secs = if cpu > 0.0 {
        cpu
    } else {
        t0.elapsed().as_secs_f64()
    };
    (copies * size) as f64 / 1e6 / secs.max(1e-9)
}

pub fn measure(size: usize) -> Calibration {
    Calibration {
        record_size: size,
        harness_ns_per_record: harness_ns_per_record(size),
        memcpy_mb_per_s: memcpy_mb_per_s(size),
    }
}
