//! Where memory cgroups are made: the v1 or v2 hierarchy with the memory
//! controller, found from /proc/self/mountinfo and /proc/self/cgroup.
//! Separate from the kind (mod.rs), which only asks for the answer, so
//! that the lookup and its cases are read and tested on their own.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Which cgroup interface a group uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where this process's memory cgroups are made.
#[derive(Clone, Debug, PartialEq)]
pub struct Hierarchy {
    pub version: Version,
    /// The mount point of the hierarchy.
    pub mount: PathBuf,
    /// The cgroup new groups are made in.
    pub parent: PathBuf,
}

/// Find the memory hierarchy from /proc/self/mountinfo and
/// /proc/self/cgroup texts. v2 is used when its root lists `memory` in
/// `cgroup.controllers`; otherwise the v1 hierarchy mounted with `memory`.
///
/// The parent is chosen so the workload stays under the limits the caller
/// is already under: on v1 it is the caller's own memory cgroup (v1 allows
/// children next to processes); on v2, where a cgroup with processes cannot
/// hand the memory controller to children, it is the nearest ancestor of
/// the caller's cgroup that already does (memory in its
/// `cgroup.subtree_control`), or the root.
pub fn locate(mountinfo: &str, self_cgroup: &str) -> Result<Hierarchy, Error> {
    let mut v1 = None;
    let mut v2 = None;
    // Root and mount point are taken as written (escaped), as they always
    // were here.
    for m in crate::sys::mountinfo::parse(mountinfo) {
        let (root, mp, supers) = (m.root, m.mount_point, m.super_options);
        match m.fstype {
            "cgroup2" if v2.is_none() => v2 = Some((root.to_string(), PathBuf::from(mp))),
            "cgroup" if v1.is_none() && supers.split(',').any(|o| o == "memory") => {
                v1 = Some((root.to_string(), PathBuf::from(mp)))
            }
            _ => {}
        }
    }
    if let Some((root, mount)) = &v2 {
        let ctl = fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        if ctl.split_whitespace().any(|c| c == "memory") {
            let own = self_cgroup
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .unwrap_or("/");
            let mut dir = mount.join(relative(own, root));
            while dir != *mount {
                let sub =
                    fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
                if sub.split_whitespace().any(|c| c == "memory") {
                    break;
                }
                if !dir.pop() || !dir.starts_with(mount) {
                    dir = mount.clone();
                    break;
                }
            }
            return Ok(Hierarchy {
                version: Version::V2,
                mount: mount.clone(),
                parent: dir,
            });
        }
    }
    if let Some((root, mount)) = v1 {
        let own = self_cgroup
            .lines()
            .find_map(|l| {
                let mut f = l.splitn(3, ':');
                let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
                ctl.split(',').any(|c| c == "memory").then_some(path)
            })
            .unwrap_or("/");
        return Ok(Hierarchy {
            version: Version::V1,
            parent: mount.join(relative(own, &root)),
            mount,
        });
    }
    Err(Error::bad(match v2 {
        Some(_) => "no memory cgroup controller: cgroup v2 is mounted without `memory` and no v1 memory hierarchy is mounted",
        None => "no memory cgroup controller mounted (neither cgroup v2 nor a v1 memory hierarchy)",
    }))
}

/// A cgroup path from /proc/self/cgroup, relative to the mount's root.
fn relative(own: &str, mount_root: &str) -> PathBuf {
    let own = Path::new(own);
    let rel = own.strip_prefix(mount_root).unwrap_or(own);
    rel.strip_prefix("/").unwrap_or(rel).to_path_buf()
}

/// The hierarchy of the running process.
pub fn locate_here() -> Result<Hierarchy, Error> {
    let mi = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| Error::bad(format!("cannot read /proc/self/mountinfo: {e}")))?;
    let cg = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    locate(&mi, &cg)
}

/// The memory controller's "enabled" column in /proc/cgroups (None when
/// the file or the line is missing).
pub(super) fn memory_controller_enabled() -> Option<bool> {
    let text = fs::read_to_string("/proc/cgroups").ok()?;
    text.lines()
        .find(|l| l.split_whitespace().next() == Some("memory"))
        .and_then(|l| l.split_whitespace().nth(3))
        .map(|v| v == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / MNT/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / MNT/devices rw,relatime - cgroup cgroup rw,devices
41 31 0:38 / MNT/unified rw,relatime - cgroup2 cgroup2 rw
";

    fn fake(dir: &Path) -> String {
        MOUNTINFO.replace("MNT", &dir.display().to_string())
    }

    #[test]
    fn hybrid_without_v2_memory_uses_own_v1_group() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("unified")).unwrap();
        fs::write(d.path().join("unified/cgroup.controllers"), "hugetlb\n").unwrap();
        let cg = "4:memory:/jobs/a\n0::/\n";
        let h = locate(&fake(d.path()), cg).unwrap();
        assert_eq!(h.version, Version::V1);
        assert_eq!(h.parent, d.path().join("memory/jobs/a"));
    }

    #[test]
    fn v2_uses_nearest_ancestor_that_delegates_memory() {
        let d = tempfile::tempdir().unwrap();
        let u = d.path().join("unified");
        fs::create_dir_all(u.join("user.slice/session.scope")).unwrap();
        fs::write(u.join("cgroup.controllers"), "cpu memory io\n").unwrap();
        fs::write(u.join("cgroup.subtree_control"), "memory\n").unwrap();
        fs::write(u.join("user.slice/cgroup.subtree_control"), "cpu memory\n").unwrap();
        fs::write(
            u.join("user.slice/session.scope/cgroup.subtree_control"),
            "",
        )
        .unwrap();
        let cg = "4:memory:/x\n0::/user.slice/session.scope\n";
        let h = locate(&fake(d.path()), cg).unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.parent, u.join("user.slice"));
        // Nothing delegates: the root.
        fs::write(u.join("user.slice/cgroup.subtree_control"), "cpu\n").unwrap();
        let h = locate(&fake(d.path()), cg).unwrap();
        assert_eq!(h.parent, u);
    }

    #[test]
    fn no_memory_controller_is_one_line() {
        let mi = "41 31 0:38 / /nonexistent/unified rw - cgroup2 cgroup2 rw\n";
        let e = locate(mi, "0::/\n").unwrap_err();
        assert!(
            e.to_string().contains("no memory cgroup controller") && !e.to_string().contains('\n'),
            "{e}"
        );
    }
}
