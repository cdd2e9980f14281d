//! `[config.kernel]`'s build keys: `tree` (a git work tree of the invoking
//! user's), `ref` (resolved here, once, to the full commit id that is
//! built and stored), `patches` (files, a quilt directory or `series`
//! file) and `kconfig` (a .config to start from) -> a
//! [`crate::kbuild::BuildSpec`].

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::kbuild::BuildSpec;

/// The build keys as written.
pub struct Written<'a> {
    pub tree: &'a str,
    pub reference: Option<&'a str>,
    pub patches: Option<&'a toml::Value>,
    pub kconfig: Option<&'a str>,
}

/// Check the keys and resolve the ref. Err: (field, message).
pub fn spec(w: &Written) -> Result<BuildSpec, (&'static str, String)> {
    let tree = absolute(w.tree).map_err(|m| ("tree", m))?;
    let meta =
        std::fs::metadata(&tree).map_err(|e| ("tree", format!("{}: {e}", tree.display())))?;
    if !meta.is_dir() {
        return Err(("tree", format!("{} is not a directory", tree.display())));
    }
    // A build runs the tree's Makefiles and scripts as this user (root, for
    // kernel configs): only a tree this user owns may say what they are.
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err((
            "tree",
            format!(
                "{} is owned by uid {}, not by this user (uid {me}); sysdelta builds only the \
                 invoking user's trees",
                tree.display(),
                meta.uid()
            ),
        ));
    }
    if !tree.join(".git").exists() {
        return Err(("tree", format!("{} is not a git work tree", tree.display())));
    }
    let reference = w.reference.ok_or((
        "ref",
        "tree needs a ref (a tag, branch or commit to build)".to_string(),
    ))?;
    let commit =
        crate::kbuild::git::resolve_ref(&tree, reference).map_err(|e| ("ref", e.to_string()))?;
    let written: Vec<PathBuf> = match w.patches {
        None => Vec::new(),
        Some(toml::Value::String(s)) => vec![absolute(s).map_err(|m| ("patches", m))?],
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => absolute(s),
                other => Err(format!("expected a path, got {}", other.type_str())),
            })
            .collect::<Result<_, _>>()
            .map_err(|m| ("patches", m))?,
        Some(other) => {
            return Err((
                "patches",
                format!(
                    "expected a path or a list of paths, got {}",
                    other.type_str()
                ),
            ))
        }
    };
    for p in &written {
        // A quilt directory's series file is read as well as the patches.
        let series = p.join("series");
        yours(if p.is_dir() { &series } else { p }).map_err(|m| ("patches", m))?;
    }
    let patches = crate::kbuild::identity::expand_patches(&written)
        .map_err(|e| ("patches", e.to_string()))?;
    for p in &patches {
        yours(p).map_err(|m| ("patches", m))?;
    }
    let kconfig = match w.kconfig {
        Some(k) => {
            let p = absolute(k).map_err(|m| ("kconfig", m))?;
            if !p.is_file() {
                return Err(("kconfig", format!("{}: no such file", p.display())));
            }
            yours(&p).map_err(|m| ("kconfig", m))?;
            Some(p)
        }
        None => None,
    };
    Ok(BuildSpec {
        tree,
        reference: reference.to_string(),
        commit,
        patches,
        kconfig,
    })
}

/// A patch changes the Makefiles and scripts make runs as root, and the
/// kconfig what is built: like the tree, they (and the directories they
/// are in) must be this user's or root's, and writable by no one else.
/// Missing files are left to the callers' own messages.
fn yours(file: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(real) = std::fs::canonicalize(file) else {
        return Ok(());
    };
    let me = nix::unistd::geteuid().as_raw();
    for p in [Some(real.as_path()), real.parent()].into_iter().flatten() {
        let m = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mode = m.permissions().mode();
        if m.uid() != me && m.uid() != 0 {
            return Err(format!(
                "{} is owned by uid {}, not by this user (uid {me}) or root",
                p.display(),
                m.uid()
            ));
        }
        if mode & 0o022 != 0 {
            return Err(format!(
                "{} may be written by others (mode {:o}); chmod go-w it",
                p.display(),
                mode & 0o7777
            ));
        }
    }
    Ok(())
}

fn absolute(s: &str) -> Result<PathBuf, String> {
    if s.starts_with('/') {
        Ok(PathBuf::from(s))
    } else {
        Err(format!("'{s}' must be an absolute path"))
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{parse, Overrides};

    use crate::kbuild::git::test_git as git;

    fn plan(kernel: &str) -> Result<crate::plan::Plan, String> {
        let text = format!(
            "[[config]]\nname = \"k\"\n[config.kernel]\n{kernel}\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n"
        );
        parse("p.toml", &text, &Overrides::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_tree_and_ref_resolve_to_the_commit_and_bad_keys_are_one_line() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("Makefile"), "all:\n").unwrap();
        std::fs::write(d.join("a.patch"), "").unwrap();
        git(d, &["add", "Makefile"]);
        git(d, &["commit", "-q", "-m", "one"]);
        git(d, &["tag", "v1"]);
        let tree = d.display();
        let p = plan(&format!(
            "tree = \"{tree}\"\nref = \"v1\"\npatches = [\"{tree}/a.patch\"]"
        ))
        .unwrap();
        let spec = p.configs[0].kernel.as_ref().unwrap().build.clone().unwrap();
        assert_eq!(spec.commit.len(), 40, "the full commit id: {}", spec.commit);
        assert_eq!(spec.reference, "v1");
        assert_eq!(spec.patches, [d.join("a.patch")]);
        for (kernel, want) in [
            (
                format!("image = \"/boot/x\"\ntree = \"{tree}\"\nref = \"v1\""),
                "kernel.tree: image and tree are exclusive",
            ),
            (format!("tree = \"{tree}\""), "kernel.ref: tree needs a ref"),
            (
                format!("tree = \"{tree}\"\nref = \"nope\""),
                "kernel.ref: 'nope' names no commit",
            ),
            (
                "image = \"/boot/x\"\nref = \"v1\"".into(),
                "kernel.ref: is for a kernel built from tree",
            ),
            ("cpus = 1".into(), "kernel.image: missing: give image"),
            (
                format!("tree = \"{tree}\"\nref = \"v1\"\nmodules = \"/lib/modules/x\""),
                "installs its own modules",
            ),
            (
                format!("tree = \"{tree}\"\nref = \"v1\"\nkconfig = \"{tree}/none\""),
                "kernel.kconfig:",
            ),
            ("tree = \"/\"\nref = \"v1\"".into(), "kernel.tree: /"),
        ] {
            let e = plan(&kernel).unwrap_err();
            assert!(e.contains(want), "{kernel}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        // Another user's tree is refused: root gives it away to check.
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(d, Some(65534), None).unwrap();
            let e = plan(&format!("tree = \"{tree}\"\nref = \"v1\"")).unwrap_err();
            assert!(e.contains("is owned by uid 65534, not by this user"), "{e}");
            std::os::unix::fs::chown(d, Some(0), None).unwrap();
        }
    }

    #[test]
    fn patches_and_kconfig_others_could_change_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("Makefile"), "all:\n").unwrap();
        git(d, &["add", "Makefile"]);
        git(d, &["commit", "-q", "-m", "one"]);
        let q = d.join("q");
        std::fs::create_dir(&q).unwrap();
        std::fs::write(q.join("a.patch"), "").unwrap();
        std::fs::write(q.join("series"), "a.patch\n").unwrap();
        std::fs::write(d.join("k.config"), "").unwrap();
        let tree = d.display();
        let with = |extra: &str| plan(&format!("tree = \"{tree}\"\nref = \"main\"\n{extra}"));
        let chmod = |p: &std::path::Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        let series = format!("patches = \"{tree}/q\"");
        let kconfig = format!("kconfig = \"{tree}/k.config\"");
        with(&series).unwrap();
        with(&kconfig).unwrap();
        for (file, extra, field) in [
            (q.join("series"), &series, "kernel.patches:"),
            (q.join("a.patch"), &series, "kernel.patches:"),
            (q.clone(), &series, "kernel.patches:"),
            (d.join("k.config"), &kconfig, "kernel.kconfig:"),
        ] {
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
            chmod(&file, mode | 0o002);
            let e = with(extra).unwrap_err();
            chmod(&file, mode);
            assert!(
                e.contains(field) && e.contains("may be written by others"),
                "{e}"
            );
            if nix::unistd::geteuid().is_root() {
                std::os::unix::fs::chown(&file, Some(65534), None).unwrap();
                let e = with(extra).unwrap_err();
                std::os::unix::fs::chown(&file, Some(0), None).unwrap();
                assert!(e.contains("is owned by uid 65534"), "{e}");
            }
        }
    }
}
