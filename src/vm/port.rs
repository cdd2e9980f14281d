//! The guest side of the channel: a virtio-serial port found by its name.
//!
//! This runs inside the VM, in the chroot of the host's root that `/init`
//! set up. The device number (`/dev/vport2p1` here) depends on the order
//! of the devices, so the port is looked up by the name QEMU gave it
//! (`/sys/class/virtio-ports/vportNpM/name`).
//!
//! Until the host has connected to its end (`Boot::channel`), a write
//! blocks, a read returns end of file at once, and poll reports POLLHUP
//! (Linux drivers/char/virtio_console.c). A guest that reads first should
//! call [`wait_host`].

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the device node may lag behind the port's sysfs entry: without
/// udev, devtmpfs makes it as the driver registers the port.
const OPEN_WAIT: Duration = Duration::from_secs(5);

/// Open `/dev/vportNpM` whose `/sys/class/virtio-ports/*/name` is `name`,
/// read-write, retrying for up to 5 s.
pub fn open(name: &str) -> io::Result<File> {
    open_in(
        Path::new("/sys/class/virtio-ports"),
        Path::new("/dev"),
        name,
        OPEN_WAIT,
    )
}

/// [`open`] with its directories and deadline as parameters.
pub fn open_in(sys: &Path, dev: &Path, name: &str, wait: Duration) -> io::Result<File> {
    let deadline = Instant::now() + wait;
    loop {
        let err = match find(sys, name) {
            Ok(Some(node)) => match OpenOptions::new()
                .read(true)
                .write(true)
                .open(dev.join(&node))
            {
                Ok(f) => return Ok(f),
                Err(e) => io::Error::new(
                    e.kind(),
                    format!(
                        "virtio-serial port {name}: cannot open {}: {e}",
                        dev.join(&node).display()
                    ),
                ),
            },
            Ok(None) => io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "virtio-serial port {name}: no port of that name in {}",
                    sys.display()
                ),
            ),
            Err(e) => io::Error::new(
                e.kind(),
                format!(
                    "virtio-serial port {name}: cannot read {}: {e}",
                    sys.display()
                ),
            ),
        };
        if Instant::now() >= deadline {
            return Err(err);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The entry of `sys` (e.g. `vport2p1`) whose `name` file holds `name`.
fn find(sys: &Path, name: &str) -> io::Result<Option<String>> {
    for entry in std::fs::read_dir(sys)? {
        let entry = entry?;
        // A port without a name has an empty file (or none).
        let Ok(text) = std::fs::read_to_string(entry.path().join("name")) else {
            continue;
        };
        if text.trim_end_matches('\n') == name {
            return Ok(entry.file_name().to_str().map(str::to_string));
        }
    }
    Ok(None)
}

/// Wait until the host is connected to the port (poll no longer reports
/// POLLHUP), for up to `timeout`.
pub fn wait_host(port: &File, timeout: Duration) -> io::Result<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let deadline = Instant::now() + timeout;
    loop {
        let mut fds = [PollFd::new(port.as_fd(), PollFlags::POLLOUT)];
        // Poll returns at once while the host is away (POLLHUP), so pace it.
        poll(&mut fds, PollTimeout::from(100u16)).map_err(io::Error::from)?;
        let hup = fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLHUP));
        if !hup {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("virtio-serial port: the host did not connect within {timeout:?}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_found_by_name() {
        let t = tempfile::tempdir().unwrap();
        let sys = t.path().join("sys");
        let dev = t.path().join("dev");
        for (d, n) in [
            ("vport1p1", "other\n"),
            ("vport2p1", "org.sysdelta.runs\n"),
            ("vport2p0", ""),
        ] {
            std::fs::create_dir_all(sys.join(d)).unwrap();
            std::fs::write(sys.join(d).join("name"), n).unwrap();
        }
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("vport2p1"), "").unwrap();
        assert!(open_in(&sys, &dev, "org.sysdelta.runs", Duration::ZERO).is_ok());
        let e = open_in(&sys, &dev, "nope", Duration::from_millis(50)).unwrap_err();
        assert!(e.to_string().contains("no port of that name"), "{e}");
    }
}
