//! The sampling thread shared by all monitors: call a closure at t = 0, at
//! every multiple of the interval, and once more at stop; report the
//! thread's own CPU time.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Something sampled periodically. `t` is seconds since the thread started.
pub trait Sample: Send + 'static {
    fn sample(&mut self, t: f64);
}

/// A running sampling thread owning its sampler until [`SamplerThread::stop`].
pub struct SamplerThread<S: Sample> {
    stop_tx: Sender<()>,
    handle: JoinHandle<(S, f64)>,
    started: Instant,
}

/// CPU time (user + system) of the calling thread, in seconds.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl<S: Sample> SamplerThread<S> {
    /// Spawn the thread. Deadlines are absolute (start + k * interval), so
    /// sampling does not drift; if a sample overran, missed ticks are skipped.
    pub fn spawn(mut s: S, interval: Duration, name: &str) -> std::io::Result<Self> {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let started = Instant::now();
        let handle = std::thread::Builder::new()
            .name(format!("mon-{name}"))
            .spawn(move || {
                let cpu0 = thread_cpu_s();
                s.sample(0.0);
                let mut k: u32 = 1;
                loop {
                    let deadline = started + interval * k;
                    let now = Instant::now();
                    let wait = deadline.saturating_duration_since(now);
                    match stop_rx.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {
                            s.sample(started.elapsed().as_secs_f64());
                            let el = started.elapsed();
                            k = (el.as_nanos() / interval.as_nanos().max(1)) as u32 + 1;
                        }
                        _ => break,
                    }
                }
                s.sample(started.elapsed().as_secs_f64());
                (s, thread_cpu_s() - cpu0)
            })?;
        Ok(SamplerThread {
            stop_tx,
            handle,
            started,
        })
    }

    /// Stop the thread (it takes one last sample) and return the sampler,
    /// the thread's CPU seconds, and the wall seconds since spawn.
    pub fn stop(self) -> anyhow::Result<(S, f64, f64)> {
        let _ = self.stop_tx.send(());
        let (s, cpu) = self
            .handle
            .join()
            .map_err(|_| anyhow::anyhow!("monitor sampling thread panicked"))?;
        Ok((s, cpu, self.started.elapsed().as_secs_f64()))
    }
}
