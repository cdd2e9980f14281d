#!/usr/bin/env python3
"""Write the reference vectors that tests/stats/reference.rs checks.

Independent implementations: numpy (summaries), scipy.stats.mannwhitneyu,
statsmodels.stats.multitest.multipletests, scipy.stats.bootstrap.
Run:  pip install numpy scipy statsmodels && python3 tests/reference/make_vectors.py
The output is deterministic (fixed seeds) and is committed.
"""
import json
import os

import numpy as np
import scipy
import scipy.stats as st
import statsmodels
from statsmodels.stats.multitest import multipletests

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261121)  # used by main() only


def versions():
    return {"numpy": np.__version__, "scipy": scipy.__version__,
            "statsmodels": statsmodels.__version__}


def dump(name, obj):
    obj = {"generated_by": "tests/reference/make_vectors.py", "versions": versions(), **obj}
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def f(x):
    """Floats are written as Python repr strings: Rust's str::parse reads
    them back bit-exactly, while JSON number parsers may be off by an ulp."""
    return None if x is None else repr(float(x))


def fl(xs):
    return [f(x) for x in xs]


def main():
    # ---------------------------------------------------------------- summary
    def summary_case(xs):
        xs = np.asarray(xs, dtype=float)
        n = len(xs)
        s = np.sort(xs)
        std = float(np.std(xs, ddof=1)) if n >= 2 else None
        mean = float(np.mean(xs))
        return {
            "xs": fl(xs), "n": n, "mean": f(mean), "median": f(np.median(xs)),
            "min": f(s[0]), "max": f(s[-1]), "stddev": f(std),
            "cov": f(std / abs(mean)) if (std is not None and mean != 0) else None,
            "trimmed_mean": f(np.mean(s[1:-1])) if n >= 3 else None,
        }


    summary_inputs = [
        [5.0], [1.0, 2.0], [3.0, 1.0, 2.0], [1.0, 1.0, 1.0, 1.0],
        [10.0, 12.0, 11.0, 50.0, 9.0],
        [0.0, 0.0, 1.0], [-1.0, 1.0, -2.0, 2.0],
        list(1e9 + rng.normal(0, 3, 25)),
        list(rng.lognormal(3, 0.5, 101)),
        list(np.round(rng.normal(100, 2, 40))),
    ]
    dump("summary.json", {"cases": [summary_case(x) for x in summary_inputs]})


    # ---------------------------------------------------------------- mann-whitney
    def mwu_case(a, b, label):
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        res = st.mannwhitneyu(a, b, alternative="two-sided", use_continuity=True, method="auto")
        ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
        method = "asymptotic" if (len(a) > 8 and len(b) > 8) or ties else "exact"
        # Confirm the rule we wrote down is the one SciPy applied.
        check = st.mannwhitneyu(a, b, alternative="two-sided", use_continuity=True, method=method)
        assert check.pvalue == res.pvalue and check.statistic == res.statistic, label
        return {"label": label, "a": fl(a), "b": fl(b), "u": f(res.statistic),
                "p": f(res.pvalue), "method": method}


    mwu = []
    for n1 in range(1, 9):
        for n2 in range(1, 9):
            a = rng.normal(0, 1, n1)
            b = rng.normal(0.8, 1, n2)
            mwu.append(mwu_case(a, b, f"exact {n1}x{n2}"))
    # Completely separated samples: the smallest exact p-values.
    for n in (2, 3, 4, 5, 6, 8):
        mwu.append(mwu_case(np.arange(n) + 100.0, np.arange(n) + 0.5, f"separated {n}x{n}"))
    mwu.append(mwu_case(rng.normal(0, 1, 8), rng.normal(0.3, 1, 40), "exact 8x40"))
    mwu.append(mwu_case(rng.normal(0, 1, 3), rng.normal(0.3, 1, 200), "exact 3x200"))
    mwu.append(mwu_case(rng.normal(0, 1, 8), rng.normal(0.1, 1, 1000), "exact 8x1000"))
    # Ties force the normal approximation even for tiny samples.
    mwu.append(mwu_case([1, 2, 2, 3], [2, 3, 4, 4, 5], "ties small"))
    mwu.append(mwu_case([1.0], [1.0], "identical 1x1"))
    mwu.append(mwu_case([7.0] * 5, [7.0] * 6, "identical 5x6"))
    mwu.append(mwu_case([7.0] * 30, [7.0] * 30, "identical 30x30"))
    mwu.append(mwu_case([0.0, -0.0, 1.0], [2.0, 3.0], "signed zeros tie"))
    mwu.append(mwu_case([1.0], [2.0], "exact 1x1"))
    mwu.append(mwu_case(np.round(rng.normal(10, 2, 9)), np.round(rng.normal(11, 2, 12)), "ties 9x12"))
    for n1, n2, shift in [(9, 9, 0.5), (10, 15, 1.0), (20, 20, 0.0), (50, 60, 0.3),
                          (200, 300, 0.1), (1000, 1000, 0.05)]:
        a = rng.normal(0, 1, n1)
        b = rng.normal(shift, 1, n2)
        mwu.append(mwu_case(a, b, f"asymptotic {n1}x{n2}"))
        mwu.append(mwu_case(np.round(a * 2), np.round(b * 2), f"asymptotic ties {n1}x{n2}"))
    # Far tail: p-values around 1e-30 and below.
    mwu.append(mwu_case(rng.normal(0, 1, 100), rng.normal(5, 1, 100), "far tail 100x100"))
    dump("mannwhitney.json", {"cases": mwu})


    # ---------------------------------------------------------------- multiple testing
    mt = []
    p_inputs = [
        [0.01], [0.04, 0.01, 0.03, 0.5], [0.01, 0.01, 0.02, 0.02, 0.9],
        [0.2, 0.3, 0.5, 0.8, 1.0], [1e-10, 0.049, 0.051, 0.3, 0.0001, 0.7, 0.02],
        list(rng.uniform(0, 0.1, 20)), [0.0, 1.0, 0.5],
    ]
    for p in p_inputs:
        mt.append({"p": fl(p),
                   "holm": fl(multipletests(p, method="holm")[1]),
                   "fdr_bh": fl(multipletests(p, method="fdr_bh")[1])})
    dump("multiple.json", {"cases": mt})


    # ---------------------------------------------------------------- bootstrap
    def ratio(x, y, axis=-1):
        return np.mean(y, axis=axis) / np.mean(x, axis=axis)


    boot = []
    for n, cov, shift in [(10, 0.02, 1.0), (20, 0.01, 1.02), (50, 0.05, 0.97), (200, 0.01, 1.005)]:
        base = 1000 * (1 + cov * rng.normal(0, 1, n))
        other = 1000 * shift * (1 + cov * rng.normal(0, 1, n))
        res = st.bootstrap((base, other), ratio, vectorized=True, paired=False,
                           n_resamples=100_000, confidence_level=0.95,
                           method="percentile", rng=np.random.default_rng(n))
        boot.append({"base": fl(base), "other": fl(other), "confidence": f(0.95),
                     "scipy_resamples": 100_000,
                     "lo": f(res.confidence_interval.low),
                     "hi": f(res.confidence_interval.high)})
    dump("bootstrap.json", {"cases": boot})
    print("wrote", sorted(f for f in os.listdir(HERE) if f.endswith(".json")))


if __name__ == "__main__":
    main()
