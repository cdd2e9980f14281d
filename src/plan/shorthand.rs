//! `sysdelta ab -c base= -c 'slow=export X=1' -- CMD`: the quick case.
//!
//! The shorthand is turned into ordinary plan TOML and validated by the same
//! loader, so the stored plan text of an `ab` experiment is a plan file that
//! can be run again with `sysdelta run`.

use super::model::{Overrides, Plan};

/// One `-c NAME=SETUP` argument.
pub fn split_config_arg(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((name, setup)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), setup.to_string()))
        }
        _ => Err(format!(
            "-c '{arg}': expected NAME=SETUP (SETUP may be empty, as in -c base=)"
        )),
    }
}

/// Build the plan TOML for `ab`: configs as (name, setup), teardowns as
/// (config name, command).
pub fn plan_text(
    configs: &[(String, String)],
    teardowns: &[(String, String)],
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

/// Validate an `ab` invocation as a plan.
pub fn build(
    config_args: &[String],
    teardown_args: &[String],
    command: &[String],
    ov: &Overrides,
) -> Result<Plan, String> {
    if config_args.is_empty() {
        return Err(
            "ab needs at least one -c NAME=SETUP (e.g. -c base= -c 'slow=export X=1')".into(),
        );
    }
    if command.is_empty() || command.iter().all(|c| c.trim().is_empty()) {
        return Err("ab needs a command after --".into());
    }
    let configs = config_args
        .iter()
        .map(|a| split_config_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut teardowns: Vec<(String, String)> = Vec::new();
    for a in teardown_args {
        let (name, cmd) = match a.split_once('=') {
            Some((n, c)) if !n.trim().is_empty() && !c.trim().is_empty() => {
                (n.trim().to_string(), c.to_string())
            }
            _ => return Err(format!("-t '{a}': expected NAME=COMMAND")),
        };
        if !configs.iter().any(|(c, _)| *c == name) {
            return Err(format!(
                "-t '{a}': no config named `{name}` (give it with -c)"
            ));
        }
        if teardowns.iter().any(|(c, _)| *c == name) {
            return Err(format!("-t '{a}': config `{name}` already has a teardown"));
        }
        teardowns.push((name, cmd));
    }
    // One argument is a shell command as written; several are words that
    // must reach the program as they are (`-- sh -c 'x y' z`), so quote them.
    let cmd = if command.len() == 1 {
        command[0].clone()
    } else {
        shlex::try_join(command.iter().map(String::as_str))
            .map_err(|e| format!("cannot quote the command for the shell: {e}"))?
    };
    let text = plan_text(&configs, &teardowns, &cmd, "ab");
    super::load::parse("(ab)", &text, ov)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(e.contains("-c '=x'"), "{e}");
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
            t("b=echo").contains("no config named `b`"),
            "{}",
            t("b=echo")
        );
        assert!(t("a=").contains("expected NAME=COMMAND"), "{}", t("a="));
    }
}
