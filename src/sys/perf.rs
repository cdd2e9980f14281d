//! `perf_event_open(2)`: the attribute struct and the call, shared by the
//! profile monitor (cpu-clock sampling per CPU) and the perf transport
//! (a tracepoint stream per thread).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
pub const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// Bits of [`PerfEventAttr::flags`] (the C bit-field, first bit first).
pub const FLAG_DISABLED: u64 = 1 << 0;
pub const FLAG_EXCLUDE_HV: u64 = 1 << 6;
/// `wakeup_events` counts bytes (`wakeup_watermark`) when set.
pub const FLAG_WATERMARK: u64 = 1 << 14;
pub const PERF_RECORD_LOST: u32 = 2;
pub const PERF_RECORD_SAMPLE: u32 = 9;

/// struct perf_event_attr up to PERF_ATTR_SIZE_VER5 (112 bytes): new enough
/// for every field used here, old enough for every kernel we run on.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfEventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    /// `wakeup_events`, or `wakeup_watermark` in bytes with [`FLAG_WATERMARK`].
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved2: u16,
}

impl PerfEventAttr {
    /// An attribute of `type_` and `config` whose `size` is set, the rest zero.
    pub fn new(type_: u32, config: u64) -> PerfEventAttr {
        PerfEventAttr {
            type_,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            ..Default::default()
        }
    }
}

/// Open an event for `pid` (-1: every task) on `cpu` (-1: any CPU), with
/// close-on-exec and no group.
pub fn perf_event_open(attr: &PerfEventAttr, pid: libc::pid_t, cpu: i32) -> io::Result<OwnedFd> {
    // SAFETY: attr is a valid, fully initialised perf_event_attr of the size
    // it declares; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_is_ver5_sized() {
        // PERF_ATTR_SIZE_VER5: the kernel reads exactly this many bytes.
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);
        assert_eq!(PerfEventAttr::new(PERF_TYPE_SOFTWARE, 0).size, 112);
    }
}
