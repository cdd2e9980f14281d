//! Byte offsets in a plan's text to `file:line:col` for error messages.

use crate::error::Error;

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `msg` with its lines trimmed and joined by "; ".
pub fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Where a plan came from, for messages: a file path or the CLI shorthand.
#[derive(Clone, Debug)]
pub struct Origin {
    pub name: String,
    pub text: String,
}

impl Origin {
    /// "`name:line:col: msg`" for a byte span start, on one line: a
    /// message of several lines (from a library) has them joined.
    pub fn at(&self, offset: usize, msg: impl std::fmt::Display) -> String {
        let (l, c) = line_col(&self.text, offset);
        format!("{}:{}:{}: {}", self.name, l, c, one_line(&msg.to_string()))
    }

    /// [`Origin::at`] as bad input.
    pub fn bad_at(&self, offset: usize, msg: impl std::fmt::Display) -> Error {
        Error::bad(self.at(offset, msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_one_based_line_and_column() {
        let t = "a = 1\nbb = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        assert_eq!(line_col(t, 8), (2, 3));
        assert_eq!(line_col(t, 999), (3, 1));
    }

    #[test]
    fn messages_are_one_line() {
        let o = Origin {
            name: "p.toml".into(),
            text: "a = 1\n".into(),
        };
        assert_eq!(o.at(0, "first\n   second\n\n"), "p.toml:1:1: first; second");
    }
}
