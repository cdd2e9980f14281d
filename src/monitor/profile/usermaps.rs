//! Attribute user-mode sample addresses to the mapped file they fall in
//! (the executable or a shared library), from /proc/<pid>/maps.
//!
//! This is the granularity of user "symbols" in the profile: function names
//! inside a file would need its ELF symbol table, which is not read.

use std::collections::HashMap;
use std::sync::Arc;

/// Executable mappings of one process: (start, end, file basename).
#[derive(Default)]
struct Maps {
    ranges: Vec<(u64, u64, Arc<str>)>,
    /// Maps were re-read for this drain already (bounds the cost of
    /// addresses that map to nothing, such as JIT code).
    refreshed: bool,
}

/// Parse /proc/<pid>/maps text: executable mappings with their file's base
/// name; anonymous ones as "[anon]", special ones as written ("[vdso]").
pub fn parse_maps(text: &str) -> Vec<(u64, u64, Arc<str>)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (it.next(), it.next()) else {
            continue;
        };
        if !perms.contains('x') {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        let path = it.nth(3).unwrap_or("");
        let name = match path.rsplit('/').next() {
            Some(n) if !n.is_empty() => n,
            _ => "[anon]",
        };
        out.push((a, b, Arc::from(name)));
    }
    out
}

/// Per-process mapping cache.
#[derive(Default)]
pub struct UserMaps {
    procs: HashMap<u32, Maps>,
}

impl UserMaps {
    fn read(pid: u32) -> Vec<(u64, u64, Arc<str>)> {
        std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .map(|t| parse_maps(&t))
            .unwrap_or_default()
    }

    /// The file `ip` of process `pid` lies in; None when unknown (the
    /// process is gone, or the address is in no executable mapping).
    pub fn resolve(&mut self, pid: u32, ip: u64) -> Option<Arc<str>> {
        let find = |m: &Maps| {
            m.ranges
                .iter()
                .find(|r| r.0 <= ip && ip < r.1)
                .map(|r| r.2.clone())
        };
        let m = self.procs.entry(pid).or_insert_with(|| Maps {
            ranges: Self::read(pid),
            refreshed: true,
        });
        if let Some(n) = find(m) {
            return Some(n);
        }
        if m.refreshed {
            return None;
        }
        // A library loaded since we looked: read once more this drain.
        let fresh = Self::read(pid);
        if !fresh.is_empty() {
            m.ranges = fresh;
        }
        m.refreshed = true;
        find(m)
    }

    /// Allow one more re-read per process (called once per drain).
    pub fn next_drain(&mut self) {
        for m in self.procs.values_mut() {
            m.refreshed = false;
        }
    }
}
