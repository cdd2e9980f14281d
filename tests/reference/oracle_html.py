"""The oracle's checks of the HTML report (see oracle.py): its tables, and
its plots read back, each marker's SVG coordinate mapped through the
axis's tick labels to a value."""
import re

from oracle_formats import check_shown_delta
from oracle_truth import mlabel


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


def markers(svg):
    """The data markers of one plot: its circles, polygons and squares,
    without the rect that paints its whole background (plotters fills
    each drawing area with one; it is at the drawing's centre and no
    point)."""
    size = dict(re.findall(r'(width|height)="([^"]*)"', svg.split(">", 1)[0]))
    out = []
    for el in re.findall(r"<circle[^>]*/>|<polygon[^>]*/>|<rect[^>]*/>", svg):
        if el.startswith("<rect"):
            a = dict(re.findall(r'(\w+)="([^"]*)"', el))
            if (a.get("x"), a.get("y"), a.get("width"), a.get("height")) == \
                    ("0", "0", size.get("width"), size.get("height")):
                continue
        out.append(el)
    return out


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
            svgs = re.findall(r"<svg.*?</svg>", sec, re.S)
            if svgs:
                check_svg(ck, m, svgs[0], svgs[1] if len(svgs) > 1 else "", colour)


def check_svg(ck, m, left, right, colour):
    """The first plot (`left`): each config's markers at its values; the
    second (`right`, its own SVG with its own y ticks over the same range):
    the runs in execution order, each at its value. A pixel's worth (1.5
    px: plotters rounds to whole pixels, a marker's centre to half of one)
    of slack."""
    lab, f = mlabel(m), m["factor"]
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
    yr = axis(texts(right)) or yl
    tol = 1.5
    # Left panel: markers per colour against that config's values.
    got = {}
    for el in markers(left):
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
    for el in markers(right):
        x, y, c = marker_y(el)
        i = index(x)
        if not 0 <= i < len(m["order"]):
            ck.fail("html", lab, "run index in the execution-order panel", i, f"0..{len(m['order']) - 1}")
            continue
        cfg, v = m["order"][i]
        if colour.get(c, cfg) != cfg:
            # A run drawn in another config's colour.
            ck.fail("html", lab, f"run {i} colour in the execution-order panel", colour[c], cfg)
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
