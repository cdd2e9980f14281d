//! Loopback networking: UDP and TCP round-trip latency, TCP connection
//! cost, TCP bandwidth, between the measuring process and a forked peer on
//! 127.0.0.1. If loopback is unusable the benchmarks are skipped with the
//! reason.
//!
//! Latency, one operation: one 1-byte round trip (TCP with TCP_NODELAY).
//! Connect, one operation: `socket()` + `connect()` to a listening peer +
//! waiting for the peer's `accept()` + `close()` (seen as EOF) + our
//! `close()` with SO_LINGER 0 (RST). Waiting for the accept keeps the
//! listen backlog from overflowing (LMbench does not wait; on a loaded
//! machine an overflow drops a SYN and costs a 1 s retransmit), and the
//! RST close keeps TIME_WAIT sockets from piling up. Bandwidth, one
//! operation: reading 64 KB from a peer that writes without pause.
//! Microseconds or MB/s (2^20), empty loop subtracted.

use std::io;

use super::child::{Child, Fd};
use super::ipc::{echo_child, flood_child, Drain, PingPong, CHUNK};
use super::pin::{place, Pinning};
use super::{harness::Bench, mbs, us, BenchOut, Env};

fn loopback(port: u16) -> libc::sockaddr_in {
    // SAFETY: zeroed sockaddr_in is valid.
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as libc::sa_family_t;
    a.sin_port = port.to_be();
    a.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
    a
}

const SALEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

fn socket(ty: libc::c_int) -> io::Result<Fd> {
    // SAFETY: plain socket call.
    let s = unsafe { libc::socket(libc::AF_INET, ty | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(Fd(s))
    }
}

fn bind_loopback(s: &Fd) -> io::Result<u16> {
    let a = loopback(0);
    // SAFETY: valid sockaddr and lengths.
    unsafe {
        if libc::bind(s.0, (&a as *const libc::sockaddr_in).cast(), SALEN) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut got: libc::sockaddr_in = std::mem::zeroed();
        let mut len = SALEN;
        if libc::getsockname(s.0, (&mut got as *mut libc::sockaddr_in).cast(), &mut len) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u16::from_be(got.sin_port))
    }
}

fn connect(s: &Fd, port: u16) -> io::Result<()> {
    let a = loopback(port);
    // SAFETY: valid sockaddr.
    if unsafe { libc::connect(s.0, (&a as *const libc::sockaddr_in).cast(), SALEN) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn setopt(s: &Fd, level: libc::c_int, opt: libc::c_int, v: &[u8]) {
    // SAFETY: v is a valid option buffer of its length.
    unsafe {
        libc::setsockopt(
            s.0,
            level,
            opt,
            v.as_ptr().cast(),
            v.len() as libc::socklen_t,
        );
    }
}

fn nodelay(s: &Fd) {
    setopt(s, libc::IPPROTO_TCP, libc::TCP_NODELAY, &1i32.to_ne_bytes());
}

/// A TCP socket listening on 127.0.0.1 at an ephemeral port.
pub fn tcp_listener() -> io::Result<Fd> {
    let s = socket(libc::SOCK_STREAM)?;
    bind_loopback(&s)?;
    // SAFETY: valid socket.
    if unsafe { libc::listen(s.0, 128) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(s)
}

fn port_of(s: &Fd) -> io::Result<u16> {
    // SAFETY: valid out buffers.
    unsafe {
        let mut got: libc::sockaddr_in = std::mem::zeroed();
        let mut len = SALEN;
        if libc::getsockname(s.0, (&mut got as *mut libc::sockaddr_in).cast(), &mut len) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u16::from_be(got.sin_port))
    }
}

fn skip_net(e: io::Error) -> BenchOut {
    BenchOut::Skip(format!("no TCP/UDP loopback: {e}"))
}

/// Accept one connection in the child, return its fd (raw syscalls).
fn accept_one(l: libc::c_int) -> libc::c_int {
    loop {
        // SAFETY: null address buffers are allowed.
        let c = unsafe { libc::accept(l, std::ptr::null_mut(), std::ptr::null_mut()) };
        if c >= 0 || super::child::errno() != libc::EINTR {
            return c;
        }
    }
}

pub fn udp_lat(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let (srv, cli) = match (|| -> io::Result<(Fd, Fd)> {
        let srv = socket(libc::SOCK_DGRAM)?;
        let sport = bind_loopback(&srv)?;
        let cli = socket(libc::SOCK_DGRAM)?;
        let cport = bind_loopback(&cli)?;
        connect(&cli, sport)?;
        connect(&srv, cport)?;
        Ok((srv, cli))
    })() {
        Ok(x) => x,
        Err(e) => return Ok(skip_net(e)),
    };
    // Both sockets are connected, so plain read/write work for datagrams.
    let _c = Child::spawn(pl.child, echo_child(srv.0, srv.0))?;
    let mut b = PingPong {
        to_peer: cli.0,
        from_peer: cli.0,
    };
    Ok(us(
        env.h.measure(&mut b, 0.0)?,
        "1-byte UDP round trip on 127.0.0.1",
    ))
}

/// A connected loopback TCP pair whose server end lives in a child
/// running `serve(fd)`.
fn tcp_pair(
    pin: &super::pin::Placement,
    serve: impl FnOnce(libc::c_int) -> i32,
) -> anyhow::Result<Result<(Child, Fd), BenchOut>> {
    let l = match tcp_listener() {
        Ok(l) => l,
        Err(e) => return Ok(Err(skip_net(e))),
    };
    let port = port_of(&l)?;
    let lfd = l.0;
    let child = Child::spawn(pin.child, move || {
        let c = accept_one(lfd);
        if c < 0 {
            return 3;
        }
        let one = 1i32;
        // SAFETY: valid option buffer.
        unsafe {
            libc::setsockopt(
                c,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&one as *const i32).cast(),
                4,
            );
        }
        serve(c)
    })?;
    let s = socket(libc::SOCK_STREAM)?;
    nodelay(&s);
    if let Err(e) = connect(&s, port) {
        return Ok(Err(skip_net(e)));
    }
    Ok(Ok((child, s)))
}

pub fn tcp_lat(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let (_c, s) = match tcp_pair(&pl, |c| echo_child(c, c)())? {
        Ok(x) => x,
        Err(skip) => return Ok(skip),
    };
    let mut b = PingPong {
        to_peer: s.0,
        from_peer: s.0,
    };
    Ok(us(
        env.h.measure(&mut b, 0.0)?,
        "1-byte TCP round trip on 127.0.0.1, TCP_NODELAY",
    ))
}

pub fn tcp_bw(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let (_c, s) = match tcp_pair(&pl, |c| flood_child(c)())? {
        Ok(x) => x,
        Err(skip) => return Ok(skip),
    };
    let mut b = Drain {
        fd: s.0,
        buf: vec![0; CHUNK],
    };
    Ok(mbs(
        env.h.measure(&mut b, 0.0)?,
        CHUNK,
        "TCP on 127.0.0.1, 64 KB reads",
    ))
}

/// One operation: socket + connect + peer accept and close + close(RST),
/// against a child that accepts and closes in a loop.
struct Connect {
    port: u16,
}

impl Bench for Connect {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        for _ in 0..iters {
            let s = socket(libc::SOCK_STREAM)?;
            connect(&s, self.port)?;
            // SAFETY: valid linger struct.
            unsafe {
                libc::setsockopt(
                    s.0,
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
            // Wait for the peer to accept and close: read() returns 0.
            let mut b = [0u8; 1];
            loop {
                // SAFETY: 1-byte buffer.
                let r = unsafe { libc::read(s.0, b.as_mut_ptr().cast(), 1) };
                if r == 0 {
                    break;
                }
                if r < 0 && super::child::errno() == libc::EINTR {
                    continue;
                }
                anyhow::bail!("connect peer: unexpected read result {r}");
            }
            drop(s);
        }
        Ok(iters)
    }
}

pub fn tcp_connect(env: &Env) -> anyhow::Result<BenchOut> {
    let l = match tcp_listener() {
        Ok(l) => l,
        Err(e) => return Ok(skip_net(e)),
    };
    let port = port_of(&l)?;
    let lfd = l.0;
    let _c = Child::spawn(None, move || loop {
        let c = accept_one(lfd);
        if c < 0 {
            return 3;
        }
        // SAFETY: our accepted socket.
        unsafe {
            libc::close(c);
        }
    })?;
    let mut b = Connect { port };
    Ok(us(
        env.h.measure(&mut b, 0.0)?,
        "socket+connect+peer accept/close+close(RST) on 127.0.0.1",
    ))
}
