//! Which slots an experiment on the host runs: the planned blocks not yet
//! stored (and, on resume, the blocks an adaptive run had added, so that
//! one interrupted half-way is completed), then, once they are done, the
//! blocks `--min-time` or `--until` add. Apart from execute.rs, which runs
//! each slot in its config and does not care where the slots came from.

use std::collections::{HashSet, VecDeque};
use std::iter::Peekable;
use std::ops::Range;
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
    /// The planned slots not yet run (and on resume the blocks an
    /// adaptive run had added), made a block at a time as they are
    /// reached: a 10,000-block plan never holds its whole schedule.
    planned: Peekable<Box<dyn Iterator<Item = Slot>>>,
    /// How many slots `planned` held when made, for the progress total.
    planned_len: usize,
    /// Blocks `--min-time` added and not yet begun, made one at a time.
    added: Range<u32>,
    /// The slots of the added block under way.
    queue: VecDeque<Slot>,
    /// The runs so far, for --min-time and --until: read from the store a
    /// block at a time, made at the first look.
    so_far: Option<SoFar>,
}

impl<'a> Blocks<'a> {
    /// The schedule of `plan` without the slots `done` (stored already).
    pub fn new(plan: &'a Plan, done: HashSet<(u32, u32)>) -> Blocks<'a> {
        let cells = plan.cells();
        let (runs, warmup, order, seed) = (plan.runs, plan.warmup, plan.order, plan.seed);
        let planned_blocks = warmup + runs;
        let next_block = done
            .iter()
            .map(|d| d.0 + 1)
            .chain((planned_blocks > 0 && !cells.is_empty()).then_some(planned_blocks))
            .max()
            .unwrap_or(0);
        // Blocks an adaptive experiment added beyond the planned ones are
        // rebuilt too, so a block interrupted half-way is completed on resume.
        let all = {
            let cells = cells.clone();
            move || {
                let extra_cells = cells.clone();
                schedule::slots(cells.clone(), runs, warmup, order, seed).chain(
                    (planned_blocks..next_block).flat_map(move |b| {
                        schedule::random_block(&extra_cells, seed, b, b < warmup)
                    }),
                )
            }
        };
        // Counted once by walking the slots, not by keeping them.
        let planned_len = all().filter(|s| !done.contains(&(s.block, s.seq))).count();
        let remaining: Box<dyn Iterator<Item = Slot>> =
            Box::new(all().filter(move |s| !done.contains(&(s.block, s.seq))));
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
            planned: remaining.peekable(),
            planned_len,
            added: 0..0,
            queue: VecDeque::new(),
            so_far: None,
        }
    }

    /// The runs the progress bar counts: all an adaptive experiment may
    /// still run, else those scheduled.
    pub fn total(&self, done: usize) -> usize {
        match self.adaptive {
            Some((_, max_blocks)) => (max_blocks as usize * self.cells.len()).saturating_sub(done),
            None => self.planned_len,
        }
    }

    /// The next slot to run, if one is scheduled (call [`Blocks::refill`]
    /// first for the blocks the stopping rules add).
    pub fn pop(&mut self) -> Option<Slot> {
        if let Some(s) = self.planned.next() {
            return Some(s);
        }
        self.begin_added_block();
        self.queue.pop_front()
    }

    /// The block of the slot [`Blocks::pop`] gives next, if one is
    /// scheduled: where a block ends.
    pub fn next_block_of(&mut self) -> Option<u32> {
        if let Some(s) = self.planned.peek() {
            return Some(s.block);
        }
        self.begin_added_block();
        self.queue.front().map(|s| s.block)
    }

    /// With the block under way run, the slots of the next block
    /// `--min-time` added, if any.
    fn begin_added_block(&mut self) {
        if self.queue.is_empty() {
            if let Some(b) = self.added.next() {
                self.queue.extend(schedule::random_block(
                    &self.cells,
                    self.plan.seed,
                    b,
                    false,
                ));
            }
        }
    }

    /// Whether a slot is scheduled.
    fn has_slot(&mut self) -> bool {
        self.next_block_of().is_some()
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
        if self.has_slot() {
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
            // folds the run log and reads the new runs.
            add = add.min(crate::analysis::precision::runs_before_next_check(
                next_block - warmup,
            ));
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
        // Made a block at a time as they are reached (see `pop`).
        self.added = next_block..next_block + add;
        self.next_block += add;
        progress.set_total((runs_done + add as usize * self.cells.len()) as u64);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(order: &str) -> Plan {
        let text = format!(
            "runs = 300\nwarmup = 2\nseed = 9\norder = \"{order}\"\n\
             [[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n\
             [[workload]]\nname = \"w\"\ncommand = \"true\"\n\
             [[workload]]\nname = \"v\"\ncommand = \"true\"\n"
        );
        crate::plan::parse("t.toml", &text, &Default::default()).unwrap()
    }

    /// The order a seed gives is kept: seed 7 on 3 configs x 2
    /// workloads (1 warm-up block, 2 measured) runs these slots, as
    /// `schedule()` made them whole before slots were made as reached
    /// (bb9c4df). A stored experiment resumed, or an experiment run again
    /// with its seed, depends on it. (block, seq, config, workload)
    #[test]
    fn a_seed_gives_the_order_it_always_gave() {
        const RANDOM: [(u32, u32, usize, usize); 18] = [
            (0, 0, 0, 0),
            (0, 1, 1, 1),
            (0, 2, 2, 1),
            (0, 3, 1, 0),
            (0, 4, 2, 0),
            (0, 5, 0, 1),
            (1, 0, 0, 0),
            (1, 1, 2, 1),
            (1, 2, 1, 0),
            (1, 3, 0, 1),
            (1, 4, 2, 0),
            (1, 5, 1, 1),
            (2, 0, 2, 1),
            (2, 1, 1, 0),
            (2, 2, 0, 0),
            (2, 3, 0, 1),
            (2, 4, 1, 1),
            (2, 5, 2, 0),
        ];
        const SEQUENTIAL: [(u32, u32, usize, usize); 18] = [
            (0, 0, 0, 0),
            (1, 0, 0, 0),
            (2, 0, 0, 0),
            (0, 1, 0, 1),
            (1, 1, 0, 1),
            (2, 1, 0, 1),
            (0, 2, 1, 0),
            (1, 2, 1, 0),
            (2, 2, 1, 0),
            (0, 3, 1, 1),
            (1, 3, 1, 1),
            (2, 3, 1, 1),
            (0, 4, 2, 0),
            (1, 4, 2, 0),
            (2, 4, 2, 0),
            (0, 5, 2, 1),
            (1, 5, 2, 1),
            (2, 5, 2, 1),
        ];
        for (order, want) in [("random-blocks", RANDOM), ("sequential", SEQUENTIAL)] {
            let text = format!(
                "runs = 2\nwarmup = 1\nseed = 7\norder = \"{order}\"\n\
                 [[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n[[config]]\nname = \"c\"\n\
                 [[workload]]\nname = \"w\"\ncommand = \"true\"\n\
                 [[workload]]\nname = \"v\"\ncommand = \"true\"\n"
            );
            let p = crate::plan::parse("t.toml", &text, &Default::default()).unwrap();
            let mut b = Blocks::new(&p, HashSet::new());
            let got: Vec<Slot> = std::iter::from_fn(|| b.pop()).collect();
            let keys: Vec<(u32, u32, usize, usize)> = got
                .iter()
                .map(|s| (s.block, s.seq, s.config, s.workload))
                .collect();
            assert_eq!(keys, want, "{order}");
            assert!(got.iter().all(|s| s.warmup == (s.block == 0)), "{order}");
        }
    }

    /// Slots made as they are reached run in the order, and the count,
    /// of the whole schedule, less what the store holds already.
    #[test]
    fn slots_made_as_reached_are_the_schedule_less_those_done() {
        for order in ["random-blocks", "sequential"] {
            let p = plan(order);
            let whole = schedule::schedule(&p.cells(), p.runs, p.warmup, p.order, p.seed);
            let done: HashSet<(u32, u32)> =
                whole.iter().step_by(7).map(|s| (s.block, s.seq)).collect();
            let want: Vec<Slot> = whole
                .iter()
                .filter(|s| !done.contains(&(s.block, s.seq)))
                .copied()
                .collect();
            let mut b = Blocks::new(&p, done);
            assert_eq!(b.total(0), want.len(), "{order}");
            let mut got = Vec::new();
            while let Some(s) = b.pop() {
                // The block the next slot is in is known before it runs.
                assert_eq!(b.next_block_of(), want.get(got.len() + 1).map(|n| n.block));
                got.push(s);
                // Nothing is queued ahead: the planned slots are made one
                // block (or slot) at a time.
                assert!(b.queue.is_empty());
            }
            assert_eq!(got, want, "{order}");
        }
    }
}
