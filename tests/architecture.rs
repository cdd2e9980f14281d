//! The import structure of `src/`: no two files may import each other,
//! directly or around a circle, so that each file can be read, tested and
//! changed with only what is below it in mind (docs/ARCHITECTURE.md,
//! "Layers").
//!
//! An import is a `crate::` or `super::` path anywhere in a file's code
//! (use declarations and paths in expressions alike), outside `#[cfg(test)]`
//! items, comments and string literals. It points at the file of the longest
//! module prefix it names: `crate::transport::pair::run_pair` at
//! `src/transport/pair.rs`, `super::Kind` in `src/transport/step.rs` at
//! `src/transport/mod.rs`. Paths relative to the current module (`step::x`
//! in a `mod.rs`) are not counted: they name a child, which is below.
//!
//! The library's lines only: `src/main.rs` is the binary's crate root and
//! reaches the library as `sysdelta::`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

// The size limits on src/ (files and functions) and their tests.
#[path = "architecture/limits.rs"]
mod limits;

/// Imports that close a circle today, each in a file that other work is
/// changing while this test was written; the circle is left for that work
/// to break. Every other circle fails the test, and so does an entry here
/// that no longer closes one (remove it then).
const KNOWN: &[(&str, &str, &str)] = &[];

#[test]
fn no_import_cycle_between_files() {
    let graph = file_graph();
    let mut known_used = BTreeSet::new();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, tos) in &graph.edges {
        for to in tos {
            if KNOWN.iter().any(|(f, t, _)| f == from && t == to) {
                known_used.insert((from.as_str(), to.as_str()));
            } else {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    let cycles = strongly_connected(&graph.files, &edges);
    let mut msg = String::new();
    for c in &cycles {
        msg.push_str("import cycle between files:\n");
        for from in c {
            for to in edges.get(from.as_str()).into_iter().flatten() {
                if c.contains(&to.to_string()) {
                    msg.push_str(&format!("  {from} -> {to}\n"));
                }
            }
        }
    }
    assert!(msg.is_empty(), "{msg}");
    for (f, t, _) in KNOWN {
        assert!(
            known_used.contains(&(*f, *t)) && reaches(&graph.edges, t, f),
            "{f} -> {t} no longer closes a circle: remove it from KNOWN"
        );
    }
}

/// Whether `to` can be reached from `from` along imports.
fn reaches(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(v) = todo.pop() {
        if v == to {
            return true;
        }
        if seen.insert(v.clone()) {
            todo.extend(edges.get(&v).into_iter().flatten().cloned());
        }
    }
    false
}

/// The top-level modules, ground floor first (docs/ARCHITECTURE.md,
/// "Layers"). A module may import only modules on floors below its own, so
/// data flows one way: plan -> runner -> store -> analysis -> report.
const LAYERS: &[&[&str]] = &[
    &["error", "metric", "sys", "overrides", "status", "words"],
    &["process", "stats", "series"],
    &["monitor"],
    &["config"],
    &["vm", "store", "workload"],
    &["micro", "transport", "kbuild"],
    &["builtins"],
    &["plan", "analysis", "import"],
    &["report", "runner"],
    &["commands", "fleet", "bisect", "kexec"],
    &["cli"],
];

fn floor(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every top-level module of `src/` is compiled by exactly one crate of
/// the workspace (docs/ARCHITECTURE.md, "Crates"): a `#[path]` line in a
/// `crates/*/lib.rs`, or a `pub mod` of the top crate's `src/lib.rs`. A
/// module no crate names would be dead files that look alive; one named
/// twice would be two copies of its types that do not match.
#[test]
fn each_module_is_compiled_by_one_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut compiled_by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let crates = std::fs::read_dir(root.join("crates")).unwrap();
    for c in crates.flatten() {
        let lib = c.path().join("lib.rs");
        let text = std::fs::read_to_string(&lib).unwrap();
        for line in text.lines() {
            if let Some(p) = line
                .trim()
                .strip_prefix("#[path = \"../../src/")
                .and_then(|r| r.strip_suffix("\"]"))
            {
                let m = p.trim_end_matches("/mod.rs").trim_end_matches(".rs");
                compiled_by
                    .entry(m.to_string())
                    .or_default()
                    .push(lib.display().to_string());
            }
        }
    }
    let top = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    for line in top.lines() {
        if let Some(m) = line.trim().strip_prefix("pub mod ") {
            compiled_by
                .entry(m.trim_end_matches(';').to_string())
                .or_default()
                .push("src/lib.rs".into());
        }
    }
    let mut msg = String::new();
    for e in std::fs::read_dir(root.join("src")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let m = name.trim_end_matches(".rs");
        if m == "lib" || m == "main" || !(e.path().is_dir() || name.ends_with(".rs")) {
            continue;
        }
        match compiled_by.get(m).map(Vec::len) {
            Some(1) => {}
            Some(_) => msg.push_str(&format!("src/{name} is compiled by {:?}\n", compiled_by[m])),
            None => msg.push_str(&format!("src/{name} is compiled by no crate\n")),
        }
    }
    assert!(msg.is_empty(), "{msg}");
    for m in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            compiled_by.contains_key(*m),
            "{m} is on a floor but no crate compiles it"
        );
    }
}

/// Every arrow between top-level modules points down a floor, so no circle
/// between them can come back. Prints the file imports behind an arrow that
/// does not.
#[test]
fn top_level_modules_import_only_floors_below() {
    let graph = file_graph();
    let top = |f: &str| -> String {
        let rel = f.trim_start_matches("src/");
        match rel.split_once('/') {
            Some((dir, _)) => dir.to_string(),
            None => rel.trim_end_matches(".rs").to_string(),
        }
    };
    let mut msg = String::new();
    for f in &graph.files {
        let m = top(f);
        if m != "lib" && floor(&m).is_none() {
            msg.push_str(&format!(
                "module {m} ({f}) is on no floor: add it to LAYERS\n"
            ));
        }
    }
    let mut why: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (from, tos) in &graph.edges {
        for to in tos {
            let (a, b) = (top(from), top(to));
            if a != b {
                why.entry((a, b))
                    .or_default()
                    .push(format!("{from} -> {to}"));
            }
        }
    }
    for ((a, b), files) in &why {
        if let (Some(fa), Some(fb)) = (floor(a), floor(b)) {
            if fb >= fa {
                msg.push_str(&format!(
                    "{a} (floor {fa}) -> {b} (floor {fb}) does not point down: {}\n",
                    files.join("; ")
                ));
            }
        }
    }
    assert!(msg.is_empty(), "{msg}");
}

struct Graph {
    files: BTreeSet<String>,
    /// File -> files it imports, paths relative to the crate ("src/...").
    edges: BTreeMap<String, BTreeSet<String>>,
}

fn file_graph() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    collect_rs(&root.join("src"), &mut paths);
    // Module path (["transport", "pair"]) -> file ("src/transport/pair.rs").
    let mut modules: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for p in &paths {
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if rel == "src/main.rs" {
            continue;
        }
        modules.insert(module_of(&rel), rel);
    }
    let mut graph = Graph {
        files: modules.values().cloned().collect(),
        edges: BTreeMap::new(),
    };
    for (module, file) in &modules {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let code = without_tests(&blank_comments_and_strings(&text));
        for path in crate_paths(&code) {
            let Some(full) = absolute(module, &path) else {
                panic!("{file}: {} goes above the crate", path.join("::"));
            };
            let target = (0..=full.len())
                .rev()
                .find_map(|n| modules.get(&full[..n]))
                .unwrap();
            if target != file {
                graph
                    .edges
                    .entry(file.clone())
                    .or_default()
                    .insert(target.clone());
            }
        }
    }
    graph
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect_rs(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// "src/lib.rs" -> [], "src/a/mod.rs" -> [a], "src/a/b.rs" -> [a, b].
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// `path` as written (starting with `crate` or `super`), from the crate root.
fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    if rest.first().map(String::as_str) == Some("crate") {
        base.clear();
        rest = &rest[1..];
    }
    while rest.first().map(String::as_str) == Some("super") {
        base.pop()?;
        rest = &rest[1..];
    }
    base.extend(
        rest.iter()
            .filter(|s| !matches!(s.as_str(), "self" | "*"))
            .cloned(),
    );
    Some(base)
}

/// The text with comments, string and character literals replaced by
/// spaces (newlines kept), so that only code is searched.
fn blank_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(end) = raw_string_end(b, i) {
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{1F600}'), not a lifetime.
            let end = if rest.get(1) == Some(&b'\\') {
                rest.iter()
                    .skip(2)
                    .position(|&c| c == b'\'')
                    .map(|n| i + n + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 2 + ch)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// End of a raw string literal (r"..", r#".."#, br".."), if one starts at i.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    if i > 0 && ident(b[i - 1]) {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let from = j + 1;
    let n = b[from..].windows(close.len()).position(|w| w == close)?;
    Some(from + n + close.len())
}

/// The code with every `#[cfg(test)]` item (a test module, a test-only
/// import) replaced by spaces.
fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let b = code.as_bytes();
    let mut from = 0;
    while let Some(n) = code[from..].find("#[cfg(test)]") {
        let start = from + n;
        // The item ends at its first `;` outside braces or at the brace
        // that closes its first block, whichever comes first.
        let mut depth = 0usize;
        let mut j = start + "#[cfg(test)]".len();
        while j < b.len() {
            match b[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                b';' if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        for c in &mut out[start..(j + 1).min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = j + 1;
    }
    String::from_utf8(out).unwrap()
}

/// Every `crate::` and `super::` path in `code`, use trees expanded:
/// `use crate::a::{b, c::D}` gives [crate, a, b] and [crate, a, c, D].
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = |w: &str| b[i..].starts_with(w.as_bytes());
        let at_word = i == 0 || !(ident(b[i - 1]) || b[i - 1] == b':');
        if at_word
            && (starts("crate") || starts("super"))
            && !b.get(i + 5).is_some_and(|&c| ident(c))
        {
            let mut p = Parser { b, i };
            let first = p.ident().unwrap();
            if p.sep() {
                p.tree(vec![first], &mut out);
            }
            i = p.i.max(i + 5);
        } else {
            i += 1;
        }
    }
    out
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_ws();
        let s = self.i;
        while self.i < self.b.len()
            && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'_')
        {
            self.i += 1;
        }
        (self.i > s).then(|| String::from_utf8_lossy(&self.b[s..self.i]).into_owned())
    }

    /// Consumes `::` if it comes next.
    fn sep(&mut self) -> bool {
        let save = self.i;
        self.skip_ws();
        if self.b[self.i..].starts_with(b"::") {
            self.i += 2;
            true
        } else {
            self.i = save;
            false
        }
    }

    /// After `prefix::`: a segment, `*`, or a `{...}` group of trees.
    fn tree(&mut self, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        self.skip_ws();
        match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                loop {
                    self.skip_ws();
                    match self.b.get(self.i) {
                        Some(b'}') => {
                            self.i += 1;
                            return;
                        }
                        Some(b',') => self.i += 1,
                        None => return,
                        _ => {
                            let before = self.i;
                            self.path(prefix.clone(), out);
                            if self.i == before {
                                self.i += 1;
                            }
                        }
                    }
                }
            }
            Some(b'*') => {
                self.i += 1;
                out.push(prefix);
            }
            _ => self.path(prefix, out),
        }
    }

    /// Segments separated by `::`, then possibly a group.
    fn path(&mut self, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        self.skip_ws();
        if self.b.get(self.i) == Some(&b'*') {
            self.i += 1;
            out.push(prefix);
            return;
        }
        if self.b.get(self.i) == Some(&b'{') {
            self.tree(prefix, out);
            return;
        }
        let Some(seg) = self.ident() else {
            out.push(prefix);
            return;
        };
        prefix.push(seg);
        if self.sep() {
            self.skip_ws();
            if matches!(self.b.get(self.i), Some(b'{' | b'*')) {
                self.tree(prefix, out);
            } else if self.b.get(self.i) == Some(&b'<') {
                // A turbofish: the path ends before it.
                out.push(prefix);
            } else {
                self.path(prefix, out);
            }
        } else {
            out.push(prefix);
        }
    }
}

/// Strongly connected components of more than one node (Tarjan), each
/// sorted, in a stable order.
fn strongly_connected<S: AsRef<str> + Ord>(
    nodes: &BTreeSet<S>,
    edges: &BTreeMap<&str, BTreeSet<&str>>,
) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit(s: &mut State, v: &str) {
        let n = s.index.len();
        s.index.insert(v.to_string(), n);
        s.low.insert(v.to_string(), n);
        s.stack.push(v.to_string());
        s.on_stack.insert(v.to_string());
        let next: Vec<&str> = s.edges.get(v).into_iter().flatten().copied().collect();
        for w in next {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = BTreeSet::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(&w);
                let done = w == v;
                comp.insert(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v.as_ref()) {
            visit(&mut s, v.as_ref());
        }
    }
    s.out
}

#[test]
fn the_parser_reads_use_trees_and_skips_tests_and_text() {
    let code = r#"
use crate::a::{b, c::{D, self}, *};
use super::super::x;
// crate::comment::ignored
fn f() { let s = "crate::string::ignored"; crate::e::f::<u8>(); let c = '{'; }
#[cfg(test)]
mod tests { use crate::test_only::x; }
#[cfg(test)]
use crate::test_import::y;
"#;
    let got = crate_paths(&without_tests(&blank_comments_and_strings(code)));
    let s = |p: &[&str]| p.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got,
        vec![
            s(&["crate", "a", "b"]),
            s(&["crate", "a", "c", "D"]),
            s(&["crate", "a", "c", "self"]),
            s(&["crate", "a"]),
            s(&["super", "super", "x"]),
            s(&["crate", "e", "f"]),
        ]
    );
    let m = s(&["p", "q", "r"]);
    assert_eq!(
        absolute(&m, &s(&["super", "super", "x"])),
        Some(s(&["p", "x"]))
    );
    assert_eq!(
        absolute(&m, &s(&["crate", "a", "c", "self"])),
        Some(s(&["a", "c"]))
    );
}
