//! The environment fingerprint: what a reader needs to know about the
//! machine an experiment ran on, and what must match between experiments
//! that are compared.

use std::collections::BTreeMap;
use std::fs;

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A /proc/meminfo field (`MemTotal`, `MemAvailable`, ...) in KiB.
pub fn meminfo_kib(key: &str) -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn gib(kib: u64) -> String {
    format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0)
}

/// The host name.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Collect the fingerprint. Keys are stable (they are compared across
/// experiments); a value that cannot be read here is "-".
pub fn collect() -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let uts = nix::sys::utsname::uname().ok();
    let s = |o: Option<String>| o.unwrap_or_else(|| "-".into());
    f.insert("host".into(), hostname());
    f.insert(
        "kernel".into(),
        s(uts
            .as_ref()
            .map(|u| u.release().to_string_lossy().into_owned())),
    );
    f.insert(
        "kernel_version".into(),
        s(uts
            .as_ref()
            .map(|u| u.version().to_string_lossy().into_owned())),
    );
    f.insert(
        "arch".into(),
        s(uts
            .as_ref()
            .map(|u| u.machine().to_string_lossy().into_owned())),
    );
    f.insert("cmdline".into(), s(read_trim("/proc/cmdline")));
    f.insert("distro".into(), s(os_release()));
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo.lines().find_map(|l| {
        l.strip_prefix("model name")
            .and_then(|r| r.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    f.insert("cpu_model".into(), s(model));
    f.insert(
        "cpus_online".into(),
        std::thread::available_parallelism()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "-".into()),
    );
    f.insert("memory".into(), s(meminfo_kib("MemTotal").map(gib)));
    f.insert("swap".into(), s(meminfo_kib("SwapTotal").map(gib)));
    f.insert(
        "clocksource".into(),
        s(read_trim(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )),
    );
    f.insert(
        "cpufreq_governor".into(),
        s(read_trim(
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
        )),
    );
    f.insert(
        "thp".into(),
        s(read_trim("/sys/kernel/mm/transparent_hugepage/enabled")),
    );
    f.insert("mitigations".into(), s(mitigations()));
    // Simultaneous multithreading: the kernel's control word (on, off,
    // forceoff, notsupported, notimplemented). Sibling threads share a
    // core's caches and ports, so it changes what a run measures.
    f.insert(
        "smt".into(),
        s(read_trim("/sys/devices/system/cpu/smt/control")),
    );
    f.insert(
        "loadavg_at_start".into(),
        s(read_trim("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))),
    );
    f.insert("sysdelta".into(), env!("CARGO_PKG_VERSION").into());
    f
}

fn os_release() -> Option<String> {
    let text = fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
}

/// One line per vulnerability that is mitigated or vulnerable, summarised as
/// "name: state" joined by "; ", sorted.
fn mitigations() -> Option<String> {
    let dir = fs::read_dir("/sys/devices/system/cpu/vulnerabilities").ok()?;
    let mut v: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let state = fs::read_to_string(e.path()).ok()?;
            Some(format!(
                "{}: {}",
                e.file_name().to_string_lossy(),
                state.trim()
            ))
        })
        .collect();
    v.sort();
    Some(v.join("; "))
}

/// Keys that may legitimately differ between two experiments on one machine
/// (they describe the moment, not the system).
pub const VOLATILE_KEYS: &[&str] = &["loadavg_at_start"];

/// A fingerprint value that says something: `collect` writes "-" for what
/// it could not read, and an import may have no value at all.
pub fn known<'a>(f: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    f.get(key)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty() && *v != "-")
}

/// Keys whose values differ between two fingerprints, ignoring volatile
/// ones. A key unknown on either side is no difference (nothing says the
/// systems differed there); [`unrecorded`] lists those.
pub fn differences(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    keys(a, b)
        .filter(|k| match (known(a, k), known(b, k)) {
            (Some(x), Some(y)) => x != y,
            _ => false,
        })
        .collect()
}

/// Keys known on one side and unknown on the other (an imported
/// experiment, a value that could not be read): neither same nor different.
pub fn unrecorded(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    keys(a, b)
        .filter(|k| known(a, k).is_some() != known(b, k).is_some())
        .collect()
}

/// The non-volatile keys of either fingerprint, sorted, once each.
fn keys(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> impl Iterator<Item = String> {
    let mut keys: Vec<String> = a.keys().chain(b.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| !VOLATILE_KEYS.contains(&k.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_has_the_documented_keys() {
        let f = collect();
        for k in [
            "kernel",
            "cmdline",
            "cpu_model",
            "cpus_online",
            "memory",
            "swap",
            "clocksource",
            "cpufreq_governor",
            "thp",
            "mitigations",
            "smt",
            "loadavg_at_start",
        ] {
            assert!(f.contains_key(k), "missing {k}");
        }
        assert_ne!(f["kernel"], "-");
        assert!(differences(&f, &f).is_empty());
    }

    #[test]
    fn unknown_values_are_unrecorded_not_different() {
        let m = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let here = m(&[
            ("thp", "never"),
            ("cpufreq_governor", "-"),
            ("arch", "x86_64"),
        ]);
        let there = m(&[("thp", "always"), ("cpufreq_governor", "-")]);
        assert_eq!(differences(&here, &there), ["thp"]);
        assert_eq!(unrecorded(&here, &there), ["arch"]);
    }
}
