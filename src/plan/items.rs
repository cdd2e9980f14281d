//! One config and one workload of a plan, validated: names, kernels,
//! setup and teardown, work directories, commands (that they exist) and the
//! metrics a command's output gives.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::bounds::timeout_at;
use super::model::*;
use super::position::Origin;
use super::raw::{RawConfig, RawMetric, RawWorkload};
use crate::error::Error;
use crate::metric::{Direction, MetricSpec};

pub(super) fn default_name(source: &str) -> String {
    Path::new(source)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "experiment".into())
}

pub(super) fn check_name(
    origin: &Origin,
    n: &Spanned<String>,
    what: &str,
    seen: &mut HashSet<String>,
) -> Result<String, Error> {
    let name = n.get_ref();
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(origin.bad_at(
            n.span().start,
            format!("{what} name '{name}' must be non-empty without spaces"),
        ));
    }
    if !seen.insert(name.clone()) {
        return Err(origin.bad_at(n.span().start, format!("duplicate {what} name '{name}'")));
    }
    Ok(name.clone())
}

pub(super) fn build_config(
    origin: &Origin,
    c: &Spanned<RawConfig>,
    seen: &mut HashSet<String>,
) -> Result<ConfigDef, Error> {
    let rc = c.get_ref();
    let name = check_name(origin, &rc.name, "config", seen)?;
    let mut env = Vec::new();
    for (k, v) in rc.env.iter().flatten() {
        let val = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(origin.bad_at(
                    v.span().start,
                    format!("env {k}: expected a string, got {}", other.type_str()),
                ))
            }
        };
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(origin.bad_at(v.span().start, format!("env name '{k}' is not valid")));
        }
        env.push((k.clone(), val));
    }
    let kinds = rc
        .kinds
        .iter()
        .map(|(k, v)| KindDecl {
            kind: k.name.to_string(),
            value: v.get_ref().clone(),
            at: origin.at(v.span().start, format!("config '{name}', {}", k.name)),
        })
        .collect();
    let kernel = rc
        .kernel
        .as_ref()
        .map(|k| super::kernel::parse(origin, &name, k))
        .transpose()?;
    let mut monitors = Vec::new();
    for m in rc.monitors.iter().flatten() {
        if !crate::monitor::is_known(m.get_ref()) {
            return Err(origin.bad_at(
                m.span().start,
                format!(
                    "unknown monitor '{}'; known monitors: {}",
                    m.get_ref(),
                    crate::monitor::names().join(", ")
                ),
            ));
        }
        monitors.push(m.get_ref().clone());
    }
    Ok(ConfigDef {
        name,
        monitors,
        setup: rc.setup.as_ref().map(|s| s.get_ref().clone()),
        teardown: rc.teardown.as_ref().map(|s| s.get_ref().clone()),
        command: rc.command.as_ref().map(|s| s.get_ref().clone()),
        env,
        workdir: workdir(origin, &rc.workdir)?,
        kinds,
        kernel,
        monitors_off: false,
    })
}

/// A config's `command` runs in place of each command workload's: it
/// must start as theirs do (found, and split when they run without a
/// shell), and there must be one to replace.
pub(super) fn check_config_commands(
    origin: &Origin,
    configs: &[Spanned<RawConfig>],
    workloads: &[WorkloadDef],
) -> Result<(), Error> {
    for c in configs {
        let Some(cmd) = &c.get_ref().command else {
            continue;
        };
        let name = c.get_ref().name.get_ref();
        let at = cmd.span().start;
        let mut any = false;
        for w in workloads {
            let WorkloadKind::Command { launch, .. } = &w.kind else {
                continue;
            };
            any = true;
            match launch.for_command(cmd.get_ref()) {
                Err(m) => {
                    return Err(origin.bad_at(
                        at,
                        format!(
                            "config '{name}' runs without a shell (as workload '{}'): {m}",
                            w.name
                        ),
                    ))
                }
                Ok(CommandLaunch::Direct(words)) if !words[0].contains('/') => {
                    crate::process::program::resolve(&words[0], &[])
                        .map(drop)
                        .map_err(|e| origin.bad_at(at, format!("command not found: {e}")))?
                }
                Ok(_) => check_command_exists(cmd.get_ref()).map_err(|m| origin.bad_at(at, m))?,
            }
        }
        if !any {
            return Err(origin.bad_at(
                at,
                format!("config '{name}' has a command, but the plan has no command workload for it to replace"),
            ));
        }
    }
    Ok(())
}

pub(super) fn workdir(
    origin: &Origin,
    w: &Option<Spanned<String>>,
) -> Result<Option<PathBuf>, Error> {
    match w {
        None => Ok(None),
        Some(w) => {
            let p = PathBuf::from(w.get_ref());
            if !p.is_dir() {
                return Err(origin.bad_at(
                    w.span().start,
                    format!("workdir '{}' is not a directory", p.display()),
                ));
            }
            Ok(Some(p))
        }
    }
}

pub(super) fn build_workload(
    origin: &Origin,
    w: Spanned<RawWorkload>,
    default_timeout: Duration,
    defaults: super::launch::Defaults,
    quick: bool,
    seen: &mut HashSet<String>,
) -> Result<WorkloadDef, Error> {
    let start = w.span().start;
    let rw = w.into_inner();
    let name = check_name(origin, &rw.name, "workload", seen)?;
    let timeout = match &rw.timeout {
        Some(t) => timeout_at(origin, t)?,
        None => default_timeout,
    };
    let kind = match (&rw.command, &rw.builtin) {
        (Some(_), Some(b)) => {
            return Err(origin.bad_at(
                b.span().start,
                format!("workload '{name}' has both command and builtin"),
            ))
        }
        (None, None) => {
            return Err(origin.bad_at(
                start,
                format!("workload '{name}' needs a command or a builtin"),
            ))
        }
        (Some(cmd), None) => {
            if let Some(p) = rw.params.as_ref().or(rw.quick.as_ref()) {
                return Err(
                    origin.bad_at(p.span().start, "params and quick are for builtin workloads")
                );
            }
            let launch = super::launch::command_launch(
                origin,
                &name,
                cmd,
                rw.shell.as_ref().or(defaults.shell),
            )?;
            match &launch {
                // Without a shell the first word is the program, whatever
                // its name (`echo` too).
                CommandLaunch::Direct(words) if !words[0].contains('/') => {
                    crate::process::program::resolve(&words[0], &[])
                        .map(drop)
                        .map_err(|e| {
                            origin.bad_at(cmd.span().start, format!("command not found: {e}"))
                        })?
                }
                _ => check_command_exists(cmd.get_ref())
                    .map_err(|m| origin.bad_at(cmd.span().start, m))?,
            }
            let mut metrics = Vec::new();
            let mut mseen: HashSet<String> = crate::workload::command::TIMING_METRICS
                .iter()
                .map(|m| m.to_string())
                .collect();
            for m in &rw.metrics {
                metrics.push(build_regex_metric(origin, m, &mut mseen)?);
            }
            WorkloadKind::Command {
                command: cmd.get_ref().clone(),
                metrics,
                launch,
            }
        }
        (None, Some(b)) => {
            if let Some(s) = &rw.shell {
                return Err(origin.bad_at(
                    s.span().start,
                    format!("workload '{name}': shell is for command workloads"),
                ));
            }
            if let Some(m) = rw.metrics.first() {
                return Err(origin.bad_at(
                    m.span().start,
                    "metrics with a regex are for command workloads",
                ));
            }
            let mut params = rw
                .params
                .map(|p| p.into_inner())
                .unwrap_or_else(|| toml::Value::Table(Default::default()));
            if let Some(q) = &rw.quick {
                let (Some(qt), Some(pt)) = (q.get_ref().as_table(), params.as_table_mut()) else {
                    return Err(origin.bad_at(q.span().start, "quick and params must be tables"));
                };
                if quick {
                    for (k, v) in qt {
                        pt.insert(k.clone(), v.clone());
                    }
                }
            }
            WorkloadKind::Builtin {
                name: b.get_ref().clone(),
                params,
            }
        }
    };
    if let WorkloadKind::Builtin { name: b, params } = &kind {
        crate::builtins::validate(b, params).map_err(|m| {
            let at = rw.builtin.as_ref().map(|s| s.span().start).unwrap_or(start);
            origin.bad_at(at, format!("workload '{name}': {m}"))
        })?;
    }
    Ok(WorkloadDef {
        name,
        kind,
        timeout,
        workdir: workdir(origin, &rw.workdir)?,
        prepare: super::launch::hook(rw.prepare.as_ref(), defaults.prepare),
        conclude: super::launch::hook(rw.conclude.as_ref(), defaults.conclude),
    })
}

pub(super) fn build_regex_metric(
    origin: &Origin,
    m: &Spanned<RawMetric>,
    seen: &mut HashSet<String>,
) -> Result<RegexMetric, Error> {
    let rm = m.get_ref();
    let name = check_name(origin, &rm.name, "metric", seen)?;
    let regex = regex::bytes::Regex::new(rm.regex.get_ref()).map_err(|e| {
        origin.bad_at(
            rm.regex.span().start,
            format!("metric '{name}': bad regex: {}", regex_error(&e)),
        )
    })?;
    let has_value_group = regex.capture_names().any(|n| n == Some("value"));
    if !has_value_group && regex.captures_len() < 2 {
        return Err(origin.bad_at(
            rm.regex.span().start,
            format!(
                "metric '{name}': regex needs a capture group (named 'value' or the first group)"
            ),
        ));
    }
    let direction = match &rm.direction {
        None => Direction::Lower,
        Some(d) => Direction::parse(d.get_ref()).ok_or_else(|| {
            origin.bad_at(
                d.span().start,
                format!(
                    "direction must be \"lower\" or \"higher\", got '{}'",
                    d.get_ref()
                ),
            )
        })?,
    };
    Ok(RegexMetric {
        spec: MetricSpec::new(&name, rm.unit.as_deref().unwrap_or(""), direction),
        regex,
    })
}

/// A regex error in one line: a syntax error's last line says what is
/// wrong (the lines above draw the pattern with a caret under it).
pub(super) fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text.lines().map(str::trim).rfind(|l| !l.is_empty());
    last.unwrap_or("").trim_start_matches("error: ").to_string()
}

pub(super) const SHELL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "{",
    "}", "(", "!", "cd", "export", "exec", "eval", "set", "unset", "test", "[", "true", "false",
    ":", ".", "echo", "printf", "read", "exit", "return", "trap", "wait", "ulimit", "umask",
    "time", "command", "type", "kill", "shift",
];

/// Check that the first program of a shell command can be found, so a typo
/// fails validation instead of failing every run.
pub fn check_command_exists(cmd: &str) -> Result<(), Error> {
    let first_line = cmd
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let Some(line) = first_line else {
        return Err(Error::bad("command is empty"));
    };
    let words = match shlex::split(line) {
        Some(w) => w,
        None => return Ok(()), // unbalanced quoting on the first line of a multi-line script
    };
    let mut words = words.into_iter();
    let prog = loop {
        let Some(w) = words.next() else {
            return Ok(()); // only assignments
        };
        if !w.contains('=') || w.starts_with('=') {
            break w;
        }
        // An assignment with an expansion (`n=$((4000 + 1))`, `d=$(pwd)`)
        // may hold spaces shlex splits at: where it ends, and so which
        // word is the program, only a shell knows.
        if w.contains('$') || w.contains('`') {
            return Ok(());
        }
    };
    if SHELL_WORDS.contains(&prog.as_str())
        || prog.contains('$')
        || prog.contains('`')
        || prog.starts_with('(')
    {
        return Ok(());
    }
    let prog = prog.trim_end_matches(';');
    if prog.contains('/') {
        let p = Path::new(prog);
        return if p.exists() {
            Ok(())
        } else {
            Err(Error::bad(format!(
                "command not found: '{prog}' does not exist"
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(prog);
        if let Ok(md) = cand.metadata() {
            use std::os::unix::fs::PermissionsExt;
            if md.is_file() && md.permissions().mode() & 0o111 != 0 {
                return Ok(());
            }
        }
    }
    Err(Error::bad(format!(
        "command not found: '{prog}' is not on PATH"
    )))
}

#[cfg(test)]
mod command_exists_tests {
    use super::check_command_exists;

    #[test]
    fn a_program_is_looked_up_only_where_it_can_be_told() {
        assert!(check_command_exists("true").is_ok());
        assert!(check_command_exists("X=1 Y=2 true").is_ok());
        assert!(check_command_exists("sysdelta-no-such-program x").is_err());
        assert!(check_command_exists("X=1 sysdelta-no-such-program").is_err());
        // The expansion's spaces are inside one shell word: `+` is not a
        // program.
        assert!(check_command_exists("n=$((4000 + ${EXTRA:-0})); echo $n").is_ok());
        assert!(check_command_exists("d=$(pwd -P) true").is_ok());
    }
}
