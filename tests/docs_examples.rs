//! Every TOML block in docs/plan.md is a valid plan.

use sysdelta::plan::{parse, Overrides};

#[test]
fn every_plan_example_in_the_docs_validates() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/plan.md")).unwrap();
    let mut blocks = Vec::new();
    let mut cur: Option<String> = None;
    for line in doc.lines() {
        match (&mut cur, line.trim()) {
            (None, "```toml") => cur = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                cur = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    assert!(blocks.len() >= 8, "found {} examples", blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        // The ab example names a placeholder command.
        let b = b.replace("\"CMD\"", "\"true\"");
        if let Err(e) = parse(
            &format!("docs/plan.md example {}", i + 1),
            &b,
            &Overrides::default(),
        ) {
            panic!("{e}\n{b}");
        }
    }
}
