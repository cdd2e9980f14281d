//! A VM that plays a bare machine, for testing kexec sessions
//! (`crate::kexec`, `tests/kexec_session.rs`): its `/init` mounts what the
//! VM path's does (the host's root read-only under an overlay in RAM),
//! plus a writable virtiofs share (tag `state`) at the same path as on the
//! host: what must outlive a kexec (the session's state, the store, the
//! hook's directory) lives there, never in the host's real /etc.
//!
//! Then it behaves like a machine's init: a first-boot command, if its
//! file is there (it is renamed first, so it runs once: the user typing
//! `sysdelta kexec start`), then the `ExecStart=` of each unit enabled in
//! the hook directory (`multi-user.target.wants/*.service`), restarted up
//! to [`RESTARTS`] times when it fails, as `Restart=on-failure` would; then
//! it powers off. The VM is launched without `-no-reboot`, so a guest
//! kernel's reboot (a panic's `panic=N`) boots QEMU's `-kernel` again, as
//! firmware boots the boot loader's default.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// How often a failed unit is started again.
pub const RESTARTS: u32 = 3;
/// The console line the init prints when it is up, before any unit:
/// followed by `uname -r`-worth of `/proc/version`'s first words.
pub const UP: &str = "SYSDELTA-MACHINE-UP";

/// The script the machine runs in the new root: `$1` the hook directory,
/// `$2` the first-boot command file.
const UNITS: &str = r#"#!/bin/sh
# The test machine's "systemd": a first-boot command once, then each
# enabled unit's ExecStart, restarted when it fails.
if [ -f "$2" ]; then
    mv "$2" "$2.ran"
    echo "SYSDELTA-FIRSTBOOT"
    sh "$2.ran"
    echo "SYSDELTA-FIRSTBOOT-EXIT $?"
fi
for u in "$1"/multi-user.target.wants/*.service; do
    [ -e "$u" ] || continue
    cmd=$(sed -n 's/^ExecStart=//p' "$u")
    tries=0
    while :; do
        echo "SYSDELTA-UNIT $u"
        $cmd
        st=$?
        echo "SYSDELTA-UNIT-EXIT $st"
        [ "$st" -eq 0 ] && break
        tries=$((tries + 1))
        [ "$tries" -gt RESTARTS ] && break
    done
done
"#;

/// The machine's `/init`: the VM path's mounts, the `state` share at
/// `share` (an absolute path), then the units of `hook_dir` and the
/// first-boot command in `first` (both under `share`).
pub fn init_script(share: &Path, hook_dir: &Path, first: &Path) -> Result<String, Error> {
    let q = |p: &Path| {
        p.to_str()
            .filter(|s| s.starts_with('/'))
            .and_then(|s| shlex::try_quote(s).ok().map(|q| q.into_owned()))
            .ok_or_else(|| {
                Error::failed(format!(
                    "machine: {} is not an absolute UTF-8 path",
                    p.display()
                ))
            })
    };
    let (share, hook_dir, first) = (q(share)?, q(hook_dir)?, q(first)?);
    let env = shlex::try_join(super::initramfs::GUEST_ENV.iter().copied()).expect("no NUL");
    let units = UNITS.replace("RESTARTS", &RESTARTS.to_string());
    Ok(format!(
        "{head}mkdir -p $R{share}\n\
         mount -t virtiofs state $R{share} || fail mount virtiofs state\n\
         echo \"{UP} $(cat /proc/cmdline)\"\n\
         cat > $R/run/units.sh <<'SYSDELTA_UNITS'\n{units}SYSDELTA_UNITS\n\
         env -i {env} chroot /newroot /bin/sh /run/units.sh {hook_dir} {first} </dev/null\n\
         echo \"SYSDELTA-EXIT $?\"\n\
         poweroff -f\n\
         echo o > /proc/sysrq-trigger\n\
         sleep 60\n",
        head = head(),
    ))
}

/// [`super::initramfs::INIT_HEAD`] ending in a power-off, not a reset: this
/// VM runs without `-no-reboot`, where a reset boots the machine's default
/// kernel again (a failed mount would loop until the test's deadline).
fn head() -> String {
    let reset = "    reboot -f\n    echo b > /proc/sysrq-trigger\n";
    let head = super::initramfs::INIT_HEAD;
    assert!(head.contains(reset), "INIT_HEAD's end() changed");
    head.replace(reset, "    poweroff -f\n    echo o > /proc/sysrq-trigger\n")
}

/// Write the machine's initramfs for a kernel whose guest modules are
/// `modules` (as `vm::modules::resolve` gives them).
pub fn build(out: &Path, busybox: &Path, modules: &[PathBuf], init: &str) -> Result<(), Error> {
    super::initramfs::build_with_init(out, busybox, modules, init)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_mounts_the_share_and_runs_the_units() {
        let s = init_script(
            Path::new("/tmp/t x"),
            Path::new("/tmp/t x/hook"),
            Path::new("/tmp/t x/first"),
        )
        .unwrap();
        assert!(s.contains("mount -t virtiofs state $R'/tmp/t x'"), "{s}");
        assert!(
            s.contains("/run/units.sh '/tmp/t x/hook' '/tmp/t x/first'"),
            "{s}"
        );
        assert!(s.contains("[ \"$tries\" -gt 3 ]"), "{s}");
        // Its failures power off: a reset would boot the machine again.
        assert!(!s.contains("reboot -f") && s.contains("end() {\n    poweroff -f"));
        assert!(init_script(Path::new("rel"), Path::new("/h"), Path::new("/f")).is_err());
    }
}
