//! Which `.ko` files the guest needs, in load order.
//!
//! Distribution kernels (Debian's cloud and rt among them) build the
//! drivers a QEMU guest needs as modules, not into the kernel
//! (docs/kernels.md A.2), and there is no udev or modprobe in the
//! initramfs: `/init` loads plain files with busybox `insmod`, so the
//! host must pick them and their dependencies, dependencies first.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The guest needs these: virtio over PCI, the virtiofs root, the overlay
/// that makes it writable in guest RAM, the virtio-serial channel, and
/// pvpanic so that a panic after `/init` makes QEMU exit with status 1.
pub const WANTED: &[&str] = &[
    "virtio_pci",
    "virtiofs",
    "overlay",
    "virtio_console",
    "pvpanic_pci",
];

/// A module's name as modprobe compares it: the file name without its
/// `.ko` (and compression) suffix, with '-' read as '_' (`pvpanic_pci` is
/// the file `pvpanic-pci.ko`).
fn name_of(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let file = [".xz", ".zst", ".gz"]
        .iter()
        .find_map(|c| file.strip_suffix(c))
        .unwrap_or(file);
    file.strip_suffix(".ko").unwrap_or(file).replace('-', "_")
}

/// Resolve [`WANTED`] (plus their dependencies, depth-first, dependencies
/// first) in `dir`, which holds `modules.dep` and `modules.builtin`, for
/// the kernel `version`. Built-in modules are skipped.
pub fn resolve(dir: &Path, version: &str) -> Result<Vec<PathBuf>, Error> {
    resolve_names(dir, version, WANTED)
}

/// [`resolve`] for any list of module names.
pub fn resolve_names(dir: &Path, version: &str, wanted: &[&str]) -> Result<Vec<PathBuf>, Error> {
    let d = dir.display();
    if !dir.is_dir() {
        return Err(Error::failed(format!(
            "modules directory {d}: no such directory; the guest needs {} built in or as \
             modules: build them in (=y), or run make modules_install INSTALL_MOD_PATH=DIR and \
             set modules = \"DIR/lib/modules/{version}\", or give tree and ref instead of image \
             and sysdelta builds the kernel (docs/kernels.md, \"Building from a tree\")",
            WANTED.join(", ")
        )));
    }
    // depmod names the directory after `uname -r`; a different one would
    // load modules whose vermagic the kernel refuses.
    let dir_version = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if dir_version != version {
        return Err(Error::failed(format!(
            "modules directory {d} is for {dir_version}, the image is {version}"
        )));
    }
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::failed(format!(
                    "modules directory {d} has no {file} (run depmod {version})"
                ))
            } else {
                Error::failed(format!("modules directory {d}: cannot read {file}: {e}"))
            }
        })
    };
    let dep_text = read("modules.dep")?;
    let builtin_text = read("modules.builtin")?;

    let builtin: HashSet<String> = builtin_text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| name_of(l.trim()))
        .collect();
    // name -> (relative path, dependencies' relative paths)
    let mut deps: HashMap<String, (String, Vec<String>)> = HashMap::new();
    for (n, line) in dep_text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (module, rest) = line.split_once(':').ok_or_else(|| {
            Error::failed(format!(
                "{}:{}: no ':' in this line",
                dir.join("modules.dep").display(),
                n + 1
            ))
        })?;
        let module = module.trim().to_string();
        let list = rest.split_whitespace().map(str::to_string).collect();
        deps.insert(name_of(&module), (module, list));
    }

    let mut order = Vec::new();
    let mut done = HashSet::new();
    for want in wanted {
        let name = want.replace('-', "_");
        if builtin.contains(&name) {
            continue;
        }
        if !deps.contains_key(&name) {
            return Err(Error::failed(format!(
                "{want} is neither built in nor a module in {d}"
            )));
        }
        visit(
            &name,
            &deps,
            &builtin,
            &mut done,
            &mut Vec::new(),
            &mut order,
        )?;
    }
    let mut paths = Vec::new();
    for rel in order {
        let path = dir.join(&rel);
        if rel.ends_with(".ko.xz") || rel.ends_with(".ko.zst") || rel.ends_with(".ko.gz") {
            return Err(Error::failed(format!(
                "module {} is compressed; only plain .ko modules are supported (busybox insmod loads them as they are)",
                path.display()
            )));
        }
        if !rel.ends_with(".ko") {
            return Err(Error::failed(format!(
                "module {} is not a .ko file",
                path.display()
            )));
        }
        if !path.is_file() {
            return Err(Error::failed(format!(
                "module {} is listed in {}/modules.dep but missing",
                path.display(),
                d
            )));
        }
        paths.push(path);
    }
    Ok(paths)
}

/// Depth-first: every dependency (in modules.dep's order) before the
/// module itself. `stack` catches a cycle, which depmod never writes but a
/// hand-edited file might.
fn visit(
    name: &str,
    deps: &HashMap<String, (String, Vec<String>)>,
    builtin: &HashSet<String>,
    done: &mut HashSet<String>,
    stack: &mut Vec<String>,
    order: &mut Vec<String>,
) -> Result<(), Error> {
    if done.contains(name) || builtin.contains(name) {
        return Ok(());
    }
    if stack.iter().any(|s| s == name) {
        return Err(Error::failed(format!(
            "modules.dep has a dependency cycle: {} -> {name}",
            stack.join(" -> ")
        )));
    }
    let (rel, list) = deps.get(name).ok_or_else(|| {
        Error::failed(format!(
            "module {name} is a dependency but has no line in modules.dep"
        ))
    })?;
    stack.push(name.to_string());
    for dep in list {
        visit(&name_of(dep), deps, builtin, done, stack, order)?;
    }
    stack.pop();
    done.insert(name.to_string());
    order.push(rel.clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(dep: &str, builtin: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("9.9.9-test");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("modules.dep"), dep).unwrap();
        std::fs::write(d.join("modules.builtin"), builtin).unwrap();
        for line in dep.lines() {
            let m = line.split(':').next().unwrap();
            let p = d.join(m);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"ko").unwrap();
        }
        t
    }

    fn names(v: &[PathBuf]) -> Vec<String> {
        v.iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn dependencies_come_first_and_builtins_are_skipped() {
        let t = fake(
            "k/a.ko: k/b.ko k/c-x.ko\nk/b.ko: k/c-x.ko\nk/c-x.ko:\nk/d.ko: k/e.ko\nk/e.ko:\n",
            "k/e.ko\n",
        );
        let d = t.path().join("9.9.9-test");
        let got = resolve_names(&d, "9.9.9-test", &["a", "c_x", "d"]).unwrap();
        assert_eq!(names(&got), ["c-x.ko", "b.ko", "a.ko", "d.ko"]);
        let e = resolve_names(&d, "9.9.9-test", &["zz"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("zz is neither built in nor a module in"),
            "{e}"
        );
        let e = resolve_names(&d, "9.9.9-other", &["a"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("is for 9.9.9-test, the image is 9.9.9-other"),
            "{e}"
        );
    }

    #[test]
    fn names_drop_only_the_suffixes() {
        assert_eq!(name_of("kernel/x/pvpanic-pci.ko"), "pvpanic_pci");
        assert_eq!(name_of("k/a.kobj.ko.zst"), "a.kobj");
    }

    #[test]
    fn compressed_and_cyclic_modules_are_refused() {
        let t = fake("k/a.ko.xz:\n", "");
        let d = t.path().join("9.9.9-test");
        let e = resolve_names(&d, "9.9.9-test", &["a"]).unwrap_err();
        assert!(e.to_string().contains("is compressed"), "{e}");
        let t = fake("k/a.ko: k/b.ko\nk/b.ko: k/a.ko\n", "");
        let d = t.path().join("9.9.9-test");
        let e = resolve_names(&d, "9.9.9-test", &["a"]).unwrap_err();
        assert!(e.to_string().contains("cycle"), "{e}");
    }
}
