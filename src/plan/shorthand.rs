//! `sysdelta ab --config base= --config 'slow=export X=1' -- CMD`: the
//! quick case, with hyperfine's `-n` name and `-P`/`-L` scans.
//!
//! The shorthand is turned into ordinary plan TOML and validated by the same
//! loader, so the stored plan text of an `ab` experiment is a plan file that
//! can be run again with `sysdelta run`.

use std::collections::HashSet;

use super::model::{Overrides, Plan};
pub use super::scan::Scan;
use crate::error::Error;

/// One `--config NAME=SETUP` argument.
pub fn split_config_arg(arg: &str) -> Result<(String, String), Error> {
    match arg.split_once('=') {
        Some((name, setup)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), setup.to_string()))
        }
        _ => Err(Error::bad(format!(
            "--config '{arg}': expected NAME=SETUP (SETUP may be empty, as in --config base=)"
        ))),
    }
}

/// One `-k 'NAME=IMAGE [cpus=N] [memory=M] [cmdline="..."] ...'` argument:
/// the config's name and its `[config.kernel]` table. The words after the
/// image are the table's keys, split as a shell would (so a cmdline with
/// spaces is quoted); numbers stay numbers. `TREE@REF` instead of IMAGE is
/// a kernel sysdelta builds (`tree` and `ref`), with `patches=A,B` and
/// `kconfig=FILE`; relative paths there are from the working directory.
pub fn split_kernel_arg(arg: &str) -> Result<(String, toml::Table), Error> {
    let bad = |why: &str| {
        Error::bad(format!(
            "-k '{arg}': {why}; expected NAME=IMAGE or NAME=TREE@REF [patches=P1,P2] [kconfig=FILE] [cpus=N] [memory=SIZE] [cmdline=\"OPTIONS\"] [modules=DIR] [accel=auto|kvm|tcg] [boot_timeout=DURATION]"
        ))
    };
    let (name, rest) = arg
        .split_once('=')
        .filter(|(n, _)| !n.trim().is_empty())
        .ok_or_else(|| bad("no NAME="))?;
    let words = shlex::split(rest).ok_or_else(|| bad("unbalanced quotes"))?;
    let (image, keys) = words.split_first().ok_or_else(|| bad("no image"))?;
    let mut t = toml::Table::new();
    match image.rsplit_once('@') {
        Some((tree, reference)) if !tree.is_empty() && !reference.is_empty() => {
            t.insert("tree".into(), toml::Value::String(absolute(tree)));
            t.insert("ref".into(), toml::Value::String(reference.to_string()));
        }
        _ => {
            t.insert("image".into(), toml::Value::String(image.clone()));
        }
    }
    for w in keys {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| bad(&format!("'{w}' is not KEY=VALUE")))?;
        // A bare number is a count of CPUs or of MiB, as in a plan file.
        let value = match v.parse::<i64>() {
            Ok(n) if k == "cpus" || k == "memory" => toml::Value::Integer(n),
            _ if k == "patches" => toml::Value::Array(
                v.split(',')
                    .filter(|p| !p.is_empty())
                    .map(|p| toml::Value::String(absolute(p)))
                    .collect(),
            ),
            _ if k == "kconfig" => toml::Value::String(absolute(v)),
            _ => toml::Value::String(v.to_string()),
        };
        if t.insert(k.to_string(), value).is_some() {
            return Err(bad(&format!("'{k}' is given twice")));
        }
    }
    Ok((name.trim().to_string(), t))
}

/// A path from the command line, made absolute against the working
/// directory (a plan stores absolute paths only).
fn absolute(p: &str) -> String {
    match std::env::current_dir() {
        Ok(d) if !p.starts_with('/') => d.join(p).to_string_lossy().into_owned(),
        _ => p.to_string(),
    }
}

/// What `ab` was given besides the flags every run takes.
#[derive(Default)]
pub struct Ab<'a> {
    /// `--config NAME=SETUP`.
    pub configs: &'a [String],
    /// `-c/--cleanup NAME=CMD`.
    pub cleanups: &'a [String],
    /// `-k NAME=IMAGE ...`.
    pub kernels: &'a [String],
    /// The command's words.
    pub command: &'a [String],
    /// `-n`: the workload's name (default: after the command).
    pub name: Option<&'a str>,
    /// `-P`/`-L`: one workload (or config) per value.
    pub scan: Option<Scan>,
    /// `-S`/`-N`, `--prepare`, `--conclude`.
    pub run: RunOptions,
}

/// A config of the plan `ab` writes.
struct ConfigText {
    name: String,
    setup: String,
    cleanup: Option<String>,
    kernel: Option<toml::Table>,
}

/// The plan TOML for `ab`: its configs, and its workloads as (name,
/// command).
fn plan_text(configs: &[ConfigText], workloads: &[(String, String)], name: &str) -> String {
    let mut root = toml::Table::new();
    root.insert("name".into(), toml::Value::String(name.into()));
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
    fn apply(&self, text: String) -> String {
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

/// Validate an `ab` invocation as a plan (tests' short form).
pub fn build(
    config_args: &[String],
    cleanup_args: &[String],
    command: &[String],
    ov: &Overrides,
) -> Result<Plan, Error> {
    build_ab(
        &Ab {
            configs: config_args,
            cleanups: cleanup_args,
            command,
            ..Default::default()
        },
        ov,
    )
}

/// Validate an `ab` invocation as a plan. A kernel names a config given
/// with `--config`, or a new one (after those given with `--config`).
pub fn build_ab(ab: &Ab, ov: &Overrides) -> Result<Plan, Error> {
    let (config_args, kernel_args, command) = (ab.configs, ab.kernels, ab.command);
    if config_args.is_empty() && kernel_args.is_empty() {
        return Err(
            Error::bad("ab needs at least one --config NAME=SETUP (e.g. --config base= --config 'slow=export X=1') or -k NAME=IMAGE"),
        );
    }
    if command.is_empty() || command.iter().all(|c| c.trim().is_empty()) {
        return Err(Error::bad("ab needs a command after --"));
    }
    let mut configs = config_args
        .iter()
        .map(|a| split_config_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut kernels: Vec<(String, toml::Table)> = Vec::new();
    for a in kernel_args {
        let (name, t) = split_kernel_arg(a)?;
        if kernels.iter().any(|(n, _)| *n == name) {
            return Err(Error::bad(format!(
                "-k '{a}': config `{name}` already has a kernel"
            )));
        }
        if !configs.iter().any(|(c, _)| *c == name) {
            configs.push((name.clone(), String::new()));
        }
        kernels.push((name, t));
    }
    let mut cleanups: Vec<(String, String)> = Vec::new();
    for a in ab.cleanups {
        let (name, cmd) = match a.split_once('=') {
            Some((n, c)) if !n.trim().is_empty() && !c.trim().is_empty() => {
                (n.trim().to_string(), c.to_string())
            }
            _ => {
                return Err(Error::bad(format!(
                    "--cleanup '{a}': expected NAME=COMMAND"
                )))
            }
        };
        if !configs.iter().any(|(c, _)| *c == name) {
            return Err(Error::bad(format!(
                "--cleanup '{a}': no config named `{name}` (give it with --config)"
            )));
        }
        if cleanups.iter().any(|(c, _)| *c == name) {
            return Err(Error::bad(format!(
                "--cleanup '{a}': config `{name}` already has a cleanup"
            )));
        }
        cleanups.push((name, cmd));
    }
    // One argument is a shell command as written; several are words that
    // must reach the program as they are (`-- sh -c 'x y' z`), so quote them.
    let cmd = if command.len() == 1 {
        command[0].clone()
    } else {
        shlex::try_join(command.iter().map(String::as_str))
            .map_err(|e| Error::bad(format!("cannot quote the command for the shell: {e}")))?
    };
    let wname = ab.name.map_or_else(|| name_after(&cmd), str::to_string);
    let mut cfgs: Vec<ConfigText> = configs
        .into_iter()
        .map(|(name, setup)| ConfigText {
            cleanup: cleanups.iter().find(|c| c.0 == name).map(|c| c.1.clone()),
            kernel: kernels.iter().find(|k| k.0 == name).map(|k| k.1.clone()),
            name,
            setup,
        })
        .collect();
    let workloads = match &ab.scan {
        None => vec![(wname, cmd)],
        // The command has the placeholder: one workload per value.
        Some(s) if s.appears_in(&cmd) => {
            let base = ab.name.map_or_else(|| cmd.clone(), str::to_string);
            let mut named: Vec<(String, String)> = s
                .values
                .iter()
                .map(|v| {
                    let name = match ab.name {
                        Some(_) => s.name(&base, v),
                        None => name_after(&s.fill(&cmd, v)),
                    };
                    (name, s.fill(&cmd, v))
                })
                .collect();
            // A long command is named after its program, the same for every
            // value: then each name says its value.
            let distinct: HashSet<&String> = named.iter().map(|n| &n.0).collect();
            if ab.name.is_none() && distinct.len() < named.len() {
                let program = name_after(&cmd);
                for (n, v) in named.iter_mut().zip(&s.values) {
                    n.0 = s.name(&program, v);
                }
            }
            named
        }
        // A config's setup (or cleanup) has it: one config per value.
        Some(s) => {
            if !cfgs.iter().any(|c| {
                s.appears_in(&c.setup) || c.cleanup.as_deref().is_some_and(|t| s.appears_in(t))
            }) {
                return Err(Error::bad(format!(
                    "{} appears neither in the command nor in a config's setup or cleanup",
                    s.placeholder()
                )));
            }
            let mut out = Vec::new();
            for c in cfgs {
                if !s.appears_in(&c.setup) && !c.cleanup.as_deref().is_some_and(|t| s.appears_in(t))
                {
                    out.push(c);
                    continue;
                }
                for v in &s.values {
                    out.push(ConfigText {
                        name: s.name(&c.name, v),
                        setup: s.fill(&c.setup, v),
                        cleanup: c.cleanup.as_ref().map(|t| s.fill(t, v)),
                        kernel: c.kernel.clone(),
                    });
                }
            }
            cfgs = out;
            vec![(wname, cmd)]
        }
    };
    let text = ab.run.apply(plan_text(&cfgs, &workloads, "ab"));
    super::load::parse("(ab)", &text, ov)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_over_a_long_command_names_each_value() {
        let cmd = ["make -j{n} -C /some/long/path/to/a/tree all".to_string()];
        let plan = build_ab(
            &Ab {
                configs: &["a=".to_string()],
                command: &cmd,
                scan: Some(super::super::scan::range("n", "1", "3", None).unwrap()),
                ..Default::default()
            },
            &Overrides::default(),
        )
        .unwrap();
        let names: Vec<&str> = plan.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["make-1", "make-2", "make-3"]);
    }

    #[test]
    fn a_tree_at_a_ref_is_a_kernel_to_build() {
        let (n, t) = split_kernel_arg(
            "patched=/src/linux@v6.1 patches=/p/a.patch,/p/b.patch kconfig=/k/tiny",
        )
        .unwrap();
        assert_eq!(n, "patched");
        assert_eq!(t["tree"].as_str(), Some("/src/linux"));
        assert_eq!(t["ref"].as_str(), Some("v6.1"));
        assert!(!t.contains_key("image"));
        let p: Vec<&str> = t["patches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(p, ["/p/a.patch", "/p/b.patch"]);
        assert_eq!(t["kconfig"].as_str(), Some("/k/tiny"));
        // Relative paths are the working directory's.
        let (_, t) = split_kernel_arg("p=linux@HEAD kconfig=tiny.config").unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            t["tree"].as_str().unwrap(),
            cwd.join("linux").to_str().unwrap()
        );
        assert_eq!(
            t["kconfig"].as_str().unwrap(),
            cwd.join("tiny.config").to_str().unwrap()
        );
    }

    #[test]
    fn a_kernel_argument_becomes_the_configs_kernel_table() {
        let (n, t) = split_kernel_arg(
            "up=/boot/vmlinuz-x cpus=1 memory=1G cmdline=\"mitigations=off nosmt\"",
        )
        .unwrap();
        assert_eq!(n, "up");
        assert_eq!(t["image"].as_str(), Some("/boot/vmlinuz-x"));
        assert_eq!(t["cpus"].as_integer(), Some(1));
        assert_eq!(t["memory"].as_str(), Some("1G"));
        assert_eq!(t["cmdline"].as_str(), Some("mitigations=off nosmt"));
        for bad in [
            "=/boot/x",
            "up=",
            "up=/boot/x cpus",
            "up=/boot/x cpus=1 cpus=2",
            "up='/boot/x",
        ] {
            let e = split_kernel_arg(bad).unwrap_err();
            assert!(e.to_string().starts_with(&format!("-k '{bad}'")), "{e}");
        }
    }

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

    #[test]
    fn shorthand_becomes_a_plan_with_setups() {
        let p = build(
            &["base=".into(), "slow=export X=1".into()],
            &["slow=rm -f /tmp/x".into()],
            &["sleep".into(), "0.01".into()],
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(p.configs.len(), 2);
        assert_eq!(p.configs[0].setup, None);
        assert_eq!(p.configs[1].setup.as_deref(), Some("export X=1"));
        assert_eq!(p.configs[0].teardown, None);
        assert_eq!(p.configs[1].teardown.as_deref(), Some("rm -f /tmp/x"));
        assert_eq!(p.baseline, "base");
        // The stored text is a plan that loads again to the same thing.
        let again = super::super::load::parse("x", &p.text, &Overrides::default()).unwrap();
        assert_eq!(again.configs.len(), 2);
    }

    #[test]
    fn several_command_words_keep_their_quoting() {
        let p = build(
            &["a=".into()],
            &[],
            &[
                "sh".into(),
                "-c".into(),
                "test \"$0\" = x".into(),
                "x".into(),
            ],
            &Overrides::default(),
        )
        .unwrap();
        match &p.workloads[0].kind {
            crate::plan::WorkloadKind::Command { command, .. } => {
                assert_eq!(
                    shlex::split(command).unwrap(),
                    vec!["sh", "-c", "test \"$0\" = x", "x"]
                );
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn bad_config_argument_is_named() {
        let e = build(&["=x".into()], &[], &["true".into()], &Overrides::default()).unwrap_err();
        assert!(e.to_string().contains("--config '=x'"), "{e}");
        let t = |arg: &str| {
            build(
                &["a=".into()],
                &[arg.into()],
                &["true".into()],
                &Overrides::default(),
            )
            .unwrap_err()
        };
        assert!(
            t("b=echo").to_string().contains("no config named `b`"),
            "{}",
            t("b=echo")
        );
        assert!(
            t("a=").to_string().contains("expected NAME=COMMAND"),
            "{}",
            t("a=")
        );
    }
}
