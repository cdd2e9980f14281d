"""The oracle's checks of what imports and fleets add (see oracle.py): a Go
benchmark's identity and units, and a fleet's rows and pooled line."""
import json
import math
import re
import sqlite3
import sys

from scipy import stats

from oracle_formats import NUM
from oracle_truth import Checks, display_scale, expected, load, mlabel, pool


def benchstat_name(unit):
    """The name benchstat gives a Go unit (golang.org/x/perf benchunit's
    TidyUnit): a prescaled `ns` is `sec` and `MB` is `B`, one unit term
    at a time (`ns/op` is `sec/op`, `MB/s` is `B/s`); others keep theirs."""
    return "/".join({"ns": "sec", "MB": "B"}.get(t, t) for t in unit.split("/"))


def go_benchmarks(path):
    """A Go benchmark file as benchstat reads it: a benchmark is its full
    name (with the -N GOMAXPROCS suffix) and the configuration keys above
    it (pkg, goos, goarch, cpu); its values per unit as written, in file
    order."""
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
    """Each benchmark of each file is a cell of its own: its values as
    written, and no other benchmark's, in one (workload, metric) of that
    file's config, the metric named as benchstat names it and stored in
    the file's unit, the workload named by the benchmark (with its -N) and
    by each identity key that tells two of the file's benchmarks apart.
    Go's time units scale as any time unit does (docs/reports.md: `ns/op`
    is shown as `us/op` when its values are microseconds), in text and in
    each workload's Markdown table."""
    exp = expected(load(db, exp_id))
    fails = []
    text, md = open(f"{d}/report.txt").read(), open(f"{d}/report.md").read().replace("\\", "")
    for m in exp["metrics"]:
        go_unit = m["unit"] or m["name"]
        if not re.match(r"^(ns|us|ms|s|B|KiB|MiB)/op$", go_unit):
            continue
        want, _ = display_scale(go_unit, [x["mean"] for x in m["summary"].values()])
        if want not in text:
            fails.append(f"text: experiment {name}, {mlabel(m)}: unit: printed {m['display'] or '(none)'}"
                         f" ({go_unit} stored as unit {m['unit']!r}), expected {want}")
        # The header of this workload's table, not the first one naming the metric.
        sec = md.split(f"### {m['workload']}\n", 1)
        head = re.search(r"\| " + re.escape(m["name"]) + r" \(([^)]*)\)", sec[1].split("### ", 1)[0]) \
            if len(sec) == 2 else None
        if head is None:
            fails.append(f"markdown: experiment {name}, {mlabel(m)}: no table header names it")
        elif head.group(1) != want:
            fails.append(f"markdown: experiment {name}, {mlabel(m)}: unit: printed ({head.group(1)}), expected ({want})")
    for path in files:
        cfg = re.sub(r"\.[^.]*$", "", path.rsplit("/", 1)[-1])
        benches = go_benchmarks(path)
        # The identity keys whose values differ between the file's benchmarks.
        telling = {k for (_b, ks), _u in benches for k, v in ks
                   if any(dict(o).get(k) != v for (_ob, o), _ou in benches)}
        for ((bench, keys), unit), want in benches.items():
            metric = benchstat_name(unit)
            cells = {m["workload"]: m["cells"].get(cfg, []) for m in exp["metrics"]
                     if m["name"] == metric and m["unit"] == unit}
            own = [w for w, v in cells.items() if sorted(v) == sorted(want)]
            pkg = dict(keys).get("pkg", "")
            if not own:
                fails.append(f"store: experiment {name}, {bench} (pkg {pkg}) {metric} ({unit}) in {cfg}: "
                             f"printed values {dict((w, v) for w, v in cells.items() if v)}, expected "
                             f"a cell of its own holding {want}")
                continue
            short = bench[len("Benchmark"):]
            named = [w for w in own if (w == short or w.startswith(short + " "))
                     and all(v in w for k, v in keys if k in telling)]
            if not named:
                fails.append(f"store: experiment {name}, {bench} (pkg {pkg}) in {cfg}: workload "
                             f"{own[0]!r}, expected it named {short} with "
                             f"{', '.join(f'{k}={v}' for k, v in keys if k in telling) or 'no key'}")
    return fails


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
