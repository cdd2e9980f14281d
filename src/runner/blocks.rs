//! Which slots an experiment on the host runs: the planned blocks not yet
//! stored (and, on resume, the blocks an adaptive run had added, so that
//! one interrupted half-way is completed), then, once they are done, the
//! blocks `--min-time` or `--until` add. Apart from execute.rs, which runs
//! each slot in its config and does not care where the slots came from.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use super::finish::SoFar;
use super::progress::Progress;
use super::schedule::{self, Slot};
use crate::plan::Plan;
use crate::store::Store;

/// The slots still to run, and what may add more.
pub(super) struct Blocks<'a> {
    plan: &'a Plan,
    cells: Vec<(usize, usize)>,
    /// The first block not in the schedule yet.
    next_block: u32,
    /// `--until`: the CI width to reach and the most blocks (warm-up
    /// blocks included).
    adaptive: Option<(f64, u32)>,
    /// `--min-time` (hyperfine's minimum): the seconds each cell is to
    /// run and the most blocks; blocks are added, as many at once as the
    /// runs so far say are needed, until each cell has its time.
    min_time: Option<(f64, u32)>,
    /// The slots to run, in order.
    pub queue: VecDeque<Slot>,
    /// The runs so far, for --min-time and --until: read from the store a
    /// block at a time, made at the first look.
    so_far: Option<SoFar>,
}

impl<'a> Blocks<'a> {
    /// The schedule of `plan` without the slots `done` (stored already).
    pub fn new(plan: &'a Plan, done: &HashSet<(u32, u32)>) -> Blocks<'a> {
        let cells = plan.cells();
        let slots = schedule::schedule(&cells, plan.runs, plan.warmup, plan.order, plan.seed);
        let next_block = slots
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
        let queue: VecDeque<Slot> = slots
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
        Blocks {
            plan,
            cells,
            next_block,
            adaptive,
            min_time,
            queue,
            so_far: None,
        }
    }

    /// The runs the progress bar counts: all an adaptive experiment may
    /// still run, else those scheduled.
    pub fn total(&self, done: usize) -> usize {
        match self.adaptive {
            Some((_, max_blocks)) => (max_blocks as usize * self.cells.len()).saturating_sub(done),
            None => self.queue.len(),
        }
    }

    /// With the queue empty, the blocks `--min-time` or `--until` add, if
    /// any; false when the experiment has run its last block (a stop event
    /// says why when one of them ended it). `runs_done` counts the runs so
    /// far, for the progress bar's total.
    pub fn refill(
        &mut self,
        store: &Store,
        exp: i64,
        cancel: &AtomicBool,
        progress: &mut Progress,
        runs_done: usize,
    ) -> Result<bool> {
        if !self.queue.is_empty() {
            return Ok(true);
        }
        if let Some((secs, max_blocks)) = self.min_time {
            return self.for_min_time(store, exp, cancel, progress, runs_done, (secs, max_blocks));
        }
        match self.adaptive {
            Some((target, max_blocks)) if !cancel.load(Ordering::SeqCst) => {
                self.until_precision(store, exp, progress, (target, max_blocks))
            }
            _ => Ok(false),
        }
    }

    /// `--min-time`: as many blocks as the runs so far say each cell
    /// still needs, up to `--max-runs`; with `enough_ci` (`ab`'s default),
    /// fewer when the wall time comparison is precise enough first.
    fn for_min_time(
        &mut self,
        store: &Store,
        exp: i64,
        cancel: &AtomicBool,
        progress: &mut Progress,
        runs_done: usize,
        (secs, max_blocks): (f64, u32),
    ) -> Result<bool> {
        if cancel.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let (next_block, warmup) = (self.next_block, self.plan.warmup);
        let (need, why) = self.so_far(store, exp)?.blocks_for_min_time(store, secs)?;
        let mut add = need.min(max_blocks.saturating_sub(next_block));
        if let (true, Some(target)) = (add > 0, self.plan.overrides.enough_ci) {
            let wall = ["wall".to_string()];
            let (reached, ci) = self
                .so_far(store, exp)?
                .precision_check(store, target, &wall)?;
            if reached {
                let msg = format!(
                    "{} measured runs per cell: the wall time comparison is precise enough before {secs} s per cell ({ci})",
                    next_block - warmup
                );
                store.add_event(exp, "stop", &msg)?;
                progress.note(&msg);
                return Ok(false);
            }
            // Asked again once the runs have grown by half: each check
            // folds the run log and reads the new runs, so checks stay
            // few (about 15 up to 3,000 runs), and the count overshoots
            // the one that was enough by at most half.
            add = add.min(((next_block - warmup) / 2).max(1));
        }
        if add == 0 {
            let msg = if need == 0 {
                format!("{} measured runs per cell: {why}", next_block - warmup)
            } else {
                format!(
                    "stopped at --max-runs ({} per cell) before --min-time {secs} s",
                    next_block - warmup
                )
            };
            store.add_event(exp, "stop", &msg)?;
            return Ok(false);
        }
        for b in next_block..next_block + add {
            self.queue.extend(schedule::random_block(
                &self.cells,
                self.plan.seed,
                b,
                false,
            ));
        }
        self.next_block += add;
        progress.set_total((runs_done + self.queue.len()) as u64);
        Ok(true)
    }

    /// What the stopping rules know of the runs so far.
    fn so_far(&mut self, store: &Store, exp: i64) -> Result<&mut SoFar> {
        if self.so_far.is_none() {
            self.so_far = Some(SoFar::new(store, exp)?);
        }
        Ok(self.so_far.as_mut().expect("made above"))
    }

    /// Adaptive stopping: check the precision, then add one block.
    fn until_precision(
        &mut self,
        store: &Store,
        exp: i64,
        progress: &mut Progress,
        (target, max_blocks): (f64, u32),
    ) -> Result<bool> {
        let plan = self.plan;
        let next_block = self.next_block;
        let (reached, why) = self.so_far(store, exp)?.precision_check(
            store,
            target,
            &plan.overrides.until_metrics,
        )?;
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
            return Ok(false);
        }
        let b = next_block;
        self.next_block += 1;
        self.queue.extend(schedule::random_block(
            &self.cells,
            plan.seed,
            b,
            b < plan.warmup,
        ));
        debug_assert_eq!(self.queue.len(), self.cells.len());
        Ok(true)
    }
}
