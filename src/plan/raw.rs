//! The plan file as TOML gives it, before validation: every value keeps
//! its position (`Spanned`) so that errors can name file:line:col, and
//! integers are read wide so that a huge one is "too large", not a type
//! error.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::config::kinds::KindDef;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlan {
    pub(super) name: Option<Spanned<String>>,
    pub(super) runs: Option<Spanned<WideInt>>,
    pub(super) warmup: Option<Spanned<WideInt>>,
    pub(super) order: Option<Spanned<String>>,
    pub(super) seed: Option<Spanned<WideInt>>,
    pub(super) timeout: Option<Spanned<toml::Value>>,
    pub(super) baseline: Option<Spanned<String>>,
    pub(super) setup: Option<Spanned<String>>,
    pub(super) teardown: Option<Spanned<String>>,
    /// Defaults of the workloads' own (see `plan::launch`).
    pub(super) shell: Option<Spanned<String>>,
    pub(super) prepare: Option<Spanned<String>>,
    pub(super) conclude: Option<Spanned<String>>,
    pub(super) monitors: Option<Vec<Spanned<String>>>,
    pub(super) monitor_interval: Option<Spanned<toml::Value>>,
    /// See `plan::telemetry`.
    pub(super) profile_hz: Option<Spanned<i64>>,
    pub(super) monitor_budget: Option<Spanned<String>>,
    pub(super) monitor_control: Option<Spanned<bool>>,
    pub(super) quick: Option<Spanned<RawQuick>>,
    /// Boots per kernel config (plans whose configs name kernels).
    pub(super) boots: Option<Spanned<WideInt>>,
    #[serde(default)]
    pub(super) config: Vec<Spanned<RawConfig>>,
    #[serde(default)]
    pub(super) workload: Vec<Spanned<RawWorkload>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQuick {
    pub(super) runs: Option<Spanned<WideInt>>,
    pub(super) warmup: Option<Spanned<WideInt>>,
    pub(super) boots: Option<Spanned<WideInt>>,
}

/// A count in the plan, read as any TOML integer however large, so that
/// one that does not fit its field is refused as "too large (at most N)"
/// rather than as a type error or a wrapped-around small number.
pub(super) struct WideInt(pub(super) i128);

impl<'de> Deserialize<'de> for WideInt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = WideInt;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E>(self, v: i64) -> Result<WideInt, E> {
                Ok(WideInt(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<WideInt, E> {
                Ok(WideInt(v.into()))
            }
            fn visit_i128<E>(self, v: i128) -> Result<WideInt, E> {
                Ok(WideInt(v))
            }
            fn visit_u128<E>(self, v: u128) -> Result<WideInt, E> {
                Ok(WideInt(i128::try_from(v).unwrap_or(i128::MAX)))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// One `[[config]]` as read. Its built-in kinds are not fields of their
/// own: every key that names a kind in `config::kinds::KINDS` is one, so a
/// kind declared there is a plan key here with nothing else to add (see
/// `raw_config` for how the keys are read).
#[derive(Clone)]
pub(super) struct RawConfig {
    pub(super) name: Spanned<String>,
    /// One config per value of a parameter (see `plan::matrix`).
    pub(super) matrix: Option<Spanned<toml::Table>>,
    /// Monitors only this config runs (on top of the plan's), e.g. to
    /// measure what monitoring itself costs.
    pub(super) monitors: Option<Vec<Spanned<String>>>,
    pub(super) setup: Option<Spanned<String>>,
    pub(super) teardown: Option<Spanned<String>>,
    /// The command line this config runs in place of each command
    /// workload's own (`ab 'CMD1' 'CMD2'`: one config per command).
    pub(super) command: Option<Spanned<String>>,
    pub(super) env: Option<BTreeMap<String, Spanned<toml::Value>>>,
    pub(super) workdir: Option<Spanned<String>>,
    /// The built-in kinds it declares with their plan values, in
    /// `KINDS`' order (the order they are entered), not the plan's.
    pub(super) kinds: Vec<(&'static KindDef, Spanned<toml::Value>)>,
    /// The kernel this config boots (its runs happen in a VM).
    pub(super) kernel: Option<Spanned<toml::Value>>,
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) name: Spanned<String>,
    /// One workload per value of a parameter (see `plan::matrix`).
    pub(super) matrix: Option<Spanned<toml::Table>>,
    pub(super) command: Option<Spanned<String>>,
    pub(super) builtin: Option<Spanned<String>>,
    pub(super) params: Option<Spanned<toml::Value>>,
    /// Parameters that replace those in `params` under `--quick`.
    pub(super) quick: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) metrics: Vec<Spanned<RawMetric>>,
    pub(super) timeout: Option<Spanned<toml::Value>>,
    pub(super) workdir: Option<Spanned<String>>,
    pub(super) shell: Option<Spanned<String>>,
    pub(super) prepare: Option<Spanned<String>>,
    pub(super) conclude: Option<Spanned<String>>,
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetric {
    pub(super) name: Spanned<String>,
    pub(super) regex: Spanned<String>,
    pub(super) unit: Option<String>,
    pub(super) direction: Option<Spanned<String>>,
}
