//! What a kernel image is: its path and the version it says it is.
//!
//! The version is read from the file, not from its name, so that a config
//! naming `/boot/vmlinuz-x` is checked against what the guest reports
//! (`uname -r`) and paired with the right modules directory.
//!
//! * A bzImage carries its version string in the real-mode header: "HdrS"
//!   at 0x202, boot protocol at 0x206, and at 0x20E a u16 pointer to the
//!   string, relative to 0x200 (Documentation/arch/x86/boot.rst). That
//!   string is `UTS_RELEASE (user@host) UTS_VERSION`: it has no compiler
//!   part, unlike `/proc/version`.
//! * An ELF vmlinux has no such header; its version comes from the
//!   `Linux version ` banner in its read-only data, which is the text
//!   `/proc/version` shows (with the compiler part). Booting one needs
//!   its PVH note, which this module does not check: QEMU refuses one
//!   without it, and says so on its console.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::Error;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelImage {
    pub path: PathBuf,
    /// `uname -r` of the kernel: the first word of `banner`.
    pub version: String,
    /// The whole version string: the bzImage header's, or for an ELF
    /// vmlinux the banner after `Linux version `.
    pub banner: String,
}

/// The setup code, which holds the header's version string, is at most
/// (63+1) sectors; reading this much covers it without reading the
/// compressed kernel behind it.
const SETUP_MAX: u64 = 64 * 1024;

const BANNER_PREFIX: &[u8] = b"Linux version ";

/// The largest file taken for a kernel image (a debug vmlinux is a few
/// hundred MB).
const MAX_IMAGE: u64 = 1 << 30;

impl KernelImage {
    pub fn inspect(path: &Path) -> Result<KernelImage, Error> {
        let what = |msg: &str| Error::failed(format!("kernel image {}: {msg}", path.display()));
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(what("no such file")),
            Err(e) => return Err(what(&format!("cannot be read: {e}"))),
        };
        if !meta.is_file() {
            return Err(what("is not a regular file"));
        }
        // Kernel images are tens of MB; /proc/kcore and the like claim
        // terabytes and must not be read.
        if meta.len() > MAX_IMAGE {
            return Err(what(&format!(
                "is {} bytes, larger than any kernel image",
                meta.len()
            )));
        }
        let f = File::open(path).map_err(|e| what(&format!("cannot be read: {e}")))?;
        Self::inspect_open(path, &f)
    }

    /// [`KernelImage::inspect`] of the bytes `f` holds (read from its
    /// start, whatever its offset), `path` naming it in messages: the copy
    /// a kexec session hashed and loads, never the file again by name.
    pub fn inspect_open(path: &Path, f: &File) -> Result<KernelImage, Error> {
        use std::os::unix::fs::FileExt;
        let what = |msg: &str| Error::failed(format!("kernel image {}: {msg}", path.display()));
        let len = f
            .metadata()
            .map_err(|e| what(&format!("cannot be read: {e}")))?
            .len();
        if len > MAX_IMAGE {
            return Err(what(&format!(
                "is {len} bytes, larger than any kernel image"
            )));
        }
        let read = |n: u64| -> Result<Vec<u8>, Error> {
            let mut buf = vec![0u8; n.min(len) as usize];
            f.read_exact_at(&mut buf, 0)
                .map_err(|e| what(&format!("cannot be read: {e}")))?;
            Ok(buf)
        };
        let head = read(SETUP_MAX)?;
        let banner = if head.len() > 0x206 && &head[0x202..0x206] == b"HdrS" {
            bzimage_version(&head).map_err(|e| what(&e.to_string()))?
        } else if head.starts_with(b"\x7fELF") {
            // The banner sits in .rodata, megabytes in: read it all (a
            // 60 MB vmlinux takes tens of milliseconds to scan).
            let whole = read(len)?;
            elf_banner(&whole).map_err(|e| what(&e.to_string()))?
        } else {
            return Err(what(
                "is not a bzImage (no HdrS at 0x202) or an ELF vmlinux (no ELF header)",
            ));
        };
        let version = banner.split_whitespace().next().unwrap_or("").to_string();
        Ok(KernelImage {
            path: path.to_path_buf(),
            version,
            banner,
        })
    }
}

/// The version string of a bzImage whose "HdrS" magic was already found.
pub fn bzimage_version(head: &[u8]) -> Result<String, Error> {
    let u16_at = |off: usize| -> Option<u16> {
        Some(u16::from_le_bytes(head.get(off..off + 2)?.try_into().ok()?))
    };
    if head.get(0x202..0x206) != Some(b"HdrS".as_slice()) {
        return Err(Error::failed("is not a bzImage (no HdrS at 0x202)"));
    }
    let protocol = u16_at(0x206).ok_or_else(|| Error::failed("bzImage header is cut short"))?;
    // kernel_version exists from boot protocol 2.00 on.
    if protocol < 0x200 {
        return Err(Error::failed(format!(
            "bzImage boot protocol {}.{:02} is older than 2.00 and has no version string",
            protocol >> 8,
            protocol & 0xff
        )));
    }
    let ptr = u16_at(0x20E).ok_or_else(|| Error::failed("bzImage header is cut short"))?;
    if ptr == 0 {
        return Err(Error::failed(
            "bzImage header has no version string (pointer at 0x20E is 0)",
        ));
    }
    let start = usize::from(ptr) + 0x200;
    let rest = head.get(start..).filter(|r| !r.is_empty()).ok_or_else(|| {
        Error::failed(format!(
            "bzImage version string pointer 0x{start:x} is beyond the setup code"
        ))
    })?;
    let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
        Error::failed(format!(
            "bzImage version string at 0x{start:x} has no NUL within the setup code"
        ))
    })?;
    printable(&rest[..end]).ok_or_else(|| {
        Error::failed(format!(
            "bzImage version string at 0x{start:x} is not printable text"
        ))
    })
}

/// The text after the first `Linux version ` that is followed by a digit
/// (the format string `Linux version %s` of linux_proc_banner is not),
/// up to the end of its line.
pub fn elf_banner(bytes: &[u8]) -> Result<String, Error> {
    let mut from = 0;
    while let Some(i) = find(&bytes[from..], BANNER_PREFIX) {
        let start = from + i + BANNER_PREFIX.len();
        if bytes.get(start).is_some_and(u8::is_ascii_digit) {
            let len = bytes[start..]
                .iter()
                .take(1024)
                .position(|&b| b == b'\n' || b == 0)
                .ok_or_else(|| Error::failed("the ELF's Linux version banner has no end"))?;
            return printable(&bytes[start..start + len]).ok_or_else(|| {
                Error::failed("the ELF's Linux version banner is not printable text")
            });
        }
        from = start;
    }
    Err(Error::failed(
        "is an ELF file with no \"Linux version \" banner (not a vmlinux?)",
    ))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        let j = hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&b| b == first)?;
        i += j;
        if &hay[i..i + needle.len()] == needle {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn printable(b: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(b).ok()?.trim().to_string();
    if s.is_empty() || s.chars().any(|c| c.is_control()) {
        return None;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(protocol: u16, ptr: u16, text: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 0x1000];
        b[0x202..0x206].copy_from_slice(b"HdrS");
        b[0x206..0x208].copy_from_slice(&protocol.to_le_bytes());
        b[0x20E..0x210].copy_from_slice(&ptr.to_le_bytes());
        let at = usize::from(ptr) + 0x200;
        b[at..at + text.len()].copy_from_slice(text);
        b
    }

    #[test]
    fn bzimage_header_gives_the_version_string() {
        let s = b"6.1.0-56-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian\0junk";
        let b = header(0x20f, 0x3c0, s);
        assert_eq!(
            bzimage_version(&b).unwrap(),
            "6.1.0-56-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian"
        );
    }

    #[test]
    fn bzimage_header_faults_are_named() {
        let mut b = header(0x20f, 0x3c0, b"x\0");
        b[0x202] = b'X';
        assert!(bzimage_version(&b)
            .unwrap_err()
            .to_string()
            .contains("no HdrS at 0x202"));
        let b = header(0x1ff, 0x3c0, b"x\0");
        assert!(bzimage_version(&b)
            .unwrap_err()
            .to_string()
            .contains("older than 2.00"));
        let b = header(0x20f, 0, b"");
        assert!(bzimage_version(&b)
            .unwrap_err()
            .to_string()
            .contains("pointer at 0x20E is 0"));
        let mut b = header(0x20f, 0x3c0, b"x");
        b.truncate(0x5c1);
        assert!(bzimage_version(&b)
            .unwrap_err()
            .to_string()
            .contains("no NUL"));
        let mut b = header(0x20f, 0x3c0, b"\0");
        b[0x20E..0x210].copy_from_slice(&0xfff0u16.to_le_bytes());
        assert!(bzimage_version(&b)
            .unwrap_err()
            .to_string()
            .contains("beyond the setup code"));
        let b = header(0x20f, 0x3c0, b"6.1\x01\0");
        assert!(bzimage_version(&b)
            .unwrap_err()
            .to_string()
            .contains("not printable"));
        assert!(bzimage_version(&b[..0x204]).is_err());
    }

    #[test]
    fn elf_banner_skips_the_format_string() {
        let mut b = b"\x7fELF....%s version %s....Linux version %s (".to_vec();
        b.extend_from_slice(b"\0\0Linux version 6.12.1-x (u@h) (gcc 12) #3 SMP\n\0rest");
        assert_eq!(elf_banner(&b).unwrap(), "6.12.1-x (u@h) (gcc 12) #3 SMP");
        assert!(elf_banner(b"\x7fELF nothing here Linux version").is_err());
    }
}
