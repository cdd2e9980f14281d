//! Builds the launcher of measured commands (src/process/launcher.c) as a
//! small executable that the sysdelta binary embeds (see
//! src/process/launcher.rs for why it exists).
//!
//! It is linked statically where the C library allows it: a static
//! launcher has about half the resident size of a dynamic one (550 KiB
//! against 1 MiB here), and every measured command's max RSS is at least
//! the launcher's. Where static linking fails (no libc.a), it is linked
//! dynamically, with a warning.

use std::path::Path;

const SOURCE: &str = "../../src/process/launcher.c";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
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
