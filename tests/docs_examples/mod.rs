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

use crate::common;
mod lanes;
mod shell;

use std::path::Path;
use std::process::Command;

/// A plan like the quickstart's, on 3,000 lines instead of 300,000: the
/// docs' `plan.toml`, and the experiments labelled 6.18-rc1 and -rc2 the
/// README's `compare` and `history` read.
fn small_plan(root: &Path) -> String {
    std::fs::read_to_string(root.join("examples/quickstart.toml"))
        .unwrap()
        .replace("seq 1 300000", "seq 1 3000")
}

/// The scratch directory the docs' commands run in: a store with two
/// labelled experiments, the repository's examples/ and Cargo.lock, the
/// files the commands name (plan.toml, FILE, ./bench, results.json), and
/// `sysdelta` on PATH.
fn scratch(root: &Path, sb: &common::Sandbox) -> String {
    let d = sb.dir.path();
    std::os::unix::fs::symlink(root.join("examples"), d.join("examples")).unwrap();
    std::fs::copy(root.join("Cargo.lock"), d.join("Cargo.lock")).unwrap();
    std::fs::copy(
        root.join("tests/fixtures/hyperfine.json"),
        d.join("results.json"),
    )
    .unwrap();
    sb.write("plan.toml", &small_plan(root));
    sb.write("FILE", "a line with an x\n");
    let bench = sb.write(
        "bench",
        "#!/bin/sh\ni=0; while [ $i -lt 200 ]; do i=$((i+1)); done\n",
    );
    std::fs::set_permissions(bench, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(common::bin(), bin.join("sysdelta")).unwrap();
    for label in ["6.18-rc1", "6.18-rc2"] {
        let out = Command::new(common::bin())
            .args([
                "run",
                "plan.toml",
                "--runs",
                "3",
                "--warmup",
                "0",
                "-q",
                "--no-report",
            ])
            .args(["--label", label])
            .env("SYSDELTA_RUN_DIR", sb.run_dir())
            .current_dir(d)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// No sysdelta command in README.md or docs/*.md sits in a fenced block
/// that the test below would neither run nor list as not run (untagged,
/// `console`, `bash`, ...): a command is shown in an `sh` block (run, or
/// said not to be and why), a synopsis or an output in a `text` one.
#[test]
fn no_command_in_the_docs_hides_outside_sh_blocks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let subcommands: Vec<String> = (sysdelta::cli::command().get_subcommands())
        .map(|c| c.get_name().to_string())
        .collect();
    assert!(subcommands.iter().any(|s| s == "micro"), "{subcommands:?}");
    let found: Vec<String> = (shell::docs(root).iter())
        .flat_map(|(name, text)| shell::hidden_commands(name, text, &subcommands))
        .collect();
    assert!(
        found.is_empty(),
        "sysdelta commands outside sh blocks: {found:?}"
    );
    // What the check sees, and what it leaves: a synopsis in `text`, a
    // command in `sh`, output lines, and ``` inside a ~~~~ fence.
    let doc = "```\nsysdelta micro --list\n```\n\
               ```text\nsysdelta micro [--quick]\n```\n\
               ```console\n# sysdelta --store s.db report 3\n$ sudo X=1 sysdelta run p.toml\n```\n\
               ```sh\nsysdelta list\n```\n\
               ~~~~\nsysdelta: error: no such file\n```\nsysdelta ab true\n~~~~\n";
    assert_eq!(
        shell::hidden_commands("x.md", doc, &subcommands),
        ["x.md:2", "x.md:8", "x.md:9", "x.md:17"]
    );
}

/// Every command of every `sh` block in README.md and docs/*.md runs as
/// written, in order, and exits 0; what cannot run here is printed as a
/// SKIP line with its reason (see docs_examples/shell.rs).
#[test]
fn every_shell_command_in_the_docs_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sb = common::Sandbox::sqlite();
    let path = scratch(root, &sb);
    let mut listed_seen = vec![false; shell::NOT_RUN.len()];
    let mut ran = 0;
    let mut times = Vec::new();
    let mut jobs = Vec::new();
    for (name, text) in shell::docs(root) {
        for block in shell::blocks(&name, &text) {
            if let Some(why) = &block.not_run {
                common::skip(format!("{}: block not run: {why}", block.at));
                continue;
            }
            // One script per block, so that a block's variables reach its
            // later commands; each command is announced on stderr first,
            // so a failure names its line.
            let mut script = String::from("set -e\n");
            let mut exclusive = false;
            for (line, cmd) in &block.commands {
                let listed = shell::NOT_RUN.iter().position(|(k, _)| cmd.contains(k));
                let root_only = shell::ROOT_ONLY.iter().any(|k| cmd.contains(k));
                if let Some(k) = listed {
                    listed_seen[k] = true;
                    common::skip(format!("{name}:{line}: {}", shell::NOT_RUN[k].1));
                    continue;
                }
                if root_only && !common::is_root() {
                    common::skip(format!("{name}:{line}: changes the system: root only"));
                    continue;
                }
                exclusive |= lanes::EXCLUSIVE.iter().any(|k| cmd.contains(k));
                // The marker carries the time (ns) so the slowest commands
                // can be named after the run.
                script.push_str(&format!(
                    "echo \"@@ {name}:{line} $(date +%s%N)\" >&2\n{cmd}\n"
                ));
                ran += 1;
            }
            jobs.push(lanes::Job {
                at: block.at,
                script,
                exclusive,
            });
        }
    }
    let env = [
        ("PATH", path),
        ("SYSDELTA_RUN_DIR", sb.run_dir().display().to_string()),
    ];
    let mut failed = Vec::new();
    for done in lanes::run(jobs, sb.dir.path(), &env) {
        let err = common::stderr(&done.out);
        times.extend(shell::durations(&err, done.ended));
        if !done.out.status.success() {
            let at = err
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("@@ "))
                .and_then(|l| l.rsplit_once(' '))
                .map(|(at, _)| at);
            let tail: Vec<&str> = err.lines().rev().take(15).collect();
            failed.push(format!(
                "{}: exit {:?} at {}\n{}",
                done.at,
                done.out.status.code(),
                at.unwrap_or("?"),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    // For whoever makes this test faster: where its time goes (printed,
    // never asserted: it depends on the machine).
    times.sort_by_key(|t| std::cmp::Reverse(t.1));
    for (at, d) in times.iter().take(8) {
        common::note(format!("docs: {at} took {:.1} s", d.as_secs_f64()));
    }
    for (seen, (k, _)) in listed_seen.iter().zip(shell::NOT_RUN) {
        assert!(seen, "NOT_RUN lists `{k}`, which no doc holds any more");
    }
    assert!(ran >= 20, "only {ran} commands ran");
}
