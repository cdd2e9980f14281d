"""The oracle's truth (see oracle.py): an experiment's raw samples read
from the SQLite store, and what each cell and comparison should say,
recomputed with NumPy and SciPy; the failed checks, collected."""
import math
import sqlite3

import numpy as np
from scipy import stats

ALPHA = 0.05
TIME = [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)]
SIZE = [("B", 1.0), ("KiB", 1024.0), ("MiB", 1048576.0), ("GiB", 1073741824.0)]
# The metrics of the built-in micro suite this oracle stores synthetically,
# with the LMbench table (heading) each is printed under.
MICRO_US = {"proc.fork_exit", "proc.fork_exec", "proc.fork_sh", "proc.null_call"}
def display_scale(unit, means):
    """The unit a report shows a metric in, from its cells' means: the
    largest of its family (time or size, `/op` kept) in which the smallest
    non-zero |mean| is at least 1. Written from docs/reports.md's rule, not
    from sysdelta's code."""
    amount, per = (unit.split("/", 1) + [""])[:2]
    per = "/" + per if per else ""
    amount = "us" if amount == "µs" else amount
    for fam in (TIME, SIZE):
        sizes = dict(fam)
        if amount in sizes:
            size = sizes[amount]
            vals = [abs(m) for m in means if m and math.isfinite(m)]
            if not vals:
                return unit, 1.0
            base = min(vals) * size
            pick = fam[0]
            for name, s in fam:
                if base >= s * (1 - 1e-9):
                    pick = (name, s)
            return pick[0] + per, size / pick[1]
    return unit, 1.0


def holm(ps):
    """Holm's step-down adjustment, in the input's order."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running, m = [0.0] * len(ps), 0.0, len(ps)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def mwu_p(x, y):
    """Two-sided Mann-Whitney p: exact without ties, else the tie- and
    continuity-corrected normal approximation (SciPy's own methods)."""
    ties = len(set(x) | set(y)) < len(x) + len(y)
    method = "asymptotic" if ties else "exact"
    return stats.mannwhitneyu(y, x, alternative="two-sided", method=method).pvalue


def summary(v):
    v = np.asarray(v, dtype=float)
    return {
        "n": len(v),
        "mean": float(np.mean(v)),
        "median": float(np.median(v)),
        "min": float(np.min(v)),
        "max": float(np.max(v)),
        "stddev": float(np.std(v, ddof=1)) if len(v) > 1 else None,
    }


def load(db, exp_id):
    """The experiment as the store holds it: per metric, per config, the
    values the statistics use (a run's median; a boot's mean of its runs)
    and every run in execution order."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    baseline, = c.execute("SELECT baseline FROM experiments WHERE id=?", (exp_id,)).fetchone()
    configs = [r[0] for r in c.execute(
        "SELECT name FROM configs WHERE experiment_id=? ORDER BY idx", (exp_id,))]
    workloads = [r[0] for r in c.execute(
        "SELECT name FROM workloads WHERE experiment_id=? ORDER BY idx", (exp_id,))]
    metrics = sorted(
        c.execute("SELECT workload, name, unit, direction, ord FROM metrics "
                  "WHERE experiment_id=?", (exp_id,)),
        key=lambda r: (workloads.index(r[0]) if r[0] in workloads else 99, r[4]))
    runs = list(c.execute(
        "SELECT id, block, seq, config, workload, status, exit_code, boot_id FROM runs "
        "WHERE experiment_id=? AND warmup=0 ORDER BY block, seq", (exp_id,)))
    samples = {}
    for run_id, metric, value in c.execute(
            "SELECT s.run_id, s.metric, s.value FROM samples s JOIN runs r ON r.id=s.run_id "
            "WHERE r.experiment_id=? ORDER BY s.run_id, s.metric, s.idx", (exp_id,)):
        samples.setdefault((run_id, metric), []).append(value)
    out = []
    for w, name, unit, direction, _ in metrics:
        cells, order = {}, []
        for cfg in configs:
            per_boot, vals = {}, []
            for rid, _b, _s, rc, rw, status, _e, boot in runs:
                if rc != cfg or rw != w or status != "ok" or (rid, name) not in samples:
                    continue
                v = float(np.median(samples[(rid, name)]))
                if boot is None:
                    vals.append(v)
                else:
                    per_boot.setdefault(boot, []).append(v)
            if per_boot:
                vals = [float(np.mean(per_boot[b])) for b in sorted(per_boot)]
            cells[cfg] = vals
        for rid, _b, _s, rc, rw, status, _e, _boot in runs:
            if rw == w and status == "ok" and (rid, name) in samples:
                order.append((rc, float(np.median(samples[(rid, name)]))))
        out.append({"workload": w, "name": name, "unit": unit, "direction": direction,
                    "cells": cells, "order": order, "boots": any(r[7] for r in runs)})
    return {"baseline": baseline, "configs": configs, "metrics": out, "runs": runs,
            "samples": samples}


def expected(exp):
    """Every cell's summary and every comparison's numbers, recomputed."""
    comps = []
    for m in exp["metrics"]:
        m["summary"] = {c: summary(v) for c, v in m["cells"].items() if v}
        unit, factor = display_scale(m["unit"], [s["mean"] for s in m["summary"].values()])
        m["display"], m["factor"] = unit, factor
        base = m["cells"].get(exp["baseline"], [])
        m["cmp"] = {}
        for cfg in exp["configs"]:
            if cfg == exp["baseline"] or not m["cells"].get(cfg) or not base:
                continue
            x, y = base, m["cells"][cfg]
            sb, so = m["summary"][exp["baseline"]], m["summary"][cfg]
            d = {
                "delta_mean_pct": (so["mean"] / sb["mean"] - 1) * 100 if sb["mean"] else None,
                "delta_median_pct": (so["median"] / sb["median"] - 1) * 100 if sb["median"] else None,
                "hl": float(np.median(np.subtract.outer(y, x))),
            }
            if sb["mean"] == 0:
                d["p"] = None  # no ratio to a zero baseline: no test, no place in the family
            elif m["boots"] and min(len(x), len(y)) < 8:
                d["p"] = stats.ttest_ind(y, x, equal_var=False).pvalue if min(len(x), len(y)) > 1 else None
            else:
                d["p"] = mwu_p(x, y) if min(len(x), len(y)) > 0 else None
            m["cmp"][cfg] = d
            if d["p"] is not None and not math.isnan(d["p"]):
                comps.append(d)
    for d, adj in zip(comps, holm([d["p"] for d in comps])):
        d["p_adjusted"] = adj
    return exp


def verdict_ok(m, d, printed):
    """Whether a printed verdict ('worse', 'better', 'noise', 'undefined')
    is the one the numbers allow."""
    padj = d.get("p_adjusted")
    if padj is None:
        return printed in ("noise", "undefined", None)
    if padj >= ALPHA:
        return printed in ("noise", "undefined")
    if printed == "undefined":
        return True  # a CI not estimable withholds the verdict
    agree = d["delta_mean_pct"] is not None and (d["delta_mean_pct"] > 0) == (d["hl"] > 0)
    if not agree:
        return printed == "noise"
    up = d["delta_mean_pct"] > 0
    want = "worse" if up == (m["direction"] == "lower") else "better"
    return printed == want
class Checks:
    def __init__(self, name):
        self.name, self.fails, self.count = name, [], {}

    def fail(self, fmt, metric, what, got, want):
        self.fails.append(f"{fmt}: experiment {self.name}, {metric}: {what}: printed {got}, expected {want}")

    def num(self, fmt, metric, what, printed, want, tol=None):
        """`printed` (a string as shown, or a float) against `want` within
        the printed precision (half its last digit) or `tol` (relative)."""
        if want is None or (isinstance(want, float) and math.isnan(want)):
            return
        self.count[fmt] = self.count.get(fmt, 0) + 1
        if isinstance(printed, str):
            s = printed.strip().replace("%", "").replace("+", "")
            try:
                got = float(s)
            except ValueError:
                self.fail(fmt, metric, what, repr(printed), f"{want:.6g}")
                return
            dec = len(s.split(".")[1]) if "." in s and "e" not in s.lower() else 0
            allowed = 0.5 * 10 ** -dec * (1 + 1e-9) + 1e-12 * abs(want)
        else:
            got = printed
            if got is None:
                self.fail(fmt, metric, what, "nothing", f"{want:.10g}")
                return
            allowed = (tol if tol is not None else 1e-9) * max(abs(want), 1e-300)
        if not abs(got - want) <= allowed:
            self.fail(fmt, metric, what, printed if isinstance(printed, str) else f"{got:.10g}", f"{want:.10g}")


def mlabel(m):
    return f"{m['workload']}/{m['name']}"
def pool(y, se):
    """DerSimonian-Laird's between-host variance and the Hartung-Knapp-
    Sidik-Jonkman CI of the pooled log ratio (Student's t, k - 1 df)."""
    y, se = np.asarray(y), np.asarray(se)
    k = len(y)
    w = 1 / se**2
    m = np.sum(w * y) / np.sum(w)
    q = np.sum(w * (y - m) ** 2)
    tau2 = max(0.0, (q - (k - 1)) / (np.sum(w) - np.sum(w**2) / np.sum(w)))
    ws = 1 / (se**2 + tau2)
    mu = np.sum(ws * y) / np.sum(ws)
    var = np.sum(ws * (y - mu) ** 2) / ((k - 1) * np.sum(ws))
    t = stats.t.ppf(0.975, k - 1)
    return {"mu": mu, "tau2": tau2, "q": q, "lo": mu - t * math.sqrt(var), "hi": mu + t * math.sqrt(var)}
