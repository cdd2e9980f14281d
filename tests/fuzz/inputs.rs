//! Fuzzing what users hand sysdelta: the plan parser and the three
//! importers get arbitrary bytes and valid inputs with random edits (huge,
//! negative, NaN and infinite numbers in numeric fields, lines deleted,
//! duplicated or cut). None may panic; every rejection is one line that
//! names the file (the CLI maps these errors to bad input, exit 2, which a
//! few cases check through the binary); and whatever is accepted is within
//! the documented bounds (plans) or only finite, possible values that the
//! store then takes whole (imports).
//!
//! Case counts keep the file to a few seconds in release mode (CI runs it);
//! `FUZZ_SCALE=N` multiplies them for a longer run by hand.

use crate::common;

use std::cell::Cell;
use std::path::Path;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use regex::Regex;

use common::{stderr, Sandbox};
use sysdelta::error::is_user_error;
use sysdelta::import::{self, Imported};
use sysdelta::plan::{self, Overrides, Plan};
use sysdelta::store::Store;

fn manifest(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn config(cases: u32) -> Config {
    Config {
        cases: cases * std::env::var("FUZZ_SCALE").map_or(1, |v| v.parse().unwrap()),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Run `test` on `cases` values of `strategy`, panicking with the minimal
/// failing input. A fresh runner each time: a runner counts its successes
/// across runs, so a reused one would run nothing the second time.
fn check<S: Strategy>(
    cases: u32,
    strategy: &S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    TestRunner::new(config(cases)).run(strategy, test).unwrap();
}

// ---------------------------------------------------------------- edits

/// Numbers no field should accept as they are, and some it should.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "-5",
    "0.5",
    "1e-300",
    "1e300",
    "-1e300",
    "1e999",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "+inf",
    "-inf",
    "+Inf",
    "Infinity",
    "4294967295",
    "4294967296",
    "1000001",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "99999999999999999999",
    "340282366920938463463374607431768211456",
];

/// Strings for string fields (durations, sizes, names, orders).
const STRINGS: &[&str] = &[
    "\"\"",
    "\"1e300h\"",
    "\"-5s\"",
    "\"0ms\"",
    "\"nan\"",
    "\"inf\"",
    "\"16E\"",
    "\"2T\"",
    "\"99999999999999999999G\"",
    "\"a b\"",
    "\"\\u0000\"",
];

/// One edit of a text.
#[derive(Clone, Debug)]
enum Edit {
    /// Replace the `n`th number (mod their count) with this text.
    Number(usize, String),
    /// Replace the `n`th quoted string.
    Str(usize, String),
    DeleteLine(usize),
    DuplicateLine(usize),
    /// Insert bytes at a position (mod the length).
    Insert(usize, Vec<u8>),
    /// Cut the text at a position.
    Truncate(usize),
}

fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(NUMBERS).prop_map(str::to_string),
        1 => any::<i64>().prop_map(|i| i.to_string()),
        1 => any::<u64>().prop_map(|i| i.to_string()),
        1 => any::<f64>().prop_map(|f| format!("{f:e}")),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        6 => (any::<usize>(), number_text()).prop_map(|(n, t)| Edit::Number(n, t)),
        2 => (any::<usize>(), proptest::sample::select(STRINGS))
            .prop_map(|(n, t)| Edit::Str(n, t.to_string())),
        1 => any::<usize>().prop_map(Edit::DeleteLine),
        1 => any::<usize>().prop_map(Edit::DuplicateLine),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(n, b)| Edit::Insert(n, b)),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn replace_nth(text: &str, re: &Regex, n: usize, with: &str) -> String {
    let found: Vec<_> = re.find_iter(text).collect();
    if found.is_empty() {
        return text.to_string();
    }
    let m = found[n % found.len()];
    format!("{}{with}{}", &text[..m.start()], &text[m.end()..])
}

/// `text` with the edits applied (bytes inserted may make it invalid
/// UTF-8; it is read lossily, as a file would be refused or read).
fn apply(text: &str, edits: &[Edit]) -> String {
    let number = Regex::new(r"[-+]?\b[0-9][0-9._eE+-]*\b").unwrap();
    let string = Regex::new(r#""[^"\n]*""#).unwrap();
    let mut t = text.to_string();
    for e in edits {
        t = match e {
            Edit::Number(n, with) => replace_nth(&t, &number, *n, with),
            Edit::Str(n, with) => replace_nth(&t, &string, *n, with),
            Edit::DeleteLine(n) | Edit::DuplicateLine(n) => {
                let mut lines: Vec<&str> = t.lines().collect();
                if !lines.is_empty() {
                    let i = n % lines.len();
                    if matches!(e, Edit::DeleteLine(_)) {
                        lines.remove(i);
                    } else {
                        lines.insert(i, lines[i]);
                    }
                }
                lines.join("\n") + "\n"
            }
            Edit::Insert(n, bytes) => {
                let mut b = t.into_bytes();
                let at = n % (b.len() + 1);
                b.splice(at..at, bytes.iter().copied());
                String::from_utf8_lossy(&b).into_owned()
            }
            Edit::Truncate(n) => {
                let mut at = n % (t.len() + 1);
                while !t.is_char_boundary(at) {
                    at -= 1;
                }
                t[..at].to_string()
            }
        };
    }
    t
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    proptest::collection::vec(edit(), 1..5)
}

// ---------------------------------------------------------------- plans

/// A plan that uses every field with a number or a duration, and every
/// built-in that validates its parameters at load.
const RICH_PLAN: &str = r#"
name = "rich"
runs = 12
warmup = 2
order = "random-blocks"
seed = 7
timeout = "90s"
monitors = ["vmstat"]
monitor_interval = "250ms"

[quick]
runs = 3
warmup = 1

[[config]]
name = "a"
env = { X = 1, Y = 1.5, Z = "z" }

[[config]]
name = "b"
setup = "export X=2"
[config.sysctl]
"kernel.sched_autogroup_enabled" = 0

[[workload]]
name = "cmd"
command = "true"
timeout = 30
[[workload.metrics]]
name = "ops"
regex = "ops=([0-9.]+)"

[[workload]]
name = "mem"
builtin = "memsweep"
params = { working_set = "64M", duration = "2s", interval = "100ms", block = "64K" }
quick = { duration = "1s" }

[[workload]]
name = "micro"
builtin = "micro"
params = { samples = 11, semring = { groups = 2, sems = 4, laps = 10 } }

[[workload]]
name = "tr"
builtin = "transport"
params = { record_size = 100, volume_mb = 10, buffer_kb = 1024, transports = ["pipe"] }

[[workload]]
name = "cc"
builtin = "compile"
params = { files = 10, functions = 2, jobs = 1 }

[[workload]]
name = "z"
builtin = "compress"
params = { size_mb = 1, level = 3, tools = ["gzip"] }
"#;

/// Valid plans to mutate: the rich plan and the plans in docs/plan.md
/// (all but the `ab` one, whose command is a placeholder).
fn plan_seeds() -> Vec<String> {
    let doc = manifest("docs/plan.md");
    let block = Regex::new(r"(?s)```toml\n(.*?)```").unwrap();
    let mut seeds: Vec<String> = block
        .captures_iter(&doc)
        .map(|c| c[1].to_string())
        .filter(|p| !p.contains("command = \"CMD\""))
        .collect();
    seeds.push(RICH_PLAN.to_string());
    seeds
}

fn overrides() -> impl Strategy<Value = Overrides> {
    let count = prop_oneof![
        Just(None),
        Just(Some(0u32)),
        Just(Some(plan::MAX_RUNS)),
        Just(Some(plan::MAX_RUNS + 1)),
        Just(Some(u32::MAX)),
        (1u32..100).prop_map(Some),
    ];
    (
        count.clone(),
        count.clone(),
        count,
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(runs, warmup, max_runs, quick, until, seed)| Overrides {
            runs,
            warmup,
            max_runs,
            quick,
            until_ci: until.then_some(0.01),
            seed,
            ..Overrides::default()
        })
}

/// What every accepted plan must satisfy: the documented bounds.
fn check_accepted(p: &Plan) -> Result<(), TestCaseError> {
    prop_assert!((1..=plan::MAX_RUNS).contains(&p.runs), "runs {}", p.runs);
    prop_assert!(p.warmup <= plan::MAX_WARMUP, "warmup {}", p.warmup);
    let most = p.runs.max(p.overrides.max_runs.unwrap_or(0));
    // Kernel configs warm up once per boot.
    let warmups = u64::from(p.warmup) * u64::from(p.boots.max(1));
    // A block runs the plan's cells: the configs x workloads matrix, or,
    // with the monitor-overhead control, less and the probe repeated.
    let total = p.cells().len() as u64 * (warmups + u64::from(most));
    prop_assert!(total <= plan::MAX_SCHEDULED_RUNS, "schedule {total}");
    for w in &p.workloads {
        prop_assert!(
            (plan::MIN_TIMEOUT..=plan::MAX_TIMEOUT).contains(&w.timeout),
            "timeout {:?}",
            w.timeout
        );
    }
    prop_assert!(p.monitor_interval <= plan::MAX_MONITOR_INTERVAL);
    Ok(())
}

/// A refusal is one line; without CLI overrides it names the plan's
/// `file:line:col`.
fn check_refused(e: &str, ov: &Overrides) -> Result<(), TestCaseError> {
    prop_assert!(!e.contains('\n'), "more than one line: {e:?}");
    if *ov == Overrides::default() {
        let positioned = Regex::new(r"^fuzz\.toml:[0-9]+:[0-9]+: ").unwrap();
        prop_assert!(positioned.is_match(e), "not positioned: {e:?}");
    }
    Ok(())
}

/// Check one parse; true when the plan was accepted.
fn check_plan(text: &str, ov: &Overrides) -> Result<bool, TestCaseError> {
    match plan::parse("fuzz.toml", text, ov) {
        Ok(p) => check_accepted(&p).map(|()| true),
        Err(e) => check_refused(&e.to_string(), ov).map(|()| false),
    }
}

#[test]
fn seeds_are_valid_plans() {
    // Otherwise the mutations below would start from refusals only.
    let seeds = plan_seeds();
    assert!(seeds.len() > 10, "{} seeds", seeds.len());
    for s in seeds {
        plan::parse("fuzz.toml", &s, &Overrides::default()).unwrap_or_else(|e| panic!("{e}\n{s}"));
    }
}

#[test]
fn plan_parser_takes_arbitrary_bytes() {
    let bytes = proptest::collection::vec(any::<u8>(), 0..400);
    check(2000, &bytes, |b| {
        check_plan(&String::from_utf8_lossy(&b), &Overrides::default()).map(drop)
    });
    // Plans shaped to reach the numeric checks: real field names, numbers
    // of every size and sign, then a valid config and workload.
    let number = r#"(-?[0-9]{1,22}(\.[0-9]{1,2})?(e-?[0-9]{1,3})?|[+-]?(inf|nan))"#;
    let value = format!(r#"({number}|"{number}(ms|s|m|h)?"|"[a-z0-9]{{0,4}}")"#);
    let key = "(runs|warmup|seed|timeout|monitor_interval|order|[a-z]{1,6})";
    let shaped = format!(
        "({key} = {value}\n){{0,4}}(\\[quick\\]\n((runs|warmup) = {value}\n){{0,2}})?\
         \\[\\[config\\]\\]\nname = \"a\"\n\\[\\[workload\\]\\]\nname = \"w\"\n\
         command = \"true\"\n(timeout = {value}\n)?"
    );
    let accepted = Cell::new(0);
    check(2000, &shaped.as_str(), |t| {
        let ok = check_plan(&t, &Overrides::default())?;
        accepted.set(accepted.get() + usize::from(ok));
        Ok(())
    });
    assert!(accepted.get() > 0, "no shaped plan was valid");
}

#[test]
fn plan_file_that_is_not_utf8_is_refused_at_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.toml");
    let bytes = proptest::collection::vec(any::<u8>(), 0..200);
    check(200, &bytes, |b| {
        std::fs::write(&path, &b).unwrap();
        match plan::load_file(&path, &Overrides::default()) {
            Ok(p) => check_accepted(&p),
            Err(e) => {
                prop_assert!(!e.to_string().contains('\n'), "{e:?}");
                prop_assert!(
                    e.to_string().starts_with(&path.display().to_string()),
                    "{e:?}"
                );
                Ok(())
            }
        }
    });
}

#[test]
fn mutated_plans_are_bounded_or_refused_in_one_line() {
    let seeds = plan_seeds();
    let case = (0..seeds.len(), edits(), overrides());
    let (accepted, refused) = (Cell::new(0), Cell::new(0));
    check(5000, &case, |(i, e, ov)| {
        let text = apply(&seeds[i], &e);
        check_plan(&text, &ov)?;
        let as_written = check_plan(&text, &Overrides::default())?;
        let n = if as_written { &accepted } else { &refused };
        n.set(n.get() + 1);
        Ok(())
    });
    // Not vacuous: the edits keep some plans valid and break others.
    assert!(
        accepted.get() > 0 && refused.get() > 0,
        "{accepted:?} {refused:?}"
    );
}

// -------------------------------------------------------------- imports

fn fixture(name: &str) -> String {
    manifest(&format!("tests/fixtures/{name}"))
}

#[derive(Clone, Copy, Debug)]
enum Format {
    Hyperfine,
    Gobench,
    Lmbench,
}

/// Path names like the CLI gives (the LMbench config comes from them).
fn path_of(f: Format) -> &'static str {
    match f {
        Format::Hyperfine => "fuzz.json",
        Format::Gobench => "fuzz.txt",
        Format::Lmbench => "results/x86_64-linux-gnu/fuzz.0",
    }
}

fn parse(f: Format, text: &str) -> Result<Imported, String> {
    let files = [(path_of(f).to_string(), text.to_string())];
    match f {
        Format::Hyperfine => import::hyperfine::parse(path_of(f), text, "hyperfine"),
        Format::Gobench => import::gobench::parse(&files),
        Format::Lmbench => import::lmbench::parse(&files),
    }
    .map_err(|e| e.to_string())
}

/// Units whose values can never be negative, as the importers declare
/// them (hyperfine `wall`, LMbench `us`/`MB/s`/`KB/s`, Go's own units).
fn never_negative(metric: &str, unit: &str) -> bool {
    matches!(metric, "wall" | "ns/op" | "B/op" | "allocs/op" | "MB/s")
        || matches!(unit, "s" | "us" | "MB/s" | "KB/s")
}

/// What every accepted import must hold: finite values, none negative in
/// a unit that cannot be, each metric once per run.
fn check_imported(imp: &Imported) -> Result<(), TestCaseError> {
    for r in &imp.runs {
        let mut seen = std::collections::HashSet::new();
        for s in &r.samples {
            prop_assert!(seen.insert(&s.metric), "{} twice in a run", s.metric);
            let unit = imp
                .metrics
                .iter()
                .filter(|(w, _)| *w == r.workload)
                .flat_map(|(_, specs)| specs)
                .find(|m| m.name == s.metric)
                .map(|m| m.unit.clone())
                .unwrap_or_default();
            for v in &s.values {
                prop_assert!(v.is_finite(), "{} = {v}", s.metric);
                prop_assert!(
                    *v >= 0.0 || !never_negative(&s.metric, &unit),
                    "{} = {v}",
                    s.metric
                );
            }
        }
    }
    Ok(())
}

fn check_import(f: Format, text: &str) -> Result<Option<Imported>, TestCaseError> {
    match parse(f, text) {
        Ok(imp) => {
            check_imported(&imp)?;
            Ok(Some(imp))
        }
        Err(e) => {
            prop_assert!(!e.contains('\n'), "more than one line: {e:?}");
            prop_assert!(
                e.starts_with(&format!("{}:", path_of(f))),
                "does not name the file: {e:?}"
            );
            Ok(None)
        }
    }
}

const FORMATS: [Format; 3] = [Format::Hyperfine, Format::Gobench, Format::Lmbench];

#[test]
fn importers_take_arbitrary_bytes() {
    let bytes = proptest::collection::vec(any::<u8>(), 0..400);
    for f in FORMATS {
        check(1000, &bytes, |b| {
            check_import(f, &String::from_utf8_lossy(&b)).map(drop)
        });
    }
    // Text shaped like each format, so that values reach the checks.
    let num = r"(-?[0-9]{1,3}(\.[0-9]{1,3})?|[0-9]e[0-9]{1,3}|[+-]?(inf|Inf|NaN|nan))";
    let digits = r"([0-9]{1,3}(\.[0-9]{1,3})?|[0-9]e[0-9]{1,3}|[0-9]{310,320})";
    let json_num = r"-?[0-9]{1,2}(\.[0-9]{1,3})?(e[0-9]{1,3})?";
    let json_obj = format!(
        r#"\{{"command": "[a-z]{{0,3}}", "times": \[{json_num}(, {json_num}){{0,3}}\](, "exit_codes": \[(0|1|null)(, (0|1|null)){{0,3}}\])?\}}"#
    );
    let shaped = [
        (
            Format::Gobench,
            format!(
                "(goos: linux\n|Benchmark[A-Z][a-z]{{0,3}}(-[0-9])? +[0-9]{{1,3}}( +{num} +(ns/op|B/op|allocs/op|MB/s|x/op)){{1,3}}\n){{1,4}}"
            ),
        ),
        (
            Format::Lmbench,
            format!(
                "(\\[[A-Z ]{{1,8}}: [a-z0-9]{{0,4}}\\]\n|(Simple syscall|Pipe latency|Pipe bandwidth): {digits} (microseconds|MB/sec|KB/sec)\n|\"size=[0-9]k ovr=[0-9.]{{1,4}}\n|[0-9]{{1,2}} {digits}\n){{1,6}}"
            ),
        ),
        (
            Format::Hyperfine,
            format!(r#"\{{"results": \[{json_obj}(, {json_obj}){{0,2}}\]\}}"#),
        ),
    ];
    for (f, re) in &shaped {
        let accepted = Cell::new(0);
        check(1000, &re.as_str(), |t| {
            let ok = check_import(*f, &t)?.is_some();
            accepted.set(accepted.get() + usize::from(ok));
            Ok(())
        });
        assert!(accepted.get() > 0, "no shaped {f:?} file was valid");
    }
}

fn import_seeds() -> Vec<(Format, String)> {
    let mut s = vec![
        (Format::Hyperfine, fixture("hyperfine.json")),
        (Format::Hyperfine, fixture("hyperfine-one.json")),
        (Format::Gobench, fixture("gobench-old.txt")),
        (Format::Gobench, fixture("gobench-new.txt")),
    ];
    for n in 0..3 {
        s.push((
            Format::Lmbench,
            fixture(&format!("lmbench/x86_64-linux-gnu/bench1.{n}")),
        ));
    }
    s
}

#[test]
fn mutated_imports_are_possible_values_that_store_whole_or_refusals() {
    let seeds = import_seeds();
    for (f, s) in &seeds {
        assert!(parse(*f, s).is_ok(), "seed {f:?} parses");
    }
    // One store for all cases: what the parser accepts, the store takes
    // whole (or refuses as bad input), and a refusal adds nothing.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db"), true).unwrap();
    let stored = Cell::new(0usize);
    let case = (0..seeds.len(), edits(), 0..8u32);
    check(3000, &case, |(i, e, store_one_in)| {
        let (f, seed) = &seeds[i];
        let text = apply(seed, &e);
        let Some(imp) = check_import(*f, &text)? else {
            return Ok(());
        };
        if store_one_in != 0 {
            return Ok(()); // storing every case would cost most of the time
        }
        let before = store.experiment_ids().unwrap().len();
        match import::store(&store, &imp, None, "fuzz") {
            Ok(_) => stored.set(stored.get() + 1),
            Err(err) => {
                prop_assert!(is_user_error(&err), "failed, not refused: {err:#}");
                prop_assert_eq!(store.experiment_ids().unwrap().len(), before);
            }
        }
        Ok(())
    });
    assert!(stored.get() > 0, "some mutated imports were stored");
    for id in store.experiment_ids().unwrap() {
        assert_eq!(store.info(id).unwrap().status, "complete");
    }
}

// ---------------------------------------------------- through the binary

fn assert_exit_2_one_line(out: &std::process::Output, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: exit 2; stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: one line: {err}");
}

#[test]
fn binary_refuses_bad_plans_and_imports_with_exit_2_and_one_line() {
    let sb = Sandbox::new();
    let mut files: Vec<(&str, Vec<u8>)> = vec![
        (
            "huge.toml",
            apply(RICH_PLAN, &[Edit::Number(0, "99999999999999999999".into())]).into_bytes(),
        ),
        ("nan.toml", RICH_PLAN.replace("\"90s\"", "nan").into_bytes()),
        ("latin1.toml", b"name = \"caf\xe9\"\n".to_vec()),
        (
            "deep.toml",
            format!("a = {}", "[".repeat(100_000)).into_bytes(),
        ),
    ];
    // A few arbitrary byte strings from proptest's generator.
    let mut runner = TestRunner::new(config(8));
    let bytes = proptest::collection::vec(any::<u8>(), 0..300);
    let names: Vec<String> = (0..8).map(|i| format!("random{i}.toml")).collect();
    for n in &names {
        files.push((n, bytes.new_tree(&mut runner).unwrap().current()));
    }
    for (name, bytes) in &files {
        std::fs::write(sb.path(name), bytes).unwrap();
        let out = sb.run(&["run", name, "--quiet", "--no-report"]);
        assert_exit_2_one_line(&out, name);
    }
    let imports: [(&str, &str, &[u8]); 5] = [
        (
            "gobench",
            "go.txt",
            b"BenchmarkX-2 10 -5 ns/op\nBenchmarkX-2 10 NaN ns/op\n",
        ),
        ("gobench", "inf.txt", b"BenchmarkX-2 10 +Inf ns/op\n"),
        (
            "hyperfine",
            "h.json",
            b"{\"results\":[{\"command\":\"a\",\"times\":[Infinity]}]}",
        ),
        ("hyperfine", "bin.json", b"\x00\xff\xfe{"),
        ("lmbench", "h.0", b"Simple syscall: 1e999 microseconds\n"),
    ];
    for (format, name, bytes) in imports {
        std::fs::write(sb.path(name), bytes).unwrap();
        let out = sb.run(&["import", format, name]);
        assert_exit_2_one_line(&out, name);
    }
    assert!(!sb.store().exists(), "nothing refused created a store");
}
