//! KVM or TCG.
//!
//! The choice is static (docs/kernels.md A.6): a `/dev/kvm` that opens is
//! not enough, since on a host that is itself a VM it may be `kvm_pvm`,
//! under which stock kernels abort, stay silent, or crawl and then stop
//! with "KVM internal error" while QEMU stays alive. A probe boot would
//! catch more cases; the static check catches every one seen so far, in
//! microseconds, and never hangs.

use std::fmt;
use std::path::Path;

use crate::error::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl fmt::Display for Accel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Accel::Kvm => "KVM",
            Accel::Tcg => "TCG",
        })
    }
}

impl Accel {
    /// QEMU's `-accel` and `-cpu` arguments. Multi-threaded TCG gives each
    /// vCPU its own host thread, as KVM does.
    pub fn qemu_args(self) -> [&'static str; 4] {
        match self {
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host"],
            Accel::Tcg => ["-accel", "tcg,thread=multi", "-cpu", "max"],
        }
    }
}

/// `requested` is "auto", "kvm" or "tcg". "auto" gives KVM when it is
/// usable, else TCG with a note saying why; "kvm" when it is not usable is
/// an error saying why.
pub fn choose(requested: &str) -> Result<(Accel, Option<String>), Error> {
    match requested {
        "tcg" => Ok((Accel::Tcg, None)),
        "kvm" => match kvm_unusable(Path::new("/")) {
            None => Ok((Accel::Kvm, None)),
            Some(why) => Err(Error::failed(format!("accel kvm: {why}"))),
        },
        "auto" => match kvm_unusable(Path::new("/")) {
            None => Ok((Accel::Kvm, None)),
            Some(why) => Ok((
                Accel::Tcg,
                Some(format!("{why}; guests run under TCG (emulated CPU)")),
            )),
        },
        other => Err(Error::failed(format!(
            "accel must be auto, kvm or tcg, not '{other}'"
        ))),
    }
}

/// Why KVM cannot be used on the machine whose root is `root` (a
/// parameter so tests can point it at a fake tree), or None.
pub fn kvm_unusable(root: &Path) -> Option<String> {
    let kvm = root.join("dev/kvm");
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&kvm)
    {
        return Some(format!("/dev/kvm cannot be opened read-write ({e})"));
    }
    if root.join("sys/module/kvm_pvm").exists() {
        return Some("/dev/kvm is kvm_pvm: stock kernels hang under it".into());
    }
    match std::fs::read_to_string(root.join("proc/cpuinfo")) {
        Ok(info) => {
            let virt = info
                .lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
            if !virt {
                return Some("the CPU has no vmx or svm flag in /proc/cpuinfo".into());
            }
        }
        Err(e) => return Some(format!("/proc/cpuinfo cannot be read ({e})")),
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_static_check_names_each_reason() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        assert!(kvm_unusable(r).unwrap().contains("cannot be opened"));
        std::fs::create_dir_all(r.join("dev")).unwrap();
        std::fs::write(r.join("dev/kvm"), "").unwrap();
        std::fs::create_dir_all(r.join("proc")).unwrap();
        std::fs::write(r.join("proc/cpuinfo"), "flags\t: fpu hypervisor\n").unwrap();
        assert!(kvm_unusable(r).unwrap().contains("no vmx or svm"));
        std::fs::write(r.join("proc/cpuinfo"), "flags\t: fpu svm\n").unwrap();
        assert_eq!(kvm_unusable(r), None);
        std::fs::create_dir_all(r.join("sys/module/kvm_pvm")).unwrap();
        assert!(kvm_unusable(r).unwrap().contains("kvm_pvm"));
        assert_eq!(choose("tcg").unwrap(), (Accel::Tcg, None));
        assert!(choose("fast").is_err());
        assert_eq!(Accel::Kvm.to_string(), "KVM");
    }
}
