//! Built-in workloads, registered by name.
//!
//! `validate` is called while the plan loads (no side effects); `build`
//! constructs the workload when the experiment starts.

use super::Workload;

/// Every built-in workload name, for messages.
pub const BUILTINS: &[&str] = &[];

fn unknown(name: &str) -> String {
    if BUILTINS.is_empty() {
        format!("unknown builtin '{name}': this build has no built-in workloads")
    } else {
        format!(
            "unknown builtin '{name}': known are {}",
            BUILTINS.join(", ")
        )
    }
}

/// Check a builtin's name and parameters without side effects.
pub fn validate(name: &str, params: &toml::Value) -> Result<(), String> {
    build(name, params, false).map(|_| ())
}

/// Construct a builtin; `quick` scales it down for `--quick` runs.
pub fn build(name: &str, params: &toml::Value, quick: bool) -> Result<Box<dyn Workload>, String> {
    let _ = (params, quick);
    Err(unknown(name))
}
