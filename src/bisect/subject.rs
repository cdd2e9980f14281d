//! How a commit becomes a config an experiment runs.
//!
//! A [`Subject`] builds a commit (once: the result is cached by commit id)
//! and writes the `[[config]]` table that runs it. The userspace subject
//! checks the commit out in its own directory under the cache (`git clone
//! --shared`: the user's tree and its `.git` are never written), runs the
//! build command there, and points the config's `workdir` at it. A kernel
//! subject is the same shape: its config table names `[config.kernel]`
//! with the tree and `ref = "<commit>"`, and its units are boots.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

use super::range::{git, short};

/// A commit made ready, or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Built {
    /// Ready: the directory its runs use.
    Ready(PathBuf),
    /// The build failed (its log is there): skipped, as `git bisect skip`.
    Failed(PathBuf),
}

/// What the bisection needs of the thing it bisects.
pub trait Subject {
    /// Build `commit` (or find its earlier build).
    fn build(&self, commit: &str) -> Result<Built>;
    /// The `[[config]]` table named `name` that runs `commit`, built in
    /// `dir`.
    fn config_toml(&self, name: &str, commit: &str, dir: &Path) -> String;
}

/// A repository, its build command, and how a commit's config reads.
pub struct Userspace {
    pub repo: PathBuf,
    /// This bisection's cache directory (one subdirectory a commit).
    pub cache: PathBuf,
    /// None (only with a template): nothing is checked out or built here;
    /// the config itself names the commit (a kernel config's `ref`).
    pub build: Option<String>,
    /// A `[[config]]` table with `{name}`, `{commit}` and `{dir}` in it.
    pub template: Option<String>,
    /// Set by the first Ctrl-C (or SIGTERM): a build that ends while it
    /// is set was stopped by it, whatever its status says.
    pub cancel: Arc<AtomicBool>,
}

/// Whether a build that did not succeed was stopped by our Ctrl-C
/// (`cancel`), not by the commit. The terminal's SIGINT reaches sysdelta
/// and the build at once, and the build's shell may exit with a status
/// (e.g. 130 or make's 2) that reads like a failed build; `cancel` is set
/// inside sysdelta's signal handler (`runner::signals::install`), which
/// has run by the time the build's `wait` returns, so it is read once.
pub fn interrupted(cancel: &AtomicBool) -> bool {
    cancel.load(Ordering::SeqCst)
}

/// `template` with its placeholders filled.
pub fn fill(template: &str, name: &str, commit: &str, dir: &Path) -> String {
    format!(
        "\n{}\n",
        template
            .replace("{name}", name)
            .replace("{commit}", commit)
            .replace("{dir}", &dir.to_string_lossy())
    )
}

impl Userspace {
    fn status_file(&self, commit: &str) -> PathBuf {
        self.cache.join(format!("{commit}.status"))
    }

    /// The build log of `commit`.
    pub fn log_file(&self, commit: &str) -> PathBuf {
        self.cache.join(format!("{commit}.log"))
    }

    fn checkout(&self, commit: &str, dir: &Path) -> Result<()> {
        if dir.exists() {
            // A checkout cut short by a kill: made again from scratch.
            std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        let repo = self.repo.to_string_lossy();
        let target = dir.to_string_lossy();
        git(
            &self.cache,
            &[
                "clone",
                "--quiet",
                "--shared",
                "--no-checkout",
                &repo,
                &target,
            ],
        )
        .map_err(|e| anyhow::anyhow!("cloning {} for {}: {e}", repo, short(commit)))?;
        git(dir, &["checkout", "--quiet", "--detach", commit])
            .map_err(|e| anyhow::anyhow!("checking out {}: {e}", short(commit)))?;
        Ok(())
    }
}

impl Subject for Userspace {
    fn build(&self, commit: &str) -> Result<Built> {
        let Some(build) = &self.build else {
            return Ok(Built::Ready(self.repo.clone()));
        };
        let dir = self.cache.join(commit);
        let status = self.status_file(commit);
        let log = self.log_file(commit);
        // The status file is written last, so a build a kill cut short is
        // done again.
        if let Some(s) = read_private(&status)? {
            return Ok(match s.trim() {
                "ok" => Built::Ready(dir),
                _ => Built::Failed(log),
            });
        }
        // Ours alone (0700, checked): what is in it is what we wrote.
        crate::kbuild::cache::private_dir(&self.cache)?;
        self.checkout(commit, &dir)?;
        let out = create_private(&log)?;
        let status_of = Command::new("/bin/sh")
            .arg("-c")
            .arg(build)
            .current_dir(&dir)
            .env("SYSDELTA_BISECT_COMMIT", commit)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .status()
            .with_context(|| format!("running the build of {}", short(commit)))?;
        // A build a signal stopped (Ctrl-C reaches it too) says nothing
        // about the commit, nor does one that failed while we were being
        // interrupted (a shell whose child died of SIGINT exits 130, a
        // make 2): no outcome is cached, and resume builds it again.
        let ok = status_of.success();
        if status_of.code().is_none() || (!ok && interrupted(&self.cancel)) {
            return Err(anyhow::anyhow!(
                "the build of {} was stopped by a signal; resume builds it again",
                short(commit)
            ));
        }
        write_private(&status, if ok { "ok\n" } else { "failed\n" })?;
        Ok(if ok {
            Built::Ready(dir)
        } else {
            Built::Failed(log)
        })
    }

    fn config_toml(&self, name: &str, commit: &str, dir: &Path) -> String {
        if let Some(t) = &self.template {
            return fill(t, name, commit, dir);
        }
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let d = dir.to_string_lossy();
        format!(
            "\n[[config]]\nname = {}\nworkdir = {}\nenv = {{ SYSDELTA_BISECT_COMMIT = {}, SYSDELTA_BISECT_DIR = {} }}\n",
            q(name),
            q(&d),
            q(commit),
            q(&d)
        )
    }
}

/// `file` truncated or made (0600), its last component never followed:
/// a symbolic link planted there is refused, not written through.
fn create_private(file: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(file)
        .with_context(|| format!("creating {}", file.display()))
}

/// A cache file's text, None when there is none; a symbolic link there is
/// an error, not followed.
pub fn read_private(file: &Path) -> Result<Option<String>> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(file);
    let mut f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", file.display())),
    };
    let mut text = String::new();
    f.read_to_string(&mut text)
        .with_context(|| format!("reading {}", file.display()))?;
    Ok(Some(text))
}

/// Write a cache file atomically (a kill leaves no half file that would
/// read as an outcome), through a fresh temporary file beside it.
pub fn write_private(file: &Path, text: &str) -> Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            return Err(anyhow::anyhow!("removing {}: {e}", tmp.display()))
        }
        _ => {}
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_files_are_never_written_or_read_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        // A planted log, status, and status temporary, each a link.
        for name in ["c.log", "c.status", "c.status.tmp", "d.status"] {
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
        }
        assert!(create_private(&dir.path().join("c.log")).is_err());
        assert!(read_private(&dir.path().join("c.status")).is_err());
        // The temporary link is removed, not followed; the status link is
        // replaced by the file.
        write_private(&dir.path().join("d.status"), "ok\n").unwrap();
        write_private(&dir.path().join("c.status"), "ok\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(
            read_private(&dir.path().join("d.status"))
                .unwrap()
                .as_deref(),
            Some("ok\n")
        );
        assert_eq!(read_private(&dir.path().join("none")).unwrap(), None);
    }
}
