"""Charts for the HTML report, drawn in Python as inline SVG: no script, no CDN, readable from disk.

Every text that reaches a chart (skill names, agent names, labels) is escaped here; the functions
return :class:`markupsafe.Markup`, so the template inserts them as they are and escapes nothing twice.
Colours carry meaning and are never the only carrier: an interval crossing 0 is also dashed and
its dot hollow, and every chart has a ``<title>`` and a table (in the page) with the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

FONT = "font-family=\"system-ui,-apple-system,'Segoe UI',sans-serif\" font-size=\"12\""
GAIN, LOSS, UNSURE, INK, MUTED, GRID = "#1a7f37", "#cf222e", "#9a6700", "#1f2328", "#656d76", "#d0d7de"
WITH, WITHOUT = "#0969da", "#8c959f"


def _svg(width: int, height: int, title: str, body: list[str]) -> Markup:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'role="img" {FONT}><title>{escape(title)}</title>')
    return Markup(head + "".join(body) + "</svg>")


def _text(x: float, y: float, text: object, *, anchor: str = "start", fill: str = INK, weight: str = "normal", size: int | None = None) -> str:
    extra = f' font-size="{size}"' if size else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}" font-weight="{weight}"{extra}>'
            f"{escape(str(text))}</text>")


_NARROW, _WIDE = frozenset(" .,:;'|!il[]()"), frozenset("mwMW@%…")


def _text_width(text: str, size: int = 12) -> float:
    """An upper estimate of ``text``'s width in px at ``size``: the page's font is whatever sans-serif the
    reader has (DejaVu Sans on Debian is among the widest), so a column sized by this never cuts its text."""
    em = sum(0.35 if c in _NARROW else 0.95 if c in _WIDE else 0.75 if c.isupper() else 0.65 for c in text)
    return em * size


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- forest plot -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ForestRow:
    label: str  # "skill · agent · dimension"
    delta: float  # lift, 0–1 scale
    low: float | None
    high: float | None
    n: int
    group: str = ""  # rows of one group are drawn together, a rule between groups


def _points(value: float) -> str:
    p = value * 100
    return "±0" if abs(p) < 0.05 else f"{p:+.0f}"


def forest(rows: Sequence[ForestRow], *, title: str = "Skill lift per dimension (points, 95% CI)") -> Markup:
    """Dot-and-whisker per row: green when the interval lies above 0, red below, amber and dashed
    (hollow dot) when it crosses 0 — the data cannot tell a gain from a loss there."""
    labels = [_clip(r.label, 46) for r in rows]
    notes = [_note(r) for r in rows]
    # the label and value columns as wide as their longest text, so neither is cut at the SVG's edge
    label_w = round(max((_text_width(t) for t in labels), default=0) + 16)
    value_w = round(max((_text_width(t) for t in notes), default=0) + 16)
    plot_w, row_h, top = 380, 22, 34
    height = top + row_h * len(rows) + 30
    lows = [r.low if r.low is not None else r.delta for r in rows] or [0.0]
    highs = [r.high if r.high is not None else r.delta for r in rows] or [0.0]
    lo, hi = min(-0.1, *lows), max(0.1, *highs)
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    body = [_text(label_w + plot_w / 2, 16, "← skill hurts · lift in points · skill helps →", anchor="middle", fill=MUTED)]
    span = (hi - lo) * 100
    step = next((s for s in (10, 20, 25, 50, 100) if span / s <= 8), 100)  # ticks on multiples of step, 0 always among them
    ticks = [t / 100 for t in range(-200, 201, step) if lo <= t / 100 <= hi]
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{height - 24}" stroke="{GRID}" stroke-width="1"/>')
        body.append(_text(x(t), height - 10, _points(t), anchor="middle", fill=MUTED))
    body.append(f'<line x1="{x(0):.1f}" y1="{top - 8}" x2="{x(0):.1f}" y2="{height - 24}" stroke="{INK}" stroke-width="1.5"/>')
    previous = None
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        if previous is not None and r.group != previous:
            body.append(f'<line x1="4" y1="{y - row_h / 2:.1f}" x2="{label_w + plot_w + value_w - 4}" y2="{y - row_h / 2:.1f}" '
                        f'stroke="{GRID}" stroke-dasharray="2 3"/>')
        previous = r.group
        has_ci = r.low is not None and r.high is not None and r.n > 1
        crosses = has_ci and r.low is not None and r.high is not None and r.low < 0 < r.high
        colour = UNSURE if crosses or not has_ci else GAIN if (r.low or 0) >= 0 and r.delta > 0 else LOSS if r.delta < 0 else UNSURE
        body.append(_text(8, y + 4, labels[i]))
        if has_ci and r.low is not None and r.high is not None:
            dash = ' stroke-dasharray="4 3"' if crosses else ""
            body.append(f'<line x1="{x(r.low):.1f}" y1="{y:.1f}" x2="{x(r.high):.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="2"{dash}/>')
            for end in (r.low, r.high):
                body.append(f'<line x1="{x(end):.1f}" y1="{y - 5:.1f}" x2="{x(end):.1f}" y2="{y + 5:.1f}" stroke="{colour}" stroke-width="2"/>')
        fill = "#fff" if crosses or not has_ci else colour
        body.append(f'<circle cx="{x(r.delta):.1f}" cy="{y:.1f}" r="4.5" fill="{fill}" stroke="{colour}" stroke-width="2"/>')
        body.append(_text(label_w + plot_w + 8, y + 4, notes[i], fill=colour if crosses else INK))
    return _svg(label_w + plot_w + value_w, height, title, body)


def _note(r: ForestRow) -> str:
    """A forest row's numbers, right of its whisker: ``+20 [-10, +50] n=4 · crosses 0``."""
    if not (r.low is not None and r.high is not None and r.n > 1):
        return f"{_points(r.delta)} n={r.n}, no interval"
    return f"{_points(r.delta)} [{_points(r.low)}, {_points(r.high)}] n={r.n}" + (" · crosses 0" if r.low < 0 < r.high else "")


# -- pass@k curves -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PassCurve:
    label: str  # "skill · agent"
    with_skill: list[float | None]  # pass@k for k = 1..n
    without_skill: list[float | None]


def pass_at_k(curves: Sequence[PassCurve], *, title: str = "pass@k, k = 1…n: with the skill and without") -> Markup:
    """One small panel per skill × agent: pass@k with the skill (solid blue) and without (dashed grey)."""
    panel_w, panel_h, pad_l, pad_b, pad_t, per_row = 250, 140, 36, 26, 26, 3
    cols = min(per_row, max(1, len(curves)))
    rows = (len(curves) + per_row - 1) // per_row
    width, height = cols * panel_w, rows * panel_h + 30
    body = [f'<line x1="8" y1="12" x2="28" y2="12" stroke="{WITH}" stroke-width="2.5"/>', _text(32, 16, "with skill"),
            f'<line x1="112" y1="12" x2="132" y2="12" stroke="{WITHOUT}" stroke-width="2.5" stroke-dasharray="5 3"/>',
            _text(136, 16, "without skill")]
    for i, c in enumerate(curves):
        ox, oy = (i % per_row) * panel_w, 30 + (i // per_row) * panel_h
        n = max(len(c.with_skill), len(c.without_skill), 1)
        plot_w, plot_h = panel_w - pad_l - 14, panel_h - pad_t - pad_b

        def px(k: int, ox: int = ox, n: int = n, plot_w: int = plot_w) -> float:
            return ox + pad_l + (plot_w / 2 if n == 1 else (k - 1) / (n - 1) * plot_w)

        def py(v: float, oy: int = oy, plot_h: int = plot_h) -> float:
            return oy + pad_t + (1 - v) * plot_h

        body.append(_text(ox + pad_l, oy + 14, _clip(c.label, 34), weight="600"))
        for v in (0.0, 0.5, 1.0):
            body.append(f'<line x1="{ox + pad_l}" y1="{py(v):.1f}" x2="{ox + pad_l + plot_w}" y2="{py(v):.1f}" stroke="{GRID}"/>')
            body.append(_text(ox + pad_l - 4, py(v) + 4, f"{v * 100:.0f}%", anchor="end", fill=MUTED, size=10))
        for k in range(1, n + 1):
            body.append(_text(px(k), oy + panel_h - 8, f"k={k}", anchor="middle", fill=MUTED, size=10))
        for series, colour, dash in ((c.without_skill, WITHOUT, ' stroke-dasharray="5 3"'), (c.with_skill, WITH, "")):
            pts = [(px(k), py(v)) for k, v in enumerate(series, 1) if v is not None]
            if len(pts) > 1:
                path = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
                body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2.5"{dash}/>')
            for a, b in pts:
                body.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3.5" fill="{colour}"/>')
    return _svg(width, height, title, body)


# -- cost against pass rate --------------------------------------------------------------------------
@dataclass(frozen=True)
class CostPoint:
    label: str  # "skill · agent"
    tokens_with: float | None  # tokens per trial
    rate_with: float | None
    tokens_without: float | None
    rate_without: float | None


def cost_vs_pass(points: Sequence[CostPoint], *, title: str = "Tokens per trial against pass rate, per arm") -> Markup:
    """Each skill × agent is an arrow from its baseline (grey) to its with-skill arm (blue): up is
    better, right is dearer. Points are numbered; the legend names them (coinciding points share a label)."""
    legend_w, left, top, bottom, plot_w, plot_h = 230, 56, 20, 40, 340, 240
    width, height = left + plot_w + 24 + legend_w, max(top + plot_h + bottom, 60 + 18 * len(points))
    xs = [v for p in points for v in (p.tokens_with, p.tokens_without) if v is not None] or [1.0]
    x_hi = max(xs) * 1.1 or 1.0

    def x(v: float) -> float:
        return left + v / x_hi * plot_w

    def y(v: float) -> float:
        return top + (1 - v) * plot_h

    body = [f'<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{WITH}"/></marker></defs>']
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + plot_w}" y2="{y(v):.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, y(v) + 4, f"{v * 100:.0f}%", anchor="end", fill=MUTED))
    for i in range(5):
        t = x_hi * i / 4
        body.append(_text(x(t), top + plot_h + 18, f"{t:,.0f}", anchor="middle", fill=MUTED))
    body.append(_text(left + plot_w / 2, top + plot_h + 34, "tokens per trial", anchor="middle", fill=MUTED))
    body.append(f'<text transform="rotate(-90 14 {top + plot_h / 2:.1f})" x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
                f'fill="{MUTED}">pass rate</text>')
    labels: dict[tuple[float, float], list[str]] = {}
    for i, p in enumerate(points, 1):
        a, b = (p.tokens_without, p.rate_without), (p.tokens_with, p.rate_with)
        if a[0] is not None and a[1] is not None and b[0] is not None and b[1] is not None:
            body.append(f'<line x1="{x(a[0]):.1f}" y1="{y(a[1]):.1f}" x2="{x(b[0]):.1f}" y2="{y(b[1]):.1f}" stroke="{WITH}" '
                        f'stroke-width="1.5" marker-end="url(#arrow)" opacity="0.7"/>')
        for (tx, ty), colour in ((a, WITHOUT), (b, WITH)):
            if tx is not None and ty is not None:
                body.append(f'<circle cx="{x(tx):.1f}" cy="{y(ty):.1f}" r="5" fill="{colour}" stroke="#fff"/>')
                labels.setdefault((round(x(tx)), round(y(ty))), []).append(str(i))
    for (lx, ly), names in labels.items():
        body.append(_text(lx + 8, ly - 6, ",".join(dict.fromkeys(names)), size=11, weight="600"))
    lx = left + plot_w + 24
    body.append(f'<circle cx="{lx + 6}" cy="{top + 2}" r="5" fill="{WITHOUT}"/>')
    body.append(_text(lx + 16, top + 6, "baseline (without skill)"))
    body.append(f'<circle cx="{lx + 6}" cy="{top + 20}" r="5" fill="{WITH}"/>')
    body.append(_text(lx + 16, top + 24, "with skill"))
    for i, p in enumerate(points, 1):
        body.append(_text(lx, top + 48 + 18 * (i - 1), f"{i}  {_clip(p.label, 32)}", size=11))
    return _svg(width, height, title, body)


# -- trigger confusion matrix ------------------------------------------------------------------------
def confusion(tp: int, fn: int, fp: int, tn: int, *, title: str = "Trigger confusion matrix") -> Markup:
    """Rows: should the skill load? Columns: did it? The diagonal is right; darker means more cases."""
    cell, left, top = 92, 128, 44
    total = max(tp + fn + fp + tn, 1)
    body = [_text(left + cell, 16, "skill loaded?", anchor="middle", fill=MUTED),
            _text(left + cell / 2, top - 8, "yes", anchor="middle", weight="600"),
            _text(left + cell * 1.5, top - 8, "no", anchor="middle", weight="600"),
            _text(left - 8, top + cell / 2 + 4, "should load", anchor="end", weight="600"),
            _text(left - 8, top + cell * 1.5 + 4, "should not", anchor="end", weight="600")]
    for r, c, value, right_call, name in ((0, 0, tp, True, "true positive"), (0, 1, fn, False, "missed"),
                                          (1, 0, fp, False, "false trigger"), (1, 1, tn, True, "true negative")):
        shade = 0.15 + 0.7 * value / total
        colour = GAIN if right_call else LOSS
        x0, y0 = left + c * cell, top + r * cell
        body.append(f'<rect x="{x0}" y="{y0}" width="{cell - 2}" height="{cell - 2}" fill="{colour}" fill-opacity="{shade:.2f}" rx="4"/>')
        body.append(_text(x0 + cell / 2, y0 + cell / 2, value, anchor="middle", weight="700", size=20))
        body.append(_text(x0 + cell / 2, y0 + cell / 2 + 18, name, anchor="middle", fill=INK, size=10))
    return _svg(left + 2 * cell + 10, top + 2 * cell + 10, title, body)
