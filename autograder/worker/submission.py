"""Turn whatever a student handed in into notebooks nbgrader can grade, and say what was done.

``make_gradable`` looks at one submission folder (``submitted/<student>/<assignment>/``) and, for
each notebook the assignment expects, returns a grading copy or the reason there is none:

- a missing notebook, or one that is not valid JSON, gets no copy (zero, with the reason);
- a notebook under another name (``value (1).ipynb``) is graded as the expected one when it
  holds this assignment's cells; one that holds another assignment's cells is not graded;
- cells whose nbgrader metadata was changed get the course's metadata back; deleted cells
  (tests, the setup cell, exercise stubs) are put back where they belong; a notebook that
  lost all its metadata (edited outside Jupyter) is graded with the tests after its cells;
- other files are left out of the grading copy (listed in the notes): nothing a student
  puts next to the notebook (a ``refgrad.py``, a ``coursekit.py``) reaches the kernel.

nbgrader then does the rest (restoring edited test cells, de-duplicating ids, running).
The submission folder itself is never modified.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..messages import File, Note, read_files

MAX_NOTEBOOK_BYTES = 100 * 1024**2
IGNORED_NAMES = {"timestamp.txt", ".ipynb_checkpoints", "__pycache__", ".DS_Store"}


@dataclass
class CellSpec:
    """One cell nbgrader recorded for the assignment (from the gradebook)."""

    name: str
    cell_type: str
    source: str
    locked: bool
    checksum: str | None
    grade: bool = False
    solution: bool = False
    task: bool = False
    points: float = 0.0
    released_checksum: str | None = None  # of the cell as students got it (no hidden tests)

    def metadata(self) -> dict:
        md = {
            "grade": self.grade,
            "grade_id": self.name,
            "locked": self.locked,
            "schema_version": 3,
            "solution": self.solution,
            "task": self.task,
        }
        if self.grade or self.task:
            md["points"] = self.points
        return md


@dataclass
class Expected:
    """A notebook of the assignment, as the gradebook knows it."""

    name: str  # without .ipynb
    cells: list[CellSpec]

    @property
    def ids(self) -> set[str]:
        return {c.name for c in self.cells}


@dataclass
class Prepared:
    name: str  # expected notebook name, without .ipynb
    notebook: nbformat.NotebookNode | None = None  # None: nothing to run, scores zero
    used_file: str | None = None
    notes: list[Note] = field(default_factory=list)


def expected_from_gradebook(db_url: str, assignment: str, course_id: str) -> list[Expected]:
    from nbgrader.api import Gradebook

    result = []
    with Gradebook(db_url, course_id) as gb:
        for nb in gb.find_assignment(assignment).notebooks:
            grades = {c.name: c.max_score for c in nb.grade_cells}
            solutions = {c.name for c in nb.solution_cells}
            tasks = {c.name: c.max_score for c in nb.task_cells}
            cells = [
                CellSpec(
                    name=c.name,
                    cell_type=c.cell_type,
                    source=c.source,
                    locked=bool(c.locked),
                    checksum=c.checksum,
                    grade=c.name in grades,
                    solution=c.name in solutions,
                    task=c.name in tasks,
                    points=float(grades.get(c.name, tasks.get(c.name, 0))),
                )
                for c in nb.source_cells
            ]
            for spec in cells:
                spec.released_checksum = _released_checksum(spec)
            result.append(Expected(nb.name, cells))
    return result


def _released_checksum(spec: CellSpec) -> str | None:
    """nbgrader's checksum of the cell as released (hidden tests removed)."""
    from nbgrader.preprocessors import ClearHiddenTests
    from nbgrader.utils import compute_checksum

    cell = _new_cell(spec)
    try:
        ClearHiddenTests(enforce_metadata=False)._remove_hidden_test_region(cell)
        return compute_checksum(cell)
    except Exception:
        return None


def order_from_notebook(expected: list[Expected], source_folder: Path) -> None:
    """Put each Expected's cells in the order of the instructor notebook."""
    for exp in expected:
        path = source_folder / f"{exp.name}.ipynb"
        if not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        order = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
        rank = {name: i for i, name in enumerate(order) if name}
        exp.cells.sort(key=lambda c: rank.get(c.name, len(rank)))


# ---- reading ---------------------------------------------------------------------------


def read_notebook(path: Path) -> tuple[nbformat.NotebookNode | None, Note | None]:
    """The notebook in ``path`` (repaired if its structure is broken but its cells can be
    read), or None and the reason."""
    label = f"`{_md(path.name)}`"
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        return None, Note(f"{label} is {size / 1024**2:.0f} MB, too large to grade: 0 points", True)
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        return None, Note(
            f"{label} is not a valid notebook file: broken JSON{where}: 0 points", True
        )
    if not isinstance(data, dict) or not isinstance(
        data.get("cells", data.get("worksheets")), list
    ):
        return None, Note(f"{label} is JSON but not a Jupyter notebook: 0 points", True)
    if re.search(r"\\u[dD][89a-fA-F]", text):  # "\ud800": text no file can hold (as `?`)
        plain = json.dumps(data, ensure_ascii=False)
        fixed = plain.encode("utf-8", "replace").decode("utf-8")
        if fixed != plain:
            text, data = fixed, json.loads(fixed)
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
        return nb, None
    except Exception:
        pass
    nb = _rebuild(data)
    if nb is None:
        return None, Note(f"{label} has no readable cells: 0 points", True)
    return nb, Note(f"{label} had a damaged structure; its cells were recovered")


def _rebuild(data: dict) -> nbformat.NotebookNode | None:
    cells = data.get("cells")
    if cells is None:  # nbformat 3
        cells = [
            c
            for ws in data.get("worksheets", [])
            if isinstance(ws, dict)
            for c in ws.get("cells", [])
        ]
    out = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            continue
        kind = cell.get("cell_type")
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        if kind == "code":
            new = nbformat.v4.new_code_cell(source)
        elif kind == "raw":
            new = nbformat.v4.new_raw_cell(source)
        else:
            new = nbformat.v4.new_markdown_cell(source)
        if isinstance(metadata.get("nbgrader"), dict):
            new.metadata["nbgrader"] = metadata["nbgrader"]
        out.append(new)
    if not out:
        return None
    nb = nbformat.v4.new_notebook(cells=out)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    try:
        nbformat.validate(nb)
    except Exception:
        for cell in nb.cells:  # metadata we cannot vouch for
            cell.metadata.pop("nbgrader", None)
    return nbformat.from_dict(nb)


# ---- preparing -------------------------------------------------------------------------


def grade_ids(nb: nbformat.NotebookNode) -> list[str]:
    ids = []
    for cell in nb.cells:
        md = cell.get("metadata", {}).get("nbgrader")
        if isinstance(md, dict) and isinstance(md.get("grade_id"), str):
            ids.append(md["grade_id"])
    return ids


def make_gradable(
    folder: Path,
    expected: list[Expected],
    owners: dict[str, str] | None = None,
    released: set[str] | None = None,
) -> tuple[list[Prepared], list[Note]]:
    """Grading copies of the notebooks in ``folder``, and notes about the folder as a whole.

    ``owners`` maps grade ids of every assignment to the assignment (to name the one a
    stray notebook belongs to); ``released`` are the file names the students were given.
    """
    owners = owners or {}
    released = set(released or ())
    files = _files(folder)
    notebooks = {p.name: p for p in files if p.suffix == ".ipynb"}
    wanted = {f"{e.name}.ipynb" for e in expected}
    spare = {name: p for name, p in notebooks.items() if name not in wanted}
    results: list[Prepared] = []
    used: set[str] = set()
    for exp in expected:
        filename = f"{exp.name}.ipynb"
        prep = Prepared(exp.name)
        results.append(prep)
        path = notebooks.get(filename)
        if path is None:
            path = _stand_in(exp, spare, len(expected))
            if path is None:
                prep.notes.append(Note(f"no `{filename}` was submitted: 0 points", True))
                continue
            spare.pop(path.name)
            prep.notes.append(Note(f"graded `{_md(path.name)}` as `{filename}`"))
        used.add(path.name)
        prep.used_file = path.name
        nb, note = read_notebook(path)
        if note:
            prep.notes.append(note)
        if nb is None:
            continue
        ids = set(grade_ids(nb))
        if ids and not ids & exp.ids:
            others = sorted({owners[i] for i in ids if i in owners})
            what = f"assignment {others[0]}" if len(others) == 1 else "another assignment"
            prep.notes.append(
                Note(
                    f"`{_md(path.name)}` is the notebook of {what}, not of this one: 0 points", True
                )
            )
            continue
        prep.notes += restore_cells(nb, exp)
        prep.notebook = nb
    extra = sorted(
        str(p.relative_to(folder))
        for p in files
        if p.name not in used and p.name not in released and p.name not in IGNORED_NAMES
    )
    notes = []
    if extra:
        shown = ", ".join(f"`{_md(n)}`" for n in extra[:3])
        more = f" and {len(extra) - 3} more" if len(extra) > 3 else ""
        notes.append(Note(f"not graded (not part of the assignment): {shown}{more}"))
    return results, notes


def submitted_files(folder: Path) -> dict[str, File]:
    """The submitted folder as ``make_gradable`` sees it, to send to a worker: the bytes of what
    it may read (notebooks side by side, up to the size it grades, and timestamp.txt), and
    of other files only the name, size and time (listed in the notes, never read)."""
    return read_files(
        folder,
        _files(folder),
        lambda p: (
            p.parent == folder
            and (
                p.name == "timestamp.txt"
                or (p.suffix == ".ipynb" and p.stat().st_size <= MAX_NOTEBOOK_BYTES)
            )
        ),
    )


def _files(folder: Path) -> list[Path]:
    """Files of the folder (not in checkpoint or cache folders, no links): notebooks at
    its top only."""
    return [
        p
        for p in sorted(folder.rglob("*"))
        if p.is_file()
        and not p.is_symlink()
        and not set(p.relative_to(folder).parts[:-1]) & IGNORED_NAMES
        and (p.parent == folder or p.suffix != ".ipynb")
    ]


def _stand_in(exp: Expected, spare: dict[str, Path], n_expected: int) -> Path | None:
    """A notebook under another name that holds this notebook's cells (or, when the
    assignment has one notebook, the only notebook there is)."""
    scored = []
    for name, path in spare.items():
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
            nb = nbformat.from_dict(data)
            overlap = len(set(grade_ids(nb)) & exp.ids)
        except Exception:
            overlap = 0
        scored.append((overlap, path.stat().st_mtime, name, path))
    good = [s for s in scored if s[0] > 0]
    if good:
        return max(good)[3]
    if n_expected == 1 and len(scored) == 1:
        return scored[0][3]
    return None


def restore_cells(nb: nbformat.NotebookNode, exp: Expected) -> list[Note]:
    """Give known cells their course metadata back and put deleted ones back in place."""
    from nbgrader.utils import compute_checksum

    specs = {c.name: c for c in exp.cells}
    notes: list[Note] = []
    counts = Counter()
    changed, edited = [], []
    last = _last_positions(nb)
    for i, cell in enumerate(nb.cells):
        md = cell.get("metadata", {}).get("nbgrader")
        if md is None:
            continue
        spec = specs.get(md.get("grade_id"))
        if spec is None:
            continue  # nbgrader drops ids it does not know
        counts[spec.name] += 1
        if last[spec.name] != i:
            # A copy: only the last one stays a graded cell (as nbgrader's DeduplicateIds
            # decides, but without leaving the empty metadata its OverwriteCells trips on).
            del cell.metadata["nbgrader"]
            continue
        canonical = spec.metadata()
        if any(md.get(k) != v for k, v in canonical.items() if k != "schema_version"):
            changed.append(spec.name)
        cell.metadata["nbgrader"] = {**canonical, "checksum": md.get("checksum")}
        if cell.cell_type != spec.cell_type:
            changed.append(spec.name)
        elif (
            spec.locked
            and spec.released_checksum
            and (compute_checksum(cell) != spec.released_checksum)
        ):
            edited.append(spec.name)
    if changed:
        notes.append(Note(f"cell settings reset to the course's: {_names(changed)}"))
    if edited:
        notes.append(Note(f"edited read-only cells restored: {_names(edited)}"))
    copies = [name for name, n in counts.items() if n > 1]
    if copies:
        notes.append(Note(f"duplicated cells: {_names(copies)} (the last copy is graded)"))

    return notes + _put_back(nb, exp, set(counts))


def _last_positions(nb: nbformat.NotebookNode) -> dict[str, int]:
    """Where the last cell of each grade id is; unusable nbgrader metadata is removed."""
    last = {}
    for i, cell in enumerate(nb.cells):
        md = cell.get("metadata", {}).get("nbgrader")
        if md is None:
            continue
        if not isinstance(md, dict) or not isinstance(md.get("grade_id"), str):
            del cell.metadata["nbgrader"]  # nbgrader's OverwriteCells fails on these
            continue
        last[md["grade_id"]] = i
    return last


def _put_back(nb: nbformat.NotebookNode, exp: Expected, present: set[str]) -> list[Note]:
    """Put the course's cells that are not ``present`` back where they belong."""
    notes: list[Note] = []
    missing = [spec for spec in exp.cells if spec.name not in present]
    if not missing:
        return notes
    if not present:
        # No nbgrader metadata at all: keep the student's cells, run the setup first and
        # every test after all of them.
        top = [_new_cell(s) for s in missing if s.locked and not s.grade and not s.solution]
        tests = [_new_cell(s) for s in missing if s.grade or s.task]
        nb.cells = top + nb.cells + tests
        notes.append(
            Note(
                "the notebook had lost its nbgrader cell metadata (edited outside "
                "Jupyter?): the tests were run after all of its cells"
            )
        )
        return notes
    for spec in missing:
        index = _insert_position(nb, exp, spec)
        nb.cells.insert(index, _new_cell(spec))
    tests = [s.name for s in missing if s.grade]
    others = [s.name for s in missing if not s.grade]
    if tests:
        notes.append(Note(f"deleted test cells restored: {_names(tests)}"))
    if others:
        notes.append(Note(f"deleted cells restored: {_names(others)}"))
    return notes


def _insert_position(nb, exp: Expected, spec: CellSpec) -> int:
    """Just after the nearest earlier course cell the notebook still has (else at the top,
    before the first later one)."""
    order = [c.name for c in exp.cells]
    position = {}
    for i, cell in enumerate(nb.cells):
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in order:
            position[gid] = i  # the last copy wins, as in nbgrader's DeduplicateIds
    k = order.index(spec.name)
    for name in reversed(order[:k]):
        if name in position:
            return position[name] + 1
    later = [position[name] for name in order[k + 1 :] if name in position]
    return min(later) if later else len(nb.cells)


def _new_cell(spec: CellSpec) -> nbformat.NotebookNode:
    if spec.cell_type == "code":
        cell = nbformat.v4.new_code_cell(spec.source)
    else:
        cell = nbformat.v4.new_markdown_cell(spec.source)
    cell.metadata["nbgrader"] = {**spec.metadata(), "checksum": spec.checksum}
    if spec.locked:
        cell.metadata["editable"] = False
        cell.metadata["deletable"] = False
    return cell


def _names(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    return ", ".join(f"`{n}`" for n in unique)


def _md(text: str) -> str:
    """A file name made safe inside Markdown backticks."""
    return text.replace("`", "'").replace("\n", " ")[:80]
