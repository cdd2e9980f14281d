//! Helpers of tests/vm_boot.rs: finding a kernel, skipping, starting a
//! boot, and checking that nothing of it is left.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use sysdelta::config::journal::process_start_time;
use sysdelta::vm::launch;
use sysdelta::vm::{initramfs, modules, Accel, Boot, KernelImage, VmSpec};

pub static BOOTS: Mutex<()> = Mutex::new(());

pub fn skip(why: &str) {
    std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP: {why}\n")).unwrap_or(());
}

/// Compare version-like names by their numbers, so 6.1.0-100 is newer
/// than 6.1.0-56.
pub fn version_key(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// The newest `/boot/vmlinuz-*-<flavour>` that has its /lib/modules dir.
pub fn kernel(flavour: &str) -> Option<(PathBuf, PathBuf)> {
    let mut found: Vec<(String, PathBuf, PathBuf)> = std::fs::read_dir("/boot")
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let version = name.strip_prefix("vmlinuz-")?.to_string();
            if !version.ends_with(&format!("-{flavour}")) {
                return None;
            }
            let dir = Path::new("/lib/modules").join(&version);
            dir.join("modules.dep").is_file().then(|| {
                let image = Path::new("/boot").join(&name);
                (version, image, dir)
            })
        })
        .collect();
    found.sort_by_key(|(v, _, _)| version_key(v));
    found.pop().map(|(_, i, d)| (i, d))
}

pub struct Env {
    pub image: KernelImage,
    pub modules: Vec<PathBuf>,
}

/// What a boot needs, or None after printing why the test skips.
pub fn boot_env() -> Option<Env> {
    if !nix::unistd::geteuid().is_root() {
        skip("not root (virtiofsd needs a mount namespace)");
        return None;
    }
    if let Err(e) = launch::find_qemu().and(launch::find_virtiofsd()) {
        skip(&e.to_string());
        return None;
    }
    if !Path::new("/bin/busybox").is_file() {
        skip("no /bin/busybox (apt-get install busybox-static)");
        return None;
    }
    // The cloud kernel boots fastest under TCG (LZ4, A.5); another flavour
    // (e.g. rt-amd64) can be tried by hand with this variable.
    let flavour =
        std::env::var("SYSDELTA_VM_TEST_FLAVOUR").unwrap_or_else(|_| "cloud-amd64".into());
    let Some((image, dir)) = kernel(&flavour) else {
        skip(&format!(
            "no /boot/vmlinuz-*-{flavour} with its /lib/modules directory"
        ));
        return None;
    };
    let image = KernelImage::inspect(&image).unwrap();
    let modules = modules::resolve(&dir, &image.version).unwrap();
    Some(Env { image, modules })
}

pub fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Nothing of the boot in `dir` is left: its children are gone (a zombie
/// counts as gone), no process names the directory, nothing is mounted
/// in it.
pub fn assert_nothing_left(boot: &Boot, dir: &Path) {
    for (pid, start) in boot.children() {
        let alive = process_start_time(pid) == Some(start) && !is_zombie(pid);
        assert!(!alive, "pid {pid} of the boot is still alive");
    }
    let d = dir.to_str().unwrap();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(d) && !is_zombie(pid) {
            panic!(
                "process {pid} still runs for {d}: {}",
                String::from_utf8_lossy(&cmd)
            );
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(d), "a mount is left in {d}:\n{mounts}");
}

/// Build the initramfs for `argv` and start a boot in `t`.
pub fn start(env: &Env, t: &Path, argv: &[String], cmdline: &str, cpus: u32) -> Boot {
    let initrd = t.join("initramfs.cpio");
    initramfs::build(&initrd, Path::new("/bin/busybox"), &env.modules, argv).unwrap();
    let dir = t.join("boot");
    std::fs::create_dir(&dir).unwrap();
    let spec = VmSpec {
        kernel: env.image.path.clone(),
        initramfs: initrd,
        cmdline: cmdline.to_string(),
        cpus,
        memory_mib: 512,
        accel: Accel::Tcg,
    };
    let mut spawned = Vec::new();
    let boot = Boot::start(&spec, &dir, &mut |pid, st| {
        spawned.push((pid, st));
        Ok(())
    })
    .unwrap();
    assert_eq!(spawned, boot.children());
    boot
}

pub fn report(name: &str, boot: &Boot, total: Duration) {
    let marks: Vec<String> = boot
        .markers()
        .iter()
        .map(|(t, m)| format!("{m} at {:.2}s", t.as_secs_f64()))
        .collect();
    eprintln!(
        "{name}: total {:.2}s; {}",
        total.as_secs_f64(),
        marks.join(", ")
    );
    if std::env::var_os("SYSDELTA_VM_TEST_CONSOLE").is_some() {
        eprintln!("{name}: console tail:\n{}", boot.console_tail());
    }
}

pub fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("sysdelta-vm-test-{}-{nanos}", std::process::id())
}
