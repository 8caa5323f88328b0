"""The pages a student gets from the watcher: before the due date, per the assignment's
level (settings.py), a short page of the exercises' checks; after it, the usual feedback
page. Each page ends with the student's submission history.

An early page carries nothing of the grading kernel (feedback/early_text.py): per test
cell, whether its visible check and its hidden test passed, the hidden test's message
as the grader composed it without any text the kernel sent, and the points at level
``all``; never an output, an exception's message or a ``repr``. Everything on it is
escaped text. Points appear only where the level shows them.
"""

from __future__ import annotations

import html
from pathlib import Path

import nbformat

from ..feedback import early_text
from ..verdicts.heard import GRADER_ERROR
from .history import Entry

STYLE = (
    "body{font-family:sans-serif;max-width:52em;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;"
    "text-align:left;vertical-align:top}.ok{color:#176b2c}.bad{color:#a31515}"
    "pre{white-space:pre-wrap;margin:0}"
)
HIDDEN_ENAME = "HiddenTestFailed"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def checks(notebook: Path) -> list[dict]:
    """Each test cell of a graded notebook: its id, its visible check's line ("" when it
    passed) and its hidden test's verdict as recorded (None: not run). Only what the
    grader composed (feedback/early_text.py): no text from the kernel."""
    nb = nbformat.read(notebook, as_version=4)
    out = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        errors = [
            o
            for o in cell.get("outputs", [])
            if o.get("output_type") == "error" and o.get("ename") != HIDDEN_ENAME
        ]
        verdict = cell.metadata.get("autograder", {}).get("verdict")
        out.append(
            {
                "id": early_text.grader_words(str(meta.get("grade_id", "?")), 80, 1),
                "visible": early_text.visible_check(errors),
                "verdict": verdict if isinstance(verdict, dict) else None,
            }
        )
    return out


def early_page(
    notebook: Path | None, level: str, student: str, assignment: str, entry: Entry
) -> str:
    """The early page of one notebook at ``level`` ("received", "hidden" or "all": the
    hidden tests' lines, and with "all" the points of each exercise)."""
    rows = []
    for check in checks(notebook) if notebook is not None else []:
        visible = (
            '<span class="ok">✓ passed</span>'
            if not check["visible"]
            else f'<span class="bad">✗</span> <pre>{_e(check["visible"])}</pre>'
        )
        row = f"<td>{_e(check['id'])}</td><td>{visible}</td>"
        if level in ("hidden", "all"):
            verdict = check["verdict"]
            if verdict is None:
                hidden = '<span class="bad">✗ not run</span>'
            elif verdict.get("passed") is True:
                hidden = '<span class="ok">✓ passed</span>'
            elif verdict.get("grader_error") is True:
                hidden = f'<span class="bad">✗</span> <pre>{_e(GRADER_ERROR)}</pre>'
            else:
                line = early_text.hidden_test(verdict)
                hidden = f'<span class="bad">✗</span> <pre>{_e(line)}</pre>'
            row += f"<td>{hidden}</td>"
        if level == "all":
            points = entry.cells.get(f"{notebook.stem}/{check['id']}") if notebook else None
            row += f"<td>{'' if points is None else _e(f'{float(points):g}')}</td>"
        rows.append(f"<tr>{row}</tr>")
    head = "<th>exercise</th><th>visible checks</th>"
    head += "<th>hidden tests</th>" if level in ("hidden", "all") else ""
    head += "<th>points</th>" if level == "all" else ""
    table = f"<table><tr>{head}</tr>{''.join(rows)}</table>" if rows else ""
    missing = "" if notebook is not None else "<p>This notebook was not in your submission.</p>"
    said = early_text.note(entry.note) if entry.note else ""
    note = f"<p>{_e(said)}</p>" if said else ""
    what = {
        "received": "the visible checks of your notebook as the grader ran it",
        "hidden": "the visible checks and what the hidden tests found "
        "(points come after the due date)",
        "all": "the visible checks, what the hidden tests found and the points",
    }.get(level, "the visible checks of your notebook as the grader ran it")
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_e(assignment)}: '
        f"received</title><style>{STYLE}</style></head><body>"
        f"<h1>{_e(assignment)}: received</h1>"
        f"<p>Your submission of {_e(entry.submitted)} UTC was received and run. "
        f"Below: {what}. Before the due date this page shows no message or output of "
        f"your code: run the notebook to see them.</p>{note}{missing}{table}</body></html>"
    )


def history_section(entries: list[Entry], points: bool) -> str:
    """The student's submissions, newest first: when, what became of it, and (where
    points show) the score per exercise."""
    ids = sorted({gid for e in entries for gid in e.cells}) if points else []
    head = "<th>submitted (UTC)</th><th>status</th>"
    if points:
        head += "<th>score</th>" + "".join(f"<th>{_e(g.rsplit('/', 1)[-1])}</th>" for g in ids)
    rows = []
    for e in reversed(entries):
        status = e.status + (" (counts)" if e.counts and points else "")
        cells = f"<td>{_e(e.submitted)}</td><td>{_e(status)}</td>"
        if points:
            score = "" if e.score is None else f"{e.score:g} / {e.max_score:g}"
            cells += f"<td>{_e(score)}</td>" + "".join(
                f"<td>{_e(f'{e.cells[g]:g}') if g in e.cells else ''}</td>" for g in ids
            )
        rows.append(f"<tr>{cells}</tr>")
    return (
        '<section id="submission-history"><h2>Your submissions</h2>'
        f"<table><tr>{head}</tr>{''.join(rows)}</table></section>"
    )


def with_history(page: str, section: str) -> str:
    """``page`` with ``section`` at the end of its body."""
    at = page.rfind("</body>")
    return page + section if at < 0 else page[:at] + section + page[at:]
