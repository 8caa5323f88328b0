"""What ``generate`` refuses: course content that would break at grading.

Each problem is one line naming the notebook, the cell and what to edit, found by
reading the instructor notebooks (no kernel runs here; verdicts/selftest.py runs each
hidden test against the course's own solution and its stub):

- a graded cell with no hidden test (its hidden region is empty or only a pointer, and
  ``verdicts/hidden/<assignment>.py`` has no test for it), or two (code in the region
  and a test in the module), or a test in the module for a cell that is not there;
- a hidden region that uses a name that is neither the exercise's nor a module
  (region_names.py: the kit's ``check``, a helper of the visible checks, a name no cell
  binds), which a blank notebook could rebind;
- a hidden region that does not parse, or that uses a form the grader cannot decide
  outside the kernel: ``is`` (a stand-in is never the student's object), ``isinstance``,
  ``type``, ``id``, ``callable``, ``hasattr`` on the student's objects (``gradekit``'s
  ``kind`` and ``has`` ask the kernel instead);
- points that disagree: a test cell without points, or an exercise heading
  ("### Exercise 2: `relu`  (2 points)") whose points are not its test cells', or a
  notebook's stated total ("17 points") that is not the sum.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path

from .. import markers, region_names
from ..course import SOURCE

HEADING = re.compile(
    r"^#{2,4}\s+(Exercise|Question)\b.*\((\d+(?:\.\d+)?)\s+points?\b[^)\n]*\)", re.M
)
TOTAL = re.compile(r"\b(\d+)\s+points\b")
UNDECIDABLE_CALLS = {
    "isinstance": "kind(x) == 'float'",
    "issubclass": "kind(x)",
    "type": "kind(x)",
    "id": "==",
    "callable": "has(x, '__call__')",
    "hasattr": "has(x, 'name')",
}

KnownTests = Callable[[str], set[str]]  # assignment -> grade ids its hidden module tests


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _nbgrader(cell: dict) -> dict:
    md = cell.get("metadata", {}).get("nbgrader", {})
    return md if isinstance(md, dict) else {}


def _is_test(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and bool(_nbgrader(cell).get("grade"))


def problems(assignment: str, known_tests: KnownTests, source: Path = SOURCE) -> list[str]:
    """Every problem of the assignment's instructor notebooks, one line each."""
    found: list[str] = []
    tested = set(known_tests(assignment))
    cells_seen: set[str] = set()
    module = f"autograder/verdicts/hidden/{assignment}.py"
    for path in sorted((source / assignment).glob("*.ipynb")):
        rel = path.relative_to(source.parent) if path.is_relative_to(source.parent) else path
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            found.append(f"{rel}: cannot be read ({exc})")
            continue
        for index, cell in enumerate(nb.get("cells", [])):
            if not _is_test(cell):
                continue
            gid = str(_nbgrader(cell).get("grade_id", ""))
            cells_seen.add(gid)
            where = f"{rel}, cell {index + 1} ({gid})"
            hidden = markers.inside(_source(cell), markers.HIDDEN)
            if not markers.has(_source(cell), markers.HIDDEN) or markers.is_pointer(hidden):
                if gid not in tested:
                    found.append(
                        f"{where}: a graded cell with no hidden test: write one in its "
                        f"hidden-tests region (docs/authoring.md), or in {module}"
                    )
                continue
            if gid in tested:
                found.append(
                    f"{where}: two hidden tests, its region's and TESTS[{gid!r}] in {module}:"
                    " keep one"
                )
            names = region_names.read(nb.get("cells", []))
            found += [f"{where}: {p}" for p in region_problems(hidden, names)]
        found += _points_problems(nb, rel)
    for gid in sorted(tested - cells_seen):
        found.append(f"{module}: TESTS[{gid!r}] tests no cell of source/{assignment}/")
    return found


def region_problems(code: str, names: region_names.NotebookNames | None = None) -> list[str]:
    """Forms of a hidden region the grader cannot decide outside the kernel, and names
    it uses that are neither the exercise's nor a module (``names``: the notebook's)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"its hidden test does not parse (line {exc.lineno} of the region: {exc.msg})"]
    found = [
        f"line {line} of its hidden test uses `{name}`, {why}: not the exercise's, so a "
        "submission could rebind it (docs/authoring.md, the region's names)"
        for name, line, why in region_names.refusals(tree, names or region_names.NotebookNames())
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Is | ast.IsNot) for op in node.ops
        ):
            found.append(
                f"line {node.lineno} of its hidden test uses `is`, which cannot be decided "
                "outside the kernel (a stand-in is never the student's object): use =="
            )
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in UNDECIDABLE_CALLS
        ):
            found.append(
                f"line {node.lineno} of its hidden test calls {node.func.id}(), which sees "
                f"the grader's stand-in, not the student's object: use gradekit's "
                f"{UNDECIDABLE_CALLS[node.func.id]}"
            )
    return found


def _points_problems(nb: dict, rel) -> list[str]:
    """Exercise headings and stated totals against the test cells' points."""
    found: list[str] = []
    heading: tuple[int, float, str] | None = None
    collected = 0.0
    total = 0.0
    stated: tuple[int, int] | None = None
    cells = nb.get("cells", [])

    def close_heading() -> None:
        if heading is not None and abs(heading[1] - collected) > 1e-9:
            at, says, _ = heading
            found.append(
                f"{rel}, cell {at + 1}: its heading says {says:g} points, its test cells "
                f"have {collected:g} (nbgrader's points metadata): make them agree"
            )

    for index, cell in enumerate(cells):
        text = _source(cell)
        if cell.get("cell_type") == "markdown":
            match = HEADING.search(text)
            if match:
                close_heading()
                heading, collected = (index, float(match.group(2)), match.group(0)), 0.0
            elif heading is None and stated is None:
                number = TOTAL.search(text)
                if number:
                    stated = (index, int(number.group(1)))
        elif _is_test(cell):
            points = _nbgrader(cell).get("points")
            if not isinstance(points, int | float) or isinstance(points, bool) or points <= 0:
                gid = _nbgrader(cell).get("grade_id", "")
                found.append(f"{rel}, cell {index + 1} ({gid}): a graded cell without points")
                continue
            collected += points
            total += points
    close_heading()
    if stated is not None and abs(stated[1] - total) > 1e-9:
        found.append(
            f"{rel}, cell {stated[0] + 1}: says {stated[1]} points in all, its test cells "
            f"have {total:g}: make them agree"
        )
    return found


# One sitting: the longest lessons had about 2,300 words of prose and 6 exercises when
# lesson 5 (3,500 words, 7 exercises) was split in two (issue 24).
LESSON_WORDS, LESSON_EXERCISES = 2500, 6


def length_notes(assignment: str, source: Path = SOURCE) -> list[str]:
    """Advice, not a refusal: a lesson with more prose or exercises than one sitting holds
    (quizzes and problem sets are homework, not lessons)."""
    if "_checkpoint_" in assignment or "_set_" in assignment:
        return []
    notes = []
    for path in sorted((source / assignment).glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        words = sum(len(_source(c).split()) for c in cells if c.get("cell_type") == "markdown")
        exercises = sum(1 for c in cells if _is_test(c))
        if words > LESSON_WORDS or exercises > LESSON_EXERCISES:
            notes.append(
                f"source/{assignment}/{path.name}: {words} words of prose and {exercises} "
                f"graded exercises; lessons here keep to {LESSON_WORDS} and "
                f"{LESSON_EXERCISES} so that one fits a sitting: consider splitting it"
            )
    return notes
