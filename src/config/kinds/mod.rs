//! Built-in config kinds, one file each, built from their plan value.
//!
//! Plan syntax (inside one `[[config]]`):
//! `[config.ftrace]`, `[config.trace_reader]`, `[config.perf_record]`,
//! `[config.blktrace]`, `[config.sysctl]` tables, and `cpus = "0-1"` or
//! `cpus = [0, 1]`. See docs/configs.md.

pub mod blktrace;
pub mod capture;
pub mod child;
pub mod cpus;
pub mod ftrace;
pub mod perf_record;
pub mod registry;
pub mod sysctl;
pub mod trace_reader;
pub mod tracefs;

use crate::config::journal::JournalHandle;
use crate::config::kind::ConfigKind;

/// The kind names `build` accepts, as plan keys under `[[config]]`.
pub const KIND_NAMES: &[&str] = &[
    "ftrace",
    "trace_reader",
    "perf_record",
    "blktrace",
    "sysctl",
    "cpus",
];

/// Build a config kind from its plan value. The error is one line about
/// the value (the plan loader adds file:line:col).
pub fn build(
    kind: &str,
    value: &toml::Value,
    journal: JournalHandle,
) -> Result<Box<dyn ConfigKind>, String> {
    Ok(match kind {
        "ftrace" => Box::new(ftrace::Ftrace::from_value(value, journal)?),
        "trace_reader" => Box::new(trace_reader::TraceReader::from_value(value, journal)?),
        "perf_record" => Box::new(perf_record::PerfRecord::from_value(value, journal)?),
        "blktrace" => Box::new(blktrace::Blktrace::from_value(value, journal)?),
        "sysctl" => Box::new(sysctl::Sysctl::from_value(value, journal)?),
        "cpus" => Box::new(cpus::Cpus::from_value(value)?),
        other => {
            return Err(format!(
                "unknown config kind `{other}` (known: {})",
                KIND_NAMES.join(", ")
            ))
        }
    })
}

/// Helpers for reading a kind's table with one-line errors.
pub(crate) mod value {
    use toml::Value;

    pub fn table<'a>(
        kind: &str,
        v: &'a Value,
        allowed: &[&str],
    ) -> Result<&'a toml::Table, String> {
        let t = v
            .as_table()
            .ok_or_else(|| format!("{kind} must be a table, e.g. [config.{kind}]"))?;
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(format!(
                    "unknown key `{k}` in {kind} (expected one of: {})",
                    allowed.join(", ")
                ));
            }
        }
        Ok(t)
    }

    pub fn string(kind: &str, t: &toml::Table, key: &str) -> Result<Option<String>, String> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "{kind}.{key} must be a string, not {}",
                other.type_str()
            )),
        }
    }

    pub fn boolean(kind: &str, t: &toml::Table, key: &str) -> Result<Option<bool>, String> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(format!(
                "{kind}.{key} must be true or false, not {}",
                other.type_str()
            )),
        }
    }

    pub fn positive(kind: &str, t: &toml::Table, key: &str) -> Result<Option<u64>, String> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) if *i > 0 => Ok(Some(*i as u64)),
            Some(other) => Err(format!(
                "{kind}.{key} must be a positive integer, not {other}"
            )),
        }
    }

    pub fn strings(kind: &str, t: &toml::Table, key: &str) -> Result<Option<Vec<String>>, String> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .ok_or_else(|| format!("{kind}.{key} must be a list of strings, found {x}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(format!(
                "{kind}.{key} must be a list of strings, not {}",
                other.type_str()
            )),
        }
    }
}

/// Checks several kinds share.
pub mod check {
    /// One preflight line when not root.
    pub fn root(kind: &str, why: &str) -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            Some(format!("{kind}: must run as root ({why})"))
        } else {
            None
        }
    }

    /// Find an executable in PATH.
    pub fn which(tool: &str) -> Option<std::path::PathBuf> {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|d| d.join(tool))
            .find(|p| {
                use std::os::unix::fs::PermissionsExt;
                p.metadata()
                    .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    .unwrap_or(false)
            })
    }

    /// The directory (or its nearest existing ancestor) is writable.
    pub fn writable_dir(kind: &str, dir: &std::path::Path) -> Option<String> {
        let mut d = dir.to_path_buf();
        while !d.exists() {
            if !d.pop() {
                break;
            }
        }
        let c = std::ffi::CString::new(d.to_string_lossy().as_bytes()).ok()?;
        // SAFETY: valid C string.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            Some(format!(
                "{kind}: cannot write to {} (for {})",
                d.display(),
                dir.display()
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::journal::Journal;
    use std::sync::{Arc, Mutex};

    fn journal() -> (tempfile::TempDir, JournalHandle) {
        let d = tempfile::tempdir().unwrap();
        let j = Journal::open(&d.path().join("j")).unwrap();
        (d, Arc::new(Mutex::new(j)))
    }

    #[test]
    fn unknown_kind_and_keys_are_named() {
        let (_d, j) = journal();
        let err = build("nosuch", &toml::Value::Integer(1), j.clone())
            .err()
            .unwrap();
        assert!(err.contains("unknown config kind `nosuch`"), "{err}");
        let v: toml::Value = toml::from_str("tracer = \"nop\"\nbogus = 1").unwrap();
        let err = build("ftrace", &v, j).err().unwrap();
        assert!(err.contains("unknown key `bogus` in ftrace"), "{err}");
    }

    #[test]
    fn every_kind_name_builds_from_a_typical_value() {
        let (_d, j) = journal();
        let typical = [
            ("ftrace", "events = [\"sched\"]"),
            ("trace_reader", "dir = \"/var/tmp/x\""),
            ("perf_record", "event = \"cpu-clock\""),
            ("blktrace", "devices = [\"loop0\"]"),
            ("sysctl", "\"vm.swappiness\" = 10"),
        ];
        for (k, src) in typical {
            let v: toml::Value = toml::from_str(src).unwrap();
            let c = build(k, &v, j.clone()).unwrap_or_else(|e| panic!("{k}: {e}"));
            assert_eq!(c.kind(), k);
        }
        let c = build("cpus", &toml::Value::String("0".into()), j).unwrap();
        assert_eq!(c.kind(), "cpus");
    }
}
