//! What a terminal would act on rather than show, and its visible form:
//! the one definition every stored string passes through on its way to a
//! terminal, a one-line message or a report (`report::escape` builds the
//! markdown, CSV and JSON forms on it). Control characters are shown, not
//! dropped: `\n`, `\r`, `\t`, `\x1b`, `\u{9b}`; a backslash is left as it
//! is, so escaping twice changes nothing.

use std::fmt::Write as _;

/// True for a character a terminal or a renderer would act on rather than
/// show: Unicode's Cc (C0, DEL, C1), the line and paragraph separators, and
/// the bidirectional controls (LRM, RLM, ALM, embeddings, overrides and
/// isolates).
pub fn acts(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// The visible form of a character for which [`acts`] holds.
fn push_visible(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

fn escape_where(s: &str, escape: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if escape(c) {
            push_visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` on one line with every control character shown visibly (see the
/// module doc): safe to print on a terminal, in an error message or a
/// table cell. Other characters, non-ASCII letters included, are kept.
pub fn terminal_safe(s: &str) -> String {
    escape_where(s, acts)
}

/// [`terminal_safe`] for a whole rendered text (a report, a table) whose
/// own line breaks are kept: every control character but '\n' is shown.
/// Rendering escapes each stored string already; this is the last line of
/// defence for any string a renderer printed as it was.
pub fn terminal_safe_lines(s: &str) -> String {
    if !s.chars().any(|c| c != '\n' && acts(c)) {
        return s.to_string();
    }
    escape_where(s, |c| c != '\n' && acts(c))
}

/// The widest a table column is padded to. `format!`'s `{:<w$}` panics
/// (exit 101) for a width above 65,535, and a store's writer can make a
/// name that long; such a name is printed whole past its column instead.
pub const WIDEST_COLUMN: usize = 1000;

/// A column's width for padding: `n`, at most [`WIDEST_COLUMN`].
pub fn column(n: usize) -> usize {
    n.min(WIDEST_COLUMN)
}
