#!/usr/bin/env python3
"""Reference vectors for the phase-2 statistics (tests/reference/*.json).

Independent implementations: scipy.special / scipy.stats distributions,
statsmodels' TTestIndPower, SciPy's BCa internals and bootstrap, scipy's
theilslopes / skew / kurtosis, and, where no library has the method, a
plain Python implementation written here from the textbook definition
(Hodges-Lehmann with the Moses CI as R's wilcox.test computes it,
Mann-Kendall). Run after make_vectors.py; deterministic.
"""
import json
import math
import os

import numpy as np
import scipy.stats as st
from scipy.optimize import brentq
from scipy.special import ndtri
from scipy.stats._resampling import _bca_interval
from statsmodels.stats.power import TTestIndPower

from make_vectors import dump, f, fl

rng = np.random.default_rng(2026_11_22)

# ---------------------------------------------------------------- special functions
special = {"normal_quantile": [], "t_cdf": [], "t_quantile": [], "nct_cdf": []}
for p in [1e-12, 1e-6, 0.001, 0.025, 0.05, 0.2, 0.5, 0.8, 0.95, 0.975, 0.999999]:
    special["normal_quantile"].append({"p": f(p), "x": f(ndtri(p))})
for df in [1, 2, 3, 5, 9.5, 18, 38, 100, 1000]:
    for t in [-30, -3.1, -1.0, 0.3, 2.0, 6.0]:
        special["t_cdf"].append({"t": f(t), "df": f(df), "p": f(st.t.cdf(t, df))})
    for p in [0.001, 0.025, 0.1, 0.6, 0.975, 0.9995]:
        special["t_quantile"].append({"p": f(p), "df": f(df), "t": f(st.t.ppf(p, df))})
for df in [2, 5, 18, 38, 198]:
    for nc in [-3.0, 0.0, 0.5, 2.8, 6.0, 12.0]:
        for t in [-2.5, -0.5, 0.7, 2.0, 4.0]:
            p = st.nct.cdf(t, df, nc)
            if np.isfinite(p):  # SciPy returns NaN in some far tails
                special["nct_cdf"].append({"t": f(t), "df": f(df), "nc": f(nc), "p": f(p)})
dump("special.json", {"cases": [], **special})

# ---------------------------------------------------------------- power
power = {"power": [], "runs": [], "mde": []}
tt = TTestIndPower()
for es in [0.2, 0.5, 1.0, 2.0]:
    for n in [2.5, 5, 10, 20, 64]:
        pw = tt.power(es, n, 0.05)
        if np.isfinite(pw):  # statsmodels gives NaN where nct._sf fails
            power["power"].append({"es": f(es), "n": f(n), "alpha": f(0.05), "power": f(pw)})
for d, cov in [(0.005, 0.01), (0.01, 0.01), (0.02, 0.01), (0.05, 0.01), (0.01, 0.03), (0.1, 0.02)]:
    # statsmodels' solve_power stops at about 1e-7 relative; solve its own
    # power function tightly instead.
    n0 = tt.solve_power(effect_size=d / cov, alpha=0.05, power=0.8)
    n = brentq(lambda nn: tt.power(d / cov, nn, 0.05) - 0.8, max(2.0, n0 * 0.8), n0 * 1.2,
               xtol=1e-14, rtol=1e-15)
    z = ndtri(0.975) + ndtri(0.8)
    power["runs"].append({"d": f(d), "cov": f(cov), "n_real": f(n),
                          "n_known_variance": int(math.ceil(2 * z * z * (cov / d) ** 2 - 1e-9))})
for n, cov in [(3, 0.01), (5, 0.01), (10, 0.02), (30, 0.01), (200, 0.05)]:
    es0 = tt.solve_power(nobs1=n, alpha=0.05, power=0.8)
    es = brentq(lambda e: tt.power(e, n, 0.05) - 0.8, es0 * 0.9, es0 * 1.1,
                xtol=1e-15, rtol=1e-15)
    power["mde"].append({"n": n, "cov": f(cov), "d": f(es * cov)})
dump("power.json", {"cases": [], **power})


# ---------------------------------------------------------------- BCa
def ratio(x, y, axis=-1):
    return np.mean(y, axis=axis) / np.mean(x, axis=axis)


bca = []
for n_b, n_o, cov, shift, skewed in [(10, 12, 0.03, 1.02, False), (20, 20, 0.01, 0.99, True),
                                     (6, 6, 0.05, 1.10, True), (40, 30, 0.02, 1.0, False)]:
    if skewed:
        base = 1000 * rng.lognormal(0, cov * 3, n_b)
        other = 1000 * shift * rng.lognormal(0, cov * 3, n_o)
    else:
        base = 1000 * (1 + cov * rng.normal(0, 1, n_b))
        other = 1000 * shift * (1 + cov * rng.normal(0, 1, n_o))
    # A fixed bootstrap distribution, so the deterministic part of BCa
    # (z0, acceleration, levels, quantiles) can be compared exactly.
    bi = rng.integers(0, n_b, (4000, n_b))
    oi = rng.integers(0, n_o, (4000, n_o))
    theta_b = other[oi].mean(-1) / base[bi].mean(-1)
    a1, a2, a_hat = _bca_interval((base, other), ratio, axis=-1, alpha=0.025,
                                  theta_hat_b=theta_b, batch=None, xp=np)
    lo, hi = st.quantile(theta_b, np.array([a1, a2]))
    full = st.bootstrap((base, other), ratio, vectorized=True, paired=False,
                        n_resamples=100_000, confidence_level=0.95, method="BCa",
                        rng=np.random.default_rng(n_b))
    bca.append({"base": fl(base), "other": fl(other), "theta_b": fl(theta_b),
                "theta_hat": f(ratio(base, other)), "a_hat": f(a_hat),
                "alpha_1": f(a1), "alpha_2": f(a2), "lo": f(lo), "hi": f(hi),
                "scipy_lo": f(full.confidence_interval.low),
                "scipy_hi": f(full.confidence_interval.high)})
dump("bca.json", {"cases": bca})


# ---------------------------------------------------------------- Hodges-Lehmann
def wilcox_null_cdf(m, n):
    """P(U <= u), u = 0..mn, by the classic recurrence
    f(u; m, n) = f(u - n; m - 1, n) + f(u; m, n - 1) (Mann & Whitney 1947),
    in exact integers."""
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def count(u, m, n):
        if u < 0:
            return 0
        if m == 0 or n == 0:
            return 1 if u == 0 else 0
        return count(u - n, m - 1, n) + count(u, m, n - 1)

    total = math.comb(m + n, m)
    out, acc = [], 0
    for u in range(m * n + 1):
        acc += count(u, m, n)
        out.append(acc / total)
    return out


def hodges_lehmann(base, other, conf):
    """R's wilcox.test(other, base, conf.int=TRUE) exact branch; the
    normal-approximation rank k otherwise (see hodges_lehmann.rs)."""
    diffs = np.sort(np.subtract.outer(other, base).ravel())
    N = len(diffs)
    alpha = 1 - conf
    pooled = np.concatenate([base, other])
    vals, counts = np.unique(pooled, return_counts=True)
    ties = counts[counts > 1]
    nb, no = len(base), len(other)
    if nb < 50 and no < 50 and len(ties) == 0:
        cdf = wilcox_null_cdf(no, nb)
        k = next(q for q, p in enumerate(cdf) if p >= alpha / 2)  # qwilcox
        k = max(k, 1)
        exact = True
    else:
        n = nb + no
        tie_term = float(np.sum(ties.astype(float) ** 3 - ties))
        s = math.sqrt(nb * no / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        k = max(1, min(N, math.floor(N / 2 - st.norm.ppf(1 - alpha / 2) * s)))
        exact = False
    upper = max(N + 1 - k, k)
    return {"shift": f(np.median(diffs)), "lo": f(diffs[k - 1]), "hi": f(diffs[upper - 1]),
            "k": k, "exact": exact}


hl = []
for nb, no, shift, rounding in [(5, 5, 1.0, None), (8, 6, 0.3, None), (3, 4, 2.0, None),
                                (2, 2, 1.0, None), (12, 15, 0.5, None), (49, 30, 0.2, None),
                                (10, 10, 0.5, 0), (60, 70, 0.1, None), (300, 200, 0.05, 1),
                                (1, 6, 0.5, None)]:
    base = rng.normal(10, 1, nb)
    other = rng.normal(10 + shift, 1, no)
    if rounding is not None:
        base, other = np.round(base, rounding), np.round(other, rounding)
    for conf in (0.95, 0.9):
        case = {"base": fl(base), "other": fl(other), "confidence": f(conf),
                "median_ratio": f(np.median(other) / np.median(base))}
        case.update(hodges_lehmann(base, other, conf))
        hl.append(case)
dump("hodges_lehmann.json", {"cases": hl})


# ---------------------------------------------------------------- trend
def mann_kendall(x):
    """Mann-Kendall test with tie-corrected variance and continuity
    correction (Kendall 1975), written from the definition."""
    n = len(x)
    s = sum(np.sign(x[j] - x[i]) for i in range(n) for j in range(i + 1, n))
    _, counts = np.unique(x, return_counts=True)
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in counts)) / 18
    if s > 0:
        z = (s - 1) / math.sqrt(var)
    elif s < 0:
        z = (s + 1) / math.sqrt(var)
    else:
        z = 0.0
    return {"s": f(s), "var_s": f(var), "z": f(z), "p": f(2 * st.norm.sf(abs(z)))}


trend = []
for n, slope, rounding in [(10, 0.0, None), (12, 0.3, None), (30, 0.05, 1), (50, -0.02, None),
                           (8, 1.0, 0), (200, 0.001, 2), (5, 0.0, 0)]:
    t = np.arange(n, dtype=float)
    y = 100 + slope * t + rng.normal(0, 1, n)
    if rounding is not None:
        y = np.round(y, rounding)
    ts = st.theilslopes(y, t, alpha=0.95)
    case = {"y": fl(y), "x": fl(t), "confidence": f(0.95), "slope": f(ts.slope),
            "intercept": f(ts.intercept), "lo": f(ts.low_slope), "hi": f(ts.high_slope)}
    case["mk"] = mann_kendall(y)
    trend.append(case)
# Irregular sample times with ties in x.
x = np.array([0, 1, 1, 2, 3.5, 3.5, 5, 8, 9, 9.5, 12])
y = 3 + 0.5 * x + rng.normal(0, 0.3, len(x))
ts = st.theilslopes(y, x, alpha=0.9)
trend.append({"y": fl(y), "x": fl(x), "confidence": f(0.9), "slope": f(ts.slope),
              "intercept": f(ts.intercept), "lo": f(ts.low_slope), "hi": f(ts.high_slope),
              "mk": mann_kendall(y)})
dump("trend.json", {"cases": trend})

# ---------------------------------------------------------------- detectors
det = {"bimodality": [], "mad": [], "min_p": []}
samples = [rng.normal(0, 1, 30), np.concatenate([rng.normal(0, 1, 20), rng.normal(6, 1, 20)]),
           rng.uniform(0, 1, 50), rng.lognormal(0, 1, 25), np.arange(10.0),
           np.concatenate([rng.normal(100, 1, 12), [130.0, 70.0]])]
for xs in samples:
    g = st.skew(xs, bias=False)
    k = st.kurtosis(xs, fisher=True, bias=False)
    n = len(xs)
    bc = (g * g + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    det["bimodality"].append({"xs": fl(xs), "bc": f(bc)})
    med = np.median(xs)
    mad = np.median(np.abs(xs - med))
    out = [int(i) for i in np.nonzero(np.abs(xs - med) > 3.5 * 1.4826 * mad)[0]] if mad > 0 else []
    det["mad"].append({"xs": fl(xs), "outliers": out})
for n1, n2 in [(1, 1), (2, 2), (3, 3), (4, 4), (3, 5), (5, 5), (8, 8), (9, 9), (20, 20)]:
    p = st.mannwhitneyu(np.arange(n1), np.arange(n1, n1 + n2), alternative="two-sided").pvalue
    det["min_p"].append({"n1": n1, "n2": n2, "p": f(p)})
dump("detect.json", {"cases": [], **det})
print("wrote phase-2 vectors")
