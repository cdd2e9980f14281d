//! A kernel bisection end to end: five commits on the Debian
//! `linux-source-6.1` tree (`common::kernel_tree`), one of which slows
//! `getppid()`; `sysdelta bisect` with a kernel config template builds
//! each commit it visits (a tinyconfig kernel, the first build full, the
//! others incremental in one object directory), boots each config several
//! times a round (boots are the unit) and must name the slow commit.
//! Needs root, QEMU with virtiofsd, the tarball and the kernel build tools
//! (`scripts/install-vm-tools.sh`); skips without them.
//!
//! It takes about 6 minutes on a loaded 2-core machine once the tree's
//! first build is cached, and that build alone 35 minutes (figures in
//! docs/bisect.md, "Kernels"): too long for CI, so it is a benchmark run
//! by hand: `cargo test --test kbisect -- --ignored --nocapture`
//! (as root; `SYSDELTA_TEST_KERNEL_DIR=DIR` shares the prepared tree and
//! its build cache with `tests/long/kbuild.rs` run from another target dir).

mod common;
use common::kernel_tree;
use common::*;

use std::process::Command;
use std::time::Instant;

/// One edit: (file, text to find, its replacement).
type Edit = (&'static str, &'static str, &'static str);

/// The commits on top of the tree's `main`, in order: (branch, edits).
/// Two touch no compiled file, two change a comment in a compiled one,
/// and the third adds a busy loop to getppid() (about a microsecond a
/// call, as in `tests/long/kbuild.rs`), which the micro suite's null call times.
fn commits() -> Vec<(&'static str, Vec<Edit>)> {
    vec![
        (
            "kbisect-1",
            vec![("README", "Linux kernel\n", "Linux kernel (bisect test 1)\n")],
        ),
        (
            "kbisect-2",
            vec![(
                "kernel/sys.c",
                " * release_task()->call_rcu(delayed_put_task_struct).\n",
                " * release_task()->call_rcu(delayed_put_task_struct).\n * (bisect test 2)\n",
            )],
        ),
        (
            "kbisect-3",
            vec![(
                "kernel/sys.c",
                "\tint pid;\n\n\trcu_read_lock();\n\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));",
                "\tint pid;\n\tvolatile int spin;\n\n\tfor (spin = 0; spin < 3000; spin++)\n\t\t;\n\trcu_read_lock();\n\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));",
            )],
        ),
        (
            "kbisect-4",
            vec![("README", "(bisect test 1)", "(bisect test 4)")],
        ),
        (
            "kbisect-5",
            vec![(
                "kernel/fork.c",
                "#ifdef __ARCH_WANT_SYS_FORK\nSYSCALL_DEFINE0(fork)",
                "#ifdef __ARCH_WANT_SYS_FORK\n/* bisect test 5 */\nSYSCALL_DEFINE0(fork)",
            )],
        ),
    ]
}

const PLAN: &str = r#"
boots = 6
[[workload]]
name = "micro"
builtin = "micro"
params = { quick = true, filter = ["proc.null_call"] }
"#;

#[test]
#[ignore = "a benchmark (a 35-minute first kernel build): cargo test --test kbisect -- --ignored"]
fn a_kernel_bisection_over_built_commits_names_the_commit_that_slows_getppid() {
    if let Some(why) = kernel_tree::missing() {
        skip(format!(
            "{why} (scripts/install-vm-tools.sh installs what kernel builds need)"
        ));
        return;
    }
    let t0 = Instant::now();
    let tree = kernel_tree::tree();
    let mut ids = Vec::new();
    let mut base = "main".to_string();
    for (branch, edits) in commits() {
        ids.push(kernel_tree::commit_on(&tree, branch, &base, &edits));
        base = branch.to_string();
    }
    let culprit = &ids[2];
    let sb = Sandbox::new();
    let plan = sb.write("plan.toml", PLAN);
    let template = sb.write(
        "kernel.toml",
        &format!(
            "[[config]]\nname = \"{{name}}\"\n[config.kernel]\ntree = \"{}\"\nref = \"{{commit}}\"\nkconfig = \"{}\"\n",
            tree.display(),
            kernel_tree::tiny_config().display()
        ),
    );
    let t1 = Instant::now();
    let out = sb
        .command()
        .env("XDG_CACHE_HOME", kernel_tree::build_cache())
        // ccache's directory (make sees HOME) beside the build cache, not
        // root's ~/.cache/ccache: the machine is left as found, and a
        // fresh clone's first build is as cold as a fresh machine's.
        .env("HOME", kernel_tree::build_cache())
        .arg("bisect")
        .arg("--repo")
        .arg(&tree)
        .args(["--good", "main", "--bad", "kbisect-5"])
        .arg("--config-template")
        .arg(&template)
        .args(["--metric", "micro/proc.null_call", "--plan"])
        .arg(&plan)
        .args(["--alpha", "0.05", "--round", "6", "--budget", "12"])
        .args(["--seed", "30", "--cache"])
        .arg(sb.path("cache"))
        .output()
        .unwrap();
    let err = stderr(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{text}");
    // The figures, for the record (docs/bisect.md quotes them).
    for l in err.lines().filter(|l| l.starts_with("kernel build:")) {
        note(format!("kbisect: {l}"));
    }
    let c = rusqlite::Connection::open_with_flags(
        sb.store(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    let boots = count("SELECT count(*) FROM boots WHERE status = 'ok'");
    let kernels = count("SELECT count(DISTINCT uname) FROM boots WHERE status = 'ok'");
    note(format!(
        "kbisect: {kernels} kernels booted {boots} times; bisect took {:.0} s ({:.0} s with the tree)",
        t1.elapsed().as_secs_f64(),
        t0.elapsed().as_secs_f64()
    ));
    for l in text.lines() {
        note(format!("kbisect: | {l}"));
    }
    let named = text
        .split("first bad commit ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_default();
    assert!(
        !named.is_empty() && culprit.starts_with(named),
        "expected {culprit:.12} (kbisect-3) named:\n{text}"
    );
    // Boots are the unit: each stored run of a round ran in a booted
    // kernel, the one its config's commit built.
    assert_eq!(
        count("SELECT count(*) FROM runs WHERE boot_id IS NULL AND status = 'ok'"),
        0
    );
    assert!(kernels >= 3, "good, bad and at least one midpoint booted");
}

/// A kernel commit that does not build stops nothing silently: here the
/// patch the template adds applies to no commit, so the good end does not
/// build, and bisect says so with the build log's path, exit code 2,
/// before anything is booted. (A midpoint that does not build is skipped
/// instead, by the driver `tests/bisect.rs` checks with userspace builds.)
/// Needs only git: the build fails at `git apply`, before make.
#[test]
fn a_kernel_commit_that_does_not_build_is_reported_with_its_build_log() {
    if !git_works() {
        skip("git not installed");
        return;
    }
    let sb = Sandbox::new();
    let repo = sb.path("linux");
    std::fs::create_dir_all(&repo).unwrap();
    let g = |args: &[&str]| {
        let ok = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    g(&["init", "-q", "-b", "main"]);
    for i in 0..3 {
        std::fs::write(repo.join("Makefile"), format!("# commit {i}\n")).unwrap();
        g(&["add", "Makefile"]);
        g(&["commit", "-q", "-m", &format!("commit {i}")]);
    }
    let patch = sb.write(
        "never.patch",
        "--- a/absent.c\n+++ b/absent.c\n@@ -1 +1 @@\n-old\n+new\n",
    );
    let plan = sb.write("plan.toml", PLAN);
    let template = sb.write(
        "kernel.toml",
        &format!(
            "[[config]]\nname = \"{{name}}\"\n[config.kernel]\ntree = \"{}\"\nref = \"{{commit}}\"\npatches = [\"{}\"]\n",
            repo.display(),
            patch.display()
        ),
    );
    let out = sb
        .command()
        .env("XDG_CACHE_HOME", sb.path("xdg"))
        .arg("bisect")
        .arg("--repo")
        .arg(&repo)
        .args(["--good", "main~2", "--bad", "main"])
        .arg("--config-template")
        .arg(&template)
        .args(["--metric", "micro/proc.null_call", "--plan"])
        .arg(&plan)
        .arg("--cache")
        .arg(sb.path("cache"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the good commit") && err.contains("does not build"),
        "{err}"
    );
    // Why, in one line (the log kbuild names holds make's output; a patch
    // that does not apply fails before make).
    assert!(
        err.contains("its log: ") && err.contains("absent.c"),
        "{err}"
    );
    assert!(!sb.store_exists(), "nothing stored before a build");
}

fn git_works() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
