//! `sysdelta ab --config base= --config 'slow=export X=1' -- CMD`: the
//! quick case, with hyperfine's `-n` name and `-P`/`-L` scans.
//!
//! The shorthand is turned into ordinary plan TOML and validated by the same
//! loader, so the stored plan text of an `ab` experiment is a plan file that
//! can be run again with `sysdelta run`.

use std::collections::HashSet;

use super::ab_plan::{dedupe, hook_keys, plan_text, split_cleanups, ConfigText};
pub use super::ab_plan::{name_after, Ab, RunOptions};
use super::model::{Overrides, Plan};
use super::scan::Grid;
pub use super::scan::Scan;
use super::scan_params::ScanParameters;
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

/// Validate an `ab` invocation as a plan. Without --config or -k each
/// command is a config ([`super::ab_commands`]); with them, the configs
/// are compared and each command is a workload. A kernel names a config
/// given with `--config`, or a new one (after those given with `--config`).
pub fn build_ab(ab: &Ab, ov: &Overrides) -> Result<Plan, Error> {
    let grid = Grid::new(ab.scans.clone())?;
    let commands = commands_of(ab)?;
    if !ab.names.is_empty() && ab.names.len() != commands.len() {
        return Err(Error::bad(format!(
            "-n: {} given for {} commands; give one name per command",
            ab.names.len(),
            commands.len()
        )));
    }
    let params: Vec<&str> = grid.scans.iter().map(|s| s.param.as_str()).collect();
    for (what, text) in commands
        .iter()
        .map(|c| ("the command", c.as_str()))
        .chain(ab.names.iter().map(|n| ("-n", n.as_str())))
        .chain(ab.setup.map(|t| ("--setup", t)))
        .chain(ab.cleanups.iter().map(|c| ("--cleanup", c.as_str())))
        .chain(ab.configs.iter().map(|c| ("--config", c.as_str())))
    {
        if let Some(p) = super::scan::unfilled(text, &params) {
            return Err(Error::bad(format!(
                "{what} '{text}': {p} is no parameter: scan it with -L {} VALUES or -P {} MIN MAX",
                &p[1..p.len() - 1],
                &p[1..p.len() - 1]
            )));
        }
    }
    if ab.configs.is_empty() && ab.kernels.is_empty() {
        return super::ab_commands::build(ab, &commands, &grid, ov);
    }
    let (mut cfgs, hooks) = configs_of(ab)?;
    // A scan in a command varies the workloads; in a config's setup or
    // cleanup, the configs.
    let in_config = |s: &Scan| {
        cfgs.iter().any(|c| {
            s.appears_in(&c.setup) || c.cleanup.as_deref().is_some_and(|t| s.appears_in(t))
        })
    };
    let in_command = |s: &Scan| commands.iter().any(|c| s.appears_in(c));
    for s in &grid.scans {
        match (in_command(s), in_config(s)) {
            (true, true) => {
                return Err(Error::bad(format!(
                    "{} is in the command and in a config's setup or cleanup: a scan varies one of them",
                    s.placeholder()
                )))
            }
            (false, false) => {
                return Err(Error::bad(format!(
                    "{} appears neither in the command nor in a config's setup or cleanup",
                    s.placeholder()
                )))
            }
            _ => {}
        }
    }
    let config_grid = grid.only(|s| in_config(s));
    let mut workloads: Vec<(String, String)> = Vec::new();
    let mut each_command: Vec<(String, super::scan::Point)> = Vec::new();
    for (i, cmd) in commands.iter().enumerate() {
        let g = grid.only(|s| s.appears_in(cmd));
        let mut named: Vec<(String, String)> = g
            .points()
            .into_iter()
            .map(|p| {
                let filled = Grid::fill(cmd, &p);
                let name = match ab.names.get(i) {
                    Some(n) => Grid::name(n, &p),
                    None => name_after(&filled),
                };
                each_command.push((cmd.clone(), p));
                (name, filled)
            })
            .collect();
        // A long command is named after its program, the same for every
        // value: then each name says its value.
        let distinct: HashSet<&String> = named.iter().map(|n| &n.0).collect();
        if ab.names.is_empty() && distinct.len() < named.len() {
            let program = name_after(cmd);
            for (n, p) in named.iter_mut().zip(g.points()) {
                n.0 = Grid::name(&program, &p);
            }
        }
        workloads.extend(named);
    }
    dedupe(workloads.iter_mut().map(|w| &mut w.0));
    // `each_command` has a point per workload, in their order.
    let mut params = ScanParameters::default();
    for (w, (_, p)) in workloads.iter().zip(&each_command) {
        ScanParameters::add(&mut params.workloads, &w.0, p);
    }
    if !config_grid.scans.is_empty() {
        let mut out = Vec::new();
        for c in cfgs {
            let g = config_grid.only(|s| {
                s.appears_in(&c.setup) || c.cleanup.as_deref().is_some_and(|t| s.appears_in(t))
            });
            if g.scans.is_empty() {
                out.push(c);
                continue;
            }
            for p in g.points() {
                ScanParameters::add(&mut params.configs, &Grid::name(&c.name, &p), &p);
                out.push(ConfigText {
                    name: Grid::name(&c.name, &p),
                    setup: Grid::fill(&c.setup, &p),
                    cleanup: c.cleanup.as_ref().map(|t| Grid::fill(t, &p)),
                    command: None,
                    kernel: c.kernel.clone(),
                });
            }
        }
        cfgs = out;
    }
    let baseline = match ab.reference {
        None => None,
        Some(r) if cfgs.iter().any(|c| c.name == r) => Some(r.to_string()),
        Some(r) => {
            return Err(Error::bad(format!(
            "--reference '{r}': no config of that name (with --config, the reference is a config)"
        )))
        }
    };
    let keys = hook_keys(ab.setup, &hooks, &each_command, baseline);
    let text = params.prepend_to(ab.run.apply(plan_text(&cfgs, &workloads, &keys)));
    super::load::parse("(ab)", &text, ov).map_err(|e| super::ab_errors::in_user_terms(e, &text))
}

/// The commands `ab` measures: the words after `--` as one command (quoted
/// for the shell when there are several), or each command before it.
fn commands_of(ab: &Ab) -> Result<Vec<String>, Error> {
    if !ab.command.is_empty() && !ab.commands.is_empty() {
        return Err(Error::bad(
            "ab takes its commands before -- ('CMD1' 'CMD2') or one after it, not both",
        ));
    }
    let out = if ab.command.len() > 1 {
        // Several words must reach the program as they are
        // (`-- sh -c 'x y' z`), so quote them.
        vec![shlex::try_join(ab.command.iter().map(String::as_str))
            .map_err(|e| Error::bad(format!("cannot quote the command for the shell: {e}")))?]
    } else if ab.command.len() == 1 {
        ab.command.to_vec()
    } else {
        ab.commands.to_vec()
    };
    if out.is_empty() || out.iter().any(|c| c.trim().is_empty()) {
        return Err(Error::bad(
            "ab needs a command: sysdelta ab 'CMD1' 'CMD2' (each command a config), or --config NAME=SETUP ... -- CMD",
        ));
    }
    Ok(out)
}

/// The configs of `--config` and `-k`, with the cleanups that name one;
/// the other cleanups, which run after all runs of each command.
fn configs_of(ab: &Ab) -> Result<(Vec<ConfigText>, Vec<String>), Error> {
    let mut configs = ab
        .configs
        .iter()
        .map(|a| split_config_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut kernels: Vec<(String, toml::Table)> = Vec::new();
    for a in ab.kernels {
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
    let names: Vec<&str> = configs.iter().map(|(c, _)| c.as_str()).collect();
    let (cleanups, hooks) = split_cleanups(ab.cleanups, &names)?;
    let cfgs = configs
        .into_iter()
        .map(|(name, setup)| ConfigText {
            cleanup: cleanups.iter().find(|c| c.0 == name).map(|c| c.1.clone()),
            kernel: kernels.iter().find(|k| k.0 == name).map(|k| k.1.clone()),
            command: None,
            name,
            setup,
        })
        .collect();
    Ok((cfgs, hooks))
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
                scans: vec![super::super::scan::range("n", "1", "3", None).unwrap()],
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
        // Not a config's name: hyperfine's cleanup, after all runs.
        let p = build(
            &["a=".into()],
            &["rm -f /tmp/x".into()],
            &["true".into()],
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(p.configs[0].teardown, None);
        assert!(p.teardown.unwrap().contains("( rm -f /tmp/x )"));
    }
}
