"""``python -m autograder report``: the class at a glance, one offline page.

``report()`` reads the class once (``data.gather``), works out each section, draws three
plots (``plots``), asks ``similarity`` for suspiciously alike pairs (and their pages), and
renders ``templates/index.html`` with jinja2, autoescaping everything: student ids, notes
and the verdicts' messages came from students' files. The page holds its CSS and its
images (``data:`` URIs); it needs no network and no JavaScript.
"""

from __future__ import annotations

import os
import statistics
import sys
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from ..errors import ExitCode
from . import plots
from .data import ClassData, gather, late_rows
from .slips import count_slips

TEMPLATES = Path(__file__).resolve().parent / "templates"
NEAR_ZERO = 0.1  # a quiz item's discrimination below this is highlighted
SHOWN_SLIPS = 20  # slips listed at once; the rest (one student each) under "more"


@dataclass
class ReportResult:
    path: Path
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.PROBLEMS if self.problems else ExitCode.OK


def report(
    assignments=None,
    *,
    root=None,
    db_url=None,
    out=None,
    now: datetime | None = None,
    schedule=None,
) -> ReportResult:
    """Write ``<out>/index.html`` (default ``<course>/reports/``) and return its path with
    the problems met on the way (each one line: an unreadable notebook or record, the
    similarity search failing); the page is written whatever they are. ``schedule``: the
    due dates, extensions and late policy (default: the course's ``c.Schedule``)."""
    import time

    from ..course import open_course

    started = time.perf_counter()
    course = open_course(root, db_url)
    data = gather(course, assignments, now=now, schedule=schedule)
    out_dir = Path(out) if out else course.root / "reports"
    out_dir.mkdir(parents=True, exist_ok=True)
    problems = data.problems
    pairs = similar_pairs(course, data.assignments, out_dir, problems)
    context = sections(data)
    context.update(
        course_id=course.course_id,
        made=(now or datetime.now()).strftime("%Y-%m-%d %H:%M"),
        pairs=pairs,
        problems=problems,
    )
    path = out_dir / "index.html"
    _write(path, render(context))
    return ReportResult(path, problems, time.perf_counter() - started)


def render(context: dict) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda x: "" if x is None else f"{100 * x:.0f}%"
    env.filters["num"] = lambda x: "" if x is None else f"{x:g}"
    env.filters["duration"] = duration
    return env.get_template("index.html").render(**context)


def _write(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def duration(seconds: float | None) -> str:
    """3 d 04 h, 5 h 07 min, 12 min, 40 s, as the grader's notes say lateness."""
    if seconds is None:
        return ""
    s = round(seconds)
    if s >= 86400:
        return f"{s // 86400} d {s % 86400 // 3600:02d} h"
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min"
    if seconds < 10:
        return f"{seconds:.1f} s"
    return f"{s} s"


# ---- the sections ----------------------------------------------------------------------


def sections(data: ClassData) -> dict:
    """Every section's rows and plots, from the class's data."""
    summary = summary_rows(data)
    slips = count_slips(data.verdicts, data.assignments)
    rates = pass_rate_rows(data)
    times = grading_time_rows(data)
    return {
        "who": lambda s: who(data, s),
        "assignments": data.assignments,
        "totals": totals(data, summary),
        "summary": summary,
        "score_plot": plots.score_histograms(
            {
                a: [100 * s.score / s.max_score for s in data.graded(a) if s.max_score > 0]
                for a in data.assignments
            }
        ),
        "rates": rates,
        "rate_plot": plots.pass_rates(
            {a: [(c["cell"], c["full"], c["mean"]) for c in rows] for a, rows in rates.items()}
        ),
        "slips": slips,
        "shown_slips": max(SHOWN_SLIPS, sum(s.count >= 2 for s in slips)),
        "items": item_rows(data),
        "near_zero": NEAR_ZERO,
        "missing": data.missing(),
        "late": late_rows(data),
        "pending": sorted(data.pending),
        "times": times,
        "time_plot": plots.grading_times({a: _ran(data, a) for a in data.assignments}),
    }


def who(data: ClassData, student: str) -> str:
    name = data.names.get(student, student)
    return student if name == student else f"{name} ({student})"


def summary_rows(data: ClassData) -> list[dict]:
    rows = []
    missing = {a: 0 for a in data.assignments}
    for _, gone in data.missing():
        for a in gone:
            missing[a] += 1
    for a in data.assignments:
        subs = data.graded(a)
        shares = [s.score / s.max_score for s in subs if s.max_score > 0]
        pending = sum(1 for _, b in data.pending if b == a)
        due = data.due.get(a)
        rows.append(
            {
                "assignment": a,
                "due": due.strftime("%Y-%m-%d %H:%M") if due else "",
                "points": data.max_scores.get(a) or (subs[0].max_score if subs else 0.0),
                "submitted": len(subs) + pending,
                "graded": len(subs),
                "pending": pending,
                "missing": missing[a] if data.is_due(a) else None,
                "late": sum(1 for s in subs if s.late_seconds > 0),
                "mean": statistics.fmean(shares) if shares else None,
                "median": statistics.median(shares) if shares else None,
                "problems": sum(1 for s in subs if s.problem),
                "review": sum(1 for s in subs if s.review),
            }
        )
    return rows


def totals(data: ClassData, summary: list[dict]) -> dict:
    return {
        "students": len(data.students),
        "assignments": len(data.assignments),
        "submitted": sum(r["submitted"] for r in summary),
        "graded": sum(r["graded"] for r in summary),
        "pending": sum(r["pending"] for r in summary),
        "missing": sum(r["missing"] or 0 for r in summary),
        "late": sum(r["late"] for r in summary),
        "problems": sum(r["problems"] for r in summary),
        "review": sum(r["review"] for r in summary),
    }


def pass_rate_rows(data: ClassData) -> dict[str, list[dict]]:
    """{assignment: one row per test cell, in notebook order: submissions graded, share
    with full marks, mean share of the points}. Cells worth no points are left out."""
    by: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for _, a, nb, cell, score, most in data.cells:
        by.setdefault((a, nb, cell), []).append((float(score), float(most)))
    out: dict[str, list[dict]] = {}
    for a in data.assignments:
        rows = []
        for nb, cell in data.cell_order.get(a, []):
            grades = [(s, m) for s, m in by.get((a, nb, cell), []) if m > 0]
            if not grades:
                continue
            rows.append(
                {
                    "notebook": nb,
                    "cell": cell,
                    "points": max(m for _, m in grades),
                    "n": len(grades),
                    "full": sum(s >= m - 1e-9 for s, m in grades) / len(grades),
                    "mean": statistics.fmean(min(1.0, s / m) for s, m in grades),
                }
            )
        out[a] = rows
    return out


def item_rows(data: ClassData) -> list[dict]:
    """The quizzes' item statistics, as ``export`` writes them to items.csv (the same
    function), with the items to read again marked."""
    from ..grade.export import ITEMS_HEADER
    from ..grade.export import item_rows as rows_of

    out = []
    for row in rows_of(data.cells):
        item = dict(zip(ITEMS_HEADER, row))
        d = float(item["discrimination"]) if item["discrimination"] else None
        item["flag"] = (
            "negative"
            if d is not None and d < 0
            else "near 0"
            if d is not None and d < NEAR_ZERO
            else ""
        )
        out.append(item)
    return out


def grading_time_rows(data: ClassData) -> list[dict]:
    rows = []
    for a in data.assignments:
        xs = sorted(_ran(data, a))
        if not xs:
            continue
        rows.append(
            {
                "assignment": a,
                "n": len(xs),
                "median": statistics.median(xs),
                "p95": percentile(xs, 0.95),
                "total": sum(xs),
            }
        )
    return rows


def _ran(data: ClassData, assignment: str) -> list[float]:
    """The grading times of an assignment's submissions that ran (a notebook that could
    not be read at all takes 0 s and is left out)."""
    return [s.seconds for s in data.graded(assignment) if s.seconds]


def percentile(xs: list[float], q: float) -> float:
    """The q-quantile of sorted ``xs``, interpolated between the nearest ranks (as numpy's
    default)."""
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# ---- similarity (report/similarity.py) ---------------------------------------------------


MAX_GROUP_ROWS = 10  # pairs listed under a group on the page (all have pages up to 10)


def similar_pairs(course, assignments: list[str], out_dir: Path, problems: list[str]):
    """The groups of alike submissions ``similarity.find_pairs`` reports (connected pairs:
    six students handing in one code are one group), each pair with its side-by-side page
    under ``out_dir/pairs/`` (``write_pair_pages``); quizzes are not compared. Returns
    {"groups": [...], "skipped": [...], "review": [...], "compared": n} (``review``: past a
    size cap, flagged for a person to look at), or None when the search failed
    (listed as a problem: the rest of the page is made)."""
    from ..course import kind
    from . import similarity

    try:
        pairs = similarity.find_pairs(course, [a for a in assignments if kind(a) != "quiz"])
        similarity.write_pair_pages(pairs, out_dir)
    except Exception as exc:
        problems.append(f"similarity: {type(exc).__name__}: {exc}".splitlines()[0][:300])
        return None
    groups = []
    for g in sorted(pairs.groups, key=lambda g: (-g.similarity, g.assignment)):
        rows = [
            {
                "a": p.student_a,
                "b": p.student_b,
                "similarity": float(p.similarity),
                "href": _href(p.page or None),
            }
            for p in g.pairs[:MAX_GROUP_ROWS]
        ]
        groups.append(
            {
                "assignment": g.assignment,
                "students": list(g.students),
                "highest": float(g.similarity),
                "lowest": float(g.lowest),
                "pairs": rows,
                "more": max(0, len(g.pairs) - len(rows)),
            }
        )
    skipped = [s for s in pairs.skipped if s.student and not s.review]
    review = [s for s in pairs.skipped if s.student and s.review]
    return {
        "groups": groups,
        "skipped": skipped,
        "review": review,
        "compared": sum(pairs.compared.values()),
    }


def _href(page) -> str | None:
    """A pair page's link: a relative path inside the report's folder, URL-quoted."""
    if page is None:
        return None
    path = PurePosixPath(Path(page).as_posix())
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return urllib.parse.quote(str(path))


def print_report(result: ReportResult, stream=None) -> None:
    stream = stream or sys.stdout
    for line in result.problems:
        print(f"problem: {line}", file=stream)
    print(f"wrote {result.path}", file=stream)
