//! `history` judges the newest experiment against those before it: a +30%
//! step in the newest one (or two) is "regressed at the newest", and with
//! `--fail-on-newest` the exit status says so; a history with no step is
//! not flagged.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common;
use common::{stderr, stdout, Sandbox};

/// Ten runs around `level` seconds with 3% normal noise (Box-Muller, seeded).
fn runs(rng: &mut ChaCha8Rng, level: f64) -> String {
    (0..10)
        .map(|_| {
            let (u, v): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
            let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            format!("{:.7}", level * (1.0 + 0.03 * z))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Import one hyperfine file per level, labelled `c1`, `c2`, ... in order.
fn import(sb: &Sandbox, levels: &[f64], seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (k, l) in levels.iter().enumerate() {
        let f = sb.write(
            &format!("c{k}.json"),
            &format!(
                r#"{{"results":[{{"command":"make","times":[{}]}}]}}"#,
                runs(&mut rng, *l)
            ),
        );
        let label = format!("c{}", k + 1);
        let out = sb.run(&[
            "import",
            "hyperfine",
            f.to_str().unwrap(),
            "--label",
            &label,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

fn history(sb: &Sandbox) -> std::process::Output {
    sb.run(&["history", "wall", "--label-prefix", "c", "--fail-on-newest"])
}

#[test]
fn a_30_percent_step_in_the_newest_experiment_is_flagged_and_fails() {
    for seed in [1, 2, 3] {
        let sb = Sandbox::new();
        let mut levels = vec![0.010; 9];
        levels.push(0.013);
        import(&sb, &levels, seed);
        let out = history(&sb);
        let text = stdout(&out);
        assert!(
            text.contains("Newest experiment c10: REGRESSED at the newest, +"),
            "seed {seed}:\n{text}"
        );
        assert_eq!(out.status.code(), Some(1), "seed {seed}: {}", stderr(&out));
        assert!(stderr(&out).contains("c10 regressed at the newest"));
    }
}

#[test]
fn the_html_page_and_the_json_carry_the_verdict() {
    let sb = Sandbox::new();
    let mut levels = vec![0.010; 9];
    levels.push(0.013);
    import(&sb, &levels, 5);
    let out = sb.run(&["history", "wall", "--format", "html"]);
    assert!(out.status.success(), "without --fail-on-newest: exit 0");
    assert!(stdout(&out).contains("Newest experiment c10: REGRESSED at the newest"));
    let out = sb.run(&["history", "wall", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["newest"]["judged"], "regressed");
    assert_eq!(v["newest"]["labels"][0], "c10");
    let rel = v["newest"]["test"]["level"].as_f64().unwrap()
        / v["newest"]["test"]["reference"].as_f64().unwrap();
    assert!((1.2..1.4).contains(&rel), "{rel}");
}

#[test]
fn a_minimum_change_spares_smaller_regressions() {
    let sb = Sandbox::new();
    let mut levels = vec![0.010; 9];
    levels.push(0.013);
    import(&sb, &levels, 6);
    let out = sb.run(&[
        "history",
        "wall",
        "--fail-on-newest",
        "--fail-min-change",
        "50%",
    ]);
    assert!(out.status.success(), "+30% < 50%: {}", stderr(&out));
    let out = sb.run(&[
        "history",
        "wall",
        "--fail-on-newest",
        "--fail-min-change",
        "10%",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("at least 10%"), "{}", stderr(&out));
}

#[test]
fn a_step_in_the_newest_two_is_flagged_as_the_newest_two() {
    let sb = Sandbox::new();
    let mut levels = vec![0.010; 8];
    levels.extend([0.013, 0.013]);
    import(&sb, &levels, 7);
    let out = history(&sb);
    let text = stdout(&out);
    assert!(text.contains("REGRESSED at the newest"), "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
}

#[test]
fn an_improvement_is_said_and_does_not_fail() {
    let sb = Sandbox::new();
    let mut levels = vec![0.010; 9];
    levels.push(0.007);
    import(&sb, &levels, 4);
    let out = history(&sb);
    assert!(
        stdout(&out).contains("improved at the newest"),
        "{}",
        stdout(&out)
    );
    assert!(out.status.success());
}

#[test]
fn no_step_is_not_flagged() {
    for seed in [1, 2, 3, 4, 5] {
        let sb = Sandbox::new();
        import(&sb, &[0.010; 10], seed);
        let out = history(&sb);
        let text = stdout(&out);
        assert!(
            text.contains("Newest experiment c10: no change beyond noise and drift"),
            "seed {seed}:\n{text}"
        );
        assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    }
}

#[test]
fn too_few_experiments_are_not_judged_and_json_says_so() {
    let sb = Sandbox::new();
    import(&sb, &[0.010, 0.010, 0.013], 1);
    let out = history(&sb);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Newest experiment c3: not judged"));
    let out = sb.run(&["history", "wall", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["newest"]["judged"], "not_judged");
}
