//! CPU placement: which CPUs a benchmark may use and how pairs are pinned.
//!
//! `unpinned` leaves placement to the scheduler (LMbench's default);
//! `same-cpu` puts both ends of an IPC benchmark on one CPU (every message
//! is a context switch); `cross-cpu` puts them on two different CPUs (every
//! message is a cross-CPU wakeup).

use serde::{Deserialize, Serialize};
use std::io;

use super::child::CpuMask;
use super::Unavailable;
use crate::sys::affinity;

/// How the processes of one measurement were placed; recorded with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pinning {
    Unpinned,
    SameCpu,
    CrossCpu,
}

impl Pinning {
    pub fn as_str(self) -> &'static str {
        match self {
            Pinning::Unpinned => "unpinned",
            Pinning::SameCpu => "same-cpu",
            Pinning::CrossCpu => "cross-cpu",
        }
    }

    pub fn parse(s: &str) -> Option<Pinning> {
        match s {
            "unpinned" => Some(Pinning::Unpinned),
            "same-cpu" => Some(Pinning::SameCpu),
            "cross-cpu" => Some(Pinning::CrossCpu),
            _ => None,
        }
    }
}

/// CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    affinity::allowed_cpus()
}

/// Restores the calling thread's CPU affinity when dropped.
pub struct AffinityGuard {
    saved: nix::sched::CpuSet,
}

impl AffinityGuard {
    /// Restrict the calling thread to `cpus`, remembering the old mask.
    pub fn set(cpus: &[usize]) -> io::Result<AffinityGuard> {
        let saved = affinity::affinity()?;
        affinity::pin_current(cpus)?;
        Ok(AffinityGuard { saved })
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        // Best effort: a thread left pinned only narrows later placements.
        let _ = affinity::set_affinity(0, &self.saved);
    }
}

/// The placement of a two-party benchmark: the parent's guard (kept alive
/// for the measurement) and the mask to give the child.
pub struct Placement {
    pub _guard: Option<AffinityGuard>,
    pub child: Option<CpuMask>,
}

/// Place parent and child per `p` within the allowed CPUs. Err(reason) if
/// the placement is impossible here (cross-cpu on one CPU).
pub fn place(p: Pinning) -> Result<Placement, Unavailable> {
    let cpus = allowed_cpus().map_err(|e| Unavailable(format!("sched_getaffinity: {e}")))?;
    match p {
        Pinning::Unpinned => Ok(Placement {
            _guard: None,
            child: None,
        }),
        Pinning::SameCpu => {
            let a = *cpus
                .first()
                .ok_or_else(|| Unavailable("no CPU allowed".into()))?;
            let g = AffinityGuard::set(&[a])
                .map_err(|e| Unavailable(format!("pin to cpu {a}: {e}")))?;
            Ok(Placement {
                _guard: Some(g),
                child: Some(CpuMask::one(a)),
            })
        }
        Pinning::CrossCpu => {
            if cpus.len() < 2 {
                return Err(Unavailable(format!(
                    "cross-cpu needs 2 CPUs, only {} allowed here",
                    cpus.len()
                )));
            }
            let (a, b) = (cpus[0], cpus[1]);
            let g = AffinityGuard::set(&[a])
                .map_err(|e| Unavailable(format!("pin to cpu {a}: {e}")))?;
            Ok(Placement {
                _guard: Some(g),
                child: Some(CpuMask::one(b)),
            })
        }
    }
}
