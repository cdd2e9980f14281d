//! The machine header of a raw-data block, as in the 2005 posting
//! ("TRANS BENCH for <kernel> on <arch>", distro, uptime line, CPUs, memory).

use std::fs;

#[derive(Clone, Debug, Default)]
pub struct SysHeader {
    pub kernel: String,
    pub arch: String,
    pub distro: String,
    pub host: String,
    pub uptime_load: String,
    pub cpus: usize,
    pub cpu_model: String,
    pub mem_total_kb: u64,
    pub mem_free_kb: u64,
}

fn meminfo(text: &str, key: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl SysHeader {
    pub fn capture() -> SysHeader {
        let uts = nix::sys::utsname::uname().ok();
        let field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
            uts.as_ref()
                .map(|u| f(u).to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let distro = fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("PRETTY_NAME=")
                        .map(|v| v.trim_matches('"').to_string())
                })
            })
            .unwrap_or_else(|| "unknown distribution".into());
        let up = fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<f64>().ok())
            })
            .unwrap_or(0.0) as u64;
        let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let l: Vec<&str> = load.split_whitespace().take(3).collect();
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let mem = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        SysHeader {
            kernel: field(|u| u.release()),
            arch: field(|u| u.machine()),
            host: field(|u| u.nodename()),
            distro,
            uptime_load: format!(
                "up {}:{:02}, load average: {}",
                up / 3600,
                up % 3600 / 60,
                l.join(", ")
            ),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model: cpuinfo
                .lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default(),
            mem_total_kb: meminfo(&mem, "MemTotal:"),
            mem_free_kb: meminfo(&mem, "MemFree:"),
        }
    }

    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("TRANS BENCH for {} on {}", self.kernel, self.arch),
            self.distro.clone(),
            format!("{}:  {}", self.host, self.uptime_load),
            format!("processors: {} {}", self.cpus, self.cpu_model),
            format!(
                "MemTotal: {:>12} kB    MemFree: {:>12} kB",
                self.mem_total_kb, self.mem_free_kb
            ),
        ]
    }
}
