//! Bounds on a plan's numbers and durations, and on the command line's
//! overrides: each error names the field, its position and the bound.

use std::time::Duration;

use toml::Spanned;

use super::duration::{as_written, seconds};
use super::model::{MAX_TIMEOUT, MIN_TIMEOUT};
use super::position::Origin;
use super::raw::WideInt;
use crate::error::Error;

/// A plan's integer `what` in `min..=max`; the error names the field and
/// the bound it crosses.
pub(super) fn bounded<T>(
    origin: &Origin,
    v: &Spanned<WideInt>,
    what: &str,
    min: T,
    max: T,
) -> Result<T, Error>
where
    T: Copy + Into<i128> + TryFrom<i128> + std::fmt::Display,
{
    let n = v.get_ref().0;
    let at = |msg: String| origin.bad_at(v.span().start, msg);
    if n < min.into() {
        return Err(at(format!("{what} must be at least {min}, got {n}")));
    }
    match T::try_from(n) {
        Ok(t) if n <= max.into() => Ok(t),
        _ => Err(at(format!("{what} is too large (at most {max}), got {n}"))),
    }
}

/// A CLI count override `flag` in `min..=max`.
pub(super) fn flag_bounded(flag: &str, n: u32, min: u32, max: u32) -> Result<u32, Error> {
    if n < min {
        return Err(Error::bad(format!(
            "{flag} must be at least {min}, got {n}"
        )));
    }
    if n > max {
        return Err(Error::bad(format!(
            "{flag} is too large (at most {max}), got {n}"
        )));
    }
    Ok(n)
}

/// The duration `what` in `min..=max`, or an error naming its position,
/// the field and the bound.
pub(super) fn duration_at(
    origin: &Origin,
    v: &Spanned<toml::Value>,
    what: &str,
    min: Duration,
    max: Duration,
) -> Result<Duration, Error> {
    let at = |msg: String| origin.bad_at(v.span().start, msg);
    let written = as_written(v.get_ref());
    let secs = seconds(v.get_ref()).map_err(|m| at(format!("{what}: {m}")))?;
    if secs > max.as_secs_f64() {
        return Err(at(format!(
            "{what} is too large (at most {}s), got {written}",
            max.as_secs()
        )));
    }
    let d = Duration::from_secs_f64(secs); // at most `max`: fits
    if d < min {
        return Err(at(format!(
            "{what} must be at least {min:?}, got {written}"
        )));
    }
    Ok(d)
}

pub(super) fn timeout_at(origin: &Origin, v: &Spanned<toml::Value>) -> Result<Duration, Error> {
    duration_at(origin, v, "timeout", MIN_TIMEOUT, MAX_TIMEOUT)
}
