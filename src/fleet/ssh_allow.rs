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
mod tests {
    use super::*;

    /// The words, `@D` standing for a directory of the test's.
    fn words(s: &[&str]) -> Vec<String> {
        in_dir(s, "/nonexistent")
    }

    fn in_dir(s: &[&str], dir: &str) -> Vec<String> {
        s.iter().map(|w| w.replace("@D", dir)).collect()
    }

    /// Every spelling of every option a fleet refuses: combined flags,
    /// attached and separate arguments, `=` and spaces, keywords in any
    /// case and quoted.
    const REFUSED: &[&[&str]] = &[
        &["-voProxyCommand=touch @D/m"],
        &["-4oLocalCommand=touch @D/m"],
        &["-o", "ProxyCommand=touch @D/m"],
        &["-o", "ProxyCommand touch @D/m"],
        &["-oProxyCommand touch @D/m"],
        &["-o", "proxycommand=touch @D/m"],
        &["-o", "PROXYCOMMAND=touch @D/m"],
        &["-o", "ProxyCommand\t=touch @D/m"],
        &["-o", "ProxyCommand = touch @D/m"],
        &["-o", " ProxyCommand touch @D/m"],
        &["-o", "\"ProxyCommand\" touch @D/m"],
        &["-o", "Proxy\"Command\" touch @D/m"],
        &["-q", "-o", "ProxyJump=evil"],
        &["-J", "evil"],
        &["-qJevil"],
        &[
            "-o",
            "LocalCommand=touch @D/m",
            "-o",
            "PermitLocalCommand=yes",
        ],
        &["-oPermitLocalCommand=yes"],
        &["-o", "KnownHostsCommand=/bin/touch @D/m"],
        &["-o", "Match exec \"touch @D/m\""],
        &["-o", "Include @D/evil.conf"],
        &["-o", "PKCS11Provider=@D/evil.so"],
        &["-I", "@D/evil.so"],
        &["-o", "SecurityKeyProvider=@D/evil.so"],
        &["-A"],
        &["-vA"],
        &["-o", "ForwardAgent=yes"],
        &["-oforwardagent yes"],
        &["-X"],
        &["-R", "2222:localhost:22"],
        &["-R2222:localhost:22"],
        &["-vR2222:localhost:22"],
        &["-L", "8080:localhost:80"],
        &["-D", "1080"],
        &["-W", "host:22"],
        &["-w", "0:0"],
        &["-o", "RemoteForward 2222 localhost:22"],
        &["-o", "LocalForward=8080 localhost:80"],
        &["-o", "DynamicForward=1080"],
        &["-E", "@D/passwd"],
        &["-vE@D/passwd"],
        &["-F", "@D/evil.conf"],
        &["-F@D/evil.conf"],
        &["-qF", "@D/evil.conf"],
        &["-S", "@D/sock"],
        &["-o", "ControlPath=@D/sock"],
        &["-o", "ControlMaster=yes"],
        &["-o", "ControlPersist=yes"],
        &["-o", "SendEnv=SYSDELTA_STORE"],
        &["-o", "SetEnv=X=1"],
        &["-o", "StrictHostKeyChecking=no"],
        &["-o", "StrictHostKeyChecking=accept-new"],
        &["-o", "UpdateHostKeys=yes"],
        &["-o", "BatchMode=no"],
        &["-o", "IdentityAgent=@D/agent.sock"],
        &["-o", "Hostname=evil"],
        &["-o", "RemoteCommand=touch @D/m"],
        &["-o", "User=-oProxyCommand=x"],
        &["-l", "root -oProxyCommand=x"],
        &["-p", "22 -oProxyCommand=x"],
        &["-e", "~"],
        &["-P"],
        &["-M"],
        &["-f"],
        &["-G"],
        &["-N"],
        &["-n"],
        &["-O", "exit"],
        &["-B", "lo"],
        &["-b", "127.0.0.1"],
        &["-y"],
        &["-Q", "cipher"],
        &["-o", "#ProxyCommand x"],
        &["-o", ""],
        &["evilhost"],
        &["--"],
        &["-p"],
        &["-v", "-o"],
        &["-Z"],
        &["-o", "Port 22\nProxyCommand x"],
    ];

    /// Spellings a fleet takes.
    const ALLOWED: &[&[&str]] = &[
        &["-p", "2222"],
        &["-p2222"],
        &["-4qp2222"],
        &["-l", "me", "-i", "/home/me/.ssh/lab"],
        &["-vvv"],
        &["-6", "-C", "-a", "-k", "-x", "-T"],
        &["-F", "/dev/null"],
        &["-c", "aes128-ctr", "-m", "hmac-sha2-256"],
        &["-o", "Port=2222"],
        &["-oPort 2222"],
        &["-o", "port = 2222"],
        &["-o", "User=me", "-o", "IdentityFile=/home/me/.ssh/lab"],
        &["-o", "IdentityFile \"/home/me/my keys/lab\""],
        &["-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"],
        &["-o", "ConnectTimeout=3", "-o", "ConnectionAttempts=2"],
        &["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"],
        &["-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes"],
        &[
            "-o",
            "UserKnownHostsFile=/home/me/.ssh/lab_hosts /home/me/.ssh/more",
        ],
        &["-o", "GlobalKnownHostsFile=/dev/null"],
        &["-o", "HostKeyAlias=[lab]:2222"],
        &["-o", "Compression=yes", "-o", "LogLevel=ERROR"],
        &["-o", "AddressFamily=inet", "-o", "CheckHostIP=no"],
        &[
            "-o",
            "PubkeyAcceptedKeyTypes=+ssh-rsa",
            "-o",
            "HostKeyAlgorithms=+ssh-rsa",
        ],
        &["-o", "PreferredAuthentications=publickey"],
        &[],
    ];

    #[test]
    fn every_spelling_of_a_refused_option_is_refused_in_one_line() {
        for s in REFUSED {
            let e = check(&words(s)).expect_err(&format!("{s:?} passed"));
            assert!(e.starts_with("ssh option "), "{s:?}: {e}");
            assert!(!e.contains('\n'), "{s:?}: {e}");
        }
    }

    #[test]
    fn what_a_fleet_needs_passes() {
        for s in ALLOWED {
            check(&words(s)).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        }
    }

    #[test]
    fn refusals_name_the_option_and_what_to_do() {
        let e = check(&words(&["-p", "22", "-voProxyCommand=touch /tmp/m"])).unwrap_err();
        assert!(
            e.contains("'-voProxyCommand=touch /tmp/m' (-o proxycommand)"),
            "{e}"
        );
        assert!(e.contains("~/.ssh/config"), "{e}");
        let e = check(&words(&["-J", "jump"])).unwrap_err();
        assert!(
            e.contains("'-J jump' (-J)") && e.contains("~/.ssh/config"),
            "{e}"
        );
        let e = check(&words(&["-o", "StrictHostKeyChecking=no"])).unwrap_err();
        assert!(e.contains("value 'no'") && e.contains("only 'yes'"), "{e}");
    }

    #[test]
    fn docs_fleet_md_lists_every_allowed_option() {
        let doc = include_str!("../../docs/fleet.md");
        for (_, name, _) in KEYWORDS {
            assert!(doc.contains(&format!("{name}`")), "{name}");
        }
        for c in SWITCHES {
            assert!(doc.contains(&format!("`-{c}`")), "-{c}");
        }
        for (c, _) in LETTERS {
            assert!(doc.contains(&format!("`-{c}")), "-{c}");
        }
    }

    #[test]
    fn a_host_naming_its_host_keys_is_pinned() {
        let p = |s: &[&str]| check(&words(s)).unwrap().pinned;
        assert!(!p(&["-p", "22", "-o", "IdentityFile=k"]));
        assert!(p(&["-o", "UserKnownHostsFile=/k"]));
        assert!(p(&["-oglobalknownhostsfile /k"]));
        assert!(p(&["-o", "HostKeyAlias=lab"]));
    }

    /// The `ssh -G` keys an option can set, as ssh prints them; `*` for
    /// anything (another config file).
    fn keys_of(o: &Opt) -> Vec<String> {
        let k: &[&str] = match o.flag {
            '4' | '6' => &["addressfamily"],
            'q' | 'v' => &["loglevel"],
            'C' => &["compression"],
            'a' | 'A' => &["forwardagent"],
            'x' | 'X' => &["forwardx11"],
            'Y' => &["forwardx11", "forwardx11trusted"],
            'k' | 'K' => &["gssapidelegatecredentials", "gssapiauthentication"],
            'T' | 't' => &["requesttty"],
            'p' => &["port"],
            'l' => &["user"],
            'i' => &["identityfile"],
            'c' => &["ciphers"],
            'm' => &["macs"],
            'R' => &["remoteforward"],
            'L' => &["localforward"],
            'D' => &["dynamicforward"],
            'W' => &[
                "clearallforwardings",
                "exitonforwardfailure",
                "requesttty",
                "sessiontype",
            ],
            'w' => &["tunnel", "tunneldevice"],
            'S' => &["controlpath"],
            'M' => &["controlmaster"],
            'f' => &["forkafterauthentication", "stdinnull"],
            'N' => &["sessiontype", "requesttty"],
            'n' => &["stdinnull"],
            's' => &["sessiontype"],
            'J' => &["proxyjump"],
            'I' => &["pkcs11provider"],
            'e' => &["escapechar"],
            'B' => &["bindinterface"],
            'b' => &["bindaddress"],
            'g' => &["gatewayports"],
            // Another config file, or a query printing something else.
            'F' | 'Q' => &["*"],
            'o' => {
                let (k, _) = ssh_args::config_line(o.arg.as_deref().unwrap_or("")).unwrap();
                // ssh's own name for an alias; what a setting implies.
                return match k.as_str() {
                    "pubkeyacceptedkeytypes" => vec!["pubkeyacceptedalgorithms".to_string()],
                    "batchmode" => vec![k, "serveraliveinterval".to_string()],
                    "userknownhostsfile" => vec![k, "updatehostkeys".to_string()],
                    _ => vec![k],
                };
            }
            _ => &[],
        };
        k.iter().map(|s| s.to_string()).collect()
    }

    /// `ssh -G -F /dev/null ARGS probe`: its config lines, or None when
    /// ssh refuses the arguments.
    fn ssh_g(args: &[String]) -> Option<std::collections::BTreeSet<String>> {
        let out = std::process::Command::new("ssh")
            .arg("-G")
            .args(["-F", "/dev/null"])
            .args(args)
            .arg("sysdelta-probe")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        out.status.success().then(|| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(String::from)
                .collect()
        })
    }

    /// Every spelling in both tables, given to `ssh -G` (which prints the
    /// configuration it would use, and connects nowhere): each setting
    /// that differs from ssh's own defaults is one the parser saw, every
    /// allowed spelling is one ssh takes, and every spelling the parser
    /// reads as ProxyCommand or LocalCommand is one ssh sets it from.
    #[test]
    fn the_parser_sees_every_setting_ssh_g_shows() {
        if std::process::Command::new("ssh")
            .arg("-V")
            .output()
            .is_err()
        {
            let why = "SKIP: ssh is not installed (scripts/install-team-tools.sh)";
            // Past libtest's capture, so that CI's log shows the skip.
            std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{why}\n"))
                .unwrap_or(());
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        // A config that -F would read instead of /dev/null.
        std::fs::write(
            dir.path().join("evil.conf"),
            format!("ProxyCommand touch {d}/m\n"),
        )
        .unwrap();
        let base = ssh_g(&[]).expect("ssh -G without options");
        let mut unseen = Vec::new();
        for (table, allowed) in [(REFUSED, false), (ALLOWED, true)] {
            for s in table {
                let args = in_dir(s, &d);
                let shown = ssh_g(&args);
                if allowed {
                    assert!(shown.is_some(), "ssh -G refuses {args:?}");
                    assert!(check(&args).is_ok(), "{args:?}");
                } else {
                    assert!(check(&args).is_err(), "{args:?}");
                }
                let Some(shown) = shown else { continue };
                let parsed = ssh_args::parse(&args).unwrap();
                let mut seen: Vec<String> = parsed.opts.iter().flat_map(keys_of).collect();
                if !parsed.operands.is_empty() {
                    seen.extend(["host".to_string(), "hostname".to_string()]);
                }
                for line in shown.difference(&base) {
                    let key = line.split(' ').next().unwrap_or("");
                    if !seen.iter().any(|k| k == key || k == "*") {
                        unseen.push(format!(
                            "{args:?}: ssh -G shows '{line}', the parser saw {seen:?}"
                        ));
                    }
                }
                for k in ["proxycommand", "localcommand"] {
                    if seen.iter().any(|s| s == k) {
                        assert!(
                            shown.iter().any(|l| l.starts_with(&format!("{k} "))),
                            "{args:?}: the parser read {k}, ssh -G does not show it"
                        );
                    }
                }
            }
        }
        assert!(unseen.is_empty(), "{}", unseen.join("\n"));
        assert!(!dir.path().join("m").exists(), "ssh -G ran a command");
    }
}
