//! A config's setup may change directory before it exports: what it exports
//! still reaches the workload, with the default relative store path too
//! (the setup's environment dump is written by the setup shell itself).

use crate::common;
use common::*;

use std::process::Command;

#[test]
fn exports_after_a_cd_reach_the_workload_with_a_relative_store() {
    let sb = Sandbox::new();
    let elsewhere = tempfile::tempdir().unwrap();
    sb.write(
        "plan.toml",
        &format!(
            r#"
runs = 2
[[config]]
name = "base"
[[config]]
name = "moved"
setup = 'cd {dir} && export WHERE=$PWD'
[[workload]]
name = "w"
command = 'echo "where=${{WHERE:-none}}" >> seen.log'
"#,
            dir = elsewhere.path().display()
        ),
    );
    let out = Command::new(bin())
        .args([
            "--store",
            "sysdelta.db",
            "run",
            "plan.toml",
            "--quiet",
            "--no-report",
        ])
        .current_dir(sb.dir.path())
        .env("SYSDELTA_RUN_DIR", sb.run_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = std::fs::read_to_string(sb.path("seen.log")).unwrap();
    let want = format!("where={}", elsewhere.path().display());
    assert_eq!(seen.lines().filter(|l| *l == want).count(), 2, "{seen}");
    assert_eq!(
        seen.lines().filter(|l| *l == "where=none").count(),
        2,
        "{seen}"
    );
    let left: Vec<_> = std::fs::read_dir(elsewhere.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "nothing left where the setup went: {left:?}"
    );
    assert!(!sb.path("sysdelta.db.setup-env").exists());
}
