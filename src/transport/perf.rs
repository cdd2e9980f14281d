//! perf: records as ftrace:print tracepoint samples in a perf mmap ring.
//!
//! Before offering this transport we check that the kernel actually turns a
//! trace_marker write into an ftrace:print event perf can see: we open a
//! counting perf event on ftrace:print for this thread, write one record to a
//! private instance's trace_marker, and read the count. Kernels that keep
//! trace_marker writes inside the ftrace ring (6.18 here counts 0) make the
//! transport skipped with that reason. The sampling consumer itself is not
//! built yet, so even a kernel that passes the check skips it, saying so.

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};

use super::ftrace::print_event_id;
use super::tracefs::{Instance, Tracefs};

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Ok(()) when perf delivers trace_marker writes; Err(reason) otherwise.
pub fn probe(fs: &Tracefs) -> Result<(), String> {
    let id = print_event_id(fs).ok_or("no events/ftrace/print/id in tracefs")?;
    // perf_event_attr (PERF_ATTR_SIZE_VER5 = 112 bytes): type, size, config;
    // all other fields zero = a counting, enabled event.
    let mut attr = [0u64; 14];
    attr[0] = PERF_TYPE_TRACEPOINT as u64 | (112u64 << 32);
    attr[1] = id as u64;
    // SAFETY: attr is a valid perf_event_attr of the stated size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(format!(
            "perf_event_open(ftrace:print): {}",
            std::io::Error::last_os_error()
        ));
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let inst = Instance::create(fs).map_err(|e| format!("ftrace instance: {e}"))?;
    let wrote = std::fs::OpenOptions::new()
        .write(true)
        .open(inst.path("trace_marker"))
        .and_then(|mut f| f.write_all(b"sysdelta perf probe\n"));
    if let Err(e) = wrote {
        return Err(format!("trace_marker write for the perf probe: {e}"));
    }
    let mut count = 0u64;
    // SAFETY: reading one u64 counter value.
    let n = unsafe {
        libc::read(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            (&mut count as *mut u64).cast(),
            8,
        )
    };
    drop(inst);
    if n != 8 {
        return Err("reading the ftrace:print perf counter failed".into());
    }
    if count == 0 {
        return Err(
            "this kernel does not deliver trace_marker writes to perf (ftrace:print counted 0 of 1 writes)"
                .into(),
        );
    }
    Err(
        "kernel delivers ftrace:print to perf, but the perf mmap-ring consumer is not built yet"
            .into(),
    )
}
