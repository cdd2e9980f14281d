//! libpq's two credential files, read as libpq 15 reads them: the password
//! file (`~/.pgpass`, `PGPASSFILE`) and the connection service file
//! (`~/.pg_service.conf`, `PGSERVICEFILE`, `PGSYSCONFDIR/pg_service.conf`).
//! The functions on text are pure; [`password_from_file`] also checks the
//! file's mode as libpq does (`fe-connect.c`, `passwordFromFile`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The password of the first line of a password file's `text` that
/// matches `host:port:database:user` (each field literal or `*`, with
/// `\:` and `\\` for a colon or backslash), de-escaped; None when no line
/// matches. Lines starting with `#` are comments.
pub fn lookup(text: &str, host: &str, port: &str, dbname: &str, user: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut rest = line;
        let mut matched = true;
        for want in [host, port, dbname, user] {
            match field_matches(rest, want) {
                Some(r) => rest = r,
                None => {
                    matched = false;
                    break;
                }
            }
        }
        if matched {
            return Some(unescape_password(rest));
        }
    }
    None
}

/// libpq's `pwdfMatchesString`: whether the field at the start of `buf`
/// is `*` or equals `token` (after `\` escapes), and the text after its
/// `:` if so.
fn field_matches<'a>(buf: &'a str, token: &str) -> Option<&'a str> {
    if let Some(rest) = buf.strip_prefix("*:") {
        return Some(rest);
    }
    let b = buf.as_bytes();
    let t = token.as_bytes();
    let (mut i, mut j) = (0, 0);
    while i < b.len() {
        let mut escaped = false;
        if b[i] == b'\\' {
            i += 1;
            escaped = true;
            if i >= b.len() {
                return None;
            }
        }
        if b[i] == b':' && j == t.len() && !escaped {
            return Some(&buf[i + 1..]);
        }
        if j == t.len() || b[i] != t[j] {
            return None;
        }
        i += 1;
        j += 1;
    }
    None
}

/// The password field: up to its first unescaped `:`, `\x` read as `x`.
fn unescape_password(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        match c {
            ':' => break,
            '\\' => match chars.next() {
                Some(n) => out.push(n),
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

/// The password `file` holds for `host:port:database:user`, as libpq
/// finds it: a file that is missing, or not a plain file, gives none; one
/// that its group or others can read or write is ignored, with libpq's
/// warning (`warn` is given it: callers say it once).
pub fn password_from_file(
    file: &Path,
    key: [&str; 4],
    warn: &mut dyn FnMut(String),
) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        warn(format!(
            "password file \"{}\" is not a plain file",
            file.display()
        ));
        return None;
    }
    if meta.mode() & 0o077 != 0 {
        warn(format!(
            "password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            file.display()
        ));
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let [host, port, dbname, user] = key;
    lookup(&text, host, port, dbname, user)
}

/// One service file's reading of service `name`: its `key=value` lines
/// (neither side trimmed, as libpq does not), or None when the file has
/// no `[name]` section. A line outside `key=value`, or a nested
/// `service=`, is an error that names the line.
pub fn service_section(text: &str, name: &str) -> Result<Option<Vec<(String, String)>>, String> {
    let mut found = false;
    let mut pairs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            if found {
                break;
            }
            // libpq compares the name and then looks for `]` after it.
            found = section
                .strip_prefix(name)
                .is_some_and(|l| l.starts_with(']'));
            continue;
        }
        if !found {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("syntax error in service file, line {}", n + 1));
        };
        if key == "service" {
            return Err(format!(
                "nested service specifications not supported in service file, line {}",
                n + 1
            ));
        }
        pairs.push((key.to_string(), value.to_string()));
    }
    Ok(found.then_some(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_line_wins_and_stars_match_anything() {
        let text = "# comment\n\
                    db.example:5432:team:alice:first\n\
                    *:*:team:alice:second\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            lookup(text, "db.example", "5432", "team", "alice").as_deref(),
            Some("first")
        );
        assert_eq!(
            lookup(text, "other", "5432", "team", "alice").as_deref(),
            Some("second")
        );
        assert_eq!(
            lookup(text, "other", "5433", "x", "bob").as_deref(),
            Some("fallback")
        );
        assert_eq!(lookup("h:5432:d:u:p\n", "h", "5432", "d", "v"), None);
        // A field is matched whole, not as a prefix.
        assert_eq!(lookup("h:5432:d:u:p\n", "h", "5432", "dd", "u"), None);
        assert_eq!(lookup("h:5432:dd:u:p\n", "h", "5432", "d", "u"), None);
    }

    #[test]
    fn escapes_in_fields_and_password() {
        // A socket directory is never written with a colon, but a
        // password often holds one: `\:` and `\\`, as libpq reads them.
        let text = "/run/a\\:b:5432:d:u:pa\\:ss\\\\word:ignored\n";
        assert_eq!(
            lookup(text, "/run/a:b", "5432", "d", "u").as_deref(),
            Some("pa:ss\\word")
        );
        // `*` is a wildcard only as a whole field; `\*` is a star.
        assert_eq!(
            lookup("\\*:5432:d:u:p\n", "*", "5432", "d", "u").as_deref(),
            Some("p")
        );
        assert_eq!(lookup("\\*:5432:d:u:p\n", "h", "5432", "d", "u"), None);
        assert_eq!(
            lookup("h:5432:d:u:\n", "h", "5432", "d", "u").as_deref(),
            Some("")
        );
        // Windows line ends, as libpq strips them.
        assert_eq!(
            lookup("h:5432:d:u:pw\r\n", "h", "5432", "d", "u").as_deref(),
            Some("pw")
        );
    }

    #[test]
    fn a_readable_password_file_is_ignored_with_a_warning() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pgpass");
        std::fs::write(&f, "*:*:*:*:pw\n").unwrap();
        let key = ["h", "5432", "d", "u"];
        let mut warned = Vec::new();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            password_from_file(&f, key, &mut |w| warned.push(w)).as_deref(),
            Some("pw")
        );
        assert!(warned.is_empty());
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(password_from_file(&f, key, &mut |w| warned.push(w)), None);
        assert_eq!(warned.len(), 1);
        assert!(
            warned[0].contains("has group or world access"),
            "{warned:?}"
        );
        assert_eq!(
            password_from_file(&dir.path().join("none"), key, &mut |w| warned.push(w)),
            None
        );
        assert_eq!(warned.len(), 1, "a missing file is no warning");
    }

    #[test]
    fn services_are_sections_of_key_value_lines() {
        let text = "# team\n[other]\nhost=x\n\n  [team]\nhost=/run/pg\nport=5433\n\
                    dbname=team # not a comment\n[later]\nuser=z\n";
        let s = service_section(text, "team").unwrap().unwrap();
        assert_eq!(
            s,
            [
                ("host".to_string(), "/run/pg".to_string()),
                ("port".into(), "5433".into()),
                ("dbname".into(), "team # not a comment".into())
            ]
        );
        assert_eq!(service_section(text, "tea").unwrap(), None);
        assert_eq!(service_section(text, "none").unwrap(), None);
        let e = service_section("[a]\nhost\n", "a").unwrap_err();
        assert!(e.contains("syntax error") && e.contains("line 2"), "{e}");
        let e = service_section("[a]\nservice=b\n", "a").unwrap_err();
        assert!(e.contains("nested"), "{e}");
        // A broken line in another section is not read.
        assert!(service_section("[b]\nbroken\n[a]\nhost=h\n", "a").is_ok());
    }
}
