//! How counts are printed: "1 config", "2 configs", never "1 configs".

/// `n` and `noun`, the noun in the plural unless `n` is one (nouns whose
/// plural is not `noun + "s"` are given with [`count_as`]).
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", plural(n))
}

/// `n` and `one` or `many`.
pub fn count_as(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "s" unless `n` is one.
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The runs' tally every report format's header gives: "N ok, M failed",
/// with the runs left out between them when there are any (those of a
/// boot that failed its machine audit: they succeeded, but are not
/// counted as ok, as the statistics do not use them).
pub fn runs_tally(ok: usize, left_out: usize, failed: usize) -> String {
    match left_out {
        0 => format!("{ok} ok, {failed} failed"),
        n => format!("{ok} ok, {n} left out (machine audit failed), {failed} failed"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular() {
        assert_eq!(super::count(1, "config"), "1 config");
        assert_eq!(super::count(0, "config"), "0 configs");
        assert_eq!(super::count(2, "run"), "2 runs");
        assert_eq!(super::count_as(1, "analysis", "analyses"), "1 analysis");
    }

    #[test]
    fn left_out_runs_are_named_only_when_there_are_some() {
        assert_eq!(super::runs_tally(12, 0, 1), "12 ok, 1 failed");
        assert_eq!(
            super::runs_tally(12, 3, 0),
            "12 ok, 3 left out (machine audit failed), 0 failed"
        );
    }
}
