//! A child's peak resident memory, as the benches read it: its `VmHWM`
//! from /proc (its own address space's high-water mark), looked at every
//! few milliseconds until it exits. `ru_maxrss` from `wait4` would carry
//! the bench's own peak across the spawn.

/// `pid`'s `VmHWM` in KiB now; 0 once it has exited (or before /proc
/// shows it).
pub fn vm_hwm_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0)
}

/// Wait for `child`, looking at its `VmHWM` every 2 ms: its exit status and
/// peak in KiB. The exit is seen up to 2 ms late.
#[allow(dead_code)] // history_growth reaps with wait4 for the CPU time
pub fn wait_with_peak(child: &mut std::process::Child) -> (std::process::ExitStatus, u64) {
    let pid = child.id();
    let mut peak_kib = 0u64;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, peak_kib);
        }
        peak_kib = peak_kib.max(vm_hwm_kib(pid));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}
