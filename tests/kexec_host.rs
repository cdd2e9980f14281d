//! Kexec sessions on the host itself, without a kexec: what `start`
//! refuses, and what `step`, `resume` and `stop` do with a session made by
//! hand (no boots left to run, so nothing is ever loaded or executed).
//! Each needs root (the session's state is root's); skips without it.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sysdelta::kexec::{hook, state};

/// A session made by hand in a temp dir: its store, state and hook.
struct Hand {
    dir: tempfile::TempDir,
    exp: i64,
}

impl Hand {
    /// A session whose store is `store` (made unless `make_store` is
    /// false: a store out of reach) and whose schedule is empty.
    fn new(make_store: bool) -> Hand {
        let dir = tempfile::Builder::new().prefix("sdkh").tempdir().unwrap();
        let h = Hand { dir, exp: 1 };
        std::fs::create_dir(h.path("hook")).unwrap();
        let store_path = match make_store {
            true => h.path("store.db"),
            false => h.path("gone/store.db"),
        };
        let exp = match make_store {
            true => {
                let store = sysdelta::store::Store::open(&store_path, true).unwrap();
                create_experiment(&store, "kexec", &["a"], 0, &[])
            }
            false => 1,
        };
        kexec_session_by_hand(&h.path("state"), &h.path("hook"), &store_path, exp);
        Hand { exp, ..h }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `sysdelta kexec <cmd> --state STATE`, with the temp dir's own run
    /// directory (the machine lock of no other test).
    fn kexec(&self, cmd: &str) -> Output {
        Command::new(bin())
            .args([
                "kexec",
                cmd,
                "--state",
                self.path("state").to_str().unwrap(),
            ])
            .env("SYSDELTA_RUN_DIR", self.path("run"))
            .output()
            .unwrap()
    }

    fn status(&self) -> String {
        rusqlite::Connection::open(self.path("store.db"))
            .unwrap()
            .query_row(
                "SELECT status FROM experiments WHERE id = ?1",
                [self.exp],
                |r| r.get(0),
            )
            .unwrap()
    }

    fn hook_left(&self) -> usize {
        std::fs::read_dir(self.path("hook")).unwrap().count()
    }
}

#[test]
fn a_second_step_is_refused_and_a_session_with_no_ok_boot_is_not_complete() {
    if !is_root() {
        return skip("not root");
    }
    let h = Hand::new(true);
    let st = state::State::open(&h.path("state")).unwrap();
    let journal = st.read_file("journal");
    {
        // The hook's step is running (it holds the session's lock): a
        // `kexec resume` now is refused and changes nothing.
        let _running = st.lock().unwrap();
        let out = h.kexec("resume");
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("another step"), "{}", stderr(&out));
        assert_eq!(st.read_file("journal"), journal);
        assert_eq!(h.status(), "running");
        assert!(h.hook_left() > 0);
    }
    // Alone, it ends the session; none of its boots ran, so the
    // experiment is failed, not complete.
    let out = h.kexec("resume");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(h.status(), "failed");
    assert!(!h.path("state").exists());
    assert_eq!(h.hook_left(), 0);
    // A hook left behind, or a resume, after the end: nothing to do, and
    // no failure for systemd to restart.
    let out = h.kexec("step");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("nothing to do"), "{}", stdout(&out));
}

#[test]
fn stop_ends_a_session_whose_store_is_out_of_reach() {
    if !is_root() {
        return skip("not root");
    }
    let h = Hand::new(false);
    let out = h.kexec("stop");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("could not be updated"),
        "{}",
        stderr(&out)
    );
    assert!(!h.path("state").exists());
    assert_eq!(h.hook_left(), 0);
}

/// Images and initrds another user could swap before a later boot, and a
/// working directory others can write, are bad input: exit 2, each on its
/// line, nothing made (and nothing ever loaded: the start image has no
/// initrd in the empty --initrd-dir either).
#[test]
fn start_refuses_what_others_could_change_before_a_boot() {
    if !is_root() {
        return skip("not root");
    }
    let d = tempfile::Builder::new().prefix("sdks").tempdir().unwrap();
    let open = d.path().join("open");
    for sub in ["open", "initrd", "hook", "tree"] {
        std::fs::create_dir(d.path().join(sub)).unwrap();
    }
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(open.join("bzImage"), b"not hers to swap").unwrap();
    let plan = d.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"k\"\n[[config]]\nname = \"a\"\n[config.kernel]\nimage = \"{}\"\n\
             [[config]]\nname = \"b\"\n[config.kernel]\nimage = \"{}\"\n\
             [[workload]]\nname = \"w\"\ncommand = 'true'\n",
            open.join("bzImage").display(),
            d.path().join("tree").display()
        ),
    )
    .unwrap();
    let out = Command::new(bin())
        .args(["--store", d.path().join("store.db").to_str().unwrap()])
        .args(["kexec", "start"])
        .arg(&plan)
        .args(["--state", d.path().join("state").to_str().unwrap()])
        .args(["--hook-dir", d.path().join("hook").to_str().unwrap()])
        .args(["--initrd-dir", d.path().join("initrd").to_str().unwrap()])
        .env("SYSDELTA_RUN_DIR", d.path().join("run"))
        .current_dir(&open)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config 'a', kernel.image") && err.contains("written by others"),
        "{err}"
    );
    assert!(
        err.contains("config 'b', kernel.image") && err.contains("is a directory"),
        "{err}"
    );
    assert!(err.contains("the working directory"), "{err}");
    assert!(!d.path().join("state").exists() && !d.path().join("store.db").exists());
    assert_eq!(std::fs::read_dir(d.path().join("hook")).unwrap().count(), 0);
}

/// `kexec start PLAN --state STATE --hook-dir HOOK` in `dir`, with `env`.
fn start(dir: &Path, plan: &Path, state: &Path, hook: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    c.args(["--store", dir.join("store2.db").to_str().unwrap()])
        .args(["kexec", "start"])
        .arg(plan)
        .arg("--state")
        .arg(state)
        .arg("--hook-dir")
        .arg(hook)
        .arg("--initrd-dir")
        .arg(dir)
        .env("SYSDELTA_RUN_DIR", dir.join("run"))
        .current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn one_kernel_plan(dir: &Path, image: &Path) -> PathBuf {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"k\"\n[[config]]\nname = \"a\"\n[config.kernel]\nimage = \"{}\"\n\
             [[workload]]\nname = \"w\"\ncommand = 'true'\n",
            image.display()
        ),
    )
    .unwrap();
    plan
}

/// A second session's start on a machine whose hook is another session's:
/// refused before anything is loaded, and the first's unit is untouched.
#[test]
fn a_second_start_is_refused_and_the_first_unit_is_untouched() {
    if !is_root() {
        return skip("not root");
    }
    let h = Hand::new(true);
    let unit = std::fs::read(hook::unit_path(&h.path("hook"))).unwrap();
    let plan = one_kernel_plan(h.dir.path(), Path::new("/boot/vmlinuz"));
    let out = start(h.dir.path(), &plan, &h.path("state2"), &h.path("hook"), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("a kexec session") && err.contains("is under way"),
        "{err}"
    );
    assert!(err.contains(h.path("state").to_str().unwrap()), "{err}");
    assert_eq!(
        std::fs::read(hook::unit_path(&h.path("hook"))).unwrap(),
        unit
    );
    assert!(!h.path("state2").exists() && !h.path("store2.db").exists());
    // The unit and its enabling link, both still there.
    assert_eq!(h.hook_left(), 2);
}

/// An environment that would make root's later boots load code from
/// elsewhere is refused by name, each on its line; and an image in a
/// shared directory its group can write is refused all the same.
#[test]
fn start_refuses_an_environment_that_loads_code_and_shared_images() {
    if !is_root() {
        return skip("not root");
    }
    let d = tempfile::Builder::new().prefix("sdke").tempdir().unwrap();
    let shared = d.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::create_dir(d.path().join("hook")).unwrap();
    let image = shared.join("bzImage");
    std::fs::write(&image, b"a teammate could swap this").unwrap();
    // A group that is nobody's private group: its members may write.
    let group = Some(nix::unistd::Gid::from_raw(65534));
    for (p, mode) in [(&shared, 0o775), (&image, 0o664)] {
        nix::unistd::chown(p.as_path(), None, group).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let plan = one_kernel_plan(d.path(), &image);
    let out = start(
        d.path(),
        &plan,
        &d.path().join("state"),
        &d.path().join("hook"),
        &[
            ("PYTHONPATH", "/opt/py"),
            ("BASH_ENV", "/etc/x"),
            ("PATH", "/usr/bin:/bin:rel"),
            ("SYSDELTA_SHARED_DIRS", shared.to_str().unwrap()),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for var in ["PYTHONPATH", "BASH_ENV", "SYSDELTA_SHARED_DIRS"] {
        let n = err
            .lines()
            .filter(|l| l.contains(&format!("environment variable {var}:")))
            .count();
        assert_eq!(n, 1, "{var}: {err}");
    }
    assert!(err.contains("PATH entry 'rel' is not absolute"), "{err}");
    assert!(
        err.contains("config 'a', kernel.image") && err.contains("written by its group"),
        "{err}"
    );
    assert!(!d.path().join("state").exists() && !d.path().join("store2.db").exists());
    assert_eq!(std::fs::read_dir(d.path().join("hook")).unwrap().count(), 0);
}
