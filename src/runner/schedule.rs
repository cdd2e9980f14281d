//! The order of runs.
//!
//! `random-blocks`: block b runs every (config, workload) cell of the plan
//! once (`Plan::cells`: the full matrix, or less and some cells repeated
//! for the monitor-overhead control), in an order drawn from ChaCha8 seeded with the experiment seed on stream b, so
//! any block can be rebuilt alone (for `--resume`, and for adaptive stopping
//! that appends blocks). The first `warmup` blocks are warm-up runs.
//! `sequential`: all runs of one cell, then the next.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::plan::Order;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    pub block: u32,
    pub seq: u32,
    pub config: usize,
    pub workload: usize,
    pub warmup: bool,
}

/// The cells of block `b` in random-blocks order.
pub fn random_block(cells: &[(usize, usize)], seed: u64, b: u32, warmup: bool) -> Vec<Slot> {
    let mut cells = cells.to_vec();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(b as u64);
    cells.shuffle(&mut rng);
    cells
        .into_iter()
        .enumerate()
        .map(|(i, (c, w))| Slot {
            block: b,
            seq: i as u32,
            config: c,
            workload: w,
            warmup,
        })
        .collect()
}

/// The whole schedule: `warmup + runs` blocks of `cells` (see
/// `Plan::cells`).
pub fn schedule(
    cells: &[(usize, usize)],
    runs: u32,
    warmup: u32,
    order: Order,
    seed: u64,
) -> Vec<Slot> {
    slots(cells.to_vec(), runs, warmup, order, seed).collect()
}

/// [`schedule`]'s slots, made as they are reached: a block (random-blocks)
/// or a slot (sequential) at a time, so the runner never holds the whole
/// schedule of a long plan.
pub fn slots(
    cells: Vec<(usize, usize)>,
    runs: u32,
    warmup: u32,
    order: Order,
    seed: u64,
) -> Box<dyn Iterator<Item = Slot>> {
    let blocks = warmup + runs;
    match order {
        Order::RandomBlocks => {
            Box::new((0..blocks).flat_map(move |b| random_block(&cells, seed, b, b < warmup)))
        }
        Order::Sequential => Box::new((0..cells.len()).flat_map(move |i| {
            let (config, workload) = cells[i];
            (0..blocks).map(move |b| Slot {
                block: b,
                seq: i as u32,
                config,
                workload,
                warmup: b < warmup,
            })
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn matrix(configs: usize, workloads: usize) -> Vec<(usize, usize)> {
        crate::monitor::control::cells(
            &(0..configs).map(|c| c.to_string()).collect::<Vec<_>>(),
            &(0..workloads).map(|w| format!("w{w}")).collect::<Vec<_>>(),
            1,
        )
    }

    #[test]
    fn every_block_runs_every_cell_once() {
        let s = schedule(&matrix(3, 2), 5, 1, Order::RandomBlocks, 42);
        assert_eq!(s.len(), 6 * 6);
        for b in 0..6 {
            let cells: HashSet<(usize, usize)> = s
                .iter()
                .filter(|x| x.block == b)
                .map(|x| (x.config, x.workload))
                .collect();
            assert_eq!(cells.len(), 6);
            assert!(s
                .iter()
                .filter(|x| x.block == b)
                .all(|x| x.warmup == (b == 0)));
        }
        let keys: HashSet<(u32, u32)> = s.iter().map(|x| (x.block, x.seq)).collect();
        assert_eq!(keys.len(), s.len(), "slot keys are unique");
    }

    #[test]
    fn order_is_seeded_and_varies_between_blocks() {
        let a = schedule(&matrix(4, 1), 10, 0, Order::RandomBlocks, 7);
        assert_eq!(a, schedule(&matrix(4, 1), 10, 0, Order::RandomBlocks, 7));
        assert_ne!(a, schedule(&matrix(4, 1), 10, 0, Order::RandomBlocks, 8));
        let firsts: HashSet<usize> = (0..10).map(|b| a[b * 4].config).collect();
        assert!(
            firsts.len() > 1,
            "the first config of a block is not always the same"
        );
    }

    #[test]
    fn sequential_runs_cells_one_after_another() {
        let s = schedule(&matrix(2, 1), 3, 0, Order::Sequential, 1);
        let cfgs: Vec<usize> = s.iter().map(|x| x.config).collect();
        assert_eq!(cfgs, vec![0, 0, 0, 1, 1, 1]);
        let keys: HashSet<(u32, u32)> = s.iter().map(|x| (x.block, x.seq)).collect();
        assert_eq!(keys.len(), 6);
    }
}
