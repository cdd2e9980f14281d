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

#[test]
fn every_registered_builtin_is_known_to_the_registry() {
    // A name listed in BUILTINS must build (with its defaults or a minimal
    // parameter set) or fail on its parameters, never as an unknown builtin.
    for name in sysdelta::workload::registry::BUILTINS {
        let params = toml::Value::Table(Default::default());
        if let Err(e) = sysdelta::workload::registry::validate(name, &params) {
            assert!(!e.contains("unknown builtin"), "{name}: {e}");
        }
    }
}
