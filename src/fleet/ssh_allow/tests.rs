//! The allowlist's evidence: every spelling of a refused option is
//! refused in one line, what a fleet needs passes, docs/fleet.md lists
//! what passes, and the parser sees every setting `ssh -G` shows.
//! Apart from ssh_allow.rs because the spellings are a corpus longer
//! than the rules they check.

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
    let doc = include_str!("../../../docs/fleet.md");
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
        std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{why}\n")).unwrap_or(());
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
