//! Kernel configs on the machine itself: a kexec session (docs/kexec.md).
//!
//! sysdelta cannot stay alive across a kexec, so a session is a state
//! machine on disk: `start` records the experiment and the boot schedule
//! (the VM path's: randomized interleaved boot blocks, the boot the unit of
//! replication), installs a hook the machine runs at boot, and kexecs into
//! the first boot; at each boot the hook's `step` checks who came up,
//! audits the machine, runs that boot's runs into the store, and kexecs on;
//! after the last, back to the starting kernel, where the hook removes
//! itself. A kernel that panics reboots (`panic=N`) into the machine's
//! default kernel, and the step there records it as a failed boot.
//!
//! - [`state`]: the state directory, the session and its journal;
//! - [`exec`]: `kexec_file_load`, the command lines, who came up;
//! - [`hook`]: the systemd unit;
//! - [`guard`]: the environment and directories every boot runs with;
//! - [`audit`]: the machine audit before a boot's runs;
//! - [`start`], [`step`]: the commands. The runs themselves are measured by
//!   `runner::boots::on_machine`.

pub mod audit;
pub mod exec;
pub mod guard;
pub mod hook;
pub mod start;
pub mod state;
pub mod step;

use std::path::Path;

use anyhow::Result;

/// `sysdelta kexec stop`: end a session where it is. The hook goes, a
/// loaded kernel is unloaded, the experiment is marked interrupted (its
/// stored boots and runs stay), and the state directory goes. Run it on
/// the machine's own kernel; a kexec'd one stays until the next reboot.
/// A store out of reach does not keep the session alive: the session
/// ends all the same, and the line says the store was not updated.
pub fn stop(state: &Path) -> Result<()> {
    let st = state::State::open(state)?;
    let s = st.session()?;
    state::apply_env(&s.env);
    // Not while a step runs (it would kexec after the state is gone).
    let _step = st.lock()?;
    let removed = hook::remove(&s.hook_dir, st.path())?;
    let steps = st.steps()?;
    // A kernel this session loaded and did not execute (the last step armed
    // one) goes; one loaded by anyone else is left alone.
    if matches!(
        steps.last(),
        Some(state::Step::Armed { .. } | state::Step::Returning)
    ) {
        exec::unload();
    }
    let stored = (|| -> Result<()> {
        let store = crate::store::Store::open(&s.store, false)?;
        if !steps.contains(&state::Step::Finished) {
            store.set_status(s.experiment, crate::status::ExperimentStatus::Interrupted)?;
            store.add_event(
                s.experiment,
                "stop",
                "kexec session stopped by `kexec stop`",
            )?;
        }
        Ok(())
    })();
    st.remove()?;
    println!(
        "sysdelta: kexec session stopped{}; experiment {} keeps what it stored",
        if removed { ", hook removed" } else { "" },
        s.experiment
    );
    if let Err(e) = stored {
        eprintln!(
            "sysdelta: the store {} could not be updated ({e:#}): experiment {} is not marked interrupted there",
            s.store.display(),
            s.experiment
        );
    }
    Ok(())
}
