"""The oracle's checks of the text, Markdown, CSV and JSON reports (see
oracle.py), and of the LMbench summary tables in the text."""
import csv
import io
import re

import numpy as np
from scipy import stats

from oracle_truth import MICRO_US, mlabel, verdict_ok


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


def expanded_level(x, y, conf=0.95, cap=0.9999):
    """Hesterberg's expanded percentile level for the ratio of two means,
    as docs/statistics.md states it: z' = t_q(df) sqrt(V / V_boot), V the
    unbiased delta-method variance of the log ratio, V_boot the same with
    (n - 1) / n factors, df by Welch-Satterthwaite; 2 Phi(z') - 1, capped."""
    v = [np.var(a, ddof=1) / (len(a) * np.mean(a) ** 2) for a in (x, y)]
    big_v = sum(v)
    boot = sum(vi * (len(a) - 1) / len(a) for vi, a in zip(v, (x, y)))
    if big_v <= 0 or boot <= 0:
        return conf
    df = big_v ** 2 / sum(vi ** 2 / (len(a) - 1) for vi, a in zip(v, (x, y)))
    z = stats.t.ppf(1 - (1 - conf) / 2, df) * np.sqrt(big_v / boot)
    return min(2 * stats.norm.cdf(z) - 1, cap)


def check_ci_loosely(ck, fmt, exp, m, cfg, ci):
    """sysdelta's bootstrap uses its own seeded RNG, so its CI equals
    SciPy's only loosely: each end within SciPy's width plus 2 points,
    SciPy's read at the level the report reads (the expanded level,
    docs/statistics.md; at 6 runs a side with one outlier it nears 0.9999,
    and a 95% interval is then far narrower than the report's on a loaded
    machine's wall times). The two take different resamples: this catches a
    CI of other cells or of the wrong sign, not a small bias (the formats'
    CIs are checked exactly against the JSON's instead)."""
    x, y = m["cells"].get(exp["baseline"], []), m["cells"].get(cfg, [])
    if ci is None or min(len(x), len(y)) < 5 or np.mean(x) == 0:
        return
    res = stats.bootstrap((np.asarray(y), np.asarray(x)),
                          lambda a, b, axis=-1: np.mean(a, axis=axis) / np.mean(b, axis=axis),
                          n_resamples=4000, method="percentile", random_state=1,
                          vectorized=True, confidence_level=expanded_level(x, y))
    lo, hi = (res.confidence_interval.low - 1) * 100, (res.confidence_interval.high - 1) * 100
    slack = (hi - lo) + 2
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
