//! Times as UTC calendar dates, with no time-zone database: what the
//! store writes (`%Y-%m-%dT%H:%M:%SZ`, as its SQL `strftime` does) and
//! what JSON reports carry (RFC 3339 with milliseconds).

/// The UTC date and time of `secs` Unix seconds: (year, month, day, hour,
/// minute, second), proleptic Gregorian, by H. Hinnant's
/// `civil_from_days` (exact for every i64 day count in range).
pub fn civil(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `secs` as the store writes a time: `2023-11-14T22:13:20Z`.
pub fn seconds(secs: i64) -> String {
    let (y, m, d, hh, mm, ss) = civil(secs);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// Now, as the store writes a time.
pub fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    seconds(secs)
}

#[cfg(test)]
mod tests {
    /// SQLite's `strftime('%Y-%m-%dT%H:%M:%SZ', S, 'unixepoch')` of the same
    /// seconds (computed there, written here), a leap day and the epoch.
    #[test]
    fn seconds_as_sqlite_writes_them() {
        assert_eq!(super::seconds(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(super::seconds(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::seconds(4_107_542_399), "2100-02-28T23:59:59Z");
    }
}
