//! `blktrace`: the kernel's blk tracer on named block devices, through
//! tracefs (`/sys/block/DEV/trace/enable` + `current_tracer = blk`), with
//! per-CPU readers writing the trace to files under `dir` during each run
//! (put `dir` on another filesystem than the traced devices, as the 2007
//! study did). Bytes written and events lost are metrics of the run.
//!
//! `devices = "fsops"` traces exactly the loop devices the fsops workload
//! created (published in [`super::registry`] by its `prepare`).
//!
//! The blktrace tool is not used even when installed: the tracefs path
//! needs nothing outside the kernel.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::capture::{Capture, RunTotals};
use super::trace_reader::{journal_outputs, leave_outputs};
use super::{check, registry, tracefs, value};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;
use crate::metric::MetricSamples;
use crate::metric::MetricSpec;

pub const DEFAULT_DIR: &str = "/var/tmp/sysdelta-blktrace";

/// The trace files are `dir/blk.cpuN`.
const PREFIX: &str = "blk";

#[derive(Clone, Debug, PartialEq)]
enum Devices {
    Named(Vec<String>),
    /// Devices a workload published under this name.
    FromWorkload(String),
}

pub struct Blktrace {
    devices: Devices,
    dir: PathBuf,
    keep: bool,
    buffer_size_kb: Option<u64>,
    journal: JournalHandle,
    mount: Option<EntryId>,
    entries: Vec<EntryId>,
    /// The per-device `trace/enable` entries (undone in parallel).
    device_entries: Vec<EntryId>,
    outputs: Vec<EntryId>,
    capture: Option<Capture>,
}

/// "/dev/sda" or "sda" -> "sda", the disk's name under /sys/block. Refused
/// unless it is one path component: sysdelta writes "1" to
/// `/sys/block/<name>/trace/enable` as root, and a name with `/` or `..`
/// would point that write anywhere. (Every entry of /sys/block is a block
/// device, so a name that stays inside it names one.)
fn dev_name(d: &str) -> Result<String, Error> {
    let name = d.strip_prefix("/dev/").unwrap_or(d);
    if check::one_component(name) {
        Ok(name.to_string())
    } else {
        Err(Error::bad(format!(
            "blktrace.devices: `{}` is not a whole disk's name (\"sda\" or \"/dev/sda\"; \
             a disk under a /dev subdirectory by its /sys/block name, e.g. \"dm-0\")",
            d.escape_debug()
        )))
    }
}

fn trace_dir(name: &str) -> PathBuf {
    Path::new("/sys/block").join(name).join("trace")
}

fn block_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|r| {
            r.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// "major:minor" numbers of a disk and its partitions.
fn dev_numbers(name: &str) -> Vec<String> {
    let base = Path::new("/sys/block").join(name);
    let mut v: Vec<String> = std::fs::read_to_string(base.join("dev"))
        .map(|s| vec![s.trim().to_string()])
        .unwrap_or_default();
    for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with(name) {
            if let Ok(s) = std::fs::read_to_string(e.path().join("dev")) {
                v.push(s.trim().to_string());
            }
        }
    }
    v
}

/// Whether `dir` (or its nearest existing ancestor) lives on disk `name`.
fn dir_is_on(dir: &Path, name: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mut d = dir.to_path_buf();
    while !d.exists() && d.pop() {}
    let Ok(m) = std::fs::metadata(&d) else {
        return false;
    };
    let dev = m.dev();
    let here = format!("{}:{}", libc::major(dev), libc::minor(dev));
    dev_numbers(name).contains(&here)
}

impl Blktrace {
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<Blktrace, Error> {
        let t = value::table("blktrace", v, &["devices", "dir", "keep", "buffer_size_kb"])?;
        let devices = match t.get("devices") {
            // A string is a workload's name, unless it is a /dev path.
            Some(toml::Value::String(s)) if s.starts_with("/dev/") => {
                Devices::Named(vec![dev_name(s)?])
            }
            Some(toml::Value::String(s)) => Devices::FromWorkload(s.clone()),
            Some(_) => Devices::Named(
                value::strings("blktrace", t, "devices")?
                    .unwrap_or_default()
                    .iter()
                    .map(|d| dev_name(d))
                    .collect::<Result<_, _>>()?,
            ),
            None => {
                return Err(Error::bad(
                    "blktrace needs devices = [\"sda\", ...] or devices = \"fsops\"",
                ))
            }
        };
        if devices == Devices::Named(Vec::new()) {
            return Err(Error::bad("blktrace.devices is empty"));
        }
        let dir = value::string("blktrace", t, "dir")?.unwrap_or(DEFAULT_DIR.into());
        if !dir.starts_with('/') {
            return Err(Error::bad(format!(
                "blktrace.dir must be an absolute path, not `{dir}`"
            )));
        }
        Ok(Blktrace {
            devices,
            dir: PathBuf::from(dir),
            keep: value::boolean("blktrace", t, "keep")?.unwrap_or(false),
            buffer_size_kb: value::positive("blktrace", t, "buffer_size_kb")?,
            journal,
            mount: None,
            entries: Vec::new(),
            device_entries: Vec::new(),
            outputs: Vec::new(),
            capture: None,
        })
    }

    fn resolve(&self) -> Result<Vec<String>> {
        match &self.devices {
            Devices::Named(v) => Ok(v.clone()),
            Devices::FromWorkload(w) => match registry::lookup(w) {
                Some(devs) if !devs.is_empty() => devs
                    .iter()
                    .map(|d| dev_name(&d.to_string_lossy()).map_err(|e| anyhow!("{e}")))
                    .collect(),
                _ => bail!(
                    "blktrace: devices = \"{w}\" but no `{w}` workload has created devices (is it in the plan?)"
                ),
            },
        }
    }
}

impl ConfigKind for Blktrace {
    fn kind(&self) -> &'static str {
        "blktrace"
    }

    fn preflight(&self) -> Vec<String> {
        if let Some(l) = check::root("blktrace", "to write tracefs") {
            return vec![l];
        }
        let mut out = Vec::new();
        match tracefs::probe() {
            Ok(o) if !o.tracers.iter().any(|t| t == "blk") => out.push(format!(
                "blktrace: this kernel has no blk tracer (CONFIG_BLK_DEV_IO_TRACE off; tracers: {})",
                o.tracers.join(" ")
            )),
            Ok(_) => {}
            Err(e) => out.push(format!("blktrace: {e:#}")),
        }
        if let Devices::Named(devs) = &self.devices {
            for d in devs {
                if !Path::new("/sys/block").join(d).exists() {
                    out.push(format!(
                        "blktrace: block device `{d}` does not exist (whole disks here: {})",
                        block_devices().join(" ")
                    ));
                } else if !trace_dir(d).exists() {
                    out.push(format!("blktrace: `{d}` has no trace directory (a partition? trace the whole disk)"));
                }
            }
        }
        out.extend(check::writable_dir("blktrace", &self.dir));
        out.extend(check::private_dir("blktrace", "dir", &self.dir));
        out.extend(Capture::unsafe_outputs("blktrace", &self.dir, PREFIX));
        if let Devices::Named(devs) = &self.devices {
            if let Some(d) = devs.iter().find(|d| dir_is_on(&self.dir, d)) {
                out.push(format!(
                    "blktrace: dir {} is on the traced device `{d}`; put the trace on another filesystem",
                    self.dir.display()
                ));
            }
        }
        out
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        let journal = self.journal.clone();
        crate::config::rcu::expedited(&journal, || {
            let devs = self.resolve()?;
            for d in &devs {
                if !trace_dir(d).exists() {
                    bail!("blktrace: block device `{d}` does not exist or cannot be traced");
                }
            }
            self.mount = tracefs::ensure_mounted(&self.journal, "blktrace")?;
            let mut undos = Vec::new();
            if self.buffer_size_kb.is_some() {
                undos.push(UndoAction::WriteFile {
                    path: tracefs::path("buffer_size_kb"),
                    contents: tracefs::parse_buffer_size(&tracefs::read("buffer_size_kb")?),
                });
            }
            for d in &devs {
                let p = trace_dir(d).join("enable");
                let old = std::fs::read_to_string(&p)
                    .with_context(|| format!("cannot read {}", p.display()))?;
                undos.push(UndoAction::WriteFile {
                    path: p,
                    contents: old,
                });
            }
            for f in ["current_tracer", "tracing_on"] {
                undos.push(UndoAction::WriteFile {
                    path: tracefs::path(f),
                    contents: tracefs::read(f)?,
                });
            }
            let first_dev = usize::from(self.buffer_size_kb.is_some());
            let ids = self.journal.lock().unwrap().record_all("blktrace", undos)?;
            self.device_entries = ids[first_dev..first_dev + devs.len()].to_vec();
            self.entries = ids
                .into_iter()
                .filter(|id| !self.device_entries.contains(id))
                .collect();
            if let Some(kb) = self.buffer_size_kb {
                journal::write_value(&tracefs::path("buffer_size_kb"), &kb.to_string())?;
            }
            for d in &devs {
                journal::write_value(&trace_dir(d).join("enable"), "1")
                    .with_context(|| format!("blktrace: cannot enable tracing of {d}"))?;
            }
            journal::write_value(&tracefs::path("current_tracer"), "blk")
                .context("blktrace: cannot select the blk tracer")?;
            journal::write_value(&tracefs::path("tracing_on"), "1")?;
            let capture = Capture::new(&self.dir, PREFIX, true);
            self.outputs = journal_outputs(
                &self.journal,
                "blktrace",
                &self.dir,
                capture.files()?,
                self.keep,
            )?;
            self.capture = Some(capture);
            Ok(LaunchMods::default())
        })
    }

    fn before_run(&mut self) -> Result<()> {
        Capture::start_opt(&mut self.capture)
    }

    fn after_run(&mut self) -> Result<Vec<MetricSamples>> {
        Capture::stop_opt(&mut self.capture, "blktrace")
    }

    fn metrics(&self) -> Vec<MetricSpec> {
        RunTotals::specs("blktrace")
    }

    fn leave(&mut self) -> Result<()> {
        let journal = self.journal.clone();
        crate::config::rcu::expedited(&journal, || {
            if let Some(mut c) = self.capture.take() {
                c.stop()?;
            }
            leave_outputs(&self.journal, std::mem::take(&mut self.outputs), self.keep)?;
            let mut j = self.journal.lock().unwrap();
            // Tracer, tracing_on, buffer size and every device at once: the
            // tracer switch and each device disable wait for an RCU grace period
            // (~15-30 ms each here), so one after the other costs that per entry.
            // None depends on another.
            let mut all = std::mem::take(&mut self.entries);
            all.append(&mut self.device_entries);
            j.undo_entries_parallel(&all)?;
            j.undo_entries(&self.mount.take().into_iter().collect::<Vec<_>>())?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(src: &str) -> Result<Blktrace, Error> {
        let d = tempfile::tempdir().unwrap();
        let j = crate::config::journal::Journal::open_shared(&d.path().join("j")).unwrap();
        Blktrace::from_value(&toml::from_str(src).unwrap(), j)
    }

    #[test]
    fn device_names_stay_inside_sys_block() {
        assert_eq!(dev_name("sda"), Ok("sda".into()));
        assert_eq!(dev_name("/dev/nvme0n1"), Ok("nvme0n1".into()));
        for bad in [
            "../../tmp/x",
            "/dev/../etc",
            "/dev/mapper/vg-root",
            "..",
            "",
            "/dev/",
            "sd a",
        ] {
            let e = dev_name(bad).unwrap_err();
            assert!(
                e.to_string().starts_with("blktrace.devices: `"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn plan_values_with_a_bad_device_are_refused() {
        assert!(build("devices = [\"loop0\", \"/dev/sdb\"]").is_ok());
        assert!(build("devices = \"fsops\"").is_ok());
        let e = build("devices = [\"loop0\", \"../../../tmp\"]")
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("`../../../tmp` is not a whole disk"),
            "{e}"
        );
        let e = build("devices = \"/dev/../tmp\"").err().unwrap();
        assert!(e.to_string().contains("`/dev/../tmp`"), "{e}");
    }

    #[test]
    fn devices_a_workload_published_are_checked_too() {
        let mut b = build("devices = \"t-blk-bad\"").unwrap();
        registry::publish("t-blk-bad", vec!["/dev/loop0".into(), "/tmp/../x/y".into()]);
        let e = b.resolve().unwrap_err().to_string();
        registry::withdraw("t-blk-bad");
        assert!(e.contains("`/tmp/../x/y`"), "{e}");
        b.devices = Devices::Named(vec!["loop0".into()]);
        assert_eq!(b.resolve().unwrap(), vec!["loop0"]);
    }
}
