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

/// One built-in workload: the one declaration the plan's validation and
/// the runner's construction read. Adding one is its file and one entry
/// in [`BUILTINS`].
pub struct Builtin {
    /// Its name in `builtin = "NAME"`.
    pub name: &'static str,
    /// Build it from its `params` (with `BuildContext::default()` only
    /// checked: no side effects).
    pub build: BuildFn,
    /// Typical `params` (TOML, inline) that validate on any machine: the
    /// registry's tests generate a plan with them.
    pub example: &'static str,
    /// The document that gives its parameters.
    pub doc: &'static str,
}

/// How a built-in is made from its `params`.
pub type BuildFn = fn(&toml::Value, &BuildContext) -> Result<Box<dyn Workload>, Error>;

/// The box every `build` returns: one place for the coercion.
fn boxed<W: Workload + 'static>(w: Result<W, Error>) -> Result<Box<dyn Workload>, Error> {
    Ok(Box::new(w?))
}

/// Every built-in workload, in the order messages list them.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "compile",
        build: |p, _| boxed(crate::workload::compile::CompileWorkload::from_params(p)),
        example: "{ files = 10, functions = 2 }",
        doc: "docs/configs.md",
    },
    Builtin {
        name: "compress",
        build: |p, _| boxed(crate::workload::compress::CompressWorkload::from_params(p)),
        example: "{ size_mb = 1 }",
        doc: "docs/configs.md",
    },
    Builtin {
        name: "fsops",
        build: |p, ctx| {
            let w = crate::workload::fsops::FsopsWorkload::from_params(p)?;
            boxed(Ok(match &ctx.journal {
                Some(j) => w.with_journal(j.clone()),
                None => w,
            }))
        },
        example: "{}",
        doc: "docs/configs.md",
    },
    Builtin {
        name: "memsweep",
        build: |p, _| boxed(crate::workload::memsweep::MemsweepWorkload::from_params(p)),
        example: r#"{ working_set = "1M", duration = "1s" }"#,
        doc: "docs/monitors.md",
    },
    Builtin {
        name: "micro",
        build: |p, _| {
            boxed(
                crate::micro::workload::MicroWorkload::from_params(p)
                    .map_err(|e| Error::bad(e.to_string())),
            )
        },
        example: r#"{ filter = ["proc.null_call"] }"#,
        doc: "docs/micro.md",
    },
    Builtin {
        name: "spin",
        build: |p, _| boxed(crate::workload::spin::SpinWorkload::from_params(p)),
        example: "{}",
        doc: "docs/monitors.md",
    },
    Builtin {
        name: "transport",
        build: |p, _| {
            boxed(
                crate::transport::workload::TransportWorkload::from_params(p)
                    .map_err(|e| Error::bad(format!("{e:#}"))),
            )
        },
        example: "{}",
        doc: "docs/transport.md",
    },
];

/// Every built-in's name, in [`BUILTINS`]' order.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|b| b.name).collect()
}

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
    match BUILTINS.iter().find(|b| b.name == name) {
        Some(b) => (b.build)(params, ctx),
        None => Err(Error::bad(format!(
            "unknown builtin '{name}': known are {}",
            names().join(", ")
        ))),
    }
}
