//! The team store as the hosts reach it: through their own SSH
//! connection, not over a network route to the database.
//!
//! Each host's run connection forwards a Unix socket on the host
//! (`<workdir>/pg-<fleet uid>/.s.PGSQL.<port>`, `ssh -R`) to the
//! PostgreSQL server as this machine reaches it (its Unix socket, or
//! host:port), and the host's sysdelta is given a URL whose `host=` is
//! that socket's directory. The directory is named after the fleet's uid,
//! not made up per connection, so the URL, and with it the name of the
//! host's anchor file and the run log beside it (see `store::pg`), is the
//! same on every resume of that host: a run that died with runs not yet
//! folded finds them again.
//!
//! The URL carries no password. The anchor file on the host (mode 0600,
//! written from ssh's stdin) holds the URL alone, and the password, which
//! this machine found as libpq would (the URL given here, `PGPASSWORD`, a
//! password file, a service), reaches the host's sysdelta on the run
//! connection's stdin (see `launch`): it is in no file and on no command
//! line there, and gone with the run.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::bad;
use crate::store::pg;

/// The team store this machine uses.
pub struct Team {
    /// Its anchor here (what `--store URL` became).
    pub anchor: PathBuf,
    pub url: pg::Url,
    /// What `ssh -R` connects to here: the server's socket, or host:port.
    pub target: String,
    pub port: u16,
}

impl Team {
    /// The team store whose anchor is `store`; one line saying a fleet
    /// needs one when `store` is a store file.
    pub fn of(store: &Path) -> Result<Team> {
        let Some(full) = pg::pointer_url(store) else {
            return Err(bad(format!(
                "{}: a fleet needs a team store: --store postgresql://USER@HOST/DB \
                 (or SYSDELTA_STORE), which every host reaches through its ssh connection",
                store.display()
            )));
        };
        let url = pg::Url::parse(&full)?;
        let port = url.config.get_ports().first().copied().unwrap_or(5432);
        let target = match url.config.get_hosts().first() {
            Some(postgres::config::Host::Unix(dir)) => {
                dir.join(format!(".s.PGSQL.{port}")).display().to_string()
            }
            Some(postgres::config::Host::Tcp(h)) if h.contains(':') => format!("[{h}]:{port}"),
            Some(postgres::config::Host::Tcp(h)) => format!("{h}:{port}"),
            None => return Err(bad(format!("{}: no host", url.shown))),
        };
        Ok(Team {
            anchor: store.to_path_buf(),
            url,
            target,
            port,
        })
    }

    /// Refuse to work from a local directory (the one holding the store's
    /// anchor, where the fleet's lock goes: the state dir) that another
    /// user owns or that group or others can write, sticky or not, as
    /// OpenSSH's StrictModes refuses a path others can write: they could
    /// swap the anchor (the URL every host is given) or hold the lock.
    /// The remote workdirs are checked in `checks`.
    pub fn check_local_dir(&self) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        let abs = std::path::absolute(&self.anchor).unwrap_or_else(|_| self.anchor.clone());
        let dir = abs.parent().unwrap_or(Path::new("/"));
        let meta = std::fs::metadata(dir).map_err(|e| {
            bad(format!(
                "{}: the fleet's local state directory: {e}",
                dir.display()
            ))
        })?;
        let me = nix::unistd::geteuid().as_raw();
        let why = if meta.uid() != me && meta.uid() != 0 {
            format!("belongs to uid {}", meta.uid())
        } else if meta.mode() & 0o022 != 0 {
            format!("can be written by others (mode {:o})", meta.mode() & 0o7777)
        } else {
            return Ok(());
        };
        Err(bad(format!(
            "{}: the fleet's local state directory {why}: another user could replace the \
             store's anchor or hold the fleet's lock; give SYSDELTA_STATE_DIR a directory only you can write",
            dir.display()
        )))
    }

    /// The store's URL without its password.
    pub fn shown(&self) -> &str {
        &self.url.shown
    }

    /// The URL a host's sysdelta uses: this store's user and database,
    /// through the socket in `socket_dir` on that host; no password (see
    /// [`Team::password`]).
    pub fn host_url(&self, socket_dir: &str) -> String {
        let c = &self.url.config;
        let mut s = String::from("postgresql://");
        if let Some(user) = c.get_user() {
            s.push_str(&encode(user.as_bytes()));
            s.push('@');
        }
        s.push('/');
        s.push_str(&encode(c.get_dbname().unwrap_or_default().as_bytes()));
        s.push_str(&format!(
            "?host={}&port={}",
            encode(socket_dir.as_bytes()),
            self.port
        ));
        if let Some(a) = c.get_application_name() {
            s.push_str(&format!("&application_name={}", encode(a.as_bytes())));
        }
        if let Some(o) = c.get_options() {
            s.push_str(&format!("&options={}", encode(o.as_bytes())));
        }
        s
    }

    /// The password the hosts connect with (as found here), for the run
    /// connection's stdin; empty when there is none. One with a line end
    /// cannot be sent as a line (nor written in a password file).
    pub fn password(&self) -> Result<String> {
        let pw = self.url.config.get_password().unwrap_or_default();
        let pw = String::from_utf8(pw.to_vec())
            .map_err(|_| bad(format!("{}: the password is not UTF-8", self.shown())))?;
        if pw.contains(['\n', '\r']) {
            return Err(bad(format!(
                "{}: a password with a line end cannot reach the hosts",
                self.shown()
            )));
        }
        Ok(pw)
    }
}

/// Where one host keeps what a fleet run needs there, under its
/// (absolute) workdir.
#[derive(Clone, Debug)]
pub struct HostPaths {
    pub workdir: String,
    /// The forwarded socket's directory (the URL's `host=`).
    pub socket_dir: String,
    pub socket: String,
    /// SYSDELTA_STATE_DIR of the host's sysdelta.
    pub state_dir: String,
    /// The anchor of the host's URL in that state dir: its `--store`.
    pub anchor: String,
    /// The fleet's plan, as a file there.
    pub plan: String,
    /// The URL (without a password) that goes in the anchor.
    pub url: String,
}

/// A fleet's uid comes from its row, which any writer of the team store
/// can change, and goes into paths made (and chmod'ed) here and on every
/// host: only what sysdelta makes (32 hex digits) is taken.
pub fn check_uid(fleet_uid: &str) -> Result<()> {
    if fleet_uid.len() != 32 || !fleet_uid.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(format!(
            "the fleet's stored uid '{}' is not one sysdelta makes (32 hex digits); refused",
            fleet_uid.escape_debug()
        )));
    }
    Ok(())
}

impl HostPaths {
    pub fn new(team: &Team, workdir: &str, fleet_uid: &str) -> Result<HostPaths> {
        check_uid(fleet_uid)?;
        let w = workdir.trim_end_matches('/');
        let socket_dir = format!("{w}/pg-{fleet_uid}");
        let socket = format!("{socket_dir}/.s.PGSQL.{}", team.port);
        let state_dir = format!("{w}/state");
        let url = team.host_url(&socket_dir);
        // Where the host's sysdelta would anchor this URL itself, in the
        // state dir it is given.
        let anchor = pg::Url::parse(&url)?.anchor_in(Path::new(&state_dir));
        Ok(HostPaths {
            workdir: w.to_string(),
            anchor: anchor.display().to_string(),
            plan: format!("{w}/plan-{fleet_uid}.toml"),
            socket_dir,
            socket,
            state_dir,
            url,
        })
    }
}

/// The longest path a Unix socket takes (`sun_path` less its NUL).
pub const SOCKET_PATH_MAX: usize = 107;

/// How long the forwarded socket's path is under `workdir`, whatever the
/// fleet's uid (32 hex digits).
pub fn socket_path_len(workdir: &str, port: u16) -> usize {
    format!(
        "{}/pg-{:032}/.s.PGSQL.{port}",
        workdir.trim_end_matches('/'),
        0
    )
    .len()
}

/// Percent-encode all but the unreserved characters and `/` (a socket
/// directory is made of them).
fn encode(s: &[u8]) -> String {
    s.iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(url: &str) -> Team {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("a.store");
        std::fs::write(&anchor, pg::anchor_text(url)).unwrap();
        Team::of(&anchor).unwrap()
    }

    #[test]
    fn host_urls_keep_user_password_database() {
        let t = team("postgresql://al%40ce:p%20w@/team?host=/run/pg&port=5433");
        assert_eq!(t.target, "/run/pg/.s.PGSQL.5433");
        let uid = "0123456789abcdef0123456789abcdef";
        let p = HostPaths::new(&t, "/w/", uid).unwrap();
        assert_eq!(p.socket, format!("/w/pg-{uid}/.s.PGSQL.5433"));
        // A uid a row's writer made up never becomes a path.
        for bad in ["0123", "/../../../../usr", &"g".repeat(32)] {
            assert!(HostPaths::new(&t, "/w/", bad).is_err(), "{bad}");
        }
        assert!(
            !p.url.contains("p%20w") && !p.url.contains("p w"),
            "{}",
            p.url
        );
        assert_eq!(t.password().unwrap(), "p w");
        let u = pg::Url::parse(&p.url).unwrap();
        assert_eq!(u.config.get_user(), Some("al@ce"));
        assert_eq!(u.config.get_dbname(), Some("team"));
        assert_eq!(
            u.config.get_hosts(),
            [postgres::config::Host::Unix(format!("/w/pg-{uid}").into())]
        );
        assert_eq!(u.config.get_ports(), [5433]);
        assert!(p.anchor.starts_with("/w/state/pg-"), "{}", p.anchor);
        assert!(!p.anchor.contains("p w") && !p.anchor.contains("p%20w"));
        let t = team("postgresql://u:p@db.example:6000/team");
        assert_eq!(t.target, "db.example:6000");
    }

    #[test]
    fn a_local_state_dir_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("a.store");
        std::fs::write(&anchor, pg::anchor_text("postgresql://u:p@db/team")).unwrap();
        let t = Team::of(&anchor).unwrap();
        let mode = |m| std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(m)).unwrap();
        mode(0o700);
        t.check_local_dir().unwrap();
        for m in [0o777, 0o1777, 0o770] {
            mode(m);
            let e = t.check_local_dir().unwrap_err().to_string();
            assert!(
                e.contains("can be written by others") && !e.contains('\n'),
                "{e}"
            );
        }
        mode(0o700);
    }

    #[test]
    fn store_files_are_no_team_store() {
        let dir = tempfile::tempdir().unwrap();
        let e = Team::of(&dir.path().join("sysdelta.db"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("a fleet needs a team store"), "{e}");
    }
}
