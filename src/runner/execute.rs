//! One experiment's runs on the host: the schedule (and, with `--until`,
//! the blocks added until the precision is reached), each slot in its
//! config, and whatever happens, the config left and everything cleaned up.

// The runner's shared types and imports, which this file continues.
use super::crash::refuse_cut_short;
use super::finish::SoFar;
use super::*;

/// After a config is entered, and before its first run, spawn one empty
/// shell with its environment. A config's setup is itself a shell that
/// warms the exec path right before the config's first run, so a config
/// with a setup ran faster than one without: -0.4% [-0.8, -0.0] on a 30 ms
/// command here, 30 runs each, for configs that differ only in
/// `export OTHER=1`. With this step every run that follows a config switch
/// follows the same spawn, whatever the config's setup.
pub(crate) fn settle_after_enter(env: &[(String, String)]) {
    let spec = crate::process::ShellSpec {
        command: ":",
        env,
        timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let _ = crate::process::run_shell(&spec, &AtomicBool::new(false));
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
    let cells = plan.cells();
    let slots = schedule::schedule(&cells, plan.runs, plan.warmup, plan.order, plan.seed);
    // Runs go to the store's run log, one line each, folded into the
    // tables in batches (see store::runlog).
    store.log_runs()?;
    let done: HashSet<(u32, u32)> = store.done_slots(exp)?;
    let mut next_block = slots
        .iter()
        .map(|s| s.block + 1)
        .chain(done.iter().map(|d| d.0 + 1))
        .max()
        .unwrap_or(0);
    // Blocks an adaptive experiment added beyond the planned ones are
    // rebuilt too, so a block interrupted half-way is completed on resume.
    let planned_blocks = plan.warmup + plan.runs;
    let extra: Vec<Slot> = (planned_blocks..next_block)
        .flat_map(|b| schedule::random_block(&cells, plan.seed, b, b < plan.warmup))
        .collect();
    let todo: Vec<Slot> = slots
        .into_iter()
        .chain(extra)
        .filter(|s| !done.contains(&(s.block, s.seq)))
        .collect();
    let adaptive = plan.overrides.until_ci.map(|target| {
        let max = plan
            .overrides
            .max_runs
            .unwrap_or(crate::plan::ADAPTIVE_MAX_RUNS);
        (target, plan.warmup + max)
    });
    // --min-time (hyperfine's minimum): blocks are added, as many at once
    // as the runs so far say are needed, until each cell has its time.
    let min_time = match plan.overrides.min_time {
        Some(t) if t > 0.0 && adaptive.is_none() => {
            let max = plan
                .overrides
                .max_runs
                .unwrap_or(crate::plan::MIN_TIME_MAX_RUNS);
            Some((t, plan.warmup + max))
        }
        _ => None,
    };

    declare_metrics(store, exp, p)?;
    telemetry::before_first_block(store, exp, p)?;
    // The runs so far, for --min-time and --until: read a block at a time.
    let mut so_far = SoFar::new(store, exp)?;

    let mut declared: HashSet<(usize, String)> = HashSet::new();
    // Workload notes already recorded as events (each distinct line once,
    // also across --resume).
    let mut noted: HashSet<String> = store.event_messages(exp, "skipped")?.into_iter().collect();
    let total = match adaptive {
        Some((_, max_blocks)) => (max_blocks as usize * cells.len()).saturating_sub(done.len()),
        None => todo.len(),
    };
    let mut progress = Progress::new(total as u64, opts.quiet);
    let mut current: Option<usize> = None;
    let mut runs_done = 0usize;
    let mut runs_failed = 0usize;
    // Fail fast: runs each cell failed in a row, and why the experiment
    // stopped when one reached the limit.
    let mut failing = streaks::Streaks::new(plan);
    let mut stopped: Option<String> = None;
    let mut shell_cost = shell_cost::ShellCost::default();

    // Everything that changes the system happens inside; whatever happens
    // (error or panic), the entered config is left and workloads cleaned up.
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<()> {
        for (def, w) in p.workloads.iter_mut() {
            w.prepare(&p.scratch)
                .with_context(|| format!("preparing workload '{}'", def.name))?;
        }
        if let Some(setup) = &plan.setup {
            let env = vec![scratch_var(&p.scratch)];
            let mut k = ShellKind::new(Some(setup.clone()), None, env, None, &p.scratch);
            k.enter().context("plan setup")?;
        }
        let mut queue: std::collections::VecDeque<Slot> = todo.into();
        loop {
            if queue.is_empty() && min_time.is_some() {
                let Some((secs, max_blocks)) = min_time else {
                    break;
                };
                if opts.cancel.load(Ordering::SeqCst) || stopped.is_some() {
                    break;
                }
                let (need, why) = so_far.blocks_for_min_time(store, secs)?;
                let add = need.min(max_blocks.saturating_sub(next_block));
                if add == 0 {
                    let msg = if need == 0 {
                        format!("{} measured runs per cell: {why}", next_block - plan.warmup)
                    } else {
                        format!(
                            "stopped at --max-runs ({} per cell) before --min-time {secs} s",
                            next_block - plan.warmup
                        )
                    };
                    store.add_event(exp, "stop", &msg)?;
                    break;
                }
                for b in next_block..next_block + add {
                    queue.extend(schedule::random_block(&cells, plan.seed, b, false));
                }
                next_block += add;
                progress.set_total((runs_done + queue.len()) as u64);
            }
            if queue.is_empty() {
                // Adaptive stopping: check precision, then add one block.
                let Some((target, max_blocks)) = adaptive else {
                    break;
                };
                if opts.cancel.load(Ordering::SeqCst) {
                    break;
                }
                let (reached, why) =
                    so_far.precision_check(store, target, &plan.overrides.until_metrics)?;
                if reached || next_block >= max_blocks {
                    let msg = if reached {
                        format!(
                            "stopped after {} measured runs per cell: {why}",
                            next_block - plan.warmup
                        )
                    } else {
                        format!(
                            "stopped at --max-runs ({} per cell) before the target: {why}",
                            next_block - plan.warmup
                        )
                    };
                    store.add_event(exp, "stop", &msg)?;
                    progress.note(&msg);
                    break;
                }
                let b = next_block;
                next_block += 1;
                queue.extend(schedule::random_block(
                    &cells,
                    plan.seed,
                    b,
                    b < plan.warmup,
                ));
                debug_assert_eq!(queue.len(), cells.len());
            }
            let Some(slot) = queue.pop_front() else { break };
            let slot = &slot;
            if opts.cancel.load(Ordering::SeqCst) {
                break;
            }
            let cfg_name = plan.configs[slot.config].name.clone();
            let started_at = now_unix();
            let mut failure: Option<String> = None;
            if current != Some(slot.config) {
                if let Some(c) = current.take() {
                    if let Err(e) = p.configs[c].leave() {
                        store.add_event(exp, "teardown", &format!("{e:#}"))?;
                        progress.note(&format!("{e:#}"));
                    }
                    refuse_cut_short(&p.configs[c])?;
                    store.set_entered_config(exp, None)?;
                }
                store.set_entered_config(exp, Some(&cfg_name))?;
                current = Some(slot.config);
                if let Err(e) = p.configs[slot.config].enter() {
                    failure = Some(format!("config '{cfg_name}': {e:#}"));
                    // Leave at once (undoing what the failed enter did) so
                    // that the next run of this config enters it afresh
                    // instead of running in a half-entered state.
                    current = None;
                    if let Err(e) = p.configs[slot.config].leave() {
                        store.add_event(exp, "teardown", &format!("{e:#}"))?;
                    }
                    refuse_cut_short(&p.configs[slot.config])?;
                    store.set_entered_config(exp, None)?;
                } else {
                    store.set_entered_env(exp, &p.configs[slot.config].mods.env)?;
                    settle_after_enter(&p.configs[slot.config].mods.env);
                }
            }
            let entered = failure.is_none();
            let measured = match failure {
                Some(reason) => slot::Measured::failed(reason),
                None => slot::measure(p, slot, opts.cancel),
            };
            for line in &measured.notes {
                if noted.insert(line.clone()) {
                    store.add_event(exp, "skipped", line)?;
                    progress.note(line);
                }
            }
            for e in &measured.monitor_errors {
                store.add_event(exp, "monitor", e)?;
                progress.note(e);
            }
            if measured.interrupted(opts.cancel) {
                break;
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
            let extras = slot::extras(p, slot, &measured, &mut declared);
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
                result: slot::result_of(outcome),
                series: &extras.series,
                profile: &extras.profile,
            })?;
            // After the run is stored: a kill while the shell is timed
            // loses no finished run.
            if entered {
                shell_cost.after_run(p, slot, opts.cancel);
            }
            if queue.front().is_none_or(|next| next.block != slot.block) {
                shell_cost.store(store, exp, shell_cost::FLUSH_SAMPLES)?;
            }
            let failed = matches!(outcome, RunOutcome::Failed { .. });
            runs_done += 1;
            runs_failed += failed as usize;
            progress.run_done(what, failed);
            let reason = match outcome {
                RunOutcome::Failed { reason, .. } => Some(reason.as_str()),
                RunOutcome::Ok(_) => None,
            };
            if let Some(msg) = failing.record(plan, exp, (slot.config, slot.workload), reason) {
                store.add_event(exp, "stop", &msg)?;
                progress.note(&msg);
                stopped = Some(msg);
                break;
            }
        }
        Ok(())
    }));

    // Always: leave the entered config, run the plan teardown, clean up.
    let mut cleanup_errors = Vec::new();
    if let Some(c) = current.take() {
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
    if let Some(t) = &plan.teardown {
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
    if let Err(e) = shell_cost.store(store, exp, 0) {
        cleanup_errors.push(format!("storing the shell's start-up times: {e:#}"));
    }
    progress.finish();
    for e in &cleanup_errors {
        let _ = store.add_event(exp, "teardown", e);
        crate::sys::stderr::say!("sysdelta: {e}");
    }

    let cancelled = opts.cancel.load(Ordering::SeqCst);
    // A teardown killed before its end (a second signal, its timeout)
    // leaves its config entered: the experiment is interrupted, whatever
    // else happened, so that `restore` reports it and `--resume` finishes
    // leaving it.
    let still_entered = p.configs.iter().any(|c| !c.left_cleanly());
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (self_cpu() - cpu0).as_secs_f64();
    let usage = usage(wall, cpu, runs_done);
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
                stopped,
                &usage,
                (runs_done, runs_failed),
            )
        }
    }
}
