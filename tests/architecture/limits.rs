//! Size limits on `src/` (docs/ARCHITECTURE.md, "Layers"): no file over
//! `MAX_FILE_LINES` lines, tests included, and no function over
//! `MAX_FN_LINES` lines, counted from the line of its `fn` to the line of
//! the brace that closes its body (a function inside another counts in
//! both). A file or function that needs more is split by job.
//!
//! Functions are found in the code with comments and literals blanked
//! (`super::blank_comments_and_strings`), so a brace in a string, a
//! character or a comment is never counted. `fn` followed by a name starts
//! an item; `fn(` is a pointer type and `fn $name` a macro's pattern, not
//! items. An item that ends in `;` before any body (a trait's declaration)
//! has no lines to count.

use std::path::Path;

pub const MAX_FILE_LINES: usize = 600;
pub const MAX_FN_LINES: usize = 150;

/// Files or functions allowed past a limit, each with the reason
/// (file, function or "" for the file itself, reason). None today: an
/// entry that is no longer over its limit fails the test too.
pub const EXEMPT: &[(&str, &str, &str)] = &[];

/// One function: its name, the line its `fn` is on and its length in lines.
#[derive(Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub line: usize,
    pub lines: usize,
}

/// Every item function in `code` (already blanked), in source order.
pub fn functions(code: &str) -> Vec<Function> {
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let line_of = |at: usize| 1 + b[..at].iter().filter(|&&c| c == b'\n').count();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(n) = code[i..].find("fn") {
        let at = i + n;
        i = at + 2;
        let word = (at == 0 || !ident(b[at - 1]))
            && b.get(at + 2).is_some_and(|c| c.is_ascii_whitespace());
        if !word {
            continue;
        }
        let start = at
            + 2
            + b[at + 2..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        let len = b[start..].iter().take_while(|&&c| ident(c)).count();
        if len == 0 || b[start].is_ascii_digit() {
            continue;
        }
        let name = code[start..start + len].to_string();
        let Some(open) = body_start(b, start + len) else {
            continue;
        };
        let Some(close) = matching_brace(b, open) else {
            continue;
        };
        let (first, last) = (line_of(at), line_of(close));
        out.push(Function {
            name,
            line: first,
            lines: last - first + 1,
        });
    }
    out
}

/// The `{` that opens the body of a signature starting at `from`, or None
/// when a `;` ends it first. Brackets and parentheses are skipped so that
/// `[u8; 4]` in a parameter's type does not end the signature.
fn body_start(b: &[u8], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(from) {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'{' if depth == 0 => return Some(j),
            b';' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The `}` that closes the `{` at `open`.
fn matching_brace(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every file and function over its limit under `root/src`, one line each
/// ("src/a.rs: 723 lines (limit 600)", "src/a.rs:40: fn f is 151 lines
/// (limit 150)"), and the exemptions that were used.
pub fn violations(root: &Path, files: &[String]) -> (Vec<String>, Vec<(String, String)>) {
    let mut msg = Vec::new();
    let mut used = Vec::new();
    let exempt = |file: &str, item: &str| EXEMPT.iter().any(|(f, i, _)| *f == file && *i == item);
    for file in files {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let n = text.lines().count();
        if n > MAX_FILE_LINES {
            if exempt(file, "") {
                used.push((file.clone(), String::new()));
            } else {
                msg.push(format!("{file}: {n} lines (limit {MAX_FILE_LINES})"));
            }
        }
        for f in functions(&super::blank_comments_and_strings(&text)) {
            if f.lines > MAX_FN_LINES {
                if exempt(file, &f.name) {
                    used.push((file.clone(), f.name));
                } else {
                    msg.push(format!(
                        "{file}:{}: fn {} is {} lines (limit {MAX_FN_LINES})",
                        f.line, f.name, f.lines
                    ));
                }
            }
        }
    }
    (msg, used)
}

/// No file in `src/` over 600 lines and no function over 150 (how they are
/// counted: this module's comment), so each can be read whole;
/// names every file and function past its limit with its line and length.
#[test]
fn no_source_file_over_600_lines_and_no_function_over_150() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    super::collect_rs(&root.join("src"), &mut paths);
    let mut files: Vec<String> = paths
        .iter()
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let (msg, used) = violations(root, &files);
    assert!(
        msg.is_empty(),
        "too long, split by job:\n{}",
        msg.join("\n")
    );
    for (file, item, _) in EXEMPT {
        assert!(
            used.iter().any(|(f, i)| f == file && i == item),
            "{file} {item} is within its limit now: remove it from EXEMPT"
        );
    }
}

/// The finder counts only item bodies: not a declaration, a pointer type,
/// a macro's pattern, nor `fn` or a brace in a string, character or comment.
#[test]
fn the_function_finder_counts_bodies_only_and_skips_text() {
    let code = r#"
trait T { fn declared(&self, x: [u8; 4]); }
fn outer(f: fn(u8) -> u8) -> impl Fn() {
    let s = "fn not_one() { {";
    let c = '{';
    // fn in_comment() {
    fn inner() {
    }
    move || ()
}
macro_rules! m { ($name:ident) => { fn $name() {} }; }
"#;
    let got = functions(&super::blank_comments_and_strings(code));
    let f = |name: &str, line, lines| Function {
        name: name.to_string(),
        line,
        lines,
    };
    assert_eq!(got, vec![f("outer", 3, 8), f("inner", 7, 2)]);
}
