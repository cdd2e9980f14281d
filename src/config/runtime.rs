//! One config of a running experiment: its kinds, entered in order and left
//! in reverse, with their launch modifications merged.

use anyhow::Result;

use super::kind::{ConfigKind, LaunchMods};
use crate::metric::MetricSamples;

pub struct ConfigRuntime {
    pub name: String,
    pub kinds: Vec<Box<dyn ConfigKind>>,
    /// How many kinds `enter` reached (including a failed one, which may
    /// have changed something before failing).
    entered: usize,
    pub mods: LaunchMods,
}

impl ConfigRuntime {
    pub fn new(name: &str, kinds: Vec<Box<dyn ConfigKind>>) -> ConfigRuntime {
        ConfigRuntime {
            name: name.to_string(),
            kinds,
            entered: 0,
            mods: LaunchMods::default(),
        }
    }

    pub fn is_entered(&self) -> bool {
        self.entered > 0
    }

    /// Enter every kind in order. On error the caller must still `leave`.
    pub fn enter(&mut self) -> Result<()> {
        self.mods = LaunchMods::default();
        for k in self.kinds.iter_mut() {
            self.entered += 1;
            let m = k.enter()?;
            for (key, v) in m.env {
                self.mods.env.retain(|(ek, _)| *ek != key);
                self.mods.env.push((key, v));
            }
            if m.cpus.is_some() {
                self.mods.cpus = m.cpus;
            }
            if m.cgroup_procs.is_some() {
                self.mods.cgroup_procs = m.cgroup_procs;
            }
        }
        Ok(())
    }

    pub fn before_run(&mut self) -> Result<()> {
        for k in self.kinds.iter_mut() {
            k.before_run()?;
        }
        Ok(())
    }

    pub fn after_run(&mut self) -> Result<Vec<MetricSamples>> {
        let mut out = Vec::new();
        for k in self.kinds.iter_mut() {
            out.extend(k.after_run()?);
        }
        Ok(out)
    }

    /// Leave every entered kind in reverse order; every kind is tried even
    /// when one fails, and all failures are reported.
    /// False when the last [`ConfigRuntime::leave`] was cut short (a
    /// teardown killed before its end): the config still counts as entered.
    pub fn left_cleanly(&self) -> bool {
        self.kinds.iter().all(|k| k.left_cleanly())
    }

    pub fn leave(&mut self) -> Result<()> {
        let mut errors = Vec::new();
        for k in self.kinds[..self.entered].iter_mut().rev() {
            if let Err(e) = k.leave() {
                errors.push(format!("{}: {e:#}", k.kind()));
            }
        }
        self.entered = 0;
        self.mods = LaunchMods::default();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(anyhow::anyhow!(
                "leaving config '{}': {}",
                self.name,
                errors.join("; ")
            ))
        }
    }
}
