//! Minimal perf_event_open sampling: one software cpu-clock event per CPU
//! (works without a PMU, as on VMs), sampling IP and pid/tid into an mmap'd
//! ring buffer that the monitor thread drains.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

use crate::sys::perf::{
    perf_event_open, PerfEventAttr, FLAG_DISABLED, FLAG_EXCLUDE_HV, PERF_RECORD_LOST,
    PERF_RECORD_SAMPLE, PERF_TYPE_SOFTWARE,
};

const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
const PERF_RECORD_MISC_KERNEL: u16 = 1;
/// Offsets of data_head / data_tail / data_offset / data_size in
/// struct perf_event_mmap_page (stable kernel ABI).
const HEAD_OFF: usize = 1024;
const TAIL_OFF: usize = 1032;
const DATA_OFF_OFF: usize = 1040;
const DATA_SIZE_OFF: usize = 1048;

/// Online CPUs from /sys/devices/system/cpu/online ("0-3,5").
pub fn online_cpus() -> io::Result<Vec<usize>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(s.trim())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("cpu list {s:?}")))
}

pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// Open a disabled cpu-clock sampling event on `cpu` for all tasks, one
/// sample every `period_ns` of CPU-clock time.
pub fn open_cpu_clock(cpu: usize, period_ns: u64) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        sample_period: period_ns,
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID,
        flags: FLAG_DISABLED | FLAG_EXCLUDE_HV,
        ..PerfEventAttr::new(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK)
    };
    perf_event_open(&attr, -1, cpu as i32)
}

/// What one drained sample says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawSample {
    pub ip: u64,
    pub pid: u32,
    pub kernel: bool,
}

/// One CPU's event and its mapped ring buffer.
pub struct Ring {
    fd: OwnedFd,
    base: *mut u8,
    map_len: usize,
    data_off: usize,
    data_size: usize,
    /// PERF_RECORD_LOST totals: samples the kernel dropped (ring full).
    pub lost: u64,
}

// SAFETY: the mapping is owned by this Ring and only touched through &mut.
unsafe impl Send for Ring {}

impl Ring {
    /// Map `data_pages` (a power of two) pages of ring after the header page.
    pub fn new(fd: OwnedFd, data_pages: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let map_len = page * (1 + data_pages);
        // SAFETY: mapping a perf fd as the kernel documents; checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base as *mut u8;
        // SAFETY: the header page is mapped; these are u64 fields in it.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(DATA_OFF_OFF) as *const u64) as usize,
                std::ptr::read_volatile(base.add(DATA_SIZE_OFF) as *const u64) as usize,
            )
        };
        let (data_off, data_size) = if size == 0 {
            (page, page * data_pages)
        } else {
            (off, size)
        };
        Ok(Ring {
            fd,
            base,
            map_len,
            data_off,
            data_size,
            lost: 0,
        })
    }

    pub fn enable(&self) -> io::Result<()> {
        self.ioctl(PERF_EVENT_IOC_ENABLE)
    }

    pub fn disable(&self) -> io::Result<()> {
        self.ioctl(PERF_EVENT_IOC_DISABLE)
    }

    fn ioctl(&self, req: libc::c_ulong) -> io::Result<()> {
        // SAFETY: a perf ioctl without argument on our own fd.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), req as _, 0) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Copy `len` bytes at ring position `pos` (wrapping) into `dst`.
    fn copy_out(&self, pos: u64, dst: &mut [u8]) {
        let start = (pos % self.data_size as u64) as usize;
        let first = dst.len().min(self.data_size - start);
        // SAFETY: both ranges lie inside the mapped data area.
        unsafe {
            let data = self.base.add(self.data_off);
            std::ptr::copy_nonoverlapping(data.add(start), dst.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, dst.as_mut_ptr().add(first), dst.len() - first);
        }
    }

    /// Hand every complete record now in the ring to `f` and release it.
    pub fn drain(&mut self, mut f: impl FnMut(RawSample)) {
        // SAFETY: header fields of the mapped control page.
        let head = unsafe { std::ptr::read_volatile(self.base.add(HEAD_OFF) as *const u64) };
        fence(Ordering::Acquire); // read records only after reading head
        let mut tail = unsafe { std::ptr::read_volatile(self.base.add(TAIL_OFF) as *const u64) };
        let mut rec = [0u8; 64];
        while tail + 8 <= head {
            self.copy_out(tail, &mut rec[..8]);
            let typ = u32::from_ne_bytes(rec[0..4].try_into().unwrap());
            let misc = u16::from_ne_bytes(rec[4..6].try_into().unwrap());
            let size = u16::from_ne_bytes(rec[6..8].try_into().unwrap()) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            let body = (size as usize).min(rec.len());
            self.copy_out(tail, &mut rec[..body]);
            let u64_at = |o: usize| u64::from_ne_bytes(rec[o..o + 8].try_into().unwrap());
            match typ {
                PERF_RECORD_SAMPLE if body >= 24 => f(RawSample {
                    ip: u64_at(8),
                    pid: u32::from_ne_bytes(rec[16..20].try_into().unwrap()),
                    kernel: misc & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL,
                }),
                PERF_RECORD_LOST if body >= 24 => self.lost += u64_at(16),
                _ => {}
            }
            tail += size;
        }
        fence(Ordering::Release); // finish reading before handing space back
                                  // SAFETY: data_tail is ours to write.
        unsafe { std::ptr::write_volatile(self.base.add(TAIL_OFF) as *mut u64, tail) };
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        let _ = self.disable();
        // SAFETY: unmapping exactly what new() mapped.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.map_len) };
    }
}
