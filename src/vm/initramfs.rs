//! The initramfs: static busybox, the guest's modules and `/init`.
//!
//! It is an uncompressed newc cpio (the kernel unpacks one as it is, and
//! at about 2.5 MB there is nothing to gain from compressing what QEMU
//! copies from the page cache). The format is written here rather than
//! with a crate: it is a 110-byte ASCII header per entry, and a test
//! checks the result against the `cpio` tool.
//!
//! `/init` mounts the host's root (virtiofs tag `hostroot`, read-only;
//! the host enforces that too) under an overlay whose upper layer is a
//! tmpfs, so the guest can write anywhere (`/tmp`, the journal's files)
//! without reaching the host, then runs one command chrooted into it and
//! resets the machine, which ends QEMU (`-no-reboot`). It talks to the host only through marker lines on the
//! console, see [`INIT_MARKERS`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Busybox applets `/init` uses, plus a few for reading a broken boot.
const APPLETS: &[&str] = &[
    "sh", "mount", "umount", "insmod", "mkdir", "chroot", "env", "reboot", "cat", "echo", "sleep",
    "ls", "dmesg",
];

/// What `/init` prints on the console, each at the start of its own line:
/// `SYSDELTA-INIT` when it starts; `SYSDELTA-MODULE-FAILED <file>` for a
/// module insmod refused (the boot goes on: a later mount says what it
/// broke); `SYSDELTA-FAIL <what>` for a failed mount, after which it
/// ends the boot; `SYSDELTA-MOUNTED` before the command; `SYSDELTA-EXIT
/// <status>` after it. It ends the boot with a reset (`reboot -f`), which
/// QEMU's `-no-reboot` makes its exit.
pub const INIT_MARKERS: &[&str] = &[
    "SYSDELTA-INIT",
    "SYSDELTA-MODULE-FAILED",
    "SYSDELTA-FAIL",
    "SYSDELTA-MOUNTED",
    "SYSDELTA-EXIT",
];

/// The environment the guest command gets, and nothing else (`env -i`):
/// no TMPDIR, so the guest's temporary files go to its own /tmp.
pub const GUEST_ENV: &[&str] = &[
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    "LANG=C.UTF-8",
];

/// The start of every `/init` (also `vm::machine`'s): modules, the host's
/// root under the overlay, the file systems of the new root.
pub(crate) const INIT_HEAD: &str = r#"#!/bin/sh
# sysdelta's guest init: the host's root, read-only, under an overlay in
# guest RAM; one command chrooted into it; reset, which ends QEMU.
export PATH=/bin
echo SYSDELTA-INIT
# The end: a reset, which QEMU's -no-reboot turns into its exit (status 0).
# Not poweroff: a kernel without ACPI (an image of the user's) cannot power off,
# and its poweroff halts the CPU with QEMU left running; every x86 kernel
# can reset (keyboard controller, then triple fault). sysrq b if not.
end() {
    reboot -f
    echo b > /proc/sysrq-trigger
    sleep 60
}
fail() {
    echo "SYSDELTA-FAIL $*"
    end
}
mount -t proc proc /proc || fail mount proc /proc
mount -t sysfs sysfs /sys || fail mount sysfs /sys
mount -t devtmpfs devtmpfs /dev || fail mount devtmpfs /dev
exec </dev/null >/dev/console 2>&1
while read -r m; do
    insmod "/lib/modules/$m" || echo "SYSDELTA-MODULE-FAILED $m"
done </lib/modules/order
mount -t virtiofs -o ro hostroot /lower || fail mount virtiofs hostroot /lower
mount -t tmpfs -o mode=0755 rw /rw || fail mount tmpfs /rw
mkdir -p /rw/up /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/up,workdir=/rw/work overlay /newroot || fail mount overlay /newroot
R=/newroot
mkdir -p $R/proc $R/sys $R/dev $R/run
mount -t proc proc $R/proc || fail mount proc $R/proc
mount -t sysfs sysfs $R/sys || fail mount sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev || fail mount devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts || fail mount devpts $R/dev/pts
mount -t tmpfs -o mode=1777 shm $R/dev/shm || fail mount tmpfs $R/dev/shm
mount -t tmpfs -o mode=0755 run $R/run || fail mount tmpfs $R/run
echo SYSDELTA-MOUNTED
"#;

const INIT_TAIL: &str = r#"
echo "SYSDELTA-EXIT $?"
end
"#;

/// The `/init` script for `guest_argv`.
pub fn init_script(guest_argv: &[String]) -> Result<String, Error> {
    if guest_argv.is_empty() {
        return Err(Error::failed("initramfs: the guest command is empty"));
    }
    let argv = shlex::try_join(guest_argv.iter().map(String::as_str))
        .map_err(|e| Error::failed(format!("initramfs: cannot quote the guest command: {e}")))?;
    let env = shlex::try_join(GUEST_ENV.iter().copied()).expect("constant has no NUL");
    // busybox chroot (run by busybox env, both from the initramfs) does
    // chroot(2), chdir("/") and execvp, so the command is looked up in the
    // host's PATH; stdin is /dev/null and stdout/stderr the console.
    Ok(format!(
        "{INIT_HEAD}env -i {env} chroot /newroot {argv} </dev/null{INIT_TAIL}"
    ))
}

/// Write the initramfs to `out`: `busybox` (must be static) as /bin/busybox
/// with its applet links, `modules` flat in /lib/modules with their load
/// order in /lib/modules/order, and /init running `guest_argv`. On error
/// nothing is left at `out`.
pub fn build(
    out: &Path,
    busybox: &Path,
    modules: &[PathBuf],
    guest_argv: &[String],
) -> Result<(), Error> {
    build_with_init(out, busybox, modules, &init_script(guest_argv)?)
}

/// [`build`] with `init` as /init (`vm::machine`'s test machine).
pub fn build_with_init(
    out: &Path,
    busybox: &Path,
    modules: &[PathBuf],
    init: &str,
) -> Result<(), Error> {
    let result = write_archive(out, busybox, modules, init);
    if result.is_err() {
        let _ = std::fs::remove_file(out);
    }
    result
}

fn write_archive(out: &Path, busybox: &Path, modules: &[PathBuf], init: &str) -> Result<(), Error> {
    let bb = std::fs::read(busybox).map_err(|e| {
        Error::failed(format!(
            "busybox {}: cannot be read: {e}",
            busybox.display()
        ))
    })?;
    check_static(&bb).map_err(|e| Error::failed(format!("busybox {}: {e}", busybox.display())))?;

    let mut names: Vec<String> = Vec::new();
    let mut ko: Vec<Vec<u8>> = Vec::new();
    for m in modules {
        let name = m
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                Error::failed(format!("module {} has no usable file name", m.display()))
            })?
            .to_string();
        if names.contains(&name) || name == "order" {
            return Err(Error::failed(format!(
                "module {}: a second module named {name} (they are stored flat)",
                m.display()
            )));
        }
        ko.push(
            std::fs::read(m).map_err(|e| {
                Error::failed(format!("module {}: cannot be read: {e}", m.display()))
            })?,
        );
        names.push(name);
    }
    let order: String = names.iter().map(|n| format!("{n}\n")).collect();

    let file = File::create(out).map_err(|e| {
        Error::failed(format!(
            "initramfs {}: cannot be created: {e}",
            out.display()
        ))
    })?;
    let mut w = Newc::new(BufWriter::new(file));
    let io = |e: std::io::Error| {
        Error::failed(format!("initramfs {}: write failed: {e}", out.display()))
    };
    for dir in [
        "bin",
        "dev",
        "proc",
        "sys",
        "lower",
        "rw",
        "newroot",
        "lib",
        "lib/modules",
    ] {
        w.dir(dir).map_err(io)?;
    }
    // The kernel opens /dev/console for /init's stdin/stdout/stderr before
    // devtmpfs is mounted; without this node /init would start with none.
    w.entry("dev/console", S_IFCHR | 0o600, (5, 1), &[])
        .map_err(io)?;
    w.file("bin/busybox", 0o755, &bb).map_err(io)?;
    for a in APPLETS {
        w.symlink(&format!("bin/{a}"), "busybox").map_err(io)?;
    }
    for (name, data) in names.iter().zip(&ko) {
        w.file(&format!("lib/modules/{name}"), 0o644, data)
            .map_err(io)?;
    }
    w.file("lib/modules/order", 0o644, order.as_bytes())
        .map_err(io)?;
    w.file("init", 0o755, init.as_bytes()).map_err(io)?;
    let mut inner = w.finish().map_err(io)?;
    inner.flush().map_err(io)?;
    inner
        .into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)
}

/// A static executable has no PT_INTERP program header: a dynamic one
/// would need a loader and libraries the initramfs does not have.
pub fn check_static(elf: &[u8]) -> Result<(), Error> {
    if !elf.starts_with(b"\x7fELF") {
        return Err(Error::failed("is not an ELF executable"));
    }
    if elf.get(5) != Some(&1) {
        return Err(Error::failed("is not a little-endian ELF"));
    }
    let u16_at = |o: usize| {
        elf.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize)
    };
    let (phoff, phentsize, phnum) = match elf.get(4) {
        Some(2) => (u64_at(0x20), u16_at(0x36), u16_at(0x38)),
        Some(1) => (u32_at(0x1C), u16_at(0x2A), u16_at(0x2C)),
        _ => return Err(Error::failed("has an unknown ELF class")),
    };
    let cut = || Error::failed("has a cut-short ELF header");
    let (phoff, phentsize, phnum) = (
        phoff.ok_or_else(cut)?,
        phentsize.ok_or_else(cut)?,
        phnum.ok_or_else(cut)?,
    );
    for i in 0..phnum {
        const PT_INTERP: usize = 3;
        let p_type = u32_at(phoff + i * phentsize)
            .ok_or_else(|| Error::failed("has program headers beyond its end"))?;
        if p_type == PT_INTERP {
            return Err(Error::failed("is dynamically linked (it has an ELF interpreter); the initramfs needs a static busybox (Debian: apt-get install busybox-static)"));
        }
    }
    Ok(())
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

/// A newc ("070701") cpio writer: owner root, mtime 0 (so the same inputs
/// give the same bytes).
pub struct Newc<W: Write> {
    w: W,
    ino: u32,
}

impl<W: Write> Newc<W> {
    pub fn new(w: W) -> Newc<W> {
        Newc { w, ino: 0 }
    }

    pub fn dir(&mut self, name: &str) -> std::io::Result<()> {
        self.entry(name, S_IFDIR | 0o755, (0, 0), &[])
    }

    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> std::io::Result<()> {
        self.entry(name, S_IFREG | perm, (0, 0), data)
    }

    pub fn symlink(&mut self, name: &str, target: &str) -> std::io::Result<()> {
        self.entry(name, S_IFLNK | 0o777, (0, 0), target.as_bytes())
    }

    /// One entry; `rdev` is (major, minor) of a device node.
    pub fn entry(
        &mut self,
        name: &str,
        mode: u32,
        rdev: (u32, u32),
        data: &[u8],
    ) -> std::io::Result<()> {
        self.ino += 1;
        let nlink = if mode & 0o170000 == S_IFDIR { 2 } else { 1 };
        let size = u32::try_from(data.len())
            .map_err(|_| std::io::Error::other(format!("{name}: over 4 GiB for newc")))?;
        let namesize = name.len() as u32 + 1;
        let fields = [
            self.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev.0, rdev.1, namesize, 0,
        ];
        let mut header = String::from("070701");
        for f in fields {
            header.push_str(&format!("{f:08x}"));
        }
        self.w.write_all(header.as_bytes())?;
        self.w.write_all(name.as_bytes())?;
        self.w.write_all(&[0])?;
        // Header plus name, then the data, are each padded to 4 bytes.
        self.pad(110 + namesize as usize)?;
        self.w.write_all(data)?;
        self.pad(data.len())
    }

    fn pad(&mut self, len: usize) -> std::io::Result<()> {
        let n = (4 - len % 4) % 4;
        self.w.write_all(&[0u8; 3][..n])
    }

    /// Write the trailer and give back the writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.ino = 0;
        self.entry("TRAILER!!!", 0, (0, 0), &[])?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_quotes_the_command() {
        let argv = vec![
            "/bin/sh".to_string(),
            "-c".into(),
            "echo 'a b' $HOME; x".into(),
        ];
        let s = init_script(&argv).unwrap();
        assert!(s.contains("chroot /newroot /bin/sh -c "), "{s}");
        assert!(!s.contains("-c echo 'a b' $HOME; x"), "{s}");
        assert!(init_script(&[]).is_err());
        assert!(init_script(&["a\0b".to_string()]).is_err());
    }

    #[test]
    fn static_check_reads_program_headers() {
        // ELF64 LE with two program headers at 0x40: PT_LOAD, then PT_INTERP.
        let mut e = vec![0u8; 0x40 + 2 * 56];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        e[0x38..0x3a].copy_from_slice(&2u16.to_le_bytes());
        e[0x40] = 1;
        assert!(check_static(&e).is_ok());
        e[0x40 + 56] = 3;
        assert!(check_static(&e)
            .unwrap_err()
            .to_string()
            .contains("dynamically linked"));
        assert!(check_static(b"#!/bin/sh").is_err());
    }
}
