//! The kernel configuration a build uses: the user's kconfig (or x86_64
//! `defconfig`) with what the guest needs merged in as built-in, then
//! `olddefconfig`. Built-in, because the initramfs loads modules only by
//! plain `insmod` of files the host picked (`vm::modules`); with these
//! in the kernel it loads none.

use std::path::Path;

use super::make::{make, Make, Stop};

/// Options the guest cannot boot without, enabled (=y) and checked after
/// `olddefconfig`: virtio over PCI and the virtiofs root (`vm::modules::WANTED`),
/// the overlay over it, the virtio-serial channel, pvpanic so a panic
/// ends QEMU, devtmpfs, the initramfs, the serial console, and what /init
/// and busybox use (ELF and scripts, proc, sysfs, tmpfs, devpts, sysrq).
/// And ACPI, for the guest's clock, not to power off (the guest ends with
/// a reset, `vm::initramfs`): under TCG the kernel calibrates the TSC
/// against the ACPI PM timer or the HPET (found through ACPI); without
/// them only the PIT is left, which failed on a loaded host ("could not
/// calculate TSC khz"): the TSC was marked unstable, the clock was
/// refined-jiffies (4 ms at HZ=250) and a 44x slower getppid() came out
/// as noise. The same kconfig with ACPI booted on tsc.
pub const GUEST_NEEDS: &[&str] = &[
    "64BIT",
    "ACPI",
    "PCI",
    "VIRTIO_MENU",
    "VIRTIO",
    "VIRTIO_PCI",
    "FUSE_FS",
    "VIRTIO_FS",
    "OVERLAY_FS",
    "TTY",
    "VIRTIO_CONSOLE",
    "PVPANIC",
    "PVPANIC_PCI",
    "DEVTMPFS",
    "BLK_DEV_INITRD",
    "SERIAL_8250",
    "SERIAL_8250_CONSOLE",
    "PRINTK",
    "BINFMT_ELF",
    "BINFMT_SCRIPT",
    "PROC_FS",
    "SYSFS",
    "TMPFS",
    "UNIX98_PTYS",
    "MAGIC_SYSRQ",
    "MULTIUSER",
    "FUTEX",
    "EPOLL",
    "POSIX_TIMERS",
    "NET",
    "UNIX",
];

/// Enabled when the config allows them, not required: a paravirtual
/// clock and spinlocks under KVM, and modules left uncompressed (busybox
/// `insmod` loads plain `.ko` files only).
const GUEST_NICE: &[&str] = &[
    "HYPERVISOR_GUEST",
    "PARAVIRT",
    "KVM_GUEST",
    "MODULE_COMPRESS_NONE",
];

/// Write `obj/.config` for this build from `kconfig`'s content (as
/// hashed into the identity). Err: the line that says why.
pub fn prepare(m: &Make, kconfig: Option<&[u8]>, localversion: &str) -> Result<(), Stop> {
    let dot = m.obj.join(".config");
    match kconfig {
        Some(k) => {
            std::fs::write(&dot, k)
                .map_err(|e| Stop::Other(format!("cannot write {}: {e}", dot.display())))?;
        }
        None => make(m, &["x86_64_defconfig"])?,
    }
    let mut args: Vec<String> = vec!["--file".into(), dot.to_string_lossy().into_owned()];
    for o in GUEST_NEEDS.iter().chain(GUEST_NICE) {
        args.extend(["--enable".into(), (*o).to_string()]);
    }
    args.extend(["--disable".into(), "LOCALVERSION_AUTO".into()]);
    args.extend([
        "--set-str".into(),
        "LOCALVERSION".into(),
        localversion.to_string(),
    ]);
    m.run(&m.src.join("scripts/config"), &args)?;
    make(m, &["olddefconfig"])?;
    let text = std::fs::read_to_string(&dot).map_err(|e| format!("{}: {e}", dot.display()))?;
    let missing: Vec<&str> = GUEST_NEEDS
        .iter()
        .filter(|o| !text.lines().any(|l| l == format!("CONFIG_{o}=y")))
        .copied()
        .collect();
    if !missing.is_empty() {
        return Err(Stop::Failed(format!(
            "olddefconfig left CONFIG_{} unset (a dependency the kconfig turns off?)",
            missing.join(", CONFIG_")
        )));
    }
    Ok(())
}

/// True when `.config` builds loadable modules.
pub fn has_modules(obj: &Path) -> bool {
    std::fs::read_to_string(obj.join(".config"))
        .map(|t| t.lines().any(|l| l == "CONFIG_MODULES=y"))
        .unwrap_or(false)
}
