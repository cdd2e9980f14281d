//! PostgreSQL stores: how `--store postgresql://...`, `--store 'host=...
//! dbname=...'` (or `SYSDELTA_STORE`) names one, with the credentials
//! libpq would find for it (see [`conninfo`](super::conninfo)), and the
//! local anchor each machine keeps for it.
//!
//! A store file has files beside it that belong to the machine that runs
//! experiments on it: the run log (each run before the next starts), the
//! journal of system changes (`sysdelta restore`), the lock that keeps two
//! runs off one store. A team store lives on a server, and those stay on
//! each machine: beside the store's *anchor*, a small file in the state
//! directory (`SYSDELTA_STATE_DIR`, else `$XDG_STATE_HOME/sysdelta`, else
//! `~/.local/state/sysdelta`) named after the server, port, database and
//! user, that holds the connection's settings: no password, unless the
//! URL or string itself carried one (then the file is mode 0600, as it
//! always was); a password from `PGPASSWORD`, a password file or a
//! service is looked up again by each command, as libpq does. Every
//! command that takes a store path takes the anchor, and
//! [`Store::open`](super::Store::open) reads the settings from it; so a
//! dead run's log is folded by the next command on that machine, as with
//! a file.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::conninfo::{self, PasswordFrom};
use crate::error::bad;

/// The first line of an anchor file.
const ANCHOR_MAGIC: &str = "sysdelta postgresql store anchor";

/// Whether a `--store` value is a PostgreSQL URL.
pub fn is_url(s: &str) -> bool {
    conninfo::is_url(s)
}

/// Whether a `--store` value names a PostgreSQL store: a URL, or a libpq
/// `key=value` string (see [`conninfo::is_conninfo`]), never a file name.
pub fn is_pg(s: &str) -> bool {
    conninfo::is_conninfo(s)
}

/// A PostgreSQL store's connection, resolved as libpq resolves it.
#[derive(Clone)]
pub struct Url {
    /// What the client connects with, password included.
    pub config: postgres::Config,
    /// What the anchor keeps (a `key=value` string): the settings
    /// without the password, unless the string itself carried one.
    pub kept: String,
    /// The store without its password, for messages: a URL a user can
    /// give again (with `PGPASSWORD` or a password file).
    pub shown: String,
    /// Where the password came from.
    pub password_from: PasswordFrom,
}

impl Url {
    /// Resolve `url` (a URL or a `key=value` string) as libpq does (the
    /// service, the environment as sysdelta started with it, the password
    /// file); one line naming it (without its password) if it does not
    /// parse.
    pub fn parse(url: &str) -> Result<Url> {
        let given = without_password(url);
        let what = match is_url(url) {
            true => "a PostgreSQL URL",
            false => "a PostgreSQL connection string",
        };
        if !is_pg(url) {
            return Err(bad(format!(
                "{given}: not a PostgreSQL URL (it starts postgresql://) or connection string (host=... dbname=...)"
            )));
        }
        let params = conninfo::parse(url).map_err(|e| bad(format!("{given}: not {what} ({e})")))?;
        let resolved = conninfo::resolve(params, &conninfo::var, &mut conninfo::warn_once)
            .map_err(|e| bad(format!("{given}: {e}")))?;
        let config: postgres::Config = conninfo::to_keywords(&resolved.for_client())
            .parse()
            .map_err(|e| bad(format!("{given}: not {what} ({e})")))?;
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
            shown: shown(&config),
            kept: conninfo::to_keywords(&resolved.to_keep()),
            password_from: resolved.password_from,
            config,
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

/// How a resolved connection is named in messages: a URL without a
/// password, one a user can give again.
fn shown(c: &postgres::Config) -> String {
    let enc = |s: &str| encode(s.as_bytes());
    let user = c
        .get_user()
        .map(|u| format!("{}@", enc(u)))
        .unwrap_or_default();
    let db = enc(c.get_dbname().unwrap_or_default());
    let ports: Vec<String> = c.get_ports().iter().map(|p| p.to_string()).collect();
    let port = ports.join(",");
    match c.get_hosts() {
        [postgres::config::Host::Tcp(h)] if c.get_hostaddrs().is_empty() => {
            let h = if h.contains(':') {
                format!("[{h}]")
            } else {
                h.clone()
            };
            match port.as_str() {
                "" | "5432" => format!("postgresql://{user}{h}/{db}"),
                _ => format!("postgresql://{user}{h}:{port}/{db}"),
            }
        }
        hosts => {
            let hosts: Vec<String> = hosts
                .iter()
                .map(|h| match h {
                    postgres::config::Host::Tcp(h) => h.clone(),
                    postgres::config::Host::Unix(d) => d.display().to_string(),
                })
                .collect();
            let mut s = format!("postgresql://{user}/{db}?host={}", enc(&hosts.join(",")));
            if !port.is_empty() {
                s.push_str(&format!("&port={port}"));
            }
            s
        }
    }
}

/// Percent-encode all but the unreserved characters, `/` and `,`.
pub fn encode(s: &[u8]) -> String {
    s.iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' | b',' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The store's name with any password taken out: a URL's `user:secret@`
/// and `password=` parameter, a `key=value` string's `password=...`.
/// A URL's credentials run to the first `@` after the scheme, as the
/// client reads them: a password may hold `/` or `:`.
pub fn without_password(url: &str) -> String {
    if !is_url(url) {
        let kv = regex::Regex::new(r"(^|\s)password\s*=\s*('(?:\\.|[^'\\])*'?|(?:\\.|\S)*)")
            .expect("valid regex");
        return kv.replace_all(url, "${1}password=xxx").into_owned();
    }
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
/// the command line: a PostgreSQL store's anchor (see [`anchor_for`]),
/// else the file as named.
pub fn path_of(named: &Path) -> Result<PathBuf> {
    match named.to_str() {
        Some(url) if is_pg(url) => anchor_for(url),
        _ => Ok(named.to_path_buf()),
    }
}

/// [`anchor_for`] with the state directory `dir`.
pub fn anchor_in(url: &str, dir: &Path) -> Result<PathBuf> {
    let parsed = Url::parse(url)?;
    let anchor = parsed.anchor_in(dir);
    // A state directory or an anchor that is not ours is refused before
    // anything is read, sent or written.
    // (No directory yet: no anchor either; write_anchor makes both.)
    if dir.exists() {
        crate::sys::trust::check_dir(dir).map_err(bad)?;
        crate::sys::trust::check(&anchor).map_err(bad)?;
    }
    // Connect once, so a wrong password or a server that is not there is
    // said now, in one line, before anything is prepared or written;
    // unless this machine already anchors that URL: then what is local
    // (restore's journal, list's waiting runs, flush) works with the
    // server out of reach, and the store's open says what is wrong.
    if let Err(e) = super::db::Pg::connect(parsed.config.clone(), parsed.shown.clone()) {
        if super::db::is_unreachable(&e)
            && pointer_url(&anchor).as_deref() == Some(parsed.kept.as_str())
        {
            return Ok(anchor);
        }
        return Err(e);
    }
    if pointer_url(&anchor).as_deref() != Some(parsed.kept.as_str()) {
        write_anchor(&anchor, &parsed.kept)?;
    }
    Ok(anchor)
}

/// What an anchor file of `url` holds: two lines, the magic and the
/// connection's settings (`fleet` writes one on each host, from stdin,
/// with no password in it).
pub fn anchor_text(url: &str) -> String {
    format!("{ANCHOR_MAGIC}\n{url}\n")
}

/// Write the anchor file whole (a temporary file renamed into place),
/// readable by its owner only: a URL given with a password keeps it.
fn write_anchor(anchor: &Path, url: &str) -> Result<()> {
    let dir = anchor.parent().unwrap_or(Path::new("."));
    // Made 0700, or an existing one judged (ours, nobody else's to
    // write); the anchor is made anew, 0600, and renamed into place.
    crate::sys::trust::make_dir(dir).map_err(bad)?;
    crate::sys::trust::replace(anchor, anchor_text(url).as_bytes())
        .map_err(|e| bad(format!("cannot write the store's anchor: {e}")))
}

/// How the store at `path` is named in messages: its URL without the
/// password when `path` is a PostgreSQL store's anchor, else the path.
pub fn named(path: &Path) -> String {
    match pointer_url(path) {
        Some(url) => match Url::parse(&url) {
            Ok(u) => u.shown,
            Err(_) => without_password(&url),
        },
        None => path.display().to_string(),
    }
}

/// The connection string an anchor file holds (a URL in anchors written
/// before sysdelta read `key=value` strings); None when `path` is no
/// anchor (a store file, or nothing).
pub fn pointer_url(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    // Never through a link, nor waiting on a FIFO.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut head)
        .ok()?;
    let text = std::str::from_utf8(&head).ok()?;
    let mut lines = text.lines();
    (lines.next()? == ANCHOR_MAGIC).then_some(())?;
    let url = lines.next()?.trim();
    is_pg(url).then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
        // As libpq: the database defaults to the user's name.
        let u = Url::parse("postgresql://u@localhost").unwrap();
        assert_eq!(u.config.get_dbname(), Some("u"));
        let e = Url::parse("host=/run/pg bogus=1")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("host=/run/pg bogus=1: not a PostgreSQL connection string"),
            "{e}"
        );
    }

    #[test]
    fn key_value_strings_name_stores_with_no_password_shown() {
        let u =
            Url::parse("host=/run/pg port=5433 dbname=team user=al password='s3 cret'").unwrap();
        assert_eq!(u.shown, "postgresql://al@/team?host=/run/pg&port=5433");
        assert_eq!(u.config.get_password(), Some(&b"s3 cret"[..]));
        // Given in the string, the password is kept with it (in a 0600
        // anchor), as a URL's always was.
        assert_eq!(u.password_from, PasswordFrom::Given);
        assert!(u.kept.contains("s3 cret"), "{}", u.kept);
        assert_eq!(
            without_password("host=h password='s3 cret' dbname=d"),
            "host=h password=xxx dbname=d"
        );
        assert_eq!(
            without_password("password=s3\\ cret host=h"),
            "password=xxx host=h"
        );
        assert_eq!(
            Url::parse("postgresql://u:pw@db.example/team")
                .unwrap()
                .shown,
            "postgresql://u@db.example/team"
        );
        assert!(path_of(Path::new("sysdelta.db")).is_ok());
    }

    #[test]
    fn anchors_differ_per_database_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let a = Url::parse("postgresql://u:p@/team?host=/run/pg").unwrap();
        let b = Url::parse("postgresql://u:p@/other?host=/run/pg").unwrap();
        assert_ne!(a.anchor_in(dir.path()), b.anchor_in(dir.path()));
        let anchor = dir.path().join("x.store");
        write_anchor(&anchor, &a.kept).unwrap();
        assert_eq!(pointer_url(&anchor).as_deref(), Some(a.kept.as_str()));
        let again = Url::parse(&a.kept).unwrap();
        assert_eq!(again.anchor_in(dir.path()), a.anchor_in(dir.path()));
        assert_eq!(again.config.get_password(), Some(&b"p"[..]));
        let mode = std::fs::metadata(&anchor).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(pointer_url(dir.path()), None);
    }
}
