#!/usr/bin/env python3
"""Reference values for analysis::hosts (embedded in src/analysis/hosts.rs).

Random-effects meta-analysis of per-host log ratios by an independent
implementation: statsmodels' combine_effects (DerSimonian-Laird tau^2,
method_re="dl"), its Hartung-Knapp-Sidik-Jonkman interval
(conf_int(use_t=True)[3]: the random-effects mean with the WLS-estimated
scale and Student's t on k - 1 degrees of freedom). statsmodels does not
truncate DL's tau^2 at 0; where it is negative, the fixed-effect values
(mean_effect_fe, var_eff_w_fe, conf_int(...)[2]) are the random-effects
ones with tau^2 = 0, and those are printed. Each host's standard error is
its CI's half-width on the log scale over norm.ppf(0.975).

Made with statsmodels 0.15.0, SciPy 1.17.1, NumPy 2.4 in a scratch venv:
    python3 -m venv /tmp/pool-venv && /tmp/pool-venv/bin/pip install statsmodels
    /tmp/pool-venv/bin/python tests/reference/make_meta_analysis.py
"""
import numpy as np
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects
import warnings
warnings.simplefilter("ignore")

z = stats.norm.ppf(0.975)

def logs(rows):
    y = np.array([np.log(r) for r, lo, hi in rows])
    se = np.array([(np.log(hi) - np.log(lo)) / (2 * z) for r, lo, hi in rows])
    return y, se

def ref(y, se):
    res = combine_effects(y, se**2, method_re="dl", use_t=True)
    ci = res.conf_int(alpha=0.05, use_t=True)
    if res.tau2 < 0:
        # statsmodels leaves DL's tau^2 untruncated; truncated at 0 the
        # random-effects weights are the fixed-effect ones.
        return dict(tau2_raw=float(res.tau2), tau2=0.0, mu=float(res.mean_effect_fe), var=float(res.var_eff_w_fe),
                    ci=[float(c) for c in ci[2]], q=float(res.q))
    return dict(tau2=float(res.tau2), mu=float(res.mean_effect_re), var=float(res.var_eff_w_re),
                ci=[float(c) for c in ci[3]], q=float(res.q))

cases = {
 "hetero4": [(1.020, 1.010, 1.030), (1.035, 1.020, 1.050), (1.005, 0.995, 1.015), (1.060, 1.040, 1.081)],
 "hetero3": [(0.97, 0.95, 0.99), (1.01, 0.99, 1.03), (0.92, 0.90, 0.94)],
 "homog3": [(1.010, 1.000, 1.020), (1.012, 1.002, 1.022), (1.008, 0.996, 1.020)],
 "two": [(1.02, 1.00, 1.04), (1.05, 1.03, 1.07)],
}
for name, rows in cases.items():
    y, se = logs(rows)
    print(name, repr(ref(y, se)))
    if len(rows) >= 3:
        for i in range(len(rows)):
            keep = [j for j in range(len(rows)) if j != i]
            o = ref(y[keep], se[keep])
            r = (y[i] - o["mu"]) / np.sqrt(se[i]**2 + o["tau2"] + o["var"])
            print("   loo", i, repr(o["mu"]), repr(o["tau2"]), repr(o["var"]), "resid", repr(float(r)), "differs", abs(r) > z)
