//! The serial console of one boot, kept as its last lines.
//!
//! A failed boot is recorded with the tail of its console (the kernel's
//! last words, a panic, `/init`'s marker lines), so a thread reads QEMU's
//! stdout and stderr continuously: a pipe nobody drains would stall the
//! guest once its buffer is full. Only the tail is kept, plus the few
//! lines that matter even after they scroll out of it: the first panic
//! line and the `SYSDELTA-` markers with the time they arrived.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const MAX_LINES: usize = 64;
pub const MAX_BYTES: usize = 8 * 1024;
/// Markers are a handful per boot; the cap only stops a guest that prints
/// them in a loop from growing the host's memory.
const MAX_MARKERS: usize = 256;
const PANIC: &str = "Kernel panic - not syncing";

#[derive(Default)]
pub struct Console {
    lines: VecDeque<String>,
    bytes: usize,
    partial: Vec<u8>,
    panic: Option<String>,
    markers: Vec<(Duration, String)>,
}

impl Console {
    /// Take in a chunk of output that arrived `at` after the launch.
    pub fn feed(&mut self, chunk: &[u8], at: Duration) {
        for &b in chunk {
            if b == b'\n' {
                let raw = std::mem::take(&mut self.partial);
                self.push_line(&raw, at);
            } else if self.partial.len() < MAX_BYTES - 1 {
                // A line longer than the whole tail keeps its start, and
                // still fits in the tail with its newline.
                self.partial.push(b);
            }
        }
    }

    /// The end of the stream: a last line without its newline still counts.
    pub fn close(&mut self, at: Duration) {
        if !self.partial.is_empty() {
            let raw = std::mem::take(&mut self.partial);
            self.push_line(&raw, at);
        }
    }

    fn push_line(&mut self, raw: &[u8], at: Duration) {
        // The serial console ends lines with "\r\n".
        let line = String::from_utf8_lossy(raw)
            .trim_end_matches('\r')
            .to_string();
        if self.panic.is_none() {
            if let Some(i) = line.find(PANIC) {
                self.panic = Some(line[i..].to_string());
            }
        }
        // A kernel message may share the line with /init's output, so a
        // marker counts from where it starts.
        if let Some(i) = line.find("SYSDELTA-") {
            if self.markers.len() < MAX_MARKERS {
                self.markers.push((at, line[i..].to_string()));
            }
        }
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.lines.len() > MAX_LINES || self.bytes > MAX_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len() + 1,
                None => break,
            }
        }
    }

    /// The last lines, at most [`MAX_LINES`] and about [`MAX_BYTES`], with a
    /// line still being written at the end.
    pub fn tail(&self) -> String {
        let mut s: String = self.lines.iter().map(|l| format!("{l}\n")).collect();
        if !self.partial.is_empty() {
            s.push_str(&String::from_utf8_lossy(&self.partial));
        }
        s
    }

    pub fn panic_line(&self) -> Option<String> {
        self.panic.clone()
    }

    pub fn markers(&self) -> Vec<(Duration, String)> {
        self.markers.clone()
    }
}

/// Read `from` until end of file into `console`, timing lines from `t0`.
pub fn pump(mut from: impl Read, console: Arc<Mutex<Console>>, t0: Instant) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut c = console.lock().unwrap_or_else(|p| p.into_inner());
        c.feed(&buf[..n], t0.elapsed());
    }
    let mut c = console.lock().unwrap_or_else(|p| p.into_inner());
    c.close(t0.elapsed());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_bounded_and_panics_and_markers_are_kept() {
        let mut c = Console::default();
        let z = Duration::ZERO;
        c.feed(b"[ 1.0] Kernel panic - not syncing: VFS: boom\r\n", z);
        c.feed(b"[ 1.1] x SYSDELTA-EXIT 3\r\n", Duration::from_secs(2));
        for i in 0..200 {
            c.feed(format!("line {i}\r\n").as_bytes(), z);
        }
        c.feed(b"partial", z);
        let t = c.tail();
        assert_eq!(t.lines().count(), MAX_LINES + 1);
        assert!(t.ends_with("line 199\npartial"), "{t}");
        assert!(!t.contains('\r'));
        assert_eq!(
            c.panic_line().unwrap(),
            "Kernel panic - not syncing: VFS: boom"
        );
        assert_eq!(
            c.markers(),
            vec![(Duration::from_secs(2), "SYSDELTA-EXIT 3".to_string())]
        );
        let long = vec![b'a'; 3 * MAX_BYTES];
        c.feed(&long, z);
        c.feed(b"\n", z);
        assert_eq!(c.tail().len(), MAX_BYTES);
    }
}
