#!/usr/bin/env python3
"""Reference values for stats::welch (tests/reference/welch.json).

* Welch's test: scipy.stats.ttest_ind(other, base, equal_var=False), its
  statistic, p-value and degrees of freedom (`.df`).
* The log-ratio interval of the ratio of means: exp(ln r +- t.ppf(q, df)
  sqrt(v_b + v_o)), v = var(x, ddof=1) / (n mean^2), df by
  Welch-Satterthwaite from v_b and v_o, written out here with NumPy and
  SciPy's t quantile (not the crate's).

Run:  pip install numpy scipy && python3 tests/reference/make_welch.py
Deterministic (a fixed seed); the output is committed.
"""
import json
import os

import numpy as np
from scipy import stats

rng = np.random.default_rng(31)
cases = [
    ([10.0, 11.0], [12.0, 12.5]),
    ([100.0, 101.0, 99.5], [102.0, 104.0, 103.1]),
    ([5.0, 5.1, 4.9, 5.3], [5.2, 5.0, 5.6, 5.5]),
    ([-50.0, -51.0, -49.0], [-52.0, -53.5, -51.0]),
]
for n_b, n_o, sd_b, sd_o in [(2, 2, 1.0, 5.0), (3, 5, 2.0, 0.5), (6, 6, 1.0, 1.0), (4, 9, 3.0, 1.0)]:
    b = (100 + sd_b * rng.standard_normal(n_b)).round(6).tolist()
    o = (103 + sd_o * rng.standard_normal(n_o)).round(6).tolist()
    cases.append((b, o))

out = []
for base, other in cases:
    b, o = np.array(base), np.array(other)
    r = stats.ttest_ind(o, b, equal_var=False)
    mb, mo = b.mean(), o.mean()
    vb = b.var(ddof=1) / (len(b) * mb * mb)
    vo = o.var(ddof=1) / (len(o) * mo * mo)
    v = vb + vo
    df = v * v / (vb * vb / (len(b) - 1) + vo * vo / (len(o) - 1))
    ci = {}
    for conf in (0.90, 0.95):
        half = stats.t.ppf((1 + conf) / 2, df) * np.sqrt(v)
        ratio = mo / mb
        ci[str(conf)] = [float(np.exp(np.log(ratio) - half)), float(np.exp(np.log(ratio) + half))]
    out.append({
        "base": base,
        "other": other,
        "t": float(r.statistic),
        "df": float(r.df),
        "p": float(r.pvalue),
        "ci": ci,
    })

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "welch.json")
with open(path, "w") as f:
    json.dump({"generator": f"scipy {__import__('scipy').__version__}", "cases": out}, f, indent=1)
    f.write("\n")
print(f"wrote {len(out)} cases to {path}")
