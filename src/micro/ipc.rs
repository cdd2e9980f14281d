//! Pipe and AF_UNIX stream latency and bandwidth between the measuring
//! process and one forked peer, placed per [`Pinning`].
//!
//! Latency, one operation: one round trip of 1 byte (parent writes, peer
//! reads and writes it back, parent reads), as LMbench lat_pipe/lat_unix
//! and `perf bench sched pipe` (both report per round trip). Microseconds,
//! empty loop subtracted.
//!
//! Bandwidth, one operation: the parent reading 64 KB (read() until 64 KB
//! arrived) while the peer writes 64 KB chunks without pause, so the
//! channel is always full and the read rate is the transfer rate. MB/s
//! (MB = 2^20 bytes), empty loop subtracted from the time.

use super::child::{cvt, pipe, raw_read_exact, raw_write_all, Child, Fd};
use super::harness::Bench;
use super::pin::{place, Pinning};
use super::{mbs, us, BenchOut, Env};

pub const CHUNK: usize = 64 * 1024;

/// Round trips over (to_peer, from_peer).
pub struct PingPong {
    pub to_peer: libc::c_int,
    pub from_peer: libc::c_int,
}

impl Bench for PingPong {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let mut b = [0u8; 1];
        for _ in 0..iters {
            anyhow::ensure!(raw_write_all(self.to_peer, &b), "write to peer failed");
            anyhow::ensure!(raw_read_exact(self.from_peer, &mut b), "peer went away");
        }
        Ok(iters)
    }
}

/// Reading 64 KB chunks from a peer that writes without pause.
pub struct Drain {
    pub fd: libc::c_int,
    pub buf: Vec<u8>,
}

impl Bench for Drain {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            anyhow::ensure!(raw_read_exact(self.fd, &mut self.buf), "peer went away");
        }
        Ok(iters)
    }
}

/// The peer of a latency benchmark: echo single bytes until EOF.
pub fn echo_child(rd: libc::c_int, wr: libc::c_int) -> impl FnOnce() -> i32 {
    move || {
        let mut b = [0u8; 1];
        while raw_read_exact(rd, &mut b) {
            if !raw_write_all(wr, &b) {
                break;
            }
        }
        0
    }
}

/// The peer of a bandwidth benchmark: write 64 KB chunks until the reader
/// goes away. The chunk lives on the child's stack (no allocation).
pub fn flood_child(wr: libc::c_int) -> impl FnOnce() -> i32 {
    move || {
        let b = [7u8; CHUNK];
        while raw_write_all(wr, &b) {}
        0
    }
}

fn socketpair() -> anyhow::Result<(Fd, Fd)> {
    let mut s = [0; 2];
    // SAFETY: s has room for two descriptors.
    cvt(
        unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                s.as_mut_ptr(),
            )
        },
        "socketpair",
    )?;
    Ok((Fd(s[0]), Fd(s[1])))
}

pub fn pipe_lat(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let (a_rd, a_wr) = pipe()?;
    let (b_rd, b_wr) = pipe()?;
    let child = (a_rd.0, b_wr.0);
    round_trip(
        env,
        pl,
        child,
        (a_wr.0, b_rd.0),
        "1-byte round trip over two pipes",
    )
}

pub fn unix_lat(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let (s0, s1) = socketpair()?;
    let what = "1-byte round trip over an AF_UNIX stream socketpair";
    round_trip(env, pl, (s1.0, s1.0), (s0.0, s0.0), what)
}

/// One byte to an echoing child and back: the child reads `child.0` and
/// writes `child.1`; this process writes `ours.0` and reads `ours.1`. The
/// caller keeps the descriptors open until this returns.
fn round_trip(
    env: &Env,
    pl: crate::micro::pin::Placement,
    child: (i32, i32),
    ours: (i32, i32),
    what: &str,
) -> anyhow::Result<BenchOut> {
    let _c = Child::spawn(pl.child, echo_child(child.0, child.1))?;
    let mut b = PingPong {
        to_peer: ours.0,
        from_peer: ours.1,
    };
    Ok(us(env.h.measure(&mut b, 0.0)?, what))
}

pub fn pipe_bw(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let (rd, wr) = pipe()?;
    let _c = Child::spawn(pl.child, flood_child(wr.0))?;
    drop(wr);
    let mut b = Drain {
        fd: rd.0,
        buf: vec![0; CHUNK],
    };
    Ok(mbs(env.h.measure(&mut b, 0.0)?, CHUNK, "pipe, 64 KB reads"))
}

pub fn unix_bw(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let (s0, s1) = socketpair()?;
    let _c = Child::spawn(pl.child, flood_child(s1.0))?;
    drop(s1);
    let mut b = Drain {
        fd: s0.0,
        buf: vec![0; CHUNK],
    };
    Ok(mbs(
        env.h.measure(&mut b, 0.0)?,
        CHUNK,
        "AF_UNIX stream, 64 KB reads",
    ))
}
