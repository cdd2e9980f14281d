//! The catalogue of micro benchmarks: stable metric names, the LMbench 2.0
//! summary group and column each belongs to (the filter that selects
//! among them is selection.rs).

use crate::metric::Direction;

use super::pin::Pinning;

/// The LMbench 2.0 summary tables (plus sysdelta's additions at the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Table {
    Proc,
    Select,
    /// Context switching with this many KB of private data.
    Ctx(usize),
    FsVm,
    Lat,
    LatPinned,
    Bw,
    BwPinned,
    MemLat,
    Sem,
    Floor,
}

/// What to run for one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    NullCall,
    NullIo,
    Stat,
    Fstat,
    OpenClose,
    SigInstall,
    SigHandle,
    ForkExit,
    ForkExec,
    ForkSh,
    Select {
        tcp: bool,
        n: usize,
    },
    Ctx {
        procs: usize,
        kb: usize,
    },
    PipeLat,
    UnixLat,
    UdpLat,
    TcpLat,
    TcpConnect,
    PipeBw,
    UnixBw,
    TcpBw,
    FileReread,
    MmapReread,
    BcopyLibc,
    BcopyHand,
    MemRead,
    MemWrite,
    /// sysdelta's peak read/write: huge pages, every u64.
    MemReadHuge,
    MemWriteHuge,
    Create {
        kb: usize,
    },
    Delete {
        kb: usize,
    },
    MmapLat,
    ProtFault,
    /// LMbench's page fault: per page.
    PageFault,
    /// sysdelta's page fault: per fault.
    FaultEach,
    /// Pointer-chase latency at cache level 1, 2, 3, or 0 for main memory.
    MemLat {
        level: u8,
    },
    SemPingPong,
    SemRing(RingMetric),
    Enosys,
}

/// The three figures semopbench reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingMetric {
    Seconds,
    UsPerProc,
    CpuUtil,
}

/// One selectable metric.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub group: &'static str,
    pub table: Table,
    /// Two header lines as in the LMbench summary ("null", "call").
    pub head: (String, String),
    pub unit: &'static str,
    pub direction: Direction,
    /// Fixed placement for IPC variants; None: the suite-wide setting.
    pub pinning: Option<Pinning>,
    pub kind: Kind,
    /// Printed under the tables when this metric is shown: how its
    /// definition differs from the LMbench figure of the same or a
    /// neighbouring name. None: the same quantity as LMbench 3 (or no
    /// LMbench counterpart, as for sem.* and floor.*).
    pub note: Option<&'static str>,
}

impl Entry {
    /// Column text, e.g. "null call".
    pub fn column(&self) -> String {
        format!("{} {}", self.head.0, self.head.1)
            .trim()
            .to_string()
    }
}

pub const SELECT_SIZES: [usize; 4] = [10, 100, 250, 500];
pub const CTX_PROCS: [usize; 7] = [2, 4, 8, 16, 32, 64, 96];
pub const CTX_KB: [usize; 6] = [0, 4, 8, 16, 32, 64];
pub const FS_KB: [usize; 4] = [0, 1, 4, 10];

fn e(
    name: impl Into<String>,
    group: &'static str,
    table: Table,
    h1: &str,
    h2: &str,
    unit: &'static str,
    kind: Kind,
) -> Entry {
    let direction = if unit == "MB/s" {
        Direction::Higher
    } else {
        Direction::Lower
    };
    Entry {
        name: name.into(),
        group,
        table,
        head: (h1.to_string(), h2.to_string()),
        unit,
        direction,
        pinning: None,
        kind,
        note: None,
    }
}

/// The notes of metrics whose definition is not LMbench 3's (see
/// docs/micro.md for the figures behind them).
fn note(name: &str) -> Option<&'static str> {
    Some(match name {
        "proc.fork_exit" => "same definition as lat_proc fork (fork, child _exit, parent waitpid), but lat_proc's own harness is the outlier (0.64-0.74x): a plain C fork/_exit/waitpid loop agrees with sysdelta (figures: docs/micro.md)",
        "proc.fork_exec" => "execs /bin/true (dynamically linked); lat_proc execs its own /tmp/hello",
        "proc.fork_sh" => "/bin/sh -c /bin/true; lat_proc shell runs /tmp/hello through /bin/sh",
        "vm.page_fault.per_fault" => "sysdelta's own: per fault counted by ru_minflt (MADV_RANDOM, re-read cost subtracted); LMbench's Page Fault is per page, several pages per fault by fault-around",
        "bw.mem_read.huge" => "sysdelta's own peak: MADV_HUGEPAGE and every u64 summed; LMbench rd reads every fourth int on default pages",
        "bw.mem_write.huge" => "sysdelta's own peak: MADV_HUGEPAGE and every u64 stored; LMbench wr stores every fourth int on default pages",
        "lat.tcp_connect" => "waits for the peer's accept and closes with RST; lat_connect does neither",
        _ if name.starts_with("mem.") => "pointer chase over every cache line with MADV_HUGEPAGE; lat_mem_rd uses a fixed stride on default pages",
        _ => return None,
    })
}

/// Every metric, in report order: the families in the order of the
/// LMbench summary's tables, sysdelta's additions last.
pub fn catalog() -> Vec<Entry> {
    let mut v = Vec::new();
    for family in [proc, select, ctx, fs_vm, lat, bw, mem, sem, floor] {
        family(&mut v);
    }
    // Which way is good for CPU utilisation is not obvious; for a fixed
    // amount of work less CPU is better.
    for x in &mut v {
        x.note = note(&x.name);
    }
    v
}

/// Processes: system calls, signals, process creation (µs).
fn proc(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let us = "us";
    for (n, h1, h2, k) in [
        ("null_call", "null", "call", NullCall),
        ("null_io", "null", "I/O", NullIo),
        ("stat", "", "stat", Stat),
        ("fstat", "", "fstat", Fstat),
        ("open_close", "open", "close", OpenClose),
        ("sig_install", "signal", "install", SigInstall),
        ("sig_handle", "signal", "handle", SigHandle),
        ("fork_exit", "fork", "process", ForkExit),
        ("fork_exec", "execve", "process", ForkExec),
        ("fork_sh", "/bin/sh", "process", ForkSh),
    ] {
        v.push(e(format!("proc.{n}"), "proc", T::Proc, h1, h2, us, k));
    }
}

/// select(2) on files and TCP sockets (µs).
fn select(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let us = "us";
    for tcp in [false, true] {
        for n in SELECT_SIZES {
            let (what, h2) = if tcp {
                ("tcp", format!("{n} tcp"))
            } else {
                ("file", format!("{n} fd"))
            };
            v.push(e(
                format!("select.{what}_{n}"),
                "select",
                T::Select,
                "select",
                &h2,
                us,
                Select { tcp, n },
            ));
        }
    }
}

/// Context switches, by processes and private data (µs).
fn ctx(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let us = "us";
    for kb in CTX_KB {
        for p in CTX_PROCS {
            v.push(e(
                format!("ctx.{p}p_{kb}k"),
                "ctx",
                T::Ctx(kb),
                &format!("{p}proc/{kb}k"),
                "ctx swtch",
                us,
                Ctx { procs: p, kb },
            ));
        }
    }
}

/// File create and delete, and the VM latencies (µs).
fn fs_vm(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let us = "us";
    for kb in FS_KB {
        v.push(e(
            format!("fs.create_{kb}k"),
            "fs",
            T::FsVm,
            &format!("{kb}K"),
            "Create",
            us,
            Create { kb },
        ));
        v.push(e(
            format!("fs.delete_{kb}k"),
            "fs",
            T::FsVm,
            &format!("{kb}K"),
            "Delete",
            us,
            Delete { kb },
        ));
    }
    v.push(e("vm.mmap", "vm", T::FsVm, "Mmap", "Latency", us, MmapLat));
    v.push(e(
        "vm.prot_fault",
        "vm",
        T::FsVm,
        "Prot",
        "Fault",
        us,
        ProtFault,
    ));
    v.push(e(
        "vm.page_fault",
        "vm",
        T::FsVm,
        "Page",
        "Fault",
        us,
        PageFault,
    ));
    v.push(e(
        "vm.page_fault.per_fault",
        "vm",
        T::FsVm,
        "Fault",
        "(each)",
        us,
        FaultEach,
    ));
}

/// Local communication latencies, unpinned and pinned (µs).
fn lat(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let us = "us";
    let ipc_lat = [
        ("pipe", "Pipe", PipeLat),
        ("unix", "AF/Unix", UnixLat),
        ("udp", "UDP", UdpLat),
        ("tcp", "TCP", TcpLat),
    ];
    for (n, h, k) in ipc_lat {
        let mut x = e(format!("lat.{n}"), "lat", T::Lat, "", h, us, k);
        x.pinning = Some(Pinning::Unpinned);
        v.push(x);
    }
    v.push(e(
        "lat.tcp_connect",
        "lat",
        T::Lat,
        "",
        "TCPconn",
        us,
        TcpConnect,
    ));
    for (n, h, k) in ipc_lat {
        for (p, suffix, h1) in [
            (Pinning::SameCpu, "same_cpu", "same"),
            (Pinning::CrossCpu, "cross_cpu", "cross"),
        ] {
            let mut x = e(
                format!("lat.{n}.{suffix}"),
                "lat",
                T::LatPinned,
                h,
                h1,
                us,
                k,
            );
            x.pinning = Some(p);
            v.push(x);
        }
    }
}

/// Bandwidths: local communication, file and memory (MB/s).
fn bw(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let mbs = "MB/s";
    let ipc_bw = [
        ("pipe", "Pipe", PipeBw),
        ("unix", "AF/Unix", UnixBw),
        ("tcp", "TCP", TcpBw),
    ];
    for (n, h, k) in ipc_bw {
        let mut x = e(format!("bw.{n}"), "bw", T::Bw, "", h, mbs, k);
        x.pinning = Some(Pinning::Unpinned);
        v.push(x);
    }
    for (n, h1, h2, k) in [
        ("file_reread", "File", "reread", FileReread),
        ("mmap_reread", "Mmap", "reread", MmapReread),
        ("bcopy_libc", "Bcopy", "(libc)", BcopyLibc),
        ("bcopy_hand", "Bcopy", "(hand)", BcopyHand),
        ("mem_read", "Memory", "read", MemRead),
        ("mem_read.huge", "Mem rd", "(huge)", MemReadHuge),
        ("mem_write", "Memory", "write", MemWrite),
        ("mem_write.huge", "Mem wr", "(huge)", MemWriteHuge),
    ] {
        v.push(e(format!("bw.{n}"), "bw", T::Bw, h1, h2, mbs, k));
    }
    for (n, h, k) in ipc_bw {
        for (p, suffix, h1) in [
            (Pinning::SameCpu, "same_cpu", "same"),
            (Pinning::CrossCpu, "cross_cpu", "cross"),
        ] {
            let mut x = e(format!("bw.{n}.{suffix}"), "bw", T::BwPinned, h, h1, mbs, k);
            x.pinning = Some(p);
            v.push(x);
        }
    }
}

/// Memory latencies by cache level (ns).
fn mem(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    for (n, h1, h2, level) in [
        ("l1", "L1", "$", 1),
        ("l2", "L2", "$", 2),
        ("l3", "L3", "$", 3),
        ("main", "Main", "mem", 0),
    ] {
        v.push(e(
            format!("mem.{n}"),
            "mem",
            T::MemLat,
            h1,
            h2,
            "ns",
            MemLat { level },
        ));
    }
}

/// Semaphores: ping-pong and the semopbench ring.
fn sem(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let us = "us";
    for (p, n, h2) in [
        (Pinning::Unpinned, "sem.pingpong", "pingpong"),
        (Pinning::SameCpu, "sem.pingpong.same_cpu", "same"),
        (Pinning::CrossCpu, "sem.pingpong.cross_cpu", "cross"),
    ] {
        let mut x = e(n, "sem", T::Sem, "semop", h2, us, SemPingPong);
        x.pinning = Some(p);
        v.push(x);
    }
    v.push(e(
        "sem.ring.seconds",
        "sem",
        T::Sem,
        "semring",
        "s/rep",
        "s",
        SemRing(RingMetric::Seconds),
    ));
    v.push(e(
        "sem.ring.us_per_proc",
        "sem",
        T::Sem,
        "semring",
        "us/proc",
        us,
        SemRing(RingMetric::UsPerProc),
    ));
    v.push(e(
        "sem.ring.cpu_util",
        "sem",
        T::Sem,
        "semring",
        "CPU %",
        "%",
        SemRing(RingMetric::CpuUtil),
    ));
}

/// The floor of a system call (µs).
fn floor(v: &mut Vec<Entry>) {
    use Kind::*;
    use Table as T;
    let us = "us";
    v.push(e(
        "floor.enosys",
        "floor",
        T::Floor,
        "ENOSYS",
        "syscall",
        us,
        Enosys,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_unique() {
        let c = catalog();
        let mut n: Vec<_> = c.iter().map(|e| e.name.clone()).collect();
        n.sort();
        let before = n.len();
        n.dedup();
        assert_eq!(before, n.len());
    }
}
