//! File system: create and delete of small files, and re-reading a cached
//! file with read() and with mmap(). Everything happens in the suite's
//! private scratch directory, so the file system measured is the one that
//! holds it (tmpfs if /tmp is tmpfs).

use std::ffi::CString;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::child::{cvt, Fd};
use super::harness::Bench;
use super::syscall::cpath;
use super::{mbs, us, BenchOut, Env};

/// Size of the file re-read by the bandwidth benchmarks (and mapped by the
/// mmap latency benchmark): 8 MiB, as LMbench's default.
pub const FILE_SIZE: usize = 8 << 20;

fn names(dir: &std::path::Path, n: u64) -> anyhow::Result<Vec<CString>> {
    (0..n).map(|i| cpath(&dir.join(format!("f{i}")))).collect()
}

fn create_one(c: &CString, data: &[u8]) -> anyhow::Result<()> {
    // SAFETY: valid path; fd closed below.
    let fd = cvt(
        unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0o600,
            )
        },
        "create",
    )?;
    let fd = Fd(fd);
    if !data.is_empty() {
        anyhow::ensure!(
            super::child::raw_write_all(fd.0, data),
            "write: {}",
            std::io::Error::last_os_error()
        );
    }
    drop(fd);
    Ok(())
}

fn unlink(c: &CString) -> anyhow::Result<()> {
    // SAFETY: valid path.
    cvt(unsafe { libc::unlink(c.as_ptr()) }, "unlink")?;
    Ok(())
}

/// Create and delete, measured together as LMbench's lat_fs does: one
/// round creates N files then deletes them, timing each phase.
///
/// Create, one operation: `open(O_CREAT|O_EXCL|O_WRONLY)` of a new name +
/// `write()` of K KB (none for 0 KB) + `close()`. Delete, one operation:
/// `unlink()` of one such file. Names are built before the timed phases.
/// N is calibrated so that both phases last at least the minimum sample
/// time; one warm-up round is discarded; each kept round gives one create
/// and one delete sample (microseconds per file, empty loop subtracted).
pub fn create_delete(env: &Env, kb: usize) -> anyhow::Result<(BenchOut, BenchOut)> {
    let dir = env.tmp.join(format!("fs-{kb}k"));
    std::fs::create_dir_all(&dir)?;
    let data = vec![0x5a; kb * 1024];
    let r = rounds(env, &dir, &data);
    // Leftovers if a round failed midway.
    let _ = std::fs::remove_dir_all(&dir);
    let (c, d) = r?;
    Ok((
        us(c, &format!("create+write+close of a {kb} KB file")),
        us(d, &format!("unlink of a {kb} KB file")),
    ))
}

fn round(dir: &std::path::Path, data: &[u8], n: u64) -> anyhow::Result<(Duration, Duration)> {
    let names = names(dir, n)?;
    let t = Instant::now();
    for c in &names {
        create_one(c, data)?;
    }
    let tc = t.elapsed();
    let t = Instant::now();
    for c in &names {
        unlink(c)?;
    }
    Ok((tc, t.elapsed()))
}

type Samples = (Vec<f64>, Vec<f64>);

fn rounds(env: &Env, dir: &std::path::Path, data: &[u8]) -> anyhow::Result<Samples> {
    let h = &env.h;
    h.check()?;
    round(dir, data, 1)?; // cold, discarded
    let mut n = 1u64;
    // Calibrate, then a discarded warm-up round that must also be long
    // enough (as in `Harness::measure`).
    for _phase in 0..2 {
        loop {
            h.check()?;
            let (tc, td) = round(dir, data, n)?;
            let short = tc.min(td);
            if short >= h.min_sample || n >= 1 << 24 {
                break;
            }
            n = h.grow(n, short);
        }
    }
    let (mut cs, mut ds) = (Vec::new(), Vec::new());
    for _ in 0..h.samples {
        h.check()?;
        let (tc, td) = round(dir, data, n)?;
        cs.push(tc.as_nanos() as f64 / n as f64 - h.empty_loop_ns);
        ds.push(td.as_nanos() as f64 / n as f64 - h.empty_loop_ns);
    }
    Ok((cs, ds))
}

/// The 8 MiB test file, created once per suite run and read once so it is
/// in the page cache.
pub fn test_file(env: &Env) -> anyhow::Result<PathBuf> {
    let p = env.tmp.join("reread-8m");
    if !p.exists() {
        write_test_file(&p)?;
    }
    Ok(p)
}

/// Write the 8 MiB test file in one call and read it back (cached). The
/// way it is written matters: one large write lets the page cache hold it
/// in large folios, and the fault and mapping figures depend on that
/// (`--against-lmbench` gives LMbench a file written by this function).
pub fn write_test_file(p: &std::path::Path) -> anyhow::Result<()> {
    let data: Vec<u8> = (0..FILE_SIZE).map(|i| (i % 251) as u8).collect();
    std::fs::write(p, &data)?;
    black_box(std::fs::read(p)?);
    Ok(())
}

/// Sum a byte region as u64 words (the data touch of the re-read tests).
pub fn sum_words(b: &[u8]) -> u64 {
    b.chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .fold(0u64, |a, x| a.wrapping_add(x))
}

/// One operation: `pread()` of the 8 MiB cached file in 64 KB chunks, each
/// chunk summed (LMbench bw_file_rd io_only also touches what it reads).
struct FileReread {
    fd: Fd,
    buf: Vec<u8>,
}

impl Bench for FileReread {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            let mut off = 0usize;
            while off < FILE_SIZE {
                // SAFETY: buf is a live buffer of its length.
                let r = unsafe {
                    libc::pread(
                        self.fd.0,
                        self.buf.as_mut_ptr().cast(),
                        self.buf.len(),
                        off as libc::off_t,
                    )
                };
                anyhow::ensure!(r > 0, "pread: {}", std::io::Error::last_os_error());
                black_box(sum_words(&self.buf[..r as usize]));
                off += r as usize;
            }
        }
        Ok(iters)
    }
}

pub fn file_reread(env: &Env) -> anyhow::Result<BenchOut> {
    let p = test_file(env)?;
    let c = cpath(&p)?;
    // SAFETY: valid path.
    let fd = Fd(cvt(
        unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) },
        "open",
    )?);
    let mut b = FileReread {
        fd,
        buf: vec![0; 64 * 1024],
    };
    Ok(mbs(
        env.h.measure(&mut b, 0.0)?,
        FILE_SIZE,
        "pread 64 KB chunks of a cached 8 MiB file + sum",
    ))
}

/// Map `len` bytes of `fd` shared read-only.
pub fn map_file(fd: libc::c_int, len: usize, flags: libc::c_int) -> anyhow::Result<*mut u8> {
    // SAFETY: mapping a regular file we opened; caller unmaps.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED | flags,
            fd,
            0,
        )
    };
    anyhow::ensure!(
        p != libc::MAP_FAILED,
        "mmap: {}",
        std::io::Error::last_os_error()
    );
    Ok(p as *mut u8)
}

/// One operation: `mmap()` of the cached 8 MiB file, summing all of it,
/// `munmap()` (LMbench bw_mmap_rd open2close without the open).
struct MmapReread {
    fd: Fd,
}

impl Bench for MmapReread {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            let p = map_file(self.fd.0, FILE_SIZE, 0)?;
            // SAFETY: p maps FILE_SIZE readable bytes until munmap.
            unsafe {
                black_box(sum_words(std::slice::from_raw_parts(p, FILE_SIZE)));
                libc::munmap(p.cast(), FILE_SIZE);
            }
        }
        Ok(iters)
    }
}

pub fn mmap_reread(env: &Env) -> anyhow::Result<BenchOut> {
    let p = test_file(env)?;
    let c = cpath(&p)?;
    // SAFETY: valid path.
    let fd = Fd(cvt(
        unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) },
        "open",
    )?);
    Ok(mbs(
        env.h.measure(&mut MmapReread { fd }, 0.0)?,
        FILE_SIZE,
        "mmap + sum + munmap of a cached 8 MiB file",
    ))
}
