//! Connection strings and credentials as libpq takes them, so that a
//! team store is named and reached the way `psql` reaches it:
//! `postgresql://` and `postgres://` URLs and `key=value` strings; what
//! they leave out taken from a service (`service=` or `PGSERVICE`, in
//! `PGSERVICEFILE` or `~/.pg_service.conf`, then
//! `PGSYSCONFDIR/pg_service.conf`), then from `PGHOST`, `PGPORT`,
//! `PGUSER`, `PGDATABASE`...; the password from the string, the
//! service, `PGPASSWORD`, then the password file (`passfile=`,
//! `PGPASSFILE` or `~/.pgpass`, ignored with libpq's warning when its
//! group or others can read it). libpq 15's `fe-connect.c` is the model.
//!
//! The environment libpq reads is read once, when sysdelta starts
//! ([`take_secrets_from_environment`]), and the variables that carry a
//! secret are then taken out of the process's environment, so that no
//! workload, setup, monitor or guest sysdelta starts inherits them.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::pgpass;
// The strings themselves are read in connstring.rs; they are part of
// this module's interface, as they always were.
use super::connstring::unset;
pub use super::connstring::{
    get, is_conninfo, is_url, parse, parse_keywords, set, to_keywords, Params, KEYWORDS,
};

/// The variables that carry a store's secret: sysdelta's own store (a URL
/// may hold a password) and libpq's password. They are taken out of the
/// environment at start; the others (`PGHOST`, `PGSERVICE`,
/// `PGPASSFILE`...) name where things are, not a secret, and a workload
/// that talks to a database of its own may rely on them.
pub const SECRET_VARS: &[&str] = &["SYSDELTA_STORE", "PGPASSWORD"];

/// The keywords libpq takes from the environment when a string (and its
/// service) leaves them out, and their variables.
const FROM_ENV: &[(&str, &str)] = &[
    ("host", "PGHOST"),
    ("hostaddr", "PGHOSTADDR"),
    ("port", "PGPORT"),
    ("dbname", "PGDATABASE"),
    ("user", "PGUSER"),
    ("password", "PGPASSWORD"),
    ("passfile", "PGPASSFILE"),
    ("options", "PGOPTIONS"),
    ("application_name", "PGAPPNAME"),
    ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ("sslmode", "PGSSLMODE"),
    ("target_session_attrs", "PGTARGETSESSIONATTRS"),
    ("channel_binding", "PGCHANNELBINDING"),
];

/// The Unix socket directory libpq uses without a host (Debian's build),
/// which a password file calls `localhost`.
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// Where libpq looks for the system's service file without
/// `PGSYSCONFDIR` (Debian's build).
const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// Where a connection's password came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordFrom {
    /// The URL or string itself: a store anchored with it keeps it in
    /// its anchor (mode 0600), as it always did.
    Given,
    /// A service file, `PGPASSWORD` or a password file: looked up again
    /// by each sysdelta, and kept in no file of sysdelta's.
    Elsewhere,
    /// None at all (the server asks for none, or will refuse).
    Nowhere,
}

/// What libpq would connect with: every setting resolved.
pub struct Resolved {
    /// Everything, password included.
    pub params: Params,
    pub password_from: PasswordFrom,
}

impl Resolved {
    /// The settings without the password (unless it was given in the
    /// string itself), for the anchor; `service` and `passfile` kept, so
    /// that the password is found again where it was.
    pub fn to_keep(&self) -> Params {
        let keep_pw = self.password_from == PasswordFrom::Given;
        self.params
            .iter()
            .filter(|(k, _)| k != "password" || keep_pw)
            .cloned()
            .collect()
    }

    /// The settings the `postgres` crate is given (it knows neither
    /// `service` nor `passfile`, which have served).
    pub fn for_client(&self) -> Params {
        self.params
            .iter()
            .filter(|(k, v)| k != "service" && k != "passfile" && !v.is_empty())
            .cloned()
            .collect()
    }
}

/// Resolve `given` as libpq does: the service's settings where the string
/// has none, then the environment's (`var`), then the defaults (the
/// socket directory, this user, a database of the user's name), then the
/// password from the password file. A warning about the password file
/// goes to `warn`.
pub fn resolve(
    given: Params,
    var: &dyn Fn(&str) -> Option<String>,
    warn: &mut dyn FnMut(String),
) -> Result<Resolved, String> {
    let mut p = given;
    let password_given = !unset(&p, "password");
    let service = match get(&p, "service") {
        Some(s) if !s.is_empty() => Some(s.to_string()),
        _ => var("PGSERVICE").filter(|s| !s.is_empty()),
    };
    if let Some(name) = service {
        for (k, v) in service_settings(&name, var)? {
            if get(&p, &k).is_none() {
                set(&mut p, &k, &v);
            }
        }
        set(&mut p, "service", &name);
    }
    let password_from_service = !password_given && !unset(&p, "password");
    for (key, name) in FROM_ENV {
        if unset(&p, key) {
            if let Some(v) = var(name).filter(|v| !v.is_empty()) {
                set(&mut p, key, &v);
            }
        }
    }
    if unset(&p, "host") && unset(&p, "hostaddr") {
        set(&mut p, "host", DEFAULT_SOCKET_DIR);
    }
    if unset(&p, "user") {
        let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
            .ok()
            .flatten()
            .map(|u| u.name)
            .ok_or("no user name: set user= or PGUSER")?;
        set(&mut p, "user", &me);
    }
    if unset(&p, "dbname") {
        let user = get(&p, "user").unwrap_or_default().to_string();
        set(&mut p, "dbname", &user);
    }
    if unset(&p, "password") {
        let file = match get(&p, "passfile") {
            Some(f) if !f.is_empty() => Some(PathBuf::from(f)),
            _ => home().map(|h| h.join(".pgpass")),
        };
        if let Some(pw) = file.and_then(|f| pgpass::password_from_file(&f, pgpass_key(&p), warn)) {
            set(&mut p, "password", &pw);
        }
    }
    let password_from = if password_given {
        PasswordFrom::Given
    } else if password_from_service || !unset(&p, "password") {
        PasswordFrom::Elsewhere
    } else {
        PasswordFrom::Nowhere
    };
    Ok(Resolved {
        params: p,
        password_from,
    })
}

/// What a password file's line is matched against: the first host (the
/// default socket directory, or none, as `localhost`), the first port
/// (5432 if none), the database and the user.
fn pgpass_key(p: &Params) -> [&str; 4] {
    let first = |k: &str| get(p, k).and_then(|v| v.split(',').next()).unwrap_or("");
    let mut host = first("host");
    if host.is_empty() {
        host = first("hostaddr");
    }
    if host.is_empty() || host == DEFAULT_SOCKET_DIR {
        host = "localhost";
    }
    let port = match first("port") {
        "" => "5432",
        p => p,
    };
    [
        host,
        port,
        get(p, "dbname").unwrap_or(""),
        get(p, "user").unwrap_or(""),
    ]
}

/// The user's home, as libpq finds it: `HOME`, else the password database.
fn home() -> Option<PathBuf> {
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Some(PathBuf::from(h)),
        None => nix::unistd::User::from_uid(nix::unistd::geteuid())
            .ok()
            .flatten()
            .map(|u| u.dir),
    }
}

/// The settings of service `name`: the user's service file first
/// (`PGSERVICEFILE`, else `~/.pg_service.conf`), then the system's
/// (`PGSYSCONFDIR/pg_service.conf`); a file that is not there is passed
/// over, a service in neither is an error.
fn service_settings(name: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<Params, String> {
    let user = match var("PGSERVICEFILE").filter(|f| !f.is_empty()) {
        Some(f) => Some(PathBuf::from(f)),
        None => home().map(|h| h.join(".pg_service.conf")),
    };
    let sysconf = var("PGSYSCONFDIR")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| DEFAULT_SYSCONFDIR.to_string());
    let system = Path::new(&sysconf).join("pg_service.conf");
    for file in user.into_iter().chain([system]) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let section =
            pgpass::service_section(&text, name).map_err(|e| format!("{}: {e}", file.display()))?;
        if let Some(pairs) = section {
            if let Some((k, _)) = pairs.iter().find(|(k, _)| !KEYWORDS.contains(&k.as_str())) {
                return Err(format!(
                    "{}: syntax error in service \"{name}\" (unknown keyword \"{k}\")",
                    file.display()
                ));
            }
            return Ok(pairs);
        }
    }
    Err(format!("definition of service \"{name}\" not found"))
}

/// The environment libpq reads, as it was when sysdelta started (see
/// [`take_secrets_from_environment`]).
static STARTED_WITH: OnceLock<HashMap<String, OsString>> = OnceLock::new();

/// Read the variables libpq and sysdelta's store use (`PG*`,
/// `SYSDELTA_STORE`) once, and take those that carry a secret
/// ([`SECRET_VARS`]) out of this process's environment, so that no child
/// inherits them. Called first thing in `main`, before any thread or
/// child exists (changing the environment is safe only then).
pub fn take_secrets_from_environment() {
    let vars: HashMap<String, OsString> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| k.starts_with("PG") || SECRET_VARS.contains(&k.as_str()))
        .collect();
    let _ = STARTED_WITH.set(vars);
    for v in SECRET_VARS {
        std::env::remove_var(v);
    }
}

/// A variable of the environment libpq reads: as sysdelta started with
/// it, or (in a program that did not take it, a test) as it is now.
pub fn var_os(name: &str) -> Option<OsString> {
    match STARTED_WITH.get() {
        Some(vars) => vars.get(name).cloned(),
        None => std::env::var_os(name),
    }
}

/// [`var_os`] as text.
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

/// Say `warning` on stderr once per process (a store's string is
/// resolved more than once), as libpq says it once per connection.
pub fn warn_once(warning: String) {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&warning) {
        // Not eprintln!: a closed stderr is no reason to stop.
        let _ = writeln!(std::io::stderr(), "sysdelta: warning: {warning}");
        said.push(warning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn no_warning(w: String) {
        panic!("unexpected warning: {w}");
    }

    #[test]
    fn key_value_strings_are_stores_and_file_names_are_not() {
        assert!(is_conninfo("postgresql://h/db"));
        assert!(is_conninfo("postgres://h/db"));
        assert!(is_conninfo("host=db.example dbname=team user=alice"));
        assert!(is_conninfo("  dbname = team"));
        assert!(is_conninfo("service=team"));
        assert!(!is_conninfo("sysdelta.db"));
        assert!(!is_conninfo("./host=x.db"));
        assert!(!is_conninfo("results=old.db"));
        assert!(!is_conninfo("/tmp/a=b"));
    }

    #[test]
    fn key_value_strings_split_as_libpq_splits_them() {
        let p =
            parse_keywords(r"host=/run/pg  port = 5433 password='a b\'c\\d' user=x\ y").unwrap();
        assert_eq!(get(&p, "host"), Some("/run/pg"));
        assert_eq!(get(&p, "port"), Some("5433"));
        assert_eq!(get(&p, "password"), Some(r"a b'c\d"));
        assert_eq!(get(&p, "user"), Some("x y"));
        assert!(parse_keywords("host=x bogus=1")
            .unwrap_err()
            .contains("bogus"));
        assert!(parse_keywords("host").is_err());
        assert!(parse_keywords("password='open").is_err());
        // What sysdelta writes, libpq's rules and the crate's read back.
        let again = parse_keywords(&to_keywords(&p)).unwrap();
        assert_eq!(again, p);
        let c: postgres::Config = to_keywords(&p).parse().unwrap();
        assert_eq!(c.get_password(), Some(&br"a b'c\d"[..]));
        assert_eq!(c.get_user(), Some("x y"));
    }

    #[test]
    fn urls_keep_what_they_say_and_take_service_and_passfile() {
        let p = parse("postgresql://al%40ce:p%3Aw@db.example:5433/team?service=s%20t&application_name=x&passfile=/p")
            .unwrap();
        assert_eq!(get(&p, "user"), Some("al@ce"));
        assert_eq!(get(&p, "password"), Some("p:w"));
        assert_eq!(get(&p, "host"), Some("db.example"));
        assert_eq!(get(&p, "port"), Some("5433"));
        assert_eq!(get(&p, "dbname"), Some("team"));
        assert_eq!(get(&p, "application_name"), Some("x"));
        assert_eq!(get(&p, "service"), Some("s t"));
        assert_eq!(get(&p, "passfile"), Some("/p"));
        let p = parse("postgresql:///team?host=/run/pg&port=6000").unwrap();
        assert_eq!(get(&p, "host"), Some("/run/pg"));
        assert_eq!(get(&p, "user"), None);
    }

    #[test]
    fn the_string_wins_then_the_service_then_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("services");
        std::fs::write(
            &file,
            "[team]\nhost=/run/svc\ndbname=svcdb\npassword=svcpw\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let vars = [
            ("PGSERVICEFILE", f),
            ("PGSYSCONFDIR", "/nonexistent"),
            ("PGHOST", "envhost"),
            ("PGDATABASE", "envdb"),
            ("PGUSER", "envuser"),
            ("PGPASSWORD", "envpw"),
            ("PGPASSFILE", "/nonexistent/pgpass"),
        ];
        let r = resolve(
            parse("service=team dbname=given").unwrap(),
            &env(&vars),
            &mut no_warning,
        )
        .unwrap();
        assert_eq!(get(&r.params, "dbname"), Some("given"));
        assert_eq!(get(&r.params, "host"), Some("/run/svc"));
        assert_eq!(get(&r.params, "user"), Some("envuser"));
        assert_eq!(get(&r.params, "password"), Some("svcpw"));
        assert_eq!(r.password_from, PasswordFrom::Elsewhere);
        assert_eq!(get(&r.to_keep(), "password"), None);
        assert_eq!(get(&r.to_keep(), "service"), Some("team"));
        assert_eq!(get(&r.for_client(), "service"), None);
        // PGSERVICE names it when the string does not.
        let mut with_service = vars.to_vec();
        with_service.push(("PGSERVICE", "team"));
        let r = resolve(
            parse("user=u").unwrap(),
            &env(&with_service),
            &mut no_warning,
        )
        .unwrap();
        assert_eq!(get(&r.params, "dbname"), Some("svcdb"));
        // Without a service: the environment, and PGPASSWORD.
        let r = resolve(
            parse("postgresql:///x").unwrap(),
            &env(&vars),
            &mut no_warning,
        )
        .unwrap();
        assert_eq!(get(&r.params, "host"), Some("envhost"));
        assert_eq!(get(&r.params, "password"), Some("envpw"));
        assert_eq!(r.password_from, PasswordFrom::Elsewhere);
        // A password in the string is kept with it.
        let r = resolve(
            parse("postgresql://u:pw@h/x").unwrap(),
            &env(&vars),
            &mut no_warning,
        )
        .unwrap();
        assert_eq!(get(&r.params, "password"), Some("pw"));
        assert_eq!(r.password_from, PasswordFrom::Given);
        assert_eq!(get(&r.to_keep(), "password"), Some("pw"));
        let e = resolve(parse("service=none").unwrap(), &env(&vars), &mut no_warning)
            .err()
            .unwrap();
        assert!(
            e.contains("definition of service \"none\" not found"),
            "{e}"
        );
    }

    #[test]
    fn defaults_are_libpqs_and_the_password_file_is_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pgpass = dir.path().join("pgpass");
        std::fs::write(&pgpass, "localhost:5432:team:alice:frompgpass\n").unwrap();
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let vars = [("PGPASSFILE", pgpass.to_str().unwrap())];
        let r = resolve(
            parse("user=alice dbname=team").unwrap(),
            &env(&vars),
            &mut no_warning,
        )
        .unwrap();
        assert_eq!(get(&r.params, "host"), Some(DEFAULT_SOCKET_DIR));
        assert_eq!(get(&r.params, "password"), Some("frompgpass"));
        assert_eq!(r.password_from, PasswordFrom::Elsewhere);
        // The database defaults to the user's name; no line matches it.
        let r = resolve(parse("user=alice").unwrap(), &env(&vars), &mut no_warning).unwrap();
        assert_eq!(get(&r.params, "dbname"), Some("alice"));
        assert_eq!(r.password_from, PasswordFrom::Nowhere);
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o640)).unwrap();
        let mut warned = Vec::new();
        let r = resolve(
            parse("user=alice dbname=team").unwrap(),
            &env(&vars),
            &mut |w| warned.push(w),
        )
        .unwrap();
        assert_eq!(r.password_from, PasswordFrom::Nowhere);
        assert_eq!(warned.len(), 1);
    }
}
