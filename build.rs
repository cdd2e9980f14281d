//! Builds the launcher of measured commands (src/process/launcher.c) as a
//! small executable that the sysdelta binary embeds (see
//! src/process/launcher.rs for why it exists).
//!
//! It is linked statically where the C library allows it: a static
//! launcher has about half the resident size of a dynamic one (550 KiB
//! against 1 MiB here), and every measured command's max RSS is at least
//! the launcher's. Where static linking fails (no libc.a), it is linked
//! dynamically, with a warning.
//!
//! It also sets SYSDELTA_VERSION, what `--version` prints: the package's
//! version and, built from a git checkout, the commit (`0.1.0 (1a2b3c4)`),
//! so a report of a bug names the code that ran; plain `0.1.0` from a
//! source tarball or where git is missing.

use std::path::Path;

const SOURCE: &str = "src/process/launcher.c";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    version();
    let out = Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("sysdelta-launcher");
    let compiler = cc::Build::new()
        .opt_level(2)
        .debug(false)
        .warnings(true)
        .get_compiler();
    let link = |extra: &[&str]| -> Result<(), String> {
        let mut cmd = compiler.to_command();
        cmd.args(extra)
            .args(["-Wl,--gc-sections", "-s", "-o"])
            .arg(&out)
            .arg(SOURCE);
        // The command without its environment, which cc sets in full.
        let shown = format!(
            "{} {}",
            cmd.get_program().to_string_lossy(),
            cmd.get_args()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let output = cmd
            .output()
            .map_err(|e| format!("cannot run {shown}: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{shown} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    };
    if let Err(static_err) = link(&["-static"]) {
        if let Err(dynamic_err) = link(&[]) {
            panic!("cannot build {SOURCE}:\n{static_err}\n{dynamic_err}");
        }
        println!(
            "cargo:warning=the launcher of measured commands is linked dynamically \
             (static linking failed), so no command's maxrss reads below about 1 MiB"
        );
    }
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
