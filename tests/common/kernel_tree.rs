//! A kernel git tree for tests that build kernels (`tests/long/kbuild.rs`, and
//! a kernel bisection's test): the Debian `linux-source-6.1` tarball
//! extracted (less the sources of directories the fixture's kconfig
//! compiles nothing from) and committed once, cached under
//! `CARGO_TARGET_TMPDIR` keyed by the tarball's size and mtime and the
//! pruning's version (a newer package gives a new tree and the old one is
//! removed; a new pruning gives a new tree beside the old), with patches
//! committed on branches on top.
//! The build cache the tests give sysdelta (`XDG_CACHE_HOME`) is there
//! too, so reruns build incrementally.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tarball the tree comes from.
pub const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// The kconfig fixture: a tinyconfig that boots under sysdelta's guest.
pub fn tiny_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kbuild-tiny.config")
}

/// Where the tree and the build cache live: `CARGO_TARGET_TMPDIR`, or
/// `SYSDELTA_TEST_KERNEL_DIR` when set, so worktrees (each its own target
/// directory) can share one tree and one build cache instead of 3 GB each.
fn base() -> PathBuf {
    std::env::var_os("SYSDELTA_TEST_KERNEL_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from)
}

/// What `XDG_CACHE_HOME` to give sysdelta: its kernel builds (and
/// ccache's cache) go under it, kept between test runs.
pub fn build_cache() -> PathBuf {
    let d = base().join("kbuild-cache");
    std::fs::create_dir_all(&d).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

/// A HOME for make (sysdelta passes make only PATH and HOME) in which
/// ccache is off (`disable = true` in `.config/ccache/ccache.conf`): ccache
/// then runs gcc and stores nothing. A test whose builds never repeat an
/// object uses it: with a cold cache, ccache made the build of the
/// fixture's `kernel/` 1.4 to 2.6 times slower (3 pairs side by side on a
/// loaded 2-core machine: it preprocesses each file once more to hash it,
/// then stores the object), and the second ref's build is incremental in
/// the shared object directory anyway.
pub fn home_without_ccache() -> PathBuf {
    let home = build_cache().join("home-without-ccache");
    let conf = home.join(".config/ccache");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("ccache.conf"), "disable = true\n").unwrap();
    home
}

/// Why a kernel built from a tree cannot be booted here, if it cannot:
/// what [`super::vm_missing`] or [`missing_build_tools`] names.
pub fn missing() -> Option<String> {
    super::vm_missing().or_else(missing_build_tools)
}

/// Why kernel builds cannot run here, if they cannot: the tarball or a
/// build tool is missing.
pub fn missing_build_tools() -> Option<String> {
    if !Path::new(TARBALL).is_file() {
        return Some(format!("no {TARBALL} (apt-get install linux-source-6.1)"));
    }
    for tool in ["git", "make", "gcc", "flex", "bison", "bc", "xz", "cpio"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "{tool} not installed (scripts/install-vm-tools.sh)"
            ));
        }
    }
    if !Path::new("/usr/include/libelf.h").exists() {
        return Some("libelf-dev not installed (scripts/install-vm-tools.sh)".into());
    }
    None
}

/// git in `dir`, with no automatic gc: after the first commit's 36,000
/// loose objects, `git commit` would start a background repack of the
/// tree that competes with the kernel build for the CPU (the tests read
/// the objects loose as well as packed).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=sysdelta-test",
            "-c",
            "user.email=test@sysdelta.invalid",
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// An exclusive flock held while the value lives.
fn lock(path: &Path) -> nix::fcntl::Flock<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .unwrap()
}

/// The prepared tree (branch `main`: the tarball's source, one commit),
/// made on first use.
pub fn tree() -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(TARBALL).unwrap();
    let tarball = format!("{}-{}", m.size(), m.mtime());
    let key = format!("{tarball}-pruned{PRUNED_VERSION}");
    let top = base().join("kernel-tree");
    std::fs::create_dir_all(&top).unwrap();
    let _l = lock(&top.join(".lock"));
    let dir = top.join(&key).join("linux");
    if dir.join(".git").is_dir() {
        return dir;
    }
    // One prepared tree per tarball: a tree of an older tarball goes. A
    // tree of this tarball pruned otherwise stays: another worktree
    // sharing SYSDELTA_TEST_KERNEL_DIR may be building from it.
    for e in std::fs::read_dir(&top).unwrap().flatten() {
        let name = e.file_name();
        let this_tarball = name.to_str().is_some_and(|n| {
            n == tarball
                || n.strip_prefix(&tarball)
                    .is_some_and(|r| r.starts_with("-pruned"))
        });
        if e.path().is_dir() && !this_tarball {
            std::fs::remove_dir_all(e.path()).unwrap();
        }
    }
    let part = top.join(&key).join("linux.part");
    let _ = std::fs::remove_dir_all(&part);
    std::fs::create_dir_all(&part).unwrap();
    let st = Command::new("tar")
        .args(["xJf", TARBALL, "--strip-components=1", "-C"])
        .arg(&part)
        .status()
        .unwrap();
    assert!(st.success(), "extracting {TARBALL}");
    prune(&part);
    git(&part, &["init", "-q", "-b", "main"]);
    // Debian's tarball ignores everything at its top level (`/*` in its
    // .gitignore): -f adds the source anyway.
    git(&part, &["add", "-f", "-A"]);
    git(&part, &["commit", "-q", "-m", "linux-source-6.1"]);
    std::fs::rename(&part, &dir).unwrap();
    dir
}

/// Directories the tinyconfig fixture compiles nothing from: about 60% of
/// the tarball's 1.4 GB (drivers/gpu alone is 460 MB). Their sources go
/// before the tree is committed, which halves the `git add` and the
/// build's checkout; their Kconfig, Makefile and Kbuild files stay, since
/// Kconfig `source`s them all and make enters some of those directories
/// (`obj-y += gpu/`) to find nothing to build. A kconfig that needs one
/// of them fails to build here, loudly, rather than build something else.
const PRUNED: &[&str] = &[
    "Documentation",
    "sound",
    "samples",
    "drivers/gpu",
    // Not drivers/net itself: NET builds its loopback.o.
    "drivers/net/ethernet",
    "drivers/net/wireless",
    "drivers/media",
    "drivers/staging",
    "drivers/scsi",
    "drivers/usb",
    "drivers/infiniband",
    "arch/alpha",
    "arch/arc",
    "arch/arm",
    "arch/arm64",
    "arch/csky",
    "arch/hexagon",
    "arch/ia64",
    "arch/loongarch",
    "arch/m68k",
    "arch/microblaze",
    "arch/mips",
    "arch/nios2",
    "arch/openrisc",
    "arch/parisc",
    "arch/powerpc",
    "arch/riscv",
    "arch/s390",
    "arch/sh",
    "arch/sparc",
    "arch/um",
    "arch/xtensa",
];

/// Part of the tree's cache key: a change to [`PRUNED`] bumps it.
const PRUNED_VERSION: u32 = 1;

/// Delete the [`PRUNED`] directories' files in `dir`, except what
/// Kconfig and make read.
fn prune(dir: &Path) {
    let present: Vec<&str> = PRUNED
        .iter()
        .copied()
        .filter(|d| dir.join(d).is_dir())
        .collect();
    let st = Command::new("find")
        .current_dir(dir)
        .args(&present)
        .args(["-type", "f"])
        .args(["!", "-name", "Kconfig*", "!", "-name", "Makefile*"])
        .args(["!", "-name", "Kbuild*", "-delete"])
        .status()
        .unwrap();
    assert!(st.success(), "pruning {}", dir.display());
}

/// Commit on branch `branch` (from `base`) the edits (file, text to find,
/// its replacement), once: a branch already there is returned as it is.
/// Returns the branch's commit id; the work tree is left on `main`.
pub fn commit_on(tree: &Path, branch: &str, base: &str, edits: &[(&str, &str, &str)]) -> String {
    let top = tree.parent().unwrap().parent().unwrap().to_path_buf();
    let _l = lock(&top.join(".lock"));
    let have = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .output()
        .unwrap();
    if have.status.success() {
        return String::from_utf8_lossy(&have.stdout).trim().to_string();
    }
    git(tree, &["checkout", "-q", "-B", branch, base]);
    for (file, find, replace) in edits {
        let p = tree.join(file);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(find), "{file} has no {find:?}");
        std::fs::write(&p, text.replacen(find, replace, 1)).unwrap();
        git(tree, &["add", "-f", file]);
    }
    git(
        tree,
        &["commit", "-q", "-m", &format!("{branch}: test edit")],
    );
    let id = git(tree, &["rev-parse", "HEAD"]);
    git(tree, &["checkout", "-q", "main"]);
    id
}
