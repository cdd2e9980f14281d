//! The command workload: any shell command, timed as a child process.
//!
//! Metrics of every run: `wall` (s, monotonic, from the spawn request to the
//! reap of `sh -c`, or of the program itself when it runs without a shell),
//! `user` and `sys` (s, CPU time of that process and its waited-for
//! descendants, from `wait4`), `maxrss` (KiB, largest resident set among
//! them), plus any metric the plan extracts from stdout with a regex. See
//! [`crate::process`] for exactly what one measurement covers.

use crate::error::Error;
use crate::metric::RegexMetric;
use crate::metric::{Direction, MetricSpec};
use crate::process::program::CommandLaunch;
use crate::process::{run_shell, ShellSpec};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

/// The metrics every command run reports, in report order.
pub const TIMING_METRICS: &[&str] = &["wall", "user", "sys", "maxrss"];

pub struct CommandWorkload {
    pub command: String,
    /// A shell given `command`, or its words exec'd without one.
    pub launch: CommandLaunch,
    pub extract: Vec<RegexMetric>,
    /// A non-zero exit status is a result, not a failure (`-i`); a run
    /// killed by a signal or its timeout still fails.
    pub ignore_exit_status: bool,
    /// Where the command's output goes (`--output`).
    pub output: crate::overrides::CommandOutput,
    /// The exit status of the last run (None before one, or when it did
    /// not start or a signal ended it): [`Workload::exit_status`].
    pub last_exit: Option<i32>,
}

impl CommandWorkload {
    fn extract_value(&self, m: &RegexMetric, stdout: &[u8]) -> Result<f64, Error> {
        let caps = m.regex.captures_iter(stdout).last().ok_or_else(|| {
            Error::failed(format!(
                "metric '{}': regex did not match stdout",
                m.spec.name
            ))
        })?;
        let g = caps.name("value").or_else(|| caps.get(1)).ok_or_else(|| {
            Error::failed(format!(
                "metric '{}': capture group did not participate",
                m.spec.name
            ))
        })?;
        let text = String::from_utf8_lossy(g.as_bytes());
        let v: f64 = text.trim().parse().map_err(|_| {
            Error::failed(format!(
                "metric '{}': captured '{text}' is not a number",
                m.spec.name
            ))
        })?;
        if !v.is_finite() {
            return Err(Error::failed(format!(
                "metric '{}': captured value {v} is not finite",
                m.spec.name
            )));
        }
        Ok(v)
    }
}

impl Workload for CommandWorkload {
    fn metrics(&self) -> Vec<MetricSpec> {
        let mut v = vec![
            MetricSpec::new("wall", "s", Direction::Lower),
            MetricSpec::new("user", "s", Direction::Lower),
            MetricSpec::new("sys", "s", Direction::Lower),
            MetricSpec::new("maxrss", "KiB", Direction::Lower),
        ];
        v.extend(self.extract.iter().map(|m| m.spec.clone()));
        v
    }

    fn exit_status(&self) -> Option<i32> {
        self.last_exit
    }

    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        self.last_exit = None;
        let mut env = vec![super::scratch_var(ctx.scratch)];
        env.extend(ctx.env.iter().cloned());
        let spec = ShellSpec {
            command: &self.command,
            launch: self.launch.as_launch(),
            env: &env,
            cwd: ctx.cwd,
            cpus: ctx.cpus,
            cgroup_procs: ctx.cgroup_procs,
            timeout: Some(ctx.timeout),
            capture_stdout: !self.extract.is_empty(),
            output: Some(&self.output),
        };
        let r = match run_shell(&spec, ctx.cancel) {
            Ok(r) => r,
            Err(e) => {
                return RunOutcome::Failed {
                    reason: format!("cannot start the command: {e}"),
                    stderr_tail: String::new(),
                    exit_code: None,
                }
            }
        };
        let exit_code = match r.exit {
            crate::process::Exit::Code(c) => Some(c),
            crate::process::Exit::Signal(_) => None,
        };
        self.last_exit = exit_code;
        let ignored = self.ignore_exit_status
            && matches!(r.exit, crate::process::Exit::Code(_))
            && !r.timed_out
            && !r.cancelled;
        if let Some(reason) = r.failure_reason().filter(|_| !ignored) {
            return RunOutcome::Failed {
                reason,
                stderr_tail: r.stderr_tail,
                exit_code,
            };
        }
        let mut out = vec![
            MetricSamples {
                metric: "wall".into(),
                values: vec![r.wall.as_secs_f64()],
            },
            MetricSamples {
                metric: "user".into(),
                values: vec![r.user.as_secs_f64()],
            },
            MetricSamples {
                metric: "sys".into(),
                values: vec![r.sys.as_secs_f64()],
            },
            MetricSamples {
                metric: "maxrss".into(),
                values: vec![r.maxrss_kib as f64],
            },
        ];
        for m in &self.extract {
            match self.extract_value(m, &r.stdout) {
                Ok(v) => out.push(MetricSamples {
                    metric: m.spec.name.clone(),
                    values: vec![v],
                }),
                Err(reason) => {
                    return RunOutcome::Failed {
                        reason: reason.to_string(),
                        stderr_tail: r.stderr_tail,
                        exit_code,
                    }
                }
            }
        }
        RunOutcome::Ok(out)
    }
}
