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
`gobench` and `fleet` check what an import and a fleet add. The parts:
oracle_truth.py (the store read, the numbers recomputed), oracle_formats.py
(text, Markdown, CSV, JSON), oracle_html.py (tables, plots read back),
oracle_more.py (Go benchmarks' identity and units, fleets).
"""
import json
import math
import os
import sys

# The script's own directory, wherever it is run from, holds its parts;
# no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from oracle_formats import (_close, check_csv, check_json, check_markdown,  # noqa: E402
                            check_micro_summary, check_text, json_cis)
from oracle_html import axis, check_html  # noqa: E402
from oracle_more import benchstat_name, check_fleet, check_gobench, go_benchmarks  # noqa: E402
from oracle_truth import (Checks, display_scale, expected, holm, load,  # noqa: E402
                          mwu_p, pool, summary)


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
    try:
        g = go_benchmarks(t.name)
    finally:
        __import__("os").unlink(t.name)
    assert sorted(v for v in g.values()) == [[3.0], [5.0], [7.0], [9.0]], g
    assert [benchstat_name(u) for u in ("ns/op", "MB/s", "B/op", "allocs/op", "ns/frame")] == \
        ["sec/op", "B/s", "B/op", "allocs/op", "sec/frame"]
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
