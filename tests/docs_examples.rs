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
    for name in sysdelta::builtins::names() {
        let params = toml::Value::Table(Default::default());
        if let Err(e) = sysdelta::builtins::validate(name, &params) {
            assert!(!e.to_string().contains("unknown builtin"), "{name}: {e}");
        }
    }
}

#[test]
fn the_readme_quickstart_and_every_example_plan_validate() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains("run examples/quickstart.toml"),
        "the README's first command"
    );
    let mut seen = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            for quick in [false, true] {
                let ov = Overrides {
                    quick,
                    ..Default::default()
                };
                if let Err(e) = sysdelta::plan::load_file(&p, &ov) {
                    panic!("{e}");
                }
            }
            seen.push(p.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    seen.sort();
    for want in [
        "quickstart.toml",
        "ltt-2002.toml",
        "blktrace-2007.toml",
        "sap-2001.toml",
    ] {
        assert!(
            seen.iter().any(|s| s == want),
            "examples/{want} is missing: {seen:?}"
        );
    }
}
