#!/usr/bin/env python3
"""Reference splits for sysdelta's binary segmentation (src/series/changepoint.rs).

ruptures' Binseg with the l2 cost (min_size=1, jump=1) splits a segment where
the drop in the sum of squared deviations is largest; that drop at k is
k (n-k) / n * (mean(x[:k]) - mean(x[k:]))^2, the square of sysdelta's split
statistic, so its single best split (n_bkps=1) is sysdelta's best split. For
series with steps, Binseg's splits are recorded for n_bkps = 1 to the number
of steps + 2: whatever number sysdelta's permutation-tested search keeps, its
splits must be Binseg's for that number. Writes
tests/reference/changepoint_binseg.json.

Run: pip install ruptures numpy; python3 tests/reference/make_changepoint_vectors.py
"""
import json
import os

import numpy as np
import ruptures as rpt

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(34)


def first_split(x):
    """ruptures' single best split: the index where the second segment starts."""
    algo = rpt.Binseg(model="l2", min_size=1, jump=1).fit(np.asarray(x).reshape(-1, 1))
    return algo.predict(n_bkps=1)[0]


def splits(x, k):
    algo = rpt.Binseg(model="l2", min_size=1, jump=1).fit(np.asarray(x).reshape(-1, 1))
    return algo.predict(n_bkps=k)[:-1]


single = []
for case in range(60):
    n = int(rng.integers(3, 120))
    x = 100 + rng.normal(0, 2, n)
    if case % 3 == 1:
        x[int(rng.integers(1, n)):] += 5
    if case % 4 == 3:
        # A coarse grid: many equal values, ties in the statistic.
        x = np.round(x)
    x = [float(v) for v in x]
    single.append({"name": f"single_{case}", "x": x, "split": int(first_split(x))})

stepped = []
for name, levels, lengths, sd in [
    ("one_step_40", [10.0, 12.0], [20, 20], 0.3),
    ("two_steps_60", [10.0, 13.0, 9.0], [20, 20, 20], 0.3),
    ("three_steps_200", [100.0, 110.0, 95.0, 120.0], [50, 50, 50, 50], 2.0),
    ("step_near_the_end_30", [5.0, 7.0], [24, 6], 0.1),
]:
    x = np.concatenate([np.full(n, lv) for lv, n in zip(levels, lengths)])
    x = [float(v) for v in np.round(x + rng.normal(0, sd, len(x)), 4)]
    by_count = {str(k): [int(s) for s in splits(x, k)] for k in range(1, len(levels) + 2)}
    stepped.append({"name": name, "x": x, "steps": len(levels) - 1, "by_count": by_count})

out = {
    "source": f"ruptures {rpt.__version__} Binseg(model='l2', min_size=1, jump=1)",
    "single": single,
    "stepped": stepped,
}
with open(os.path.join(HERE, "changepoint_binseg.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print(f"wrote {len(single)} single and {len(stepped)} stepped cases")
