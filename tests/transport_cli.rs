//! `sysdelta transport` end to end on a small ramp: the header, the raw
//! blocks, the summary with the ceiling and the harness cost.

#[test]
fn small_sweep_prints_blocks_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args([
            "transport",
            "--transports",
            "pipe,unix-dgram",
            "--from-mb",
            "1",
            "--to-mb",
            "2",
            "--step-mb",
            "1",
            "--quiet",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .expect("binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("TRANS BENCH for "), "{text}");
    assert!(text.contains("PIPE with 1MB buffers"), "{text}");
    assert!(text.contains("UNIX-DGRAM with "), "{text}");
    assert!(text.contains("write of 2MB in "), "{text}");
    assert!(text.contains("Summary: 100-byte records"), "{text}");
    assert!(text.contains("Ceiling: single-core memcpy of 100-byte records"));
    assert!(text.contains("Harness cost: "));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "consumer files removed"
    );
}
