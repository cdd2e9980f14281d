//! The hosts of a fleet run: who they are (a name, an ssh destination) and
//! how each is reached and used (ssh options, the directory sysdelta works
//! in there, the environment its sysdelta gets, an installed sysdelta).
//!
//! Hosts come from `--hosts a,b,c` (destinations, or `NAME=DEST`) or from a
//! TOML hosts file with one `[[host]]` table each. Both are checked whole
//! here, before anything connects anywhere: a bad entry is one line naming
//! the file (with line and column where TOML can say) or the `--hosts`
//! item, and what is wrong; ssh options pass only as `ssh_allow` allows
//! them. The hosts as checked are kept in the fleet's row as JSON, so that
//! `fleet resume` and `fleet status` find them again, and are checked the
//! same way when read back.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::ssh_allow;
use crate::error::bad;

/// Where a host's copied sysdelta, plans and local sysdelta state live
/// unless its entry says otherwise: relative, so under the remote home.
pub const DEFAULT_WORKDIR: &str = ".cache/sysdelta/fleet";

/// Variables the fleet sets for each host's sysdelta itself.
const RESERVED_ENV: &[&str] = &["SYSDELTA_STATE_DIR", "SYSDELTA_STORE"];

/// One host of a fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Unique in the fleet; the experiment's `fleet_host`.
    pub name: String,
    /// What ssh connects to: `[user@]host`, `ssh://[user@]host[:port]`,
    /// or a `Host` of the user's ssh config.
    pub destination: String,
    /// More options for ssh (`-p 2222`, `-i KEY`, `-o Name=value`, ...).
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// The host's working directory. As given (relative: under the remote
    /// home) until the checks resolve it; the fleet's row keeps it
    /// absolute, as the checks found it.
    #[serde(default = "default_workdir")]
    pub workdir: String,
    /// Exported for the host's sysdelta (not for ssh or the checks).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// An installed sysdelta to use there, if it is ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysdelta: Option<String>,
    /// The seed of the host's run order (kept in the fleet's row, so that
    /// a host that never started gets the same one on resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

fn default_workdir() -> String {
    DEFAULT_WORKDIR.to_string()
}

impl Host {
    /// `name (destination)`: how messages name a host.
    pub fn shown(&self) -> String {
        format!("host {} ({})", self.name, self.destination)
    }
}

/// A `[[host]]` table as written in a hosts file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHost {
    name: Option<String>,
    destination: String,
    #[serde(default)]
    ssh_options: Vec<String>,
    workdir: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    sysdelta: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    #[serde(default)]
    host: Vec<FileHost>,
}

/// The hosts of `--hosts a,b,NAME=DEST`.
pub fn from_list(items: &[String]) -> Result<Vec<Host>> {
    let mut hosts = Vec::new();
    for item in items.iter().flat_map(|s| s.split(',')) {
        let item = item.trim();
        let where_ = format!("--hosts '{item}'");
        if item.is_empty() {
            return Err(bad("--hosts: an empty host between commas"));
        }
        let (name, dest) = match item.split_once('=') {
            Some((n, d)) => (n.trim().to_string(), d.trim().to_string()),
            None => (host_part(item), item.to_string()),
        };
        let host = Host {
            name,
            destination: dest,
            ssh_options: Vec::new(),
            workdir: default_workdir(),
            env: BTreeMap::new(),
            sysdelta: None,
            seed: None,
        };
        check_host(&host).map_err(|why| bad(format!("{where_}: {why}")))?;
        hosts.push(host);
    }
    check_unique(&hosts).map_err(|why| bad(format!("--hosts: {why}")))?;
    Ok(hosts)
}

/// The hosts of a hosts file (`[[host]]` tables).
pub fn from_file(path: &Path) -> Result<Vec<Host>> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("{shown}: cannot read the hosts file: {e}")))?;
    let file: HostsFile = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| {
                let (line, col) = line_col(&text, s.start);
                format!(":{line}:{col}")
            })
            .unwrap_or_default();
        bad(format!("{shown}{at}: {}", e.message().trim()))
    })?;
    if file.host.is_empty() {
        return Err(bad(format!(
            "{shown}: no hosts (one [[host]] table each, with a destination)"
        )));
    }
    let mut hosts = Vec::new();
    for (i, h) in file.host.into_iter().enumerate() {
        let host = Host {
            name: h.name.unwrap_or_else(|| host_part(&h.destination)),
            destination: h.destination,
            ssh_options: h.ssh_options,
            workdir: h.workdir.unwrap_or_else(default_workdir),
            env: h.env,
            sysdelta: h.sysdelta,
            seed: None,
        };
        check_host(&host).map_err(|why| {
            bad(format!(
                "{shown}: [[host]] number {} ('{}'): {why}",
                i + 1,
                host.name
            ))
        })?;
        hosts.push(host);
    }
    check_unique(&hosts).map_err(|why| bad(format!("{shown}: {why}")))?;
    Ok(hosts)
}

/// The hosts a fleet's row keeps (JSON).
///
/// Whoever can write the team database can write these, so they are
/// checked again as a hosts file is, ssh options by the same allowlist
/// (`ssh_allow`): a stored host with an option a fleet does not take is
/// refused, whoever put it there.
pub fn from_json(json: &str) -> Result<Vec<Host>> {
    let hosts: Vec<Host> = serde_json::from_str(json)
        .map_err(|e| anyhow::anyhow!("the fleet's hosts are not what sysdelta stores: {e}"))?;
    for h in &hosts {
        check_host(h).map_err(|why| bad(format!("stored host '{}': {why}", h.name)))?;
    }
    Ok(hosts)
}

/// The hosts as the fleet's row keeps them (JSON).
pub fn to_json(hosts: &[Host]) -> String {
    serde_json::to_string(hosts).expect("hosts serialize")
}

/// The host part of an ssh destination: `root@db1` -> `db1`,
/// `ssh://me@[::1]:2222` -> `::1`.
pub fn host_part(dest: &str) -> String {
    let (uri, rest) = match dest.strip_prefix("ssh://") {
        Some(r) => (true, r),
        None => (false, dest),
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let rest = if let Some(r) = rest.strip_prefix('[') {
        r.split_once(']').map_or(r, |(h, _)| h)
    } else if uri {
        rest.split_once(':').map_or(rest, |(h, _)| h)
    } else {
        rest
    };
    rest.trim_end_matches('/').to_string()
}

/// What is wrong with one host's entry, if anything.
fn check_host(h: &Host) -> std::result::Result<(), String> {
    let name_ok = |n: &str| {
        !n.is_empty()
            && !n.starts_with('-')
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    if !name_ok(&h.name) {
        return Err(format!(
            "name '{}': letters, digits, '.', '_' and '-' only (and not a leading '-')",
            h.name
        ));
    }
    let d = &h.destination;
    if d.is_empty() || host_part(d).is_empty() {
        return Err("no destination".into());
    }
    if d.starts_with('-') || d.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "destination '{d}': an ssh destination has no spaces and does not start with '-'"
        ));
    }
    if h.workdir.trim().is_empty() {
        return Err("workdir is empty".into());
    }
    let no_nul = |s: &str| !s.contains('\0');
    if !no_nul(&h.workdir)
        || !h.ssh_options.iter().all(|o| no_nul(o))
        || !h.sysdelta.as_deref().is_none_or(no_nul)
    {
        return Err("a NUL character".into());
    }
    // Read as ssh reads them; only what a fleet needs passes.
    ssh_allow::check(&h.ssh_options)?;
    if h.sysdelta.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err("sysdelta is empty (leave it out to look in PATH and workdir)".into());
    }
    for (k, v) in &h.env {
        let key_ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !key_ok {
            return Err(format!("env '{k}': not a variable name"));
        }
        if RESERVED_ENV.contains(&k.as_str()) {
            return Err(format!(
                "env '{k}': the fleet sets it for each host (give workdir instead)"
            ));
        }
        if !no_nul(v) {
            return Err(format!("env '{k}': a NUL character"));
        }
    }
    Ok(())
}

fn check_unique(hosts: &[Host]) -> std::result::Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for h in hosts {
        if !seen.insert(h.name.as_str()) {
            return Err(format!(
                "host name '{}' is given twice (names are unique: NAME=DEST, or name = \"...\")",
                h.name
            ));
        }
    }
    Ok(())
}

/// 1-based line and column of byte `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_parts() {
        assert_eq!(host_part("root@127.0.0.2"), "127.0.0.2");
        assert_eq!(host_part("db1"), "db1");
        assert_eq!(host_part("ssh://me@db1:2222"), "db1");
        assert_eq!(host_part("ssh://me@[::1]:2222"), "::1");
    }

    #[test]
    fn lists_name_and_refuse() {
        let h = from_list(&["a=root@x,root@y".into()]).unwrap();
        assert_eq!(h[0].name, "a");
        assert_eq!(h[1].name, "y");
        assert_eq!(h[1].workdir, DEFAULT_WORKDIR);
        let e = from_list(&["root@x,x".into()]).unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
        let e = from_list(&["a=-oProxyCommand=x".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not start with '-'"), "{e}");
    }

    #[test]
    fn the_documented_hosts_file_reads() {
        let doc = include_str!("../../docs/fleet.md");
        let block = doc
            .split("```toml\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hosts.toml");
        std::fs::write(&p, block).unwrap();
        let h = from_file(&p).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].name.as_str(), h[1].name.as_str()), ("a", "node2"));
        assert_eq!(h[0].env["TMPDIR"], "/scratch");
        assert_eq!(h[1].workdir, DEFAULT_WORKDIR);
    }

    #[test]
    fn files_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hosts.toml");
        std::fs::write(&p, "[[host]]\nname = \"a\"\ndestinaton = \"x\"\n").unwrap();
        let e = from_file(&p).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:3:1: ", p.display())), "{e}");
        assert!(!e.contains('\n'), "{e}");
        std::fs::write(
            &p,
            "[[host]]\ndestination = \"root@h\"\nenv = { SYSDELTA_STORE = \"x\" }\n",
        )
        .unwrap();
        let e = from_file(&p).unwrap_err().to_string();
        assert!(e.contains("'h'") && e.contains("SYSDELTA_STORE"), "{e}");
        std::fs::write(
            &p,
            "[[host]]\ndestination = \"root@h\"\nworkdir = \"/w\"\nssh_options = [\"-p\", \"2\"]\n",
        )
        .unwrap();
        let h = from_file(&p).unwrap();
        assert_eq!(h[0].workdir, "/w");
        assert_eq!(from_json(&to_json(&h)).unwrap(), h);
    }
}
