//! Boots of kernel configs: one row per VM booted for a config, with what
//! the guest said about itself and, for a failed boot, why and the tail of
//! its console. Runs name their boot (`runs.boot_id`).
//!
//! A boot row is written when QEMU is launched (status `running`) and
//! finished when the VM is gone. A boot left `running` belongs to a
//! sysdelta that died; `--resume` marks it failed and boots again for the
//! runs it did not deliver.

use anyhow::Result;
use serde::Serialize;

use super::db::vals;
use super::Store;
use crate::status::BootStatus;

/// One boot as stored.
#[derive(Clone, Debug, Serialize)]
pub struct StoredBoot {
    pub id: i64,
    pub config: String,
    /// The boot block: one boot of every kernel config, in random order.
    pub block: u32,
    /// Place in the block's order.
    pub position: u32,
    /// `KVM` or `TCG` (emulated CPU).
    pub accel: String,
    /// Unix time QEMU was launched.
    pub started_at: f64,
    /// Launch until the guest sysdelta said hello, seconds.
    pub launch_to_hello_s: Option<f64>,
    /// `running`, `ok` or `failed`.
    pub status: BootStatus,
    pub reason: Option<String>,
    pub console_tail: Option<String>,
    /// The guest's `uname -r`, `/proc/version`, `/proc/cmdline`, online
    /// CPUs and MemTotal, as it reported them (checked against the config
    /// before any run was assigned).
    pub uname: Option<String>,
    pub proc_version: Option<String>,
    pub cmdline: Option<String>,
    pub cpus: Option<u32>,
    pub mem_total_kib: Option<u64>,
    /// Measured runs (not warm-up) the guest delivered.
    pub runs: u32,
}

/// How a boot ended, for [`Store::end_boot`].
#[derive(Clone, Debug, Default)]
pub struct BootEnd {
    pub ok: bool,
    pub reason: Option<String>,
    pub console_tail: Option<String>,
    pub runs: u32,
}

/// What the guest said about itself, for [`Store::boot_identity`].
#[derive(Clone, Debug, Default)]
pub struct BootIdentity<'a> {
    pub launch_to_hello_s: f64,
    pub uname: &'a str,
    pub proc_version: &'a str,
    pub cmdline: &'a str,
    pub cpus: u32,
    pub mem_total_kib: u64,
}

impl Store {
    /// Record that a boot of `config` starts (status `running`); its id.
    pub fn begin_boot(
        &self,
        exp: i64,
        config: &str,
        block: u32,
        position: u32,
        accel: &str,
        started_at: f64,
    ) -> Result<i64> {
        self.db.value(
            "INSERT INTO boots (experiment_id, config, block, position, accel, started_at, status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running') RETURNING id",
            &vals![exp, config, block, position, accel, started_at],
        )
    }

    /// Store what the guest said about itself (before it is checked, so a
    /// boot refused for its identity still shows what booted).
    pub fn boot_identity(&self, boot: i64, id: &BootIdentity) -> Result<()> {
        self.db.execute(
            "UPDATE boots SET launch_to_hello_s = ?2, uname = ?3, proc_version = ?4, cmdline = ?5,
             cpus = ?6, mem_total_kib = ?7 WHERE id = ?1",
            &vals![
                boot,
                id.launch_to_hello_s,
                id.uname,
                id.proc_version,
                id.cmdline,
                id.cpus,
                id.mem_total_kib as i64
            ],
        )?;
        Ok(())
    }

    /// Record how a boot ended.
    pub fn end_boot(&self, boot: i64, end: &BootEnd) -> Result<()> {
        self.db.execute(
            "UPDATE boots SET status = ?2, reason = ?3, console_tail = ?4, runs = ?5 WHERE id = ?1",
            &vals![
                boot,
                if end.ok {
                    BootStatus::Ok
                } else {
                    BootStatus::Failed
                },
                end.reason.as_deref(),
                end.console_tail.as_deref(),
                end.runs
            ],
        )?;
        Ok(())
    }

    /// Boots a sysdelta that died left `running`: failed, with why.
    pub fn fail_running_boots(&self, exp: i64, reason: &str) -> Result<usize> {
        self.db.execute(
            "UPDATE boots SET status = 'failed', reason = ?2,
             runs = (SELECT COUNT(*) FROM runs WHERE runs.boot_id = boots.id AND runs.warmup = 0)
             WHERE experiment_id = ?1 AND status = 'running'",
            &vals![exp, reason],
        )
    }

    /// The boots of an experiment, in the order they were launched.
    pub fn boots(&self, exp: i64) -> Result<Vec<StoredBoot>> {
        self.db.query(
            "SELECT id, config, block, position, accel, started_at, launch_to_hello_s, status,
             reason, console_tail, uname, proc_version, cmdline, cpus, mem_total_kib, runs
             FROM boots WHERE experiment_id = ?1 ORDER BY id",
            &vals![exp],
            |r| {
                Ok(StoredBoot {
                    id: r.get(0)?,
                    config: r.get(1)?,
                    block: r.get(2)?,
                    position: r.get(3)?,
                    accel: r.get(4)?,
                    started_at: r.get(5)?,
                    launch_to_hello_s: r.get(6)?,
                    status: r.get(7)?,
                    reason: r.get(8)?,
                    console_tail: r.get(9)?,
                    uname: r.get(10)?,
                    proc_version: r.get(11)?,
                    cmdline: r.get(12)?,
                    cpus: r.get(13)?,
                    mem_total_kib: r.get::<Option<i64>>(14)?.map(|v| v as u64),
                    runs: r.get(15)?,
                })
            },
        )
    }
}
