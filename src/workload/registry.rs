//! Built-in workloads, registered by name.
//!
//! `validate` is called while the plan loads (no side effects); `build`
//! constructs the workload when the experiment starts.

use super::Workload;
use crate::config::journal::JournalHandle;

/// Every built-in workload name, for messages.
pub const BUILTINS: &[&str] = &["compile", "compress", "fsops", "memsweep", "transport"];

/// What some built-ins need from the experiment.
#[derive(Clone, Default)]
pub struct BuildContext {
    /// The state journal, for built-ins that change the system (fsops
    /// creates loop devices and mounts). None while only validating.
    pub journal: Option<JournalHandle>,
}

/// Check a builtin's name and parameters without side effects.
pub fn validate(name: &str, params: &toml::Value) -> Result<(), String> {
    build(name, params, &BuildContext::default()).map(|_| ())
}

/// Construct a builtin from its parameters.
pub fn build(
    name: &str,
    params: &toml::Value,
    ctx: &BuildContext,
) -> Result<Box<dyn Workload>, String> {
    Ok(match name {
        "compile" => Box::new(super::compile::CompileWorkload::from_params(params)?),
        "compress" => Box::new(super::compress::CompressWorkload::from_params(params)?),
        "fsops" => {
            let w = super::fsops::FsopsWorkload::from_params(params)?;
            Box::new(match &ctx.journal {
                Some(j) => w.with_journal(j.clone()),
                None => w,
            })
        }
        "memsweep" => Box::new(super::memsweep::MemsweepWorkload::from_params(params)?),
        other => {
            return Err(format!(
                "unknown builtin '{other}': known are {}",
                BUILTINS.join(", ")
            ))
        }
    })
}
