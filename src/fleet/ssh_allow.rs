//! Which ssh options a fleet host may carry: an allowlist, applied to
//! `--hosts-file` entries and to the hosts a fleet's row keeps alike
//! (`hosts::check_host`), and again to every ssh command the fleet
//! builds (`ssh::command`).
//!
//! A host's options are run by root, on this machine, and whoever can
//! write the team database can write them; so they are read as ssh reads
//! them (`ssh_args`), and only what reaching a host needs passes: which
//! port, user and key, address family, verbosity, timeouts and
//! keep-alives, known-hosts files, algorithms, and switches that turn
//! something off. Everything else is refused in one line naming the
//! option: what runs a command or loads code here (`ProxyCommand`,
//! `LocalCommand`, `KnownHostsCommand`, `Match exec`, `PKCS11Provider`,
//! ...), reads another config (`-F` other than /dev/null, `Include`),
//! forwards anything (the fleet makes its own `-R`), writes or listens
//! somewhere as root (`-E`, `ControlPath`, `-S`), or hands something of
//! this machine to the host (`ForwardAgent`, `SendEnv`). A user who needs
//! `ProxyJump` or `ProxyCommand` has it in their own `~/.ssh/config`,
//! which ssh reads anyway.
//!
//! Values are checked too, where they matter: a host key is never
//! accepted unseen (`StrictHostKeyChecking` only `yes`), and a host that
//! names its own known-hosts file or host key alias gets
//! `StrictHostKeyChecking=yes` and `UpdateHostKeys=no` before its
//! options ([`Allowed::pinned`]), so that ssh never writes a key into a
//! file, or under a name, that the entry chose.

use super::ssh_args::{self, Opt};

/// What an allowed option's value must be.
#[derive(Clone, Copy)]
enum Value {
    /// Digits: a port, a count, seconds.
    Number,
    /// `yes` or `no`.
    YesNo,
    /// Only `yes` (a fleet never turns it off).
    Yes,
    /// One of these words (any case).
    OneOf(&'static [&'static str]),
    /// A user name: letters, digits, `.`, `_`, `-`, not a leading `-`.
    User,
    /// A host key alias: a host name, `[host]:port`.
    Alias,
    /// Files: read by ssh, never written (`paths` at most).
    Paths(usize),
    /// An algorithm list (`aes128-ctr,+chacha20-poly1305@openssh.com`).
    Algorithms,
    /// Authentication method names, comma-separated.
    Methods,
}

/// Switches a fleet may give: address family, verbosity, compression,
/// and some that turn something off (agent and X11 forwarding, GSSAPI
/// delegation, a tty).
const SWITCHES: &[char] = &['4', '6', 'q', 'v', 'C', 'a', 'k', 'x', 'T'];

/// Letters with an argument a fleet may give, and the argument.
const LETTERS: &[(char, Value)] = &[
    ('p', Value::Number),
    ('l', Value::User),
    ('i', Value::Paths(1)),
    ('c', Value::Algorithms),
    ('m', Value::Algorithms),
];

/// `-o` keywords a fleet may give (lowercase, as ssh matches them).
const KEYWORDS: &[(&str, &str, Value)] = &[
    ("port", "Port", Value::Number),
    ("user", "User", Value::User),
    ("identityfile", "IdentityFile", Value::Paths(1)),
    ("certificatefile", "CertificateFile", Value::Paths(1)),
    ("identitiesonly", "IdentitiesOnly", Value::YesNo),
    ("identityagent", "IdentityAgent", Value::OneOf(&["none"])),
    ("pubkeyauthentication", "PubkeyAuthentication", Value::YesNo),
    (
        "preferredauthentications",
        "PreferredAuthentications",
        Value::Methods,
    ),
    ("batchmode", "BatchMode", Value::Yes),
    ("connecttimeout", "ConnectTimeout", Value::Number),
    ("connectionattempts", "ConnectionAttempts", Value::Number),
    ("serveraliveinterval", "ServerAliveInterval", Value::Number),
    ("serveralivecountmax", "ServerAliveCountMax", Value::Number),
    ("tcpkeepalive", "TCPKeepAlive", Value::YesNo),
    ("stricthostkeychecking", "StrictHostKeyChecking", Value::Yes),
    ("userknownhostsfile", "UserKnownHostsFile", Value::Paths(16)),
    (
        "globalknownhostsfile",
        "GlobalKnownHostsFile",
        Value::Paths(16),
    ),
    ("hostkeyalias", "HostKeyAlias", Value::Alias),
    ("checkhostip", "CheckHostIP", Value::YesNo),
    ("compression", "Compression", Value::YesNo),
    (
        "addressfamily",
        "AddressFamily",
        Value::OneOf(&["any", "inet", "inet6"]),
    ),
    (
        "loglevel",
        "LogLevel",
        Value::OneOf(&[
            "quiet", "fatal", "error", "info", "verbose", "debug", "debug1", "debug2", "debug3",
        ]),
    ),
    ("ciphers", "Ciphers", Value::Algorithms),
    ("macs", "MACs", Value::Algorithms),
    ("kexalgorithms", "KexAlgorithms", Value::Algorithms),
    ("hostkeyalgorithms", "HostKeyAlgorithms", Value::Algorithms),
    (
        "pubkeyacceptedalgorithms",
        "PubkeyAcceptedAlgorithms",
        Value::Algorithms,
    ),
    (
        "pubkeyacceptedkeytypes",
        "PubkeyAcceptedKeyTypes",
        Value::Algorithms,
    ),
];

/// Keywords whose value names where host keys are looked up: a host
/// that gives one is pinned (see [`Allowed::pinned`]).
const NAMES_HOST_KEYS: &[&str] = &["userknownhostsfile", "globalknownhostsfile", "hostkeyalias"];

/// Why a known option is refused, when there is more to say than "not
/// one a fleet takes".
fn why_not(letter: Option<char>, keyword: &str) -> &'static str {
    const JUMP: &str = "runs a command on this machine; a host that needs a jump host or a proxy \
                        has it in your own ~/.ssh/config (Host ...), which ssh reads anyway";
    match (letter, keyword) {
        (Some('J'), _) | (_, "proxyjump" | "proxycommand" | "proxyusefdpass") => JUMP,
        (_, "localcommand" | "permitlocalcommand" | "knownhostscommand" | "match") => {
            "runs a command on this machine"
        }
        (Some('I'), _) | (_, "pkcs11provider" | "securitykeyprovider") => {
            "loads a library into ssh on this machine"
        }
        (Some('F'), _) | (_, "include") => {
            "reads another ssh config, which may run commands here (only -F /dev/null is taken)"
        }
        (Some('A' | 'X' | 'Y'), _)
        | (_, "forwardagent" | "forwardx11" | "forwardx11trusted" | "addkeystoagent") => {
            "gives the host something of this machine (an agent, a display)"
        }
        (_, "sendenv" | "setenv") => "sends this machine's environment to the host",
        (Some('R' | 'L' | 'D' | 'W' | 'w'), _)
        | (
            _,
            "remoteforward" | "localforward" | "dynamicforward" | "tunnel" | "tunneldevice"
            | "clearallforwardings" | "exitonforwardfailure" | "streamlocalbindunlink"
            | "permitremoteopen" | "gatewayports",
        ) => "forwards a port or a socket (the fleet makes its own -R)",
        (Some('E'), _) => "writes a log file anywhere as root",
        (Some('S' | 'M' | 'O'), _)
        | (_, "controlpath" | "controlmaster" | "controlpersist") => {
            "makes or uses a control socket anywhere as root (set it in your own ~/.ssh/config)"
        }
        (_, "stricthostkeychecking") => {
            "only 'yes': a fleet never takes a host key it has not seen (add the key to a known_hosts file)"
        }
        (_, "batchmode") => "only 'yes': a fleet never waits for a prompt",
        (_, "identityagent") => "only 'none' (set another agent in your own ~/.ssh/config)",
        _ => "not one of the ssh options a fleet takes (docs/fleet.md lists them)",
    }
}

/// Options that passed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowed {
    /// The options name a known-hosts file or a host key alias: ssh is
    /// to be given `StrictHostKeyChecking=yes` and `UpdateHostKeys=no`
    /// first, whatever the user's ssh config says, so that it writes no
    /// key into the file or under the name the entry chose.
    pub pinned: bool,
}

/// Options that force [`Allowed::pinned`], to go before the host's.
pub const PINNED: &[&str] = &["-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no"];

/// `words` (a host's `ssh_options`) checked: what they ask of ssh, or
/// one line naming the first option refused and why.
pub fn check(words: &[String]) -> Result<Allowed, String> {
    if let Some(w) = words.iter().find(|w| w.chars().any(char::is_control)) {
        return Err(format!("ssh option {w:?}: a control character"));
    }
    let parsed = ssh_args::parse(words).map_err(|e| format!("ssh option {e}"))?;
    if parsed.dashdash || !parsed.operands.is_empty() {
        let w = parsed.operands.first().map_or("--", String::as_str);
        return Err(format!(
            "ssh option '{w}': not an option (ssh would take it for the destination; \
             the fleet gives the destination itself)"
        ));
    }
    let mut allowed = Allowed::default();
    for o in &parsed.opts {
        check_one(o, &mut allowed)?;
    }
    Ok(allowed)
}

/// One option, as [`check`] says.
fn check_one(o: &Opt, allowed: &mut Allowed) -> Result<(), String> {
    let refuse = |what: &str, why: &str| Err(format!("ssh option '{}' ({what}): {why}", o.written));
    let arg = o.arg.as_deref().unwrap_or("");
    match o.flag {
        c if SWITCHES.contains(&c) => Ok(()),
        'F' if arg == "/dev/null" => Ok(()),
        'o' => {
            let (keyword, values) =
                ssh_args::config_line(arg).map_err(|e| format!("ssh option {e}"))?;
            let Some((_, name, value)) = KEYWORDS.iter().find(|(k, _, _)| *k == keyword) else {
                let shown = if keyword.is_empty() {
                    "-o, read by ssh as no option at all".to_string()
                } else {
                    format!("-o {keyword}")
                };
                return refuse(&shown, why_not(None, &keyword));
            };
            if NAMES_HOST_KEYS.contains(&keyword.as_str()) {
                allowed.pinned = true;
            }
            check_values(&values, *value)
                .map_err(|why| format!("ssh option '{}' ({name}): {why}", o.written))
                .map_err(|e| match value {
                    Value::Yes | Value::OneOf(_) => format!("{e}; {}", why_not(None, &keyword)),
                    _ => e,
                })
        }
        c => match LETTERS.iter().find(|(l, _)| *l == c) {
            Some((_, value)) => check_values(&[arg.to_string()], *value)
                .map_err(|why| format!("ssh option '{}' (-{c}): {why}", o.written)),
            None => refuse(&format!("-{c}"), why_not(Some(c), "")),
        },
    }
}

/// What is wrong with `values` for `value`, if anything.
fn check_values(values: &[String], value: Value) -> Result<(), String> {
    let most = match value {
        Value::Paths(n) => n,
        _ => 1,
    };
    if values.is_empty() || values.len() > most {
        return Err(format!("{} values where ssh takes {most}", values.len()));
    }
    for v in values {
        let word = |ok: &dyn Fn(char) -> bool| !v.is_empty() && v.chars().all(ok);
        let fine = match value {
            Value::Number => word(&|c| c.is_ascii_digit()),
            Value::YesNo => ["yes", "no"].contains(&v.to_ascii_lowercase().as_str()),
            Value::Yes => v.eq_ignore_ascii_case("yes"),
            Value::OneOf(set) => set.contains(&v.to_ascii_lowercase().as_str()),
            Value::User => {
                !v.starts_with('-') && word(&|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            }
            Value::Alias => word(&|c| c.is_ascii_alphanumeric() || "._-[]:".contains(c)),
            Value::Paths(_) => !v.is_empty(),
            Value::Algorithms => word(&|c| c.is_ascii_alphanumeric() || "@.,+-^*_".contains(c)),
            Value::Methods => word(&|c| c.is_ascii_alphanumeric() || "@.,-".contains(c)),
        };
        if !fine {
            return Err(format!("value '{v}' is not one a fleet takes here"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
