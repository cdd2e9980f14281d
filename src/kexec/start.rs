//! `sysdelta kexec start`: check everything, record the experiment and the
//! whole boot schedule, install the hook, and kexec into the first boot.
//! Bad input (exit 2) changes nothing: no state directory, no experiment,
//! no hook.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::exec::{self, Identity};
use super::state::{Kernel, PlannedBoot, Session, State};
use super::{guard, hook};
use crate::error::{bad, bad_all};
use crate::runner::boots::protocol::AssignedSlot;
use crate::runner::boots::schedule;
use crate::store::{NewExperiment, Store};

/// What `kexec start` was given.
pub struct Start {
    pub plan: PathBuf,
    pub overrides: crate::overrides::Overrides,
    pub store: PathBuf,
    pub state: PathBuf,
    pub hook_dir: PathBuf,
    /// Where the machine's initrds are (`initrd.img-<release>`).
    pub initrd_dir: PathBuf,
    /// The starting kernel's image (default `/boot/vmlinuz-<release>`).
    pub start_image: Option<PathBuf>,
    pub panic_s: u32,
    pub label: Option<String>,
    /// Regexes of kernel error messages the audit ignores.
    pub audit_ignore: Vec<String>,
}

/// Start a session (see the module's doc); returns only on an error.
pub fn start(a: &Start) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        return Err(bad("kexec start: kexec needs root"));
    }
    let plan = crate::plan::load_file(&a.plan, &a.overrides)
        .map_err(crate::error::Error::into_bad_input)?;
    let mut problems = Vec::new();
    let mut kernels = Vec::new();
    for c in &plan.configs {
        let Some(def) = &c.kernel else {
            problems.push(format!(
                "config '{}': has no [config.kernel]; a kexec session boots a kernel per config",
                c.name
            ));
            continue;
        };
        if def.build.is_some() {
            problems.push(format!("config '{}', kernel.tree: kexec sessions boot installed images only (build it, install it, name its image)", c.name));
            continue;
        }
        if def.image.is_dir() {
            problems.push(format!("config '{}', kernel.image: {} is a directory: kexec sessions boot installed image files", c.name, def.image.display()));
            continue;
        }
        match crate::plan::kernel::resolve_image(&def.image.to_string_lossy())
            .map_err(|e| e.to_string())
            .and_then(|p| kernel(&p, &a.initrd_dir))
        {
            Ok(k) => kernels.push((k, def.cmdline.clone())),
            Err(e) => problems.push(format!("config '{}', kernel.image: {e}", c.name)),
        }
    }
    let id = Identity::read()?;
    let start_image = a
        .start_image
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("/boot/vmlinuz-{}", id.uname)));
    let start = kernel(&start_image, &a.initrd_dir).and_then(|k| {
        exec::check_identity(&k, &id.cmdline, &id)
            .map(|()| k)
            .map_err(|e| format!("{e} (give the running kernel's image with --start-image)"))
    });
    let start = match start {
        Ok(k) => Some(k),
        Err(e) => {
            problems.push(format!("--start-image {}: {e}", start_image.display()));
            None
        }
    };
    for r in &a.audit_ignore {
        if let Err(e) = regex::Regex::new(r) {
            problems.push(format!("--audit-ignore '{r}': {e}"));
        }
    }
    // The unit and the session name it at every boot, whatever the
    // directory the hook then runs in.
    let hook_dir = std::path::absolute(&a.hook_dir)?;
    if let Err(e) = hook::check_dir(&hook_dir) {
        problems.push(format!("{e:#}"));
    }
    // Checked now, and again under the machine lock before any load.
    if let Err(e) = machine_free(&hook_dir) {
        problems.push(e);
    }
    let exe = std::fs::read_link("/proc/self/exe")?;
    // The hook runs this binary as root at every boot of the session.
    if let Err(why) = crate::sys::trust::check(&exe) {
        problems.push(format!(
            "sysdelta's binary, which the hook runs as root: {why}"
        ));
    }
    let state_abs = std::path::absolute(&a.state)?;
    if let Err(e) = hook::unit_text(&exe, &state_abs) {
        problems.push(format!("{e:#}"));
    }
    let cwd = std::env::current_dir()?;
    if let Err(e) = guard::check_cwd(&cwd) {
        problems.push(e);
    }
    let env = super::state::session_env();
    problems.extend(guard::check_env(&env));
    if !problems.is_empty() {
        return Err(bad_all(problems));
    }
    let store_path = std::path::absolute(&a.store)?;
    // No other sysdelta changes the machine from here to the hook's
    // install: no other session's start loads, unloads or installs
    // meanwhile. Dropped before the first step, which takes it itself.
    let machine = crate::runner::machine::MachineLock::acquire(Some(&store_path), "kexec start")?;
    machine_free(&hook_dir).map_err(bad)?;
    let base = exec::base_cmdline(&id.cmdline);
    let all: Vec<&Kernel> = kernels.iter().map(|(k, _)| k).chain(&start).collect();
    let line = exec::cmdline(&base, "", a.panic_s, "check");
    let problems = try_loads(&all, &line);
    if !problems.is_empty() {
        return Err(bad_all(problems));
    }
    let st = State::create(&state_abs)?;
    let store = Store::open(&store_path, true)?;
    let mut ov = plan.overrides.clone();
    // Every later boot parses the plan again: with this seed.
    ov.seed = Some(plan.seed);
    let exp = create(&store, &plan, &ov, &kernels, a.label.as_deref())?;
    let s = Session {
        store: store_path,
        experiment: exp,
        plan_source: plan.source_name.clone(),
        plan_text: plan.text.clone(),
        overrides: ov,
        cwd: cwd.to_str().map(str::to_string),
        env,
        start: start.expect("checked"),
        start_cmdline: base.clone(),
        hook_dir: hook_dir.clone(),
        panic_s: a.panic_s,
        audit_ignore: a.audit_ignore.clone(),
        boots: boots(&plan, &kernels, &base, a.panic_s),
    };
    st.write_session(&s)?;
    hook::install(&hook_dir, &hook::unit_text(&exe, &state_abs)?)?;
    drop(machine);
    store.add_event(
        exp,
        "boot",
        &format!(
            "kexec session of {} boots started on {}; state {}",
            s.boots.len(),
            id.uname,
            state_abs.display()
        ),
    )?;
    drop(store);
    super::step::step(&state_abs)
}

/// A kernel image and the machine's initrd for it, each hashed; Err: why
/// not. The hook kexecs them as root at later boots, so they must be files
/// only root (or the user) can change, as the hook's binary must be.
fn kernel(image: &Path, initrd_dir: &Path) -> Result<Kernel, String> {
    if image.is_dir() {
        return Err(format!(
            "{} is a directory: kexec sessions boot installed image files",
            image.display()
        ));
    }
    // A link (`/vmlinuz`) is resolved once, here: every later boot opens
    // the file it names now, never through a link.
    let image = &std::fs::canonicalize(image).map_err(|e| format!("{}: {e}", image.display()))?;
    // What is inspected is the sealed copy that was hashed, not the file
    // read again by name.
    let (copy, sha256) = exec::open_trusted(image)?;
    let k = crate::vm::image::KernelImage::inspect_open(image, &copy).map_err(|e| e.to_string())?;
    let initrd = initrd_dir.join(format!("initrd.img-{}", k.version));
    if !initrd.is_file() {
        return Err(format!(
            "{} has no initrd {} (--initrd-dir names where the machine's are)",
            k.version,
            initrd.display()
        ));
    }
    // Every later boot opens this very path, whatever the directory the
    // hook runs in (a relative --initrd-dir) and never through a link.
    let initrd =
        std::fs::canonicalize(&initrd).map_err(|e| format!("{}: {e}", initrd.display()))?;
    let (_, initrd_sha256) = exec::open_trusted(&initrd)?;
    Ok(Kernel {
        image: image.to_path_buf(),
        initrd: Some(initrd),
        release: k.version,
        banner: k.banner,
        sha256,
        initrd_sha256: Some(initrd_sha256),
    })
}

/// Refuse (exit 2, nothing changed) a machine another session holds (its
/// unit is installed: starting would replace it) or where a kernel is
/// already loaded for kexec (an admin's: the test loads would unload it).
fn machine_free(hook_dir: &Path) -> Result<(), String> {
    if let Some(other) = hook::session_of(hook_dir) {
        return Err(format!(
            "{}: a kexec session ({}) is under way on this machine: `sysdelta kexec stop --state {}` ends it",
            hook::unit_path(hook_dir).display(),
            other.display(),
            other.display()
        ));
    }
    if std::fs::symlink_metadata(hook::unit_path(hook_dir)).is_ok() {
        return Err(format!(
            "{}: a unit of that name is installed, not one sysdelta wrote; nothing done",
            hook::unit_path(hook_dir).display()
        ));
    }
    if kexec_loaded(Path::new(KEXEC_LOADED)) {
        return Err(format!(
            "{KEXEC_LOADED} is 1: a kernel is already loaded for kexec (by an admin or another tool); `kexec -u` unloads it, then start again"
        ));
    }
    Ok(())
}

/// Where the kernel says whether a kexec kernel is loaded.
const KEXEC_LOADED: &str = "/sys/kernel/kexec_loaded";

/// Whether the file at `p` (`/sys/kernel/kexec_loaded`) says 1.
fn kexec_loaded(p: &Path) -> bool {
    std::fs::read_to_string(p).is_ok_and(|s| s.trim() == "1")
}

/// Each distinct kernel is loaded once and unloaded: one the machine
/// refuses (lockdown, a bad image) is bad input now, not a session whose
/// every boot fails. Its problems.
fn try_loads(kernels: &[&Kernel], cmdline: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut problems = Vec::new();
    for k in kernels {
        if !seen.insert((&k.image, &k.initrd)) {
            continue;
        }
        if let Err(e) = exec::load(k, cmdline) {
            problems.push(format!(
                "{}: cannot be loaded for kexec: {e:#}",
                k.image.display()
            ));
        }
        exec::unload();
    }
    problems
}

/// The experiment's row: the plan, and which image each config boots.
fn create(
    store: &Store,
    plan: &crate::plan::Plan,
    ov: &crate::overrides::Overrides,
    kernels: &[(Kernel, String)],
    label: Option<&str>,
) -> Result<i64> {
    let mut fp = crate::monitor::fingerprint::collect();
    for (c, (k, _)) in plan.configs.iter().zip(kernels) {
        fp.insert(
            format!("vm_kernel.{}", c.name),
            format!("{} ({}) by kexec", k.image.display(), k.banner),
        );
    }
    fp.insert("vm_accel".into(), "none: kexec on the machine".into());
    store.create_experiment(&NewExperiment {
        name: &plan.name,
        label,
        plan_source: &plan.source_name,
        plan_text: &plan.text,
        overrides: ov,
        host: &crate::monitor::fingerprint::hostname(),
        fingerprint: &fp,
        seed: plan.seed,
        order: plan.order,
        runs: plan.runs,
        warmup: plan.warmup,
        baseline: &plan.baseline,
        configs: plan.configs.iter().map(|c| c.name.clone()).collect(),
        workloads: plan.workloads.iter().map(|w| w.name.clone()).collect(),
    })
}

/// The boot schedule of the VM path (same seed streams, same blocks and
/// slots), each boot with its kernel and whole command line.
fn boots(
    plan: &crate::plan::Plan,
    kernels: &[(Kernel, String)],
    base: &str,
    panic_s: u32,
) -> Vec<PlannedBoot> {
    let shape = schedule::Shape {
        configs: plan.configs.len(),
        workloads: plan.workloads.len(),
        boots: plan.boots,
        rounds: plan.runs / plan.boots.max(1),
        warmup: plan.warmup,
    };
    schedule::boots(&shape, plan.order, plan.seed)
        .into_iter()
        .enumerate()
        .map(|(n, b)| {
            let (k, extra) = &kernels[b.config];
            PlannedBoot {
                config: plan.configs[b.config].name.clone(),
                block: b.block,
                position: b.position,
                kernel: k.clone(),
                cmdline: exec::cmdline(base, extra, panic_s, &n.to_string()),
                slots: b
                    .slots
                    .iter()
                    .map(|s| AssignedSlot {
                        block: s.block,
                        seq: s.seq,
                        workload: s.workload,
                        warmup: s.warmup,
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_loaded_by_someone_else_is_seen() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("kexec_loaded");
        assert!(!kexec_loaded(&p));
        std::fs::write(&p, "0\n").unwrap();
        assert!(!kexec_loaded(&p));
        std::fs::write(&p, "1\n").unwrap();
        assert!(kexec_loaded(&p));
    }
}
