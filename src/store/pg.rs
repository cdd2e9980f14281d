//! PostgreSQL stores: how `--store postgresql://...` (or `SYSDELTA_STORE`)
//! names one, and the local anchor each machine keeps for it.
//!
//! A store file has files beside it that belong to the machine that runs
//! experiments on it: the run log (each run before the next starts), the
//! journal of system changes (`sysdelta restore`), the lock that keeps two
//! runs off one store. A team store lives on a server, and those stay on
//! each machine: beside the store's *anchor*, a small file in the state
//! directory (`SYSDELTA_STATE_DIR`, else `$XDG_STATE_HOME/sysdelta`, else
//! `~/.local/state/sysdelta`) named after the server, port, database and
//! user, that holds the URL. Every command that takes a store path takes
//! the anchor, and [`Store::open`](super::Store::open) reads the URL from
//! it; so a dead run's log is folded by the next command on that machine,
//! as with a file.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::bad;

/// The first line of an anchor file.
const ANCHOR_MAGIC: &str = "sysdelta postgresql store anchor";

/// Whether a `--store` value names a PostgreSQL store.
pub fn is_url(s: &str) -> bool {
    s.starts_with("postgresql://") || s.starts_with("postgres://")
}

/// A parsed PostgreSQL URL.
#[derive(Clone)]
pub struct Url {
    pub config: postgres::Config,
    /// The URL as given, password included (kept only in the anchor file,
    /// mode 0600).
    pub full: String,
    /// The URL without its password, for messages.
    pub shown: String,
}

impl Url {
    /// Parse `url`; one line naming it (without its password) if it does
    /// not parse.
    pub fn parse(url: &str) -> Result<Url> {
        let shown = without_password(url);
        if !is_url(url) {
            return Err(bad(format!(
                "{shown}: not a PostgreSQL URL (it starts postgresql://)"
            )));
        }
        let config: postgres::Config = url
            .parse()
            .map_err(|e| bad(format!("{shown}: not a PostgreSQL URL ({e})")))?;
        if config.get_hosts().is_empty() {
            return Err(bad(format!("{shown}: not a PostgreSQL URL (no host)")));
        }
        if config.get_dbname().is_none() {
            return Err(bad(format!(
                "{shown}: name the database (postgresql://HOST/DATABASE)"
            )));
        }
        let mut config = config;
        // A server behind a network that drops packets: noticed in about
        // half a minute, not the kernel's two hours of TCP keepalive.
        if config.get_keepalives_idle() == std::time::Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(std::time::Duration::from_secs(15));
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(std::time::Duration::from_secs(30));
        }
        if config.get_connect_timeout().is_none() {
            // Short: a run that finds the server gone tries again each
            // second, and must not wait long on each try.
            config.connect_timeout(std::time::Duration::from_secs(5));
        }
        Ok(Url {
            config,
            full: url.to_string(),
            shown,
        })
    }

    /// Where this store is anchored on this machine (in the state
    /// directory `dir`): one file per server, port, database and user.
    pub fn anchor_in(&self, dir: &Path) -> PathBuf {
        let host = match self.config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.clone(),
            Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => String::new(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let db = self.config.get_dbname().unwrap_or("");
        let user = self.config.get_user().unwrap_or("");
        let name: String = format!("{user}@{host}:{port}-{db}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "@:.-_".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        dir.join(format!("pg-{name}.store"))
    }
}

/// The URL with any password taken out (`user:secret@` and `password=`).
/// The credentials run to the first `@` after the scheme, as the client
/// reads them: a password may hold `/` or `:`.
pub fn without_password(url: &str) -> String {
    let s = match url.find("://") {
        Some(i) => {
            let (scheme, rest) = url.split_at(i + 3);
            match rest.find('@') {
                Some(at) if rest[..at].contains(':') => {
                    let user = &rest[..rest.find(':').unwrap_or(0)];
                    format!("{scheme}{user}@{}", &rest[at + 1..])
                }
                _ => url.to_string(),
            }
        }
        None => url.to_string(),
    };
    let q = regex::Regex::new(r"([?&]password=)[^&]*").expect("valid regex");
    q.replace_all(&s, "${1}xxx").into_owned()
}

/// Where sysdelta keeps what belongs to this machine and no store file.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SYSDELTA_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("sysdelta");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    PathBuf::from(home).join(".local/state/sysdelta")
}

/// The anchor of the store `url` on this machine, after checking that the
/// URL parses and the server takes it (one line and exit 2 otherwise,
/// and nothing written anywhere).
pub fn anchor_for(url: &str) -> Result<PathBuf> {
    anchor_in(url, &state_dir())
}

/// What [`Store::open`](super::Store::open) takes for a store named on
/// the command line: a PostgreSQL URL's anchor (see [`anchor_for`]), else
/// the file as named.
pub fn path_of(named: &Path) -> Result<PathBuf> {
    match named.to_str() {
        Some(url) if is_url(url) => anchor_for(url),
        _ => Ok(named.to_path_buf()),
    }
}

/// [`anchor_for`] with the state directory `dir`.
pub fn anchor_in(url: &str, dir: &Path) -> Result<PathBuf> {
    let parsed = Url::parse(url)?;
    let anchor = parsed.anchor_in(dir);
    // Connect once, so a wrong password or a server that is not there is
    // said now, in one line, before anything is prepared or written;
    // unless this machine already anchors that URL: then what is local
    // (restore's journal, list's waiting runs, flush) works with the
    // server out of reach, and the store's open says what is wrong.
    if let Err(e) = super::db::Pg::connect(parsed.config.clone(), parsed.shown.clone()) {
        if pointer_url(&anchor).as_deref() == Some(url) {
            return Ok(anchor);
        }
        return Err(e);
    }
    if pointer_url(&anchor).as_deref() != Some(url) {
        write_anchor(&anchor, url)?;
    }
    Ok(anchor)
}

/// What an anchor file of `url` holds: two lines, the magic and the URL
/// (`fleet` writes one on each host, from stdin, so that the password is
/// on no command line there).
pub fn anchor_text(url: &str) -> String {
    format!("{ANCHOR_MAGIC}\n{url}\n")
}

/// Write the anchor file whole (a temporary file renamed into place),
/// readable by its owner only: the URL may carry a password.
fn write_anchor(anchor: &Path, url: &str) -> Result<()> {
    let dir = anchor.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        // Only a directory made here is made private: an existing one (a
        // SYSDELTA_STATE_DIR=/var/tmp) keeps its mode; the file is 0600.
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot make the state directory", dir.display()))?;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    let tmp = dir.join(format!(".anchor-{}", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(anchor_text(url).as_bytes())?;
        std::fs::rename(&tmp, anchor)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("{}: cannot write the store's anchor", anchor.display()))
}

/// How the store at `path` is named in messages: its URL without the
/// password when `path` is a PostgreSQL store's anchor, else the path.
pub fn named(path: &Path) -> String {
    match pointer_url(path) {
        Some(url) => without_password(&url),
        None => path.display().to_string(),
    }
}

/// The URL an anchor file holds; None when `path` is no anchor (a store
/// file, or nothing).
pub fn pointer_url(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut head)
        .ok()?;
    let text = std::str::from_utf8(&head).ok()?;
    let mut lines = text.lines();
    (lines.next()? == ANCHOR_MAGIC).then_some(())?;
    let url = lines.next()?.trim();
    is_url(url).then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_shown() {
        assert_eq!(
            without_password("postgresql://alice:s3cret@db.example/team"),
            "postgresql://alice@db.example/team"
        );
        assert_eq!(
            without_password(
                "postgresql://alice@/team?host=/tmp/x&password=s3cret&sslmode=disable"
            ),
            "postgresql://alice@/team?host=/tmp/x&password=xxx&sslmode=disable"
        );
        assert_eq!(
            without_password("postgresql://db.example:5433/team"),
            "postgresql://db.example:5433/team"
        );
        // Generated passwords hold / and :, which the client takes as
        // part of the password (up to the first @).
        assert_eq!(
            without_password("postgresql://alice:a/b:c+d@db.example:5433/team"),
            "postgresql://alice@db.example:5433/team"
        );
        let c: postgres::Config = "postgresql://alice:a/b:c+d@db.example:5433/team"
            .parse()
            .unwrap();
        assert_eq!(c.get_password(), Some(&b"a/b:c+d"[..]));
    }

    #[test]
    fn urls_parse_or_say_why() {
        assert!(Url::parse("postgresql://u:p@localhost/team").is_ok());
        let e = Url::parse("postgresql://u:p@localhost:notaport/team")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("postgresql://u@localhost:notaport/team: not a PostgreSQL URL"),
            "{e}"
        );
        let e = Url::parse("postgresql://u@localhost")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("name the database"), "{e}");
    }

    #[test]
    fn anchors_differ_per_database_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let a = Url::parse("postgresql://u:p@/team?host=/run/pg").unwrap();
        let b = Url::parse("postgresql://u:p@/other?host=/run/pg").unwrap();
        assert_ne!(a.anchor_in(dir.path()), b.anchor_in(dir.path()));
        let anchor = dir.path().join("x.store");
        write_anchor(&anchor, &a.full).unwrap();
        assert_eq!(pointer_url(&anchor).as_deref(), Some(a.full.as_str()));
        let mode = std::fs::metadata(&anchor).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(pointer_url(dir.path()), None);
    }
}
