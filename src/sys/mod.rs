//! OS plumbing that several capabilities share, one file per job, so that
//! each is written once: sizes as people write them (`size`), CPU affinity
//! through `nix::sched` (`affinity`), `perf_event_open` (`perf`), the mount
//! table (`mountinfo`). Nothing here knows about plans, configs or reports;
//! everything above may use it.

pub mod affinity;
pub mod mountinfo;
pub mod perf;
pub mod size;
