//! Process creation: fork+exit, fork+execve, fork+/bin/sh -c. Values are
//! microseconds per operation (from fork until the parent's waitpid
//! returns), empty-loop cost subtracted, nothing else.

use std::ffi::CString;

use super::child::{decode_status, wait_pid};
use super::harness::Bench;
use super::{us, BenchOut, Env};

/// The program executed by the exec benchmarks. LMbench uses its own tiny
/// `hello`; we use /bin/true (dynamically linked, so a little dearer).
pub const EXEC_TARGET: &str = "/bin/true";

/// One operation: `fork()`, the child `_exit(0)`s, the parent `waitpid`s.
/// Or, with `argv`, the child `execve`s argv (environment inherited).
struct Spawn {
    argv: Option<Vec<CString>>,
}

impl Bench for Spawn {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let ptrs: Option<Vec<*const libc::c_char>> = self.argv.as_ref().map(|a| {
            a.iter()
                .map(|c| c.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        });
        extern "C" {
            static environ: *const *const libc::c_char;
        }
        for _ in 0..iters {
            // SAFETY: the child only calls execve/_exit.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                anyhow::bail!("fork: {}", std::io::Error::last_os_error());
            }
            if pid == 0 {
                // SAFETY: prepared NUL-terminated argv; only async-signal-safe calls.
                unsafe {
                    if let Some(p) = &ptrs {
                        libc::execve(p[0], p.as_ptr(), environ);
                        libc::_exit(127);
                    }
                    libc::_exit(0);
                }
            }
            let st = decode_status(wait_pid(pid)?);
            anyhow::ensure!(st == 0, "child exited with status {st}");
        }
        Ok(iters)
    }
}

pub fn fork_exit(env: &Env) -> anyhow::Result<BenchOut> {
    Ok(us(
        env.h.measure(&mut Spawn { argv: None }, 0.0)?,
        "fork + _exit + waitpid",
    ))
}

pub fn fork_exec(env: &Env) -> anyhow::Result<BenchOut> {
    if !std::path::Path::new(EXEC_TARGET).exists() {
        return Ok(BenchOut::Skip(format!("{EXEC_TARGET} not found")));
    }
    let argv = vec![CString::new(EXEC_TARGET)?];
    Ok(us(
        env.h.measure(&mut Spawn { argv: Some(argv) }, 0.0)?,
        "fork + execve(/bin/true) + waitpid",
    ))
}

pub fn fork_sh(env: &Env) -> anyhow::Result<BenchOut> {
    // Presence of /bin/sh is checked by the suite preflight (bad input).
    if !std::path::Path::new(EXEC_TARGET).exists() {
        return Ok(BenchOut::Skip(format!("{EXEC_TARGET} not found")));
    }
    let argv = vec![
        CString::new("/bin/sh")?,
        CString::new("-c")?,
        CString::new(EXEC_TARGET)?,
    ];
    Ok(us(
        env.h.measure(&mut Spawn { argv: Some(argv) }, 0.0)?,
        "fork + execve(/bin/sh -c /bin/true) + waitpid",
    ))
}
