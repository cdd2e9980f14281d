//! Tracer transports under overload (issue 5, after the 2005 SystemTap
//! "netlink vs relayfs" study): a producer writes fixed-size records as fast
//! as it can into a kernel transport, a consumer drains them to a file, and we
//! report CPU ns per record, MB/s and dropped records, growing the buffer
//! whenever records were dropped.
//!
//! Layout: one file per transport (`ftrace`, `netlink`, `sockets` for the
//! unix-dgram and pipe baselines, `perf` with its mmap ring), the shared producer loop
//! (`producer`), the consumer's file (`sink`), what the transports share (`pair`: a step's parameters, its
//! raw result, the pinned producer/consumer pair), one step (`step`), the ramp
//! (`sweep`), the text output (`report`), the harness-cost and memcpy
//! figures (`calib`), and the `Workload` adapter (`workload`).

pub mod calib;
pub mod cli;
pub mod cpu;
pub mod ftrace;
pub mod netlink;
pub mod pair;
pub mod perf;
pub mod producer;
pub mod rbpage;
pub mod report;
pub mod sink;
pub mod sockets;
pub mod step;
pub mod sweep;
pub mod sysinfo;
pub mod tracefs;
pub mod workload;

use std::fmt;

/// The kernel refused or capped the requested buffer size (a missing
/// capability, a sysctl maximum, memory). The sweep stops doubling there.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BufferRefused(pub String);

/// Bad input (record size, volume, unknown transport, no permission for
/// tracefs, a full disk at the consumer's file) as an `anyhow::Error`: the
/// message is the one line shown to the user, and the CLI exits with 2
/// ([`crate::error::Error::BadInput`]).
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    crate::error::bad(msg)
}

/// The transports we know how to drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Ftrace,
    Netlink,
    UnixDgram,
    Pipe,
    Perf,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Ftrace,
        Kind::Netlink,
        Kind::UnixDgram,
        Kind::Pipe,
        Kind::Perf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Ftrace => "ftrace",
            Kind::Netlink => "netlink",
            Kind::UnixDgram => "unix-dgram",
            Kind::Pipe => "pipe",
            Kind::Perf => "perf",
        }
    }

    /// Metric-name prefix (no dashes, so `unix_dgram.mb_per_s`).
    pub fn metric_prefix(self) -> &'static str {
        match self {
            Kind::UnixDgram => "unix_dgram",
            k => k.name(),
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Largest record one write may carry as one record, and why.
    pub fn max_record(self) -> (usize, &'static str) {
        match self {
            // tracing_mark_write truncates writes above TRACE_MAX_PRINT.
            Kind::Ftrace => (1024, "TRACE_MAX_PRINT of trace_marker"),
            // The sample copies this much of the producer's user stack.
            Kind::Perf => (4096, "user-stack bytes one perf sample copies here"),
            // Non-blocking pipe writes are all-or-nothing only up to PIPE_BUF.
            Kind::Pipe => (4096, "PIPE_BUF, the atomic non-blocking pipe write"),
            // One datagram per record; kept well under the socket limits.
            Kind::Netlink | Kind::UnixDgram => (65_536, "64 KiB datagram limit of this harness"),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parse a comma-separated transport list ("all" for every one).
pub fn parse_kinds(s: &str) -> anyhow::Result<Vec<Kind>> {
    if s.trim() == "all" {
        return Ok(Kind::ALL.to_vec());
    }
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let k = Kind::parse(part).ok_or_else(|| {
            bad_input(format!(
                "unknown transport '{part}' (known: ftrace, netlink, unix-dgram, pipe, perf, all)"
            ))
        })?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err(bad_input("no transport given"));
    }
    Ok(out)
}

/// Check a record size against a transport's limits.
pub fn check_record_size(kind: Kind, size: usize) -> anyhow::Result<()> {
    if size == 0 {
        return Err(bad_input(
            "record size 0: a record must carry at least 1 byte",
        ));
    }
    let (max, why) = kind.max_record();
    if size > max {
        return Err(bad_input(format!(
            "record size {size} exceeds the maximum for {kind}: {max} bytes ({why})"
        )));
    }
    Ok(())
}

/// Check that a volume is a whole number of records.
pub fn check_volume(volume: u64, size: usize) -> anyhow::Result<()> {
    if volume == 0 || volume % size as u64 != 0 {
        return Err(bad_input(format!(
            "volume {volume} bytes is not a positive multiple of the record size {size}"
        )));
    }
    Ok(())
}

/// Human size for buffers (binary units, as the kernel sizes them).
pub fn fmt_buffer(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{}MB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{}KB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

/// Human size for volumes (decimal MB = 10^6 bytes, so whole MB are whole
/// numbers of 100-byte records).
pub fn fmt_volume(bytes: u64) -> String {
    if bytes % 1_000_000 == 0 {
        format!("{}MB", bytes / 1_000_000)
    } else {
        format!("{:.2}MB", bytes as f64 / 1e6)
    }
}
