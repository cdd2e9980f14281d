//! `sysdelta kexec start`: check everything, record the experiment and the
//! whole boot schedule, install the hook, and kexec into the first boot.
//! Bad input (exit 2) changes nothing: no state directory, no experiment,
//! no hook.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::exec::{self, Identity};
use super::hook;
use super::state::{Kernel, PlannedBoot, Session, State};
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
    if let Err(e) = hook::check_dir(&a.hook_dir) {
        problems.push(format!("{e:#}"));
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
    if !problems.is_empty() {
        return Err(bad_all(problems));
    }
    let st = State::create(&state_abs)?;
    let store_path = std::path::absolute(&a.store)?;
    let store = Store::open(&store_path, true)?;
    let base = exec::base_cmdline(&id.cmdline);
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
        cwd: std::env::current_dir()?.to_str().map(str::to_string),
        start: start.expect("checked"),
        start_cmdline: base.clone(),
        hook_dir: a.hook_dir.clone(),
        panic_s: a.panic_s,
        audit_ignore: a.audit_ignore.clone(),
        boots: boots(&plan, &kernels, &base, a.panic_s),
    };
    st.write_session(&s)?;
    hook::install(&a.hook_dir, &hook::unit_text(&exe, &state_abs)?)?;
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

/// A kernel image and the machine's initrd for it; Err: why not.
fn kernel(image: &Path, initrd_dir: &Path) -> Result<Kernel, String> {
    let k = crate::vm::image::KernelImage::inspect(image).map_err(|e| e.to_string())?;
    let initrd = initrd_dir.join(format!("initrd.img-{}", k.version));
    if !initrd.is_file() {
        return Err(format!(
            "{} has no initrd {} (--initrd-dir names where the machine's are)",
            k.version,
            initrd.display()
        ));
    }
    Ok(Kernel {
        image: image.to_path_buf(),
        initrd: Some(initrd),
        release: k.version,
        banner: k.banner,
    })
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
