"""A case's history as a small chart, server-rendered SVG (no image service, no script): its accuracy and
its fidelity over its runs, oldest on the left. Each point carries a ``<title>`` (the run, when it was
recorded, the values) that a browser shows on hover."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 280, 120
LEFT, RIGHT, TOP, BOTTOM = 38, 8, 8, 22
FONT = 11  # px at the chart's own width; the chart scales with its box
ACCURACY, FIDELITY = "#2456c7", "#c2410c"


@dataclass(frozen=True)
class Point:
    run_id: str
    recorded_at: datetime
    version: str
    accuracy: float | None
    fidelity: float | None
    passed: bool


def y_range(points: list[Point]) -> tuple[float, float]:
    """The y-range that shows every one of ``points``: charts that are compared share the range of all
    their points (:func:`history_chart`'s ``span``)."""
    values = [v for p in points for v in (p.accuracy, p.fidelity) if v is not None]
    lo = min(0.9, max(0.0, math.floor((min(values, default=1.0) - 0.05) * 10) / 10))
    hi = 1.0 if not values or max(values) <= 1.0 else max(values)
    return lo, hi


def history_chart(points: list[Point], *, label: str, span: tuple[float, float] | None = None) -> Markup:
    """The chart of ``points`` (in the order given), accessible by ``label``, over the y-range ``span``
    (default: its own points')."""
    lo, hi = span or y_range(points)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(points)

    def x(i: int) -> float:
        return LEFT + (plot_w / 2 if n == 1 else plot_w * i / (n - 1))

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - lo) / ((hi - lo) or 1))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}" class="history">',
        f"<title>{escape(label)}</title>",
    ]
    for v in (lo, (lo + hi) / 2, hi):
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#d8dde4" '
            'stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{LEFT - 4}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="{FONT}" fill="#5b6472">'
            f"{100 * v:.0f}%</text>"
        )
    for name, colour in (("accuracy", ACCURACY), ("fidelity", FIDELITY)):
        series = [(i, getattr(p, name)) for i, p in enumerate(points) if getattr(p, name) is not None]
        if len(series) > 1:
            path = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in series)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.6" class="{name}"/>'
            )
        for i, v in series:
            p = points[i]
            said = (
                f"{name} {100 * v:.1f}% · run {p.run_id} · {p.version} · "
                f"{p.recorded_at:%Y-%m-%d %H:%M} UTC · {'pass' if p.passed else 'fail'}"
            )
            fill = colour if p.passed else "#fff"
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{fill}" stroke="{colour}" '
                f'stroke-width="1.4" class="point {name}"><title>{escape(said)}</title></circle>'
            )
    if n:
        parts.append(
            f'<text x="{LEFT}" y="{HEIGHT - 5}" font-size="{FONT}" fill="#5b6472">'
            f"{points[0].recorded_at:%Y-%m-%d}</text>"
        )
        parts.append(
            f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 5}" font-size="{FONT}" fill="#5b6472" text-anchor="end">'
            f"{points[-1].recorded_at:%Y-%m-%d} · {n} run{'' if n == 1 else 's'}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
