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

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular() {
        assert_eq!(super::count(1, "config"), "1 config");
        assert_eq!(super::count(0, "config"), "0 configs");
        assert_eq!(super::count(2, "run"), "2 runs");
        assert_eq!(super::count_as(1, "analysis", "analyses"), "1 analysis");
    }
}
