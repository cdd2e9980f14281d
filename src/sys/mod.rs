//! OS plumbing that several capabilities share, one file per job, so that
//! each is written once: sizes as people write them (`size`), CPU affinity
//! through `nix::sched` (`affinity`), `perf_event_open` (`perf`), the mount
//! table (`mountinfo`) and mounting (`mount`), loop devices (`loopdev`),
//! /proc/PID/stat (`procstat`), sysfs/procfs/tracefs writes (`sysfs`),
//! removing a cgroup that may still be busy (`cgroup`), git without the
//! caller's `GIT_*` environment (`git_env`), opening the state
//! files beside a store only when they are ours (`trust`), the machine's
//! run directory that only its owner can use (`private_dir`), opening
//! what may be a FIFO without waiting on it (`nonblock`), and
//! warnings on stderr that never panic (`stderr`), stored strings made
//! visible for a terminal (`visible`), UTC dates (`utc`).
//! Nothing here knows about plans, configs or reports; everything above
//! may use it.

pub mod affinity;
pub mod cgroup;
pub mod git_env;
pub mod loopdev;
pub mod mount;
pub mod mountinfo;
pub mod nonblock;
pub mod perf;
pub mod private_dir;
pub mod procstat;
pub mod size;
pub mod stderr;
pub mod sysfs;
pub mod trust;
pub mod utc;
pub mod visible;
