//! Reading the channel's JSON lines with a deadline and a length limit, so
//! that a guest that hangs, floods or sends garbage is a fault of that
//! boot and never a hang of the host.

use std::io::Read;
use std::time::{Duration, Instant};

/// What one read brought.
#[derive(Debug, PartialEq)]
pub enum Got {
    Line(Vec<u8>),
    /// The other side closed the channel.
    Eof,
    /// Nothing whole before the deadline.
    Timeout,
}

/// A reader of newline-terminated lines of at most `max` bytes.
pub struct Lines<R> {
    inner: R,
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no newline.
    scanned: usize,
    max: usize,
    /// Bytes received so far, for messages about a bad line.
    pub offset: u64,
}

/// A source whose blocking reads can be bounded in time.
pub trait TimedRead: Read {
    fn set_timeout(&mut self, d: Duration) -> std::io::Result<()>;
}

impl TimedRead for std::os::unix::net::UnixStream {
    fn set_timeout(&mut self, d: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(d.max(Duration::from_millis(1))))
    }
}

impl<R: TimedRead> Lines<R> {
    pub fn new(inner: R, max: usize) -> Lines<R> {
        Lines {
            inner,
            buf: Vec::new(),
            scanned: 0,
            max,
            offset: 0,
        }
    }

    /// The next line (without its newline), waiting at most until `until`
    /// and returning [`Got::Timeout`] after `slice` at the latest, even
    /// while bytes of a long line keep arriving, so the caller can look at
    /// other things (the VM's exit, a stop request) between calls.
    pub fn next(&mut self, until: Instant, slice: Duration) -> std::io::Result<Got> {
        let give_back = (Instant::now() + slice).min(until);
        loop {
            // Only the bytes not yet looked at are scanned for the newline.
            if let Some(i) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + i;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                self.scanned = 0;
                return Ok(Got::Line(line));
            }
            self.scanned = self.buf.len();
            if self.buf.len() > self.max {
                return Err(std::io::Error::other(format!(
                    "a line longer than {} bytes at byte {}",
                    self.max,
                    self.offset - self.buf.len() as u64
                )));
            }
            let now = Instant::now();
            if now >= give_back {
                return Ok(Got::Timeout);
            }
            self.inner.set_timeout(give_back - now)?;
            let mut chunk = [0u8; 64 * 1024];
            match self.inner.read(&mut chunk) {
                Ok(0) => return Ok(Got::Eof),
                Ok(n) => {
                    self.offset += n as u64;
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    return Ok(Got::Timeout)
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn lines_arrive_whole_and_a_quiet_peer_times_out() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut l = Lines::new(b, 100);
        a.write_all(b"one\ntw").unwrap();
        let soon = || Instant::now() + Duration::from_millis(200);
        let slice = Duration::from_millis(50);
        assert_eq!(l.next(soon(), slice).unwrap(), Got::Line(b"one".to_vec()));
        assert_eq!(l.next(soon(), slice).unwrap(), Got::Timeout);
        a.write_all(b"o\n").unwrap();
        assert_eq!(l.next(soon(), slice).unwrap(), Got::Line(b"two".to_vec()));
        drop(a);
        assert_eq!(l.next(soon(), slice).unwrap(), Got::Eof);
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_naming_where() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut l = Lines::new(b, 10);
        a.write_all(&[b'x'; 50]).unwrap();
        let e = l
            .next(
                Instant::now() + Duration::from_secs(1),
                Duration::from_millis(50),
            )
            .unwrap_err();
        assert!(
            e.to_string().contains("longer than 10 bytes at byte 0"),
            "{e}"
        );
    }
}
