//! `ab`'s command line becomes a plan text that the plan loader checks;
//! a problem it finds cites a line of that text (`(ab):7:8: duplicate
//! config name 'a'`), which the user never wrote. Here such a position
//! becomes the option the user did write (`--config: duplicate config
//! name 'a'`).

use crate::error::Error;

/// `e` with every `(ab):LINE:COL:` position in it replaced by the `ab`
/// option that line of `text` (the generated plan) came from.
pub fn in_user_terms(e: Error, text: &str) -> Error {
    match e {
        Error::BadInput(problems) => Error::BadInput(
            problems
                .into_iter()
                .map(|p| one_problem(&p, text))
                .collect(),
        ),
        other => other,
    }
}

fn one_problem(p: &str, text: &str) -> String {
    let Some(rest) = p.strip_prefix("(ab):") else {
        return p.to_string();
    };
    // "7:8: message", or " message" for a problem of the whole plan.
    let mut parts = rest.splitn(3, ':');
    let (line, col, msg) = (parts.next(), parts.next(), parts.next());
    match (line.and_then(|l| l.parse::<usize>().ok()), col, msg) {
        (Some(n), Some(c), Some(msg)) if c.trim().parse::<usize>().is_ok() => {
            format!("{}: {}", option_of_line(text, n), msg.trim_start())
        }
        _ => format!("ab: {}", rest.trim_start()),
    }
}

/// The option a line (1-based) of the generated plan came from: the table
/// it is in and its key.
fn option_of_line(text: &str, n: usize) -> &'static str {
    let lines: Vec<&str> = text.lines().collect();
    let Some(line) = lines.get(n.saturating_sub(1)) else {
        return "ab";
    };
    let key = line.split('=').next().unwrap_or("").trim();
    let table = lines[..n.saturating_sub(1)]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .unwrap_or("");
    match (table, key) {
        (t, _) if t.starts_with("[config.kernel") => "-k",
        ("[[config]]", "teardown") => "--cleanup",
        ("[[config]]", _) => "--config",
        ("[[workload]]", "name") => "the command's name (-n, or after the command)",
        ("[[workload]]", _) => "the command",
        (_, "shell") => "--shell",
        (_, "prepare") => "--prepare",
        (_, "conclude") => "--conclude",
        _ => "ab",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "name = \"ab\"\nprepare = \"x\"\n\n[[config]]\nname = \"a\"\n\n[[config]]\nname = \"a\"\nteardown = \"y\"\n\n[config.kernel]\nimage = \"z\"\n\n[[workload]]\nname = \"\"\ncommand = \"true\"\n";

    #[test]
    fn positions_become_the_options_the_user_wrote() {
        let e = Error::BadInput(vec![
            "(ab):8:8: duplicate config name 'a'".into(),
            "(ab):9:1: bad teardown".into(),
            "(ab):12:1: no image".into(),
            "(ab):15:8: workload name '' must be non-empty".into(),
            "(ab):16:1: bad command".into(),
            "(ab):2:1: bad prepare".into(),
            "(ab): no workloads".into(),
            "--runs must be at least 1".into(),
        ]);
        assert_eq!(
            in_user_terms(e, PLAN).problems(),
            [
                "--config: duplicate config name 'a'",
                "--cleanup: bad teardown",
                "-k: no image",
                "the command's name (-n, or after the command): workload name '' must be non-empty",
                "the command: bad command",
                "--prepare: bad prepare",
                "ab: no workloads",
                "--runs must be at least 1",
            ]
        );
    }
}
