//! Virtual memory: mapping latency and minor page faults on a cached file.
//!
//! `vm.mmap` and `vm.page_fault` measure what LMbench 3's lat_mmap and
//! lat_pagefault measure (their patterns, described below);
//! `vm.page_fault.per_fault` is sysdelta's own figure, per fault rather
//! than per page, printed beside it with its definition.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::child::{cvt, Fd};
use super::fs::{map_file, test_file, FILE_SIZE};
use super::harness::Bench;
use super::syscall::cpath;
use super::{us, BenchOut, Env};

const PAGE: usize = 4096;

/// lat_mmap's page size and the fraction of the mapping it writes.
const LM_PSIZE: usize = 16 << 10;
const LM_FRACTION: usize = 10;

/// One operation, as LMbench 3 lat_mmap without `-r`: `mmap()` of the
/// cached 8 MiB file shared and read-write, one byte written every 16 KB
/// over the first tenth of the mapping (52 stores), `munmap()`.
/// Microseconds per mmap/write/munmap, empty loop subtracted.
struct MmapLat {
    fd: Fd,
}

impl Bench for MmapLat {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        // The byte lat_mmap stores: the low byte of the size.
        let c = (FILE_SIZE & 0xff) as u8;
        for _ in 0..iters {
            // SAFETY: mapping a regular file opened read-write; unmapped below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    FILE_SIZE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    self.fd.0,
                    0,
                )
            };
            anyhow::ensure!(
                p != libc::MAP_FAILED,
                "mmap: {}",
                std::io::Error::last_os_error()
            );
            let p = p as *mut u8;
            // SAFETY: p maps FILE_SIZE writable bytes until munmap.
            unsafe {
                let mut off = 0;
                while off < FILE_SIZE / LM_FRACTION {
                    std::ptr::write_volatile(p.add(off), c);
                    off += LM_PSIZE;
                }
                libc::munmap(p.cast(), FILE_SIZE);
            }
        }
        Ok(iters)
    }
}

fn open_test_file(env: &Env, flags: libc::c_int) -> anyhow::Result<Fd> {
    let c = cpath(&test_file(env)?)?;
    // SAFETY: valid path.
    Ok(Fd(cvt(
        unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) },
        "open",
    )?))
}

pub fn mmap_lat(env: &Env) -> anyhow::Result<BenchOut> {
    // A file of its own: the stores dirty it, and once written back the
    // shared test file would be held in smaller page-cache folios, which
    // changes the page-fault figures measured after this one.
    let path = env.tmp.join("mmap-8m");
    if !path.exists() {
        super::fs::write_test_file(&path)?;
    }
    let c = cpath(&path)?;
    // SAFETY: valid path.
    let fd = Fd(cvt(
        unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) },
        "open",
    )?);
    Ok(us(
        env.h.measure(&mut MmapLat { fd }, 0.0)?,
        "mmap 8 MiB file shared read-write + write 1 byte per 16 KB over the first 1/10 + munmap (lat_mmap)",
    ))
}

/// A shared read-only mapping of the whole test file, `msync(MS_INVALIDATE)`d
/// as lat_pagefault does after every mapping.
fn map_invalidated(fd: libc::c_int) -> anyhow::Result<*mut u8> {
    let p = map_file(fd, FILE_SIZE, 0)?;
    // SAFETY: our mapping of FILE_SIZE bytes.
    if unsafe { libc::msync(p.cast(), FILE_SIZE, libc::MS_INVALIDATE) } != 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: our mapping.
        unsafe { libc::munmap(p.cast(), FILE_SIZE) };
        anyhow::bail!("msync: {e}");
    }
    Ok(p)
}

/// LMbench 3 lat_pagefault's loop: read one byte of every page of a shared
/// read-only mapping of the cached file in a random page order (no
/// madvise, so the kernel's fault-around maps several pages per fault),
/// then munmap, mmap and `msync(MS_INVALIDATE)` again. `remap_only` does
/// just the second half: the part lat_pagefault subtracts.
struct LmPageFault {
    fd: Fd,
    offsets: Vec<usize>,
    map: *mut u8,
    remap_only: bool,
}

impl LmPageFault {
    fn remap(&mut self) -> anyhow::Result<()> {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.map.cast(), FILE_SIZE) };
        self.map = std::ptr::null_mut();
        self.map = map_invalidated(self.fd.0)?;
        Ok(())
    }
}

impl Bench for LmPageFault {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            if !self.remap_only {
                let mut sum = 0u8;
                for &o in &self.offsets {
                    // SAFETY: o < FILE_SIZE, within the mapping.
                    sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(self.map.add(o)) });
                }
                black_box(sum);
            }
            self.remap()?;
        }
        Ok(if self.remap_only {
            iters
        } else {
            iters * self.offsets.len() as u64
        })
    }
}

impl Drop for LmPageFault {
    fn drop(&mut self) {
        if !self.map.is_null() {
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.map.cast(), FILE_SIZE) };
        }
    }
}

/// `vm.page_fault`, as LMbench: microseconds per page of (the faulting pass
/// + remap) minus the remap alone, over the pages of the file.
pub fn page_fault_lmbench(env: &Env) -> anyhow::Result<BenchOut> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut offsets: Vec<usize> = (0..FILE_SIZE / PAGE).map(|p| p * PAGE).collect();
    offsets.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(0x1a7f));
    let pages = offsets.len();
    let fd = open_test_file(env, libc::O_RDONLY)?;
    let map = map_invalidated(fd.0)?;
    let mut b = LmPageFault {
        fd,
        offsets,
        map,
        remap_only: true,
    };
    let remap = super::harness::median(&env.h.measure(&mut b, 0.0)?).max(0.0);
    b.remap_only = false;
    let v = env.h.measure(&mut b, remap / pages as f64)?;
    // One more untimed pass, counted, to say how many pages a fault covered.
    let f0 = minflt();
    b.run(1)?;
    let faults = (minflt() - f0).max(1) as f64;
    Ok(us(
        v,
        &format!(
            "per page: read 1 byte of each 4 KB page of a fresh shared mapping of the cached 8 MiB file in random order, minus munmap+mmap+msync ({:.1} us per {pages} pages) (lat_pagefault); {:.1} pages per fault",
            remap / 1e3,
            pages as f64 / faults
        ),
    ))
}

fn minflt() -> i64 {
    // SAFETY: valid out buffer.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut r);
        r.ru_minflt
    }
}

/// One operation: one minor fault, as counted by the kernel (`ru_minflt`
/// of this thread), taken by reading one byte of each page of fresh shared
/// mappings of the cached 8 MiB file, pages in a random order,
/// `MADV_RANDOM`. Subtracted: the time of the same reads repeated at once
/// on the now-mapped pages (the cache and TLB misses of the reads
/// themselves), and the empty loop. When the kernel maps several pages per
/// fault (fault-around, large folios) one fault covers several pages; the
/// unit stays "one fault" and the detail says how many pages each covered.
/// Mappings are made before and removed after the timed passes. Each
/// sample is one round (map, faulting pass, re-read pass, unmap) whose
/// faulting pass lasts at least the minimum sample time.
struct PageFault {
    fd: Fd,
    order: Vec<usize>,
    maps: Vec<*mut u8>,
}

impl PageFault {
    fn pass(&self, touches: u64) {
        let pages = self.order.len();
        for i in 0..touches as usize {
            let m = self.maps[i / pages];
            // SAFETY: within the mapping.
            unsafe {
                black_box(std::ptr::read_volatile(m.add(self.order[i % pages] * PAGE)));
            }
        }
    }

    fn unmap(&mut self) {
        for p in self.maps.drain(..) {
            // SAFETY: our mapping.
            unsafe {
                libc::munmap(p.cast(), FILE_SIZE);
            }
        }
    }

    /// (faulting pass, re-read pass, faults) for `touches` page reads.
    fn round(&mut self, touches: u64) -> anyhow::Result<(Duration, Duration, u64)> {
        let pages = self.order.len() as u64;
        for _ in 0..touches.div_ceil(pages) {
            let p = map_file(self.fd.0, FILE_SIZE, 0)?;
            self.maps.push(p);
            // SAFETY: advising our own mapping.
            unsafe {
                libc::madvise(p.cast(), FILE_SIZE, libc::MADV_RANDOM);
            }
        }
        let f0 = minflt();
        let t = Instant::now();
        self.pass(touches);
        let t1 = t.elapsed();
        let f = (minflt() - f0).max(1) as u64;
        let t = Instant::now();
        self.pass(touches);
        let t2 = t.elapsed();
        self.unmap();
        Ok((t1, t2, f))
    }
}

impl Drop for PageFault {
    fn drop(&mut self) {
        self.unmap();
    }
}

/// `vm.page_fault.per_fault`: sysdelta's own figure, per fault.
pub fn page_fault(env: &Env) -> anyhow::Result<BenchOut> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let h = &env.h;
    let fd = open_test_file(env, libc::O_RDONLY)?;
    let mut order: Vec<usize> = (0..FILE_SIZE / PAGE).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(0x5eed));
    let mut b = PageFault {
        fd,
        order,
        maps: Vec::new(),
    };
    h.check()?;
    b.round(1)?; // cold, discarded
    let mut n = 1u64;
    // Calibrate on the faulting pass, then a warm-up round that must also
    // be long enough (as in `Harness::measure`).
    for _phase in 0..2 {
        loop {
            h.check()?;
            let (t1, _, _) = b.round(n)?;
            if t1 >= h.min_sample || n >= 1 << 30 {
                break;
            }
            n = h.grow(n, t1);
        }
    }
    let mut rounds = Vec::with_capacity(h.samples);
    for _ in 0..h.samples {
        h.check()?;
        rounds.push(b.round(n)?);
    }
    // The re-read is the same in-process work every round: a fixed cost
    // that outside load can only inflate. Its fastest is subtracted from
    // every faulting pass; each round's own re-read, when the machine's
    // other work landed in it, made that round's figure negative (beside
    // two CPU hogs the median of 11 came out at -7 to -53 us).
    let reread = rounds.iter().map(|r| r.1).min().unwrap_or_default();
    let faults: u64 = rounds.iter().map(|r| r.2).sum();
    let v: Vec<f64> = rounds
        .iter()
        .map(|&(t1, _, f)| {
            let ns = t1.as_nanos() as f64 - reread.as_nanos() as f64 - h.empty_loop_ns * n as f64;
            ns / f as f64
        })
        .collect();
    let ratio = (n * h.samples as u64) as f64 / faults.max(1) as f64;
    Ok(us(
        v,
        &format!(
            "minor fault on a cached file page, random order, MADV_RANDOM, fastest re-read subtracted; {ratio:.2} pages per fault"
        ),
    ))
}
