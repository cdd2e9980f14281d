//! Sets SYSDELTA_VERSION, what `--version` prints: the package's version
//! and, built from a git checkout, the commit (`0.1.0 (1a2b3c4)`), so a
//! report of a bug names the code that ran; plain `0.1.0` from a source
//! tarball or where git is missing. Only the top crate (the command line)
//! reads it, so a commit rebuilds that crate and no layer below it.

use std::path::Path;

fn main() {
    version();
}

/// `cargo:rustc-env=SYSDELTA_VERSION=...`, and the git files whose change
/// (a commit, a checkout) makes it stale.
fn version() {
    let pkg = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
    };
    let version = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(commit) => {
            // HEAD, the branch it names, and packed refs: watched only
            // where they exist (a missing path would rerun every build).
            let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watched.push(branch);
            }
            for w in watched {
                if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &w]) {
                    if Path::new(&p).exists() {
                        println!("cargo:rerun-if-changed={p}");
                    }
                }
            }
            format!("{pkg} ({commit})")
        }
        None => pkg,
    };
    println!("cargo:rustc-env=SYSDELTA_VERSION={version}");
}
