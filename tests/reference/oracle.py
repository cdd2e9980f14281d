#!/usr/bin/env python3
"""The oracle of tests/oracle.rs: every number sysdelta prints, recomputed.

It reads an experiment's raw samples from the SQLite store itself (not
through sysdelta, and not from the JSON report, so a defect of the JSON is
caught too), recomputes with NumPy/SciPy what each cell and comparison
should say, and checks the text, Markdown, CSV, JSON and HTML renderings
of `sysdelta report` against it and against each other. HTML plots are read
back: each marker's SVG coordinate is mapped through the axis's tick labels
to a value.

    oracle.py check --store S --id N --dir D --name NAME
    oracle.py selftest

`check` prints one line per failed check, each naming the format, the
experiment (NAME), the metric and the two numbers, and exits 1 if any.
D holds report.txt, report.md, report.csv, report.json, report.html.
"""
import csv
import io
import json
import math
import re
import sqlite3
import sys

import numpy as np
from scipy import stats

ALPHA = 0.05
TIME = [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)]
SIZE = [("B", 1.0), ("KiB", 1024.0), ("MiB", 1048576.0), ("GiB", 1073741824.0)]
# The metrics of the built-in micro suite this oracle stores synthetically,
# with the LMbench table (heading) each is printed under.
MICRO_US = {"proc.fork_exit", "proc.fork_exec", "proc.fork_sh", "proc.null_call"}


# ---------------------------------------------------------------- the truth


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


# ---------------------------------------------------------------- checking


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


def check_json(ck, exp, j):
    a = j["analysis"]
    by = {(x["workload"], x["name"]): x for x in a["metrics"]}
    for m in exp["metrics"]:
        lab = mlabel(m)
        jm = by.get((m["workload"], m["name"]))
        if jm is None:
            ck.fail("json", lab, "metric", "missing", "present")
            continue
        if jm["unit"] != m["unit"]:
            ck.fail("json", lab, "stored unit", jm["unit"], m["unit"])
        for cell in jm["cells"]:
            cfg = cell["config"]
            want = m["cells"].get(cfg, [])
            got = cell.get("values") or []
            if sorted(got) != sorted(want):
                ck.fail("json", lab, f"{cfg} values", sorted(got)[:8], sorted(want)[:8])
            s, ws = cell.get("summary"), m["summary"].get(cfg)
            if s and ws:
                for k in ("mean", "median", "min", "max", "stddev"):
                    ck.num("json", lab, f"{cfg} {k}", s.get(k), ws[k])
        for c in jm["comparisons"]:
            d = m["cmp"].get(c["config"])
            if d is None:
                continue
            w = f"{c['config']} vs {exp['baseline']}"
            ck.num("json", lab, f"{w} delta_mean_pct", c.get("delta_mean_pct"), d["delta_mean_pct"])
            ck.num("json", lab, f"{w} delta_median_pct", c.get("delta_median_pct"), d["delta_median_pct"])
            ck.num("json", lab, f"{w} p", c.get("p"), d["p"], 1e-6)
            ck.num("json", lab, f"{w} p_adjusted", c.get("p_adjusted"), d.get("p_adjusted"), 1e-6)
            if not verdict_ok(m, d, c.get("verdict")):
                ck.fail("json", lab, f"{w} verdict (p_adj {d.get('p_adjusted')})", c.get("verdict"), "the other")
            check_ci_loosely(ck, "json", exp, m, c["config"], c.get("delta_ci_pct"))
    # The raw samples the JSON carries are the store's.
    for r in j.get("runs", []):
        for metric, vals in (r.get("samples") or {}).items():
            want = exp["samples"].get((r["id"], metric))
            if want is not None and vals != want:
                ck.fail("json", metric, f"run {r['id']} samples", vals[:4], want[:4])


def check_ci_loosely(ck, fmt, exp, m, cfg, ci):
    """sysdelta's bootstrap uses its own seeded RNG, so its CI equals
    SciPy's only loosely: each end within half of SciPy's width plus 2
    points. sysdelta widens the level for small samples (the expanded
    confidence), and the two take different resamples; a CI off by the
    unit factor or taken of the wrong cells is far outside that."""
    x, y = m["cells"].get(exp["baseline"], []), m["cells"].get(cfg, [])
    if ci is None or min(len(x), len(y)) < 5 or np.mean(x) == 0:
        return
    res = stats.bootstrap((np.asarray(y), np.asarray(x)),
                          lambda a, b, axis=-1: np.mean(a, axis=axis) / np.mean(b, axis=axis),
                          n_resamples=4000, method="percentile", random_state=1,
                          vectorized=True)
    lo, hi = (res.confidence_interval.low - 1) * 100, (res.confidence_interval.high - 1) * 100
    slack = (hi - lo) / 2 + 2
    if not (abs(ci[0] - lo) <= slack and abs(ci[1] - hi) <= slack):
        ck.fail(fmt, mlabel(m), f"{cfg} delta CI against SciPy's bootstrap (±{slack:.2g} points)",
                f"[{ci[0]:.3g}, {ci[1]:.3g}]", f"[{lo:.3g}, {hi:.3g}]")


def json_cis(j):
    out = {}
    for x in j["analysis"]["metrics"]:
        for c in x["comparisons"]:
            out[(x["workload"], x["name"], c["config"])] = (c.get("delta_ci_pct"), c.get("verdict"))
    return out


def check_csv(ck, exp, text, cis):
    rows = list(csv.DictReader(io.StringIO(text)))
    by = {(r["workload"], r["metric"], r["config"]): r for r in rows}
    for m in exp["metrics"]:
        lab = mlabel(m)
        for cfg, s in m["summary"].items():
            r = by.get((m["workload"], m["name"], cfg))
            if r is None:
                ck.fail("csv", lab, f"{cfg} row", "missing", "present")
                continue
            if r["unit"] != m["display"]:
                ck.fail("csv", lab, f"{cfg} unit", r["unit"], m["display"])
            f = m["factor"]
            for k in ("mean", "median", "min", "max", "stddev"):
                if s[k] is not None and r[k] != "":
                    ck.num("csv", lab, f"{cfg} {k} ({r['unit']})", float(r[k]), s[k] * f)
            ck.num("csv", lab, f"{cfg} n", float(r["n"]), float(s["n"]))
            d = m["cmp"].get(cfg)
            if d is None:
                continue
            fl = lambda k: float(r[k]) if r[k] != "" else None
            ck.num("csv", lab, f"{cfg} delta_mean_pct", fl("delta_mean_pct"), d["delta_mean_pct"])
            ck.num("csv", lab, f"{cfg} p", fl("p"), d["p"], 1e-6)
            ck.num("csv", lab, f"{cfg} p_adjusted", fl("p_adjusted"), d.get("p_adjusted"), 1e-6)
            ci, verdict = cis.get((m["workload"], m["name"], cfg), (None, None))
            if ci and r["delta_ci_low_pct"] != "":
                ck.num("csv", lab, f"{cfg} CI low, against the JSON", fl("delta_ci_low_pct"), ci[0], 1e-12)
                ck.num("csv", lab, f"{cfg} CI high, against the JSON", fl("delta_ci_high_pct"), ci[1], 1e-12)
            if r["verdict"] != verdict:
                ck.fail("csv", lab, f"{cfg} verdict, against the JSON", r["verdict"], verdict)


NUM = r"[-+]?[0-9]+(?:\.[0-9]+)?"


def check_shown_delta(ck, fmt, m, cfg, d, delta, ci_text, cis):
    """A delta as text, Markdown and HTML show it ('+80.3% worse', '~ +0.2%',
    'n/a') and its CI ('[+62.0,+102]'), against the recomputed delta and
    the JSON's CI (the bootstrap's, equal in every format)."""
    lab = mlabel(m)
    mt = re.search(NUM + "%", delta or "")
    if mt and d["delta_mean_pct"] is not None:
        ck.num(fmt, lab, f"{cfg} delta %", mt.group(0), d["delta_mean_pct"])
    ci, verdict = cis.get((m["workload"], m["name"], cfg), (None, None))
    nums = re.findall(NUM, ci_text or "")
    if ci and len(nums) == 2:
        ck.num(fmt, lab, f"{cfg} CI low", nums[0], ci[0])
        ck.num(fmt, lab, f"{cfg} CI high", nums[1], ci[1])
    shown = "undefined" if "n/a" in (delta or "") else "noise" if "~" in (delta or "") else \
        "worse" if "worse" in (delta or "") else "better" if "better" in (delta or "") else None
    if verdict and shown and shown != verdict and not (verdict == "undefined" and shown == "noise"):
        ck.fail(fmt, lab, f"{cfg} verdict, against the JSON", shown, verdict)


def squash(s):
    return re.sub(r"\s+", "", s)


def check_text(ck, exp, text, cis):
    """The 80-column tables: columns in the store's metric order, a header
    naming workload, metric and display unit, a row of means per config and
    the delta and CI rows under each non-baseline config."""
    metrics = list(exp["metrics"])
    blocks = re.findall(r"^-{20,}\n((?:\|.*\n)+)^-{20,}\n((?:\|.*\n)+)^-{20,}$", text, re.M)
    k = 0
    for head, body in blocks:
        hrows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in head.splitlines()]
        ncol = len(hrows[0]) - 1
        if hrows[-1][0] != "config":
            continue
        cols = metrics[k:k + ncol]
        k += ncol
        for i, m in enumerate(cols):
            got = squash("".join(r[i + 1] for r in hrows))
            want = squash(m["workload"] + m["name"] + m["display"])
            if got != want:
                ck.fail("text", mlabel(m), "column header (workload, metric, unit)", got, want)
        cur = None
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            first = cells[0]
            for i, m in enumerate(cols):
                v = cells[i + 1] if i + 1 < len(cells) else ""
                if first == "delta (%)":
                    d = m["cmp"].get(cur)
                    if d:
                        m.setdefault("_text_delta", {})[cur] = v
                elif first == "95% CI":
                    d = m["cmp"].get(cur)
                    if d:
                        check_shown_delta(ck, "text", m, cur, d, m["_text_delta"].get(cur), v, cis)
                elif first in m["summary"]:
                    ck.num("text", mlabel(m), f"{first} mean ({m['display']})", v,
                           m["summary"][first]["mean"] * m["factor"])
            if first not in ("delta (%)", "95% CI"):
                cur = first
    if k < len(metrics):
        ck.fail("text", mlabel(metrics[k]), "metrics in the tables", k, len(metrics))


def check_markdown(ck, exp, text, cis):
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    for sec in sections:
        w = sec.splitlines()[0].strip()
        ms = [m for m in exp["metrics"] if m["workload"] == w]
        lines = [l for l in sec.splitlines() if l.startswith("|")]
        if len(lines) < 3 or not ms:
            continue
        head = [re.sub(r"\\(.)", r"\1", c.strip()) for c in lines[0].strip().strip("|").split("|")][1:]
        for m, h in zip(ms, head):
            if h != f"{m['name']} ({m['display']})":
                ck.fail("markdown", mlabel(m), "column header", h, f"{m['name']} ({m['display']})")
        for line in lines[2:]:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            cfg = cells[0]
            for m, v in zip(ms, cells[1:]):
                if cfg not in m["summary"]:
                    continue
                mean = v.split(" ")[0]
                ck.num("markdown", mlabel(m), f"{cfg} mean ({m['display']})", mean,
                       m["summary"][cfg]["mean"] * m["factor"])
                d = m["cmp"].get(cfg)
                if d:
                    rest = v[len(mean):]
                    ci = re.search(r"\[.*\]", rest)
                    check_shown_delta(ck, "markdown", m, cfg, d, rest.split("[")[0],
                                      ci.group(0) if ci else None, cis)


# ------------------------------------------------------------------- HTML

def unescape(s):
    return s.replace("&#39;", "'").replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


class Axis:
    """A linear value -> pixel map read from the y tick labels (x, y,
    label): through the outermost two, with the pixels a label's rounding
    (half its last digit) can move a point, so that a check allows it."""

    def __init__(self, texts):
        pts, self.labels, self.round = [], [], 0.0
        for _x, y, lab in texts:
            try:
                v = float(lab.replace(",", ""))
            except ValueError:
                continue
            pts.append((float(y), v))
            self.labels.append(lab)
            dec = len(lab.split(".")[1]) if "." in lab else 0
            self.round = max(self.round, 0.5 * 10 ** -dec)
        self.ok = len(pts) >= 2 and pts[0][0] != pts[-1][0] and pts[0][1] != pts[-1][1]
        if self.ok:
            (self.y0, self.v0), (self.y1, self.v1) = pts[0], pts[-1]

    def __call__(self, v):
        return self.y0 + (v - self.v0) * (self.y1 - self.y0) / (self.v1 - self.v0)

    def value(self, py):
        return self.v0 + (py - self.y0) * (self.v1 - self.v0) / (self.y1 - self.y0)

    def slack(self, v):
        """Pixels of error the labels' rounding allows at value v."""
        per = abs((self.y1 - self.y0) / (self.v1 - self.v0))
        span = abs(self.v1 - self.v0)
        return per * self.round * (1 + 2 * max(abs(v - self.v0), abs(v - self.v1)) / span)


def axis(texts):
    a = Axis(texts)
    return a if a.ok else None


def marker_y(el):
    """The y centre of a marker (circle, polygon) and its colour."""
    if el.startswith("<rect"):
        a = dict(re.findall(r'(\w+)="([^"]*)"', el))
        return (float(a["x"]) + float(a["width"]) / 2, float(a["y"]) + float(a["height"]) / 2,
                a.get("fill", "").upper())
    if el.startswith("<circle"):
        a = dict(re.findall(r'(\w+)="([^"]*)"', el))
        return float(a["cx"]), float(a["cy"]), a.get("fill", "").upper()
    a = dict(re.findall(r'(\w+)="([^"]*)"', el))
    pts = [tuple(map(float, p.split(","))) for p in a["points"].split()]
    # A polygon marker's centre is its vertices' centroid (a triangle's
    # apex is farther from the centre than its base).
    return (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts),
            a.get("fill", "").upper())


def check_html(ck, exp, html, cis):
    metrics = {(m["workload"], m["name"]): m for m in exp["metrics"]}
    parts = re.split(r"<h3>", html)
    for part in parts[1:]:
        w = unescape(re.match(r"([^<]*)", part).group(1)).strip()
        for sec in re.split(r"<h4>", part)[1:]:
            mt = re.match(r"(.*?) <small>\(([^,]*), (\w+) is better\)</small>", sec)
            if not mt:
                continue
            m = metrics.get((w, unescape(mt.group(1))))
            if m is None:
                continue
            lab = mlabel(m)
            if unescape(mt.group(2)) != m["display"]:
                ck.fail("html", lab, "unit", unescape(mt.group(2)), m["display"])
            colour = {}
            table = sec.split("</table>")[0]
            th = [unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
            col = {h: i for i, h in enumerate(th)}
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
                cells = [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
                if not cells:
                    continue
                c = re.search(r'color:(#[0-9a-fA-F]+)', row)
                cfg = cells[0].split(" ", 1)[1].strip() if " " in cells[0] else cells[0]
                if c:
                    colour[c.group(1).upper()] = cfg
                if cfg not in m["summary"] or len(cells) != len(th):
                    continue
                s, f = m["summary"][cfg], m["factor"]
                cell = lambda h: cells[col[h]] if h in col else ""
                if "n" in col:
                    ck.num("html", lab, f"{cfg} n", cell("n"), float(s["n"]))
                if "median" in col:
                    ck.num("html", lab, f"{cfg} median ({m['display']})", cell("median"), s["median"] * f)
                if "mean" in col:
                    ck.num("html", lab, f"{cfg} mean ({m['display']})", cell("mean"), s["mean"] * f)
                d = m["cmp"].get(cfg)
                if d and "delta" in col:
                    check_shown_delta(ck, "html", m, cfg, d, cell("delta") + " " + cell("verdict"),
                                      cell("CI"), cis)
            svg = re.search(r"<svg.*?</svg>", sec, re.S)
            if svg:
                check_svg(ck, m, svg.group(0), colour)


def check_svg(ck, m, svg, colour):
    """Left: each config's markers at its values; right: the runs in
    execution order, each at its value. A pixel's worth (1.5 px: plotters
    rounds to whole pixels, a marker's centre to half of one) of slack."""
    lab, f = mlabel(m), m["factor"]
    left, _, right = svg.partition("run (in execution order)")
    texts = lambda s: [(x, y, unescape(t).strip()) for x, y, t in re.findall(
        r'<text x="([\d.]+)" y="([\d.]+)" dy="0.5ex" text-anchor="end"[^>]*>\s*(.*?)\s*</text>', s, re.S)]
    yl = axis(texts(left))
    if yl is None:
        return
    if len(set(yl.labels)) < len(yl.labels):
        # Repeated labels (4.66, 4.67, 4.67, 4.67) place no point to a
        # pixel: a reader cannot tell the values apart either.
        ck.fail("html", lab, "y-axis tick labels of the per-config plot, which repeat",
                ", ".join(yl.labels), "distinct labels")
        return
    yr = axis(texts(right)) or yl  # the right panel shares the left's axis
    tol = 1.5
    # Left panel: markers per colour against that config's values.
    got = {}
    for el in re.findall(r"<circle[^>]*/>|<polygon[^>]*/>|<rect[^>]*/>", left):
        x, y, c = marker_y(el)
        got.setdefault(colour.get(c, c), []).append(y)
    for cfg, vals in m["cells"].items():
        ys = sorted(got.get(cfg, []))
        want = sorted(yl(v * f) for v in vals)
        if len(ys) != len(want):
            if ys:
                ck.fail("html", lab, f"{cfg} points in the per-config plot", len(ys), len(want))
            continue
        ck.count["html"] = ck.count.get("html", 0) + len(ys)
        for a, b, v in zip(ys, want, sorted(vals)):
            if abs(a - b) > tol + yl.slack(v * f):
                inv = yl.value
                ck.fail("html", lab, f"{cfg} plotted point (y px {a:g}, {inv(a):.4g} {m['display']})",
                        f"{inv(a):.4g}", f"{inv(b):.4g} (y px {b:.1f})")
                break
    # Right panel: x ticks give the run index, the polyline of each colour
    # its runs.
    xt = [(float(x), t) for x, t in re.findall(
        r'<text x="([\d.]+)" y="[\d.]+" dy="0.76em"[^>]*>\s*(\d+)\s*</text>', right)]
    if len(xt) < 2 or not m["order"]:
        return
    (x0, i0), (x1, i1) = (xt[0][0], float(xt[0][1])), (xt[-1][0], float(xt[-1][1]))
    index = lambda x: round(i0 + (x - x0) * (i1 - i0) / (x1 - x0))
    seen, bad = 0, []
    for el in re.findall(r"<circle[^>]*/>|<polygon[^>]*/>|<rect[^>]*/>", right):
        x, y, c = marker_y(el)
        i = index(x)
        if not 0 <= i < len(m["order"]):
            ck.fail("html", lab, "run index in the execution-order panel", i, f"0..{len(m['order']) - 1}")
            continue
        cfg, v = m["order"][i]
        want = yr(v * f)
        seen += 1
        ck.count["html"] = ck.count.get("html", 0) + 1
        if abs(y - want) > tol + yr.slack(v * f):
            bad.append((i, cfg, y, v, want))
    if bad:
        i, cfg, y, v, want = bad[0]
        ck.fail("html", lab, f"run {i} ({cfg}) in the execution-order panel"
                f" ({len(bad)} of {seen} points off)",
                f"{yr.value(y):.4g} {m['display']} (y px {y:g})",
                f"{v * f:.4g} {m['display']} (y px {want:.1f})")
    if seen and seen != len(m["order"]):
        ck.fail("html", lab, "points in the execution-order panel", seen, len(m["order"]))


# ------------------------------------------------------- LMbench summary

def check_micro_summary(ck, exp, text, fmt):
    """LMbench tables headed "times in microseconds" print each micro
    metric's mean in microseconds, whatever unit it is stored in."""
    for m in exp["metrics"]:
        if m["name"] not in MICRO_US:
            continue
        to_us = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(m["unit"])
        for heading, table in re.findall(r"^(.*times in microseconds.*)\n((?:.*\S.*\n)+)", text, re.M):
            lines = table.splitlines()
            for cfg, s in m["summary"].items():
                row = next((l for l in lines if l.split() and l.split()[0] == cfg), None)
                if row is None:
                    continue
                nums = re.findall(r"(?<![\w.])[0-9][0-9.,]*(?![\w.])", row[len(cfg):])
                want = s["mean"] * to_us
                if nums and not any(_close(n, want) for n in nums):
                    ck.fail(fmt, mlabel(m), f"{cfg} under \"{heading.strip()[:40]}\" (us)",
                            " ".join(nums), f"{want:.6g}")


def _close(printed, want):
    s = printed.replace(",", "")
    try:
        v = float(s)
    except ValueError:
        return False
    sig = len(s.replace(".", "").lstrip("0")) or 1
    return abs(v - want) <= max(0.5 * 10 ** -(len(s.split(".")[1]) if "." in s else 0),
                                abs(want) * 10 ** -(sig - 1) * 0.51) + 1e-12


# --------------------------------------------------------- Go benchmarks

def go_benchmarks(path):
    """A Go benchmark file as benchstat reads it: a benchmark is its full
    name (with the -N GOMAXPROCS suffix) and the configuration keys above
    it (pkg, goos, goarch, cpu); its values per unit, in file order."""
    keys, out = {}, {}
    for line in open(path):
        kv = re.match(r"^([a-z][a-zA-Z0-9_-]*):\s*(.*)$", line)
        if kv and not line.startswith("Benchmark"):
            keys[kv.group(1)] = kv.group(2).strip()
            continue
        f = line.split()
        if len(f) < 4 or not f[0].startswith("Benchmark"):
            continue
        ident = (f[0], tuple(sorted((k, v) for k, v in keys.items() if k in ("pkg", "goos", "goarch", "cpu"))))
        for value, unit in zip(f[2::2], f[3::2]):
            out.setdefault((ident, unit), []).append(float(value))
    return out


def check_gobench(db, exp_id, name, files, d):
    """Each benchmark of each file is a cell of its own: its values, and
    no other benchmark's, in one (workload, metric) of that file's config.
    Go's time units scale as any time unit does (docs/reports.md: `ns/op`
    is shown as `us/op` when its values are microseconds), in text and
    Markdown headers alike."""
    exp = expected(load(db, exp_id))
    fails = []
    text, md = open(f"{d}/report.txt").read(), open(f"{d}/report.md").read()
    for m in exp["metrics"]:
        go_unit = m["unit"] or m["name"]
        if not re.match(r"^(ns|us|ms|s|B|KiB|MiB)/op$", go_unit):
            continue
        want, _ = display_scale(go_unit, [x["mean"] for x in m["summary"].values()])
        if want not in text:
            fails.append(f"text: experiment {name}, {mlabel(m)}: unit: printed {m['display'] or '(none)'}"
                         f" ({go_unit} stored as unit {m['unit']!r}), expected {want}")
        head = re.search(r"\| " + re.escape(m["name"]) + r" \(([^)]*)\)", md.replace("\\", ""))
        if head and head.group(1) != want:
            fails.append(f"markdown: experiment {name}, {mlabel(m)}: unit: printed ({head.group(1)}), expected ({want})")
    for path in files:
        cfg = re.sub(r"\.[^.]*$", "", path.rsplit("/", 1)[-1])
        for ((bench, keys), unit), want in go_benchmarks(path).items():
            cells = {m["workload"]: m["cells"].get(cfg, []) for m in exp["metrics"] if m["name"] == unit}
            if not any(sorted(v) == sorted(want) for v in cells.values()):
                pkg = dict(keys).get("pkg", "")
                fails.append(f"store: experiment {name}, {bench} (pkg {pkg}) {unit} in {cfg}: "
                             f"printed values {dict((w, v) for w, v in cells.items() if v)}, expected "
                             f"a cell of its own holding {want}")
    return fails


# ------------------------------------------------------------------ fleet

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


def check_fleet(db, fleet, d, name):
    """Each host's row recomputed from its samples (means, delta) and taken
    from its own report (the bootstrap CI, verdict); the hosts pooled again
    from the rows; the text, Markdown and JSON fleet reports against both."""
    ck = Checks(name)
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    members = list(c.execute(
        "SELECT fleet_host, MAX(id) FROM experiments WHERE fleet_id=? GROUP BY fleet_host ORDER BY fleet_host",
        (fleet,)))
    hosts = {h: (expected(load(db, e)), json.load(open(f"{d}/host-{h}.json"))) for h, e in members}
    j = json.load(open(f"{d}/fleet.json"))
    text, md = open(f"{d}/fleet.txt").read(), open(f"{d}/fleet.md").read()
    for cmpj in j["comparisons"]:
        w, metric, cfg = cmpj["workload"], cmpj["metric"], cmpj["config"]
        lab = f"{w}/{metric}"
        truth, ys, ses = {}, [], []
        for h, (exp, hj) in hosts.items():
            m = next(x for x in exp["metrics"] if (x["workload"], x["name"]) == (w, metric))
            hc = next(x for x in next(x for x in hj["analysis"]["metrics"]
                                      if (x["workload"], x["name"]) == (w, metric))["comparisons"]
                      if x["config"] == cfg)
            base, mean = m["summary"][exp["baseline"]]["mean"], m["summary"][cfg]["mean"]
            truth[h] = (m, base, mean, m["cmp"][cfg], hc)
            ys.append(math.log(mean / base))
            ses.append((math.log(hc["ratio_ci"][1]) - math.log(hc["ratio_ci"][0])) / (2 * stats.norm.ppf(0.975)))
        for row in cmpj["rows"]:
            m, base, mean, dd, hc = truth[row["host"]]
            who = f"host {row['host']}"
            ck.num("json", lab, f"{who} baseline_mean", row["baseline_mean"], base)
            ck.num("json", lab, f"{who} mean", row["mean"], mean)
            ck.num("json", lab, f"{who} delta_mean_pct", row["delta_mean_pct"], dd["delta_mean_pct"])
            for i, end in enumerate(("low", "high")):
                ck.num("json", lab, f"{who} CI {end}, against the host's own report",
                       row["delta_ci_pct"][i], hc["delta_ci_pct"][i], 1e-12)
            if row["verdict"] != hc["verdict"]:
                ck.fail("json", lab, f"{who} verdict, against the host's own report", row["verdict"], hc["verdict"])
        p = pool(ys, ses)
        pj = cmpj["pooled"]
        ck.num("json", lab, "pooled tau2", pj["fit"]["tau2"], p["tau2"], 1e-6)
        ck.num("json", lab, "pooled delta %", pj["delta_pct"], (math.exp(p["mu"]) - 1) * 100, 1e-6)
        ck.num("json", lab, "pooled CI low %", pj["delta_ci_pct"][0], (math.exp(p["lo"]) - 1) * 100, 1e-6)
        ck.num("json", lab, "pooled CI high %", pj["delta_ci_pct"][1], (math.exp(p["hi"]) - 1) * 100, 1e-6)
        unit, f = display_scale(m["unit"], [t[1] for t in truth.values()] + [t[2] for t in truth.values()])
        for fmt, body in (("text", text), ("markdown", md.replace("\\", ""))):
            head = re.search(re.escape(lab) + r" \(([^,]*), \w+ is better\)", body)
            if head and head.group(1) != unit:
                ck.fail(fmt, lab, "unit", head.group(1), unit)
            for h, (m, base, mean, dd, hc) in truth.items():
                row = re.search(r"^\s*\|?\s*" + re.escape(h) + r"\s*\|?\s+(" + NUM + r")\s*\|?\s+(" + NUM
                                + r")\s*\|?\s+(" + NUM + r")%[^[]*(\[[^]]*\])", body, re.M)
                if not row:
                    ck.fail(fmt, lab, f"host {h}'s row", "missing", "present")
                    continue
                ck.num(fmt, lab, f"host {h} baseline mean ({unit})", row.group(1), base * f)
                ck.num(fmt, lab, f"host {h} {cfg} mean ({unit})", row.group(2), mean * f)
                ck.num(fmt, lab, f"host {h} delta %", row.group(3), dd["delta_mean_pct"])
                lo, hi = re.findall(NUM, row.group(4))
                ck.num(fmt, lab, f"host {h} CI low", lo, hc["delta_ci_pct"][0])
                ck.num(fmt, lab, f"host {h} CI high", hi, hc["delta_ci_pct"][1])
            pl = re.search(r"pooled:\*?\*? (" + NUM + r")% \[(" + NUM + r"),(" + NUM + r")\].*?tau (" + NUM + ")%", body)
            if not pl:
                ck.fail(fmt, lab, "pooled line", "missing", "present")
                continue
            ck.num(fmt, lab, "pooled delta %", pl.group(1), (math.exp(p["mu"]) - 1) * 100)
            ck.num(fmt, lab, "pooled CI low %", pl.group(2), (math.exp(p["lo"]) - 1) * 100)
            ck.num(fmt, lab, "pooled CI high %", pl.group(3), (math.exp(p["hi"]) - 1) * 100)
            ck.num(fmt, lab, "pooled tau %", pl.group(4), math.sqrt(p["tau2"]) * 100)
    print(f"oracle: experiment {name}: numbers checked per format: {ck.count}", file=sys.stderr)
    return ck.fails


# ----------------------------------------------------------------- driver

def check(db, exp_id, d, name):
    exp = expected(load(db, exp_id))
    ck = Checks(name)
    j = json.load(open(f"{d}/report.json"))
    cis = json_cis(j)
    check_json(ck, exp, j)
    check_csv(ck, exp, open(f"{d}/report.csv").read(), cis)
    text = open(f"{d}/report.txt").read()
    check_text(ck, exp, text, cis)
    check_micro_summary(ck, exp, text, "text")
    check_markdown(ck, exp, open(f"{d}/report.md").read(), cis)
    check_html(ck, exp, open(f"{d}/report.html").read(), cis)
    print(f"oracle: experiment {name}: numbers checked per format: {ck.count}", file=sys.stderr)
    return ck.fails


def selftest():
    """Known inputs, outputs worked out by hand."""
    assert display_scale("s", [0.0015, 0.002]) == ("ms", 1e3)
    assert display_scale("ns", [3350.0]) == ("us", 1e-3)
    assert display_scale("KiB", [2048.0]) == ("MiB", 1 / 1024)
    assert display_scale("B", [5 * 2**30]) == ("GiB", 2.0**-30)
    assert display_scale("ns/op", [344526.0]) == ("us/op", 1e-3)
    assert display_scale("ops/s", [1.0]) == ("ops/s", 1.0)
    # Holm: 0.01*3, max(0.03, 0.02*2), max(0.04, 0.04*1).
    assert np.allclose(holm([0.02, 0.01, 0.04]), [0.04, 0.03, 0.04])
    # U = 0 of 3 vs 3 without ties: exact two-sided p = 2/20.
    assert abs(mwu_p([1, 2, 3], [4, 5, 6]) - 0.1) < 1e-12
    s = summary([1.0, 2.0, 6.0])
    assert (s["mean"], s["median"], s["stddev"]) == (3.0, 2.0, math.sqrt(7))
    ck = Checks("self")
    ck.num("text", "m", "x", "1.849", 1.8486)   # within half of 0.001
    ck.num("text", "m", "x", "+80.3%", 80.32)
    assert not ck.fails, ck.fails
    ck.num("text", "m", "y", "1.849", 1.8506)   # 0.0016 off: caught
    assert len(ck.fails) == 1 and "printed 1.849, expected 1.8506" in ck.fails[0], ck.fails
    # An axis with 3.50 at y=110 and 4.00 at y=44: 3.1 sits at y 162.8.
    ymap = axis([("72", "110", "3.50"), ("72", "44", "4.00")])
    assert abs(ymap(3.1) - 162.8) < 1e-9 and abs(ymap.value(162.8) - 3.1) < 1e-9
    # Labels to 0.01 over 66 px: 0.005 moves 3.1 by 0.66 px * (1 + 2 * 0.9 / 0.5).
    assert abs(ymap.slack(3.1) - 0.66 * 4.6) < 1e-9
    assert _close("22,204", 22204.0) and not _close("22.204", 22204.0)
    # Three hosts agreeing exactly: no between-host variance, a CI of width 0.
    p = pool([0.1, 0.1, 0.1], [0.01, 0.02, 0.03])
    assert p["tau2"] == 0 and abs(p["mu"] - 0.1) < 1e-15 and abs(p["hi"] - p["lo"]) < 1e-15
    # Two hosts at 0 and 1, se 1 each: Q = 0.5 < k - 1, so tau2 = 0, mu = 0.5,
    # HKSJ variance (0.25 + 0.25) / (1 * 2) = 0.25, CI 0.5 -+ t(0.975, 1) * 0.5.
    p = pool([0.0, 1.0], [1.0, 1.0])
    assert (p["tau2"], p["mu"], p["q"]) == (0.0, 0.5, 0.5)
    assert abs(p["hi"] - (0.5 + 12.706204736174698 * 0.5)) < 1e-9
    # A Go file: the pkg and the -N suffix are part of a benchmark's name.
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as t:
        t.write("pkg: a\nBenchmarkX-2 10 5 ns/op\npkg: b\nBenchmarkX-2 10 7 ns/op\nBenchmarkX-4 10 9 ns/op 3 B/op\n")
    g = go_benchmarks(t.name)
    __import__("os").unlink(t.name)
    assert sorted(v for v in g.values()) == [[3.0], [5.0], [7.0], [9.0]], g
    print("oracle self-test ok")


def main(argv):
    if argv[1:2] == ["selftest"]:
        selftest()
        return 0
    if argv[1:2] == ["fleet"]:
        args = dict(zip(argv[2::2], argv[3::2]))
        fails = check_fleet(args["--store"], int(args["--id"]), args["--dir"], args["--name"])
        for f in fails:
            print(f)
        return 1 if fails else 0
    if argv[1:2] == ["gobench"]:
        files = argv[argv.index("--files") + 1:]
        args = dict(zip(argv[2:argv.index("--files")][::2], argv[3:argv.index("--files")][::2]))
        fails = check_gobench(args["--store"], int(args["--id"]), args["--name"], files, args["--dir"])
        for f in fails:
            print(f)
        return 1 if fails else 0
    args = dict(zip(argv[2::2], argv[3::2]))
    fails = check(args["--store"], int(args["--id"]), args["--dir"], args["--name"])
    for f in fails:
        print(f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
