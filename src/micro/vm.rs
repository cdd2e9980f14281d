//! Virtual memory: mapping latency and minor page faults on a cached file.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::child::{cvt, Fd};
use super::fs::{map_file, test_file, FILE_SIZE};
use super::harness::Bench;
use super::syscall::cpath;
use super::{us, BenchOut, Env};

const PAGE: usize = 4096;

/// One operation: `mmap()` of the cached 8 MiB file (shared, read-only),
/// reading one byte every 16 KB, `munmap()` (LMbench lat_mmap's pattern).
/// Microseconds per mmap/touch/munmap, empty loop subtracted.
struct MmapLat {
    fd: Fd,
}

impl Bench for MmapLat {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            let p = map_file(self.fd.0, FILE_SIZE, 0)?;
            // SAFETY: p maps FILE_SIZE readable bytes until munmap.
            unsafe {
                let mut off = 0;
                while off < FILE_SIZE {
                    black_box(std::ptr::read_volatile(p.add(off)));
                    off += 16 * 1024;
                }
                libc::munmap(p.cast(), FILE_SIZE);
            }
        }
        Ok(iters)
    }
}

fn open_test_file(env: &Env) -> anyhow::Result<Fd> {
    let c = cpath(&test_file(env)?)?;
    // SAFETY: valid path.
    Ok(Fd(cvt(
        unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) },
        "open",
    )?))
}

pub fn mmap_lat(env: &Env) -> anyhow::Result<BenchOut> {
    let fd = open_test_file(env)?;
    Ok(us(
        env.h.measure(&mut MmapLat { fd }, 0.0)?,
        "mmap 8 MiB file + touch every 16 KB + munmap",
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

pub fn page_fault(env: &Env) -> anyhow::Result<BenchOut> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let h = &env.h;
    let fd = open_test_file(env)?;
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
    let (mut v, mut faults) = (Vec::with_capacity(h.samples), 0u64);
    for _ in 0..h.samples {
        h.check()?;
        let (t1, t2, f) = b.round(n)?;
        faults += f;
        let ns = t1.as_nanos() as f64 - t2.as_nanos() as f64 - h.empty_loop_ns * n as f64;
        v.push(ns / f as f64);
    }
    let ratio = (n * h.samples as u64) as f64 / faults.max(1) as f64;
    Ok(us(
        v,
        &format!(
            "minor fault on a cached file page, random order, MADV_RANDOM, re-read cost subtracted; {ratio:.2} pages per fault"
        ),
    ))
}
