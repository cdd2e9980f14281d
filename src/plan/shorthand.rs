//! `sysdelta ab -c base= -c 'slow=export X=1' -- CMD`: the quick case.
//!
//! The shorthand is turned into ordinary plan TOML and validated by the same
//! loader, so the stored plan text of an `ab` experiment is a plan file that
//! can be run again with `sysdelta run`.

use super::model::{Overrides, Plan};
use crate::error::Error;

/// One `-c NAME=SETUP` argument.
pub fn split_config_arg(arg: &str) -> Result<(String, String), Error> {
    match arg.split_once('=') {
        Some((name, setup)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), setup.to_string()))
        }
        _ => Err(Error::bad(format!(
            "-c '{arg}': expected NAME=SETUP (SETUP may be empty, as in -c base=)"
        ))),
    }
}

/// One `-k 'NAME=IMAGE [cpus=N] [memory=M] [cmdline="..."] ...'` argument:
/// the config's name and its `[config.kernel]` table. The words after the
/// image are the table's keys, split as a shell would (so a cmdline with
/// spaces is quoted); numbers stay numbers.
pub fn split_kernel_arg(arg: &str) -> Result<(String, toml::Table), Error> {
    let bad = |why: &str| {
        Error::bad(format!(
            "-k '{arg}': {why}; expected NAME=IMAGE [cpus=N] [memory=SIZE] [cmdline=\"OPTIONS\"] [modules=DIR] [accel=auto|kvm|tcg] [boot_timeout=DURATION]"
        ))
    };
    let (name, rest) = arg
        .split_once('=')
        .filter(|(n, _)| !n.trim().is_empty())
        .ok_or_else(|| bad("no NAME="))?;
    let words = shlex::split(rest).ok_or_else(|| bad("unbalanced quotes"))?;
    let (image, keys) = words.split_first().ok_or_else(|| bad("no image"))?;
    let mut t = toml::Table::new();
    t.insert("image".into(), toml::Value::String(image.clone()));
    for w in keys {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| bad(&format!("'{w}' is not KEY=VALUE")))?;
        // A bare number is a count of CPUs or of MiB, as in a plan file.
        let value = match v.parse::<i64>() {
            Ok(n) if k == "cpus" || k == "memory" => toml::Value::Integer(n),
            _ => toml::Value::String(v.to_string()),
        };
        if t.insert(k.to_string(), value).is_some() {
            return Err(bad(&format!("'{k}' is given twice")));
        }
    }
    Ok((name.trim().to_string(), t))
}

/// Build the plan TOML for `ab`: configs as (name, setup), teardowns as
/// (config name, command).
pub fn plan_text(
    configs: &[(String, String)],
    teardowns: &[(String, String)],
    command: &str,
    name: &str,
) -> String {
    plan_text_with_kernels(configs, teardowns, &[], command, name)
}

/// [`plan_text`] with kernels: (config name, `[config.kernel]` table).
pub fn plan_text_with_kernels(
    configs: &[(String, String)],
    teardowns: &[(String, String)],
    kernels: &[(String, toml::Table)],
    command: &str,
    name: &str,
) -> String {
    let mut root = toml::Table::new();
    root.insert("name".into(), toml::Value::String(name.into()));
    let cfgs: Vec<toml::Value> = configs
        .iter()
        .map(|(n, setup)| {
            let mut t = toml::Table::new();
            t.insert("name".into(), toml::Value::String(n.clone()));
            if !setup.trim().is_empty() {
                t.insert("setup".into(), toml::Value::String(setup.clone()));
            }
            if let Some((_, td)) = teardowns.iter().find(|(c, _)| c == n) {
                t.insert("teardown".into(), toml::Value::String(td.clone()));
            }
            if let Some((_, k)) = kernels.iter().find(|(c, _)| c == n) {
                t.insert("kernel".into(), toml::Value::Table(k.clone()));
            }
            toml::Value::Table(t)
        })
        .collect();
    root.insert("config".into(), toml::Value::Array(cfgs));
    let mut w = toml::Table::new();
    w.insert("name".into(), toml::Value::String("cmd".into()));
    w.insert("command".into(), toml::Value::String(command.into()));
    root.insert(
        "workload".into(),
        toml::Value::Array(vec![toml::Value::Table(w)]),
    );
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

/// Validate an `ab` invocation as a plan.
pub fn build(
    config_args: &[String],
    teardown_args: &[String],
    command: &[String],
    ov: &Overrides,
) -> Result<Plan, Error> {
    build_with_kernels(
        config_args,
        teardown_args,
        &[],
        command,
        &RunOptions::default(),
        ov,
    )
}

/// [`build`] with `-k` kernels: a kernel names a config given with `-c`,
/// or a new one (after those given with `-c`).
pub fn build_with_kernels(
    config_args: &[String],
    teardown_args: &[String],
    kernel_args: &[String],
    command: &[String],
    run: &RunOptions,
    ov: &Overrides,
) -> Result<Plan, Error> {
    if config_args.is_empty() && kernel_args.is_empty() {
        return Err(
            Error::bad("ab needs at least one -c NAME=SETUP (e.g. -c base= -c 'slow=export X=1') or -k NAME=IMAGE"),
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
    let mut teardowns: Vec<(String, String)> = Vec::new();
    for a in teardown_args {
        let (name, cmd) = match a.split_once('=') {
            Some((n, c)) if !n.trim().is_empty() && !c.trim().is_empty() => {
                (n.trim().to_string(), c.to_string())
            }
            _ => return Err(Error::bad(format!("-t '{a}': expected NAME=COMMAND"))),
        };
        if !configs.iter().any(|(c, _)| *c == name) {
            return Err(Error::bad(format!(
                "-t '{a}': no config named `{name}` (give it with -c)"
            )));
        }
        if teardowns.iter().any(|(c, _)| *c == name) {
            return Err(Error::bad(format!(
                "-t '{a}': config `{name}` already has a teardown"
            )));
        }
        teardowns.push((name, cmd));
    }
    // One argument is a shell command as written; several are words that
    // must reach the program as they are (`-- sh -c 'x y' z`), so quote them.
    let cmd = if command.len() == 1 {
        command[0].clone()
    } else {
        shlex::try_join(command.iter().map(String::as_str))
            .map_err(|e| Error::bad(format!("cannot quote the command for the shell: {e}")))?
    };
    let text = run.apply(plan_text_with_kernels(
        &configs, &teardowns, &kernels, &cmd, "ab",
    ));
    super::load::parse("(ab)", &text, ov)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(e.to_string().contains("-c '=x'"), "{e}");
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
