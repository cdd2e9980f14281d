//! What a measured command is started as: a shell given the command line
//! (`/bin/sh -c COMMAND` by default), or, with no shell, the command's own
//! program with the command line split into its arguments as a shell
//! would split it (hyperfine's `-N`). Without a shell the measurement is
//! the command alone: a shell's start-up is about a millisecond, as much
//! as a short command's whole run.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The shell commands run under unless told otherwise.
pub const DEFAULT_SHELL: &str = "/bin/sh";

/// How the command of a [`super::ShellSpec`] is started.
#[derive(Clone, Copy, Debug)]
pub enum Launch<'a> {
    /// `SHELL -c COMMAND`; a SHELL without a slash is looked up on PATH.
    Shell(&'a str),
    /// Exec these words directly (argv[0] looked up on PATH); the spec's
    /// command is only shown in messages.
    Direct(&'a [String]),
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Launch::Shell(DEFAULT_SHELL)
    }
}

/// What starts a command workload's command line (`shell` in the plan),
/// owned: [`Launch`] borrows from it for each run.
#[derive(Clone, Debug, PartialEq)]
pub enum CommandLaunch {
    /// `SHELL -c COMMAND` (default `/bin/sh`).
    Shell(String),
    /// No shell (`shell = "none"`, `ab -N`): these words, exec'd directly.
    Direct(Vec<String>),
}

impl CommandLaunch {
    pub fn as_launch(&self) -> Launch<'_> {
        match self {
            CommandLaunch::Shell(s) => Launch::Shell(s),
            CommandLaunch::Direct(words) => Launch::Direct(words),
        }
    }

    /// How another command line starts the same way: under the same
    /// shell, or without one as its own words (a line that needs a shell
    /// is refused). A config's `command` runs as its workload's would.
    pub fn for_command(&self, command: &str) -> Result<CommandLaunch, String> {
        match self {
            CommandLaunch::Shell(s) => Ok(CommandLaunch::Shell(s.clone())),
            CommandLaunch::Direct(_) => split_for_exec(command).map(CommandLaunch::Direct),
        }
    }

    /// The shell, if one is used.
    pub fn shell(&self) -> Option<&str> {
        match self {
            CommandLaunch::Shell(s) => Some(s),
            CommandLaunch::Direct(_) => None,
        }
    }
}

/// Characters that mean something to a shell when they stand outside
/// quotes: a command line that has one needs a shell to mean what it says.
const SHELL_SYNTAX: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '*', '?', '[', '\n',
];

/// Characters a shell reads as syntax at the start of a word only: `~`
/// (the home directory) and `#` (a comment).
const WORD_START_SYNTAX: &[char] = &['~', '#'];

/// Split `command` into the words a shell would give its program, for a
/// run without a shell. A command line that needs a shell (a pipe, a
/// redirection, a variable, a glob, an assignment before the program) is
/// refused with what needs it: run without a shell, it would not do what
/// it says, silently.
pub fn split_for_exec(command: &str) -> Result<Vec<String>, String> {
    if let Some(c) = unquoted_syntax(command) {
        let shown = if c == '\n' {
            "a line break".to_string()
        } else {
            format!("'{c}'")
        };
        return Err(format!(
            "the command has {shown} outside quotes, which needs a shell; quote it, or run it with a shell (drop -N / shell = \"none\")"
        ));
    }
    let words =
        shlex::split(command).ok_or_else(|| "the command has unbalanced quotes".to_string())?;
    let Some(first) = words.first() else {
        return Err("the command is empty".into());
    };
    if first.contains('=') && !first.contains('/') {
        return Err(format!(
            "the command starts with the assignment '{first}', which needs a shell; set variables in the config's env, or run it with a shell"
        ));
    }
    Ok(words)
}

/// The first shell-syntax character outside single and double quotes and
/// not escaped by a backslash (`$` and `` ` `` also inside double quotes,
/// where a shell still expands them).
fn unquoted_syntax(command: &str) -> Option<char> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut word_start = true;
    for c in command.chars() {
        let at_start = std::mem::replace(&mut word_start, false);
        if escaped {
            escaped = false;
        } else if single {
            single = c != '\'';
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' {
            double = !double;
        } else if double {
            if c == '$' || c == '`' {
                return Some(c);
            }
        } else if c == '\'' {
            single = true;
        } else if SHELL_SYNTAX.contains(&c) || (at_start && WORD_START_SYNTAX.contains(&c)) {
            return Some(c);
        } else if c.is_whitespace() {
            word_start = true;
        }
    }
    None
}

/// Programs already found on a PATH: (program, PATH) to the absolute path
/// found. A workload's program is looked up once per stretch of runs in
/// one config, not before every run: the lookup tried each PATH entry in
/// turn (eleven `statx` calls per run of `true` here, about a tenth of
/// what sysdelta spent on a run). A program removed since is then a failed
/// exec, as for a shell that had hashed it. Emptied at every config switch
/// ([`forget_found`]): a config's setup may put a program earlier on PATH
/// that another config must not run.
static FOUND: Mutex<Option<HashMap<(String, OsString), PathBuf>>> = Mutex::new(None);

/// The path to exec for `program`: as given when it has a slash, else the
/// first executable file of that name on the run's PATH (`env`'s last
/// PATH, else sysdelta's), as a shell would find it; remembered for the
/// next run with the same PATH (see [`FOUND`]).
pub fn resolve(program: &str, env: &[(String, String)]) -> io::Result<PathBuf> {
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsStr::new(v).to_os_string())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    let key = (program.to_string(), path);
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = found.as_ref().and_then(|m| m.get(&key)) {
        return Ok(p.clone());
    }
    let p = search(program, &key.1)?;
    // A PATH with an empty or relative entry (the working directory, or
    // one below it) is searched again each time: the directory may differ
    // between runs, and a program it did not hold before would come first.
    if std::env::split_paths(&key.1).all(|d| d.is_absolute()) {
        found
            .get_or_insert_with(HashMap::new)
            .insert(key, p.clone());
    }
    Ok(p)
}

/// Forget every program found: the next run of each looks it up again.
/// Called when the runner enters another config.
pub fn forget_found() {
    *FOUND.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// The first executable file named `program` in the directories of `path`.
fn search(program: &str, path: &OsStr) -> io::Result<PathBuf> {
    for dir in std::env::split_paths(path) {
        // An empty PATH entry is the working directory, as for a shell;
        // the launcher changes to it before its exec.
        let candidate = if dir.as_os_str().as_bytes().is_empty() {
            Path::new(".").join(program)
        } else {
            dir.join(program)
        };
        if let Ok(md) = candidate.metadata() {
            if md.is_file() && md.permissions().mode() & 0o111 != 0 {
                return Ok(candidate);
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("'{program}' is not on PATH"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_their_quoting_and_shell_syntax_is_refused() {
        assert_eq!(
            split_for_exec(r#"printf '%s|%s\n' "a b" '$HOME'"#).unwrap(),
            vec!["printf", "%s|%s\\n", "a b", "$HOME"]
        );
        for (cmd, what) in [
            ("echo a | wc -l", "'|'"),
            ("make > log", "'>'"),
            ("echo $HOME", "'$'"),
            ("echo \"$HOME\"", "'$'"),
            ("true; false", "';'"),
            ("ls *.c", "'*'"),
            ("true\nfalse", "a line break"),
            ("ls [ab].c", "'['"),
            ("ls ~/x", "'~'"),
            ("make all # note", "'#'"),
        ] {
            let e = split_for_exec(cmd).unwrap_err();
            assert!(
                e.contains(&format!("has {what} outside quotes")),
                "{cmd}: {e}"
            );
        }
        assert!(split_for_exec("X=1 make")
            .unwrap_err()
            .contains("assignment 'X=1'"));
        assert!(split_for_exec("echo 'a").is_err());
        assert!(split_for_exec("  ").is_err());
        // Inside a word, or quoted, they are plain characters.
        assert_eq!(
            split_for_exec("echo a~b c#d '~' \"#\"").unwrap(),
            vec!["echo", "a~b", "c#d", "~", "#"]
        );
    }

    #[test]
    fn programs_are_found_on_the_runs_path() {
        assert_eq!(resolve("/bin/true", &[]).unwrap(), Path::new("/bin/true"));
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("sysdelta-test-prog");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = [("PATH".to_string(), dir.path().display().to_string())];
        assert_eq!(resolve("sysdelta-test-prog", &env).unwrap(), prog);
        let e = resolve("sysdelta-no-such-program", &env).unwrap_err();
        assert_eq!(e.to_string(), "'sysdelta-no-such-program' is not on PATH");
        // Found once per PATH: another PATH finds its own program of the
        // same name, and the first PATH still gives the first one.
        let other = tempfile::tempdir().unwrap();
        let prog2 = other.path().join("sysdelta-test-prog");
        std::fs::write(&prog2, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&prog2, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env2 = [("PATH".to_string(), other.path().display().to_string())];
        assert_eq!(resolve("sysdelta-test-prog", &env2).unwrap(), prog2);
        assert_eq!(resolve("sysdelta-test-prog", &env).unwrap(), prog);
    }

    /// A config's setup that puts a program earlier on PATH is seen once
    /// the runner enters a config; a relative PATH entry is never cached.
    #[test]
    fn a_program_put_earlier_on_path_is_found_after_a_config_switch() {
        let (early, late) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let make = |d: &Path| {
            let p = d.join("sysdelta-test-switch");
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let late_prog = make(late.path());
        let path = format!("{}:{}", early.path().display(), late.path().display());
        let env = [("PATH".to_string(), path)];
        assert_eq!(resolve("sysdelta-test-switch", &env).unwrap(), late_prog);
        let early_prog = make(early.path());
        forget_found();
        assert_eq!(resolve("sysdelta-test-switch", &env).unwrap(), early_prog);
        // `rel:ABS`: found in ABS now, but not remembered.
        let env = [("PATH".to_string(), format!("rel:{}", late.path().display()))];
        assert_eq!(resolve("sysdelta-test-switch", &env).unwrap(), late_prog);
        let key = (
            "sysdelta-test-switch".to_string(),
            OsString::from(&env[0].1),
        );
        let found = FOUND.lock().unwrap();
        assert!(found.as_ref().is_none_or(|m| !m.contains_key(&key)));
    }
}
