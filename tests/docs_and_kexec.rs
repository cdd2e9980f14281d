//! Two long tests in one binary, each on a test thread, each using the
//! core the other leaves: the docs' `sh` blocks run as written
//! (tests/docs_examples/: its time is mostly `ab` filling its default
//! `--min-time` and runs that wait on the disk, about 0.9 of the 2 cores)
//! and kexec sessions in a TCG guest (tests/docs_and_kexec/
//! kexec_session.rs: one vCPU, about one core). As binaries of their own
//! they ran one after the other: 74 s and 78 s on a quiet CI machine.
//!
//! Beside each other these stay correct: the docs' blocks assert what
//! they print and how they exit, never a time or a verdict a neighbour's
//! load could move (what they change of the machine, THP and the page
//! cache, they put back, and a guest does not see it); the kexec tests
//! assert what each boot was and that the session ends where it started,
//! with limits scaled from the first boot's own time, so a slower guest
//! only takes longer.
//!
//! libtest starts the tests in the order of their names: `docs_examples::`
//! sort first, so the long block-running test starts at once, and the
//! kexec tests (one VM at a time) follow the docs' quick ones on the
//! other thread.

mod common;

mod docs_examples;
#[path = "docs_and_kexec/kexec_session.rs"]
mod kexec_session;
