//! Every extension point has one registry, and whatever it declares
//! reaches every path a plan (or `sysdelta import`) takes: a config kind
//! declared in `config::kinds::KINDS` is a plan key that parses, expands
//! under `matrix`, validates, builds and preflights; a built-in workload
//! in `builtins::BUILTINS` validates in a plan and builds; a monitor in
//! `monitor::MONITORS` is accepted in a plan and builds under its name;
//! an importer in `import::IMPORTERS` is on `import --help` and parses its
//! fixture. And the docs name each one. Nothing here changes the system:
//! kinds are built and preflighted, never entered.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sysdelta::config::journal::Journal;
use sysdelta::plan::{parse, Overrides, Plan};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn doc(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(name)).unwrap()
}

fn plan(name: &str, text: &str) -> Plan {
    parse(name, text, &Overrides::default()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

const WORKLOAD: &str = "[[workload]]\nname = \"w\"\ncommand = \"true\"\n";

/// A TOML value rendered inline, as a plan line's right-hand side.
fn inline(v: &toml::Value) -> String {
    v.to_string()
}

/// Replace the first string in `v` (or, where it has none, the first
/// table key) by `{n}`; the text replaced.
fn placeholder(v: &mut toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(std::mem::replace(s, "{n}".into())),
        toml::Value::Array(a) => a.iter_mut().find_map(placeholder),
        toml::Value::Table(t) => {
            if let Some(s) = t.iter_mut().find_map(|(_, x)| placeholder(x)) {
                return Some(s);
            }
            let k = t.keys().next()?.clone();
            let x = t.remove(&k)?;
            t.insert("{n}".into(), x);
            Some(k)
        }
        _ => None,
    }
}

#[test]
fn every_config_kind_parses_expands_validates_builds_and_preflights() {
    use sysdelta::config::kinds::{self, KINDS};
    let configs_md = doc("docs/configs.md");
    let plan_md = doc("docs/plan.md");
    for k in KINDS {
        let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {}", k.example))
            .unwrap_or_else(|e| panic!("{}: example: {e}", k.name))
            .remove("v")
            .unwrap();

        // As written in a plan.
        let text = format!(
            "[[config]]\nname = \"c\"\n{} = {}\n{WORKLOAD}",
            k.name, k.example
        );
        let p = plan(k.name, &text);
        let decls = &p.configs[0].kinds;
        assert_eq!(decls.len(), 1, "{}: {decls:?}", k.name);
        assert_eq!(decls[0].kind, k.name);
        assert_eq!(decls[0].value, value, "{}", k.name);
        assert!(decls[0].at.contains(k.name), "{}", decls[0].at);

        // Under a matrix: the parameter is filled into the kind's value.
        let mut with_n = value.clone();
        let filled = placeholder(&mut with_n)
            .unwrap_or_else(|| panic!("{}: its example has no string or key", k.name));
        let text = format!(
            "[[config]]\nname = \"c\"\nmatrix = {{ n = [{}] }}\n{} = {}\n{WORKLOAD}",
            inline(&toml::Value::String(filled.clone())),
            k.name,
            inline(&with_n),
        );
        let p = plan(k.name, &text);
        assert_eq!(p.configs.len(), 1);
        assert_eq!(p.configs[0].name, format!("c-{filled}"));
        assert_eq!(
            p.configs[0].kinds[0].value, value,
            "{}: {{n}} not filled",
            k.name
        );

        // Built the way the runner builds it, and preflighted (which
        // changes nothing; what it finds missing here does not matter).
        let d = &p.configs[0].kinds[0];
        let built = kinds::build(&d.kind, &d.value, Journal::detached())
            .unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(built.kind(), k.name);
        let _ = built.preflight();
        let _ = sysdelta::runner::plan_changes_system(&p);

        // And documented.
        assert!(
            configs_md.contains(&format!("\n## {}\n", k.name)),
            "docs/configs.md has no section `## {}`",
            k.name
        );
        assert!(
            plan_md.contains(&format!("`{}`", k.name)),
            "docs/plan.md does not name config kind `{}`",
            k.name
        );
    }
    // A key that is no kind is refused at its position, naming the keys.
    let e = parse(
        "p.toml",
        &format!("[[config]]\nname = \"c\"\nnosuch = 1\n{WORKLOAD}"),
        &Overrides::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("p.toml:3:1: unknown field `nosuch`"), "{e}");
    for k in KINDS {
        assert!(e.contains(&format!("`{}`", k.name)), "{e}");
    }
}

#[test]
fn every_builtin_workload_validates_in_a_plan_and_builds() {
    use sysdelta::builtins::{self, BuildContext, BUILTINS};
    let plan_md = doc("docs/plan.md");
    for b in BUILTINS {
        let text = format!(
            "[[config]]\nname = \"c\"\n[[workload]]\nname = \"w\"\nbuiltin = \"{}\"\nparams = {}\n",
            b.name, b.example
        );
        let p = plan(b.name, &text);
        let sysdelta::plan::WorkloadKind::Builtin { name, params } = &p.workloads[0].kind else {
            panic!("{}: not a builtin", b.name);
        };
        let w = builtins::build(name, params, &BuildContext::default())
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
        assert!(!w.metrics().is_empty(), "{}: no metrics", b.name);
        assert!(
            doc(b.doc).contains(&format!("builtin = \"{}\"", b.name)),
            "{} has no example `builtin = \"{}\"`",
            b.doc,
            b.name
        );
        assert!(
            plan_md.contains(&format!("`{}`", b.name)),
            "docs/plan.md does not name built-in `{}`",
            b.name
        );
    }
    // The monitor-overhead probe the plan adds is one of them.
    assert!(builtins::names().contains(&sysdelta::monitor::control::PROBE_BUILTIN));
}

#[test]
fn every_monitor_is_accepted_in_a_plan_and_builds_under_its_name() {
    use sysdelta::monitor::{self, MONITORS};
    let plan_md = doc("docs/plan.md");
    let monitors_md = doc("docs/monitors.md");
    for m in MONITORS {
        let text = format!(
            "monitors = [\"{0}\"]\n[[config]]\nname = \"c\"\nmonitors = [\"{0}\"]\n{WORKLOAD}",
            m.name
        );
        let p = plan(m.name, &text);
        assert_eq!(p.monitors, [m.name]);
        assert_eq!(p.configs[0].monitors, [m.name]);
        let built = monitor::build(m.name, Duration::from_secs(1)).unwrap();
        assert_eq!(built.name(), m.name);
        assert!(monitor::is_telemetry_metric(&format!("{}.x", m.name)));
        for (file, text) in [
            ("docs/plan.md", &plan_md),
            ("docs/monitors.md", &monitors_md),
        ] {
            assert!(
                text.contains(&format!("`{}`", m.name)),
                "{file} does not name monitor `{}`",
                m.name
            );
        }
    }
}

/// An importer's fixture: the first entry of tests/fixtures, in name
/// order, whose name starts with the importer's (a directory: every file
/// under it).
fn fixture(name: &str) -> Vec<PathBuf> {
    let dir = Path::new(ROOT).join("tests/fixtures");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
        .collect();
    entries.sort();
    let Some(first) = entries.into_iter().next() else {
        panic!("no fixture tests/fixtures/{name}* for importer {name}");
    };
    let mut files = Vec::new();
    let mut todo = vec![first];
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            files.push(p);
        }
    }
    files.sort();
    files
}

#[test]
fn every_importer_is_on_the_command_line_in_the_docs_and_parses_its_fixture() {
    use sysdelta::import::{self, ImportOptions, IMPORTERS};
    let out = Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args(["import", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let reports_md = doc("docs/reports.md");
    let readme = doc("README.md");
    for i in IMPORTERS {
        assert!(
            help.contains(&format!("- {}:", i.name)),
            "import --help does not list {}:\n{help}",
            i.name
        );
        assert!(
            help.contains(i.help),
            "import --help lacks {}'s line",
            i.name
        );
        assert!(
            reports_md.contains(&format!("| `{}` |", i.name)),
            "docs/reports.md's import table has no row for `{}`",
            i.name
        );
        assert!(
            readme
                .lines()
                .any(|l| l.trim_start().starts_with("sysdelta import ") && l.contains(i.name)),
            "README.md's `sysdelta import` line does not name importer {}",
            i.name
        );
        let files: Vec<(String, String)> = fixture(i.name)
            .iter()
            .map(|p| (p.display().to_string(), import::read(p).unwrap()))
            .collect();
        let imp = (i.parse)(&files, &ImportOptions { workload: "w" })
            .unwrap_or_else(|e| panic!("{}: {e}", i.name));
        assert!(!imp.runs.is_empty(), "{}: no runs", i.name);
        assert!(import::find(i.name).is_some());
    }
}
