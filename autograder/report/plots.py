"""The report's plots: matplotlib on its Agg canvas (no display, no global pyplot state),
each returned as a ``data:image/png;base64,...`` URI for an ``<img>`` in the page, so
the page is one file that opens offline. Three figures in all, whatever the class's
size: the time goes into drawing, not into the number of students.
"""

from __future__ import annotations

import base64
import io
import math

DPI = 96
INK = "#1f4e79"
LIGHT = "#9dc3e6"
MUTED = "#666666"


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _style(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(labelsize=8, colors=MUTED)


def score_histograms(scores: dict[str, list[float]]) -> str | None:
    """Small multiples, one per assignment: how many submissions scored each tenth of
    the points (percent of the maximum), with the median marked."""
    names = [a for a, xs in scores.items() if xs]
    if not names:
        return None
    cols = min(5, len(names))
    rows = math.ceil(len(names) / cols)
    fig = _figure(2.1 * cols, 1.9 * rows)
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    bins = [10 * i for i in range(11)]
    for ax, a in zip(axes.flat, names):
        xs = [min(100.0, max(0.0, x)) for x in scores[a]]
        ax.hist(xs, bins=bins, color=LIGHT, edgecolor=INK, linewidth=0.6)
        xs.sort()
        mid = len(xs) // 2
        median = xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2
        ax.axvline(median, color=INK, linewidth=1.2, linestyle="--")
        ax.set_title(f"{a}\n(n={len(xs)}, median {median:.0f}%)", fontsize=8)
        ax.set_xlim(0, 100)
        ax.set_xticks([0, 50, 100])
        ax.yaxis.get_major_locator().set_params(integer=True)
        _style(ax)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    fig.supxlabel("score, % of the points", fontsize=8, color=MUTED)
    fig.supylabel("submissions", fontsize=8, color=MUTED)
    fig.tight_layout()
    return _uri(fig)


def pass_rates(rates: dict[str, list[tuple[str, float, float]]]) -> str | None:
    """One horizontal bar per test cell, in notebook order, grouped by assignment (in two
    columns): the share of submissions with full marks (bar, its percentage written at
    its end) and the mean share of the points (tick)."""
    names = [a for a, cells in rates.items() if cells]
    if not names:
        return None
    columns = _balance(names, {a: len(rates[a]) + 2 for a in names})
    tallest = max(sum(len(rates[a]) + 2 for a in col) for col in columns)
    height = 0.17 * tallest + 0.6
    fig = _figure(10.5 if len(columns) > 1 else 6.0, height)
    grid = fig.add_gridspec(1, len(columns), wspace=0.75)
    for k, col in enumerate(columns):
        sizes = [len(rates[a]) + 2 for a in col]
        sizes.append(max(0, tallest - sum(sizes)) + 0.01)  # empty room below a short column
        sub = grid[0, k].subgridspec(len(sizes), 1, height_ratios=sizes, hspace=0.0)
        for i, a in enumerate(col):
            ax = fig.add_subplot(sub[i, 0])
            _rate_axes(ax, a, rates[a], last=i == len(col) - 1)
    fig.subplots_adjust(
        left=0.2 if len(columns) > 1 else 0.35,
        right=0.96,
        top=1 - 0.1 / height,
        bottom=0.45 / height,
    )
    return _uri(fig)


def _balance(names: list[str], weight: dict[str, int]) -> list[list[str]]:
    """The assignments in order, cut into at most two columns of about equal height."""
    total = sum(weight.values())
    if len(names) < 2 or total < 16:
        return [names]
    left, acc = [], 0
    for a in names:
        if left and acc + weight[a] / 2 > total / 2:
            break
        left.append(a)
        acc += weight[a]
    return [left, names[len(left) :]]


def _rate_axes(ax, assignment: str, cells: list[tuple[str, float, float]], last: bool) -> None:
    ys = list(range(len(cells)))
    full = [100 * f for _, f, _ in cells]
    mean = [100 * m for _, _, m in cells]
    ax.barh(ys, full, color=LIGHT, edgecolor=INK, linewidth=0.5, height=0.72)
    ax.scatter(mean, ys, marker="|", s=60, color=INK, zorder=3)
    ax.set_yticks(ys, [_short_cell(label) for label, _, _ in cells], fontsize=7)
    ax.set_ylim(len(cells) + 0.6, -1.6)  # room above the first bar for the title
    ax.set_xlim(0, 100)
    ax.text(0, -1.3, assignment, fontsize=8, fontweight="bold", va="center")
    for y, f in zip(ys, full):
        ax.text(101, y, f"{f:.0f}%", va="center", fontsize=6.5, color=MUTED)
    _style(ax)
    ax.spines["bottom"].set_visible(last)
    ax.tick_params(axis="x", bottom=last, labelbottom=last)
    ax.tick_params(axis="y", length=0)
    if last:
        ax.set_xlabel("% of submissions", fontsize=7, color=MUTED)


def _short_cell(grade_id: str) -> str:
    """A test cell's grade id without its notebook's prefix: "add_mul" for
    "value_test_add_mul" (the page's table gives the whole id)."""
    _, sep, tail = grade_id.partition("_test_")
    return tail if sep and tail else grade_id


def grading_times(times: dict[str, list[float]]) -> str | None:
    """Grading time per submission, one box per assignment (seconds, log scale; times
    must be above 0)."""
    names = [a for a, xs in times.items() if xs]
    if not names:
        return None
    fig = _figure(7.5, 0.35 * len(names) + 1.0)
    ax = fig.subplots()
    data = [times[a] for a in names]
    ax.boxplot(
        data,
        orientation="horizontal",
        widths=0.6,
        flierprops={"markersize": 2, "markeredgecolor": MUTED},
        medianprops={"color": INK},
    )
    ax.set_yticks(range(1, len(names) + 1), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(_one_two_five)
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
    ax.set_xlabel("seconds per submission (log scale)", fontsize=8)
    _style(ax)
    fig.tight_layout()
    return _uri(fig)


def _one_two_five(x: float, _pos=None) -> str:
    """A log axis's tick label in plain numbers, at 1, 2 and 5 of each power of ten."""
    if x <= 0:
        return ""
    lead = x / 10 ** math.floor(math.log10(x) + 1e-9)
    return f"{x:g}" if min(abs(lead - d) for d in (1, 2, 5)) < 1e-6 else ""
