#!/usr/bin/env python3
"""Write tests/reference/mannwhitney_exact.json: SciPy's exact Mann-Whitney
p-values for the sizes where sysdelta uses the exact null distribution but
SciPy's method='auto' does not (no ties, 9 to 50 values per side), checked
by tests/stats/exact_u.rs.

Independent implementation: scipy.stats.mannwhitneyu(a, b,
alternative='two-sided', method='exact').
Run:  pip install numpy scipy && python3 tests/reference/make_mwu_exact.py
The output is deterministic (fixed seed) and is committed.

Cases:
* "grid": every n1 in 1..50 against three n2 (n1 itself, a random size in
  1..50 and 51 - n1), random normal samples with a random shift of either
  sign, so both tails and unequal sizes are covered;
* "near 0.05": for a spread of sizes, samples built to have each U whose
  exact p lies in [0.04, 0.06], including every U where the exact and the
  asymptotic p-value fall on opposite sides of 0.05;
* "extreme": completely separated samples (the smallest p) and U at the
  centre (p = 1) at 50 x 50 and at unequal sizes;
* "changed": the cases of mannwhitney.json that SciPy's 'auto' computed
  asymptotically and sysdelta now computes exactly, with their exact p;
  "changed_min_p" the same for the smallest possible p-values of
  detect.json (min_p).
"""
import json
import os

import numpy as np
import scipy
import scipy.stats as st

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261124)
EXACT_MAX = 50


def f(x):
    """Floats as Python repr strings (read back bit-exactly by Rust)."""
    return repr(float(x))


def fl(xs):
    return [f(x) for x in xs]


def sysdelta_exact(n1, n2, ties):
    return not ties and (n1 <= 8 or n2 <= 8 or (n1 <= EXACT_MAX and n2 <= EXACT_MAX))


def case(a, b, label):
    # Six decimals keep the file small; the assert below rules out ties.
    a = np.round(np.asarray(a, dtype=float), 6)
    b = np.round(np.asarray(b, dtype=float), 6)
    assert len(np.unique(np.concatenate([a, b]))) == len(a) + len(b), label
    assert sysdelta_exact(len(a), len(b), False), label
    ex = st.mannwhitneyu(a, b, alternative="two-sided", method="exact")
    asy = st.mannwhitneyu(a, b, alternative="two-sided", use_continuity=True,
                          method="asymptotic")
    return {"label": label, "a": fl(a), "b": fl(b), "u": f(ex.statistic),
            "p": f(ex.pvalue), "p_asymptotic": f(asy.pvalue)}


def ranks_with_u(n1, n2, u1):
    """Ranks (1-based) of a in a pooled sample of n1 + n2 whose U1 is u1."""
    # a's ranks start at 1..n1 (U1 = 0); moving a's top rank up by one adds
    # one to U1, until it reaches n1 + n2; then the next one, and so on.
    ranks = list(range(1, n1 + 1))
    need = u1
    top = n1 + n2
    for i in reversed(range(n1)):
        step = min(need, top - ranks[i])
        ranks[i] += step
        need -= step
        top = ranks[i] - 1
        if need == 0:
            break
    assert need == 0
    return ranks


def with_u(n1, n2, u1):
    """Samples of sizes n1 and n2 without ties whose U1 is exactly u1: a
    takes the ranks of [ranks_with_u], values are an increasing but
    irregular function of the rank."""
    ranks = ranks_with_u(n1, n2, u1)
    values = np.cumsum(rng.uniform(0.5, 1.5, n1 + n2)) + 100.0
    in_a = set(ranks)
    a = [values[r - 1] for r in ranks]
    b = [values[r - 1] for r in range(1, n1 + n2 + 1) if r not in in_a]
    rng.shuffle(a)
    rng.shuffle(b)
    return a, b


def main():
    cases = []
    for n1 in range(1, EXACT_MAX + 1):
        for n2 in sorted({n1, int(rng.integers(1, EXACT_MAX + 1)), EXACT_MAX + 1 - n1}):
            shift = rng.uniform(-1.2, 1.2)
            cases.append(case(rng.normal(0, 1, n1), rng.normal(shift, 1, n2),
                              f"grid {n1}x{n2} shift {shift:+.2f}"))

    for n1, n2 in [(9, 9), (10, 12), (11, 13), (12, 30), (14, 22), (15, 15),
                   (16, 16), (18, 27), (20, 20), (9, 50), (24, 24), (25, 40),
                   (30, 30), (33, 34), (35, 45), (40, 50), (45, 45), (50, 50),
                   (50, 17)]:
        # Both tails: U near its lower and upper critical values.
        for u1 in range(0, n1 * n2 + 1):
            ra = ranks_with_u(n1, n2, u1)
            rb = sorted(set(range(1, n1 + n2 + 1)) - set(ra))
            p = st.mannwhitneyu(ra, rb, method="exact").pvalue
            if 0.04 <= p <= 0.06:
                tail = "low" if u1 < n1 * n2 / 2 else "high"
                cases.append(case(*with_u(n1, n2, u1), f"near 0.05 {n1}x{n2} U={u1} ({tail})"))

    for n1, n2 in [(50, 50), (9, 50), (50, 9), (30, 47)]:
        cases.append(case(*with_u(n1, n2, 0), f"separated low {n1}x{n2}"))
        cases.append(case(*with_u(n1, n2, n1 * n2), f"separated high {n1}x{n2}"))
    cases.append(case(*with_u(50, 50, 1250), "centre 50x50"))
    cases.append(case(*with_u(49, 50, 1225), "centre 49x50"))

    flips = [c for c in cases
             if (float(c["p"]) < 0.05) != (float(c["p_asymptotic"]) < 0.05)]
    assert flips, "no case where exact and asymptotic disagree at 0.05"

    changed = []
    with open(os.path.join(HERE, "mannwhitney.json")) as fh:
        for c in json.load(fh)["cases"]:
            a = np.array([float(x) for x in c["a"]])
            b = np.array([float(x) for x in c["b"]])
            ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
            if c["method"] == "asymptotic" and sysdelta_exact(len(a), len(b), ties):
                ex = st.mannwhitneyu(a, b, alternative="two-sided", method="exact")
                changed.append({"label": c["label"], "u": f(ex.statistic), "p": f(ex.pvalue)})

    changed_min_p = []
    with open(os.path.join(HERE, "detect.json")) as fh:
        for c in json.load(fh)["min_p"]:
            n1, n2 = c["n1"], c["n2"]
            if n1 > 8 and n2 > 8 and sysdelta_exact(n1, n2, False):
                ex = st.mannwhitneyu(np.arange(n1), np.arange(n1, n1 + n2),
                                     alternative="two-sided", method="exact")
                changed_min_p.append({"n1": n1, "n2": n2, "p": f(ex.pvalue)})

    out = {
        "generated_by": "tests/reference/make_mwu_exact.py",
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__},
        "exact_max_per_side": EXACT_MAX,
        "cases": cases,
        "changed": changed,
        "changed_min_p": changed_min_p,
    }
    # One case per line: readable in a diff, a third of the indented size.
    text = json.dumps(out, indent=1)
    for key in ("cases", "changed", "changed_min_p"):
        rows = ",\n  ".join(json.dumps(c) for c in out[key])
        text = text.replace(json.dumps(out[key], indent=1).replace("\n", "\n "),
                            "[\n  " + rows + "\n ]", 1)
    json.loads(text)  # still the same JSON
    assert json.loads(text) == out
    with open(os.path.join(HERE, "mannwhitney_exact.json"), "w") as fh:
        fh.write(text + "\n")
    print(f"{len(cases)} cases ({len(flips)} where exact and asymptotic disagree at 0.05), "
          f"{len(changed) + len(changed_min_p)} changed")


if __name__ == "__main__":
    main()
