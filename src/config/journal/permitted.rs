//! Which undo actions a journal read from disk may hold: those sysdelta's
//! own kinds, workloads and runner record. The journal is a file beside a
//! store, and root undoes what it says; so an action outside this list (a
//! directory to remove, a file to write, a process to kill that sysdelta
//! never made) refuses the whole journal (see `Journal::open`).

use std::fs;
use std::path::Path;

use super::undo::UndoAction;
use crate::sys::procstat::process_start_time;

/// The programs whose processes sysdelta starts and journals (perf for
/// `perf_record`, QEMU and virtiofsd for kernel configs), by the start of
/// their `comm`.
const OWN_PROGRAMS: &[&str] = &["perf", "qemu", "virtiofsd"];

/// Whether `undo`, read from a journal on disk, is an undo sysdelta itself
/// could have recorded: the journal is a file, and what a file says is
/// done as root only within what sysdelta's kinds and workloads change
/// (`crate::config::kinds`, `crate::workload::fsops`, the runner's scratch
/// and boot directories). The reason when it is not.
///
/// - writes: sysctls (`/proc/sys`), tracefs, `/sys/kernel/rcu_expedited`,
///   a block device's `trace/enable`, and handing back the memory
///   controller (`-memory` into a `cgroup.subtree_control` under
///   `/sys/fs/cgroup`);
/// - removals: a scratch directory (`sysdelta-` and 12 letters or digits)
///   or a kernel config's `boot-N` in one, recursively; otherwise one file
///   or empty directory: named `sysdelta-*`, an fsops volume's `volN.img`
///   or `mntN` in a `sysdelta-fsops-*` directory, a trace capture's
///   `trace.cpuN` / `blk.cpuN`, a perf.data file (or an empty file), an
///   empty directory (a trace output directory), or nothing there;
/// - cgroups named `sysdelta-*` under `/sys/fs/cgroup`;
/// - processes that are their own process group's leader (sysdelta starts
///   each in its own group or session) and run perf, QEMU or virtiofsd,
///   or that are gone (their start time no longer matches);
/// - unmounting tracefs, or an fsops volume's `mntN`; detaching a loop
///   device from an fsops volume; swapoff of a zram device or a
///   `sysdelta-swap-*` file; removing a loop or zram device (the kernel
///   refuses one that is in use).
pub fn permitted(undo: &UndoAction) -> Result<(), String> {
    let ok = match undo {
        UndoAction::WriteFile { path, contents } => {
            (writable(path) && !names_a_program(path, contents))
                || (clean(path)
                    && path.starts_with("/sys/fs/cgroup")
                    && name(path) == "cgroup.subtree_control"
                    && contents.trim() == "-memory")
        }
        UndoAction::WriteLines { path, lines } => {
            writable(path) && !names_a_program(path, &lines.join("\n"))
        }
        UndoAction::Unmount { target, source } => {
            (target == Path::new(crate::sys::sysfs::TRACEFS)
                && source.as_deref() == Some("tracefs"))
                || (clean(target) && fsops_part(target, "mnt", ""))
        }
        UndoAction::DetachLoop {
            device,
            backing_file,
        } => {
            numbered(name(device), "loop", "")
                && device.parent() == Some(Path::new("/dev"))
                && clean(backing_file)
                && fsops_part(backing_file, "vol", ".img")
        }
        UndoAction::RemoveLoop { .. } | UndoAction::RemoveZram { .. } => true,
        UndoAction::RemovePath { path, recursive } => removable(path, *recursive),
        UndoAction::KillProcess {
            pid, start_time, ..
        } => *pid > 1 && own_process(*pid, *start_time),
        UndoAction::Swapoff { path } => {
            clean(path)
                && ((path.parent() == Some(Path::new("/dev")) && numbered(name(path), "zram", ""))
                    || name(path).starts_with("sysdelta-swap-"))
        }
        UndoAction::RemoveCgroup { path } => {
            clean(path) && path.starts_with("/sys/fs/cgroup") && name(path).starts_with("sysdelta-")
        }
    };
    match ok {
        true => Ok(()),
        false => Err("outside what sysdelta's configs and workloads change".into()),
    }
}

/// Absolute, with no `..` (a prefix check must mean what it says).
fn clean(p: &Path) -> bool {
    use std::path::Component;
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

fn name(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// `name` is `prefix`, digits, `suffix`.
fn numbered(name: &str, prefix: &str, suffix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|r| r.strip_suffix(suffix))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A file an fsops workload makes in its `sysdelta-fsops-*` directory.
fn fsops_part(p: &Path, prefix: &str, suffix: &str) -> bool {
    numbered(name(p), prefix, suffix)
        && p.parent()
            .is_some_and(|d| name(d).starts_with("sysdelta-fsops-"))
}

/// A value the kinds write: sysctls, tracefs, RCU expediting, a block
/// device's blktrace switch.
fn writable(p: &Path) -> bool {
    clean(p)
        && (p.starts_with("/proc/sys")
            || p.starts_with(crate::sys::sysfs::TRACEFS)
            || p.starts_with("/sys/kernel/debug/tracing")
            || p == Path::new("/sys/kernel/rcu_expedited")
            || (p.starts_with("/sys/block")
                && p.components().count() == 6
                && p.ends_with("trace/enable")))
}

/// Whether writing `contents` to `path` would name a program the kernel
/// later runs as root (a core dump's pipe, the modprobe, hotplug and
/// poweroff helpers, binfmt_misc interpreters, the usermode-helper
/// switches): no undo sysdelta records does, and a planted journal that
/// did would be root for whoever restores it.
fn names_a_program(path: &Path, contents: &str) -> bool {
    let key = path.strip_prefix("/proc/sys").unwrap_or(path);
    key.starts_with("fs/binfmt_misc")
        || key.starts_with("kernel/usermodehelper")
        || ["kernel/modprobe", "kernel/hotplug", "kernel/poweroff_cmd"]
            .iter()
            .any(|k| key == Path::new(k))
        || (key == Path::new("kernel/core_pattern") && contents.trim_start().starts_with('|'))
}

/// The runner's scratch directory: `sysdelta-` and 12 letters or digits.
fn scratch_shaped(n: &str) -> bool {
    n.strip_prefix("sysdelta-")
        .is_some_and(|r| r.len() == 12 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn removable(p: &Path, recursive: bool) -> bool {
    if !clean(p) || p.parent().is_none() {
        return false;
    }
    let n = name(p);
    let parent = p.parent().map(name).unwrap_or("");
    if recursive {
        return scratch_shaped(n) || (numbered(n, "boot-", "") && scratch_shaped(parent));
    }
    if n.starts_with("sysdelta-")
        || fsops_part(p, "vol", ".img")
        || fsops_part(p, "mnt", "")
        || numbered(n, "trace.cpu", "")
        || numbered(n, "blk.cpu", "")
    {
        return true;
    }
    // What is there decides the rest: nothing, an empty directory, or a
    // perf.data file (perf_record's output, whatever its name).
    match fs::symlink_metadata(p) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        Ok(m) if m.is_dir() => fs::read_dir(p).is_ok_and(|mut d| d.next().is_none()),
        Ok(m) if m.is_file() => {
            use std::io::Read;
            let mut magic = [0u8; 8];
            m.len() == 0
                || fs::File::open(p)
                    .and_then(|mut f| f.read_exact(&mut magic))
                    .is_ok_and(|()| &magic == b"PERFILE2" || &magic == b"2ELIFREP")
        }
        Ok(_) => false,
    }
}

/// A process sysdelta started: gone (its start time no longer matches,
/// so the undo does nothing), or its own group's leader running one of
/// [`OWN_PROGRAMS`].
fn own_process(pid: i32, start_time: u64) -> bool {
    if process_start_time(pid) != Some(start_time) {
        return true;
    }
    let leader = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid)))
        .is_ok_and(|g| g.as_raw() == pid);
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    // Ours: a process another user runs (libvirt's QEMU, say) was never
    // started by this sysdelta, whatever its name.
    let mine = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(format!("/proc/{pid}"))
            .is_ok_and(|m| m.uid() == nix::unistd::geteuid().as_raw())
    };
    leader && mine && OWN_PROGRAMS.iter().any(|p| comm.trim().starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remove(p: &str, recursive: bool) -> UndoAction {
        UndoAction::RemovePath {
            path: p.into(),
            recursive,
        }
    }

    #[test]
    fn writes_that_name_a_program_the_kernel_runs_are_refused() {
        let w = |p: &str, c: &str| UndoAction::WriteFile {
            path: p.into(),
            contents: c.into(),
        };
        for (p, c) in [
            ("/proc/sys/kernel/core_pattern", "|/home/m/x %p"),
            ("/proc/sys/kernel/modprobe", "/home/m/x"),
            ("/proc/sys/kernel/hotplug", "/home/m/x"),
            ("/proc/sys/kernel/poweroff_cmd", "/home/m/x"),
            ("/proc/sys/fs/binfmt_misc/register", ":x:E::x::/home/m/x:"),
        ] {
            assert!(permitted(&w(p, c)).is_err(), "{p}");
        }
        assert!(permitted(&w("/proc/sys/kernel/core_pattern", "core")).is_ok());
        assert!(permitted(&w("/proc/sys/vm/swappiness", "60")).is_ok());
    }

    #[test]
    fn what_the_kinds_record_is_permitted() {
        let ok = [
            UndoAction::WriteFile {
                path: "/proc/sys/kernel/sched_autogroup_enabled".into(),
                contents: "1".into(),
            },
            UndoAction::WriteFile {
                path: "/sys/kernel/tracing/current_tracer".into(),
                contents: "nop".into(),
            },
            UndoAction::WriteLines {
                path: "/sys/kernel/tracing/set_event".into(),
                lines: vec![],
            },
            UndoAction::WriteFile {
                path: "/sys/kernel/rcu_expedited".into(),
                contents: "0".into(),
            },
            UndoAction::WriteFile {
                path: "/sys/block/sda/trace/enable".into(),
                contents: "0".into(),
            },
            UndoAction::WriteFile {
                path: "/sys/fs/cgroup/cgroup.subtree_control".into(),
                contents: "-memory".into(),
            },
            UndoAction::Unmount {
                target: "/sys/kernel/tracing".into(),
                source: Some("tracefs".into()),
            },
            UndoAction::Unmount {
                target: "/tmp/sysdelta-abcdefABCDEF/sysdelta-fsops-12/mnt0".into(),
                source: Some("/dev/loop3".into()),
            },
            UndoAction::DetachLoop {
                device: "/dev/loop3".into(),
                backing_file: "/var/tmp/sysdelta-fsops-12/vol0.img".into(),
            },
            remove("/tmp/sysdelta-abcdefABCDEF", true),
            remove("/tmp/sysdelta-abcdefABCDEF/boot-7", true),
            remove("/var/tmp/sysdelta-fsops-12/vol0.img", false),
            remove("/var/tmp/sysdelta-swap-12-0", false),
            remove("/var/tmp/traces/trace.cpu3", false),
            remove("/nonexistent/perf.data", false),
            UndoAction::Swapoff {
                path: "/dev/zram2".into(),
            },
            UndoAction::RemoveCgroup {
                path: "/sys/fs/cgroup/user.slice/sysdelta-12-0".into(),
            },
        ];
        for a in ok {
            assert!(permitted(&a).is_ok(), "{a:?}");
        }
    }

    #[test]
    fn what_no_kind_records_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("passwd");
        fs::write(&file, "root:x:0:0").unwrap();
        let refused = [
            UndoAction::WriteFile {
                path: "/etc/passwd".into(),
                contents: "x".into(),
            },
            UndoAction::WriteFile {
                path: "/proc/sys/../../etc/passwd".into(),
                contents: "x".into(),
            },
            UndoAction::WriteFile {
                path: "/sys/fs/cgroup/cgroup.subtree_control".into(),
                contents: "+memory".into(),
            },
            UndoAction::WriteLines {
                path: "/root/.ssh/authorized_keys".into(),
                lines: vec![],
            },
            remove("/etc", true),
            remove("/tmp/sysdelta-short", true),
            remove(file.to_str().unwrap(), false),
            remove(d.path().to_str().unwrap(), false),
            UndoAction::Unmount {
                target: "/home".into(),
                source: None,
            },
            UndoAction::DetachLoop {
                device: "/dev/loop0".into(),
                backing_file: "/var/lib/images/disk.img".into(),
            },
            UndoAction::Swapoff {
                path: "/swapfile".into(),
            },
            UndoAction::RemoveCgroup {
                path: "/sys/fs/cgroup/system.slice".into(),
            },
            // This test's process is alive and runs no perf, QEMU or virtiofsd.
            UndoAction::KillProcess {
                pid: std::process::id() as i32,
                start_time: process_start_time(std::process::id() as i32).unwrap(),
                group: true,
            },
            UndoAction::KillProcess {
                pid: 1,
                start_time: 0,
                group: false,
            },
        ];
        for a in refused {
            assert!(permitted(&a).is_err(), "{a:?}");
        }
    }
}
