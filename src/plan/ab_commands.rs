//! `sysdelta ab 'CMD1' 'CMD2'`: commands compared as hyperfine compares
//! them, each command a config (its `command` runs in place of the one
//! workload's), so the runs interleave and the report gives each
//! command's ratio to the reference with its CI and verdict. Also the
//! hyperfine hooks every form of `ab` shares: `-s/--setup` and
//! `-c/--cleanup CMD`, once per command.
//!
//! Once per command means: every command's setup before the first run of
//! any, every cleanup after the last run of all. The runs of all commands
//! are interleaved across the whole experiment, so each command's first
//! run comes in the first block and its last in the last: a setup around
//! each command's own block would run at every switch (what `--prepare`
//! is for), and setups that build something must leave every command's
//! build in place at once.

use super::ab_plan::{dedupe, hook_keys, name_after, plan_text, split_cleanups, Ab, ConfigText};
use super::model::{Overrides, Plan};
use super::scan::{Grid, Point};
use super::scan_params::ScanParameters;
use crate::error::Error;

/// The plan of `ab 'CMD1' 'CMD2' ...`: one config per command (and per
/// point of the scans in it), one workload.
pub(super) fn build(
    ab: &Ab,
    commands: &[String],
    grid: &Grid,
    ov: &Overrides,
) -> Result<Plan, Error> {
    let mut commands = commands.to_vec();
    let mut names: Vec<Option<String>> = match ab.names {
        [] => vec![None; commands.len()],
        n => n.iter().cloned().map(Some).collect(),
    };
    // hyperfine's --reference: one of the commands (by its text or its
    // name), or a command of its own, measured first.
    let reference = match ab.reference {
        None => None,
        Some(r) if r.trim().is_empty() => return Err(Error::bad("--reference: an empty command")),
        Some(r) => match commands
            .iter()
            .position(|c| c == r)
            .or_else(|| names.iter().position(|n| n.as_deref() == Some(r)))
        {
            Some(i) => Some(i),
            None => {
                commands.insert(0, r.to_string());
                names.insert(0, None);
                Some(0)
            }
        },
    };
    for s in &grid.scans {
        if !commands.iter().any(|c| s.appears_in(c)) {
            let only_setup = ab.setup.is_some_and(|t| s.appears_in(t));
            return Err(Error::bad(format!(
                "{} appears in no command{}",
                s.placeholder(),
                if only_setup {
                    ": every command's setup runs before the first run of any, so a value only there would not reach its runs (put it in the command, e.g. ./bin-{NAME})"
                } else {
                    ""
                }
            )));
        }
    }
    let mut cfgs: Vec<ConfigText> = Vec::new();
    let mut each: Vec<(String, Point)> = Vec::new();
    let mut baseline = None;
    for (i, cmd) in commands.iter().enumerate() {
        let g = grid.only(|s| s.appears_in(cmd));
        for p in g.points() {
            let filled = Grid::fill(cmd, &p);
            let name = match &names[i] {
                Some(n) => Grid::name(n, &p),
                None => name_after(&filled),
            };
            if reference == Some(i) && baseline.is_none() {
                baseline = Some(cfgs.len());
            }
            cfgs.push(ConfigText {
                name,
                setup: String::new(),
                cleanup: None,
                command: Some(filled),
                kernel: None,
            });
            each.push((cmd.clone(), p));
        }
    }
    dedupe(cfgs.iter_mut().map(|c| &mut c.name));
    let first = cfgs[0].command.clone().unwrap_or_default();
    let workload = (workload_name(&commands), first);
    let baseline = baseline.map(|i| cfgs[i].name.clone());
    let (_, cleanups) = split_cleanups(ab.cleanups, &[])?;
    let keys = hook_keys(ab.setup, &cleanups, &each, baseline);
    let mut params = ScanParameters::default();
    for (c, (_, p)) in cfgs.iter().zip(&each) {
        ScanParameters::add(&mut params.configs, &c.name, p);
    }
    let text = params.prepend_to(ab.run.apply(plan_text(&cfgs, &[workload], &keys)));
    super::load::parse("(ab)", &text, ov).map_err(|e| super::ab_errors::in_user_terms(e, &text))
}

/// The one workload's name: the program every command runs, when they
/// run one (`xz -1 f`, `xz -9 f`: `xz`), else `command`.
fn workload_name(commands: &[String]) -> String {
    let program = |c: &String| {
        c.split_whitespace()
            .next()
            .map(|w| w.rsplit('/').next().unwrap_or(w).to_string())
    };
    let first = program(&commands[0]);
    match first {
        Some(p)
            if !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
                && commands.iter().all(|c| program(c).as_ref() == Some(&p)) =>
        {
            p
        }
        _ => "command".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan;
    use super::*;

    fn plan<'a>(commands: &[&str], f: impl FnOnce(&mut Ab<'a>)) -> Result<Plan, Error> {
        let commands: Vec<String> = commands.iter().map(|c| c.to_string()).collect();
        let mut ab: Ab<'a> = Ab {
            commands: commands.leak(),
            ..Default::default()
        };
        f(&mut ab);
        super::super::shorthand::build_ab(&ab, &Overrides::default())
    }

    #[test]
    fn each_command_is_a_config_of_one_workload() {
        let p = plan(&["sleep 0.01", "sleep 0.02"], |_| {}).unwrap();
        let names: Vec<&str> = p.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["sleep_0.01", "sleep_0.02"]);
        assert_eq!(p.configs[1].command.as_deref(), Some("sleep 0.02"));
        assert_eq!(p.workloads.len(), 1);
        assert_eq!(p.workloads[0].name, "sleep");
        assert_eq!(p.baseline, "sleep_0.01");
        assert_eq!(p.setup, None);
        // The stored text is a plan that loads again to the same thing.
        let again = super::super::load::parse("x", &p.text, &Overrides::default()).unwrap();
        assert_eq!(again.configs[1].command.as_deref(), Some("sleep 0.02"));
    }

    #[test]
    fn the_reference_is_a_command_a_name_or_a_command_of_its_own() {
        let names = ["fast".to_string(), "slow".to_string()];
        let p = plan(&["true", "sleep 0.01"], |a| {
            a.names = &names;
            a.reference = Some("slow");
        })
        .unwrap();
        assert_eq!(p.baseline, "slow");
        let p = plan(&["true", "sleep 0.01"], |a| {
            a.reference = Some("sleep 0.01")
        })
        .unwrap();
        assert_eq!(p.baseline, "sleep_0.01");
        let p = plan(&["true"], |a| a.reference = Some("sleep 0.02")).unwrap();
        assert_eq!(p.configs.len(), 2);
        assert_eq!(p.baseline, "sleep_0.02");
        assert_eq!(p.configs[0].name, "sleep_0.02");
    }

    #[test]
    fn scans_multiply_the_commands_and_fill_their_hooks() {
        let p = plan(&["echo {a}{b}"], |a| {
            a.scans = vec![
                scan::list("a", "x,y").unwrap(),
                scan::list("b", "1,2").unwrap(),
            ];
            a.setup = Some("echo setup {a}{b}");
        })
        .unwrap();
        let cmds: Vec<&str> = p
            .configs
            .iter()
            .map(|c| c.command.as_deref().unwrap())
            .collect();
        assert_eq!(cmds, ["echo x1", "echo x2", "echo y1", "echo y2"]);
        let setup = p.setup.unwrap();
        assert_eq!(setup.lines().count(), 4, "{setup}");
        assert!(setup.contains("( echo setup y2 ) || exit $?"), "{setup}");
    }

    #[test]
    fn a_placeholder_without_a_scan_or_a_scan_in_no_command_is_refused() {
        let e = plan(&["echo {a}{b}"], |a| {
            a.scans = vec![scan::list("a", "x,y").unwrap()]
        })
        .unwrap_err();
        assert!(e.to_string().contains("{b} is no parameter"), "{e}");
        let e = plan(&["true"], |a| {
            a.scans = vec![scan::list("v", "1,2").unwrap()];
            a.setup = Some("make V={v}");
        })
        .unwrap_err();
        assert!(e.to_string().contains("{v} appears in no command"), "{e}");
        let names = ["one".to_string()];
        let e = plan(&["true", "false"], |a| a.names = &names).unwrap_err();
        assert!(e.to_string().contains("-n: 1 given for 2 commands"), "{e}");
    }
}
