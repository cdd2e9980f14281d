//! tracefs access shared by the ftrace, trace_reader and blktrace kinds:
//! mounting it when needed (journaled), listing what this kernel offers,
//! and the per-CPU ring buffer loss counters.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};

pub const TRACEFS: &str = "/sys/kernel/tracing";

pub fn path(rel: &str) -> PathBuf {
    Path::new(TRACEFS).join(rel)
}

/// The kernel can mount tracefs at all.
pub fn supported() -> bool {
    fs::read_to_string("/proc/filesystems")
        .map(|s| {
            s.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        })
        .unwrap_or(false)
}

/// tracefs is mounted at its usual place.
pub fn mounted() -> bool {
    path("trace").exists()
}

pub fn read(rel: &str) -> Result<String> {
    let p = path(rel);
    fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))
}

/// Mount tracefs if it is not mounted, journaling the unmount first.
/// Returns the journal entry to undo on leave (None: it was mounted already).
pub fn ensure_mounted(journal: &JournalHandle, owner: &str) -> Result<Option<EntryId>> {
    if mounted() {
        return Ok(None);
    }
    if !supported() {
        bail!("this kernel has no tracefs (not in /proc/filesystems)");
    }
    let id = journal.lock().unwrap().record_all(
        owner,
        vec![UndoAction::Unmount {
            target: PathBuf::from(TRACEFS),
            source: Some("tracefs".into()),
        }],
    )?[0];
    nix::mount::mount(
        Some("tracefs"),
        TRACEFS,
        Some("tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .with_context(|| format!("cannot mount tracefs on {TRACEFS}"))?;
    Ok(Some(id))
}

/// Undo `ensure_mounted` (if it mounted).
pub fn release(journal: &JournalHandle, id: Option<EntryId>) -> Result<()> {
    if let Some(id) = id {
        journal.lock().unwrap().undo_entries(&[id])?;
    }
    Ok(())
}

/// What this kernel offers: tracers and `group:event` names.
#[derive(Clone, Debug, Default)]
pub struct Offer {
    pub tracers: Vec<String>,
    pub events: Vec<String>,
}

impl Offer {
    pub fn groups(&self) -> Vec<String> {
        let mut g: Vec<String> = self
            .events
            .iter()
            .filter_map(|e| e.split_once(':').map(|(g, _)| g.to_string()))
            .collect();
        g.sort();
        g.dedup();
        g
    }

    /// Whether `spec` ("group", "group:event" or "group:*") exists here.
    pub fn has_event(&self, spec: &str) -> bool {
        let in_group = |g: &str| self.events.iter().any(|e| e.split(':').next() == Some(g));
        match spec.split_once(':') {
            None => in_group(spec),
            Some((g, "*")) => in_group(g),
            Some(_) => self.events.iter().any(|e| e == spec),
        }
    }
}

/// Read what the kernel offers without changing anything visible: when
/// tracefs is not mounted, it is mounted in a private mount namespace of a
/// short-lived child (so preflight never alters the system's mounts).
pub fn probe() -> Result<Offer> {
    let text = if mounted() {
        format!(
            "{}\n@@\n{}",
            read("available_tracers")?,
            read("available_events")?
        )
    } else {
        if !supported() {
            bail!("this kernel has no tracefs (not in /proc/filesystems)");
        }
        let mut cmd = Command::new("/bin/sh");
        // Our own PATH may be anything; cat is a system tool.
        cmd.env("PATH", "/usr/bin:/bin").arg("-c").arg(format!(
            "cat {TRACEFS}/available_tracers && echo @@ && cat {TRACEFS}/available_events"
        ));
        // SAFETY: only async-signal-safe syscalls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)?;
                nix::mount::mount(
                    None::<&str>,
                    "/",
                    None::<&str>,
                    nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE,
                    None::<&str>,
                )?;
                nix::mount::mount(
                    Some("tracefs"),
                    TRACEFS,
                    Some("tracefs"),
                    nix::mount::MsFlags::empty(),
                    None::<&str>,
                )?;
                Ok(())
            });
        }
        let out = cmd
            .output()
            .context("cannot look into tracefs (private mount failed)")?;
        if !out.status.success() {
            bail!(
                "cannot look into tracefs: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (tracers, events) = text.split_once("@@").unwrap_or((&text, ""));
    Ok(Offer {
        tracers: tracers.split_whitespace().map(String::from).collect(),
        events: events.split_whitespace().map(String::from).collect(),
    })
}

/// Per-CPU ring buffer counters (tracefs per_cpu/cpuN/stats).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuStats {
    /// Events overwritten before a reader got them (overwrite mode).
    pub overrun: u64,
    /// Events lost because a nested writer overran the buffer.
    pub commit_overrun: u64,
    /// Events dropped because the buffer was full (no-overwrite mode).
    pub dropped: u64,
}

impl CpuStats {
    pub fn lost(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped
    }
}

pub fn cpu_stats(cpu: usize) -> Result<CpuStats> {
    let text = read(&format!("per_cpu/cpu{cpu}/stats"))?;
    let mut s = CpuStats::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v: u64 = v.trim().parse().unwrap_or(0);
        match k.trim() {
            "overrun" => s.overrun = v,
            "commit overrun" => s.commit_overrun = v,
            "dropped events" => s.dropped = v,
            _ => {}
        }
    }
    Ok(s)
}

/// The CPUs that have a ring buffer (per_cpu/cpuN directories).
pub fn buffer_cpus() -> Result<Vec<usize>> {
    let mut cpus: Vec<usize> = fs::read_dir(path("per_cpu"))
        .context("cannot list tracefs per_cpu")?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    Ok(cpus)
}

/// Empty every CPU's ring buffer (open `trace` with O_TRUNC).
pub fn clear_buffers() -> Result<()> {
    journal::write_value(&path("trace"), "")
}

/// `buffer_size_kb` as a number that can be written back: an unexpanded
/// buffer reads "7 (expanded: 1408)", and 1408 is its real size.
pub fn parse_buffer_size(text: &str) -> String {
    match text.split_once("(expanded:") {
        Some((_, rest)) => rest.trim().trim_end_matches(')').trim().to_string(),
        None => text.trim().to_string(),
    }
}

/// Lines of `set_event` (the enabled events), for restoring it.
pub fn enabled_events() -> Result<Vec<String>> {
    Ok(read("set_event")?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offer_matches_groups_and_events() {
        let o = Offer {
            tracers: vec!["nop".into()],
            events: vec!["sched:sched_switch".into(), "block:block_rq_issue".into()],
        };
        assert!(o.has_event("sched"));
        assert!(o.has_event("sched:*"));
        assert!(o.has_event("sched:sched_switch"));
        assert!(!o.has_event("sched:nope"));
        assert!(!o.has_event("syscalls"));
        assert_eq!(o.groups(), vec!["block", "sched"]);
    }

    #[test]
    fn buffer_size_expanded_form() {
        assert_eq!(parse_buffer_size("7 (expanded: 1408)\n"), "1408");
        assert_eq!(parse_buffer_size("4096\n"), "4096");
    }
}
