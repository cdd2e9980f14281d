//! Memory: copy/read/write bandwidth and load latency by pointer chase.
//!
//! Bandwidth, one operation: processing the next 1 MiB chunk of a large
//! buffer (cycling through it), so the buffer is streamed from memory
//! rather than cache. The buffer is 4x the last-level cache from sysfs,
//! clamped to [64 MiB, 256 MiB]. MB/s with MB = 10^6 bytes (as LMbench 3,
//! whose lib_timing.c defines MB as 1000*1000); for copies the bytes
//! counted are the bytes copied (as LMbench). Empty loop subtracted.
//!
//! `bw.mem_read` / `bw.mem_write` and the copies are LMbench 3 bw_mem's
//! `rd` / `wr` / `bcopy`: the buffer gets the system's default page size
//! (no `madvise`, like LMbench's malloc'd buffer; with THP in "madvise"
//! mode that is 4 KB pages), and read and write touch every fourth 32-bit
//! int (one 4-byte access per 16 bytes, all bytes counted). The `.huge`
//! variants are sysdelta's own peak figures: `MADV_HUGEPAGE` and every u64
//! summed or stored; they measured 1.16-1.20x the LMbench pattern.
//!
//! Latency, one operation: one dependent load `p = next[p]` in a chain that
//! visits every cache line of a region exactly once in random order
//! (Sattolo's cycle), so hardware prefetchers cannot follow it. Region size
//! per level: L1 = L1d/2, L2 = L2/2, L3 = L3/2 (at most 256 MiB), main =
//! 4x the last-level cache clamped to [64 MiB, 1 GiB] (512 MiB in quick
//! mode). Nanoseconds per load; the loop is unrolled 16x and its measured
//! empty-loop cost subtracted. At the L3 and main sizes the figure includes
//! TLB misses (transparent huge pages are requested to limit them).

use std::hint::black_box;

use super::harness::Bench;
use super::{mbs, BenchOut, Env, Unavailable};

const MIB: usize = 1 << 20;

/// Cache sizes from /sys/devices/system/cpu/cpu0/cache (data/unified only).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheInfo {
    pub l1: Option<usize>,
    pub l2: Option<usize>,
    pub l3: Option<usize>,
    pub line: usize,
}

impl CacheInfo {
    pub fn read() -> CacheInfo {
        let mut ci = CacheInfo {
            line: 64,
            ..Default::default()
        };
        let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
        let Ok(rd) = std::fs::read_dir(base) else {
            return ci;
        };
        for ent in rd.flatten() {
            let d = ent.path();
            let get = |f: &str| {
                std::fs::read_to_string(d.join(f))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default()
            };
            if get("type") == "Instruction" {
                continue;
            }
            let Some(size) = parse_size(&get("size")) else {
                continue;
            };
            if let Ok(l) = get("coherency_line_size").parse::<usize>() {
                if l.is_power_of_two() && l >= 16 {
                    ci.line = l;
                }
            }
            match get("level").as_str() {
                "1" => ci.l1 = Some(size),
                "2" => ci.l2 = Some(size),
                "3" => ci.l3 = Some(size),
                _ => {}
            }
        }
        ci
    }

    pub fn last_level(&self) -> Option<usize> {
        self.l3.or(self.l2).or(self.l1)
    }
}

/// "48K", "2048K", "32M", "1024" -> bytes (the one size grammar,
/// `crate::sys::size`, in the `usize` the buffers are sized in).
pub fn parse_size(s: &str) -> Option<usize> {
    crate::sys::size::parse_size(s).and_then(|b| usize::try_from(b).ok())
}

/// A page-aligned anonymous buffer, unmapped on drop.
pub struct Buf {
    ptr: *mut u8,
    len: usize,
}

impl Buf {
    /// With huge pages requested (`MADV_HUGEPAGE`).
    pub fn new(len: usize) -> anyhow::Result<Buf> {
        Buf::with_pages(len, true)
    }

    /// `huge`: ask for transparent huge pages; otherwise leave the kernel's
    /// default, as a malloc'd buffer gets.
    pub fn with_pages(len: usize, huge: bool) -> anyhow::Result<Buf> {
        // SAFETY: fresh anonymous mapping, owned by Buf.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        anyhow::ensure!(
            p != libc::MAP_FAILED,
            "mmap {len} bytes: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: advising and filling our own mapping.
        unsafe {
            if huge {
                libc::madvise(p, len, libc::MADV_HUGEPAGE);
            }
            std::ptr::write_bytes(p as *mut u8, 1, len);
        }
        Ok(Buf {
            ptr: p as *mut u8,
            len,
        })
    }

    fn words(&self) -> *mut u64 {
        self.ptr as *mut u64
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Size of each bandwidth buffer.
pub fn bw_size(ci: &CacheInfo) -> usize {
    (ci.last_level().unwrap_or(16 * MIB) * 4).clamp(64 * MIB, 256 * MIB)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum BwKind {
    /// `copy_from_slice` (libc memcpy).
    CopyLibc,
    /// Unrolled 8-words-per-turn u64 copy with volatile accesses (so the
    /// compiler cannot turn it into memcpy): LMbench's "bcopy (hand)".
    CopyHand,
    /// Sum of u64 words, huge pages (sysdelta's peak read).
    Read,
    /// Volatile u64 stores, 8 per turn (no memset, no non-temporal stores),
    /// huge pages (sysdelta's peak write).
    Write,
    /// LMbench `rd`: sum of every fourth i32, default pages.
    LmRead,
    /// LMbench `wr`: store to every fourth i32, default pages.
    LmWrite,
}

impl BwKind {
    fn huge(self) -> bool {
        matches!(self, BwKind::Read | BwKind::Write)
    }
}

struct Bw {
    kind: BwKind,
    src: Buf,
    dst: Option<Buf>,
    chunks: usize,
    next: usize,
}

impl Bench for Bw {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let w = MIB / 8;
        for _ in 0..iters {
            let off = self.next * w;
            self.next = (self.next + 1) % self.chunks;
            // SAFETY: off + w words lie inside both buffers.
            unsafe {
                let s = self.src.words().add(off);
                match self.kind {
                    BwKind::CopyLibc => {
                        let d = self.dst.as_ref().map(|b| b.words()).unwrap_or(s).add(off);
                        std::ptr::copy_nonoverlapping(s, d, w);
                    }
                    BwKind::CopyHand => {
                        let d = self.dst.as_ref().map(|b| b.words()).unwrap_or(s).add(off);
                        let mut i = 0;
                        while i < w {
                            for k in 0..8 {
                                std::ptr::write_volatile(
                                    d.add(i + k),
                                    std::ptr::read_volatile(s.add(i + k)),
                                );
                            }
                            i += 8;
                        }
                    }
                    BwKind::Read => {
                        let sl = std::slice::from_raw_parts(s, w);
                        let mut acc = [0u64; 4];
                        for c in sl.chunks_exact(4) {
                            for k in 0..4 {
                                acc[k] = acc[k].wrapping_add(c[k]);
                            }
                        }
                        black_box(acc);
                    }
                    BwKind::Write => {
                        let mut i = 0;
                        while i < w {
                            for k in 0..8 {
                                std::ptr::write_volatile(s.add(i + k), i as u64);
                            }
                            i += 8;
                        }
                    }
                    BwKind::LmRead => {
                        // Every fourth int of each 512-byte block, as bw_mem rd.
                        let p = s as *const i32;
                        let mut acc = 0i32;
                        let mut i = 0;
                        while i < MIB / 4 {
                            for k in 0..32 {
                                acc = acc.wrapping_add(std::ptr::read_volatile(p.add(i + 4 * k)));
                            }
                            i += 128;
                        }
                        black_box(acc);
                    }
                    BwKind::LmWrite => {
                        let p = s as *mut i32;
                        let mut i = 0;
                        while i < MIB / 4 {
                            for k in 0..32 {
                                std::ptr::write_volatile(p.add(i + 4 * k), 1);
                            }
                            i += 128;
                        }
                    }
                }
            }
        }
        Ok(iters)
    }
}

pub fn bandwidth(env: &Env, kind: BwKind) -> anyhow::Result<BenchOut> {
    let ci = CacheInfo::read();
    let size = bw_size(&ci);
    let copy = matches!(kind, BwKind::CopyLibc | BwKind::CopyHand);
    let mut b = Bw {
        kind,
        src: Buf::with_pages(size, kind.huge())?,
        dst: if copy {
            Some(Buf::with_pages(size, false)?)
        } else {
            None
        },
        chunks: size / MIB,
        next: 0,
    };
    let what = match kind {
        BwKind::CopyLibc => "memcpy",
        BwKind::CopyHand => "hand-unrolled u64 copy",
        BwKind::Read => "sum of every u64",
        BwKind::Write => "store to every u64",
        BwKind::LmRead => "sum of every 4th int (bw_mem rd)",
        BwKind::LmWrite => "store to every 4th int (bw_mem wr)",
    };
    let pages = if kind.huge() {
        "MADV_HUGEPAGE"
    } else {
        "default pages, no madvise (as LMbench)"
    };
    Ok(mbs(
        env.h.measure(&mut b, 0.0)?,
        MIB,
        &format!("{what}, 1 MiB chunks over {} MiB, {pages}", size / MIB),
    ))
}

struct Chase {
    buf: Buf,
    p: usize,
}

impl Bench for Chase {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let w = self.buf.words() as *const u64;
        let mut p = self.p;
        // Written out 16 times (not an inner loop) so that even an
        // unoptimised build runs nothing but the loads between two turns.
        macro_rules! hop {
            () => {
                p = *w.add(p) as usize
            };
        }
        for _ in 0..iters {
            // SAFETY: every stored index is a valid word index of buf.
            unsafe {
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
            }
        }
        self.p = black_box(p);
        Ok(iters * 16)
    }
}

/// The region size for a level (1, 2, 3; 0 = main memory), or why not.
pub fn chase_size(ci: &CacheInfo, level: u8, quick: bool) -> Result<usize, Unavailable> {
    let no = |l: &str| {
        Unavailable(format!(
            "no {l} cache reported in /sys/devices/system/cpu/cpu0/cache"
        ))
    };
    match level {
        1 => ci.l1.map(|s| s / 2).ok_or_else(|| no("L1 data")),
        2 => ci.l2.map(|s| s / 2).ok_or_else(|| no("L2")),
        3 => ci
            .l3
            .map(|s| (s / 2).min(256 * MIB))
            .ok_or_else(|| no("L3")),
        _ => {
            let cap = if quick { 512 * MIB } else { 1024 * MIB };
            Ok((ci.last_level().unwrap_or(16 * MIB) * 4).clamp(64 * MIB, cap))
        }
    }
}

pub fn latency(env: &Env, level: u8) -> anyhow::Result<BenchOut> {
    let ci = CacheInfo::read();
    let size = match chase_size(&ci, level, env.quick) {
        Ok(s) => s,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let line_words = ci.line / 8;
    let lines = size / ci.line;
    anyhow::ensure!(lines >= 2, "region of {size} bytes is too small");
    let buf = Buf::new(lines * ci.line)?;
    // Sattolo's algorithm: a random single cycle over all lines.
    let mut perm: Vec<u32> = (0..lines as u32).collect();
    {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xc4a5e);
        for i in (1..lines).rev() {
            let j = rng.random_range(0..i);
            perm.swap(i, j);
        }
    }
    // SAFETY: every index written is line * line_words < buf length in words.
    unsafe {
        let w = buf.words();
        for (i, &next) in perm.iter().enumerate() {
            *w.add(i * line_words) = (next as usize * line_words) as u64;
        }
    }
    drop(perm);
    let mut b = Chase { buf, p: 0 };
    let v = env.h.measure(&mut b, 0.0)?;
    Ok(BenchOut::Samples {
        values: v,
        detail: format!(
            "random cycle over {} KiB, {}-byte lines",
            size / 1024,
            ci.line
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K"), Some(48 * 1024));
        assert_eq!(parse_size("32M"), Some(32 * MIB));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn chase_sizes_grow_with_level() {
        let ci = CacheInfo {
            l1: Some(32 * 1024),
            l2: Some(MIB),
            l3: Some(32 * MIB),
            line: 64,
        };
        let s: Vec<usize> = [1, 2, 3, 0]
            .iter()
            .map(|&l| chase_size(&ci, l, true).unwrap())
            .collect();
        assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:?}");
        let none = CacheInfo::default();
        assert!(chase_size(&none, 3, true).is_err());
    }
}
