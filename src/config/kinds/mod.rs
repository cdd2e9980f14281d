//! Built-in config kinds, one file each, built from their plan value, and
//! [`KINDS`], the one list of them: a kind declared there is a plan key
//! (`[config.NAME]` or `NAME = ...` inside a `[[config]]`) with nothing
//! else to add. See docs/configs.md.

use crate::error::Error;
pub mod blktrace;
pub mod capture;
pub mod child;
pub mod cpus;
pub mod ftrace;
pub mod memory_limit;
pub mod perf_record;
pub mod registry;
pub mod swap;
pub mod sysctl;
pub mod trace_reader;
pub mod tracefs;

use crate::config::journal::JournalHandle;
use crate::config::kind::ConfigKind;

/// One built-in config kind: the one declaration every path a plan takes
/// reads (the plan's raw keys, their validation, `matrix` expansion, the
/// runner's construction and preflight). Adding a kind is one file and one
/// entry in [`KINDS`].
pub struct KindDef {
    /// Its key under `[[config]]` (`[config.NAME]` or `NAME = ...`), and
    /// the name its [`ConfigKind::kind`] returns.
    pub name: &'static str,
    /// Build it from its plan value, with the journal its enter records
    /// into. Nothing is changed: the system is touched only by `enter`.
    pub build: BuildFn,
    /// A typical value as a plan writes it after `NAME = ` (TOML, inline),
    /// valid on any machine: the registry's tests generate a plan with it.
    pub example: &'static str,
}

/// How a kind is made from its plan value.
pub type BuildFn = fn(&toml::Value, JournalHandle) -> Result<Box<dyn ConfigKind>, Error>;

/// The box every `build` returns: one place for the coercion.
fn boxed<K: ConfigKind + 'static>(k: Result<K, Error>) -> Result<Box<dyn ConfigKind>, Error> {
    Ok(Box::new(k?))
}

/// Every built-in config kind, in the order a config enters them (and
/// leaves them in reverse), whatever order the plan writes them in: the
/// tracer is set up before the reader that drains it, the memory limit
/// before the swap it may push pages to.
pub const KINDS: &[KindDef] = &[
    KindDef {
        name: "ftrace",
        build: |v, j| boxed(ftrace::Ftrace::from_value(v, j)),
        example: r#"{ events = ["sched"], tracer = "nop" }"#,
    },
    KindDef {
        name: "trace_reader",
        build: |v, j| boxed(trace_reader::TraceReader::from_value(v, j)),
        example: r#"{ dir = "/var/tmp/sysdelta-trace" }"#,
    },
    KindDef {
        name: "perf_record",
        build: |v, j| boxed(perf_record::PerfRecord::from_value(v, j)),
        example: r#"{ event = "cpu-clock" }"#,
    },
    KindDef {
        name: "blktrace",
        build: |v, j| boxed(blktrace::Blktrace::from_value(v, j)),
        example: r#"{ devices = ["loop0"] }"#,
    },
    KindDef {
        name: "sysctl",
        build: |v, j| boxed(sysctl::Sysctl::from_value(v, j)),
        example: r#"{ "vm.swappiness" = 10 }"#,
    },
    KindDef {
        name: "cpus",
        build: |v, _| boxed(cpus::Cpus::from_value(v)),
        example: r#""0""#,
    },
    KindDef {
        name: "memory_limit",
        build: |v, j| boxed(memory_limit::MemoryLimit::from_value(v, j)),
        example: r#""64M""#,
    },
    KindDef {
        name: "swap",
        build: |v, j| boxed(swap::Swap::from_value(v, j)),
        example: r#"{ size = "64M", device = "zram" }"#,
    },
];

/// The declaration of kind `name`, if there is one.
pub fn find(name: &str) -> Option<&'static KindDef> {
    KINDS.iter().find(|k| k.name == name)
}

/// Every kind's name, in [`KINDS`]' order.
pub fn names() -> Vec<&'static str> {
    KINDS.iter().map(|k| k.name).collect()
}

/// Build a config kind from its plan value. The error is one line about
/// the value (the plan loader adds file:line:col).
pub fn build(
    kind: &str,
    value: &toml::Value,
    journal: JournalHandle,
) -> Result<Box<dyn ConfigKind>, Error> {
    match find(kind) {
        Some(k) => (k.build)(value, journal),
        None => Err(Error::bad(format!(
            "unknown config kind `{kind}` (known: {})",
            names().join(", ")
        ))),
    }
}

/// Helpers for reading a kind's table with one-line errors.
pub(crate) mod value {
    use toml::Value;

    use crate::error::Error;

    pub fn table<'a>(kind: &str, v: &'a Value, allowed: &[&str]) -> Result<&'a toml::Table, Error> {
        let t = v
            .as_table()
            .ok_or_else(|| Error::bad(format!("{kind} must be a table, e.g. [config.{kind}]")))?;
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(Error::bad(format!(
                    "unknown key `{k}` in {kind} (expected one of: {})",
                    allowed.join(", ")
                )));
            }
        }
        Ok(t)
    }

    pub fn string(kind: &str, t: &toml::Table, key: &str) -> Result<Option<String>, Error> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Error::bad(format!(
                "{kind}.{key} must be a string, not {}",
                other.type_str()
            ))),
        }
    }

    pub fn boolean(kind: &str, t: &toml::Table, key: &str) -> Result<Option<bool>, Error> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(Error::bad(format!(
                "{kind}.{key} must be true or false, not {}",
                other.type_str()
            ))),
        }
    }

    pub fn positive(kind: &str, t: &toml::Table, key: &str) -> Result<Option<u64>, Error> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) if *i > 0 => Ok(Some(*i as u64)),
            Some(other) => Err(Error::bad(format!(
                "{kind}.{key} must be a positive integer, not {other}"
            ))),
        }
    }

    pub fn strings(kind: &str, t: &toml::Table, key: &str) -> Result<Option<Vec<String>>, Error> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str().map(String::from).ok_or_else(|| {
                        Error::bad(format!("{kind}.{key} must be a list of strings, found {x}"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(Error::bad(format!(
                "{kind}.{key} must be a list of strings, not {}",
                other.type_str()
            ))),
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

    /// One plan string that becomes one path component (a block device
    /// name under /sys/block): not empty, `.` or `..`, without `/`,
    /// whitespace or control characters, so joining it to its directory
    /// can only name an entry of that directory.
    pub fn one_component(s: &str) -> bool {
        !s.is_empty()
            && s != "."
            && s != ".."
            && !s
                .chars()
                .any(|c| c == '/' || c.is_whitespace() || c.is_control())
    }

    /// Users besides root whose directories sysdelta writes into: the one
    /// running it and, under sudo, the one who ran sudo (their own
    /// directory is theirs to trust; whoever sets SUDO_UID is root already).
    fn trusted_owner(uid: u32) -> bool {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let sudo = std::env::var("SUDO_UID").ok().and_then(|u| u.parse().ok());
        uid == 0 || uid == me || Some(uid) == sudo
    }

    /// Why another user could change directory `d` (None: they cannot).
    fn open_to_others(d: &std::path::Path) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let m = match std::fs::metadata(d) {
            Ok(m) => m,
            Err(e) => return Some(format!("cannot stat {}: {e}", d.display())),
        };
        let sticky = m.mode() & 0o1000 != 0;
        if !trusted_owner(m.uid()) {
            Some(format!("{} belongs to uid {}", d.display(), m.uid()))
        } else if !sticky && (m.mode() & 0o002 != 0 || (m.mode() & 0o020 != 0 && m.gid() != 0)) {
            Some(format!(
                "{} can be written by other users (mode {:o})",
                d.display(),
                m.mode() & 0o7777
            ))
        } else {
            None
        }
    }

    /// One preflight line when the directory a kind creates files in (as
    /// far as it exists) is not a directory or could be changed under
    /// sysdelta by another user. sysdelta runs as root: a user who can
    /// write to a directory on the way can put a symlink where it is about
    /// to write, and so have any file overwritten. So every directory from
    /// `/` down must belong to root or a trusted owner and be writable by no
    /// one else, unless it is sticky (/tmp, /var/tmp), where others cannot
    /// rename or remove what sysdelta made and where it creates its files
    /// with O_EXCL or O_NOFOLLOW.
    pub fn private_dir(kind: &str, field: &str, dir: &std::path::Path) -> Option<String> {
        let mut d = dir.to_path_buf();
        while std::fs::symlink_metadata(&d).is_err() && d.pop() {}
        let real = match std::fs::canonicalize(&d) {
            Ok(r) if r.is_dir() => r,
            Ok(_) => {
                return Some(format!(
                    "{kind}: {field} {}: {} is not a directory",
                    dir.display(),
                    d.display()
                ))
            }
            Err(e) => {
                return Some(format!(
                    "{kind}: {field} {}: cannot resolve {}: {e}",
                    dir.display(),
                    d.display()
                ))
            }
        };
        let why = real.ancestors().find_map(open_to_others)?;
        Some(format!(
            "{kind}: {field} {}: {why}; use a directory only root (or you) can change",
            dir.display()
        ))
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
        assert!(
            err.to_string().contains("unknown config kind `nosuch`"),
            "{err}"
        );
        let v: toml::Value = toml::from_str("tracer = \"nop\"\nbogus = 1").unwrap();
        let err = build("ftrace", &v, j).err().unwrap();
        assert!(
            err.to_string().contains("unknown key `bogus` in ftrace"),
            "{err}"
        );
    }

    #[test]
    fn every_kind_builds_from_its_example_and_says_its_name() {
        let (_d, j) = journal();
        for k in KINDS {
            let v: toml::Value = toml::from_str(&format!("v = {}", k.example)).unwrap();
            let c = build(k.name, &v["v"], j.clone()).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            assert_eq!(c.kind(), k.name);
        }
    }

    #[test]
    fn one_component_names() {
        for ok in ["sda", "loop0", "nvme0n1", "dm-0", "cciss!c0d0"] {
            assert!(check::one_component(ok), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "../sda", "sd a", "sda\n", "sd\0a"] {
            assert!(!check::one_component(bad), "{bad:?}");
        }
    }

    fn chmod(p: &std::path::Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn private_dir_refuses_directories_others_can_change() {
        let d = tempfile::tempdir().unwrap();
        let own = d.path().join("own");
        std::fs::create_dir(&own).unwrap();
        assert_eq!(check::private_dir("k", "dir", &own), None);
        // Not there yet: what exists on the way is what counts.
        assert_eq!(check::private_dir("k", "dir", &own.join("a/b")), None);

        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let e = check::private_dir("k", "dir", &open.join("sub")).unwrap();
        assert!(
            e.starts_with("k: dir ") && e.contains("can be written by other users (mode 777)"),
            "{e}"
        );
        // Sticky, like /tmp: others cannot touch what sysdelta makes there.
        chmod(&open, 0o1777);
        assert_eq!(check::private_dir("k", "dir", &open), None);
        // Through a symlink: the directory it resolves to counts.
        chmod(&open, 0o777);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        assert!(check::private_dir("k", "dir", &link).is_some());

        let file = d.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = check::private_dir("k", "dir", &file).unwrap();
        assert!(e.contains("is not a directory"), "{e}");
        let e = check::private_dir("k", "dir", &file.join("below")).unwrap();
        assert!(e.contains("is not a directory"), "{e}");
    }

    #[test]
    fn private_dir_refuses_another_users_directory() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: chown to another user needs root");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let theirs = d.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(54321), None).unwrap();
        let e = check::private_dir("k", "dir", &theirs.join("out")).unwrap();
        assert!(e.contains("belongs to uid 54321"), "{e}");
    }
}
