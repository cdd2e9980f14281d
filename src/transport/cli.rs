//! `sysdelta transport`: run the sweep and print the raw blocks and summary.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use super::sink::SinkTarget;
use super::sweep::{ramp, run_sweep, SweepOptions};
use super::{bad_input, calib, parse_kinds, report, sysinfo::SysHeader};

#[derive(clap::Args, Debug, Clone)]
pub struct TransportArgs {
    /// Scale the volume ramp down 20x (5 MB to 50 MB by 5 MB).
    #[arg(long)]
    pub quick: bool,
    /// Transports, comma separated: ftrace,netlink,unix-dgram,pipe,perf or all.
    #[arg(long, default_value = "all")]
    pub transports: String,
    /// Bytes per record.
    #[arg(long, default_value_t = 100)]
    pub record_size: usize,
    /// First volume in MB (10^6 bytes); default 100 (5 with --quick).
    #[arg(long)]
    pub from_mb: Option<u64>,
    /// Last volume in MB; default 1000 (50 with --quick).
    #[arg(long)]
    pub to_mb: Option<u64>,
    /// Volume step in MB; default 100 (5 with --quick).
    #[arg(long)]
    pub step_mb: Option<u64>,
    /// Starting buffer in KiB (ftrace: per CPU).
    #[arg(long, default_value_t = 1024)]
    pub buffer_kb: u64,
    /// Largest buffer in KiB the doubling may reach.
    #[arg(long, default_value_t = 65536)]
    pub max_buffer_kb: u64,
    /// Directory for the consumer's file (default: the temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Consume to /dev/null instead of a file (transport cost only).
    #[arg(long)]
    pub null: bool,
    /// Keep the consumer's files.
    #[arg(long)]
    pub keep: bool,
    /// CPUs to use, comma separated (producer on the first, consumer on the second).
    #[arg(long)]
    pub cpus: Option<String>,
    /// No per-step progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// Turn the arguments into sweep options (bad input is a [`crate::error::Error::BadInput`]).
pub fn options(args: &TransportArgs) -> anyhow::Result<SweepOptions> {
    let (f0, t0, s0) = if args.quick {
        (5, 50, 5)
    } else {
        (100, 1000, 100)
    };
    let mb = 1_000_000u64;
    let from = args.from_mb.unwrap_or(f0);
    let to = args.to_mb.unwrap_or(t0);
    let step = args.step_mb.unwrap_or(s0);
    if from == 0 || step == 0 || to < from {
        return Err(bad_input(format!(
            "volume ramp {from}..{to} MB by {step} MB: need 0 < from <= to and step > 0"
        )));
    }
    let cpus = match &args.cpus {
        None => None,
        Some(s) => Some(
            s.split(',')
                .map(|c| c.trim().parse::<usize>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| bad_input(format!("--cpus '{s}': expected numbers like 0,1")))?,
        ),
    };
    Ok(SweepOptions {
        transports: parse_kinds(&args.transports)?,
        transports_explicit: args.transports.trim() != "all",
        record_size: args.record_size,
        volumes: ramp(from * mb, to * mb, step * mb),
        start_buffer: args.buffer_kb * 1024,
        max_buffer: args.max_buffer_kb * 1024,
        sink: if args.null {
            SinkTarget::Null
        } else {
            SinkTarget::Dir(args.dir.clone().unwrap_or_else(std::env::temp_dir))
        },
        keep: args.keep,
        cpus,
        progress: !args.quiet,
        hold_consumer: false,
    })
}

pub fn run(args: &TransportArgs) -> anyhow::Result<()> {
    let opts = options(args)?;
    opts.validate()?;
    let cancel = Arc::new(AtomicBool::new(false));
    let ids = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM]
        .iter()
        .filter_map(|&s| signal_hook::flag::register(s, Arc::clone(&cancel)).ok())
        .collect::<Vec<_>>();
    let t0 = Instant::now();
    let header = SysHeader::capture();
    let result = run_sweep(&opts, &cancel);
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    let steps = result?;
    let cal = calib::measure(opts.record_size);
    let mut out = std::io::stdout().lock();
    report::print_raw_blocks(&mut out, &header, &steps)?;
    report::print_summary(&mut out, &steps, Some(&cal))?;
    writeln!(out, "Sweep wall time: {:.1} s", t0.elapsed().as_secs_f64())?;
    Ok(())
}
