//! Storing what a boot delivered: each run the guest sent, and the run in
//! flight when a boot failed. Separate from the message loop (serve.rs),
//! which only decides what to store.

use anyhow::Result;

use super::Session;
use crate::runner::boots::protocol::AssignedSlot;
use crate::runner::boots::schedule::BootSlot;
use crate::runner::now_unix;

impl Session<'_> {
    /// Store a run the guest sent, with its boot.
    pub(super) fn store_run(
        &mut self,
        mut row: crate::store::runlog::RunRow,
        b: &BootSlot,
        s: &AssignedSlot,
        boot: i64,
    ) -> Result<()> {
        row.experiment_id = self.exp;
        row.boot = Some(boot);
        let failed = row.status != "ok";
        let what = || {
            format!(
                "boot {boot} block {} {}/{}: {}",
                row.block,
                row.config,
                row.workload,
                if failed {
                    row.reason.clone().unwrap_or_default()
                } else {
                    row.samples
                        .first()
                        .and_then(|(_, v)| v.first())
                        .map(|v| format!("{:.4}", f64::from_bits(*v)))
                        .unwrap_or_default()
                }
            )
        };
        let line = what();
        let reason = failed.then(|| row.reason.clone().unwrap_or_default());
        self.store.record_row(row)?;
        self.runs_done += 1;
        self.runs_failed += failed as usize;
        self.progress.run_done(|| line, failed);
        if let Some(msg) = self.failing.record(
            &self.p.plan,
            self.exp,
            (b.config, s.workload),
            reason.as_deref(),
        ) {
            self.store.add_event(self.exp, "stop", &msg)?;
            // Said once, by the command, after the report (the
            // last thing a CI log shows).
            self.stopped = Some(msg);
        }
        Ok(())
    }

    /// The run in flight when a boot failed, stored as a failed run.
    pub(super) fn record_failed(
        &mut self,
        b: &BootSlot,
        s: &AssignedSlot,
        boot: i64,
        reason: &str,
    ) -> Result<()> {
        let cfg = &self.p.plan.configs[b.config].name;
        let wl = &self.p.plan.workloads[s.workload].name;
        let mut row = crate::store::runlog::RunRow::of(&crate::store::RunRecord {
            experiment_id: self.exp,
            block: s.block,
            seq: s.seq,
            config: cfg,
            workload: wl,
            warmup: s.warmup,
            started_at: now_unix(),
            result: crate::store::RunResult::Failed {
                reason: &format!("the boot failed during this run: {reason}"),
                stderr_tail: "",
                exit_code: None,
            },
            series: &[],
            profile: &[],
        })?;
        row.boot = Some(boot);
        self.store.record_row(row)?;
        self.runs_done += 1;
        self.runs_failed += 1;
        Ok(())
    }
}
