//! The producer loop shared by every transport.

use std::io;
use std::time::Instant;

use super::cpu::CpuTime;

/// What the producer did in one step.
#[derive(Clone, Copy, Debug)]
pub struct Produced {
    /// Records the producer tried to write.
    pub attempted: u64,
    /// Writes the transport refused because it was full (EAGAIN, EBADF from a
    /// full non-overwriting ring buffer): records lost at the producer.
    pub refused: u64,
    /// Producer thread's CPU time over the loop.
    pub cpu: CpuTime,
    /// When the first record was about to be written.
    pub started: Instant,
}

/// Outcome of handing one record to a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    Accepted,
    /// The transport was full and the record is lost (a tracer does not block).
    Refused,
}

/// Write `records` records of `size` bytes through `send`, as fast as possible.
///
/// One operation is one call of `send` with a record whose first 8 bytes (when
/// `size >= 8`) are its sequence number, little endian; the rest is filler.
/// The only per-record harness work is that 8-byte store, a counter and a
/// branch; `stop` is polled every 4096 records. Nothing is subtracted: the
/// harness cost is measured separately ([`super::calib::harness_ns_per_record`])
/// and shown next to the results.
pub fn produce(
    records: u64,
    size: usize,
    stop: &dyn Fn() -> bool,
    mut send: impl FnMut(&[u8]) -> io::Result<Sent>,
) -> io::Result<Produced> {
    let mut rec = vec![b'x'; size];
    if size > 0 {
        rec[size - 1] = b'\n';
    }
    let mut refused = 0u64;
    let mut attempted = 0u64;
    let started = Instant::now();
    let cpu0 = CpuTime::now();
    for seq in 0..records {
        if seq & 4095 == 0 && stop() {
            break;
        }
        if size >= 8 {
            rec[..8].copy_from_slice(&seq.to_le_bytes());
        }
        if send(&rec)? == Sent::Refused {
            refused += 1;
        }
        attempted += 1;
    }
    let cpu = CpuTime::now().since(cpu0);
    Ok(Produced {
        attempted,
        refused,
        cpu,
        started,
    })
}

/// Sequence-number bookkeeping at the consumer: counts gaps (records the
/// transport lost between two received ones).
#[derive(Clone, Copy, Debug, Default)]
pub struct SeqTracker {
    next: u64,
    pub gaps: u64,
}

impl SeqTracker {
    /// Note a received record (only meaningful when records are >= 8 bytes).
    pub fn see(&mut self, rec: &[u8]) {
        if rec.len() < 8 {
            return;
        }
        let seq = u64::from_le_bytes(rec[..8].try_into().unwrap_or([0; 8]));
        if seq > self.next {
            self.gaps += seq - self.next;
        }
        self.next = self.next.max(seq + 1);
    }

    /// Records never seen after the last received one, given how many the
    /// producer attempted.
    pub fn tail_missing(&self, attempted: u64) -> u64 {
        attempted.saturating_sub(self.next)
    }
}
