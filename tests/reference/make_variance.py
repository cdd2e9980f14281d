#!/usr/bin/env python3
"""Reference values for stats::variance (tests/reference/variance.json).

Variance components of runs grouped by boot, by independent means:

* statsmodels MixedLM (y ~ 1, a random intercept per group), fitted by
  REML. On balanced groups the REML estimates equal the one-way ANOVA
  (method-of-moments) estimates whenever those are positive; when
  MSB < MSW the ANOVA estimate of the between variance is negative, and
  REML puts it on the boundary, 0 (where its within variance is no longer
  MSW, so only the 0 is compared). Fitted with Powell's method at tight
  tolerances: the default L-BFGS stops about 1e-4 short.
* the ANOVA table written out here from the textbook definitions with
  NumPy (group means, the two sums of squares, n0 = (N - sum n_i^2 / N) /
  (k - 1) for unbalanced groups);
* scipy.stats.f_oneway for F = MSB / MSW and its p-value, which ties the
  two mean squares to an implementation that is not this file's;
* scipy.stats.levene(center='median') (Brown-Forsythe) for the check of
  equal within-group variances.

Run:  pip install numpy scipy pandas statsmodels && python3 tests/reference/make_variance.py
Deterministic (fixed seeds); the output is committed.
"""
import json
import math
import os
import warnings

import numpy as np
import pandas as pd
import scipy
import scipy.stats as st
import statsmodels
import statsmodels.formula.api as smf

HERE = os.path.dirname(os.path.abspath(__file__))


def f(x):
    """Floats as Python repr strings (Rust's str::parse reads them back
    bit-exactly); None for undefined."""
    if x is None or not math.isfinite(x):
        return None
    return repr(float(x))


def anova(groups):
    ys = [np.asarray(g, dtype=float) for g in groups]
    k = len(ys)
    sizes = np.array([len(g) for g in ys], dtype=float)
    n = sizes.sum()
    allv = np.concatenate(ys)
    gm = allv.mean()
    means = np.array([g.mean() for g in ys])
    ssb = float(np.sum(sizes * (means - gm) ** 2))
    ssw = float(sum(np.sum((g - g.mean()) ** 2) for g in ys))
    msb = ssb / (k - 1)
    msw = ssw / (n - k)
    n0 = (n - np.sum(sizes ** 2) / n) / (k - 1)
    between = max(0.0, (msb - msw) / n0)
    total = between + msw
    share = between / total if total > 0 else None
    return {
        "k": k,
        "n": int(n),
        "n0": f(n0),
        "grand_mean": f(gm),
        "ms_between": f(msb),
        "ms_within": f(msw),
        "between": f(between),
        "within": f(msw),
        "share": f(share),
        "raw_between": (msb - msw) / n0,
    }


def mixedlm(groups):
    y = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    g = np.concatenate([[i] * len(x) for i, x in enumerate(groups)])
    df = pd.DataFrame({"y": y, "g": g})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = smf.mixedlm("y ~ 1", df, groups=df["g"]).fit(
            reml=True, method="powell", xtol=1e-13, ftol=1e-15, maxiter=200000)
    return float(r.cov_re.iloc[0, 0]), float(r.scale)


def case(name, groups, balanced):
    out = {"name": name, "groups": [[f(x) for x in g] for g in groups]}
    a = anova(groups)
    raw = a.pop("raw_between")
    out.update(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fo = st.f_oneway(*[np.asarray(g, dtype=float) for g in groups])
        lev = st.levene(*[np.asarray(g, dtype=float) for g in groups], center="median")
    out["f"] = f(fo.statistic)
    out["p"] = f(fo.pvalue)
    out["equal_within_p"] = f(lev.pvalue)
    if balanced:
        b, w = mixedlm(groups)
        out["mixedlm"] = {"between": f(b), "within": f(w), "boundary": bool(raw <= 0)}
    return out


def draw(rng, sizes, sd_between, sd_within, mean=100.0):
    effects = rng.normal(0.0, sd_between, len(sizes))
    return [list(mean + e + rng.normal(0.0, sd_within, m)) for e, m in zip(effects, sizes)]


def main():
    rng = np.random.default_rng(2026_11_26)
    cases = []
    # Balanced: boots x runs per boot, between-boot sd against within-boot sd 1.
    for k, m, sb in [(6, 5, 2.0), (6, 5, 0.5), (3, 10, 1.0), (10, 3, 0.3), (8, 4, 5.0),
                     (2, 3, 1.0), (6, 5, 0.05), (12, 8, 1.0)]:
        cases.append(case(f"balanced {k}x{m} sd_b {sb}", draw(rng, [m] * k, sb, 1.0), True))
    # A large level with a small spread: the two-pass sums keep precision.
    cases.append(case("balanced 6x5 at 1e6", draw(rng, [5] * 6, 0.02, 0.01, mean=1e6), True))
    # Hand-written: separated groups, and one group without spread.
    cases.append(case("hand 2x3", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], True))
    cases.append(case("hand, a group without spread",
                      [[5.0, 5.0, 5.0], [4.0, 6.0, 5.5], [7.0, 6.5, 8.0]], True))
    # Unbalanced (a boot that failed half way delivers fewer runs).
    for sizes, sb in [([5, 3, 8, 1, 4, 6], 1.0), ([2, 2, 10], 0.5), ([5, 5, 5, 5, 5, 2], 2.0),
                      ([1, 7, 3, 3], 0.0), ([30, 4, 9, 12, 2], 0.7)]:
        cases.append(case(f"unbalanced {sizes} sd_b {sb}", draw(rng, sizes, sb, 1.0), False))
    versions = {"numpy": np.__version__, "scipy": scipy.__version__,
                "statsmodels": statsmodels.__version__, "pandas": pd.__version__}
    obj = {"generated_by": "tests/reference/make_variance.py", "versions": versions,
           "cases": cases}
    with open(os.path.join(HERE, "variance.json"), "w") as fh:
        json.dump(obj, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
