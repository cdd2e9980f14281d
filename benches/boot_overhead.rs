//! What a kernel config costs on the host, against a bare QEMU boot of
//! the same kernel, measured side by side in the same run.
//!
//! - **bare**: `qemu-system-x86_64 -kernel IMAGE -initrd` a busybox
//!   initramfs whose `/init` runs one shell command (`true`) and powers
//!   off: the least any tool can pay to boot this kernel to a command.
//! - **sysdelta, 1 run** and **sysdelta, 1 + N runs**: `sysdelta run` of a
//!   plan with one kernel config and one boot, whose workload is the
//!   command `true`, as a whole process (preflight, store, initramfs, the
//!   boot with virtiofsd and the host's root, hello and identity check,
//!   the runs, poweroff, report).
//!
//! sysdelta's cost per run inside a guest is the slope between the two
//! sysdelta sizes; its cost per boot is the 1-run time less one slope.
//! Each round runs the three in turn, the order reversed every other round;
//! the figures are medians over rounds with min and max. The guest's own
//! launch-to-hello time (from the store) is printed beside them. vng
//! (virtme-ng) is timed too when it is installed.
//!
//! Run as root: `cargo bench --bench boot_overhead` (about 2 minutes under
//! TCG). Without root, QEMU or a cloud kernel it says what is missing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const ROUNDS: usize = 5;
const EXTRA_RUNS: u32 = 20;

fn cloud_image() -> Option<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/boot")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("vmlinuz-") && n.ends_with("-cloud-amd64")
        })
        .collect();
    v.sort();
    v.pop()
}

/// An initramfs whose init runs `true` with busybox and powers off.
fn bare_initramfs(out: &Path) {
    let busybox = std::fs::read("/bin/busybox").expect("/bin/busybox (busybox-static)");
    let f = std::fs::File::create(out).unwrap();
    let mut w = sysdelta::vm::initramfs::Newc::new(std::io::BufWriter::new(f));
    w.dir("bin").unwrap();
    w.file("bin/busybox", 0o755, &busybox).unwrap();
    w.file(
        "init",
        0o755,
        b"#!/bin/busybox sh\n/bin/busybox true\n/bin/busybox poweroff -f\n",
    )
    .unwrap();
    w.finish().unwrap().flush().unwrap();
}

fn bare(image: &Path, initrd: &Path) -> f64 {
    let t = Instant::now();
    // A bare boot that hangs is ended, not left behind.
    let st = Command::new("timeout")
        .args(["120", "qemu-system-x86_64"])
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ])
        .args([
            "-machine",
            "pc",
            "-accel",
            "tcg,thread=multi",
            "-cpu",
            "max",
        ])
        .args(["-smp", "1", "-m", "512", "-serial", "null"])
        .arg("-kernel")
        .arg(image)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", "console=ttyS0 panic=-1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("qemu");
    assert!(st.success(), "bare qemu: {st}");
    t.elapsed().as_secs_f64()
}

fn vng(image: &Path) -> Option<f64> {
    Command::new("vng").arg("--version").output().ok()?;
    let t = Instant::now();
    let st = Command::new("vng")
        .args(["--run"])
        .arg(image)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    st.success().then(|| t.elapsed().as_secs_f64())
}

/// `sysdelta run` of one boot with `runs` runs of `true`: (wall, launch to hello).
fn sysdelta(dir: &Path, image: &Path, runs: u32, round: usize) -> (f64, f64) {
    let plan = dir.join(format!("p{runs}-{round}.toml"));
    std::fs::write(
        &plan,
        format!(
            "runs = {runs}\nboots = 1\n[[config]]\nname = \"k\"\n[config.kernel]\nimage = \"{}\"\n\
             [[workload]]\nname = \"true\"\ncommand = \"true\"\n",
            image.display()
        ),
    )
    .unwrap();
    let store = dir.join(format!("s{runs}-{round}.db"));
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .arg("--store")
        .arg(&store)
        .args(["run", plan.to_str().unwrap(), "--quiet", "--no-report"])
        .output()
        .expect("sysdelta");
    let wall = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = rusqlite::Connection::open(&store).unwrap();
    let hello: f64 = c
        .query_row("SELECT launch_to_hello_s FROM boots", [], |r| r.get(0))
        .unwrap();
    (wall, hello)
}

fn stats(v: &[f64]) -> String {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    format!(
        "median {:7.3} s  [{:.3}, {:.3}]",
        s[s.len() / 2],
        s[0],
        s[s.len() - 1]
    )
}

fn main() {
    if !nix::unistd::geteuid().is_root() {
        println!("boot_overhead: skipped: not root (kernel configs need root)");
        return;
    }
    if Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_err()
    {
        println!(
            "boot_overhead: skipped: qemu-system-x86_64 missing (scripts/install-vm-tools.sh)"
        );
        return;
    }
    let Some(image) = cloud_image() else {
        println!(
            "boot_overhead: skipped: no /boot/vmlinuz-*-cloud-amd64 (scripts/install-vm-tools.sh)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let initrd = dir.path().join("bare.cpio");
    bare_initramfs(&initrd);
    let (mut b, mut s1, mut sn, mut hello, mut v) = (vec![], vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        let mut steps: Vec<u8> = vec![0, 1, 2, 3];
        if round % 2 == 1 {
            steps.reverse();
        }
        for step in steps {
            match step {
                0 => b.push(bare(&image, &initrd)),
                1 => {
                    let (w, h) = sysdelta(dir.path(), &image, 1, round);
                    s1.push(w);
                    hello.push(h);
                }
                2 => sn.push(sysdelta(dir.path(), &image, 1 + EXTRA_RUNS, round).0),
                _ => v.extend(vng(&image)),
            }
        }
        eprintln!("round {} of {ROUNDS} done", round + 1);
    }
    let slopes: Vec<f64> = s1
        .iter()
        .zip(&sn)
        .map(|(a, n)| (n - a) / EXTRA_RUNS as f64)
        .collect();
    let per_boot: Vec<f64> = s1.iter().zip(&slopes).map(|(a, s)| a - s).collect();
    let over: Vec<f64> = per_boot.iter().zip(&b).map(|(p, b)| p - b).collect();
    println!(
        "kernel {} under TCG, 1 CPU, {ROUNDS} rounds",
        image.display()
    );
    println!("bare qemu, boot to `true` and poweroff   {}", stats(&b));
    println!("sysdelta, whole run of 1 boot x 1 run    {}", stats(&s1));
    println!(
        "sysdelta, whole run of 1 boot x {:2} runs  {}",
        1 + EXTRA_RUNS,
        stats(&sn)
    );
    println!(
        "sysdelta per boot (1-run time - slope)   {}",
        stats(&per_boot)
    );
    println!("  of which launch to the guest's hello   {}", stats(&hello));
    println!("  above bare qemu, paired per round      {}", stats(&over));
    println!(
        "sysdelta per run of `true` in the guest  median {:.1} ms  [{:.1}, {:.1}]",
        1e3 * {
            let mut s = slopes.clone();
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        },
        1e3 * slopes.iter().cloned().fold(f64::INFINITY, f64::min),
        1e3 * slopes.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
    );
    match v.is_empty() {
        true => println!("vng (virtme-ng): not installed or failed here; not timed"),
        false => println!("vng --run IMAGE -- true                 {}", stats(&v)),
    }
}
