//! Connection strings as libpq 15 splits them (`fe-connect.c`):
//! `postgresql://` and `postgres://` URLs and `key=value` strings, read
//! into their settings and written back. Only the text: what a string
//! leaves out (a service, the environment, the defaults, the password
//! file) is resolved in `conninfo.rs`.

/// The keywords of libpq 15's connection strings.
pub const KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "sslmode",
    "requiressl",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "gssencmode",
    "krbsrvname",
    "gsslib",
    "service",
    "target_session_attrs",
];

/// A connection string's settings, in order, each keyword once.
pub type Params = Vec<(String, String)>;

/// The value of `key` in `p`.
pub fn get<'a>(p: &'a Params, key: &str) -> Option<&'a str> {
    p.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Set `key` in `p` (replacing it).
pub fn set(p: &mut Params, key: &str, value: &str) {
    match p.iter_mut().find(|(k, _)| k == key) {
        Some(kv) => kv.1 = value.to_string(),
        None => p.push((key.to_string(), value.to_string())),
    }
}

pub(super) fn unset(p: &Params, key: &str) -> bool {
    get(p, key).is_none_or(str::is_empty)
}

/// Whether `s` names a PostgreSQL store rather than a file: a
/// `postgresql://` or `postgres://` URL, or a `key=value` string whose
/// first keyword is one of libpq's (`host=...`, `dbname=... user=...`,
/// `service=team`). A store file whose name starts so is named `./host=...`.
pub fn is_conninfo(s: &str) -> bool {
    if is_url(s) {
        return true;
    }
    let t = s.trim_start();
    match t.split_once('=') {
        Some((key, _)) => KEYWORDS.contains(&key.trim_end()),
        None => false,
    }
}

/// Whether `s` is a PostgreSQL URL.
pub fn is_url(s: &str) -> bool {
    s.starts_with("postgresql://") || s.starts_with("postgres://")
}

/// A `key=value` string's settings, as libpq splits them: spaces around
/// `=` allowed, a value in single quotes may hold spaces, `\` escapes the
/// next character; a keyword libpq does not know is an error.
pub fn parse_keywords(s: &str) -> Result<Params, String> {
    let mut p = Params::new();
    let mut it = s.chars().peekable();
    loop {
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        if it.peek().is_none() {
            return Ok(p);
        }
        let mut key = String::new();
        while let Some(c) = it.next_if(|c| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        if it.next() != Some('=') {
            return Err(format!("missing \"=\" after \"{key}\""));
        }
        if !KEYWORDS.contains(&key.as_str()) {
            return Err(format!("invalid connection option \"{key}\""));
        }
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if it.next_if_eq(&'\'').is_some() {
            loop {
                match it.next() {
                    None => return Err("unterminated quoted string".into()),
                    Some('\'') => break,
                    Some('\\') => value.extend(it.next()),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = it.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(it.next());
                } else {
                    value.push(c);
                }
            }
        }
        set(&mut p, &key, &value);
    }
}

/// `p` as a `key=value` string libpq and the `postgres` crate both read
/// back to the same settings (every value quoted).
pub fn to_keywords(p: &Params) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A URL's settings. The `postgres` crate parses it (user, password,
/// hosts, ports, database, query parameters); `service` and `passfile`,
/// which it does not know, are taken out first.
fn parse_url(url: &str) -> Result<Params, String> {
    let mut extra = Params::new();
    let mut rest = url.to_string();
    let re = regex::Regex::new(r"([?&])(service|passfile)=([^&]*)&?").expect("valid regex");
    while let Some(c) = re.captures(&rest) {
        extra.push((c[2].to_string(), percent_decode(&c[3])?));
        let m = c.get(0).expect("whole match");
        let keep = if m.as_str().ends_with('&') { &c[1] } else { "" };
        rest = format!("{}{keep}{}", &rest[..m.start()], &rest[m.end()..]);
    }
    let rest = rest.trim_end_matches(['?', '&']);
    let c: postgres::Config = rest.parse().map_err(|e| format!("{e}"))?;
    let mut p = Params::new();
    let join = |v: Vec<String>| v.join(",");
    if !c.get_hosts().is_empty() {
        let hosts = c.get_hosts().iter().map(|h| match h {
            postgres::config::Host::Tcp(h) => h.clone(),
            postgres::config::Host::Unix(d) => d.display().to_string(),
        });
        set(&mut p, "host", &join(hosts.collect()));
    }
    if !c.get_hostaddrs().is_empty() {
        let a = c.get_hostaddrs().iter().map(|a| a.to_string()).collect();
        set(&mut p, "hostaddr", &join(a));
    }
    if !c.get_ports().is_empty() {
        let ports = c.get_ports().iter().map(|n| n.to_string()).collect();
        set(&mut p, "port", &join(ports));
    }
    for (key, value) in [
        ("dbname", c.get_dbname()),
        ("user", c.get_user()),
        ("options", c.get_options()),
        ("application_name", c.get_application_name()),
    ] {
        if let Some(v) = value {
            set(&mut p, key, v);
        }
    }
    if let Some(pw) = c.get_password() {
        let pw = std::str::from_utf8(pw).map_err(|_| "the password is not UTF-8".to_string())?;
        set(&mut p, "password", pw);
    }
    if let Some(t) = c.get_connect_timeout() {
        set(&mut p, "connect_timeout", &t.as_secs().to_string());
    }
    if let Some(t) = c.get_tcp_user_timeout() {
        set(&mut p, "tcp_user_timeout", &t.as_millis().to_string());
    }
    if !c.get_keepalives() {
        set(&mut p, "keepalives", "0");
    }
    if c.get_keepalives_idle() != std::time::Duration::from_secs(2 * 60 * 60) {
        let idle = c.get_keepalives_idle().as_secs().to_string();
        set(&mut p, "keepalives_idle", &idle);
    }
    use postgres::config::{ChannelBinding, SslMode, TargetSessionAttrs};
    match c.get_ssl_mode() {
        SslMode::Disable => set(&mut p, "sslmode", "disable"),
        SslMode::Require => set(&mut p, "sslmode", "require"),
        _ => {}
    }
    if c.get_target_session_attrs() == TargetSessionAttrs::ReadWrite {
        set(&mut p, "target_session_attrs", "read-write");
    }
    match c.get_channel_binding() {
        ChannelBinding::Disable => set(&mut p, "channel_binding", "disable"),
        ChannelBinding::Require => set(&mut p, "channel_binding", "require"),
        _ => {}
    }
    for (k, v) in extra {
        set(&mut p, &k, &v);
    }
    Ok(p)
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .ok_or("a % not followed by two hex digits")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| "a % not followed by hex digits")?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8".to_string())
}

/// A URL's or `key=value` string's settings, as given.
pub fn parse(s: &str) -> Result<Params, String> {
    if is_url(s) {
        parse_url(s)
    } else {
        parse_keywords(s)
    }
}
