//! `/proc/self/mountinfo`: one parser for the journal (is this mounted?)
//! and the memory_limit kind (where is the memory cgroup hierarchy?).

use std::path::{Path, PathBuf};

/// One line of mountinfo (proc(5)), fields as the kernel wrote them:
/// paths keep their octal escapes (`\040` for a space) until
/// [`unescape`]d.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mount<'a> {
    /// Field 4: the root of the mount within its filesystem.
    pub root: &'a str,
    /// Field 5: the mount point, escaped.
    pub mount_point: &'a str,
    /// The filesystem type (first field after " - ").
    pub fstype: &'a str,
    /// The mount source, escaped (None when the line has none).
    pub source: Option<&'a str>,
    /// Per-superblock options ("" when missing).
    pub super_options: &'a str,
}

impl Mount<'_> {
    /// The mount point with its escapes undone.
    pub fn mount_path(&self) -> PathBuf {
        PathBuf::from(unescape(self.mount_point))
    }
}

/// The lines of a mountinfo text that have a root, a mount point and a
/// filesystem type; others are skipped.
pub fn parse(text: &str) -> impl Iterator<Item = Mount<'_>> {
    text.lines().filter_map(|line| {
        let mut halves = line.splitn(2, " - ");
        let mut left = halves.next().unwrap_or("").split_whitespace();
        let mut right = halves.next().unwrap_or("").split_whitespace();
        let root = left.nth(3)?;
        let mount_point = left.next()?;
        let fstype = right.next()?;
        let source = right.next();
        let super_options = right.next().unwrap_or("");
        Some(Mount {
            root,
            mount_point,
            fstype,
            source,
            super_options,
        })
    })
}

/// Whether `target` is a mount point in `text` (with `source` as its
/// source, if given). `target` is compared as given: canonicalize it first.
pub fn has_mount(text: &str, target: &Path, source: Option<&str>) -> bool {
    parse(text).any(|m| {
        m.mount_path() == target
            && source.is_none_or(|s| m.source.map(unescape).as_deref() == Some(s))
    })
}

/// Undo the octal escapes mountinfo uses for spaces and the like.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| c.is_ascii_digit()) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate
31 22 0:27 /user.slice /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
40 22 7:0 / /mnt/a\\040b rw - ext4 /dev/loop0 rw
garbage
";

    #[test]
    fn fields() {
        let m: Vec<Mount> = parse(TEXT).collect();
        assert_eq!(m.len(), 4);
        assert_eq!(m[1].fstype, "cgroup2");
        assert_eq!(m[2].root, "/user.slice");
        assert_eq!(m[2].super_options, "rw,memory");
        assert_eq!(m[3].mount_point, "/mnt/a\\040b");
        assert_eq!(m[3].mount_path(), PathBuf::from("/mnt/a b"));
        assert_eq!(m[3].source, Some("/dev/loop0"));
    }

    #[test]
    fn mounted() {
        assert!(has_mount(TEXT, Path::new("/mnt/a b"), None));
        assert!(has_mount(TEXT, Path::new("/mnt/a b"), Some("/dev/loop0")));
        assert!(!has_mount(TEXT, Path::new("/mnt/a b"), Some("/dev/loop1")));
        assert!(!has_mount(TEXT, Path::new("/mnt"), None));
        assert_eq!(unescape("/a\\040b"), "/a b");
    }
}
