//! Opening without waiting, then reading or writing as usual: a FIFO's
//! open blocks until its other end is there, so files another user may
//! have put under a name are opened `O_NONBLOCK`, judged, and only then
//! made blocking again (`--output`, `import`).

use std::os::fd::AsFd;

/// Clear `O_NONBLOCK` on `f`, leaving its other status flags (`O_APPEND`)
/// as they are: its reads and writes (a child's, through it) block again.
pub fn make_blocking(f: &impl AsFd) -> nix::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_truncate(fcntl(f, FcntlArg::F_GETFL)?);
    fcntl(f, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK)).map(drop)
}
