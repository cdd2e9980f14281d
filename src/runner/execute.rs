//! One experiment's runs on the host: each slot of the schedule (which
//! blocks.rs keeps, adding blocks for `--until` and `--min-time`) in its
//! config, stored before the next, and whatever happens, the config left
//! and everything cleaned up.

// The runner's shared types and imports, which this file continues.
use super::blocks::Blocks;
use super::crash::refuse_cut_short;
use super::*;

/// After a config is entered, and before its first run, spawn one empty
/// shell with its environment. A config's setup is itself a shell that
/// warms the exec path right before the config's first run, so a config
/// with a setup ran faster than one without: -0.4% [-0.8, -0.0] on a 30 ms
/// command here, 30 runs each, for configs that differ only in
/// `export OTHER=1`. With this step every run that follows a config switch
/// follows the same spawn, whatever the config's setup. Only in plans
/// where a config has a setup: where none has, no switch spawns anything,
/// and a shell per switch would double what a short command costs.
pub(crate) fn settle_after_enter(env: &[(String, String)]) {
    let spec = crate::process::ShellSpec {
        command: ":",
        env,
        timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let _ = crate::process::run_shell(&spec, &AtomicBool::new(false));
}

/// Whether leaving config `c` undoes anything (a teardown, a built-in
/// kind): only then does the store keep that the run is inside it, for a
/// crash's `restore` and `--resume`. A config with neither owes nothing
/// when a run dies in it, and its switches write nothing to the store.
fn owes_leave(c: &crate::plan::ConfigDef) -> bool {
    c.teardown.is_some() || !c.kinds.is_empty()
}

/// Execute the runs of `exp` that are not yet in the store.
pub fn execute(store: &Store, exp: i64, p: &mut Prepared, opts: &ExecOptions) -> Result<Outcome> {
    if p.kernels.is_some() {
        return boots::host::execute(store, exp, p, opts);
    }
    p.arm()?;
    let cpu0 = self_cpu();
    let t0 = Instant::now();
    // A copy: the loop below lends `p` whole to each run.
    let plan = &p.plan.clone();
    // Runs go to the store's run log, one line each, folded into the
    // tables in batches (see store::runlog).
    store.log_runs()?;
    let done: HashSet<(u32, u32)> = store.done_slots(exp)?;
    let done_len = done.len();
    let mut blocks = Blocks::new(plan, done);

    declare_metrics(store, exp, p)?;
    telemetry::before_first_block(store, exp, p)?;

    let mut s = Session {
        store,
        exp,
        cancel: opts.cancel,
        plan,
        declared: HashSet::new(),
        noted: store.event_messages(exp, "skipped")?.into_iter().collect(),
        progress: Progress::new(blocks.total(done_len) as u64, opts.quiet),
        current: None,
        runs_done: 0,
        runs_failed: 0,
        failing: streaks::Streaks::new(plan),
        stopped: None,
        shell_cost: shell_cost::ShellCost::default(),
    };

    // Everything that changes the system happens inside; whatever happens
    // (error or panic), the entered config is left and workloads cleaned up.
    let result = catch_unwind(AssertUnwindSafe(|| s.run_all(p, &mut blocks)));
    s.clean_up(p);

    let cancelled = opts.cancel.load(Ordering::SeqCst);
    // A teardown killed before its end (a second signal, its timeout)
    // leaves its config entered: the experiment is interrupted, whatever
    // else happened, so that `restore` reports it and `--resume` finishes
    // leaving it.
    let still_entered = p.configs.iter().any(|c| !c.left_cleanly());
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (self_cpu() - cpu0).as_secs_f64();
    let usage = usage(wall, cpu, s.runs_done);
    // Every run into the tables and the log file removed; if that fails the
    // log stays, and the next sysdelta to open the store folds it.
    let closed = store.close_run_log();
    match result {
        Err(panic) => {
            let _ = store.finish(exp, ExperimentStatus::Failed, Some(&usage));
            resume_unwind(panic)
        }
        Ok(Err(e)) => {
            let _ = store.add_event(exp, "error", &format!("{e:#}"));
            let status = if still_entered {
                ExperimentStatus::Interrupted
            } else {
                ExperimentStatus::Failed
            };
            let _ = store.finish(exp, status, Some(&usage));
            Err(e)
        }
        Ok(Ok(())) => {
            closed?;
            finish(
                store,
                exp,
                cancelled || still_entered,
                s.stopped,
                &usage,
                (s.runs_done, s.runs_failed),
            )
        }
    }
}

/// What the runs of one experiment keep from one run to the next, and
/// what its clean-up and its outcome need of them.
struct Session<'a> {
    store: &'a Store,
    exp: i64,
    cancel: &'a AtomicBool,
    plan: &'a Plan,
    /// Metrics a run reported beyond those declared, declared once.
    declared: HashSet<(usize, String)>,
    /// Workload notes already recorded as events (each distinct line once,
    /// also across --resume).
    noted: HashSet<String>,
    progress: Progress,
    /// The config entered, if any.
    current: Option<usize>,
    runs_done: usize,
    runs_failed: usize,
    /// Fail fast: runs each cell failed in a row, and why the experiment
    /// stopped when one reached the limit.
    failing: streaks::Streaks,
    stopped: Option<String>,
    shell_cost: shell_cost::ShellCost,
}

impl Session<'_> {
    /// Prepare the workloads, run the plan's setup, then every slot until
    /// the schedule ends, a stop is asked for or a cell fails too often.
    fn run_all(&mut self, p: &mut Prepared, blocks: &mut Blocks) -> Result<()> {
        for (def, w) in p.workloads.iter_mut() {
            w.prepare(&p.scratch)
                .with_context(|| format!("preparing workload '{}'", def.name))?;
        }
        if let Some(setup) = &self.plan.setup {
            let env = vec![scratch_var(&p.scratch)];
            let mut k = ShellKind::new(Some(setup.clone()), None, env, None, &p.scratch);
            k.enter().context("plan setup")?;
        }
        loop {
            let more = blocks.refill(
                self.store,
                self.exp,
                self.cancel,
                &mut self.progress,
                self.runs_done,
            )?;
            if !more {
                break;
            }
            let Some(slot) = blocks.pop() else {
                break;
            };
            if self.cancel.load(Ordering::SeqCst) {
                break;
            }
            let last_of_block = blocks.next_block_of().is_none_or(|next| next != slot.block);
            if !self.run_one(p, &slot, last_of_block)? {
                break;
            }
        }
        Ok(())
    }

    /// One slot: its config entered if it is not, the run measured and
    /// stored, its failure counted. False when the experiment is to stop
    /// (interrupted, or a cell failed too many runs in a row).
    fn run_one(&mut self, p: &mut Prepared, slot: &Slot, last_of_block: bool) -> Result<bool> {
        let (store, exp) = (self.store, self.exp);
        let cfg_name = self.plan.configs[slot.config].name.clone();
        let started_at = now_unix();
        let failure = self.enter_config(p, slot.config, &cfg_name)?;
        let entered = failure.is_none();
        let measured = match failure {
            Some(reason) => slot::Measured::failed(reason),
            None => slot::measure(p, slot, self.cancel),
        };
        for line in &measured.notes {
            if self.noted.insert(line.clone()) {
                store.add_event(exp, "skipped", line)?;
                self.progress.note(line);
            }
        }
        for e in &measured.monitor_errors {
            store.add_event(exp, "monitor", e)?;
            self.progress.note(e);
        }
        if measured.interrupted(self.cancel) {
            return Ok(false);
        }
        let wname = &p.workloads[slot.workload].0.name;
        let outcome = &measured.outcome;
        let what = || match outcome {
            RunOutcome::Ok(s) => {
                let first = s
                    .first()
                    .and_then(|m| m.values.first())
                    .copied()
                    .unwrap_or(f64::NAN);
                format!("block {} {}/{}: {:.4}", slot.block, cfg_name, wname, first)
            }
            RunOutcome::Failed { reason, .. } => {
                format!("block {} {}/{}: {reason}", slot.block, cfg_name, wname)
            }
        };
        let extras = slot::extras(p, slot, &measured, &mut self.declared);
        if !extras.new_specs.is_empty() {
            store.declare_metrics(exp, wname, &extras.new_specs)?;
        }
        store.record_run(&RunRecord {
            experiment_id: exp,
            block: slot.block,
            seq: slot.seq,
            config: &cfg_name,
            workload: wname,
            warmup: slot.warmup,
            started_at,
            result: slot::result_of(&measured),
            series: &extras.series,
            profile: &extras.profile,
        })?;
        // After the run is stored: a kill while the shell is timed
        // loses no finished run.
        if entered {
            self.shell_cost.after_run(p, slot, self.cancel);
        }
        if last_of_block {
            self.shell_cost
                .store(store, exp, shell_cost::FLUSH_SAMPLES)?;
        }
        let failed = matches!(outcome, RunOutcome::Failed { .. });
        self.runs_done += 1;
        self.runs_failed += failed as usize;
        self.progress.run_done(what, failed);
        let reason = match outcome {
            RunOutcome::Failed { reason, .. } => Some(reason.as_str()),
            RunOutcome::Ok(_) => None,
        };
        let cell = (slot.config, slot.workload);
        if let Some(msg) = self.failing.record(self.plan, exp, cell, reason) {
            store.add_event(exp, "stop", &msg)?;
            // Said once, by the command, after the report (the
            // last thing a CI log shows).
            self.stopped = Some(msg);
            return Ok(false);
        }
        Ok(true)
    }

    /// Leave the config entered, if it is another, and enter `config`:
    /// None once it is entered, or why the run fails when it could not be.
    fn enter_config(
        &mut self,
        p: &mut Prepared,
        config: usize,
        cfg_name: &str,
    ) -> Result<Option<String>> {
        let (store, exp) = (self.store, self.exp);
        if self.current == Some(config) {
            return Ok(None);
        }
        if let Some(c) = self.current.take() {
            if let Err(e) = p.configs[c].leave() {
                store.add_event(exp, "teardown", &format!("{e:#}"))?;
                self.progress.note(&format!("{e:#}"));
            }
            refuse_cut_short(&p.configs[c])?;
            if owes_leave(&self.plan.configs[c]) {
                store.set_entered_config(exp, None)?;
            }
        }
        let owes = owes_leave(&self.plan.configs[config]);
        if owes {
            store.set_entered_config(exp, Some(cfg_name))?;
        }
        self.current = Some(config);
        // What this config's setup puts on PATH is looked up afresh.
        crate::process::forget_found();
        if let Err(e) = p.configs[config].enter() {
            let failure = format!("config '{cfg_name}': {e:#}");
            // Leave at once (undoing what the failed enter did) so
            // that the next run of this config enters it afresh
            // instead of running in a half-entered state.
            self.current = None;
            if let Err(e) = p.configs[config].leave() {
                store.add_event(exp, "teardown", &format!("{e:#}"))?;
            }
            refuse_cut_short(&p.configs[config])?;
            if owes {
                store.set_entered_config(exp, None)?;
            }
            return Ok(Some(failure));
        }
        if owes {
            store.set_entered_env(exp, &p.configs[config].mods.env)?;
        }
        if self.plan.configs.iter().any(|c| c.setup.is_some()) {
            settle_after_enter(&p.configs[config].mods.env);
        }
        Ok(None)
    }

    /// Always, after the runs: leave the entered config, run the plan
    /// teardown, clean up the workloads, retry what the journal still
    /// holds, store the shell's start-up times; every error an event and
    /// a line on stderr.
    fn clean_up(&mut self, p: &mut Prepared) {
        let (store, exp) = (self.store, self.exp);
        let mut cleanup_errors = Vec::new();
        if let Some(c) = self.current.take() {
            match p.configs[c].leave() {
                Ok(()) => {}
                Err(e) => cleanup_errors.push(format!("{e:#}")),
            }
            // A teardown killed before its end leaves the config entered, for
            // `restore` to report and `--resume` to finish.
            if p.configs[c].left_cleanly() {
                let _ = store.set_entered_config(exp, None);
            }
        }
        if let Some(t) = &self.plan.teardown {
            let env = vec![scratch_var(&p.scratch)];
            let mut k = ShellKind::new(None, Some(t.clone()), env, None, &p.scratch);
            if let Err(e) = k.leave() {
                cleanup_errors.push(format!("plan teardown: {e:#}"));
            }
        }
        for (_, w) in p.workloads.iter_mut() {
            w.cleanup();
        }
        // Every kind undid its own changes on leave; anything still journaled
        // (a failed undo) gets one more try, and is reported if it stays. The
        // scratch directory's entry is not such a leftover: it stays until the
        // directory is gone, when `p` is dropped.
        {
            let mut j = p.journal.lock().unwrap_or_else(|e| e.into_inner());
            if j.pending_owned_by_others("scratch") {
                match j.restore_all_but("scratch") {
                    Ok(lines) => lines
                        .into_iter()
                        .for_each(|l| cleanup_errors.push(format!("restored: {l}"))),
                    Err(e) => cleanup_errors.push(format!("{e:#}; run `sysdelta restore`")),
                }
            }
        }
        if let Err(e) = self.shell_cost.store(store, exp, 0) {
            cleanup_errors.push(format!("storing the shell's start-up times: {e:#}"));
        }
        self.progress.finish();
        for e in &cleanup_errors {
            let _ = store.add_event(exp, "teardown", e);
            crate::sys::stderr::say!("sysdelta: {e}");
        }
    }
}
