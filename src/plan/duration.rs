//! Durations as plans write them: `90`, `1.5`, `"250ms"`, `"90s"`, `"5m"`,
//! `"1h"`. Shared by the plan's own keys and the config tables parsed
//! beside it (`kernel.boot_timeout`).

use std::time::Duration;

use crate::error::Error;

/// "90", 90, 1.5, "250ms", "90s", "5m", "1h" -> Duration. Refuses what is
/// not positive or does not fit a `Duration`; callers bound it further.
pub fn parse_duration(v: &toml::Value) -> Result<Duration, Error> {
    let secs = seconds(v)?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| Error::bad(format!("duration {} is too large", as_written(v))))
}

/// A duration's seconds: positive, possibly infinite.
pub(super) fn seconds(v: &toml::Value) -> Result<f64, Error> {
    let secs = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => {
            let s = s.trim();
            let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
                (n, 0.001)
            } else if let Some(n) = s.strip_suffix('s') {
                (n, 1.0)
            } else if let Some(n) = s.strip_suffix('m') {
                (n, 60.0)
            } else if let Some(n) = s.strip_suffix('h') {
                (n, 3600.0)
            } else {
                (s, 1.0)
            };
            num.trim().parse::<f64>().map_err(|_| {
                Error::bad(format!(
                    "'{s}' is not a duration (use e.g. 90, \"90s\", \"250ms\", \"5m\")"
                ))
            })? * mult
        }
        other => {
            return Err(Error::bad(format!(
                "expected a duration, got {}",
                other.type_str()
            )))
        }
    };
    if secs.is_nan() || secs <= 0.0 {
        return Err(Error::bad(format!(
            "duration must be positive, got {}",
            as_written(v)
        )));
    }
    Ok(secs)
}

/// A value for a message, floats in short form (`1e300`, not 301 digits).
pub(super) fn as_written(v: &toml::Value) -> String {
    match v {
        toml::Value::Float(f) => format!("{f:?}"),
        other => other.to_string(),
    }
}
