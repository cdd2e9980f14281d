//! The suite's longest tests in one binary, so that those that mostly wait
//! run while the one that computes does: kbuild (tests/long/kbuild.rs)
//! builds a kernel, both cores busy for minutes measuring nothing, while
//! chaos (tests/long/chaos.rs: signals and resumes, 70 s of `sleep`s),
//! security (tests/security/: its outage test waits out a 60 s blackhole),
//! the ssh fleet (tests/long/ssh_fleet.rs: three sshd hosts, runs of
//! `sleep`) and trust_runs (tests/long/trust_runs.rs: signals during
//! sleeping teardowns) spent their wall time mostly waiting as binaries of
//! their own (a fresh CI run: kbuild 227 s; chaos 70 s on 9 s of CPU;
//! security 75 s, 19 s; fleet 49 s, 26 s; trust_runs 19 s, 1 s).
//!
//! libtest starts the tests in the order of their names, one a thread (two
//! on CI's 2 cores): `chaos::` and `kbuild::` sort first, so the kernel
//! build starts at once, and `security::`, `ssh_fleet::` and `trust_runs::`
//! follow chaos on the other thread. A module added here must sort after
//! `kbuild`, and keep that thread's sum below kbuild's: chaos, security
//! and the fleet took 225 s one after another on the loaded 2-core
//! machine (trust_runs adds some 20 s), kbuild 271 s of a fresh CI run
//! there, which this binary as a whole took.
//!
//! Beside each other these stay correct: none of them reads what another
//! changes (chaos's sysctls and tracefs are its alone; it holds the
//! machine lock, see tests/common/machine.rs, and the others take no lock
//! it holds), every test passes beside a CPU hog as CI requires, and
//! kbuild's verdicts are over boots in randomized interleaved order, which
//! a neighbour's load reaches on both sides alike.

mod common;

#[path = "long/chaos.rs"]
mod chaos;
#[path = "long/kbuild.rs"]
mod kbuild;
mod security;
#[path = "long/ssh_fleet.rs"]
mod ssh_fleet;
#[path = "long/trust_runs.rs"]
mod trust_runs;
