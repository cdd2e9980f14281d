//! The machine audit after each boot, before its first run (what Krun and
//! pyperf check): kernel messages of level error or worse since boot, CPU
//! temperature and frequency governor where readable, the load, and what
//! differs from the first boot of the same config (a kernel's own traits,
//! such as MemTotal, differ between configs by design). A failed audit
//! marks the boot: it is stored failed, with the audit as its reason, and
//! its runs stay stored with it, and the analysis leaves them out of the
//! statistics (its warning counts them).

use std::collections::BTreeMap;

/// Hotter than this (°C) is a failed audit: the CPU may be throttling.
const HOT_C: f64 = 90.0;

/// What one boot's audit read (stored as JSON in the boot's event).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Audit {
    /// Kernel messages of level err (3) or worse since boot.
    pub dmesg_errors: Vec<String>,
    /// Highest thermal zone temperature, °C.
    pub temp_c: Option<f64>,
    /// Each CPU's cpufreq governor, when there is cpufreq.
    pub governors: BTreeMap<String, String>,
    pub load1: Option<f64>,
    /// What the fingerprint keys that describe the machine (not the kernel)
    /// say: compared with the first boot's.
    pub machine: BTreeMap<String, String>,
}

impl Audit {
    /// Read the running machine.
    pub fn read() -> Audit {
        let fp = crate::monitor::fingerprint::collect();
        let machine = fp
            .into_iter()
            .filter(|(k, _)| {
                ["cpu", "mem", "smt", "numa", "host"]
                    .iter()
                    .any(|p| k.starts_with(p))
            })
            .collect();
        Audit {
            dmesg_errors: kmsg_errors(),
            temp_c: max_temp(),
            governors: governors(),
            load1: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok()),
            machine,
        }
    }

    /// One line of what was read, for the boot's event.
    pub fn summary(&self) -> String {
        let or_none = |o: Option<String>| o.unwrap_or_else(|| "unreadable".into());
        let governors: std::collections::BTreeSet<&String> = self.governors.values().collect();
        format!(
            "{} kernel error message(s); temperature {}; governors {}; load {}",
            self.dmesg_errors.len(),
            or_none(self.temp_c.map(|t| format!("{t:.0} °C"))),
            if governors.is_empty() {
                "none (no cpufreq)".to_string()
            } else {
                governors.into_iter().cloned().collect::<Vec<_>>().join(",")
            },
            or_none(self.load1.map(|l| format!("{l:.2}"))),
        )
    }

    /// Why this boot's runs must be kept apart, compared with the
    /// first boot of its config (None for that one); empty: it passed.
    /// Kernel messages matching one of `ignore` do not count.
    pub fn problems(&self, first: Option<&Audit>, ignore: &[regex::Regex]) -> Vec<String> {
        let mut p = Vec::new();
        let errors: Vec<&String> = self
            .dmesg_errors
            .iter()
            .filter(|l| !ignore.iter().any(|r| r.is_match(l)))
            .collect();
        if let Some(l) = errors.first() {
            p.push(format!(
                "{} kernel error message(s) since boot, first: {l}",
                errors.len()
            ));
        }
        if let Some(t) = self.temp_c.filter(|t| *t > HOT_C) {
            p.push(format!("CPU temperature {t:.0} °C (over {HOT_C:.0})"));
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        if let Some(l) = self.load1.filter(|l| *l > cpus) {
            p.push(format!("load {l:.2} over {cpus} CPUs before the first run"));
        }
        if let Some(f) = first {
            if f.governors != self.governors {
                p.push(format!(
                    "frequency governors {:?}, the first boot's {:?}",
                    self.governors, f.governors
                ));
            }
            for (k, v) in &self.machine {
                match f.machine.get(k) {
                    Some(w) if w != v => p.push(format!("{k} is '{v}', the first boot's '{w}'")),
                    _ => {}
                }
            }
        }
        p
    }
}

/// `/dev/kmsg` records (`pri,seq,usec,flags;text`) of level <= 3.
fn kmsg_errors() -> Vec<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    // One record a read; EAGAIN at the end, EPIPE when one was overwritten.
    for _ in 0..100_000 {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                let (head, text) = rec.split_once(';').unwrap_or(("", &rec));
                let pri: u32 = head
                    .split(',')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(7);
                if pri & 7 <= 3 {
                    out.push(text.lines().next().unwrap_or("").to_string());
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    out
}

fn max_temp() -> Option<f64> {
    let rd = std::fs::read_dir("/sys/class/thermal").ok()?;
    rd.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("temp")).ok())
        .filter_map(|s| s.trim().parse::<f64>().ok())
        .map(|m| m / 1000.0)
        .reduce(f64::max)
}

fn governors() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir("/sys/devices/system/cpu") else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Ok(g) = std::fs::read_to_string(e.path().join("cpufreq/scaling_governor")) {
            out.insert(name, g.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_heat_and_changes_fail_the_audit() {
        let first = Audit {
            governors: [("cpu0".into(), "performance".into())].into(),
            machine: [("cpu_model".into(), "X".into())].into(),
            ..Default::default()
        };
        assert!(first.problems(None, &[]).is_empty());
        let mut a = first.clone();
        assert!(a.problems(Some(&first), &[]).is_empty());
        a.governors.insert("cpu0".into(), "powersave".into());
        a.temp_c = Some(95.0);
        a.dmesg_errors.push("EDAC MC0: 1 CE".into());
        let p = a.problems(Some(&first), &[]);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("EDAC"));
        let ignore = [regex::Regex::new("^EDAC").unwrap()];
        assert_eq!(a.problems(Some(&first), &ignore).len(), 2);
    }
}
