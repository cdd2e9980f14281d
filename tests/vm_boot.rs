//! src/vm against the real thing: Debian's cloud and rt kernels, static
//! busybox, QEMU 7.2 and its C virtiofsd, booting under TCG.
//!
//! Every test prints "SKIP: reason" and passes when what it needs is
//! missing (root, qemu, virtiofsd, busybox, a cloud kernel with its
//! modules; SYSDELTA_VM_TEST_FLAVOUR=rt-amd64 boots the rt kernel
//! instead, SYSDELTA_VM_TEST_CONSOLE=1 prints each boot's console tail).
//! Boots take one at a time (a lock): on a 2-core machine
//! parallel TCG guests would only slow each other down.

mod vm_support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use sysdelta::config::journal::process_start_time;
use sysdelta::vm::launch::BASE_CMDLINE;
use sysdelta::vm::{accel, initramfs, modules, port, Accel, Boot, KernelImage, VmSpec, PORT_NAME};
use vm_support::*;

#[test]
fn image_versions_match_module_dirs() {
    let mut seen = 0;
    for flavour in ["cloud-amd64", "rt-amd64"] {
        let Some((image, dir)) = kernel(flavour) else {
            continue;
        };
        let k = KernelImage::inspect(&image).unwrap();
        assert_eq!(k.version, dir.file_name().unwrap().to_str().unwrap());
        assert!(
            k.banner.starts_with(&k.version) && k.banner.contains('#'),
            "{}",
            k.banner
        );
        eprintln!("{}: {}", image.display(), k.banner);
        seen += 1;
    }
    if seen == 0 {
        skip("no /boot/vmlinuz-*-cloud-amd64 or -rt-amd64 with its modules");
    }
    let t = tempfile::tempdir().unwrap();
    let junk = t.path().join("junk");
    std::fs::write(
        &junk,
        (0..4096u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let missing = t.path().join("missing");
    for (p, want) in [
        (Path::new("/bin/sh"), "no \"Linux version \" banner"),
        (junk.as_path(), "is not a bzImage (no HdrS at 0x202)"),
        (missing.as_path(), "no such file"),
        (t.path(), "is not a regular file"),
    ] {
        let e = KernelImage::inspect(p).unwrap_err();
        assert!(
            e.to_string().contains(want) && e.to_string().contains(&p.display().to_string()),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'), "{e}");
    }
}

#[test]
fn modules_resolve_in_load_order() {
    let mut seen = 0;
    for flavour in ["cloud-amd64", "rt-amd64"] {
        let Some((image, dir)) = kernel(flavour) else {
            continue;
        };
        let version = KernelImage::inspect(&image).unwrap().version;
        let got = modules::resolve(&dir, &version).unwrap();
        let names: Vec<String> = got
            .iter()
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        eprintln!("{flavour}: {}", names.join(" "));
        assert_eq!(
            names[..5],
            [
                "virtio_pci_legacy_dev",
                "virtio_pci_modern_dev",
                "virtio_ring",
                "virtio",
                "virtio_pci"
            ]
        );
        for want in ["virtiofs", "overlay", "virtio_console", "pvpanic-pci"] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing from {names:?}"
            );
        }
        let e = modules::resolve(&dir, "6.1.0-0-other").unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("is for {version}, the image is 6.1.0-0-other")),
            "{e}"
        );
        seen += 1;
    }
    if seen == 0 {
        skip("no /boot/vmlinuz-*-cloud-amd64 or -rt-amd64 with its modules");
    }
    let e = modules::resolve(Path::new("/nonexistent/6.1.0-1-x"), "6.1.0-1-x").unwrap_err();
    assert!(
        e.to_string()
            .contains("/nonexistent/6.1.0-1-x: no such directory"),
        "{e}"
    );
}

#[test]
fn initramfs_lists_with_cpio() {
    let Some((image, dir)) = kernel("cloud-amd64") else {
        return skip("no /boot/vmlinuz-*-cloud-amd64 with its modules");
    };
    if !Path::new("/bin/busybox").is_file() || !Path::new("/usr/bin/cpio").is_file() {
        return skip("no /bin/busybox or /usr/bin/cpio");
    }
    if !nix::unistd::geteuid().is_root() {
        return skip("not root (cpio -i makes the dev/console node)");
    }
    let version = KernelImage::inspect(&image).unwrap().version;
    let mods = modules::resolve(&dir, &version).unwrap();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("i.cpio");
    let argv = vec!["/bin/echo".to_string(), "it's $HOME".to_string()];
    initramfs::build(&out, Path::new("/bin/busybox"), &mods, &argv).unwrap();
    let list = std::process::Command::new("cpio")
        .args(["-itv", "-F"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let list = String::from_utf8(list.stdout).unwrap();
    for want in [
        "bin/sh -> busybox",
        " init",
        " lib/modules/order",
        " lib/modules/virtiofs.ko",
    ] {
        assert!(list.contains(want), "{want} not in\n{list}");
    }
    assert!(
        list.lines()
            .any(|l| l.starts_with("crw-------") && l.ends_with("dev/console")),
        "{list}"
    );
    let x = t.path().join("x");
    std::fs::create_dir(&x).unwrap();
    let st = std::process::Command::new("cpio")
        .args(["-id", "--quiet", "-F"])
        .arg(&out)
        .current_dir(&x)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        std::fs::read(x.join("bin/busybox")).unwrap(),
        std::fs::read("/bin/busybox").unwrap()
    );
    let order = std::fs::read_to_string(x.join("lib/modules/order")).unwrap();
    assert_eq!(order.lines().count(), mods.len());
    let init = std::fs::read_to_string(x.join("init")).unwrap();
    // The quoted command gives the same words back in busybox sh.
    let quoted = init
        .lines()
        .find_map(|l| {
            l.split_once(" chroot /newroot ")?
                .1
                .strip_suffix(" </dev/null")
        })
        .unwrap_or_else(|| panic!("no chroot line in\n{init}"));
    let words = std::process::Command::new("/bin/busybox")
        .args(["sh", "-c"])
        .arg(format!("printf '%s\\n' {quoted}"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(words.stdout).unwrap(),
        "/bin/echo\nit's $HOME\n"
    );
    // The script parses (busybox sh -n), quoting included.
    let st = std::process::Command::new("/bin/busybox")
        .args(["sh", "-n"])
        .arg(x.join("init"))
        .status()
        .unwrap();
    assert!(st.success());
    let e = initramfs::build(&out, Path::new("/bin/ls"), &mods, &argv).unwrap_err();
    assert!(e.to_string().contains("is dynamically linked"), "{e}");
    assert!(!out.exists());
}

#[test]
fn accel_auto_explains_tcg() {
    let (a, note) = accel::choose("auto").unwrap();
    eprintln!("auto: {a} {note:?}");
    // Only root opens /dev/kvm here, so only root gets as far as kvm_pvm.
    if Path::new("/sys/module/kvm_pvm").exists() && nix::unistd::geteuid().is_root() {
        assert_eq!(a, Accel::Tcg);
        assert!(note.unwrap().contains("kvm_pvm"));
        let e = accel::choose("kvm").unwrap_err();
        assert!(e.to_string().contains("kvm_pvm"), "{e}");
    }
    assert_eq!(accel::choose("tcg").unwrap(), (Accel::Tcg, None));
}

/// Boot, run `/bin/sh -c` that reports on the port, and check it.
#[test]
fn boot_runs_command_and_channel() {
    let Some(env) = boot_env() else { return };
    let _one = BOOTS.lock().unwrap_or_else(|p| p.into_inner());
    let tok = token();
    let overlay_file = format!("/{tok}-overlay");
    let escape_file = format!("/{tok}-escape");
    // The port's device by its name; a write to the overlay; a write
    // through a second, remounted-rw virtiofs mount, which only the
    // host-side read-only bind can stop.
    let script = format!(
        r#"p=; i=0
while [ -z "$p" ] && [ $i -lt 100 ]; do
  for n in /sys/class/virtio-ports/*/name; do
    [ "$(cat "$n" 2>/dev/null)" = {PORT_NAME} ] && p=/dev/$(basename "$(dirname "$n")")
  done
  if [ -z "$p" ] || [ ! -e "$p" ]; then p=; sleep 0.05; i=$((i+1)); fi
done
touch {overlay_file} && [ -e {overlay_file} ] && ov=ok || ov=failed
mkdir -p /tmp/esc && mount -t virtiofs hostroot /tmp/esc && mount -o remount,rw /tmp/esc && mnt=rw || mnt=no
touch /tmp/esc{escape_file} 2>/dev/null && esc=WROTE || esc=refused
echo "uname=$(uname -r) nproc=$(nproc) overlay=$ov remount=$mnt escape=$esc tmp=$(touch /tmp/x && echo w) run=$(touch /run/x && echo w) cmdline=$(cat /proc/cmdline)" > "$p"
"#
    );
    let argv = vec!["/bin/sh".to_string(), "-c".into(), script];
    let cmdline = format!("{BASE_CMDLINE} sysdelta.test={tok}");
    let t = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let mut boot = start(&env, t.path(), &argv, &cmdline, 1);
    let chan = boot.channel(Duration::from_secs(10)).unwrap();
    chan.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut line = String::new();
    let read = BufReader::new(chan).read_line(&mut line);
    let status = boot.wait_timeout(Duration::from_secs(60));
    let total = t0.elapsed();
    let t1 = Instant::now();
    boot.kill();
    eprintln!(
        "boot_runs_command_and_channel: kill after the exit took {:.3}s",
        t1.elapsed().as_secs_f64()
    );
    let tail = boot.console_tail();
    report("boot_runs_command_and_channel", &boot, total);
    for f in [&overlay_file, &escape_file] {
        if Path::new(f).exists() {
            let _ = std::fs::remove_file(f);
            panic!("the guest's write reached the host: {f}\n{tail}");
        }
    }
    read.unwrap_or_else(|e| panic!("channel: {e}\n{tail}"));
    let want = format!(
        "uname={} nproc=1 overlay=ok remount=rw escape=refused tmp=w run=w cmdline={cmdline}\n",
        env.image.version
    );
    assert_eq!(line, want, "{tail}");
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{tail}");
    assert_eq!(boot.guest_exit(), Some(0), "{tail}");
    assert!(tail.contains("SYSDELTA-EXIT 0"), "{tail}");
    let marks: Vec<String> = boot.markers().into_iter().map(|(_, m)| m).collect();
    assert_eq!(
        marks,
        ["SYSDELTA-INIT", "SYSDELTA-MOUNTED", "SYSDELTA-EXIT 0"],
        "{tail}"
    );
    assert_eq!(boot.panic_line(), None);
    assert_nothing_left(&boot, t.path());
}

/// The guest half of [`boot_two_cpus_port_open`]: this test binary run
/// inside the VM. Ignored, and a no-op outside that VM.
#[test]
#[ignore = "runs inside the guest of boot_two_cpus_port_open"]
fn guest_side_port_helper() {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if !cmdline.contains("sysdelta.test=port") {
        return;
    }
    let mut f = port::open(PORT_NAME).unwrap();
    port::wait_host(&f, Duration::from_secs(10)).unwrap();
    let uname = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let n = std::thread::available_parallelism().unwrap();
    writeln!(
        f,
        "port uname={} nproc={n} online={}",
        uname.trim(),
        online.trim()
    )
    .unwrap();
}

/// Two CPUs, and the guest side in Rust: `vm::port::open` by name.
#[test]
fn boot_two_cpus_port_open() {
    let Some(env) = boot_env() else { return };
    let _one = BOOTS.lock().unwrap_or_else(|p| p.into_inner());
    let me = std::env::current_exe().unwrap();
    let argv: Vec<String> = [
        me.to_str().unwrap(),
        "--ignored",
        "--exact",
        "guest_side_port_helper",
        "--nocapture",
        "--test-threads=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cmdline = format!("{BASE_CMDLINE} sysdelta.test=port");
    let t = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let mut boot = start(&env, t.path(), &argv, &cmdline, 2);
    let chan = boot.channel(Duration::from_secs(10)).unwrap();
    chan.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut line = String::new();
    let read = BufReader::new(chan).read_line(&mut line);
    let status = boot.wait_timeout(Duration::from_secs(60));
    let total = t0.elapsed();
    boot.kill();
    let tail = boot.console_tail();
    report("boot_two_cpus_port_open", &boot, total);
    read.unwrap_or_else(|e| panic!("channel: {e}\n{tail}"));
    assert_eq!(
        line,
        format!("port uname={} nproc=2 online=0-1\n", env.image.version),
        "{tail}"
    );
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{tail}");
    assert_eq!(boot.guest_exit(), Some(0), "{tail}");
    assert_nothing_left(&boot, t.path());
}

#[test]
fn boot_deadline_kill_leaves_nothing() {
    let Some(env) = boot_env() else { return };
    let _one = BOOTS.lock().unwrap_or_else(|p| p.into_inner());
    let t = tempfile::tempdir().unwrap();
    // Without earlyprintk the bzImage's setup and decompressor print
    // nothing, and under load the kernel's first line came after 1 s.
    let cmdline = format!("{BASE_CMDLINE} earlyprintk=serial,ttyS0,115200");
    let mut boot = start(&env, t.path(), &["/bin/true".to_string()], &cmdline, 1);
    let status = boot.wait_timeout(Duration::from_secs(1));
    let t0 = Instant::now();
    boot.kill();
    let killed_in = t0.elapsed();
    boot.kill();
    let tail = boot.console_tail();
    eprintln!(
        "boot_deadline_kill_leaves_nothing: killed and reaped in {:.3}s, {} console lines",
        killed_in.as_secs_f64(),
        tail.lines().count()
    );
    assert_eq!(status, None, "a TCG boot finished within 1 s?\n{tail}");
    assert!(!tail.trim().is_empty());
    if std::env::var_os("SYSDELTA_VM_TEST_CONSOLE").is_some() {
        eprintln!("boot_deadline_kill_leaves_nothing: console tail:\n{tail}");
    }
    assert!(boot.try_wait().is_some());
    assert_nothing_left(&boot, t.path());
}

#[test]
fn boot_bad_cmdline_panics() {
    let Some(env) = boot_env() else { return };
    let _one = BOOTS.lock().unwrap_or_else(|p| p.into_inner());
    let t = tempfile::tempdir().unwrap();
    let cmdline = format!("{BASE_CMDLINE} rdinit=/nonexistent");
    let t0 = Instant::now();
    let mut boot = start(&env, t.path(), &["/bin/true".to_string()], &cmdline, 1);
    let status = boot.wait_timeout(Duration::from_secs(60));
    let total = t0.elapsed();
    boot.kill();
    let tail = boot.console_tail();
    report("boot_bad_cmdline_panics", &boot, total);
    // A panic before /init cannot use pvpanic: -no-reboot makes it rc 0.
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{tail}");
    let panic = boot
        .panic_line()
        .unwrap_or_else(|| panic!("no panic line in\n{tail}"));
    assert!(panic.starts_with("Kernel panic - not syncing: "), "{panic}");
    eprintln!("boot_bad_cmdline_panics: {panic}");
    assert!(boot.markers().is_empty());
    assert_nothing_left(&boot, t.path());
}

/// An error from `on_spawn` kills what was started and is returned, for
/// the first child (virtiofsd) and for the second (QEMU).
#[test]
fn on_spawn_error_kills_what_started() {
    let Some(env) = boot_env() else { return };
    let _one = BOOTS.lock().unwrap_or_else(|p| p.into_inner());
    let t = tempfile::tempdir().unwrap();
    let initrd = t.path().join("initramfs.cpio");
    initramfs::build(
        &initrd,
        Path::new("/bin/busybox"),
        &env.modules,
        &["/bin/true".to_string()],
    )
    .unwrap();
    let spec = VmSpec {
        kernel: env.image.path.clone(),
        initramfs: initrd,
        cmdline: BASE_CMDLINE.to_string(),
        cpus: 1,
        memory_mib: 256,
        accel: Accel::Tcg,
    };
    for fail_at in [1, 2] {
        let dir = t.path().join(format!("boot{fail_at}"));
        std::fs::create_dir(&dir).unwrap();
        let mut spawned = Vec::new();
        let t0 = Instant::now();
        let e = Boot::start(&spec, &dir, &mut |pid, st| {
            spawned.push((pid, st));
            if spawned.len() == fail_at {
                Err(sysdelta::error::Error::failed("journal full"))
            } else {
                Ok(())
            }
        })
        .err()
        .expect("start should fail");
        eprintln!(
            "on_spawn_error_kills_what_started: call {fail_at} failed after {:.2}s",
            t0.elapsed().as_secs_f64()
        );
        assert_eq!(e.to_string(), "journal full");
        assert_eq!(spawned.len(), fail_at);
        for (pid, start) in spawned {
            let alive = process_start_time(pid) == Some(start) && !is_zombie(pid);
            assert!(!alive, "pid {pid} still alive after a failed start");
        }
    }
}

/// The host half of [`sigkill_of_the_host_kills_the_boot`]: a process
/// that starts a boot, prints its children, and waits to be killed.
#[test]
#[ignore = "run by sigkill_of_the_host_kills_the_boot"]
fn host_side_boot_helper() {
    let Some(dir) = std::env::var_os("SYSDELTA_VM_TEST_DIR") else {
        return;
    };
    let Some(env) = boot_env() else { return };
    let boot = start(
        &env,
        Path::new(&dir),
        &["/bin/true".to_string()],
        BASE_CMDLINE,
        1,
    );
    let pids: Vec<String> = boot
        .children()
        .iter()
        .map(|(p, s)| format!("{p}:{s}"))
        .collect();
    println!("CHILDREN {}", pids.join(" "));
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

/// SIGKILL of the process that owns a boot takes QEMU and virtiofsd with
/// it (their parent-death signal), and leaves no mount.
#[test]
fn sigkill_of_the_host_kills_the_boot() {
    if boot_env().is_none() {
        return;
    }
    let _one = BOOTS.lock().unwrap_or_else(|p| p.into_inner());
    let t = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "host_side_boot_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SYSDELTA_VM_TEST_DIR", t.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut kids = Vec::new();
    while out.read_line(&mut line).unwrap() > 0 {
        // libtest's "test NAME ... " starts the same line.
        if let Some((_, rest)) = line.split_once("CHILDREN ") {
            for w in rest.split_whitespace() {
                let (p, s) = w.split_once(':').unwrap();
                kids.push((p.parse::<i32>().unwrap(), s.parse::<u64>().unwrap()));
            }
            break;
        }
        line.clear();
    }
    let t0 = Instant::now();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(kids.len(), 2, "the helper printed no children");
    let gone =
        |(pid, start): &(i32, u64)| process_start_time(*pid) != Some(*start) || is_zombie(*pid);
    while !kids.iter().all(gone) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "sigkill_of_the_host_kills_the_boot: children gone {:.3}s after the SIGKILL",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        kids.iter().all(gone),
        "children left after the SIGKILL: {kids:?}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(t.path().to_str().unwrap()));
}

/// Without virtiofs the root cannot be mounted: /init says so on the
/// console and powers off, and nothing runs.
#[test]
fn boot_without_virtiofs_fails_visibly() {
    let Some(mut env) = boot_env() else { return };
    let _one = BOOTS.lock().unwrap_or_else(|p| p.into_inner());
    env.modules.retain(|m| !m.ends_with("virtiofs.ko"));
    let t = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let mut boot = start(&env, t.path(), &["/bin/true".to_string()], BASE_CMDLINE, 1);
    let status = boot.wait_timeout(Duration::from_secs(60));
    let total = t0.elapsed();
    boot.kill();
    let tail = boot.console_tail();
    report("boot_without_virtiofs_fails_visibly", &boot, total);
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{tail}");
    let marks: Vec<String> = boot.markers().into_iter().map(|(_, m)| m).collect();
    assert_eq!(
        marks,
        [
            "SYSDELTA-INIT",
            "SYSDELTA-FAIL mount virtiofs hostroot /lower"
        ],
        "{tail}"
    );
    assert_eq!(boot.guest_exit(), None);
    assert_nothing_left(&boot, t.path());
}
