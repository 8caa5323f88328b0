"""Early feedback carries nothing of the grading kernel (watch/early.py, feedback/early_text.py,
verdicts/heard.py).

Before the due date the watcher's pages show, per test cell, whether its visible check
and hidden test passed, the hidden test's message as the grader composed it and, at level
``all``, the points: never text the student's code chose, through which a notebook could
read out what the grading kernel holds. Each channel gets a notebook that tries: a
secret planted in the kernel (an environment variable here, a file in the slow test)
must not reach the page, while an honest notebook's page still says which function is
wrong, what was expected and what it gave.

The fast tests run the hidden tests in this process (the probe in a fork, as the suite
does) and build the early page from a graded notebook made here; the slow one grades
through the watcher, in the sandbox.
"""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
import pytest
from helpers import SOURCE, mutate, read, run_cells, verdict_of
from nbformat.v4 import new_code_cell, new_output

from autograder.watch import early
from autograder.watch.history import Entry

A = "01_value"
SECRET = "Zq7kXv9pLmW3sekrit"  # what the grading kernel holds, the student must not get
ENV = "T40_PLANTED"
ADD = (
    "        other = other if isinstance(other, Value) else Value(other)\n"
    '        out = Value(self.data + other.data, (self, other), "+")'
)
LEAKS = {  # the student's __add__, reading the kernel's secret out through its answer
    "an exception's message": 'raise ValueError("key " + os.environ["T40_PLANTED"])',
    "a long message, cut short": 'raise ValueError(os.environ["T40_PLANTED"] * 40)',
    "its message after a line break": 'raise KeyError("a\\n\\n" + os.environ["T40_PLANTED"])',
    "the exception's class name": 'raise type(os.environ["T40_PLANTED"], (Exception,), {})()',
    "a class name and a message": 'raise type("Leak" + os.environ["T40_PLANTED"], '
    '(Exception,), {})(os.environ["T40_PLANTED"])',
    "a text where a number belongs, quoted": "return type('R', (), {'grad': 0.0, 'data': "
    '"key " + os.environ["T40_PLANTED"]})()',
    "one word where a number belongs": "return type('R', (), {'grad': 0.0, 'data': "
    'os.environ["T40_PLANTED"]})()',
}
ONE_WORD = {"the exception's class name", "one word where a number belongs"}
HONEST_BUG = ("self.grad += 1.0 * out.grad", "self.grad = 1.0 * out.grad")


def entry(note: str = "") -> Entry:
    return Entry("k", "inbox", "2026-09-14T10:00:00+00:00", "2026-09-14T10:00:01+00:00", note=note)


def graded(tmp_path: Path, verdicts: dict | None = None, outputs: dict | None = None) -> Path:
    """The 01_value notebook as grading leaves it: ``verdicts`` and ``outputs`` of its
    test cells by grade id (the others passed)."""
    nb = read(SOURCE, A)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if not cell.metadata.get("nbgrader", {}).get("grade") or cell.cell_type != "code":
            continue
        verdict = (verdicts or {}).get(gid, {"passed": True, "message": ""})
        cell.metadata["autograder"] = {"verdict": verdict}
        cell.outputs = (outputs or {}).get(gid, [])
    path = tmp_path / "value.ipynb"
    nbformat.write(nb, path)
    return path


def pages(path: Path, note: str = "") -> dict[str, str]:
    return {
        level: early.early_page(path, level, "ada", A, entry(note))
        for level in ("received", "hidden", "all")
    }


def leaked(page: str) -> bool:
    return SECRET in page or SECRET.lower() in page.lower() or "sekrit" in page


def add_verdict(monkeypatch, new: str):
    monkeypatch.setenv(ENV, SECRET)
    nb = mutate(read(SOURCE, A), ADD, f"        import os\n        {new}")
    ns = run_cells(nb, A, until="value_add_mul")
    return verdict_of(ns, A, "value_test_add_mul")


# ---- hidden tests: their message quotes what the kernel answered -----------------------


@pytest.mark.parametrize("how", list(LEAKS))
def test_a_hidden_tests_message_on_an_early_page_carries_no_text_of_the_kernel(
    how, monkeypatch, tmp_path
):
    result = add_verdict(monkeypatch, LEAKS[how])
    assert not result.passed
    assert SECRET in result.message, result.message  # a channel today
    if how not in ONE_WORD:  # one word is left to the page's vocabulary
        assert SECRET not in (getattr(result, "plain", None) or "")
    path = graded(tmp_path, {"value_test_add_mul": result.as_dict()})
    for level, page in pages(path).items():
        assert not leaked(page), (level, page)
    assert "__add__" in pages(path)["hidden"]  # which function, still
    if how == "an exception's message":
        assert "ValueError (run the notebook to see its message)" in pages(path)["hidden"]


def test_an_honest_bug_keeps_its_useful_early_message(tmp_path):
    nb = mutate(read(SOURCE, A), *HONEST_BUG)
    result = verdict_of(run_cells(nb, A, until="value_add_mul"), A, "value_test_add_mul")
    page = pages(graded(tmp_path, {"value_test_add_mul": result.as_dict()}))["hidden"]
    assert "`__add__`: df/dx0" in page and "should be 6, got 2" in page, page
    assert "use += in _backward" in page


def test_a_verdict_without_the_graders_own_message_shows_a_fixed_sentence(tmp_path):
    """A verdict recorded before, or made where the kernel's texts are not known."""
    from autograder.feedback import early_text

    told = {"passed": False, "message": f"`__add__` raised ValueError: {SECRET}"}
    page = pages(graded(tmp_path, {"value_test_add_mul": told}))["hidden"]
    assert not leaked(page) and early_text.HIDDEN_UNKNOWN in page


# ---- visible checks: everything in the cell's outputs is the kernel's ---------------------


def error(ename: str, evalue: str):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


VISIBLE = {
    "a check's message quoting the student's error": [
        error("CheckFailed", f"x0 + x1 raised ValueError: {SECRET}")
    ],
    "the student's own exception": [error("ValueError", SECRET)],
    "an exception class named after the secret": [error(SECRET, "")],
    "printed output": [
        new_output("stream", name="stdout", text=f"{SECRET}\n"),
        new_output("stream", name="stderr", text=f"{SECRET}\n"),
        error("AssertionError", ""),
    ],
    "pictures, HTML and a repr": [
        new_output("display_data", data={"text/html": f"<b>{SECRET}</b>"}),
        new_output("display_data", data={"image/png": base64.b64encode(SECRET.encode()).decode()}),
        new_output("execute_result", data={"text/plain": repr(SECRET)}, execution_count=1),
        error("AssertionError", SECRET),
    ],
    "a forged hidden-test output": [error("HiddenTestFailed", SECRET)],
}


@pytest.mark.parametrize("how", list(VISIBLE))
def test_a_visible_checks_outputs_never_reach_an_early_page(how, tmp_path):
    path = graded(tmp_path, outputs={"value_test_add_mul": VISIBLE[how]})
    for level, page in pages(path).items():
        assert not leaked(page), (level, page)
        assert "<img" not in page and "data:image" not in page and "<b>" not in page
    if how != "a forged hidden-test output":
        assert "✗" in pages(path)["received"]  # it failed, still
    if how == "the student's own exception":
        assert "ValueError (run the notebook" in pages(path)["received"]


def test_the_note_line_keeps_the_graders_words_only(tmp_path):
    note = (
        "cell 4 (`print(open('secret.txt').read())`) was stopped after the 60 s per-cell "
        f"limit; nbgrader could not grade `value.ipynb`: {SECRET} words; flagged for "
        f"review: value: value_test_add_mul: an answer that said {SECRET}"
    )
    page = pages(graded(tmp_path), note)["hidden"]
    assert not leaked(page), page
    assert "per-cell limit" in page and "flagged for review" in page


# ---- bounded: what an early page can carry at all -----------------------------------------


def test_an_early_page_carries_little_whatever_the_messages():
    """Words outside the grader's vocabulary become "…", runs of them one "…", and each
    test cell's text is cut; so is the page's, with a cell per test cell of the course."""
    from autograder.feedback import early_text
    from autograder.verdicts import heard

    noise = " ".join(f"w{i}q{i * 7}z" for i in range(3000))
    assert early_text.grader_words(noise) == "…"
    long = "\n".join(["should be 6, got 2 " * 20] * 50)
    shown = early_text.grader_words(long)
    assert len(shown) <= early_text.MAX_CHARS and shown.count("\n") < early_text.MAX_LINES
    assert early_text.grader_words("x0 = 123456789012345678901234567890") == "x0 = …"
    assert heard.without_heard("f raised E: a b c d", ["E: a b c d"]) == (
        "f raised an exception (run the notebook to see its message)"
    )


def test_an_early_page_is_bounded_whatever_the_notebook(tmp_path):
    from autograder.feedback import early_text

    huge = {"passed": False, "message": "", "plain": "should be 6, got 2 " * 5000}
    nb = read(SOURCE, A)
    nb.cells += [new_code_cell("pass", metadata={"nbgrader": {"grade": True}}) for _ in range(9)]
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata["autograder"] = {"verdict": huge}
            cell.metadata["nbgrader"]["grade_id"] = f"{SECRET}-{len(cell.source)}"
    path = tmp_path / "value.ipynb"
    nbformat.write(nb, path)
    page = early.early_page(path, "all", "ada", A, entry("x " * 10_000))
    assert not leaked(page)
    cells = sum(1 for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    assert len(page) < 3000 + cells * (early_text.MAX_CHARS + 400), len(page)


# ---- the watcher, in the sandbox ---------------------------------------------------------


LEAKING_CELL = """\
import hashlib, struct, sys, zlib
from IPython.display import HTML, Image, Markdown, display
digest = hashlib.sha256(open("coursekit.py", "rb").read()).hexdigest()[:16]
PLANTED = "Zq" + digest.translate(str.maketrans("0123456789", "ghijklmnop"))
print("planted:", PLANTED)
print(PLANTED, file=sys.stderr)
display(HTML(f"<b>{PLANTED}</b>"), Markdown(f"**{PLANTED}**"))

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

head = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", head) + chunk(b"tEXt", PLANTED.encode())
display(Image(data=png + chunk(b"IDAT", zlib.compress(b"\\x00\\x00")) + chunk(b"IEND", b"")))
PLANTED
"""


def planted(notebook: Path) -> str:
    """What the graded notebook's kernel made of a file the grader put there."""
    for cell in nbformat.read(notebook, as_version=4).cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("text", "").startswith("planted: "):
                return out["text"].split()[1]
    return ""


@pytest.mark.slow
def test_the_watchers_early_pages_carry_nothing_of_the_kernel(tmp_path):
    """A file the grader puts in the kernel (coursekit.py), read out through every output
    and through the student's ``__add__``: printed, to stderr, as HTML, Markdown, a
    picture and the cell's value, in the exception the hidden and visible checks quote."""
    from test_watch import buggy, course_at, drop, page, solution, watcher

    course = course_at(tmp_path / "course")
    nb = mutate(solution(), ADD, '        raise ValueError("key " + PLANTED)')
    nb.cells.insert(2, new_code_cell(LEAKING_CELL))
    drop(course, "ada", nb)
    drop(course, "bob", buggy())
    w = watcher(course, early={A: "all"})
    w.cycle()
    secret = planted(course.path / "autograded" / "ada" / A / "value.ipynb")
    assert len(secret) == 18 and secret not in LEAKING_CELL, str(w.stream)
    text = page(course, "ada")
    assert "hidden tests" in text and "points" in text, text
    assert secret not in text and secret[2:10] not in text, text
    assert "<img" not in text and "data:image" not in text and "<b>" not in text
    assert "ValueError (run the notebook to see its message)" in text
    honest = page(course, "bob")
    assert "__add__" in honest and "got" in honest, honest
    assert "<td>value_test_hand_backprop</td>" in honest and "<td>3</td>" in honest  # points
