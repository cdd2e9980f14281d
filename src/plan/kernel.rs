//! A config's `[config.kernel]` table -> [`KernelDef`]: what the plan text
//! alone can tell. Whether the image is a kernel, its modules match and the
//! host can give the CPUs and memory is preflight (`runner::boots`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::model::KernelDef;
use super::position::Origin;
use crate::error::Error;

/// The kernel command line's limit on x86 (`COMMAND_LINE_SIZE`), less what
/// sysdelta puts there itself.
pub const MAX_USER_CMDLINE: usize = 2048 - 256;

/// Options sysdelta sets itself and a plan may not: the console it reads,
/// the panic behaviour that ends a crashed boot, the init it runs and its
/// own `sysdelta.*` keys.
const OWNED_OPTIONS: &[&str] = &[
    "console=",
    "panic=",
    "init=",
    "rdinit=",
    "root=",
    "sysdelta.",
];

const DEFAULT_MEMORY_MIB: u64 = 512;
const MIN_MEMORY_MIB: u64 = 256;
const MAX_MEMORY_MIB: u64 = 1 << 20;
const MAX_CPUS: u32 = 255;
const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(120);
const MAX_BOOT_TIMEOUT: Duration = Duration::from_secs(3600);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernel {
    image: Option<String>,
    tree: Option<String>,
    #[serde(rename = "ref")]
    reference: Option<String>,
    patches: Option<toml::Value>,
    kconfig: Option<String>,
    modules: Option<String>,
    cmdline: Option<String>,
    cpus: Option<i64>,
    memory: Option<toml::Value>,
    accel: Option<String>,
    boot_timeout: Option<toml::Value>,
}

/// Parse the `kernel` table of config `config` (at byte `start`).
pub fn parse(origin: &Origin, config: &str, v: &Spanned<toml::Value>) -> Result<KernelDef, Error> {
    let start = v.span().start;
    let at = |pos: usize, field: &str, msg: String| {
        origin.bad_at(pos, format!("config '{config}', kernel.{field}: {msg}"))
    };
    let raw: RawKernel = v
        .get_ref()
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| {
            origin.bad_at(
                start,
                format!("config '{config}', kernel: {}", e.message().trim()),
            )
        })?;
    let (image, build) = image_or_build(&raw).map_err(|(f, m)| at(start, f, m))?;
    let modules = raw
        .modules
        .as_ref()
        .map(|m| {
            let p = PathBuf::from(m);
            if build.is_some() {
                Err(at(
                    start,
                    "modules",
                    "a kernel built from tree installs its own modules; drop modules".into(),
                ))
            } else if p.is_absolute() {
                Ok(p)
            } else {
                Err(at(start, "modules", "must be an absolute path".into()))
            }
        })
        .transpose()?;
    let cmdline = match &raw.cmdline {
        Some(c) => check_cmdline(c).map_err(|m| at(start, "cmdline", m.to_string()))?,
        None => String::new(),
    };
    let cpus = match &raw.cpus {
        Some(c) => {
            let n = *c;
            if !(1..=MAX_CPUS as i64).contains(&n) {
                return Err(at(
                    start,
                    "cpus",
                    format!("must be 1 to {MAX_CPUS}, got {n}"),
                ));
            }
            n as u32
        }
        None => 1,
    };
    let memory_mib = match &raw.memory {
        Some(m) => {
            let mib = memory_mib(m).map_err(|e| at(start, "memory", e.to_string()))?;
            if !(MIN_MEMORY_MIB..=MAX_MEMORY_MIB).contains(&mib) {
                return Err(at(
                    start,
                    "memory",
                    format!(
                        "must be {MIN_MEMORY_MIB} MiB to {} GiB, got {mib} MiB",
                        MAX_MEMORY_MIB >> 10
                    ),
                ));
            }
            mib
        }
        None => DEFAULT_MEMORY_MIB,
    };
    let accel = match &raw.accel {
        Some(a) if ["auto", "kvm", "tcg"].contains(&a.as_str()) => a.clone(),
        Some(a) => {
            return Err(at(
                start,
                "accel",
                format!("'{}' is not auto, kvm or tcg", a),
            ))
        }
        None => "auto".into(),
    };
    let boot_timeout = match &raw.boot_timeout {
        Some(t) => {
            let d = super::duration::parse_duration(t)
                .map_err(|m| at(start, "boot_timeout", m.to_string()))?;
            if d > MAX_BOOT_TIMEOUT {
                return Err(at(
                    start,
                    "boot_timeout",
                    format!("is too large (at most {}s)", MAX_BOOT_TIMEOUT.as_secs()),
                ));
            }
            d
        }
        None => DEFAULT_BOOT_TIMEOUT,
    };
    Ok(KernelDef {
        image,
        build,
        modules,
        cmdline,
        cpus,
        memory_mib,
        accel,
        boot_timeout,
        at: origin.at(start, format!("config '{config}', kernel")),
    })
}

/// `image` (a path checked by preflight) or `tree` + `ref` (+ `patches`,
/// `kconfig`): a kernel sysdelta builds. Err: (field, message).
fn image_or_build(
    raw: &RawKernel,
) -> Result<(PathBuf, Option<crate::kbuild::BuildSpec>), (&'static str, String)> {
    match (&raw.image, &raw.tree) {
        (Some(_), Some(_)) => Err((
            "tree",
            "image and tree are exclusive: boot a built image, or let sysdelta build tree at ref"
                .into(),
        )),
        (None, None) => Err((
            "image",
            "missing: give image (a bzImage) or tree and ref (a git work tree sysdelta builds)"
                .into(),
        )),
        (Some(image), None) => {
            for (k, set) in [
                ("ref", raw.reference.is_some()),
                ("patches", raw.patches.is_some()),
                ("kconfig", raw.kconfig.is_some()),
            ] {
                if set {
                    return Err((
                        k,
                        "is for a kernel built from tree; this one boots image".into(),
                    ));
                }
            }
            // Resolved (glob, kernel tree) by preflight on the host, so a
            // plan validates where the kernels are not installed.
            if !image.starts_with('/') {
                return Err(("image", format!("'{image}' must be an absolute path")));
            }
            Ok((PathBuf::from(image), None))
        }
        (None, Some(tree)) => {
            let w = super::kernel_build::Written {
                tree,
                reference: raw.reference.as_deref(),
                patches: raw.patches.as_ref(),
                kconfig: raw.kconfig.as_deref(),
            };
            Ok((PathBuf::new(), Some(super::kernel_build::spec(&w)?)))
        }
    }
}

/// An image path as written: absolute; a glob (`*`, `?`, `[`) picks the
/// match with the highest version (so `/boot/vmlinuz-*-cloud-amd64` follows
/// the distribution's updates); a directory is a built kernel tree.
pub fn resolve_image(written: &str) -> Result<PathBuf, Error> {
    if !written.starts_with('/') {
        return Err(Error::bad(format!("'{written}' must be an absolute path")));
    }
    let path = if written.contains(['*', '?', '[']) {
        let matches = glob::glob(written).map_err(|e| Error::bad(format!("'{written}': {e}")))?;
        let mut found: Vec<PathBuf> = matches.filter_map(Result::ok).collect();
        found.sort_by(|a, b| version_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
        found
            .pop()
            .ok_or_else(|| Error::bad(format!("nothing matches '{written}'")))?
    } else {
        PathBuf::from(written)
    };
    if path.is_dir() {
        let bz = path.join("arch/x86/boot/bzImage");
        if !bz.is_file() {
            return Err(Error::bad(format!(
                "{} is a directory without arch/x86/boot/bzImage (not a built kernel tree)",
                path.display()
            )));
        }
        return Ok(bz);
    }
    Ok(path)
}

/// Order of version strings as `sort -V` roughly does: runs of digits
/// compare as numbers, the rest as bytes.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    /// A run of digits sorts before text at the same place.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Part {
        Number(u64),
        Text(String),
    }
    fn parts(s: &str) -> Vec<Part> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut digits = false;
        for ch in s.chars() {
            let d = ch.is_ascii_digit();
            if !cur.is_empty() && d != digits {
                out.push(if digits {
                    Part::Number(cur.parse().unwrap_or(u64::MAX))
                } else {
                    Part::Text(std::mem::take(&mut cur))
                });
                cur.clear();
            }
            digits = d;
            cur.push(ch);
        }
        if !cur.is_empty() {
            out.push(if digits {
                Part::Number(cur.parse().unwrap_or(u64::MAX))
            } else {
                Part::Text(cur)
            });
        }
        out
    }
    parts(a).cmp(&parts(b))
}

/// The user's options: printable, within the limit, none of sysdelta's own.
fn check_cmdline(s: &str) -> Result<String, Error> {
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(Error::bad(format!("holds a control character ({:?})", c)));
    }
    if s.len() > MAX_USER_CMDLINE {
        return Err(Error::bad(format!(
            "is {} bytes, more than the {MAX_USER_CMDLINE} left for it",
            s.len()
        )));
    }
    for word in s.split_whitespace() {
        // The kernel drops a quote around a parameter ("panic=0").
        let bare = word.trim_start_matches('"');
        if let Some(own) = OWNED_OPTIONS.iter().find(|o| bare.starts_with(**o)) {
            return Err(Error::bad(format!(
                "'{word}': sysdelta sets {own}... itself (the console it reads, how a panic ends the boot, the init it runs)"
            )));
        }
    }
    Ok(s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// "512M", "1G", "1GiB", 1024 (MiB) -> MiB; K/M/G/T are powers of 1024.
fn memory_mib(v: &toml::Value) -> Result<u64, Error> {
    match v {
        toml::Value::Integer(i) if *i > 0 => Ok(*i as u64),
        toml::Value::String(s) => {
            let bytes = crate::sys::size::parse_size(s).ok_or_else(|| {
                Error::bad(format!("'{s}' is not a size (use e.g. \"512M\", \"2G\")"))
            })?;
            Ok(bytes >> 20)
        }
        other => Err(Error::bad(format!(
            "expected a size such as \"512M\", got {other}"
        ))),
    }
}
