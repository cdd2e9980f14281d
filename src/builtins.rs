//! Built-in workloads, registered by name: the one place that knows every
//! implementation (the generic ones in `workload`, `micro` and
//! `transport`), above all three, so none of them needs to know the
//! others and the plan can validate a built-in while it loads.
//!
//! `validate` is called while the plan loads (no side effects); `build`
//! constructs the workload when the experiment starts.

use crate::config::journal::JournalHandle;
use crate::error::Error;
use crate::workload::Workload;

/// Every built-in workload name, for messages.
pub const BUILTINS: &[&str] = &[
    "compile",
    "compress",
    "fsops",
    "memsweep",
    "micro",
    "spin",
    "transport",
];

/// What some built-ins need from the experiment.
#[derive(Clone, Default)]
pub struct BuildContext {
    /// The state journal, for built-ins that change the system (fsops
    /// creates loop devices and mounts). None while only validating.
    pub journal: Option<JournalHandle>,
}

/// Check a builtin's name and parameters without side effects.
pub fn validate(name: &str, params: &toml::Value) -> Result<(), Error> {
    build(name, params, &BuildContext::default()).map(|_| ())
}

/// Construct a builtin from its parameters.
pub fn build(
    name: &str,
    params: &toml::Value,
    ctx: &BuildContext,
) -> Result<Box<dyn Workload>, Error> {
    Ok(match name {
        "compile" => Box::new(crate::workload::compile::CompileWorkload::from_params(
            params,
        )?),
        "compress" => Box::new(crate::workload::compress::CompressWorkload::from_params(
            params,
        )?),
        "fsops" => {
            let w = crate::workload::fsops::FsopsWorkload::from_params(params)?;
            Box::new(match &ctx.journal {
                Some(j) => w.with_journal(j.clone()),
                None => w,
            })
        }
        "memsweep" => Box::new(crate::workload::memsweep::MemsweepWorkload::from_params(
            params,
        )?),
        "micro" => Box::new(
            crate::micro::workload::MicroWorkload::from_params(params)
                .map_err(|e| Error::bad(e.to_string()))?,
        ),
        "spin" => Box::new(crate::workload::spin::SpinWorkload::from_params(params)?),
        "transport" => Box::new(
            crate::transport::workload::TransportWorkload::from_params(params)
                .map_err(|e| Error::bad(format!("{e:#}")))?,
        ),
        other => {
            return Err(Error::bad(format!(
                "unknown builtin '{other}': known are {}",
                BUILTINS.join(", ")
            )))
        }
    })
}
