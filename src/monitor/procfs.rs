//! Parsers for /proc/stat, /proc/vmstat and /proc/meminfo, kept pure so
//! they are tested on fixed text; plus a buffer-reusing file reader so the
//! sampling thread does not allocate per sample.

use std::fs::File;
use std::io::Read;

/// Read a whole (proc) file into `buf`, replacing its contents.
pub fn read_into(path: &str, buf: &mut String) -> std::io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_string(buf)?;
    Ok(())
}

/// The counters of /proc/stat that vmstat uses.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StatCounters {
    /// Aggregate "cpu" line in clock ticks: user, nice, system, idle,
    /// iowait, irq, softirq, steal.
    pub cpu: [u64; 8],
    /// Total interrupts since boot (first field of "intr").
    pub intr: u64,
    /// Context switches since boot.
    pub ctxt: u64,
    /// Runnable tasks now (includes the reader itself).
    pub procs_running: u64,
    /// Tasks blocked on I/O now.
    pub procs_blocked: u64,
}

pub fn parse_stat(text: &str) -> StatCounters {
    let mut c = StatCounters::default();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let key = it.next().unwrap_or("");
        let mut num = || it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match key {
            "cpu" => {
                for slot in c.cpu.iter_mut() {
                    *slot = num();
                }
            }
            "intr" => c.intr = num(),
            "ctxt" => c.ctxt = num(),
            "procs_running" => c.procs_running = num(),
            "procs_blocked" => c.procs_blocked = num(),
            _ => {}
        }
    }
    c
}

/// The counters of /proc/vmstat that vmstat uses: pages swapped in/out and
/// KiB paged in/out (vmstat's bi/bo "blocks" are these KiB).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VmCounters {
    pub pswpin: u64,
    pub pswpout: u64,
    pub pgpgin: u64,
    pub pgpgout: u64,
}

pub fn parse_vmstat(text: &str) -> VmCounters {
    let mut c = VmCounters::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(' ') else {
            continue;
        };
        let v: u64 = v.trim().parse().unwrap_or(0);
        match k {
            "pswpin" => c.pswpin = v,
            "pswpout" => c.pswpout = v,
            "pgpgin" => c.pgpgin = v,
            "pgpgout" => c.pgpgout = v,
            _ => {}
        }
    }
    c
}

/// One /proc/meminfo line: field name, value, and whether it is in kB
/// (the HugePages_* counts are plain numbers).
#[derive(Clone, Debug, PartialEq)]
pub struct MeminfoField {
    pub name: String,
    pub value: u64,
    pub kb: bool,
}

pub fn parse_meminfo(text: &str) -> Vec<MeminfoField> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((k, rest)) = line.split_once(':') else {
            continue;
        };
        let mut it = rest.split_ascii_whitespace();
        let Some(value) = it.next().and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        out.push(MeminfoField {
            name: k.trim().to_string(),
            value,
            kb: it.next() == Some("kB"),
        });
    }
    out
}

/// Value of one meminfo field by name, without allocating (for the
/// sampling thread); None when absent.
pub fn meminfo_value(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, rest) = line.split_once(':')?;
        if k != name {
            return None;
        }
        rest.split_ascii_whitespace().next()?.parse().ok()
    })
}
