//! ssh's arguments read as OpenSSH's `ssh(1)` reads them, so that what a
//! fleet checks is what ssh will do, however it is spelled.
//!
//! ssh takes its options with the BSD `getopt` OpenSSH carries (glibc has
//! no `optreset`, so OpenSSH builds its own): short options clustered in
//! one word (`-4vq`), an option's argument attached (`-p2222`,
//! `-voProxyCommand=x`) or as the next word whatever that word is, and no
//! reordering: the first word that is not an option, or `--`, ends them.
//! An `-o` argument is one line of ssh_config, read by `readconf.c`: a
//! keyword in any case (ended by whitespace, one `=` or a quote, a quoted
//! keyword unquoted), then its values split as `argv_split` splits them
//! (quotes, backslash escapes). The letters and their arities are those
//! of OpenSSH 9 (`ssh.c`); a letter that takes an argument in some
//! versions and not in others (`-P`) is for the allowlist to refuse.
//!
//! This module only reads; `ssh_allow` decides.

/// ssh's short options as OpenSSH 9.2 declares them to getopt: a letter
/// followed by `:` takes an argument.
pub const GETOPT: &str = "1246ab:c:e:fgi:kl:m:no:p:qstvxAB:CD:E:F:GI:J:KL:MNO:PQ:R:S:TVw:W:XYy";

/// One option as ssh sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opt {
    /// Its letter.
    pub flag: char,
    /// Its argument, for a letter that takes one.
    pub arg: Option<String>,
    /// The word (or the two words) it was written in, for messages.
    pub written: String,
}

/// What ssh reads from a list of words: its options, then the words
/// after them (the first that is not an option on, or those after `--`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub opts: Vec<Opt>,
    /// Whether a `--` ended the options.
    pub dashdash: bool,
    /// The words after the options: ssh takes the first as its
    /// destination.
    pub operands: Vec<String>,
}

/// Whether `c` is one of ssh's letters, and if so whether it takes an
/// argument.
pub fn arity(c: char) -> Option<bool> {
    let at = GETOPT.find(c).filter(|_| c != ':')?;
    Some(GETOPT[at + c.len_utf8()..].starts_with(':'))
}

/// `words` read as ssh's getopt reads them; why ssh would refuse them
/// (an unknown letter, an argument missing at the end).
pub fn parse(words: &[String]) -> Result<Parsed, String> {
    let mut opts = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            return Ok(Parsed {
                opts,
                dashdash: true,
                operands: words[i + 1..].to_vec(),
            });
        }
        // BSD getopt: "-" alone, and any word not starting with '-', ends
        // the options.
        if !w.starts_with('-') || w == "-" {
            break;
        }
        let cluster: Vec<char> = w[1..].chars().collect();
        let mut k = 0;
        while k < cluster.len() {
            let c = cluster[k];
            match arity(c) {
                None => return Err(format!("'{w}': ssh has no option -{c}")),
                Some(false) => opts.push(Opt {
                    flag: c,
                    arg: None,
                    written: w.clone(),
                }),
                Some(true) => {
                    let rest: String = cluster[k + 1..].iter().collect();
                    let (arg, written) = if !rest.is_empty() {
                        (rest, w.clone())
                    } else {
                        i += 1;
                        let next = words
                            .get(i)
                            .ok_or_else(|| format!("'{w}': -{c} needs an argument"))?;
                        (next.clone(), format!("{w} {next}"))
                    };
                    opts.push(Opt {
                        flag: c,
                        arg: Some(arg),
                        written,
                    });
                    break;
                }
            }
            k += 1;
        }
        i += 1;
    }
    Ok(Parsed {
        opts,
        dashdash: false,
        operands: words[i..].to_vec(),
    })
}

/// ssh_config's whitespace (misc.h).
const WHITESPACE: &[u8] = b" \t\r\n";

/// An `-o` argument as `readconf.c` reads it: its keyword, lowercase
/// (empty when ssh ignores the line: blank, a comment, a keyword's quote
/// left open), and its values as `argv_split` gives them; why ssh would
/// refuse it (a value's quote left open).
pub fn config_line(line: &str) -> Result<(String, Vec<String>), String> {
    let mut b = line.as_bytes().to_vec();
    // Trailing whitespace (and form feeds) go first.
    while b.len() > 1 && b" \t\r\n\x0c".contains(&b[b.len() - 1]) {
        b.pop();
    }
    let mut s = 0;
    let mut keyword = strdelim(&mut b, &mut s);
    // One leading whitespace run gives an empty first token.
    if keyword.as_deref() == Some(&[][..]) {
        keyword = strdelim(&mut b, &mut s);
    }
    // ssh ignores a line whose keyword is missing (a quote left open),
    // empty or a comment.
    let Some(keyword) = keyword.filter(|k| !k.is_empty() && k[0] != b'\n' && k[0] != b'#') else {
        return Ok((String::new(), Vec::new()));
    };
    let keyword = String::from_utf8_lossy(&keyword).to_ascii_lowercase();
    let rest = String::from_utf8_lossy(&b[s.min(b.len())..]).into_owned();
    let values = argv_split(&rest).ok_or_else(|| format!("'{line}': a quote is not closed"))?;
    Ok((keyword, values))
}

/// `strdelim` of OpenSSH's misc.c with `=` splitting: the token at `*s`
/// in `b` (a NUL-less buffer: the end of `b` is its end), `*s` moved past
/// it and the whitespace and one `=` after it. None: nothing left (after
/// a token that ran to the end), or an open quote.
fn strdelim(b: &mut Vec<u8>, s: &mut usize) -> Option<Vec<u8>> {
    if *s > b.len() {
        return None;
    }
    let old = *s;
    let Some(at) = b[old..]
        .iter()
        .position(|c| WHITESPACE.contains(c) || *c == b'"' || *c == b'=')
        .map(|p| old + p)
    else {
        // No delimiter: the rest is the token, and nothing is left.
        *s = b.len() + 1;
        return Some(b[old..].to_vec());
    };
    if b[at] == b'"' {
        b.remove(at);
        let close = b[at..].iter().position(|c| *c == b'"')? + at;
        let token = b[old..close].to_vec();
        *s = close + 1 + skip_ws(b, close + 1);
        return Some(token);
    }
    let wspace = b[at] == b'=';
    let token = b[old..at].to_vec();
    let mut next = at + 1 + skip_ws(b, at + 1);
    if !wspace && b.get(next) == Some(&b'=') {
        next += 1 + skip_ws(b, next + 1);
    }
    *s = next;
    Some(token)
}

/// How many whitespace bytes start at `from`.
fn skip_ws(b: &[u8], from: usize) -> usize {
    b.get(from..).map_or(0, |r| {
        r.iter().take_while(|c| WHITESPACE.contains(c)).count()
    })
}

/// `argv_split` of OpenSSH's misc.c (comments ending the line): words
/// split at spaces and tabs, quotes and the escapes `\'`, `\"`, `\\`,
/// `\ ` taken out. None: a quote left open.
fn argv_split(s: &str) -> Option<Vec<String>> {
    let c: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i] == ' ' || c[i] == '\t' {
            i += 1;
            continue;
        }
        if c[i] == '#' {
            break;
        }
        let mut quote = None;
        let mut arg = String::new();
        while i < c.len() {
            let ch = c[i];
            if ch == '\\' {
                let next = c.get(i + 1).copied();
                if matches!(next, Some('\'' | '"' | '\\')) || (quote.is_none() && next == Some(' '))
                {
                    i += 1;
                    arg.push(c[i]);
                } else {
                    arg.push(ch);
                }
            } else if quote.is_none() && (ch == ' ' || ch == '\t') {
                break;
            } else if quote.is_none() && (ch == '"' || ch == '\'') {
                quote = Some(ch);
            } else if quote == Some(ch) {
                quote = None;
            } else {
                arg.push(ch);
            }
            i += 1;
        }
        if quote.is_some() {
            return None;
        }
        out.push(arg);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    fn flags(s: &[&str]) -> Vec<(char, Option<String>)> {
        parse(&words(s))
            .unwrap()
            .opts
            .into_iter()
            .map(|o| (o.flag, o.arg))
            .collect()
    }

    #[test]
    fn clusters_and_arguments_read_as_getopt_reads_them() {
        let o = |c, a: &str| (c, Some(a.to_string()));
        assert_eq!(
            flags(&["-voProxyCommand=touch x"]),
            [('v', None), o('o', "ProxyCommand=touch x")]
        );
        assert_eq!(
            flags(&["-4o", "LocalCommand x"]),
            [('4', None), o('o', "LocalCommand x")]
        );
        assert_eq!(flags(&["-p2222", "-i", "k"]), [o('p', "2222"), o('i', "k")]);
        // The next word is the argument, whatever it looks like.
        assert_eq!(flags(&["-o", "-p"]), [o('o', "-p")]);
        assert_eq!(flags(&["-qA"]), [('q', None), ('A', None)]);
        // -P takes nothing in OpenSSH 9.2: "foo" is the destination.
        let p = parse(&words(&["-P", "foo"])).unwrap();
        assert_eq!((p.opts.len(), p.operands.clone()), (1, words(&["foo"])));
    }

    #[test]
    fn options_end_where_ssh_ends_them() {
        let p = parse(&words(&["-v", "host", "-oProxyCommand=x"])).unwrap();
        assert_eq!(p.operands, words(&["host", "-oProxyCommand=x"]));
        let p = parse(&words(&["-v", "--", "-A"])).unwrap();
        assert!(p.dashdash);
        assert_eq!(p.operands, words(&["-A"]));
        let p = parse(&words(&["-", "-A"])).unwrap();
        assert_eq!(p.operands.len(), 2);
        assert!(parse(&words(&["-Z"])).unwrap_err().contains("no option -Z"));
        assert!(parse(&words(&["-vo"]))
            .unwrap_err()
            .contains("needs an argument"));
    }

    #[test]
    fn config_lines_give_ssh_keyword() {
        let k = |l: &str| config_line(l).unwrap().0;
        for l in [
            "ProxyCommand=x",
            "ProxyCommand x",
            "proxycommand x",
            "PROXYCOMMAND=x",
            "ProxyCommand = x",
            "ProxyCommand\t=x",
            " ProxyCommand x",
            "\"ProxyCommand\" x",
            "Proxy\"Command\" x",
            "ProxyCommand\"\"x",
        ] {
            assert_eq!(k(l), "proxycommand", "{l:?}");
        }
        assert_eq!(k("#ProxyCommand x"), "");
        assert_eq!(k(""), "");
        assert_eq!(
            config_line("IdentityFile=\"/a b/k\"").unwrap(),
            ("identityfile".into(), words(&["/a b/k"]))
        );
        assert_eq!(
            config_line("Port==22").unwrap(),
            ("port".into(), words(&["=22"]))
        );
        assert_eq!(
            config_line("UserKnownHostsFile /a /b # c").unwrap().1,
            words(&["/a", "/b"])
        );
        assert_eq!(k("\"ProxyCommand x"), "");
        assert!(config_line("IdentityFile 'k").is_err());
    }
}
