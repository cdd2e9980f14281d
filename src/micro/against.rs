//! `sysdelta micro --against-lmbench DIR`: each metric that has an LMbench 3
//! counterpart is measured by sysdelta and by the LMbench binary in DIR
//! (a built LMbench 3 `bin/<os>` directory), alternating which goes first
//! from round to round, and the sysdelta/LMbench ratio table is printed:
//! per metric the median of both tools over the rounds, the median ratio
//! of the pairs, its range, and each tool's run-to-run CoV.
//!
//! LMbench is not packaged, so this is not a CI test; its output on the
//! development machine is recorded in docs/micro.md. LMbench's sample
//! length is set with its `ENOUGH` environment variable to sysdelta's
//! minimum sample length, so both tools time samples of the same length.
//! Files LMbench needs (lat_mmap, lat_pagefault, lat_sig prot) are the
//! same 8 MiB file sysdelta maps, written the same way and afresh for
//! every command: how the page cache holds a file (one large write gives
//! large folios; a file written back after lat_mmap's stores does not)
//! changes the fault and mapping figures of both tools several-fold.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::catalog::catalog;
use super::harness::{cov, median};
use super::selection::Selection;
use super::{run_suite, MicroOptions, MicroOutcome};
use crate::error::Error;

/// The binaries every comparison needs; a directory without them is not a
/// built LMbench 3.
pub const REQUIRED: [&str; 11] = [
    "lat_syscall",
    "lat_sig",
    "lat_proc",
    "lat_pipe",
    "lat_unix",
    "lat_udp",
    "lat_tcp",
    "lat_ctx",
    "lat_mmap",
    "lat_pagefault",
    "bw_mem",
];

/// Fewest rounds (pairs) a comparison takes.
pub const MIN_ROUNDS: usize = 5;

/// One pair: a sysdelta metric and the LMbench command(s) measuring the
/// same quantity (several commands are averaged, as null I/O is).
struct Pair {
    metric: &'static str,
    /// Arguments after the binary name; `{file}` is the 8 MiB file,
    /// `{mem}` the memory bandwidth buffer size.
    cmds: &'static [&'static [&'static str]],
    /// A server to start before (`-s`) and stop after (`-S localhost`).
    server: Option<&'static str>,
}

const PAIRS: &[Pair] = &[
    Pair {
        metric: "proc.null_call",
        cmds: &[&["lat_syscall", "null"]],
        server: None,
    },
    Pair {
        metric: "proc.null_io",
        cmds: &[&["lat_syscall", "read"], &["lat_syscall", "write"]],
        server: None,
    },
    Pair {
        metric: "proc.stat",
        cmds: &[&["lat_syscall", "stat"]],
        server: None,
    },
    Pair {
        metric: "proc.fstat",
        cmds: &[&["lat_syscall", "fstat"]],
        server: None,
    },
    Pair {
        metric: "proc.open_close",
        cmds: &[&["lat_syscall", "open"]],
        server: None,
    },
    Pair {
        metric: "proc.sig_install",
        cmds: &[&["lat_sig", "install"]],
        server: None,
    },
    Pair {
        metric: "proc.sig_handle",
        cmds: &[&["lat_sig", "catch"]],
        server: None,
    },
    Pair {
        metric: "vm.prot_fault",
        cmds: &[&["lat_sig", "prot", "{file}"]],
        server: None,
    },
    Pair {
        metric: "proc.fork_exit",
        cmds: &[&["lat_proc", "fork"]],
        server: None,
    },
    Pair {
        metric: "ctx.2p_0k",
        cmds: &[&["lat_ctx", "-s", "0", "2"]],
        server: None,
    },
    Pair {
        metric: "ctx.2p_16k",
        cmds: &[&["lat_ctx", "-s", "16", "2"]],
        server: None,
    },
    Pair {
        metric: "lat.pipe",
        cmds: &[&["lat_pipe"]],
        server: None,
    },
    Pair {
        metric: "lat.unix",
        cmds: &[&["lat_unix"]],
        server: None,
    },
    Pair {
        metric: "lat.udp",
        cmds: &[&["lat_udp", "localhost"]],
        server: Some("lat_udp"),
    },
    Pair {
        metric: "lat.tcp",
        cmds: &[&["lat_tcp", "localhost"]],
        server: Some("lat_tcp"),
    },
    Pair {
        metric: "vm.mmap",
        cmds: &[&["lat_mmap", "8m", "{file}"]],
        server: None,
    },
    Pair {
        metric: "vm.page_fault",
        cmds: &[&["lat_pagefault", "{file}"]],
        server: None,
    },
    Pair {
        metric: "bw.mem_read",
        cmds: &[&["bw_mem", "{mem}", "rd"]],
        server: None,
    },
    Pair {
        metric: "bw.mem_write",
        cmds: &[&["bw_mem", "{mem}", "wr"]],
        server: None,
    },
];

/// Refuse a directory that is not a built LMbench 3: one line.
pub fn check_dir(dir: &Path) -> Result<(), Error> {
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|b| !dir.join(b).is_file())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::bad(format!(
        "micro: --against-lmbench {}: not a built LMbench 3 bin directory (missing {}); give e.g. lmbench/bin/x86_64-linux-gnu",
        dir.display(),
        missing.join(", ")
    )))
}

/// The last number in LMbench's output (every binary used here prints its
/// result as the last number: "Simple syscall: 0.1 microseconds",
/// "8.388608 46", "67.11 14132.35", "2 4.56").
pub fn last_number(text: &str) -> Option<f64> {
    text.split(|c: char| c.is_whitespace() || c == ':')
        .rev()
        .find_map(|w| w.parse::<f64>().ok().filter(|v| v.is_finite()))
}

struct Lm<'a> {
    dir: &'a Path,
    file: PathBuf,
    mem: String,
    enough_us: u128,
    cwd: &'a Path,
}

impl Lm<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(self.dir.join(args[0]));
        for a in &args[1..] {
            c.arg(match *a {
                "{file}" => self.file.as_os_str().to_owned(),
                "{mem}" => self.mem.clone().into(),
                other => other.into(),
            });
        }
        c.env("ENOUGH", self.enough_us.to_string())
            .current_dir(self.cwd)
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> anyhow::Result<f64> {
        let o = self
            .command(args)
            .output()
            .map_err(|e| anyhow::anyhow!("{}: {e}", args.join(" ")))?;
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        anyhow::ensure!(
            o.status.success(),
            "{} failed ({}): {}",
            args.join(" "),
            o.status,
            text.trim()
        );
        last_number(&text)
            .ok_or_else(|| anyhow::anyhow!("{}: no number in {:?}", args.join(" "), text.trim()))
    }

    fn measure(&self, p: &Pair) -> anyhow::Result<f64> {
        if p.cmds.iter().any(|c| c.contains(&"{file}")) {
            // A fresh file for every command that maps it, as sysdelta's
            // every run has: lat_mmap writes to its mapping, and a file
            // written back after that is held in smaller folios, which
            // made lat_pagefault read 10x more per page afterwards.
            let _ = std::fs::remove_file(&self.file);
            super::fs::write_test_file(&self.file)?;
        }
        if let Some(s) = p.server {
            // The server forks itself into the background and the parent exits.
            self.command(&[s, "-s"]).status()?;
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let r: anyhow::Result<Vec<f64>> = p.cmds.iter().map(|c| self.run(c)).collect();
        if let Some(s) = p.server {
            let _ = self
                .command(&[s, "-S", "localhost"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let v = r?;
        Ok(v.iter().sum::<f64>() / v.len() as f64)
    }
}

/// One metric's figures over the rounds.
struct Row {
    metric: &'static str,
    sd: Vec<f64>,
    lm: Vec<f64>,
    failed: Option<String>,
}

/// The comparison, `repeat` rounds (1: the default of [`MIN_ROUNDS`]);
/// prints the ratio table to `out`, progress to stderr unless `quiet`.
pub fn run(
    dir: &Path,
    repeat: usize,
    quiet: bool,
    sel: &Selection,
    opts: &MicroOptions,
    cancel: &AtomicBool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    check_dir(dir)?;
    let rounds = if repeat == 1 { MIN_ROUNDS } else { repeat };
    if rounds < MIN_ROUNDS {
        return Err(Error::bad(format!(
            "micro: --against-lmbench needs at least {MIN_ROUNDS} rounds (--repeat), got {rounds}"
        ))
        .into());
    }
    let pairs: Vec<&Pair> = PAIRS.iter().filter(|p| sel.contains(p.metric)).collect();
    if pairs.is_empty() {
        return Err(Error::bad(
            "micro: --against-lmbench: the filter selects no metric with an LMbench counterpart",
        )
        .into());
    }
    let dir = std::fs::canonicalize(dir)?;
    let scratch = tempfile::Builder::new()
        .prefix("sysdelta-lmbench-")
        .tempdir_in(&opts.tmpdir)
        .map_err(|e| Error::bad(format!("micro: temp dir {}: {e}", opts.tmpdir.display())))?;
    let file = scratch.path().join("file-8m");
    super::fs::write_test_file(&file)?;
    let mem_bytes = super::mem::bw_size(&super::mem::CacheInfo::read());
    let lm = Lm {
        dir: &dir,
        file,
        mem: format!("{}m", mem_bytes >> 20),
        enough_us: opts.min_sample.as_micros(),
        cwd: scratch.path(),
    };
    let mut one = opts.clone();
    one.progress = false;
    // Each sysdelta run selects one metric: give it that metric's share of
    // the budget, as a run of the whole selection would.
    if let Some(p) = &mut one.precision {
        p.budget /= pairs.len() as u32;
    }
    let t0 = Instant::now();
    let mut rows: Vec<Row> = pairs
        .iter()
        .map(|p| Row {
            metric: p.metric,
            sd: Vec::new(),
            lm: Vec::new(),
            failed: None,
        })
        .collect();
    for round in 0..rounds {
        for (p, row) in pairs.iter().zip(rows.iter_mut()) {
            if row.failed.is_some() {
                continue;
            }
            // Alternate which tool goes first, by round and by metric.
            let sysdelta_first = (round + rows_index(p)) % 2 == 0;
            for k in 0..2 {
                let r = if (k == 0) == sysdelta_first {
                    sysdelta_value(p.metric, &one, cancel).map(|v| row.sd.push(v))
                } else {
                    lm.measure(p).map(|v| row.lm.push(v))
                };
                if let Err(e) = r {
                    if e.downcast_ref::<super::Cancelled>().is_some() {
                        return Err(e);
                    }
                    row.failed = Some(format!("{e:#}"));
                    break;
                }
            }
            if !quiet {
                eprintln!(
                    "micro: round {}/{rounds} {}: sysdelta {} LMbench {}",
                    round + 1,
                    p.metric,
                    row.sd.last().map_or("-".into(), |v| format!("{v:.4}")),
                    row.lm.last().map_or("-".into(), |v| format!("{v:.4}"))
                );
            }
        }
    }
    print_table(&rows, &dir, rounds, opts, t0, out)
}

/// Position of a pair in PAIRS (so neighbouring metrics start with
/// different tools).
fn rows_index(p: &Pair) -> usize {
    PAIRS.iter().position(|x| x.metric == p.metric).unwrap_or(0)
}

fn sysdelta_value(metric: &str, opts: &MicroOptions, cancel: &AtomicBool) -> anyhow::Result<f64> {
    let sel = Selection::only(metric).ok_or_else(|| anyhow::anyhow!("no metric {metric}"))?;
    match run_suite(&sel, opts, cancel)?.into_iter().next() {
        Some(MicroOutcome::Measured(r)) => Ok(r.median),
        Some(MicroOutcome::Skipped { reason, .. }) => anyhow::bail!("sysdelta: {reason}"),
        None => anyhow::bail!("sysdelta: {metric} not run"),
    }
}

fn print_table(
    rows: &[Row],
    dir: &Path,
    rounds: usize,
    opts: &MicroOptions,
    t0: Instant,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let cat = catalog();
    let title = format!(
        "sysdelta / LMbench 3 ({}), {rounds} interleaved rounds, samples of >= {} ms (LMbench ENOUGH={})",
        dir.display(),
        opts.min_sample.as_millis(),
        opts.min_sample.as_micros()
    );
    writeln!(out, "{title}")?;
    writeln!(out, "{}", "-".repeat(title.len().min(100)))?;
    writeln!(
        out,
        "{:<18} {:>5} {:>11} {:>11} {:>6} {:>13} {:>7} {:>7}  note",
        "metric", "unit", "sysdelta", "LMbench", "ratio", "ratio range", "CoV sd%", "CoV lm%"
    )?;
    for r in rows {
        let e = cat.iter().find(|e| e.name == r.metric);
        let unit = e.map_or("", |e| e.unit);
        if let Some(f) = &r.failed {
            writeln!(out, "{:<18} {unit:>5} failed: {f}", r.metric)?;
            continue;
        }
        let ratios: Vec<f64> = r.sd.iter().zip(&r.lm).map(|(a, b)| a / b).collect();
        let rm = median(&ratios);
        let (lo, hi) = ratios
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
                (l.min(*x), h.max(*x))
            });
        let mut note = e.and_then(|e| e.note).unwrap_or("").to_string();
        if !(0.85..=1.15).contains(&rm) && note.is_empty() {
            note = "outside 0.85-1.15".into();
        }
        writeln!(
            out,
            "{:<18} {unit:>5} {:>11} {:>11} {:>6.2} {:>13} {:>7.2} {:>7.2}  {note}",
            r.metric,
            super::table::fmt_value(median(&r.sd)),
            super::table::fmt_value(median(&r.lm)),
            rm,
            format!("{lo:.2}-{hi:.2}"),
            cov(&r.sd) * 100.0,
            cov(&r.lm) * 100.0,
        )?;
    }
    writeln!(
        out,
        "ratio: median over rounds of sysdelta/LMbench (bandwidths: MB/s, MB = 10^6 bytes, both); CoV: run-to-run CoV of each tool's per-round value; {:.0} s wall",
        t0.elapsed().as_secs_f64()
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_number_reads_every_output_shape() {
        assert_eq!(
            last_number("Simple syscall: 0.1234 microseconds\n"),
            Some(0.1234)
        );
        assert_eq!(last_number("8.388608 46\n"), Some(46.0));
        assert_eq!(last_number("\n\"size=16k ovr=1.23\n2 4.56\n"), Some(4.56));
        assert_eq!(last_number("nothing"), None);
    }

    #[test]
    fn every_pair_names_a_catalogue_metric() {
        let cat = catalog();
        for p in PAIRS {
            assert!(cat.iter().any(|e| e.name == p.metric), "{}", p.metric);
            for c in p.cmds {
                assert!(REQUIRED.contains(&c[0]), "{}", c[0]);
            }
        }
    }
}
