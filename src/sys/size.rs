//! Sizes as written in plans and sysfs: "1G", "512m", "1.5GiB", "4096 K",
//! "48K", "65536".

/// Parse a size in bytes: an integer or decimal number with an optional
/// binary suffix, K, M, G or T (also KB/KiB and so on, any case; all powers
/// of 1024), or B, with or without a space before it. None for anything
/// else, and for a size of 2^64 bytes or more.
///
/// One grammar for every caller: the memory_limit and swap kinds, the
/// memsweep workload, the kernel configs' `mem`, and the cache sizes the
/// micro suite reads from sysfs ("48K"). A fractional byte count rounds to
/// the nearest byte.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = unit.trim().to_ascii_uppercase();
    let shift = match unit.as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return None,
    };
    if num.is_empty() || num.matches('.').count() > 1 {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let bytes = n * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return None;
    }
    Some(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn every_callers_grammar() {
        // memory_limit / swap / kernel mem: decimals, binary suffixes, spaces.
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_size("4096 K"), Some(4 << 20));
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size(" 2 tb "), Some(2 << 40));
        assert_eq!(parse_size("100B"), Some(100));
        // memsweep: "iB" and "B" suffixes, plain bytes.
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("64KB"), Some(64 << 10));
        assert_eq!(parse_size("4096"), Some(4096));
        // sysfs cache sizes (micro suite).
        assert_eq!(parse_size("48K"), Some(48 * 1024));
        assert_eq!(parse_size("2048K"), Some(2 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("0.5K"), Some(512));
        assert_eq!(parse_size(".5K"), Some(512));
    }

    #[test]
    fn refuses() {
        for bad in [
            "",
            "G",
            "1X",
            "12Q",
            "x",
            "1..2G",
            "-1G",
            "1 G B",
            "1e3",
            "K1",
            "20000000T",
        ] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
