//! The order of boots and of the runs inside each.
//!
//! `random-blocks`: boot block k holds one boot of every kernel config, in
//! an order drawn from ChaCha8 (the experiment seed, stream `1 << 32 | k`),
//! so drift on the host (load, temperature, other work) spreads over the
//! configs as it does over runs on the host. Inside a boot, `warmup` rounds
//! then `runs / boots` measured rounds each run every workload once, in an
//! order drawn from the boot's own stream (`2 << 32 | k << 16 | config`).
//! Warm-up is per boot: after a boot the page cache is cold, and the first
//! exec of sysdelta's own binary over virtiofs costs 0.1-0.8 s here.
//! `sequential`: every boot of one config, then the next (for comparison).
//!
//! Runs keep their `(block, seq)` identity: `block` is the boot block and
//! `seq` the run's place in it, so a run is stored once whichever boot
//! finally delivers it (`--resume` boots again for what a killed one left).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::plan::Order;
use crate::runner::schedule::Slot;

/// One boot of one config and the runs assigned to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootSlot {
    /// The boot block.
    pub block: u32,
    /// Place in the block's order.
    pub position: u32,
    pub config: usize,
    /// Warm-up rounds first, then measured rounds.
    pub slots: Vec<Slot>,
}

/// The shape of a kernel plan's schedule.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub configs: usize,
    pub workloads: usize,
    pub boots: u32,
    /// Measured rounds per boot (every workload once a round).
    pub rounds: u32,
    /// Warm-up rounds per boot.
    pub warmup: u32,
}

fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// The slots of one boot of `config` at `position` of block `block`.
fn boot_slots(
    s: &Shape,
    block: u32,
    position: u32,
    config: usize,
    shuffle: Option<u64>,
) -> Vec<Slot> {
    let per_round = s.workloads as u32;
    let per_boot = (s.warmup + s.rounds) * per_round;
    let mut r = shuffle.map(|seed| rng(seed, 2 << 32 | (block as u64) << 16 | config as u64));
    let mut out = Vec::with_capacity(per_boot as usize);
    for round in 0..s.warmup + s.rounds {
        let mut order: Vec<usize> = (0..s.workloads).collect();
        if let Some(r) = r.as_mut() {
            order.shuffle(r);
        }
        for (i, w) in order.into_iter().enumerate() {
            out.push(Slot {
                block,
                seq: position * per_boot + round * per_round + i as u32,
                config,
                workload: w,
                warmup: round < s.warmup,
            });
        }
    }
    out
}

/// Every boot of the experiment, in the order they run.
pub fn boots(s: &Shape, order: Order, seed: u64) -> Vec<BootSlot> {
    match order {
        Order::RandomBlocks => (0..s.boots)
            .flat_map(|block| {
                let mut configs: Vec<usize> = (0..s.configs).collect();
                configs.shuffle(&mut rng(seed, 1 << 32 | block as u64));
                configs
                    .into_iter()
                    .enumerate()
                    .map(move |(pos, c)| BootSlot {
                        block,
                        position: pos as u32,
                        config: c,
                        slots: boot_slots(s, block, pos as u32, c, Some(seed)),
                    })
            })
            .collect(),
        Order::Sequential => (0..s.configs)
            .flat_map(|c| {
                (0..s.boots).map(move |block| BootSlot {
                    block,
                    position: c as u32,
                    config: c,
                    slots: boot_slots(s, block, c as u32, c, None),
                })
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const SHAPE: Shape = Shape {
        configs: 3,
        workloads: 4,
        boots: 5,
        rounds: 2,
        warmup: 1,
    };

    #[test]
    fn every_config_boots_once_per_block_and_runs_every_workload_each_round() {
        let b = boots(&SHAPE, Order::RandomBlocks, 7);
        assert_eq!(b.len(), 15);
        for block in 0..5 {
            let mut cs: Vec<usize> = b
                .iter()
                .filter(|x| x.block == block)
                .map(|x| x.config)
                .collect();
            cs.sort();
            assert_eq!(cs, vec![0, 1, 2]);
        }
        for boot in &b {
            assert_eq!(boot.slots.len(), 12);
            assert!(boot
                .slots
                .iter()
                .all(|s| s.config == boot.config && s.block == boot.block));
            assert_eq!(boot.slots.iter().filter(|s| s.warmup).count(), 4);
            for round in boot.slots.chunks(4) {
                let mut ws: Vec<usize> = round.iter().map(|s| s.workload).collect();
                ws.sort();
                assert_eq!(ws, vec![0, 1, 2, 3]);
            }
        }
        let ids: HashSet<(u32, u32)> = b
            .iter()
            .flat_map(|x| x.slots.iter().map(|s| (s.block, s.seq)))
            .collect();
        assert_eq!(ids.len(), 15 * 12, "(block, seq) names one run");
    }

    #[test]
    fn boot_order_is_seeded_and_varies_between_blocks() {
        let a = boots(&SHAPE, Order::RandomBlocks, 7);
        assert_eq!(a, boots(&SHAPE, Order::RandomBlocks, 7));
        let orders: HashSet<Vec<usize>> = (0..5)
            .map(|k| {
                a.iter()
                    .filter(|x| x.block == k)
                    .map(|x| x.config)
                    .collect()
            })
            .collect();
        assert!(orders.len() > 1, "the config order changes between blocks");
        assert_ne!(a, boots(&SHAPE, Order::RandomBlocks, 8));
    }

    #[test]
    fn sequential_boots_each_config_in_turn() {
        let b = boots(&SHAPE, Order::Sequential, 7);
        let cs: Vec<usize> = b.iter().map(|x| x.config).collect();
        assert_eq!(cs, vec![0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    }
}
