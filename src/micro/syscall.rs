//! System-call latencies: null call, null I/O, stat, fstat, open/close, and
//! the ENOSYS floor. Every value is microseconds per operation with the
//! empty-loop cost subtracted; nothing else is subtracted.
//!
//! stat, fstat and open/close use LMbench lat_syscall's default file,
//! `/usr/include/linux/types.h` (four path components), because the cost of
//! `stat` grows with the number of components the kernel walks: a deeper
//! scratch path measured 1.30x LMbench, the same path 0.95x. Where that file
//! does not exist a file in the scratch directory is used and the detail
//! says so (the depth then differs from LMbench's).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::child::{cvt, Fd};
use super::harness::Bench;
use super::{us, BenchOut, Env};

/// One operation: `getppid()`, a real system call (glibc does not cache it).
struct NullCall;
impl Bench for NullCall {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            // SAFETY: no preconditions.
            std::hint::black_box(unsafe { libc::getppid() });
        }
        Ok(iters)
    }
}

/// Null call: one `getppid()`.
pub fn null_call(env: &Env) -> anyhow::Result<BenchOut> {
    Ok(us(env.h.measure(&mut NullCall, 0.0)?, "getppid()"))
}

/// One operation: `syscall(99999)`, a number no kernel implements, which
/// returns ENOSYS after the kernel entry/exit path and nothing else: the
/// floor under every other system call.
struct Enosys;
impl Bench for Enosys {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            // SAFETY: an unimplemented syscall number has no effect.
            std::hint::black_box(unsafe { libc::syscall(99_999) });
        }
        Ok(iters)
    }
}

/// The kernel entry/exit floor: one invalid system call (ENOSYS).
pub fn enosys(env: &Env) -> anyhow::Result<BenchOut> {
    // SAFETY: as above; check that it really is ENOSYS here (seccomp could
    // turn it into something else).
    let r = unsafe { libc::syscall(99_999) };
    if r != -1 || super::child::errno() != libc::ENOSYS {
        return Ok(BenchOut::Skip(
            "syscall 99999 did not return ENOSYS (seccomp filter?)".into(),
        ));
    }
    Ok(us(
        env.h.measure(&mut Enosys, 0.0)?,
        "syscall(99999) -> ENOSYS",
    ))
}

/// One operation: half of the pair `read(/dev/zero, 1 byte)` +
/// `write(/dev/null, 1 byte)`, i.e. the average of the two, as LMbench.
struct NullIo {
    zero: Fd,
    null: Fd,
}
impl Bench for NullIo {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let mut b = [0u8; 1];
        for _ in 0..iters {
            // SAFETY: valid fds and a 1-byte buffer.
            unsafe {
                if libc::read(self.zero.0, b.as_mut_ptr().cast(), 1) != 1
                    || libc::write(self.null.0, b.as_ptr().cast(), 1) != 1
                {
                    anyhow::bail!("null I/O: {}", std::io::Error::last_os_error());
                }
            }
        }
        Ok(iters * 2)
    }
}

fn open(path: &Path, flags: libc::c_int) -> anyhow::Result<Fd> {
    let c = cpath(path)?;
    // SAFETY: valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    Ok(Fd(cvt(fd, &format!("open {}", path.display()))?))
}

pub fn cpath(p: &Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| anyhow::anyhow!("path {} contains NUL", p.display()))
}

/// Null I/O: average of a 1-byte read of /dev/zero and a 1-byte write to /dev/null.
pub fn null_io(env: &Env) -> anyhow::Result<BenchOut> {
    let mut b = NullIo {
        zero: open(Path::new("/dev/zero"), libc::O_RDONLY)?,
        null: open(Path::new("/dev/null"), libc::O_WRONLY)?,
    };
    Ok(us(
        env.h.measure(&mut b, 0.0)?,
        "avg of read(/dev/zero,1) and write(/dev/null,1)",
    ))
}

/// One operation: `stat()` of a regular file in the scratch directory
/// (path depth as given there; the dentry is cached).
struct Stat(CString);
impl Bench for Stat {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        // SAFETY: zeroed stat is a valid out buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        for _ in 0..iters {
            // SAFETY: valid path and buffer.
            cvt(unsafe { libc::stat(self.0.as_ptr(), &mut st) }, "stat")?;
        }
        Ok(iters)
    }
}

/// One operation: `fstat()` of an open regular file.
struct Fstat(Fd);
impl Bench for Fstat {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        // SAFETY: zeroed stat is a valid out buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        for _ in 0..iters {
            // SAFETY: valid fd and buffer.
            cvt(unsafe { libc::fstat(self.0 .0, &mut st) }, "fstat")?;
        }
        Ok(iters)
    }
}

/// One operation: `open(O_RDONLY)` + `close()` of a regular file.
struct OpenClose(CString);
impl Bench for OpenClose {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            // SAFETY: valid path; the fd is closed at once.
            unsafe {
                let fd = cvt(libc::open(self.0.as_ptr(), libc::O_RDONLY), "open")?;
                libc::close(fd);
            }
        }
        Ok(iters)
    }
}

/// LMbench lat_syscall's default file for stat, fstat and open/close.
pub const LMBENCH_STAT_FILE: &str = "/usr/include/linux/types.h";

/// The file to stat/open, and a note for the detail when it is not
/// LMbench's (a different path depth is a different quantity).
pub fn stat_target(env: &Env) -> anyhow::Result<(std::path::PathBuf, &'static str)> {
    let lm = Path::new(LMBENCH_STAT_FILE);
    if std::fs::metadata(lm).is_ok_and(|m| m.is_file()) {
        return Ok((lm.to_path_buf(), ""));
    }
    let p = env.tmp.join("stat-target");
    if !p.exists() {
        std::fs::write(&p, b"sysdelta")?;
    }
    Ok((
        p,
        "; LMbench's file is absent here, so the path depth differs from LMbench's",
    ))
}

/// Number of components of an absolute path (`/usr/include/linux/types.h`: 4).
pub fn path_depth(p: &Path) -> usize {
    p.components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .count()
}

pub fn stat(env: &Env) -> anyhow::Result<BenchOut> {
    let (p, note) = stat_target(env)?;
    let d = format!("stat({}), {} components{note}", p.display(), path_depth(&p));
    Ok(us(env.h.measure(&mut Stat(cpath(&p)?), 0.0)?, &d))
}

pub fn fstat(env: &Env) -> anyhow::Result<BenchOut> {
    let (p, _) = stat_target(env)?;
    let mut b = Fstat(open(&p, libc::O_RDONLY)?);
    let d = format!("fstat of open {}", p.display());
    Ok(us(env.h.measure(&mut b, 0.0)?, &d))
}

pub fn open_close(env: &Env) -> anyhow::Result<BenchOut> {
    let (p, note) = stat_target(env)?;
    let d = format!(
        "open(O_RDONLY)+close({}), {} components{note}",
        p.display(),
        path_depth(&p)
    );
    Ok(us(env.h.measure(&mut OpenClose(cpath(&p)?), 0.0)?, &d))
}
