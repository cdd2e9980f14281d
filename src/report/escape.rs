//! Stored strings on their way out. Experiment names, labels, configs,
//! workloads, metric names, hosts, event messages, stderr tails and plan
//! text come from plan files, imported files and commands' output; any of
//! them may hold an escape sequence (which retitles or rewrites the
//! terminal), a newline (which splits a one-line message), markup or a
//! spreadsheet formula. Every output format passes them through one of the
//! functions here.
//!
//! Control characters are shown, not dropped, so that a reader sees that
//! the name holds one: `\n`, `\r`, `\t`, `\x1b` (C0 controls and DEL), and
//! `\u{9b}` for C1 controls, Unicode line and paragraph separators and the
//! bidirectional-text controls (which reorder what the terminal shows). A
//! backslash is left as it is, so escaping twice changes nothing
//! (`terminal_safe(terminal_safe(s)) == terminal_safe(s)`): a message may
//! be escaped where it is built and again where it is printed.

use std::fmt::Write as _;

// The one definition of what acts on a terminal and how it is shown lives
// in `sys::visible`, so that the analysis' one-line messages (below this
// floor) escape stored strings exactly as the renderers do.
pub(crate) use crate::sys::visible::acts;
pub use crate::sys::visible::{terminal_safe, terminal_safe_lines};

/// For the mail-ready text report, which is plain ASCII: [`terminal_safe`],
/// then any other non-ASCII character as '?'.
pub fn ascii(s: &str) -> String {
    terminal_safe(s)
        .chars()
        .map(|c| if c.is_ascii() { c } else { '?' })
        .collect()
}

/// A stored string as Markdown inline text (a heading, a table cell, a
/// list item) that renders as itself: [`terminal_safe`], `<`, `>` and `&`
/// as entities (so `<script>` is text, not HTML), and a backslash before
/// every character Markdown would read as syntax here: `\` `` ` `` `*` `_`
/// `[` `]` `|` (a table cell's end) `~` and `#`. Do not put the result in a
/// code span, where escapes are shown literally.
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in terminal_safe(s).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// [`markdown`] for the text of a list item (`- {text}`), which must not
/// begin a block of its own inside the item: its leading spaces are
/// written as `&#32;` (four would make a code block, one before `-` a
/// nested list), and a leading `-`, `+` (a nested list, or with `---` a
/// rule), or the `.` or `)` after leading digits and before a space (an
/// ordered list), gets a backslash, which renders as the character.
pub fn markdown_item(s: &str) -> String {
    let shown = markdown(s);
    let body = shown.trim_start_matches(' ');
    let mut out = "&#32;".repeat(shown.len() - body.len());
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    let mut after = body[digits..].chars();
    let marker = match (after.next(), after.next()) {
        (Some('-' | '+'), _) if digits == 0 => Some(0),
        (Some('.' | ')'), None | Some(' ')) if digits > 0 => Some(digits),
        _ => None,
    };
    match marker {
        Some(at) => {
            out.push_str(&body[..at]);
            out.push('\\');
            out.push_str(&body[at..]);
        }
        None => out.push_str(body),
    }
    out
}

/// True for a cell a spreadsheet shows as a number: a finite decimal such
/// as `-1.5`, `+3`, `2e-7`.
fn is_number(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E'))
        && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// A CSV cell that a spreadsheet cannot run: [`terminal_safe`], then, by
/// OWASP's rule for CSV injection, a single quote before a cell that starts
/// with `=`, `+`, `-` or `@` (tab and carriage return, the rule's other
/// two, are already shown as `\t` and `\r`) unless the cell is a number,
/// so that `-1.5` stays a number and `=cmd()` becomes the text `'=cmd()`.
/// Quoting of commas and quotes is the CSV writer's job.
pub fn csv_cell(s: &str) -> String {
    let t = terminal_safe(s);
    match t.chars().next() {
        Some('=' | '+' | '-' | '@') if !is_number(&t) => format!("'{t}"),
        _ => t,
    }
}

/// A serialized JSON text with the characters serde_json leaves raw that
/// still act on a terminal (DEL, C1 controls, line separators,
/// bidirectional controls) written as `\uXXXX` escapes. serde_json escapes
/// C0 controls itself; the others can only occur inside strings, where the
/// escape denotes the same character, so the JSON value is unchanged.
pub fn json_text(json: String) -> String {
    // Raw C0 characters in serde_json's output are its own whitespace.
    let left_raw = |c: char| c == '\x7f' || (!c.is_ascii() && acts(c));
    if !json.chars().any(left_raw) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if left_raw(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_shows_controls_on_one_line() {
        assert_eq!(
            terminal_safe("a\x1b]0;pwned\x07b\nc\rd\te\x7f\u{9b}f\u{202e}g"),
            "a\\x1b]0;pwned\\x07b\\nc\\rd\\te\\x7f\\u{9b}f\\u{202e}g"
        );
        assert_eq!(terminal_safe("caf\u{e9} 1/2 <x>"), "caf\u{e9} 1/2 <x>");
        let once = terminal_safe("x\x1by\\n");
        assert_eq!(terminal_safe(&once), once);
    }

    #[test]
    fn lines_keep_their_breaks() {
        assert_eq!(terminal_safe_lines("a\x1b\nb\r\n"), "a\\x1b\nb\\r\n");
        assert_eq!(terminal_safe_lines("plain\n"), "plain\n");
    }

    #[test]
    fn ascii_is_printable_ascii() {
        assert_eq!(ascii("a\x1bb\u{e9}"), "a\\x1bb?");
    }

    #[test]
    fn markdown_shows_markup_as_text() {
        assert_eq!(
            markdown("<script>a|b`c\\d[e](f)\n"),
            "&lt;script&gt;a\\|b\\`c\\\\d\\[e\\](f)\\\\n"
        );
        // What would start a (nested) list item, a rule or a code block,
        // and what would not.
        assert_eq!(markdown_item("1. injected"), "1\\. injected");
        assert_eq!(markdown_item("12) x"), "12\\) x");
        assert_eq!(markdown_item("- x"), "\\- x");
        assert_eq!(markdown_item("---"), "\\---");
        assert_eq!(markdown_item("+"), "\\+");
        assert_eq!(markdown_item(" - x"), "&#32;\\- x");
        assert_eq!(markdown_item("    code"), "&#32;&#32;&#32;&#32;code");
        for text in ["wall, b vs a", "1.5x", "2-way", "v1. x"] {
            assert_eq!(markdown_item(text), text);
        }
        assert_eq!(markdown("-"), "-");
    }

    #[test]
    fn csv_cells_cannot_run_but_numbers_stay_numbers() {
        assert_eq!(csv_cell("=cmd()"), "'=cmd()");
        assert_eq!(csv_cell("+1+2"), "'+1+2");
        assert_eq!(csv_cell("-x"), "'-x");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("\t=x"), "\\t=x");
        for n in ["-1.5", "+3", "2e-7", "-0", "12"] {
            assert_eq!(csv_cell(n), n);
        }
        assert_eq!(csv_cell("-inf"), "'-inf");
        assert_eq!(csv_cell("plain name"), "plain name");
    }

    #[test]
    fn json_text_escapes_what_serde_json_leaves() {
        let raw = serde_json::to_string_pretty(&["a\x7fb\u{9b}c\u{202e}\x1b"]).unwrap();
        let safe = json_text(raw.clone());
        assert!(
            safe.bytes()
                .all(|b| (0x20..0x7f).contains(&b) || b == b'\n'),
            "{safe}"
        );
        assert_eq!(safe.lines().count(), raw.lines().count());
        let back: Vec<String> = serde_json::from_str(&safe).unwrap();
        let orig: Vec<String> = serde_json::from_str(&raw).unwrap();
        assert_eq!(back, orig);
    }
}
