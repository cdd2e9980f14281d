//! The checks' rules, case by case (owners, modes, sticky and shared
//! directories, links, hard links), and the files they make. Apart from
//! trust.rs, which they would make longer than its job.

use super::*;
use std::os::unix::fs::PermissionsExt;

const ME: u32 = 1000;
const OTHER: u32 = 65534;
const OWNERS: &[u32] = &[ME, 0];

fn dir(uid: u32, perm: u32) -> Facts {
    Facts {
        uid,
        mode: libc::S_IFDIR | perm,
        private_group: false,
        links: 2,
    }
}
fn file(uid: u32, perm: u32) -> Facts {
    Facts {
        uid,
        mode: libc::S_IFREG | perm,
        private_group: false,
        links: 1,
    }
}
fn upg(f: Facts) -> Facts {
    Facts {
        private_group: true,
        ..f
    }
}

#[test]
fn in_a_shared_directory_only_the_stores_data_may_be_a_teammates() {
    for p in [
        "/s/sysdelta.db.journal",
        "/s/x.db.runlog",
        "/s/x.db.deferred",
        "/s/x.db.step",
        "/s/x.db.setup-env",
        "/s/pg-a@h:5432-d.store",
        "/s/pg-a@h:5432-d.store.deferred",
    ] {
        assert!(obeyed(Path::new(p)), "{p}");
    }
    for p in [
        "/s/sysdelta.db",
        "/s/sysdelta.db-wal",
        "/s/sysdelta.db-shm",
        "/s/sysdelta.db-journal",
    ] {
        assert!(!obeyed(Path::new(p)), "{p}");
    }
}

#[test]
fn directories_only_their_owner_can_write_are_trusted() {
    // (facts, shared, trusted?)
    let table = [
        (dir(ME, 0o700), false, true),
        (dir(0, 0o755), false, true),
        (dir(OTHER, 0o755), false, false),
        (dir(ME, 0o775), false, false),
        (dir(ME, 0o777), false, false),
        // /tmp: sticky, root's.
        (dir(0, 0o1777), false, true),
        // A sticky directory someone else owns: they may remove our files.
        (dir(OTHER, 0o1777), false, false),
        // An accepted team directory: group-writable, anyone's.
        (dir(OTHER, 0o2775), true, true),
        (dir(ME, 0o2775), true, true),
        // ... but never world-writable without the sticky bit.
        (dir(ME, 0o777), true, false),
        (file(ME, 0o700), false, false),
        // umask 002 with user private groups: the group is the owner.
        (upg(dir(ME, 0o775)), false, true),
        (upg(dir(ME, 0o777)), false, false),
    ];
    for (facts, shared, ok) in table {
        let why = judge_dir(facts, OWNERS, shared);
        assert_eq!(why.is_none(), ok, "{facts:?} shared={shared}: {why:?}");
    }
}

#[test]
fn files_are_trusted_only_when_ours_and_only_ours_to_write() {
    let private = dir(ME, 0o700);
    let tmp = dir(0, 0o1777);
    let team = dir(OTHER, 0o2775);
    let private_dir = upg(dir(ME, 0o775));
    let link = Facts {
        mode: libc::S_IFLNK | 0o777,
        ..file(ME, 0)
    };
    let fifo = Facts {
        mode: libc::S_IFIFO | 0o600,
        ..file(ME, 0)
    };
    // (file, its dir, shared, trusted?)
    let table = [
        (file(ME, 0o600), private, false, true),
        (file(ME, 0o644), private, false, true),
        (file(0, 0o600), private, false, true),
        (file(OTHER, 0o600), private, false, false),
        (file(ME, 0o664), private, false, false),
        (file(ME, 0o666), private, false, false),
        (link, private, false, false),
        (fifo, private, false, false),
        (dir(ME, 0o700), private, false, false),
        // In /tmp: ours is ours, a planted one is not.
        (file(ME, 0o600), tmp, false, true),
        (file(OTHER, 0o600), tmp, false, false),
        (file(OTHER, 0o600), tmp, true, false),
        // A team directory the user accepts: the group's files.
        (file(OTHER, 0o664), team, true, true),
        (file(OTHER, 0o666), team, true, false),
        (file(OTHER, 0o664), team, false, false),
        (upg(file(ME, 0o664)), private_dir, false, true),
    ];
    for (f, d, shared, ok) in table {
        let why = judge_file(f, d, OWNERS, shared, false);
        assert_eq!(why.is_none(), ok, "{f:?} in {d:?} shared={shared}: {why:?}");
    }
    assert!(judge_file(dir(ME, 0o700), private, OWNERS, false, true).is_none());
    assert!(judge_file(file(ME, 0o600), private, OWNERS, false, true).is_some());
}

#[test]
fn a_link_is_never_followed_and_a_new_file_is_private() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("target");
    std::fs::write(&target, "secret").unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(open_read(&link).unwrap_err().contains("symbolic link"));
    assert!(open_write(&link, true)
        .unwrap_err()
        .contains("symbolic link"));
    assert!(create_new(&link).is_err());
    assert!(check(&link).unwrap_err().contains("symbolic link"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret");
    let new = d.path().join("new");
    drop(open_write(&new, true).unwrap());
    let mode = std::fs::metadata(&new).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(open_read(&d.path().join("missing")).unwrap().is_none());
    assert!(replace(&link, b"x").is_err());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret");
    let made = d.path().join("a/b");
    make_dir(&made).unwrap();
    assert_eq!(std::fs::metadata(&made).unwrap().mode() & 0o777, 0o700);
}

#[test]
fn a_file_with_other_hard_links_is_refused_where_it_would_be_written_but_read() {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let file = d.path().join("x.db-wal");
    std::fs::write(&file, "root's").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(check_written(&file).is_ok());
    std::fs::hard_link(&file, d.path().join("elsewhere")).unwrap();
    let why = check_written(&file).unwrap_err();
    assert!(why.contains("2 hard links"), "{why}");
    assert!(
        check(&file).is_ok(),
        "what is only read or run may have other names"
    );
    let why = open_write(&file, true).unwrap_err();
    assert!(why.contains("2 hard links"), "{why}");
    assert!(open_read(&file).unwrap().is_some(), "read as before");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "root's");
}
