"""Calibration figures as PNG bytes, drawn with matplotlib's Agg backend, reproducible to the byte.

Every figure has the same size and resolution, the style of matplotlib's defaults whatever the
machine's ``matplotlibrc`` says, and no ``Software`` stamp, so the same data give the same bytes (the
figures' SHA-256 is their identity in evaluations; the knowledge examples' figures are regenerated and
compared). Each draws its own :class:`~matplotlib.figure.Figure` (no pyplot state), so threads may draw
at once.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import numpy as np

SIZE = (6.4, 4.2)  # inches
DPI = 100


def _style():
    """matplotlib's default style (not the machine's matplotlibrc), with a grid."""
    from matplotlib import style

    return style.context(["default", {"font.size": 10, "axes.grid": True, "grid.alpha": 0.3}])


def _png(figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def sweep_figure(
    title: str,
    x: Sequence[float],
    y: Sequence[float],
    shots: int,
    *,
    xlabel: str,
    ylabel: str,
    curve: Callable[[np.ndarray], np.ndarray] | None = None,
    legend: str | None = None,
    note: str | None = None,
) -> bytes:
    """Measured points with binomial error bars, and the fitted curve through them when there is one;
    ``note`` is one more line of the legend (why no curve is drawn, say)."""
    from matplotlib.figure import Figure

    from qsolve.calibration.fitting import binomial_sigma

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    with _style():
        figure = Figure(figsize=SIZE, dpi=DPI)
        figure.subplots_adjust(left=0.11, right=0.97, bottom=0.12, top=0.84)  # fixed: no layout engine
        axes = figure.add_subplot()
        axes.errorbar(x, y, yerr=binomial_sigma(y, shots), fmt="o", ms=4, color="C0", capsize=2, label="data")
        if curve is not None and len(x) > 1:
            dense = np.linspace(x.min(), x.max(), 400)
            axes.plot(dense, curve(dense), "-", color="C3", lw=1.5, label=legend or "fit")
        if note:
            axes.plot([], [], " ", label=note)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.set_ylim(-0.05, 1.05)
        figure.suptitle(title, y=0.97)
        # above the axes, where no data can be: the points of an oscillation fill the whole box
        axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, fontsize=9, frameon=False)
        return _png(figure)


def matrix_figure(
    title: str, matrix: Sequence[Sequence[float]], *, rows: Sequence[str], columns: Sequence[str], note: str
) -> bytes:
    """A probability matrix as a heat map with each cell's value written in it."""
    from matplotlib.figure import Figure

    values = np.asarray(matrix, dtype=float)
    with _style():
        figure = Figure(figsize=SIZE, dpi=DPI)
        figure.subplots_adjust(left=0.2, right=0.95, bottom=0.14, top=0.92)
        axes = figure.add_subplot()
        image = axes.imshow(values, vmin=0.0, vmax=1.0, cmap="Blues")
        axes.grid(False)
        axes.set_xticks(range(len(columns)), labels=list(columns))
        axes.set_yticks(range(len(rows)), labels=list(rows))
        for (i, j), v in np.ndenumerate(values):
            axes.text(j, i, f"{v:.3f}", ha="center", va="center", color="white" if v > 0.6 else "black")
        figure.colorbar(image, ax=axes, label="Probability")
        axes.set_title(title)
        axes.set_xlabel(note)
        return _png(figure)
