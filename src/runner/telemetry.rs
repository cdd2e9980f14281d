//! Before the first block: what the experiment records once about its
//! monitors (a counters monitor without hardware counters), and the
//! profile's rate, chosen from the measured cost of one sample
//! (`monitor::profile::calibrate`).

use anyhow::Result;

use super::Prepared;
use crate::monitor::profile::calibrate::{self, RateChoice};
use crate::store::Store;

/// Events of this kind hold the profile rate line; the report's monitor
/// overhead section prints them.
pub const PROFILE_EVENT: &str = "profile";

/// Rate used when the calibration itself fails and the plan names none:
/// low enough to stay within half a percent even at the 20 us a sample
/// costs on a VM without a PMU.
const FALLBACK_HZ: u64 = 100;

/// Record monitor notes and set the profile's rate. On `--resume` the rate
/// recorded the first time is used again, so every run of an experiment
/// samples at one rate.
pub(crate) fn before_first_block(store: &Store, exp: i64, p: &mut Prepared) -> Result<()> {
    let recorded = store.event_messages(exp, "monitor")?;
    let mut notes: Vec<String> = Vec::new();
    for m in p
        .monitors
        .iter_mut()
        .chain(p.config_monitors.iter_mut().flatten())
    {
        for n in m.notes() {
            if !recorded.contains(&n) && !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    for n in &notes {
        store.add_event(exp, "monitor", n)?;
    }

    let profiles = p
        .monitors
        .iter()
        .chain(p.config_monitors.iter().flatten())
        .filter(|m| m.name() == "profile")
        .count();
    if profiles == 0 {
        return Ok(());
    }
    let before = store.event_messages(exp, PROFILE_EVENT)?;
    let hz = match before.first().and_then(|l| rate_of(l)) {
        Some(hz) => hz,
        None => {
            let t = &p.plan.telemetry;
            let (hz, line) = match calibrate::measure() {
                Ok(cost) => {
                    let c = RateChoice::choose(cost.per_sample_s, t.budget, t.profile_hz);
                    if c.over_budget() {
                        crate::sys::stderr::say!(
                            "warning: profile_hz {} is predicted to cost {:.2}% of a CPU here ({:.1} us a sample), above the budget of {:.2}%; sampling at {} Hz as the plan says",
                            c.hz,
                            c.predicted * 100.0,
                            cost.per_sample_s * 1e6,
                            c.budget * 100.0,
                            c.hz
                        );
                    }
                    (c.hz, c.describe(&cost))
                }
                Err(e) => {
                    let hz = t.profile_hz.unwrap_or(FALLBACK_HZ);
                    (
                        hz,
                        format!(
                            "profile rate {hz} Hz: the cost of a sample could not be measured ({e}), so the overhead is not predicted"
                        ),
                    )
                }
            };
            store.add_event(exp, PROFILE_EVENT, &line)?;
            hz
        }
    };
    for m in p
        .monitors
        .iter_mut()
        .chain(p.config_monitors.iter_mut().flatten())
    {
        m.set_rate_hz(hz);
    }
    Ok(())
}

/// The rate of a recorded profile line: "profile rate 250 Hz ...".
fn rate_of(line: &str) -> Option<u64> {
    line.strip_prefix("profile rate ")?
        .split_once(" Hz")?
        .0
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rate_is_read_back() {
        assert_eq!(
            super::rate_of("profile rate 250 Hz (the highest ...)"),
            Some(250)
        );
        assert_eq!(super::rate_of("something else"), None);
    }
}
