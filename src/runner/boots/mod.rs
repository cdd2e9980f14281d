//! Kernels as configs: each config that names a kernel runs in a VM booted
//! for it, several boots per config in randomized interleaved order, and
//! the boot is the unit of replication.
//!
//! - [`schedule`]: which boot runs when, and which runs each boot gets;
//! - [`protocol`]: the JSON lines host and guest exchange;
//! - [`host`]: the host's loop: boot, check who booted, assign, store each
//!   run as it arrives, and turn every fault into a failed boot;
//! - [`guest`]: `sysdelta guest`, run by the VM's init: measures the runs
//!   it was assigned with the same code as the host (`runner::slot`).
//!
//! The VM itself (image, modules, initramfs, QEMU and virtiofsd) is
//! `crate::vm`'s.

use crate::error::Error;
mod checks;
pub mod guest;
pub mod host;
pub mod lines;
pub mod on_machine;
pub mod protocol;
pub mod schedule;

use std::path::PathBuf;

use crate::plan::{KernelDef, Plan};
use crate::vm;

/// What preflight learnt of one config's kernel, for its boots.
#[derive(Clone, Debug)]
pub struct KernelPrep {
    pub def: KernelDef,
    pub image: vm::image::KernelImage,
    /// Its modules directory.
    pub modules_dir: PathBuf,
    /// The modules the guest loads, dependencies first.
    pub modules: Vec<PathBuf>,
    /// Set when sysdelta built the kernel from a tree (`def.build`).
    pub built: Option<crate::kbuild::Built>,
}

/// Everything kernel configs need that is the same for every boot.
#[derive(Clone, Debug)]
pub struct KernelSetup {
    /// By config index.
    pub kernels: Vec<KernelPrep>,
    pub accel: vm::accel::Accel,
    /// Why the accel is what it is (e.g. TCG because /dev/kvm is kvm_pvm).
    pub accel_note: Option<String>,
    /// sysdelta's own binary, run in the guest.
    pub exe: PathBuf,
    /// Its size and mtime when the experiment started (`protocol::exe_identity`).
    pub exe_identity: String,
    pub busybox: PathBuf,
}

/// What names the kernel a config boots: the resolved image and its
/// version string (stored with the experiment, compared on resume).
/// A built kernel adds its build identity (commit, patches, config).
pub fn kernel_identity(k: &KernelPrep) -> String {
    match &k.built {
        Some(b) => format!(
            "{} ({}) built from {} at {}: {}",
            k.image.path.display(),
            k.image.banner,
            b.spec.tree.display(),
            b.spec.reference,
            b.identity.describe()
        ),
        None => format!("{} ({})", k.image.path.display(), k.image.banner),
    }
}

/// Check everything the kernel configs of `plan` need on this host,
/// changing nothing. Problems are lines naming the config and the field.
pub fn preflight(plan: &Plan) -> Result<KernelSetup, Vec<String>> {
    let mut problems = Vec::new();
    if !nix::unistd::geteuid().is_root() {
        problems.push(
            "kernel configs need root (virtiofsd shares the host's root file system read-only)"
                .to_string(),
        );
    }
    for found in [vm::launch::find_qemu(), vm::launch::find_virtiofsd()] {
        if let Err(e) = found {
            problems.push(format!("kernel configs: {e}"));
        }
    }
    let busybox = PathBuf::from("/bin/busybox");
    if let Err(e) = std::fs::read(&busybox)
        .map_err(|e| Error::failed(format!("{e} (Debian: apt-get install busybox-static)")))
        .and_then(|b| vm::initramfs::check_static(&b))
    {
        problems.push(format!("kernel configs: {}: {e}", busybox.display()));
    }
    let exe = std::fs::read_link("/proc/self/exe").unwrap_or_default();
    if let Err(e) = same_file_system_as_root(&exe, "sysdelta's binary") {
        problems.push(format!("kernel configs: {e}"));
    }
    // Commands with relative paths run from the same directory in the guest.
    if let Err(e) = std::env::current_dir()
        .map_err(|e| Error::failed(format!("the working directory: {e}")))
        .and_then(|d| same_file_system_as_root(&d, "the working directory"))
    {
        problems.push(format!("kernel configs: {e}"));
    }
    // Every config boots under one accel: the report says which.
    let accel_of = |c: &crate::plan::ConfigDef| c.kernel.as_ref().map(|k| k.accel.clone());
    let first = plan.configs.iter().find_map(accel_of);
    if let Some(c) = plan
        .configs
        .iter()
        .find(|c| accel_of(c).is_some() && accel_of(c) != first)
    {
        problems.push(format!(
            "config '{}', kernel.accel: '{}' differs from the first kernel config's '{}': \
             every kernel config of a plan boots under one accel",
            c.name,
            accel_of(c).unwrap_or_default(),
            first.clone().unwrap_or_default()
        ));
    }
    let host_cpus = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
        .ok()
        .flatten()
        .unwrap_or(1) as u32;
    let avail_mib = crate::monitor::fingerprint::meminfo_kib("MemAvailable").unwrap_or(0) / 1024;
    let mut accel = None;
    let mut kernels = Vec::new();
    for c in &plan.configs {
        let Some(def) = &c.kernel else { continue };
        let at = |field: &str, msg: String| format!("config '{}', kernel.{field}: {msg}", c.name);
        if def.cpus > host_cpus {
            problems.push(at(
                "cpus",
                format!(
                    "{} is more than this host's {host_cpus} online CPUs (the guest would measure contention)",
                    def.cpus
                ),
            ));
        }
        if def.memory_mib + 1024 > avail_mib {
            problems.push(at(
                "memory",
                format!(
                    "{} MiB leaves less than 1 GiB of the host's {avail_mib} MiB available",
                    def.memory_mib
                ),
            ));
        }
        match vm::accel::choose(&def.accel) {
            Ok(a) => {
                accel.get_or_insert(a);
            }
            Err(e) => problems.push(at("accel", e.to_string())),
        }
        if !problems.is_empty() {
            // A build takes minutes: none before the cheap checks pass.
            continue;
        }
        match image_and_modules(def) {
            Ok(k) => kernels.push(k),
            Err((field, e)) => problems.push(at(field, e)),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let (accel, accel_note) = accel.expect("a kernel plan has a kernel config");
    Ok(KernelSetup {
        kernels,
        accel,
        accel_note,
        exe_identity: protocol::exe_identity(&exe),
        exe,
        busybox,
    })
}

/// The image a config boots (built first when it names a tree), its
/// modules directory and the modules the guest loads. Err: (field, why).
fn image_and_modules(def: &KernelDef) -> Result<KernelPrep, (&'static str, String)> {
    let built = match &def.build {
        Some(spec) => Some(crate::kbuild::build(spec).map_err(|e| ("tree", e.to_string()))?),
        None => None,
    };
    let image = match &built {
        Some(b) => vm::image::KernelImage::inspect(&b.image),
        None => crate::plan::kernel::resolve_image(&def.image.to_string_lossy())
            .and_then(|p| vm::image::KernelImage::inspect(&p)),
    }
    .map_err(|e| ("image", e.to_string()))?;
    let modules_dir = match (&built, &def.modules) {
        (Some(b), _) => b.modules_dir.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => PathBuf::from("/lib/modules").join(&image.version),
    };
    let modules = vm::modules::resolve(&modules_dir, &image.version)
        .map_err(|e| ("modules", e.to_string()))?;
    Ok(KernelPrep {
        def: def.clone(),
        image,
        modules_dir,
        modules,
        built,
    })
}

/// The guest sees the host's root file system only (a bind mount of `/`
/// that does not follow mounts below it), so sysdelta's binary must be on it.
fn same_file_system_as_root(p: &std::path::Path, what: &str) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let dev = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.dev());
    match (dev(p), dev(std::path::Path::new("/"))) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Ok(_), Ok(_)) => Err(Error::failed(format!(
            "{what} {} is on another file system than /, which the guest does not see",
            p.display()
        ))),
        _ => Err(Error::failed(format!("cannot read {what} {}", p.display()))),
    }
}
