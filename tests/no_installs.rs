//! No test or benchmark installs software: what they need is installed by
//! `.ci/run` and the README's install step (scripts/install-*.sh), and a
//! test that finds it missing skips with a printed reason. Running
//! `cargo test` as root must never change the machine's packages.

use std::path::Path;

/// Package managers a test could be tempted to call.
const INSTALLERS: [&str; 6] = [
    "\"apt-get\"",
    "\"apt\"",
    "\"dpkg\"",
    "\"pip\"",
    "\"pip3\"",
    "\"rustup\"",
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_test_or_bench_runs_a_package_manager() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["tests", "benches"] {
        sources(&root.join(d), &mut files);
    }
    assert!(files.len() > 10, "found only {} sources", files.len());
    let me = Path::new(file!()).file_name().unwrap();
    let mut offenders = Vec::new();
    for f in &files {
        if f.file_name() == Some(me) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            // A command spawned by name, or `go install` given as arguments.
            let spawns = INSTALLERS
                .iter()
                .any(|i| line.contains(&format!("Command::new({i}")));
            let go_install = line.contains("\"install\"") && text.contains("Command::new(\"go\"");
            if spawns || go_install {
                offenders.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "tests must not install packages (put it in scripts/install-*.sh, which .ci/run runs):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_check_catches_an_install() {
    // The pattern the first test looks for, as a test would write it.
    let line = r#"let _ = Command::new("apt-get").args(["install", "-y", "x"]);"#;
    assert!(INSTALLERS
        .iter()
        .any(|i| line.contains(&format!("Command::new({i}"))));
}
