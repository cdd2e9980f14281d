//! JSON: every raw sample of every run and every statistic, and for
//! kernel configs every boot.

use crate::analysis::view::{Raw, ReportView};
use crate::analysis::Analysis;

/// The JSON format: the stored units throughout, so the raw samples and
/// the statistics agree.
pub struct Json;

impl super::format::ReportFormat for Json {
    fn report(&self, v: &ReportView, _: &super::ReportOptions) -> anyhow::Result<String> {
        render(&v.raw, &v.stored)
    }
}

/// `a` with the raw records it was computed from.
pub fn render(data: &Raw, a: &Analysis) -> anyhow::Result<String> {
    let mut v = serde_json::json!({
        "format": "sysdelta-report-1",
        "experiment": &data.info,
        "metrics": &data.metrics,
        "runs": &data.runs,
        "events": &data.events,
        "analysis": a,
    });
    // Kernel configs: every boot as stored, console tails whole. Absent
    // for host experiments, whose report stays as it was.
    if !data.boots.is_empty() {
        v["boots"] = serde_json::to_value(&data.boots)?;
    }
    // One time format in the whole file: the store keeps run and boot
    // starts as Unix seconds, experiments and events as RFC 3339.
    for list in ["runs", "boots"] {
        if let Some(items) = v[list].as_array_mut() {
            for item in items {
                let t = item["started_at"].as_f64();
                item["started_at"] = rfc3339(t).into();
            }
        }
    }
    // serde_json escapes C0 controls; json_text the DEL and C1 controls
    // it leaves raw, so `cat report.json` is terminal-safe too.
    Ok(super::escape::json_text(serde_json::to_string_pretty(&v)?) + "\n")
}

/// Unix seconds as RFC 3339 UTC with milliseconds; None (null) for an
/// unknown time (0: imported runs have none).
fn rfc3339(t: Option<f64>) -> Option<String> {
    let t = t.filter(|t| t.is_finite() && *t > 0.0)?;
    let ms = (t * 1000.0).round() as i64;
    let (secs, ms) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_of_unix_seconds() {
        assert_eq!(
            super::rfc3339(Some(1_700_000_000.25)).as_deref(),
            Some("2023-11-14T22:13:20.250Z")
        );
        assert_eq!(
            super::rfc3339(Some(951_782_400.0)).as_deref(),
            Some("2000-02-29T00:00:00.000Z")
        );
        assert_eq!(super::rfc3339(Some(0.0)), None);
    }
}
