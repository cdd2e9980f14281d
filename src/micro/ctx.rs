//! Context switching, as LMbench's lat_ctx: N processes in a ring of pipes
//! pass a 1-byte token; each process, on receiving it, touches its own K KB
//! of private data and passes it on.
//!
//! One operation: one hop of the token (one process wakes, reads, touches
//! its K KB, writes). The touch reads one u64 per 64-byte line, which
//! brings all K KB into the cache as LMbench's sum of every word does,
//! without LMbench's arithmetic (which is subtracted as overhead anyway).
//!
//! Reported: microseconds per hop = ring-pass time / N, minus the measured
//! in-process cost of one hop without a switch (1-byte pipe write and read
//! in one process plus touching K KB that is already in cache; the fastest
//! of its samples, measured once per size and suite run), minus the empty
//! loop. What remains is the switch itself plus the cache misses it causes
//! on the private data, which is why larger K and more processes cost
//! more. The parent is ring member 0, so N processes = the parent and N-1
//! children. Unpinned on several CPUs, ring members may sit on different
//! CPUs, and a hop is then a cross-CPU wake-up, not a switch; `--pin
//! same-cpu` measures switches only.

use std::hint::black_box;

use super::child::{pipe, raw_read_exact, raw_write_all, Child, Fd};
use super::harness::Bench;
use super::{us, BenchOut, Env};

/// Sum one u64 per 64-byte line of `words` u64s at `p` (the data touch).
///
/// # Safety
/// `p` must point to `words` readable u64s (or `words` be 0).
#[inline(never)]
unsafe fn touch(p: *const u64, words: usize) -> u64 {
    let mut s = 0u64;
    let mut i = 0;
    while i < words {
        s = s.wrapping_add(*p.add(i));
        i += 8;
    }
    s
}

/// Map and fill `kb` KB of private anonymous memory with raw syscalls
/// (usable in a forked child). Null for 0 KB.
fn private_data(kb: usize, seed: u64) -> *mut u64 {
    if kb == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: fresh private anonymous mapping, filled within its length.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            kb * 1024,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let w = p as *mut u64;
        for i in 0..kb * 128 {
            *w.add(i) = seed.wrapping_add(i as u64);
        }
        w
    }
}

struct Hop {
    rd: Fd,
    wr: Fd,
    data: Vec<u64>,
}

/// The per-hop work without a switch: touch K KB, write 1 byte, read it back.
impl Bench for Hop {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let mut t = [0u8; 1];
        for _ in 0..iters {
            // SAFETY: data is a live Vec.
            black_box(unsafe { touch(self.data.as_ptr(), self.data.len()) });
            anyhow::ensure!(raw_write_all(self.wr.0, &t), "pipe write");
            anyhow::ensure!(raw_read_exact(self.rd.0, &mut t), "pipe read");
        }
        Ok(iters)
    }
}

struct Ring {
    procs: usize,
    first_wr: libc::c_int,
    last_rd: libc::c_int,
    data: Vec<u64>,
    _children: Vec<Child>,
    _pipes: Vec<(Fd, Fd)>,
}

impl Bench for Ring {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let mut t = [0u8; 1];
        for _ in 0..iters {
            // SAFETY: data is a live Vec.
            black_box(unsafe { touch(self.data.as_ptr(), self.data.len()) });
            anyhow::ensure!(raw_write_all(self.first_wr, &t), "ring write");
            anyhow::ensure!(raw_read_exact(self.last_rd, &mut t), "ring read");
        }
        Ok(iters * self.procs as u64)
    }
}

pub fn ctx(env: &Env, procs: usize, kb: usize) -> anyhow::Result<BenchOut> {
    anyhow::ensure!(procs >= 2, "context switch ring needs at least 2 processes");
    let words = kb * 128;
    // The hop overhead is measured with the same harness settings, once per
    // data size and suite run.
    let cached = env.ctx_overhead.borrow().get(&kb).copied();
    let overhead = match cached {
        Some(o) => o,
        None => {
            let (r, w) = pipe()?;
            let mut hop = Hop {
                rd: r,
                wr: w,
                data: (0..words as u64).collect(),
            };
            // The fastest sample: this is a fixed in-process cost that
            // outside load can only inflate, and an inflated overhead would
            // be subtracted from every ring of this size.
            let o = env
                .h
                .measure(&mut hop, 0.0)?
                .into_iter()
                .fold(f64::INFINITY, f64::min);
            env.ctx_overhead.borrow_mut().insert(kb, o);
            o
        }
    };

    let mut pipes = Vec::with_capacity(procs);
    for _ in 0..procs {
        pipes.push(pipe()?);
    }
    let mut children = Vec::with_capacity(procs - 1);
    for i in 1..procs {
        let rd = pipes[i].0 .0;
        let wr = pipes[(i + 1) % procs].1 .0;
        children.push(Child::spawn(None, move || {
            let data = private_data(kb, i as u64);
            let n = if data.is_null() { 0 } else { words };
            let mut t = [0u8; 1];
            loop {
                if !raw_read_exact(rd, &mut t) {
                    return 0;
                }
                // SAFETY: data maps n words (or n is 0).
                black_box(unsafe { touch(data, n) });
                if !raw_write_all(wr, &t) {
                    return 0;
                }
            }
        })?);
    }
    let mut ring = Ring {
        procs,
        first_wr: pipes[1 % procs].1 .0,
        last_rd: pipes[0].0 .0,
        data: (0..words as u64).collect(),
        _children: children,
        _pipes: pipes,
    };
    let v = env.h.measure(&mut ring, overhead)?;
    Ok(us(
        v,
        &format!(
            "{procs} processes, {kb} KB each, hop overhead {:.3} us subtracted",
            overhead / 1e3
        ),
    ))
}
