"""What similarity ignores cannot take a submission out of the comparison
(autograder/report/similarity.py, "Caps").

Comments, docstrings, layout, names, the given code, outputs, markdown, extra cells, a
stray byte or a broken cell outside the solution cells are not compared; a copy padded with
any of them is still paired with its original, and honest work padded the same way is still
not. Caps apply to the compared code only; the raw caps left to keep reading bounded are far
beyond any notebook, and a submission past one is flagged for review, not quietly left out.
"""

from __future__ import annotations

import json
import uuid

import nbformat
import pytest
import similarity_solutions as ss
from helpers import NOTEBOOKS, grade_id
from test_similarity import COURSE, RELEASE, A, course_of, notebook, similarities

from autograder.report import fingerprints as fp
from autograder.report import similarity as sim
from autograder.worker import submission

OLD_CAP = 64_000  # the cap on raw solution cells these copies used to pass
CELL = "value_reflected"  # the solution cell padded
BIG = 51 * 2**20  # past the old 50 MiB file cap


def _cells(pad_first: str = "", pad_last: str = "", cells=COURSE) -> dict[str, str]:
    return {**cells, CELL: pad_first + cells[CELL] + pad_last}


def _given_code() -> str:
    """The release notebook's code (given code, stubs, checks), as a student could paste it."""
    nb = nbformat.read(next((NOTEBOOKS / A).glob("*.ipynb")), as_version=4)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "code")


def _json(nb) -> dict:
    return json.loads(nbformat.writes(nb))


def _gid(cell: dict) -> str | None:
    return cell["metadata"].get("nbgrader", {}).get("grade_id")


def _comment(cells=COURSE):
    return notebook(_cells(pad_last="\n" + ("# " + "said twice, " * 6 + "\n") * 1000, cells=cells))


def _docstring():
    return notebook(_cells('"""' + "A long docstring. " * 4000 + '"""\n'))


def _blank_lines():
    first, rest = COURSE[CELL].split("\n", 1)
    return notebook({**COURSE, CELL: first + "\n" + " \n" * 40_000 + rest})


def _long_name():
    return notebook(_cells(f"{'n' * OLD_CAP} = None\n"))


def _unicode():
    return notebook(_cells("# " + "\U0001f642\u200d\u0301" * 25_000 + "\n"))


def _given():
    given = _given_code()
    return notebook(_cells(pad_last="\n" + (given + "\n") * (OLD_CAP // len(given) + 1)))


def _many_cells():
    """Hundreds of extra cells with a solution cell's grade id, each a comment."""
    nb = notebook(COURSE)
    at, cell = next((i, c) for i, c in enumerate(nb.cells) if grade_id(c) == CELL)
    for _ in range(1500):
        extra = nbformat.from_dict(json.loads(json.dumps(cell)))
        extra.id, extra.source = uuid.uuid4().hex[:12], "# more of the same, once again\n" * 2
        nb.cells.insert(at + 1, extra)
    return notebook_bytes(nb)


def _output():
    data = _json(notebook(COURSE))
    cell = next(c for c in data["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "o" * BIG}]
    return json.dumps(data).encode()


def _markdown():
    data = _json(notebook(COURSE))
    page = {"cell_type": "markdown", "metadata": {}, "source": "m" * 2**20}
    data["cells"] += [{**page, "id": f"pad{i}"} for i in range(BIG // 2**20)]
    return json.dumps(data).encode()


def _broken_given_cell():
    """A code cell the comparison ignores (not a solution cell) whose source is a number:
    the grader drops the cell and grades the rest."""
    data = _json(notebook(COURSE))
    next(c for c in data["cells"] if c["cell_type"] == "code" and _gid(c) not in RELEASE)[
        "source"
    ] = 42
    return json.dumps(data).encode()


def _stray_byte():
    """A byte that is not UTF-8 in a markdown cell: the grader replaces it."""
    data = _json(notebook(COURSE))
    next(c for c in data["cells"] if c["cell_type"] == "markdown")["source"] = "caf@BYTE@"
    return json.dumps(data).encode().replace(b"@BYTE@", b"\xe9")


def _nbformat_3():
    return nbformat.writes(nbformat.convert(notebook(COURSE), 3)).encode()


def notebook_bytes(nb) -> bytes:
    return json.dumps(_json(nb)).encode()


PADDED = {
    "a long comment": _comment,
    "a long docstring": _docstring,
    "blank lines": _blank_lines,
    "a long name": _long_name,
    "unicode in a comment": _unicode,
    "the given code pasted": _given,
    "many cells": _many_cells,
    "a large output": _output,
    "markdown cells": _markdown,
    "a broken cell outside the solution cells": _broken_given_cell,
    "a byte that is not UTF-8": _stray_byte,
    "nbformat 3": _nbformat_3,
}


@pytest.mark.parametrize("pad", PADDED.values(), ids=PADDED.keys())
def test_a_padded_copy_is_paired_with_its_original(tmp_path, pad):
    course = course_of(
        tmp_path, {"ada": notebook(COURSE), "mallory": pad(), "anne": notebook(ss.HONEST_A)}
    )
    pairs = sim.find_pairs(course)
    assert pairs.skipped == [] and pairs.compared[A] == 3
    found = similarities(pairs)
    assert set(found) == {frozenset({"ada", "mallory"})}, found
    assert found[frozenset({"ada", "mallory"})] >= 0.95, found


def test_padding_that_is_not_compared_changes_nothing(tmp_path):
    """Padding the comparison ignores leaves the compared code exactly as it was."""
    course = course_of(tmp_path, {"ada": notebook(COURSE), "bea": _comment(), "cy": _blank_lines()})
    pairs = sim.find_pairs(course)
    assert sorted(p.similarity for p in pairs) == [1.0, 1.0, 1.0]
    assert {p.tokens_a for p in pairs} | {p.tokens_b for p in pairs} == {pairs[0].tokens_a}


def test_padded_honest_work_is_not_paired(tmp_path):
    honest = json.loads(_output())  # the course's, under a large output: swapped for B's
    for cell in honest["cells"]:
        if _gid(cell) in ss.HONEST_B:
            cell["source"] = ss.HONEST_B[_gid(cell)]
    course = course_of(
        tmp_path,
        {
            "ada": notebook(COURSE),
            "anne": _comment(ss.HONEST_A),
            "bob": json.dumps(honest).encode(),
        },
    )
    pairs = sim.find_pairs(course)
    assert pairs == [] and pairs.skipped == [] and pairs.compared[A] == 3


# ---- past a cap: flagged for review ----------------------------------------------------------


def test_the_file_cap_is_the_graders():
    """A notebook the grader reads is read; the cap on it is double the old one."""
    assert fp.MAX_NOTEBOOK_BYTES == submission.MAX_NOTEBOOK_BYTES >= 2 * 50 * 2**20
    assert fp.MAX_SOURCE_CHARS >= 15 * OLD_CAP and fp.MAX_CODE_CHARS == OLD_CAP


def test_a_huge_notebook_is_handled_and_flagged(tmp_path):
    huge_cell = notebook(_cells(pad_last="\nx = 1  # padding\n" * 70_000))  # 1.2 MB of code
    many = "\n".join(f"v{i} = {i} * {i + 1} - w{i}.u({i})" for i in range(10_000))
    course = course_of(
        tmp_path,
        {
            "ada": notebook(COURSE),
            "huge": huge_cell,
            "many": notebook(_cells(pad_last="\n" + many)),
            "sparse": b"",
            "mallory": _comment(),
        },
    )
    with open(tmp_path / "submitted" / "sparse" / A / "value.ipynb", "wb") as f:
        f.truncate(fp.MAX_NOTEBOOK_BYTES + 1)  # a file past the grader's limit, never read
    pairs = sim.find_pairs(course)
    flagged = {s.student: s.reason for s in pairs.skipped if s.review}
    assert set(flagged) == {"huge", "many", "sparse"} and len(pairs.skipped) == 3
    assert flagged["sparse"] == "100 MiB, more than the 100 MiB read"
    assert flagged["huge"].endswith("characters, more than the 1,000,000 read")
    assert "characters of code to compare" in flagged["many"]
    assert flagged["many"].endswith("more than the 64,000 compared")
    assert set(similarities(pairs)) == {frozenset({"ada", "mallory"})}
    assert pairs.compared[A] == 2
