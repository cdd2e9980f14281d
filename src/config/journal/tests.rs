//! The journal's tests: the log's round trip, refusals, torn lines and
//! boots, kept out of mod.rs so that the log itself reads in one file.

use super::*;

/// Whether the journal at `path` holds entries, read without the check of
/// their actions: these tests undo into temporary files, which a journal
/// read from disk may not name (see `permitted::permitted`).
fn pending_in(path: &Path) -> bool {
    !Journal::open_unchecked(path)
        .unwrap()
        .state
        .entries
        .is_empty()
}

#[test]
fn removing_a_zram_device_that_is_gone_is_done() {
    // A restore after a crash between the removal and its journal
    // update must not fail (and so block every later run) forever.
    let r = apply(&UndoAction::RemoveZram { id: 4_000_000 }).unwrap();
    assert!(r.contains("is gone, nothing to do"), "{r}");
}

#[test]
fn record_done_and_pending_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.journal");
    let file = dir.path().join("value");
    fs::write(&file, "old").unwrap();
    let mut j = Journal::open(&path).unwrap();
    assert!(!pending_in(&path));
    let id = j
        .record(UndoAction::WriteFile {
            path: file.clone(),
            contents: "old".into(),
        })
        .unwrap();
    assert!(pending_in(&path));
    fs::write(&file, "new").unwrap();
    // A second process opening the journal sees the entry and restores it.
    let mut other = Journal::open_unchecked(&path).unwrap();
    let lines = other.restore_all().unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(fs::read_to_string(&file).unwrap(), "old");
    assert!(!pending_in(&path));
    // done() on an entry another process already cleared is harmless.
    j.done(id).unwrap();
}

#[test]
fn pending_journal_refuses_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.journal");
    Journal::open_unchecked(&path)
        .unwrap()
        .refuse_pending(None)
        .unwrap();
    let mut j = Journal::open(&path).unwrap();
    j.record(UndoAction::Unmount {
        target: "/nonexistent-mnt".into(),
        source: None,
    })
    .unwrap();
    let e = Journal::open_unchecked(&path)
        .unwrap()
        .refuse_pending(None)
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "{e}");
    assert!(
        e.contains("sysdelta restore") && e.contains("unmount /nonexistent-mnt"),
        "{e}"
    );
    // A torn last line (power loss mid-append) is ignored.
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str("{\"op\":\"add\",\"ent");
    fs::write(&path, text).unwrap();
    assert_eq!(Journal::open_unchecked(&path).unwrap().pending().len(), 1);
    j.restore_all().unwrap();
    Journal::open_unchecked(&path)
        .unwrap()
        .refuse_pending(None)
        .unwrap();
}

#[test]
fn kernel_state_of_an_earlier_boot_is_not_restored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.journal");
    let value = dir.path().join("value");
    fs::write(&value, "now").unwrap();
    let gone = dir.path().join("backing.img");
    fs::write(&gone, "x").unwrap();
    let mut j = Journal::open(&path).unwrap();
    j.record(UndoAction::RemovePath {
        path: gone.clone(),
        recursive: false,
    })
    .unwrap();
    j.record(UndoAction::WriteFile {
        path: value.clone(),
        contents: "before".into(),
    })
    .unwrap();
    // Pretend both were recorded in another boot.
    let text = fs::read_to_string(&path)
        .unwrap()
        .replace(&boot_id(), "an-earlier-boot");
    fs::write(&path, text).unwrap();
    let lines = Journal::open_unchecked(&path)
        .unwrap()
        .restore_all()
        .unwrap();
    assert!(lines[0].contains("before the last reboot"), "{lines:?}");
    assert_eq!(fs::read_to_string(&value).unwrap(), "now");
    assert!(
        !gone.exists(),
        "files on disk are removed whatever the boot"
    );
}

#[test]
fn failed_undo_is_kept_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.journal");
    let mut j = Journal::open(&path).unwrap();
    let missing = dir.path().join("no/such/file");
    j.record(UndoAction::WriteFile {
        path: missing.clone(),
        contents: "x".into(),
    })
    .unwrap();
    let gone = dir.path().join("gone");
    j.record(UndoAction::RemovePath {
        path: gone,
        recursive: false,
    })
    .unwrap();
    let err = j.restore_all().unwrap_err().to_string();
    assert!(err.contains("no/such/file"), "{err}");
    assert_eq!(j.pending().len(), 1);
    assert!(pending_in(&path));
}

#[test]
fn undo_runs_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.journal");
    let file = dir.path().join("v");
    fs::write(&file, "").unwrap();
    let mut j = Journal::open(&path).unwrap();
    for v in ["first", "second"] {
        j.record(UndoAction::WriteFile {
            path: file.clone(),
            contents: v.into(),
        })
        .unwrap();
    }
    j.restore_all().unwrap();
    // The oldest recorded value is the state before everything.
    assert_eq!(fs::read_to_string(&file).unwrap(), "first");
}

#[test]
fn start_time_of_self_is_stable() {
    let me = std::process::id() as i32;
    let a = process_start_time(me).unwrap();
    assert_eq!(Some(a), process_start_time(me));
    assert_eq!(unescape_mount_field("/a\\040b"), "/a b");
}
