//! `sysdelta kexec start|step|resume|stop`: kernel configs on the machine
//! itself, one kexec per boot (docs/kexec.md; the library is `crate::kexec`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

/// Where a session keeps its state unless told (root's, 0700).
pub const DEFAULT_STATE: &str = "/var/lib/sysdelta/kexec";

#[derive(Args)]
pub struct KexecArgs {
    #[command(subcommand)]
    pub cmd: KexecCmd,
}

#[derive(Subcommand)]
pub enum KexecCmd {
    /// Check the plan's kernels, record the experiment and its boot
    /// schedule, install the boot hook and kexec into the first boot.
    Start {
        /// A plan whose every config names a kernel image.
        plan: PathBuf,
        /// The session's state directory (made 0700; must not hold one).
        #[arg(long, default_value = DEFAULT_STATE)]
        state: PathBuf,
        /// Where the hook's systemd unit is installed.
        #[arg(long, default_value = "/etc/systemd/system")]
        hook_dir: PathBuf,
        /// Where the machine's initrds are, as `initrd.img-<release>`.
        #[arg(long, default_value = "/boot")]
        initrd_dir: PathBuf,
        /// The running kernel's image, booted again at the end (default:
        /// /boot/vmlinuz-<uname -r>).
        #[arg(long)]
        start_image: Option<PathBuf>,
        /// Seconds a panicked kernel waits before it reboots the machine
        /// into its default kernel (`panic=N`).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
        panic: u32,
        /// Seed of the boot order (default: drawn).
        #[arg(long)]
        seed: Option<u64>,
        /// A label for the experiment.
        #[arg(long)]
        label: Option<String>,
        /// A kernel error message (regex) that does not fail a boot's
        /// audit: one this machine prints at every boot (repeatable).
        #[arg(long = "audit-ignore", value_name = "REGEX")]
        audit_ignore: Vec<String>,
    },
    /// Run this boot's share and kexec on (what the hook runs at boot).
    #[command(hide = true)]
    Step {
        /// The session's state directory.
        #[arg(long, default_value = DEFAULT_STATE)]
        state: PathBuf,
    },
    /// Go on with a session from its journal (after the hook was killed,
    /// or to continue by hand): the same as the hook's step.
    Resume {
        /// The session's state directory.
        #[arg(long, default_value = DEFAULT_STATE)]
        state: PathBuf,
    },
    /// End a session: remove the hook, unload a loaded kernel, mark the
    /// experiment interrupted (what it stored stays) and remove the state.
    Stop {
        /// The session's state directory.
        #[arg(long, default_value = DEFAULT_STATE)]
        state: PathBuf,
    },
}

/// Run one `kexec` subcommand; `store` is where `start` records.
pub fn run(a: KexecArgs, store: PathBuf) -> Result<ExitCode> {
    match a.cmd {
        KexecCmd::Start {
            plan,
            state,
            hook_dir,
            initrd_dir,
            start_image,
            panic,
            seed,
            label,
            audit_ignore,
        } => crate::kexec::start::start(&crate::kexec::start::Start {
            plan,
            overrides: crate::overrides::Overrides {
                seed,
                ..Default::default()
            },
            store,
            state,
            hook_dir,
            initrd_dir,
            start_image,
            panic_s: panic,
            label,
            audit_ignore,
        })?,
        KexecCmd::Step { state } | KexecCmd::Resume { state } => crate::kexec::step::step(&state)?,
        KexecCmd::Stop { state } => crate::kexec::stop(&state)?,
    }
    Ok(ExitCode::SUCCESS)
}
