//! What makes two kernel builds the same build: the commit, the patches'
//! contents in order and the starting config's content. Each distinct
//! identity is built once; its key names its artifacts' directory and is
//! the `CONFIG_LOCALVERSION` suffix, so `uname -r` tells two builds of one
//! release apart and the boot check verifies which one booted.

use std::path::Path;

use super::git;
use super::BuildSpec;
use crate::error::Error;

/// A build's identity, as stored with the experiment and shown with boots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The full commit id the ref resolved to.
    pub commit: String,
    /// Each patch's blob id, in the order applied.
    pub patches: Vec<String>,
    /// The starting config's blob id, or `defconfig`.
    pub kconfig: String,
    /// 12 hex digits over all of the above (and the options sysdelta
    /// enables): the artifacts' directory name.
    pub key: String,
}

/// The patches' and the kconfig's bytes, read once: what is hashed into
/// the identity is what is applied and copied, so a file changed during
/// the build cannot put other content under this identity's key.
#[derive(Clone, Debug)]
pub struct Inputs {
    /// Each patch's content, in the order applied.
    pub patches: Vec<Vec<u8>>,
    /// The starting config's content; None: `defconfig`.
    pub kconfig: Option<Vec<u8>>,
}

impl Inputs {
    /// Read every patch and the kconfig of `spec`.
    pub fn read(spec: &BuildSpec) -> Result<Inputs, Error> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| Error::bad(format!("cannot read {}: {e}", p.display())))
        };
        Ok(Inputs {
            patches: spec
                .patches
                .iter()
                .map(|p| read(p))
                .collect::<Result<_, _>>()?,
            kconfig: spec.kconfig.as_deref().map(read).transpose()?,
        })
    }
}

impl Identity {
    /// Hash the spec's commit and the inputs read from its files.
    pub fn of(spec: &BuildSpec, inputs: &Inputs) -> Result<Identity, Error> {
        let patches = inputs
            .patches
            .iter()
            .map(|p| git::hash_bytes(p))
            .collect::<Result<Vec<_>, _>>()?;
        let kconfig = match &inputs.kconfig {
            Some(k) => git::hash_bytes(k)?,
            None => "defconfig".to_string(),
        };
        // The enabled options belong to the identity: a sysdelta that
        // merges in another list builds another kernel.
        let text = format!(
            "commit {}\npatches {}\nkconfig {}\nenabled {}\ncompiler {}\n",
            spec.commit,
            patches.join(" "),
            kconfig,
            super::kconfig::GUEST_NEEDS.join(" "),
            compiler()
        );
        let key = git::hash_text(&text)?.chars().take(12).collect();
        Ok(Identity {
            commit: spec.commit.clone(),
            patches,
            kconfig,
            key,
        })
    }

    /// One line: `commit 1a2b3c4d5e6f patches 9f8e7d6c,... config 0a1b2c3d`.
    pub fn describe(&self) -> String {
        let short = |s: &str| s.chars().take(12).collect::<String>();
        let patches = if self.patches.is_empty() {
            "none".to_string()
        } else {
            self.patches
                .iter()
                .map(|p| short(p))
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "commit {} patches {} config {} (build {})",
            short(&self.commit),
            patches,
            short(&self.kconfig),
            self.key
        )
    }

    /// The `CONFIG_LOCALVERSION` this build carries: `-sd` and the first 8
    /// digits of the key.
    pub fn localversion(&self) -> String {
        format!("-sd{}", &self.key[..8.min(self.key.len())])
    }
}

/// `gcc --version`'s first line: another compiler builds another kernel
/// (an upgraded gcc must not reuse the old build). "none" when there is
/// no gcc, whose build then fails.
fn compiler() -> String {
    std::process::Command::new("gcc")
        .arg("--version")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_else(|| "none".into())
}

/// Expand `patches` as written: files in order; a directory holding a
/// quilt `series` file, or a `series` file itself, gives the patches it
/// lists (comments and quilt's `-p` options after a name are ignored).
pub fn expand_patches(written: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, Error> {
    let mut out = Vec::new();
    for p in written {
        let series = if p.is_dir() {
            Some(p.join("series"))
        } else if p.file_name().is_some_and(|n| n == "series") {
            Some(p.clone())
        } else {
            None
        };
        match series {
            Some(s) => out.extend(read_series(&s)?),
            None if p.is_file() => out.push(p.clone()),
            None => return Err(Error::bad(format!("patch {}: no such file", p.display()))),
        }
    }
    Ok(out)
}

fn read_series(series: &Path) -> Result<Vec<std::path::PathBuf>, Error> {
    let dir = series.parent().unwrap_or(Path::new("/"));
    let text = std::fs::read_to_string(series)
        .map_err(|e| Error::bad(format!("patch series {}: {e}", series.display())))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(name) = line
            .split('#')
            .next()
            .and_then(|l| l.split_whitespace().next())
        else {
            continue;
        };
        let p = dir.join(name);
        if !p.is_file() {
            return Err(Error::bad(format!(
                "patch series {}: {} is not a file",
                series.display(),
                p.display()
            )));
        }
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_gives_its_patches_in_order_and_the_key_follows_their_content() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::write(d.join("a.patch"), "a").unwrap();
        std::fs::write(d.join("b.patch"), "b").unwrap();
        std::fs::write(d.join("series"), "# quilt\nb.patch -p1\n\na.patch\n").unwrap();
        let want = vec![d.join("b.patch"), d.join("a.patch")];
        assert_eq!(expand_patches(&[d.to_path_buf()]).unwrap(), want);
        assert_eq!(expand_patches(&[d.join("series")]).unwrap(), want);
        let e = expand_patches(&[d.join("none.patch")]).unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
        let spec = |patches: Vec<std::path::PathBuf>| BuildSpec {
            tree: d.to_path_buf(),
            reference: "main".into(),
            commit: "0".repeat(40),
            patches,
            kconfig: None,
        };
        let of = |s: BuildSpec| Identity::of(&s, &Inputs::read(&s).unwrap()).unwrap();
        let one = of(spec(want.clone()));
        assert_eq!(one, of(spec(want.clone())));
        // The same ids git gives the files.
        let out = std::process::Command::new("git")
            .args(["hash-object", "--no-filters"])
            .arg(d.join("b.patch"))
            .output()
            .unwrap();
        assert_eq!(one.patches[0], String::from_utf8_lossy(&out.stdout).trim());
        assert_eq!(one.key.len(), 12);
        assert_eq!(one.localversion(), format!("-sd{}", &one.key[..8]));
        // Another order, or another content, is another build.
        let other = of(spec(vec![d.join("a.patch"), d.join("b.patch")]));
        assert_ne!(one.key, other.key);
        std::fs::write(d.join("a.patch"), "a2").unwrap();
        assert_ne!(one.key, of(spec(want)).key);
        assert!(one.describe().contains("patches ") && one.describe().contains("config defconfig"));
    }
}
