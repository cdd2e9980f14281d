//! What `ab` was given ([`Ab`]) and the plan text it writes from it:
//! configs (with a setup, a teardown, a command or a kernel), workloads,
//! the plan-wide keys (`-s`/`-c` once per command, the baseline, the
//! shell and hooks), names after commands as hyperfine names them. Both
//! forms of `ab` write through it (`shorthand`: configs compared;
//! `ab_commands`: commands compared).

use std::collections::HashSet;

use super::scan::{Grid, Point, Scan};
use crate::error::Error;

/// What `ab` was given besides the flags every run takes.
#[derive(Default)]
pub struct Ab<'a> {
    /// `--config NAME=SETUP`.
    pub configs: &'a [String],
    /// `-c/--cleanup`: NAME=CMD (that config's teardown) or CMD (after all
    /// runs of each command, as hyperfine's).
    pub cleanups: &'a [String],
    /// `-k NAME=IMAGE ...`.
    pub kernels: &'a [String],
    /// The command's words after `--`.
    pub command: &'a [String],
    /// Commands before `--`, each a shell command line as written
    /// (`ab 'CMD1' 'CMD2'`).
    pub commands: &'a [String],
    /// `-n`: a name per command (with no --config: per config).
    pub names: &'a [String],
    /// `-P`/`-L`: their cross product.
    pub scans: Vec<Scan>,
    /// `-s/--setup`: run once per command, before the first run.
    pub setup: Option<&'a str>,
    /// `--reference`: the command (or config) the others are compared with.
    pub reference: Option<&'a str>,
    /// `-S`/`-N`, `--prepare`, `--conclude`.
    pub run: RunOptions,
}

/// A config of the plan `ab` writes.
pub(super) struct ConfigText {
    pub(super) name: String,
    pub(super) setup: String,
    pub(super) cleanup: Option<String>,
    pub(super) command: Option<String>,
    pub(super) kernel: Option<toml::Table>,
}

/// The plan-wide keys `ab` writes besides the run options.
#[derive(Default)]
pub(super) struct PlanKeys {
    /// Once before the first run: every command's `-s`.
    pub(super) setup: Option<String>,
    /// Once after the last run: every command's `-c`.
    pub(super) teardown: Option<String>,
    pub(super) baseline: Option<String>,
}

/// The plan TOML for `ab`: its configs, and its workloads as (name,
/// command).
pub(super) fn plan_text(
    configs: &[ConfigText],
    workloads: &[(String, String)],
    keys: &PlanKeys,
) -> String {
    let mut root = toml::Table::new();
    root.insert("name".into(), toml::Value::String("ab".into()));
    let plan_wide = [
        ("setup", &keys.setup),
        ("teardown", &keys.teardown),
        ("baseline", &keys.baseline),
    ];
    for (k, v) in plan_wide {
        if let Some(v) = v {
            root.insert(k.into(), toml::Value::String(v.clone()));
        }
    }
    let cfgs: Vec<toml::Value> = configs
        .iter()
        .map(|c| {
            let mut t = toml::Table::new();
            t.insert("name".into(), toml::Value::String(c.name.clone()));
            if !c.setup.trim().is_empty() {
                t.insert("setup".into(), toml::Value::String(c.setup.clone()));
            }
            if let Some(td) = &c.cleanup {
                t.insert("teardown".into(), toml::Value::String(td.clone()));
            }
            if let Some(cmd) = &c.command {
                t.insert("command".into(), toml::Value::String(cmd.clone()));
            }
            if let Some(k) = &c.kernel {
                t.insert("kernel".into(), toml::Value::Table(k.clone()));
            }
            toml::Value::Table(t)
        })
        .collect();
    root.insert("config".into(), toml::Value::Array(cfgs));
    let ws = workloads
        .iter()
        .map(|(n, c)| {
            let mut w = toml::Table::new();
            w.insert("name".into(), toml::Value::String(n.clone()));
            w.insert("command".into(), toml::Value::String(c.clone()));
            toml::Value::Table(w)
        })
        .collect();
    root.insert("workload".into(), toml::Value::Array(ws));
    toml::to_string(&root).expect("a table of strings always serializes")
}

/// How `ab` runs its command: `-S SHELL` / `-N`, `--prepare`, `--conclude`.
/// They become the plan's plan-wide keys (`shell`, `prepare`,
/// `conclude`), which every workload of the plan inherits.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// A shell, or "none".
    pub shell: Option<String>,
    pub prepare: Option<String>,
    pub conclude: Option<String>,
}

impl RunOptions {
    /// `text` (a plan) with these options as its plan-wide keys.
    pub(super) fn apply(&self, text: String) -> String {
        let keys = [
            ("shell", &self.shell),
            ("prepare", &self.prepare),
            ("conclude", &self.conclude),
        ];
        if keys.iter().all(|(_, v)| v.is_none()) {
            return text;
        }
        let mut root: toml::Table = text.parse().expect("plan_text writes valid TOML");
        for (k, v) in keys {
            if let Some(v) = v {
                root.insert(k.into(), toml::Value::String(v.clone()));
            }
        }
        toml::to_string(&root).expect("a table of strings always serializes")
    }
}

/// The longest command that names its workload as written (spaces as
/// `_`); a longer one is named after its program.
const NAME_FROM_COMMAND_MAX: usize = 32;

/// A workload's name after its command, as hyperfine names a command by
/// itself: `sleep 0.01` -> `sleep_0.01` (spaces as `_`); a longer command,
/// or one with shell syntax in it, after its program (`make -j8 all
/// CFLAGS=...` -> `make`); a long shell construct (`if ...`) is `cmd`.
pub fn name_after(command: &str) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-/+,:=%@".contains(c))
    };
    let words: Vec<&str> = command.split_whitespace().collect();
    let whole = words.join("_");
    if words.iter().all(|w| plain(w)) && whole.chars().count() <= NAME_FROM_COMMAND_MAX {
        return whole;
    }
    const KEYWORDS: &[&str] = &["if", "for", "while", "until", "case", "exec", "time", "!"];
    match words.first() {
        Some(w) if plain(w) && !w.contains('=') && !KEYWORDS.contains(w) => {
            let prog = w.rsplit('/').next().unwrap_or(w);
            prog.chars().take(NAME_FROM_COMMAND_MAX).collect()
        }
        _ => "cmd".into(),
    }
}

/// (config, its teardown) of the `-c NAME=CMD` values.
pub(super) type ConfigCleanups = Vec<(String, String)>;

/// `-c` values: NAME=CMD where NAME is one of `configs` (that config's
/// teardown, at most one each), and the commands run once per command
/// after all runs, as hyperfine's --cleanup.
pub(super) fn split_cleanups(
    given: &[String],
    configs: &[&str],
) -> Result<(ConfigCleanups, Vec<String>), Error> {
    let mut cleanups: Vec<(String, String)> = Vec::new();
    let mut hooks = Vec::new();
    for a in given {
        if a.trim().is_empty() {
            return Err(Error::bad("--cleanup: an empty command"));
        }
        let Some((n, c)) = a.split_once('=') else {
            hooks.push(a.clone());
            continue;
        };
        let name = n.trim();
        if !configs.contains(&name) {
            // `WORD=...` with WORD no config is a mistyped name far more
            // often than a command that starts with an assignment.
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-.".contains(c))
            {
                return Err(Error::bad(format!(
                    "--cleanup '{a}': no config named `{name}` (give it with --config; a command that starts with an assignment: 'env {a}')"
                )));
            }
            hooks.push(a.clone());
            continue;
        }
        if c.trim().is_empty() {
            return Err(Error::bad(format!(
                "--cleanup '{a}': expected NAME=COMMAND"
            )));
        }
        if cleanups.iter().any(|(c, _)| c == name) {
            return Err(Error::bad(format!(
                "--cleanup '{a}': config `{name}` already has a cleanup"
            )));
        }
        cleanups.push((name.to_string(), c.to_string()));
    }
    Ok((cleanups, hooks))
}

/// Names made distinct: the second of a name is `NAME-2`, and so on.
pub(super) fn dedupe<'a>(names: impl Iterator<Item = &'a mut String>) {
    let mut seen: HashSet<String> = HashSet::new();
    for n in names {
        let mut k = 2;
        let base = n.clone();
        while !seen.insert(n.clone()) {
            *n = format!("{base}-{k}");
            k += 1;
        }
    }
}

/// The plan's `setup` and `teardown` from `-s` and the cleanups that are
/// commands: each once per command (`each`: a command with its point of
/// the scans, filled into the hook). Each runs in a subshell of its own,
/// as hyperfine's `sh -c`: its exit status is its last command's. A
/// failing setup stops the experiment before its first run; every cleanup
/// runs, and the plan's teardown fails when one did.
pub(super) fn hook_keys(
    setup: Option<&str>,
    cleanups: &[String],
    each: &[(String, Point)],
    baseline: Option<String>,
) -> PlanKeys {
    let setup = setup.map(|s| {
        each.iter()
            .map(|(_, p)| format!("( {} ) || exit $?\n", Grid::fill(s, p)))
            .collect::<String>()
    });
    let teardown = (!cleanups.is_empty()).then(|| {
        let mut t = String::from("st=0\n");
        for (_, p) in each {
            for c in cleanups {
                t.push_str(&format!("( {} ) || st=$?\n", Grid::fill(c, p)));
            }
        }
        t.push_str("exit $st\n");
        t
    });
    PlanKeys {
        setup,
        teardown,
        baseline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_is_named_after_its_command() {
        assert_eq!(name_after("sleep 0.01"), "sleep_0.01");
        assert_eq!(
            name_after("/usr/bin/make -j8 all CFLAGS=-O2 V=1 -C /src/x"),
            "make"
        );
        assert_eq!(name_after("if [ -n \"$X\" ]; then true; fi"), "cmd");
        assert_eq!(name_after("grep -q 'x y' f"), "grep");
        assert_eq!(name_after("X=1 make"), "X=1_make");
        assert_eq!(name_after("X=1 make -j8 all CFLAGS=-O2 V=1 -C /src"), "cmd");
    }
}
