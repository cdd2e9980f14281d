//! Kernels built from a git tree and a ref (`[config.kernel] tree`, `ref`,
//! `patches`, `kconfig`): each distinct build identity is built once, in
//! the user's build cache, and its bzImage and modules directory are what
//! the config boots.
//!
//! - [`git`]: the git commands (resolve a ref, hash a file);
//! - [`identity`]: what makes two builds the same (commit, patches, kconfig);
//! - [`cache`]: the cache directory (the user's own, 0700) and its locks;
//! - [`source`]: the cache's clone of the tree, checked out and patched;
//! - [`kconfig`]: the config with what the guest needs built in;
//! - [`make`]: make with its output in the build log.
//!
//! Layout under the cache root: `src/<tree>` (one checkout per tree),
//! `obj/<tree>-<kconfig>` (one object directory per tree and kconfig, shared
//! by every ref: see `source` for why that is correct), `builds/<key>`
//! (one build's bzImage, .config, build.log and `lib/modules/<release>`).

pub mod cache;
pub mod git;
pub mod identity;
pub mod kconfig;
pub mod make;
pub mod source;

use std::path::PathBuf;
use std::time::Instant;

pub use identity::Identity;

use crate::error::Error;
use crate::sys::stderr::say;

/// What to build: a commit of a work tree, patches on top, a start config.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildSpec {
    /// The user's git work tree (never modified).
    pub tree: PathBuf,
    /// The ref as written (tag, branch, commit), for messages.
    pub reference: String,
    /// The full commit id it resolved to when the plan was loaded.
    pub commit: String,
    /// Patch files in the order applied (series already expanded).
    pub patches: Vec<PathBuf>,
    /// The .config to start from; None: x86_64 `defconfig`.
    pub kconfig: Option<PathBuf>,
}

/// A finished build: what a config boots.
#[derive(Clone, Debug)]
pub struct Built {
    /// What was asked for.
    pub spec: BuildSpec,
    pub identity: Identity,
    pub image: PathBuf,
    /// `<build>/lib/modules/<release>`: the guest's modules directory.
    pub modules_dir: PathBuf,
    /// `uname -r` of the built kernel (carries the identity's key).
    pub release: String,
    pub log: PathBuf,
    /// True when an earlier build of this identity was reused.
    pub reused: bool,
    /// Wall time of this call.
    pub seconds: f64,
}

/// Why a build did not give a kernel.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The source did not build (or its patches did not apply, or the
    /// config lost an option the guest needs): the commit is unbuildable,
    /// which a bisection treats as `git bisect skip`.
    #[error("kernel build of {reference} ({commit:.12}) failed: {last_error} (log: {})", log.display())]
    Failed {
        reference: String,
        commit: String,
        log: PathBuf,
        last_error: String,
    },
    /// Anything else (the cache, git, a missing tool): not the commit's fault.
    #[error("{0}")]
    Other(#[from] Error),
}

impl From<BuildError> for Error {
    fn from(e: BuildError) -> Error {
        match e {
            BuildError::Failed { .. } => Error::bad(e.to_string()),
            BuildError::Other(e) => e,
        }
    }
}

/// Build `spec` (or reuse its earlier build), printing progress on stderr.
pub fn build(spec: &BuildSpec) -> Result<Built, BuildError> {
    let t0 = Instant::now();
    let inputs = identity::Inputs::read(spec)?;
    let identity = Identity::of(spec, &inputs)?;
    let root = cache::root()?;
    let tree_name = cache::name_of(&[&spec.tree.to_string_lossy()])?;
    let art = root.join("builds").join(&identity.key);
    let log = art.join("build.log");
    let done = art.join("release");
    // Checked before a finished build is trusted: its bzImage is booted.
    for d in ["src", "obj", "builds"] {
        cache::private_dir(&root.join(d))?;
    }
    if let Some(b) = finished(spec, &art, &identity, &log, t0)? {
        return Ok(b);
    }
    // One builder per checkout (and so per object directory under it).
    let _lock = cache::lock(&root.join("src").join(format!("{tree_name}.lock")))?;
    if let Some(b) = finished(spec, &art, &identity, &log, t0)? {
        return Ok(b);
    }
    let src = root.join("src").join(&tree_name);
    let obj = root.join("obj").join(format!(
        "{tree_name}-{}",
        &identity.kconfig[..12.min(identity.kconfig.len())]
    ));
    cache::private_dir(&art)?;
    cache::private_dir(&obj)?;
    let _ = std::fs::remove_file(&log);
    say!(
        "kernel build: {} ({}) {}, log {}",
        spec.reference,
        &spec.commit[..12.min(spec.commit.len())],
        identity.describe(),
        log.display()
    );
    let failed = |last_error: String| BuildError::Failed {
        reference: spec.reference.clone(),
        commit: spec.commit.clone(),
        log: log.clone(),
        last_error,
    };
    // Only the commit's own failures are Failed: a bisection skips those.
    let stop = |s: make::Stop| match s {
        make::Stop::Failed(last) => failed(last),
        make::Stop::Other(why) => BuildError::Other(Error::failed(why)),
    };
    source::ensure_clone(&spec.tree, &src)?;
    source::checkout(
        &spec.tree,
        &src,
        &spec.commit,
        &spec.patches,
        &inputs.patches,
    )
    .map_err(stop)?;
    let m = make::Make {
        src,
        obj,
        log: log.clone(),
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        ccache: make::on_path("ccache"),
    };
    kconfig::prepare(&m, inputs.kconfig.as_deref(), &identity.localversion()).map_err(stop)?;
    let release = install(&m, &art).map_err(stop)?;
    std::fs::write(&done, &release)
        .map_err(|e| Error::failed(format!("{}: {e}", done.display())))?;
    let seconds = t0.elapsed().as_secs_f64();
    say!(
        "kernel build: {} built in {seconds:.0} s ({release})",
        spec.reference
    );
    Ok(Built {
        spec: spec.clone(),
        image: art.join("bzImage"),
        modules_dir: art.join("lib/modules").join(&release),
        identity,
        release,
        log,
        reused: false,
        seconds,
    })
}

/// The build in `art` if one finished there (its `release` file is
/// written last).
fn finished(
    spec: &BuildSpec,
    art: &std::path::Path,
    identity: &Identity,
    log: &std::path::Path,
    t0: Instant,
) -> Result<Option<Built>, Error> {
    let Ok(release) = std::fs::read_to_string(art.join("release")) else {
        return Ok(None);
    };
    let release = release.trim().to_string();
    say!(
        "kernel build: {} ({}) already built: {release}",
        spec.reference,
        &spec.commit[..12.min(spec.commit.len())]
    );
    Ok(Some(Built {
        spec: spec.clone(),
        image: art.join("bzImage"),
        modules_dir: art.join("lib/modules").join(&release),
        identity: identity.clone(),
        release,
        log: log.to_path_buf(),
        reused: true,
        seconds: t0.elapsed().as_secs_f64(),
    }))
}

/// Build the image and modules; copy the image and .config into `art`
/// and install the modules under it. Returns the kernel release.
fn install(m: &make::Make, art: &std::path::Path) -> Result<String, make::Stop> {
    let modules = kconfig::has_modules(&m.obj);
    make::make(
        m,
        if modules {
            &["bzImage", "modules"]
        } else {
            &["bzImage"]
        },
    )?;
    let rel_file = m.obj.join("include/config/kernel.release");
    let release = std::fs::read_to_string(&rel_file)
        .map_err(|e| format!("{}: {e}", rel_file.display()))?
        .trim()
        .to_string();
    let copy = |from: PathBuf, to: PathBuf| {
        std::fs::copy(&from, &to)
            .map(|_| ())
            .map_err(|e| make::Stop::Other(format!("cannot copy {}: {e}", from.display())))
    };
    copy(m.obj.join("arch/x86/boot/bzImage"), art.join("bzImage"))?;
    copy(m.obj.join(".config"), art.join("config"))?;
    let mod_dir = art.join("lib/modules").join(&release);
    let _ = std::fs::remove_dir_all(art.join("lib"));
    if modules {
        make::make(
            m,
            &[
                "modules_install",
                &format!("INSTALL_MOD_PATH={}", art.display()),
                "INSTALL_MOD_STRIP=1",
            ],
        )?;
    } else {
        // No loadable modules: every driver the guest needs is built in
        // (kconfig::prepare checked them), which modules.builtin says.
        std::fs::create_dir_all(&mod_dir)
            .map_err(|e| make::Stop::Other(format!("{}: {e}", mod_dir.display())))?;
        std::fs::write(mod_dir.join("modules.dep"), "")
            .map_err(|e| make::Stop::Other(format!("{}: {e}", mod_dir.display())))?;
        let builtin = m.obj.join("modules.builtin");
        let text = std::fs::read_to_string(&builtin).unwrap_or_default();
        let listed: String = crate::vm::modules::WANTED
            .iter()
            .map(|w| format!("kernel/builtin/{w}.ko\n"))
            .collect();
        std::fs::write(mod_dir.join("modules.builtin"), text + &listed)
            .map_err(|e| make::Stop::Other(format!("{}: {e}", mod_dir.display())))?;
    }
    if !mod_dir.join("modules.builtin").is_file() {
        return Err(make::Stop::Failed(format!(
            "{} has no modules.builtin after modules_install",
            mod_dir.display()
        )));
    }
    Ok(release)
}
