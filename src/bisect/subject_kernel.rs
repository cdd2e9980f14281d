//! A kernel bisection's subject: each commit's config (the template filled
//! in) builds a kernel from a tree (`[config.kernel] tree`, `ref =
//! "{commit}"`), so the commit is built here, with `kbuild::build`, before
//! any experiment boots it. A build that fails is the commit's: it is
//! skipped as `git bisect skip` does (and remembered, so a resume does not
//! build it again); the experiment then finds the build in kbuild's cache
//! (each build identity is built once) and only boots it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::subject::{fill, Built, Subject, Userspace};
use crate::kbuild::{BuildError, BuildSpec};

/// The commits' kernels, built before their configs run. Commits whose
/// filled-in config names no kernel tree go to `inner` (its `--build`).
pub struct Kernel {
    pub inner: Userspace,
    /// The plan's workloads and settings: with one filled-in config, a
    /// plan that parses (the same text each round runs).
    pub workloads_toml: String,
}

impl Kernel {
    /// Where a failed build of `commit` is remembered (the log's path).
    fn failed_file(&self, commit: &str) -> PathBuf {
        self.inner.cache.join(format!("{commit}.kernel-failed"))
    }

    /// The build the commit's config asks for, if it builds a kernel.
    fn spec(&self, commit: &str) -> Result<Option<BuildSpec>> {
        let Some(t) = &self.inner.template else {
            return Ok(None);
        };
        let text = format!(
            "{}{}",
            self.workloads_toml,
            fill(t, "probe", commit, &self.inner.repo)
        );
        let plan = crate::plan::parse("--config-template", &text, &Default::default())
            .map_err(crate::error::Error::into_bad_input)?;
        Ok(plan
            .configs
            .first()
            .and_then(|c| c.kernel.as_ref())
            .and_then(|k| k.build.clone()))
    }
}

impl Subject for Kernel {
    fn build(&self, commit: &str) -> Result<Built> {
        let Some(spec) = self.spec(commit)? else {
            return self.inner.build(commit);
        };
        let remembered = self.failed_file(commit);
        if let Some(log) = super::subject::read_private(&remembered)? {
            return Ok(Built::Failed(PathBuf::from(log.trim())));
        }
        match crate::kbuild::build(&spec) {
            // The config's runs need no directory of their own: `{dir}` is
            // the repository, as for a template without --build.
            Ok(_) => Ok(Built::Ready(self.inner.repo.clone())),
            // Set by Ctrl-C: a build that fails while it is set was stopped
            // by it (make's children die of SIGINT too), so it says nothing
            // about the commit and is not remembered.
            Err(BuildError::Failed { .. }) if super::subject::interrupted(&self.inner.cancel) => {
                Err(anyhow::anyhow!(
                    "the kernel build of {} was interrupted; resume builds it again",
                    super::range::short(commit)
                ))
            }
            Err(BuildError::Failed {
                log, last_error, ..
            }) => {
                crate::sys::stderr::say!(
                    "sysdelta: bisect: the kernel at {} does not build: {last_error}",
                    super::range::short(commit)
                );
                remember(&remembered, &log)?;
                Ok(Built::Failed(log))
            }
            Err(BuildError::Other(e)) => Err(e.into()),
        }
    }

    fn config_toml(&self, name: &str, commit: &str, dir: &Path) -> String {
        self.inner.config_toml(name, commit, dir)
    }
}

/// Write the failed build's log path, atomically (a kill leaves no half
/// file that would read as a failure).
fn remember(file: &Path, log: &Path) -> Result<()> {
    super::subject::write_private(file, &format!("{}\n", log.display()))
}
