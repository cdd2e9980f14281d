//! Netlink: NETLINK_USERSOCK datagrams from one of our sockets to another
//! (producer and consumer are two threads of this process; the kernel path,
//! a unicast to a port id, is the one between two processes).
//!
//! The producer sends with MSG_DONTWAIT, so a full receive queue refuses the
//! record (EAGAIN at the producer). The consumer counts ENOBUFS and sequence
//! gaps too; the kernel raises ENOBUFS at the receiver only when the sender
//! is the kernel itself, so between two user sockets the gaps equal the
//! producer's EAGAIN count and ENOBUFS stays 0. Buffer is the consumer's
//! SO_RCVBUF.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::AtomicBool;

use super::pair::{cvt, run_pair, stop_check, Raw, StepParams};
use super::producer::produce;
use super::sink::Sink;
use super::sockets::{buffer_error, consume_dgrams, sent_or_refused, set_buffer};
use crate::error::Error;

fn nl_socket() -> anyhow::Result<OwnedFd> {
    // SAFETY: plain socket creation; the fd is owned right away.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_USERSOCK,
        )
    } as isize)
    .map_err(|e| anyhow::anyhow!("netlink: socket(NETLINK_USERSOCK): {e}"))?;
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Bind to a kernel-chosen port id and return it.
fn autobind(fd: &OwnedFd) -> anyhow::Result<u32> {
    // SAFETY: sockaddr_nl is plain data; bind/getsockname read/write it.
    let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    let len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_nl).cast(),
            len,
        )
    } as isize)
    .map_err(|e| anyhow::anyhow!("netlink: bind: {e}"))?;
    let mut l = len;
    cvt(unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut sa as *mut libc::sockaddr_nl).cast(),
            &mut l,
        )
    } as isize)?;
    Ok(sa.nl_pid)
}

/// Whether this kernel offers NETLINK_USERSOCK.
pub fn probe() -> Result<(), Error> {
    nl_socket()
        .map(|_| ())
        .map_err(|e| Error::failed(e.to_string()))
}

pub fn run(p: &StepParams, sink: &mut Sink, cancel: &AtomicBool) -> anyhow::Result<Raw> {
    let rx = nl_socket()?;
    let tx = nl_socket()?;
    set_buffer(
        rx.as_raw_fd(),
        libc::SO_RCVBUFFORCE,
        libc::SO_RCVBUF,
        p.buffer,
    )
    .map_err(buffer_error)?;
    let port = autobind(&rx)?;
    autobind(&tx)?;
    // SAFETY: zeroed sockaddr_nl is a valid value.
    let mut dst: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    dst.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    dst.nl_pid = port;

    let done = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let stop = stop_check(cancel, &abort, p.deadline);
    let records = p.records();
    let rs = p.record_size;
    let (rxfd, txfd) = (rx.as_raw_fd(), tx.as_raw_fd());
    let (produced, got) = run_pair(
        p,
        &done,
        &abort,
        || consume_dgrams(rxfd, rs, sink, &done, cancel),
        move || {
            produce(records, rs, &stop, |rec| {
                // SAFETY: sending a valid slice to a valid address.
                let n = unsafe {
                    libc::sendto(
                        txfd,
                        rec.as_ptr().cast(),
                        rec.len(),
                        libc::MSG_DONTWAIT,
                        (&dst as *const libc::sockaddr_nl).cast(),
                        std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                    )
                };
                sent_or_refused(cvt(n))
            })
        },
    )?;
    let gaps = got.seq.gaps + got.seq.tail_missing(produced.attempted);
    Ok(Raw {
        read: got.read,
        ended: got.ended,
        kernel_dropped: Some(produced.refused),
        detail: format!(
            "producer EAGAIN {}, consumer ENOBUFS {}, sequence gaps {}",
            produced.refused, got.enobufs, gaps
        ),
        sink_bytes: sink.written(),
        produced,
    })
}
