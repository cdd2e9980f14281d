#!/usr/bin/env python3
"""Reference values for sysdelta's series analysis (src/series/).

Theil-Sen slope and its 95% interval from scipy.stats.theilslopes; the
Mann-Kendall test from pymannkendall.original_test (with Kendall's tau from
scipy.stats.kendalltau as a cross-check of S). Writes
tests/reference/series_theilsen.json and series_mannkendall.json.

Run: pip install scipy numpy pymannkendall; python3 tests/reference/make_series_vectors.py
"""
import json
import os

import numpy as np
import pymannkendall as pmk
import scipy
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20011113)

SAP_247 = [8.59, 4.40, 2.67, 2.30, 1.87, 1.65, 1.26, 1.68, 1.17, 1.80, 1.10, 1.20, 1.26, 1.34]
SAP_2414 = [15.47, 14.76, 11.61, 14.63, 14.42, 15.30, 15.02, 14.53, 15.23, 12.82, 14.59, 16.09, 14.38, 15.41]

cases = {
    "sap_2.4.7": SAP_247,
    "sap_2.4.14": SAP_2414,
    "flat_noise_30": list(np.round(100 + rng.normal(0, 2, 30), 3)),
    "linear_decline_40": list(np.round(100 - 0.5 * np.arange(40) + rng.normal(0, 1, 40), 3)),
    "step_50": list(np.round(np.r_[np.full(25, 10.0), np.full(25, 6.0)] + rng.normal(0, 0.5, 50), 3)),
    "ties_20": [float(v) for v in rng.integers(0, 5, 20)],
    "short_3": [1.0, 3.0, 2.0],
}

ts_out, mk_out = [], []
for name, y in cases.items():
    y = [float(v) for v in y]
    for interval in (1.0, 5.0):
        x = [i * interval for i in range(len(y))]
        r = stats.theilslopes(y, x, alpha=0.95)
        ts_out.append({
            "name": name, "interval_s": interval, "y": y,
            "slope": float(r.slope), "intercept": float(r.intercept),
            "low": float(r.low_slope), "high": float(r.high_slope),
        })
    m = pmk.original_test(y, alpha=0.05)
    tau_b = stats.kendalltau(list(range(len(y))), y).statistic
    mk_out.append({
        "name": name, "y": y, "s": float(m.s), "var_s": float(m.var_s),
        "z": float(m.z), "p": float(m.p), "tau": float(m.Tau),
        "scipy_tau_b": float(tau_b),
    })

meta = {"scipy": scipy.__version__, "numpy": np.__version__, "pymannkendall": pmk.__version__}
with open(os.path.join(HERE, "series_theilsen.json"), "w") as f:
    json.dump({"generated_by": "make_series_vectors.py", "versions": meta, "cases": ts_out}, f, indent=1)
with open(os.path.join(HERE, "series_mannkendall.json"), "w") as f:
    json.dump({"generated_by": "make_series_vectors.py", "versions": meta, "cases": mk_out}, f, indent=1)
