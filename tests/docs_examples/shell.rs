//! The fenced `sh` blocks of README.md and docs/*.md, split into the
//! commands a reader would paste, and what the test does not run (and why).
//!
//! A block preceded by `<!-- not run: REASON -->` (the nearest non-blank
//! line before its fence) is not run, and the test says so with REASON;
//! single commands the test cannot run here are listed in [`NOT_RUN`],
//! each with its reason, printed too. Nothing is skipped silently.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One fenced `sh` block.
pub struct Block {
    /// "README.md:12": the file and the line of its first command.
    pub at: String,
    /// Why the doc says it is not run, if it does.
    pub not_run: Option<String>,
    /// (line, command) in order: a command is a line with its `\`
    /// continuations; comment-only and blank lines are left out.
    pub commands: Vec<(usize, String)>,
}

/// Commands the test leaves out, by a piece of their text, and why. Each
/// is printed as a SKIP line when met; one that no doc holds any more
/// fails the test, so the list stays true.
pub const NOT_RUN: &[(&str, &str)] = &[
    ("cargo run --release", "the release build this test is part of (about 2 minutes)"),
    ("cargo test --release", "the test suite this test is part of"),
    ("cargo install", "installs into ~/.cargo/bin"),
    ("-k 'up=/boot/vmlinuz", "boots kernels in QEMU as root for minutes (tests/vm_boot.rs, tests/kernel_runs.rs)"),
    ("run examples/kernels.toml", "boots kernels in QEMU as root for minutes (tests/vm_boot.rs)"),
    ("run --resume 3", "needs an interrupted experiment (tests/long/chaos.rs and tests/long/trust_runs.rs resume killed ones)"),
    ("calibrate --quick", "minutes of simulations (tests/calibrate_sim.rs checks its error rates)"),
    ("micro --quick", "a minute of OS primitives (tests/micro_*.rs)"),
    ("transport --quick", "tracer transports under overload, as root (tests/transport*.rs)"),
];

/// Commands that change the system and run only as root (CI is root).
pub const ROOT_ONLY: &[&str] = &["transparent_hugepage", "drop_caches"];

/// A fenced block of a doc, as [`fenced`] reads it.
struct Fenced<'a> {
    /// Its language: what follows the opening fence ("" for none).
    lang: &'a str,
    /// The line number of its opening fence.
    fence: usize,
    /// The nearest non-blank line before its fence, outside any block
    /// ("" when a block ends between them).
    before: &'a str,
    /// (line number, line) of each line inside it.
    lines: Vec<(usize, &'a str)>,
}

/// Every fenced block of `doc` (named `name` in messages): fences are ```
/// or ~~~ runs of any length, closed by a run of the same character at
/// least as long, so a block may show a shorter fence inside it.
fn fenced<'a>(name: &str, doc: &'a str) -> Vec<Fenced<'a>> {
    let mut out = Vec::new();
    // The open fence: its character, its length, the block so far.
    let mut open: Option<(char, usize, Fenced<'a>)> = None;
    let mut before = "";
    for (i, line) in doc.lines().enumerate() {
        let t = line.trim();
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        match &mut open {
            None => {
                if let Some(c) = ['`', '~'].into_iter().find(|&c| run(c) >= 3) {
                    let block = Fenced {
                        lang: t[run(c)..].trim(),
                        fence: i + 1,
                        before,
                        lines: Vec::new(),
                    };
                    open = Some((c, run(c), block));
                } else if !t.is_empty() {
                    before = line;
                }
            }
            Some((c, n, _)) if run(*c) >= *n && t.chars().all(|x| x == *c) => {
                out.push(open.take().unwrap().2);
                before = "";
            }
            Some((_, _, b)) => b.lines.push((i + 1, line)),
        }
    }
    assert!(open.is_none(), "{name}: a fenced block is not closed");
    out
}

/// Every fenced `sh` block of `doc` (named `name` in messages).
pub fn blocks(name: &str, doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    for f in fenced(name, doc).into_iter().filter(|f| f.lang == "sh") {
        let not_run = (f.before.trim())
            .strip_prefix("<!-- not run:")
            .and_then(|r| r.strip_suffix("-->"))
            .map(|r| r.trim().to_string());
        let mut b = Block {
            at: format!("{name}:{}", f.fence + 1),
            not_run,
            commands: Vec::new(),
        };
        let mut pending: Option<(usize, String)> = None;
        for (n, line) in f.lines {
            let joined = match pending.take() {
                Some((at, mut s)) => {
                    s.push('\n');
                    s.push_str(line);
                    (at, s)
                }
                None if line.trim().is_empty() || line.trim_start().starts_with('#') => continue,
                None => (n, line.to_string()),
            };
            if line.trim_end().ends_with('\\') {
                pending = Some(joined);
            } else {
                b.commands.push(joined);
            }
        }
        out.push(b);
    }
    out
}

/// Fenced blocks whose commands a reader pastes into a shell but which
/// the docs test neither runs nor lists as not run: untagged ones and
/// shell-session ones.
const HIDING: &[&str] = &["", "console", "bash", "shell", "shell-session", "zsh"];

/// Where `doc` (named `name`) shows a sysdelta command (`sysdelta` and one
/// of `subcommands`, after any prompt, `sudo`, variable assignments and
/// global options) in a block of a [`HIDING`] kind (see [`fenced`]): its
/// commands would go untested unnoticed. "README.md:12" each.
pub fn hidden_commands(name: &str, doc: &str, subcommands: &[String]) -> Vec<String> {
    (fenced(name, doc).into_iter())
        .filter(|f| HIDING.contains(&f.lang))
        .flat_map(|f| f.lines)
        .filter(|(_, line)| is_command(line.trim(), subcommands))
        .map(|(n, _)| format!("{name}:{n}"))
        .collect()
}

/// Whether `line` runs a sysdelta subcommand: `$ ` or `# ` prompts,
/// `sudo`, `VAR=value` words and options before the subcommand (with a
/// value where the next word does not name one) aside.
fn is_command(line: &str, subcommands: &[String]) -> bool {
    let line = line
        .strip_prefix("$ ")
        .or_else(|| line.strip_prefix("# "))
        .unwrap_or(line);
    let mut words = line
        .split_whitespace()
        .skip_while(|w| *w == "sudo" || (w.contains('=') && !w.starts_with('-')));
    if words.next() != Some("sysdelta") {
        return false;
    }
    // After an option without `=`, a word that names no subcommand is
    // its value.
    let mut value_may_follow = false;
    for w in words {
        if w.starts_with('-') {
            value_may_follow = !w.contains('=');
        } else if subcommands.iter().any(|s| s == w) {
            return true;
        } else if std::mem::take(&mut value_may_follow) {
            continue;
        } else {
            return false;
        }
    }
    false
}

/// README.md and docs/*.md, in that order (docs by name).
pub fn docs(root: &Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".into());
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root.join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// Each command's wall time, from the `@@ FILE:LINE NANOS` markers a
/// block's script writes to stderr before each command (NANOS: `date
/// +%s%N`): up to the next marker, the last one up to `end`.
pub fn durations(stderr: &str, end: SystemTime) -> Vec<(String, Duration)> {
    let end = end.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let marks: Vec<(&str, u128)> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("@@ ")?.rsplit_once(' '))
        .filter_map(|(at, ns)| Some((at, ns.parse().ok()?)))
        .collect();
    let ends = marks.iter().skip(1).map(|m| m.1).chain([end]);
    marks
        .iter()
        .zip(ends)
        .map(|((at, t0), t1)| {
            let ns = t1.saturating_sub(*t0).min(u64::MAX as u128) as u64;
            (at.to_string(), Duration::from_nanos(ns))
        })
        .collect()
}

#[test]
fn durations_run_from_marker_to_marker() {
    let end = UNIX_EPOCH + Duration::from_nanos(10_000);
    let err = "@@ a.md:1 1000\nout\n@@ a.md:3 4000\n";
    let d = durations(err, end);
    assert_eq!(
        d,
        [
            ("a.md:1".to_string(), Duration::from_nanos(3000)),
            ("a.md:3".to_string(), Duration::from_nanos(6000))
        ]
    );
}

#[test]
fn blocks_are_split_into_commands() {
    let doc = "x\n<!-- not run: a reason -->\n```sh\n# c\na 1   # t\nb \\\n  2\n\nc\n```\n```sh\nd\n```\n";
    let b = blocks("t.md", doc);
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].not_run.as_deref(), Some("a reason"));
    assert_eq!(b[0].at, "t.md:4");
    let cmds: Vec<&str> = b[0].commands.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(cmds, ["a 1   # t", "b \\\n  2", "c"]);
    assert_eq!(b[0].commands[1].0, 6);
    assert!(b[1].not_run.is_none() && b[1].commands.len() == 1);
}
