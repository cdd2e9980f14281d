//! `sysctl`: set kernel parameters (`"vm.swappiness" = 10`) for the config,
//! journaling each previous value before writing.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::check;
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;

pub struct Sysctl {
    settings: Vec<(String, String)>,
    journal: JournalHandle,
    entries: Vec<EntryId>,
}

const PROC_SYS: &str = "/proc/sys";

/// "vm.swappiness" -> /proc/sys/vm/swappiness ("vm/swappiness" works too).
/// Only for keys [`check_key`] accepted: anything else could name a file
/// outside /proc/sys.
pub fn key_path(key: &str) -> PathBuf {
    path_under(Path::new(PROC_SYS), key)
}

fn path_under(root: &Path, key: &str) -> PathBuf {
    root.join(key_components(key).collect::<PathBuf>())
}

/// The components of a key: separated by '/' when it has one (so a
/// component may hold a dot, as the interface in
/// `net/ipv4/conf/eth0.100/rp_filter` does), else by '.'.
fn key_components(key: &str) -> std::str::Split<'_, char> {
    key.split(if key.contains('/') { '/' } else { '.' })
}

/// Check that `key` is a sysctl name and so cannot name a file outside
/// /proc/sys: relative, and every component non-empty, not `.` or `..`,
/// without whitespace or control characters (NUL included). Other
/// characters are allowed: network interface names, which appear as
/// components, may hold almost any (`-`, `.`, `@`).
pub fn check_key(key: &str) -> Result<(), Error> {
    let not_a_name = |why: &str| {
        Error::bad(format!(
            "key `{}` is not a sysctl name: {why}",
            key.escape_debug()
        ))
    };
    if key.is_empty() {
        return Err(Error::bad("empty key (write e.g. \"vm.swappiness\" = 10)"));
    }
    if key.starts_with('/') {
        return Err(not_a_name(
            "write it relative to /proc/sys, e.g. vm.swappiness or vm/swappiness",
        ));
    }
    for c in key_components(key) {
        if c.is_empty() {
            return Err(not_a_name("it has an empty component"));
        }
        if c == "." || c == ".." {
            return Err(not_a_name(
                "`.` and `..` are not key components (the key would leave /proc/sys)",
            ));
        }
        if c.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
            return Err(not_a_name("it holds whitespace or a control character"));
        }
    }
    Ok(())
}

/// Where the file `key` names under `root` really is, when that is
/// outside `root` once symlinks are resolved (None: inside, or it does not
/// exist, which preflight reports). procfs has no symlinks under /proc/sys,
/// so for it this only catches something odd mounted over it.
fn escapes(root: &Path, key: &str) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path_under(root, key)).ok()?;
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    (!real.starts_with(root)).then_some(real)
}

impl Sysctl {
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<Sysctl, Error> {
        let t = v.as_table().ok_or_else(|| Error::bad("sysctl must be a table of key = value, e.g. [config.sysctl] \"vm.swappiness\" = 10"))?;
        if t.is_empty() {
            return Err(Error::bad("sysctl has no settings"));
        }
        let mut settings = Vec::new();
        for (k, v) in t {
            check_key(k)?;
            if let Some(real) = escapes(Path::new(PROC_SYS), k) {
                return Err(Error::bad(format!(
                    "key `{k}` resolves to {}, outside /proc/sys",
                    real.display()
                )));
            }
            let val = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => (*b as u8).to_string(),
                other => {
                    return Err(Error::bad(format!(
                        "sysctl `{k}` must be a string or integer, not {}",
                        other.type_str()
                    )))
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

    #[test]
    fn real_keys_are_sysctl_names() {
        for k in [
            "vm.swappiness",
            "kernel/sched_autogroup_enabled",
            "net.ipv4.ip_forward",
            "net/ipv4/conf/eth0.100/rp_filter",
            "net.ipv4.conf.all.rp_filter",
            "net.ipv6.conf.br-lan.forwarding",
            "vm/swappiness",
        ] {
            assert_eq!(check_key(k), Ok(()), "{k}");
        }
    }

    #[test]
    fn keys_that_could_leave_proc_sys_are_refused() {
        for (k, why) in [
            ("../x", "`..`"),
            ("../../../tmp/x", "`..`"),
            ("vm/../../../etc/passwd", "`..`"),
            ("vm/./swappiness", "`.`"),
            ("vm..x", "empty component"),
            ("vm.", "empty component"),
            (".vm", "empty component"),
            ("vm//swappiness", "empty component"),
            ("/proc/sys/vm/swappiness", "relative to /proc/sys"),
            ("/etc/passwd", "relative to /proc/sys"),
            ("vm.swap\0piness", "control character"),
            ("vm.swap piness", "whitespace"),
            ("vm/x\n/y", "control character"),
        ] {
            let e = check_key(k).unwrap_err();
            assert!(e.to_string().contains(why), "{k:?}: {e}");
            assert!(!e.to_string().contains('\n'), "one line: {e}");
        }
        assert!(check_key("").unwrap_err().to_string().contains("empty key"));
    }

    #[test]
    fn a_symlink_out_of_the_root_is_caught() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("sys");
        let outside = d.path().join("outside");
        std::fs::create_dir_all(root.join("vm")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(root.join("vm/swappiness"), "60").unwrap();
        std::fs::write(outside.join("passwd"), "root").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("etc")).unwrap();
        assert_eq!(escapes(&root, "vm.swappiness"), None);
        assert_eq!(escapes(&root, "vm.nonexistent"), None);
        assert_eq!(
            escapes(&root, "etc.passwd"),
            Some(outside.join("passwd").canonicalize().unwrap())
        );
    }

    #[test]
    fn plan_values_name_the_bad_key() {
        let d = tempfile::tempdir().unwrap();
        let j = journal::Journal::open_shared(&d.path().join("j")).unwrap();
        let v: toml::Value = toml::from_str("\"vm.swappiness\" = 10").unwrap();
        assert!(Sysctl::from_value(&v, j.clone()).is_ok());
        let v: toml::Value =
            toml::from_str("\"vm.swappiness\" = 10\n\"../../../tmp/x\" = 1").unwrap();
        let e = Sysctl::from_value(&v, j).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("key `../../../tmp/x` is not a sysctl name"),
            "{e}"
        );
    }
}
