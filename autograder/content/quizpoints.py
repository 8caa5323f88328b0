"""A quiz question's points, written in one place: ``POINTS`` in ``source/<quiz>/questions.py``.

Everything else that states them is derived from that table:

- the nbgrader ``points`` of each question's test cell in the quiz's source notebook (what
  nbgrader records as the cell's ``max_score``, so what grading scores it out of);
- the "(2 points)" of each question's heading and the "**13 questions, 17 points.**" line
  at the top of the notebook;
- the hidden module (``autograder/verdicts/hidden/<quiz>.py``) states none: it only says
  what is right.

``sync`` writes the derived fields into the source notebook, and ``problems`` lists what
stays inconsistent (a question without points, a test cell or heading that is not there,
a field that differs), each naming the notebook, the cell and the file to edit.
Both are for ``generate``: ``sync`` each selected assignment before it is built, then
refuse on ``problems``; changing a question's points is then one edit in questions.py,
and ``generate``. ``python -m autograder sync-points`` runs ``sync`` (and reports
``problems``) on its own. An assignment without ``questions.py`` is not a quiz: both do
nothing for it.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from ..course import SOURCE

TABLE = "POINTS"  # the name of the table in questions.py
HEADING = re.compile(r"^(#{1,6} Question (\d+)\b.*\()(\d+) points?(\).*)$", re.M)
TOTALS = re.compile(r"\*\*(\d+) questions?, (\d+) points?\.\*\*")
TEST_CELL = re.compile(r"_test_(q\d+)$")


def is_quiz(assignment: str, source: Path = SOURCE) -> bool:
    return (Path(source) / assignment / "questions.py").is_file()


def declared(assignment: str, source: Path = SOURCE) -> tuple[list[str], dict[str, object]]:
    """The quiz's questions, in order, and its ``POINTS`` table as written (unchecked)."""
    path = Path(source) / assignment / "questions.py"
    spec = importlib.util.spec_from_file_location(f"_quizpoints_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(getattr(module, "QUESTIONS", {})), dict(getattr(module, TABLE, None) or {})


def points(assignment: str, source: Path = SOURCE) -> dict[str, int]:
    """{question: points} of every question that has valid points (a whole number > 0)."""
    return _valid_points(*declared(assignment, source))


def phrase(n: int) -> str:
    return f"{n} point" if n == 1 else f"{n} points"


def sync(assignment: str, source: Path = SOURCE) -> bool:
    """Write each question's points (``POINTS`` in questions.py) into the quiz's source
    notebook: its test cell's nbgrader ``points``, its heading, and the notebook's totals
    line. True if the notebook changed. Questions without valid points are left as they
    are, and so is the totals line then (``problems`` names them)."""
    if not is_quiz(assignment, source):
        return False
    path = _notebook(assignment, source)
    raw = path.read_text(encoding="utf-8")
    nb = json.loads(raw)
    questions, table = declared(assignment, source)
    valid = _valid_points(questions, table)
    totals = f"**{len(questions)} questions, {phrase(sum(valid.values()))}.**"
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if _question_of(meta) in valid:
            meta["points"] = valid[_question_of(meta)]
        if cell["cell_type"] == "markdown":
            text = _text(cell)
            new = HEADING.sub(lambda m: _heading(m, valid), text)
            if len(valid) == len(questions):  # a total only when every question has points
                new = TOTALS.sub(totals, new)
            if new != text:
                cell["source"] = new.splitlines(keepends=True)
    written = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if written == raw:
        return False
    path.write_text(written, encoding="utf-8")
    return True


def problems(assignment: str, source: Path = SOURCE) -> list[str]:
    """Where the quiz's points are not as ``POINTS`` in its questions.py says (empty when
    all agree, and for an assignment that is not a quiz). Each line names the notebook or
    questions.py, the cell, and what to edit."""
    if not is_quiz(assignment, source):
        return []
    questions, table = declared(assignment, source)
    where = _shown(Path(source) / assignment / "questions.py")
    if not table:
        example = ", ".join(f"{q!r}: 1" for q in questions[:2])
        return [
            f"{where}: no {TABLE} table: give each question its points there, "
            f"{TABLE} = {{{example}, ...}}"
        ]
    found = [
        f"{where}: {q} has no points: add {q!r} to {TABLE}" for q in questions if q not in table
    ]
    found += [
        f"{where}: {TABLE}[{q!r}] = {n!r}: points are a whole number > 0"
        for q, n in table.items()
        if q in questions and not _valid(n)
    ]
    found += [
        f"{where}: {TABLE} names {q!r}, which is not a question: remove it"
        for q in table
        if q not in questions
    ]
    return found + _Notebook(assignment, Path(source), questions, table).problems()


class _Notebook:
    """What a quiz notebook says about its questions' points, checked against the table."""

    def __init__(self, assignment: str, source: Path, questions: list[str], table: dict):
        path = _notebook(assignment, source)
        self.shown, self.where = _shown(path), _shown(source / assignment / "questions.py")
        self.fix = f"run `python -m autograder sync-points {assignment}` (or generate)"
        self.questions, self.valid = questions, _valid_points(questions, table)
        self.cells: dict[str, list[tuple[str, object]]] = {}  # q: [(grade id, points)]
        self.headings: dict[str, list[int]] = {}
        self.totals: list[tuple[int, int]] = []
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if (q := _question_of(meta)) is not None:
                self.cells.setdefault(q, []).append((meta["grade_id"], meta.get("points")))
            if cell["cell_type"] == "markdown":
                text = _text(cell)
                for m in HEADING.finditer(text):
                    self.headings.setdefault(f"q{m.group(2)}", []).append(int(m.group(3)))
                self.totals += [(int(m[1]), int(m[2])) for m in TOTALS.finditer(text)]

    def problems(self) -> list[str]:
        found = [self._test_cell(q) for q in self.cells if q not in self.questions]
        found += [self._test_cell(q) for q in self.questions]
        found += [self._heading(q) for q in self.questions]
        return [line for line in found if line] + self._totals()

    def _test_cell(self, q: str) -> str | None:
        cells = self.cells.get(q, [])
        if not cells:
            return (
                f"{self.shown}: no test cell for {q} (a graded cell whose grade_id ends "
                f"in _test_{q}): add it, with the question's check"
            )
        if q not in self.questions:
            return (
                f"{self.shown}, cell {cells[0][0]}: a test cell of {q}, which is not a "
                f"question of {self.where}: remove the cell or add the question"
            )
        if len(cells) > 1:
            return (
                f"{self.shown}: {len(cells)} test cells for {q}: {', '.join(c for c, _ in cells)}"
            )
        gid, n = cells[0]
        if q in self.valid and n != self.valid[q]:
            return (
                f"{self.shown}, cell {gid}: nbgrader points {n!r}, but {TABLE} in "
                f"{self.where} gives {q} {phrase(self.valid[q])}: {self.fix}"
            )
        return None

    def _heading(self, q: str) -> str | None:
        cells = self.cells.get(q, [])
        before = f"cell {cells[0][0]}" if len(cells) == 1 else "its test cell"
        said = self.headings.get(q, [])
        if not said:
            return (
                f"{self.shown}: no heading for {q} ('### Question {q[1:]} · ... "
                f"(N points)' before {before}): add it"
            )
        if q in self.valid and any(n != self.valid[q] for n in said):
            return (
                f"{self.shown}, the heading of {q} (before {before}): says "
                f"{phrase(said[0])}, but {TABLE} in {self.where} gives "
                f"{phrase(self.valid[q])}: {self.fix}"
            )
        return None

    def _totals(self) -> list[str]:
        if len(self.valid) != len(self.questions):
            return []  # no total to compare with until every question has points
        right = (len(self.questions), sum(self.valid.values()))
        return [
            f"{self.shown}, the totals line: says '{k} questions, {phrase(n)}', but "
            f"{self.where} has {right[0]} questions, {phrase(right[1])}: {self.fix}"
            for k, n in self.totals
            if (k, n) != right
        ]


# ---- helpers -----------------------------------------------------------------------------


def _valid_points(questions: list[str], table: dict) -> dict[str, int]:
    return {q: table[q] for q in questions if _valid(table.get(q))}


def _valid(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n > 0


def _notebook(assignment: str, source: Path) -> Path:
    (path,) = sorted((Path(source) / assignment).glob("*.ipynb"))
    return path


def _question_of(meta: dict) -> str | None:
    """The question a graded cell tests (``engine_quiz_test_q2``: q2), or None."""
    if not meta.get("grade"):
        return None
    m = TEST_CELL.search(meta.get("grade_id", ""))
    return m.group(1) if m else None


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def _heading(m: re.Match, valid: dict[str, int]) -> str:
    n = valid.get(f"q{m.group(2)}")
    if n is None:
        return m.group(0)
    return f"{m.group(1)}{phrase(n)}{m.group(4)}"


def _shown(path: Path) -> str:
    """source/<assignment>/<file>, as the author finds it in the course."""
    return str(Path(path).relative_to(Path(path).parents[2]))
