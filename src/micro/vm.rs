//! Virtual memory: mapping latency and minor page faults on a cached file.

use std::hint::black_box;

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
/// of this thread), taken by reading pages of fresh shared mappings of the
/// cached 8 MiB file in a random page order with `MADV_RANDOM`. If the
/// kernel maps neighbours on a fault (fault-around) one fault covers
/// several touches; dividing by faults, not touches, keeps the unit "one
/// fault". Mappings are made before and removed after the timed region.
struct PageFault {
    fd: Fd,
    order: Vec<usize>,
    maps: Vec<*mut u8>,
    touches: u64,
    faults: u64,
}

impl Bench for PageFault {
    fn before(&mut self, iters: u64) -> anyhow::Result<()> {
        let pages = self.order.len() as u64;
        for _ in 0..iters.div_ceil(pages) {
            let p = map_file(self.fd.0, FILE_SIZE, 0)?;
            // SAFETY: advising our own mapping.
            unsafe {
                libc::madvise(p.cast(), FILE_SIZE, libc::MADV_RANDOM);
            }
            self.maps.push(p);
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let pages = self.order.len();
        let f0 = minflt();
        for i in 0..iters as usize {
            let m = self.maps[i / pages];
            // SAFETY: within the mapping.
            unsafe {
                black_box(std::ptr::read_volatile(m.add(self.order[i % pages] * PAGE)));
            }
        }
        let f = (minflt() - f0).max(1) as u64;
        self.touches += iters;
        self.faults += f;
        Ok(f)
    }

    fn after(&mut self) -> anyhow::Result<()> {
        for p in self.maps.drain(..) {
            // SAFETY: our mapping.
            unsafe {
                libc::munmap(p.cast(), FILE_SIZE);
            }
        }
        Ok(())
    }
}

impl Drop for PageFault {
    fn drop(&mut self) {
        let _ = self.after();
    }
}

pub fn page_fault(env: &Env) -> anyhow::Result<BenchOut> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let fd = open_test_file(env)?;
    let mut order: Vec<usize> = (0..FILE_SIZE / PAGE).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(0x5eed));
    let mut b = PageFault {
        fd,
        order,
        maps: Vec::new(),
        touches: 0,
        faults: 0,
    };
    let v = env.h.measure(&mut b, 0.0)?;
    let ratio = b.touches as f64 / b.faults.max(1) as f64;
    Ok(us(
        v,
        &format!(
            "minor fault on a cached file page, random order, MADV_RANDOM; {ratio:.2} pages touched per fault"
        ),
    ))
}
