//! `sysctl`: set kernel parameters (`"vm.swappiness" = 10`) for the config,
//! journaling each previous value before writing.

use std::path::PathBuf;

use anyhow::Result;

use super::check;
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};

pub struct Sysctl {
    settings: Vec<(String, String)>,
    journal: JournalHandle,
    entries: Vec<EntryId>,
}

/// "vm.swappiness" -> /proc/sys/vm/swappiness ("vm/swappiness" works too).
pub fn key_path(key: &str) -> PathBuf {
    let rel = if key.contains('/') {
        key.to_string()
    } else {
        key.replace('.', "/")
    };
    PathBuf::from("/proc/sys").join(rel.trim_start_matches('/'))
}

impl Sysctl {
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<Sysctl, String> {
        let t = v.as_table().ok_or(
            "sysctl must be a table of key = value, e.g. [config.sysctl] \"vm.swappiness\" = 10",
        )?;
        if t.is_empty() {
            return Err("sysctl has no settings".into());
        }
        let mut settings = Vec::new();
        for (k, v) in t {
            let val = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => (*b as u8).to_string(),
                other => {
                    return Err(format!(
                        "sysctl `{k}` must be a string or integer, not {}",
                        other.type_str()
                    ))
                }
            };
            settings.push((k.clone(), val));
        }
        Ok(Sysctl {
            settings,
            journal,
            entries: Vec::new(),
        })
    }
}

impl ConfigKind for Sysctl {
    fn kind(&self) -> &'static str {
        "sysctl"
    }

    fn preflight(&self) -> Vec<String> {
        let mut out: Vec<String> = check::root("sysctl", "to write /proc/sys")
            .into_iter()
            .collect();
        for (k, _) in &self.settings {
            if !key_path(k).is_file() {
                out.push(format!(
                    "sysctl: no such key `{k}` ({} does not exist)",
                    key_path(k).display()
                ));
            }
        }
        out
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        let mut undos = Vec::new();
        for (k, _) in &self.settings {
            let p = key_path(k);
            let old = std::fs::read_to_string(&p)
                .map_err(|e| anyhow::anyhow!("sysctl: cannot read `{k}`: {e}"))?;
            undos.push(UndoAction::WriteFile {
                path: p,
                contents: old,
            });
        }
        self.entries = self.journal.lock().unwrap().record_all("sysctl", undos)?;
        for (k, v) in &self.settings {
            journal::write_value(&key_path(k), v)
                .map_err(|e| anyhow::anyhow!("sysctl: cannot set `{k}` = {v}: {e:#}"))?;
        }
        Ok(LaunchMods::default())
    }

    fn leave(&mut self) -> Result<()> {
        let ids = std::mem::take(&mut self.entries);
        self.journal.lock().unwrap().undo_entries(&ids)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths() {
        assert_eq!(
            key_path("vm.swappiness"),
            PathBuf::from("/proc/sys/vm/swappiness")
        );
        assert_eq!(
            key_path("net/ipv4/conf/eth0.1/rp_filter"),
            PathBuf::from("/proc/sys/net/ipv4/conf/eth0.1/rp_filter")
        );
    }
}
