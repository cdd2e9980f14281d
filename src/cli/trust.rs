//! Stored plans are code: the rule `run --resume` and `fleet resume`
//! follow before they execute what a store says.
//!
//! A resume runs the stored plan's commands (setups, teardowns, workload
//! commands, prepare/conclude, kernel command lines), its stored run flags,
//! and, after a crash inside a config, that config's teardown with the
//! environment its setup exported, as stored. Whoever can write that row
//! could have written them, and a resume typically runs as root. So they
//! are executed only when one of these holds (docs/plan.md, "Resuming"):
//!
//! - (a) the store is the invoking user's own: an SQLite file that the
//!   user (or root, or under sudo the user who ran sudo) owns, that only
//!   its owner can write, in a directory others cannot write (or a sticky
//!   one); a PostgreSQL team store never is, whoever runs it; and the
//!   experiment was written there, not copied in by `pull` or `push` from
//!   a store whoever could write that one wrote ([`not_written_here`]);
//! - (b) the user gives the plan again (`--plan FILE`), and its text is
//!   the stored text, byte for byte (and, for `fleet resume`, the run
//!   flags after `--` are the stored ones); what the plan does not hold (a
//!   stored `--output` file, an exported environment) still needs (c);
//! - (c) the user has been shown what would run and said so
//!   (`--trust-stored-plan`).
//!
//! Anything else is refused in one line (after what would run, shown),
//! exit 2, before anything is written. A `--plan` whose text differs is
//! refused whatever the store.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::bad;
use crate::report::escape::terminal_safe;
use crate::store::Store;

/// What the user said about a stored plan on the command line.
#[derive(Clone, Copy, Default)]
pub struct Consent<'a> {
    /// `--plan FILE`: the plan, given again.
    pub plan: Option<&'a Path>,
    /// `--trust-stored-plan`: run what is shown.
    pub trust_stored: bool,
}

/// What a resume would execute from a store, for the rule and for showing.
pub struct Stored<'a> {
    /// "experiment 3", "fleet 2": in messages.
    pub what: String,
    /// Where the plan came from (its file name when it was stored).
    pub plan_source: &'a str,
    pub plan_text: &'a str,
    /// What runs beside the plan and is not in its text: (what, value),
    /// e.g. ("--output", "/path"), ("the environment ... exported", "K=V").
    pub beside: Vec<(String, String)>,
}

/// Why `store` is not the invoking user's own (rule (a)), or None when it
/// is.
pub fn not_owned(store: &Store) -> Option<String> {
    if store.is_pg() {
        return Some(format!(
            "the team store {} (every writer of a PostgreSQL store could have written it)",
            store.shown()
        ));
    }
    sqlite_not_owned(store.path())
}

/// Why experiment `id` of `store`, though the store be the user's own, is
/// not (rule (a)): a `pull` or `push` copied it in from another store,
/// where whoever could write that store wrote its plan. None when it was
/// written here.
pub fn not_written_here(store: &Store, id: i64) -> Result<Option<String>> {
    Ok(store.copied_from(id)?.map(|from| {
        format!(
            "another store (copied in {}), whose writers could have written it",
            terminal_safe(&from)
        )
    }))
}

/// Rule (a) for an SQLite file: why not, or None.
pub fn sqlite_not_owned(path: &Path) -> Option<String> {
    // Their own, root's, and for root under sudo the user who ran sudo
    // (who could write the row anyway): the same owners sys::trust takes.
    let uids = crate::sys::trust::trusted_uids();
    let real = match fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) => {
            return Some(format!(
                "the store {}, which cannot be checked ({e})",
                path.display()
            ))
        }
    };
    let mut wal = real.clone().into_os_string();
    wal.push("-wal");
    for f in [real.clone(), PathBuf::from(wal)] {
        let Ok(m) = fs::metadata(&f) else {
            continue;
        };
        if !uids.contains(&m.uid()) {
            return Some(format!(
                "{}, which uid {} owns, not you or root",
                f.display(),
                m.uid()
            ));
        }
        if m.mode() & 0o022 != 0 {
            return Some(format!(
                "{}, which others can write (mode {:o})",
                f.display(),
                m.mode() & 0o777
            ));
        }
    }
    if let Some(dir) = real.parent() {
        if let Ok(m) = fs::metadata(dir) {
            let sticky = m.mode() & 0o1000 != 0;
            if !sticky && (m.mode() & 0o022 != 0 || !uids.contains(&m.uid())) {
                return Some(format!(
                    "{}, in {}, where others can replace it",
                    real.display(),
                    dir.display()
                ));
            }
        }
    }
    None
}

/// Apply the rule: Ok to execute what is stored, or refused (bad input,
/// one line, after what would run, shown on stderr). `not_owned` is
/// [`not_owned`]'s answer for the store; `extra_given` says whether what
/// the user gave besides `--plan` (a fleet's run flags) matched.
pub fn decide(stored: &Stored, not_owned: Option<String>, consent: Consent) -> Result<()> {
    let plan_given = match consent.plan {
        None => false,
        Some(f) => {
            let given = fs::read(f).map_err(|e| bad(format!("--plan {}: {e}", f.display())))?;
            if given != stored.plan_text.as_bytes() {
                return Err(bad(format!(
                    "--plan {}: not the plan {} stored (their texts differ); nothing was run",
                    f.display(),
                    stored.what
                )));
            }
            true
        }
    };
    let Some(why) = not_owned else {
        return Ok(());
    };
    if consent.trust_stored {
        show(stored, !plan_given);
        crate::sys::stderr::say!(
            "sysdelta: {} comes from {why}; running it as shown (--trust-stored-plan)",
            stored.what
        );
        return Ok(());
    }
    if plan_given && stored.beside.is_empty() {
        return Ok(());
    }
    show(stored, !plan_given);
    Err(bad(if plan_given {
        let names: Vec<&str> = stored.beside.iter().map(|(k, _)| k.as_str()).collect();
        format!(
            "{}'s {} (shown above) is not in the plan and comes from {why}: check it, then pass --trust-stored-plan; nothing was run",
            stored.what,
            names.join(" and ")
        )
    } else {
        format!(
            "{}'s plan (shown above) comes from {why}: give the plan again with --plan FILE, or check it and pass --trust-stored-plan; nothing was run",
            stored.what
        )
    }))
}

/// Print on stderr what would run: the plan's text whole (every command
/// is in it), then what runs beside it; terminal-safe.
fn show(stored: &Stored, with_plan: bool) {
    if with_plan {
        crate::sys::stderr::say!(
            "sysdelta: {}: the stored plan ({}), which would run:",
            stored.what,
            terminal_safe(stored.plan_source)
        );
        for line in stored.plan_text.lines() {
            crate::sys::stderr::say!("  | {}", terminal_safe(line));
        }
    }
    for (what, value) in &stored.beside {
        crate::sys::stderr::say!(
            "sysdelta: {}: and, not in the plan, {what}: {}",
            stored.what,
            terminal_safe(value)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const PLAN: &str =
        "name = \"p\"\n[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n";

    fn stored(beside: Vec<(String, String)>) -> Stored<'static> {
        Stored {
            what: "experiment 1".into(),
            plan_source: "p.toml",
            plan_text: PLAN,
            beside,
        }
    }

    fn refused(r: Result<()>) -> String {
        let e = r.unwrap_err();
        assert!(
            crate::error::user_problems(&e).is_some(),
            "refused as bad input: {e:#}"
        );
        let msg = format!("{e:#}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
        msg
    }

    #[test]
    fn an_owned_store_resumes_as_before() {
        assert!(decide(&stored(vec![]), None, Consent::default()).is_ok());
    }

    #[test]
    fn a_store_not_owned_is_refused_without_consent() {
        let why = Some("the team store x".to_string());
        let msg = refused(decide(&stored(vec![]), why, Consent::default()));
        assert!(
            msg.contains("--trust-stored-plan") && msg.contains("--plan"),
            "{msg}"
        );
    }

    #[test]
    fn a_plan_given_again_must_be_the_stored_text() {
        let t = tempfile::tempdir().unwrap();
        let same = t.path().join("same.toml");
        fs::write(&same, PLAN).unwrap();
        let other = t.path().join("other.toml");
        fs::write(&other, PLAN.replace("true", "touch /tmp/x")).unwrap();
        let why = || Some("the team store x".to_string());
        let given = |p| Consent {
            plan: Some(p),
            trust_stored: false,
        };
        assert!(decide(&stored(vec![]), why(), given(&same)).is_ok());
        let msg = refused(decide(&stored(vec![]), why(), given(&other)));
        assert!(msg.contains("differ"), "{msg}");
        // Whatever the store: a differing plan is never what the user meant.
        refused(decide(&stored(vec![]), None, given(&other)));
        // What the plan does not hold still needs the confirmation.
        let env = vec![("the exported environment".into(), "LD_PRELOAD=/x".into())];
        let msg = refused(decide(&stored(env.clone()), why(), given(&same)));
        assert!(msg.contains("exported environment"), "{msg}");
        let both = Consent {
            plan: Some(&same),
            trust_stored: true,
        };
        assert!(decide(&stored(env), why(), both).is_ok());
    }

    #[test]
    fn the_confirmation_flag_runs_what_is_shown() {
        let c = Consent {
            plan: None,
            trust_stored: true,
        };
        assert!(decide(&stored(vec![]), Some("x".into()), c).is_ok());
    }

    #[test]
    fn an_sqlite_store_is_owned_when_only_its_owner_can_write_it() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("s.db");
        fs::write(&db, "").unwrap();
        fs::set_permissions(&db, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(sqlite_not_owned(&db), None);
        fs::set_permissions(&db, fs::Permissions::from_mode(0o666)).unwrap();
        let why = sqlite_not_owned(&db).unwrap();
        assert!(why.contains("others can write"), "{why}");
        fs::set_permissions(&db, fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let why = sqlite_not_owned(&db).unwrap();
        assert!(why.contains("others can replace"), "{why}");
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(
            sqlite_not_owned(&db),
            None,
            "a sticky directory is as ssh takes it"
        );
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o700)).unwrap();
    }
}
