//! `perf_record`: `perf record -a` to a file during each run (software
//! `cpu-clock` by default, which works where there is no PMU). Samples
//! written and samples lost become metrics of the run.

use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::child::{self, Tracked};
use super::{check, value};
use crate::config::journal::{EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;
use crate::metric::{Direction, MetricSamples, MetricSpec};

pub const DEFAULT_OUTPUT: &str = "/var/tmp/sysdelta-perf.data";

/// Least space above the free-space floor a profile may start with.
const MIN_BUDGET: u64 = 16 << 20;

/// Bytes perf may write into `dir`: what is free above a floor of 1% of the
/// file system, at least 64 MiB, kept for everything else (the store's
/// commits included). A cpu-clock profile writes about 40 bytes per sample
/// (80 KB/s at 1 kHz on 2 CPUs), so the floor only matters on a nearly full
/// disk. None when the file system cannot be asked.
fn space_budget(dir: &std::path::Path) -> Option<u64> {
    let st = nix::sys::statvfs::statvfs(dir).ok()?;
    let (avail, floor) = super::capture::avail_and_floor(&st, 100, 64 << 20);
    Some(avail.saturating_sub(floor))
}

/// Why sysdelta may not replace what is at `output` (None: nothing is
/// there, or an earlier profile is). It removes the output before each run
/// and, unless `keep`, after the last, so whatever the plan names there is
/// lost: only a perf.data file (perf's magic `PERFILE2`, either byte
/// order) or an empty file (a perf that died before its header) may be.
pub fn not_a_profile(output: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let m = match std::fs::symlink_metadata(output) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("cannot stat it: {e}")),
        Ok(m) => m,
    };
    if !m.file_type().is_file() {
        return Some("it exists and is not a regular file".into());
    }
    if m.len() == 0 {
        return None;
    }
    let mut magic = [0u8; 8];
    let read = std::fs::File::open(output).and_then(|mut f| f.read_exact(&mut magic));
    match read {
        Ok(()) if &magic == b"PERFILE2" || &magic == b"2ELIFREP" => None,
        _ => Some("it exists and is not a perf.data file".into()),
    }
}

/// Hardware event names that need a CPU PMU.
const HW_EVENTS: &[&str] = &[
    "cycles",
    "cpu-cycles",
    "instructions",
    "cache-misses",
    "cache-references",
    "branches",
    "branch-misses",
    "bus-cycles",
    "ref-cycles",
];

pub struct PerfRecord {
    event: String,
    freq: u64,
    output: PathBuf,
    keep: bool,
    journal: JournalHandle,
    entries: Vec<EntryId>,
    running: Option<Tracked>,
    /// Bytes perf may write this run (`--max-size`); None when unknown.
    budget: Option<u64>,
}

impl PerfRecord {
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<PerfRecord, Error> {
        let t = value::table("perf_record", v, &["event", "freq", "output", "keep"])?;
        let output = value::string("perf_record", t, "output")?.unwrap_or(DEFAULT_OUTPUT.into());
        if !output.starts_with('/') {
            return Err(Error::bad(format!(
                "perf_record.output must be an absolute path, not `{output}`"
            )));
        }
        Ok(PerfRecord {
            event: value::string("perf_record", t, "event")?.unwrap_or("cpu-clock".into()),
            freq: value::positive("perf_record", t, "freq")?.unwrap_or(999),
            output: PathBuf::from(output),
            keep: value::boolean("perf_record", t, "keep")?.unwrap_or(false),
            journal,
            entries: Vec::new(),
            running: None,
            budget: None,
        })
    }

    /// Fail (changing nothing) when the output is not [`not_a_profile`].
    fn refuse_to_replace_a_non_profile(&self) -> Result<()> {
        match not_a_profile(&self.output) {
            Some(why) => bail!(
                "perf_record: output {}: {why}; not replacing it",
                self.output.display()
            ),
            None => Ok(()),
        }
    }

    fn has_pmu() -> bool {
        std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
            || std::path::Path::new("/sys/bus/event_source/devices/cpu_core").exists()
    }

    /// Stop perf (SIGINT makes it finish the file), then count samples and
    /// lost records from `perf report --stats`.
    fn finish(&mut self) -> Result<(f64, f64)> {
        let Some(mut t) = self.running.take() else {
            return Ok((0.0, 0.0));
        };
        let clean = child::stop(&mut t, libc::SIGINT, Duration::from_secs(30))?;
        self.journal.lock().unwrap().done(t.entry)?;
        if !clean {
            bail!("perf_record: perf record did not stop within 30 s of SIGINT (killed)");
        }
        let out = Command::new("perf")
            .args(["report", "--stats", "-i"])
            .arg(&self.output)
            .stdin(Stdio::null())
            .output()
            .context("perf_record: cannot run perf report --stats")?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(parse_stats(&text))
    }
}

/// (samples, lost) from `perf report --stats`: SAMPLE events, and LOST plus
/// LOST_SAMPLES records (each record stands for one or more lost samples;
/// the count of records is what --stats shows).
pub fn parse_stats(text: &str) -> (f64, f64) {
    let mut samples = 0.0;
    let mut lost = 0.0;
    for line in text.lines() {
        let line = line.trim();
        let num = |rest: &str| -> f64 {
            rest.split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0.0)
        };
        if let Some(rest) = line.strip_prefix("SAMPLE events:") {
            // The aggregated block comes first; per-event blocks repeat it.
            if samples == 0.0 {
                samples = num(rest);
            }
        } else if let Some(rest) = line
            .strip_prefix("LOST events:")
            .or_else(|| line.strip_prefix("LOST_SAMPLES events:"))
        {
            lost += num(rest);
        }
    }
    (samples, lost)
}

impl ConfigKind for PerfRecord {
    fn kind(&self) -> &'static str {
        "perf_record"
    }

    fn preflight(&self) -> Vec<String> {
        let mut out: Vec<String> = check::root("perf_record", "for system-wide perf record -a")
            .into_iter()
            .collect();
        if check::which("perf").is_none() {
            out.push(
                "perf_record: perf is not installed (not in PATH; apt-get install linux-perf)"
                    .into(),
            );
        }
        if HW_EVENTS.contains(&self.event.as_str()) && !PerfRecord::has_pmu() {
            out.push(format!(
                "perf_record: event `{}` needs a hardware PMU, which this machine lacks (use cpu-clock or task-clock)",
                self.event
            ));
        }
        if let Some(dir) = self.output.parent() {
            out.extend(check::writable_dir("perf_record", dir));
            out.extend(check::private_dir("perf_record", "output's directory", dir));
        }
        if let Some(why) = not_a_profile(&self.output) {
            out.push(format!(
                "perf_record: output {}: {why}; sysdelta replaces the output each run, so name a new file",
                self.output.display()
            ));
        }
        out
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        // Before journaling its removal: leave would delete it otherwise.
        self.refuse_to_replace_a_non_profile()?;
        if !self.keep {
            self.entries = self.journal.lock().unwrap().record_all(
                "perf_record",
                vec![UndoAction::RemovePath {
                    path: self.output.clone(),
                    recursive: false,
                }],
            )?;
        }
        Ok(LaunchMods::default())
    }

    /// Starts perf and waits until it has written its file header (perf is
    /// recording by then), at most 10 s. perf may write only the space above
    /// the floor kept free on the output's file system (`--max-size`), so a
    /// long profile cannot fill the disk the store lives on.
    fn before_run(&mut self) -> Result<()> {
        self.finish().ok();
        self.refuse_to_replace_a_non_profile()?;
        let _ = std::fs::remove_file(&self.output);
        let dir = self.output.parent().unwrap_or(std::path::Path::new("/"));
        self.budget = space_budget(dir);
        if self.budget.is_some_and(|b| b < MIN_BUDGET) {
            bail!(
                "perf_record: too little free space on {} for the profile (the last 1% of the \
                 file system, at least 64 MiB, stays free for the store)",
                dir.display()
            );
        }
        // Made here, new (O_EXCL: not through a symlink someone put there
        // meanwhile) and empty: perf then opens this file rather than
        // renaming anything to .old, and in a sticky directory such as
        // /var/tmp no one else can swap it for a symlink before perf opens it.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&self.output)
            .with_context(|| format!("perf_record: cannot create {}", self.output.display()))?;
        let mut cmd = Command::new("perf");
        cmd.args(["record", "-a", "-q", "-e", &self.event, "-F"])
            .arg(self.freq.to_string());
        if let Some(b) = self.budget {
            cmd.arg(format!("--max-size={}K", b / 1024));
        }
        cmd.arg("-o")
            .arg(&self.output)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut t = child::spawn(cmd, &self.journal, "perf_record")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::fs::metadata(&self.output)
                .map(|m| m.len() > 0)
                .unwrap_or(false)
            {
                break;
            }
            if let Some(st) = t.child.try_wait()? {
                self.journal.lock().unwrap().done(t.entry)?;
                bail!("perf_record: perf record exited at start ({st})");
            }
            if Instant::now() > deadline {
                child::stop(&mut t, libc::SIGKILL, Duration::from_secs(1))?;
                self.journal.lock().unwrap().done(t.entry)?;
                bail!("perf_record: perf record did not start writing within 10 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.running = Some(t);
        Ok(())
    }

    fn after_run(&mut self) -> Result<Vec<MetricSamples>> {
        if self.running.is_none() {
            return Ok(Vec::new());
        }
        let (samples, lost) = self.finish()?;
        let written = std::fs::metadata(&self.output)
            .map(|m| m.len())
            .unwrap_or(0);
        if let Some(b) = self.budget.filter(|&b| written + (1 << 20) >= b) {
            // perf stopped writing at --max-size (it stops within a few
            // dozen KiB of it): the samples after that are missing and not
            // counted as lost, so the run cannot be trusted.
            bail!(
                "perf_record: the profile reached its space budget ({} MiB free above the \
                 floor); samples after that are missing",
                b >> 20
            );
        }
        Ok(vec![
            MetricSamples {
                metric: "perf_samples".into(),
                values: vec![samples],
            },
            MetricSamples {
                metric: "perf_lost".into(),
                values: vec![lost],
            },
        ])
    }

    fn metrics(&self) -> Vec<MetricSpec> {
        vec![
            MetricSpec::new("perf_samples", "samples", Direction::Higher),
            MetricSpec::new("perf_lost", "records", Direction::Lower),
        ]
    }

    fn leave(&mut self) -> Result<()> {
        let r = self.finish();
        let ids = std::mem::take(&mut self.entries);
        self.journal.lock().unwrap().undo_entries(&ids)?;
        r.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_earlier_profile_may_be_replaced() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("perf.data");
        assert_eq!(not_a_profile(&out), None, "nothing there");
        std::fs::write(&out, "").unwrap();
        assert_eq!(not_a_profile(&out), None, "empty");
        std::fs::write(&out, b"PERFILE2\x68\0\0\0").unwrap();
        assert_eq!(not_a_profile(&out), None, "a profile");
        std::fs::write(&out, b"2ELIFREP").unwrap();
        assert_eq!(not_a_profile(&out), None, "a big-endian profile");
        std::fs::write(&out, "root:x:0:0::/root:/bin/sh\n").unwrap();
        assert!(not_a_profile(&out)
            .unwrap()
            .contains("not a perf.data file"));
        std::fs::write(&out, "PERF").unwrap();
        assert!(not_a_profile(&out)
            .unwrap()
            .contains("not a perf.data file"));
        let link = d.path().join("link.data");
        std::fs::write(&out, b"PERFILE2").unwrap();
        std::os::unix::fs::symlink(&out, &link).unwrap();
        assert!(not_a_profile(&link).unwrap().contains("not a regular file"));
        assert!(not_a_profile(d.path())
            .unwrap()
            .contains("not a regular file"));
    }

    #[test]
    fn parses_report_stats() {
        let text = "Aggregated stats:\n  TOTAL events: 10\n  SAMPLE events: 4058 (91.0%)\n  LOST events: 2 (0.1%)\ncpu-clock stats:\n  SAMPLE events: 4058\n";
        assert_eq!(parse_stats(text), (4058.0, 2.0));
    }
}
