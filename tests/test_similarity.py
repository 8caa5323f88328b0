"""Similarity between submissions (autograder/report/similarity.py), on notebooks made from
the course's own: lesson 1's solution (solutions/01_value), its release (notebooks/), two
honest solutions written in other styles and a disguised copy (similarity_solutions.py).

A disguised copy is reported; honest solutions are not, nor are blank notebooks; hostile
notebooks are listed as skipped, never a crash, and nothing in them is active on a page;
the page says that similarity is evidence, not a verdict. The fast screen of all pairs
gives exactly what copydetect's compare_files gives."""

from __future__ import annotations

import itertools
import json
import re

import matplotlib
import nbformat
import numpy as np
import pytest
import similarity_solutions as ss
from helpers import NOTEBOOKS, SOLUTIONS, grade_id, read, run_cells

from autograder.course import assignments, kind, open_course
from autograder.errors import GraderError
from autograder.report import fingerprints as fp
from autograder.report import similarity as sim

matplotlib.use("Agg")  # lesson 1 draws graphs; no window while testing

A = "01_value"
NAME = "value.ipynb"


def solution_cells(nb) -> dict[str, str]:
    return {
        grade_id(c): c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")
    }


COURSE = solution_cells(read(SOLUTIONS, A))
RELEASE = solution_cells(read(NOTEBOOKS, A))


def notebook(cells: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """Lesson 1's solution notebook with ``cells`` ({grade id: source}) in place of the
    course's (the release, stubs and all, when ``cells`` is None)."""
    if cells is None:
        return read(NOTEBOOKS, A)
    nb = read(SOLUTIONS, A)
    for cell in nb.cells:
        if grade_id(cell) in cells:
            cell.source = cells[grade_id(cell)]
    return nb


def reordered(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with its last solution cell moved up before the one above it."""
    at = [i for i, c in enumerate(nb.cells) if grade_id(c) in RELEASE]
    nb.cells.insert(at[-2], nb.cells.pop(at[-1]))
    return nb


def course_of(tmp_path, submissions: dict[str, nbformat.NotebookNode | bytes], assignment=A):
    """A course in ``tmp_path`` whose submitted/ holds ``submissions`` (notebooks, or a
    file's bytes) of ``assignment``."""
    for student, nb in submissions.items():
        folder = tmp_path / "submitted" / student / assignment
        folder.mkdir(parents=True)
        name = next((NOTEBOOKS / assignment).glob("*.ipynb")).name
        if isinstance(nb, bytes):
            (folder / name).write_bytes(nb)
        else:
            nbformat.write(nb, folder / name)
    return open_course(tmp_path)


def similarities(pairs) -> dict[frozenset, float]:
    return {frozenset(p.students): p.similarity for p in pairs}


def all_shares(tmp_path, submissions) -> dict[frozenset, float]:
    """Every pair's similarity, reported or not (threshold 0, no minimum)."""
    course = course_of(tmp_path, submissions)
    return similarities(sim.find_pairs(course, [A], threshold=0.0, min_tokens=0))


# ---- the solutions the tests use are what they claim -----------------------------------------


def test_given_code_is_the_releases():
    assert RELEASE["value_add_mul"].startswith(ss.GIVEN_HEAD)
    assert set(ss.HONEST_A) == set(ss.HONEST_B) == set(RELEASE)


@pytest.mark.parametrize(
    "cells",
    [ss.HONEST_A, ss.HONEST_B, ss.disguise(COURSE)],
    ids=["honest A", "honest B", "disguised copy"],
)
def test_solutions_pass_the_lessons_checks(cells):
    """Each one is a working solution: every visible check of lesson 1 passes."""
    run_cells(reordered(notebook(cells)) if cells is not ss.HONEST_A else notebook(cells), A)


# ---- what is reported ------------------------------------------------------------------------


def test_a_disguised_copy_is_reported(tmp_path):
    """Names renamed, methods and cells in another order, docstrings and comments rewritten,
    the layout changed: the same code to the fingerprints."""
    course = course_of(
        tmp_path,
        {
            "ada": notebook(COURSE),
            "mallory": reordered(notebook(ss.disguise(COURSE))),
            "anne": notebook(ss.HONEST_A),
            "trudy": reordered(notebook(ss.disguise(ss.HONEST_A))),
        },
    )
    pairs = sim.find_pairs(course)
    found = similarities(pairs)
    assert set(found) == {frozenset({"ada", "mallory"}), frozenset({"anne", "trudy"})}, found
    assert min(found.values()) >= 0.75, found
    (pair,) = [p for p in pairs if p.student_b == "mallory"]
    assert pair.tokens_a > 600 and pair.tokens_b > 600
    assert pair.similarity == max(pair.share_a, pair.share_b)
    assert [g.students for g in pairs.groups] == [["ada", "mallory"], ["anne", "trudy"]]


def test_honest_solutions_are_not_reported(tmp_path):
    """Two solutions written independently, and the course's: no pair, and each pair well
    under the threshold (the numbers THRESHOLD's comment quotes)."""
    submissions = {
        "ada": notebook(COURSE),
        "anne": notebook(ss.HONEST_A),
        "bob": notebook(ss.HONEST_B),
    }
    assert sim.find_pairs(course_of(tmp_path / "default", submissions)) == []
    shares = all_shares(tmp_path / "all", submissions)
    assert max(shares.values()) < sim.THRESHOLD - 0.1, shares


def test_a_partial_copy_is_reported_by_the_copier_s_share(tmp_path):
    """Half done, and that half copied (disguised): the copier's share reports the pair,
    though the one copied from has half of their code in common."""
    done = ("value_add_mul", "value_hand_backprop")
    half = {**RELEASE, **{g: s for g, s in ss.disguise(COURSE).items() if g in done}}
    pairs = sim.find_pairs(course_of(tmp_path, {"ada": notebook(COURSE), "linus": notebook(half)}))
    (pair,) = pairs
    assert pair.share_b >= sim.THRESHOLD + 0.1 and pair.share_a < 0.5, pair
    assert pair.similarity == pair.share_b


def test_blank_notebooks_are_not_reported(tmp_path):
    """The given code and the stubs are the course's: two untouched releases share nothing,
    and a blank one shares nothing with a finished one."""
    course = course_of(tmp_path, {"kath": notebook(), "kim": notebook(), "ada": notebook(COURSE)})
    pairs = sim.find_pairs(course, threshold=0.0, min_tokens=0)
    assert pairs == [] and pairs.skipped == [] and pairs.compared[A] == 3


def test_quizzes_are_skipped_and_unknown_assignments_refused(tmp_path):
    course = course_of(tmp_path, {"ada": notebook(COURSE)})
    pairs = sim.find_pairs(course)
    assert "04_checkpoint_engine" not in pairs.compared and A in pairs.compared
    named = sim.find_pairs(course, ["04_checkpoint_engine"])
    assert [s.reason for s in named.skipped] == ["a quiz: its answers are values, not code"]
    with pytest.raises(GraderError, match="no assignment 'nope'"):
        sim.find_pairs(course, ["nope"])


# ---- the screen is copydetect's arithmetic ---------------------------------------------------


def test_the_screen_gives_what_compare_files_gives(tmp_path):
    """For every ordered pair: the tokens of A found in B, as compare_files sums them."""
    import copydetect

    cells = [COURSE, ss.HONEST_A, ss.HONEST_B, ss.disguise(COURSE), RELEASE]
    cells.append({**COURSE, "value_add_mul": ss.HONEST_B["value_add_mul"]})
    release = fp.read_release(NOTEBOOKS / A, A)
    codes = []
    for i, c in enumerate(cells):
        folder = tmp_path / str(i)
        folder.mkdir()
        nbformat.write(notebook(c), folder / NAME)
        code = fp.student_code(release, str(i), folder)
        fp.fingerprint(code, release)
        codes.append(code)
    matched = sim._screen([c.fingerprint for c in codes])
    for i, j in itertools.permutations(range(len(codes)), 2):
        overlap, (share, _), _ = copydetect.compare_files(
            codes[i].fingerprint, codes[j].fingerprint
        )
        assert matched[i, j] == overlap, (i, j)
        assert np.isclose(matched[i, j] / max(codes[i].tokens, 1), share), (i, j)


def test_groups_are_connected_pairs():
    def pair(a, b, s=0.9):
        return sim.Pair(A, a, b, s, s, s, 100, 100)

    pairs = [pair("a", "b"), pair("b", "c", 0.7), pair("d", "e"), pair("a", "c", 1.0)]
    pairs.append(sim.Pair("02_backward", "a", "b", 0.8, 0.8, 0.8, 100, 100))
    groups = sim.group_pairs(pairs)
    assert [(g.assignment, g.students, len(g.pairs)) for g in groups] == [
        (A, ["a", "b", "c"], 3),
        (A, ["d", "e"], 1),
        ("02_backward", ["a", "b"], 1),
    ]
    assert (groups[0].similarity, groups[0].lowest) == (1.0, 0.7)


# ---- hostile notebooks, and the pages ------------------------------------------------------


SCRIPT = "</script><script>alert('copied')</script>"
NAUGHTY = "<b onmouseover=alert(1)>mallory"  # a folder name collect would never make


def hostile(tmp_path):
    scripted = dict(COURSE)
    scripted["value_hand_backprop"] = f'NOTE = "{SCRIPT}"\n' + COURSE["value_hand_backprop"]
    huge = dict(COURSE)
    huge["value_reflected"] += "\n" + "x = 1  # padding\n" * 600_000  # a 10 MB cell
    not_text = notebook(ss.HONEST_B)  # read as the grader reads it: that cell is empty
    next(c for c in not_text.cells if grade_id(c) in RELEASE).source = 42
    return course_of(
        tmp_path,
        {
            "eve": notebook(scripted),
            NAUGHTY: reordered(notebook(ss.disguise(scripted))),
            "junk": bytes(range(256)) * 64,
            "truncated": nbformat.writes(notebook(COURSE)).encode()[:5000],
            "deep": b"[" * 200_000 + b"]" * 200_000,
            "list": b"[1, 2, 3]",
            "huge": notebook(huge),
            "number": json.dumps(not_text).encode(),
        },
    )


def test_hostile_notebooks_are_skipped_with_a_reason(tmp_path):
    pairs = sim.find_pairs(hostile(tmp_path))
    reasons = {s.student: s.reason for s in pairs.skipped}
    assert reasons == {
        "junk": "not a notebook: not JSON",
        "truncated": "not a notebook: not JSON",
        "deep": "not a notebook: not JSON",
        "list": "not a notebook: no list of cells",
        "huge": reasons["huge"],
    }
    assert [s.student for s in pairs.skipped if s.review] == ["huge"]  # flagged for review
    assert re.fullmatch(
        r"its solution cells hold [\d,]+ characters, more than the 1,000,000 read",
        reasons["huge"],
    )
    assert similarities(pairs).keys() == {frozenset({"eve", NAUGHTY})}
    assert pairs.compared[A] == 3  # eve, NAUGHTY and number


def test_a_pair_page_is_inert_and_says_what_similarity_is(tmp_path):
    pairs = sim.find_pairs(hostile(tmp_path / "course"))
    out = tmp_path / "reports"
    (out / "pairs" / A).mkdir(parents=True)
    (out / "pairs" / A / "stale--pair.html").write_text("from an earlier run")
    sim.write_pair_pages(pairs, out)
    (pair,) = pairs
    assert pair.page.startswith(f"pairs/{A}/") and "<" not in pair.page
    assert sorted(p.name for p in (out / "pairs" / A).iterdir()) == [pair.page.rsplit("/", 1)[1]]
    page = (out / pair.page).read_text()
    text = page.replace("<mark>", "").replace("</mark>", "")
    assert sim.EVIDENCE.replace("'", "&#39;") in page
    assert "never a verdict" in page
    assert "<script" not in page.lower() and "<b " not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(&#39;copied&#39;)&lt;/script&gt;" in text
    assert "&lt;b onmouseover=alert(1)&gt;mallory" in text
    # side by side: both students' code, the matched code marked on both sides
    assert page.count("<mark>") >= 4
    assert "def backprop_by_hand(g):" in page and "def backprop_by_hand(" in page
    marked = re.findall(r"<mark>(.*?)</mark>", page, re.S)
    assert any("self.grad += other.data * out.grad" in m for m in marked)


def test_matched_spans_are_whole_tokens(tmp_path):
    """The highlighted code starts and ends at token boundaries (copydetect's own mapping
    back to the code is a few characters off)."""
    pairs = sim.find_pairs(
        course_of(tmp_path, {"ada": notebook(COURSE), "bea": notebook(ss.disguise(COURSE))})
    )
    (pair,) = pairs
    spans_a, spans_b = fp.matched_spans(*pair.sources)
    for code, spans in ((pair.code_a, spans_a), (pair.code_b, spans_b)):
        assert spans
        for s, e in spans:
            assert s == 0 or not (code[s - 1].isalnum() and code[s].isalnum()), code[s - 5 : e]
            assert e == len(code) or not (code[e - 1].isalnum() and code[e].isalnum())


# ---- the pieces the numbers rest on ----------------------------------------------------------


def test_the_filter_writes_what_copydetect_writes():
    """``filter_code`` (which also says where each token is) writes exactly the filtered
    code of copydetect's own filter, on every assignment's solution cells and odd text."""
    from copydetect.utils import filter_code

    texts = [
        "\n\n".join(solution_cells(read(SOLUTIONS, a)).values())
        for a in assignments()
        if kind(a) != "quiz"
    ]
    texts += [
        f'x = "{SCRIPT}"  # {SCRIPT}',
        "class A(B):\n  '''doc'''\n  def f(s): pass",
        "\0\x07 é",
    ]
    texts += ["#!/bin/sh\n%timeit f(x)\n!ls\n", "def f(:\n  return )]", 'f"{a!r:>{w}}" b"\\xff"']
    for text in texts:
        mine = fp.filter_code(text)
        assert mine.text == filter_code(text, "x.py", "python")[0]
        assert len(mine.starts) == len(mine.ends) == len(mine.text)
        assert all(0 <= s < e <= len(text) + 1 for s, e in zip(mine.starts, mine.ends))


def test_hashes_are_the_same_in_every_process():
    """Python's hash() is salted per process; the k-gram hashes, and so the numbers, are
    not."""
    import subprocess
    import sys

    code = (
        "from autograder.report.fingerprints import kgram_hashes as h\n"
        "print(h('V=V(V)' * 9, 30).tolist())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(NOTEBOOKS.parent)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1 and runs.pop().strip() == str(fp.kgram_hashes("V=V(V)" * 9, 30).tolist())


def test_identical_submissions_make_one_group(tmp_path):
    """As in the demo class: students who all hand in the course's solution, one of them
    with a slip, are one group; each of its pairs has its page."""
    slip = dict(COURSE)
    slip["value_add_mul"] = COURSE["value_add_mul"].replace("self.grad += 1.0", "self.grad = 1.0")
    course = course_of(
        tmp_path / "course",
        {
            "ada": notebook(COURSE),
            "barbara": notebook(COURSE),
            "edsger": reordered(notebook(COURSE)),
            "grace": notebook(slip),
            "bob": notebook(ss.HONEST_B),
        },
    )
    pairs = sim.find_pairs(course)
    (group,) = pairs.groups
    assert group.students == ["ada", "barbara", "edsger", "grace"] and len(group.pairs) == 6
    assert [p.similarity for p in group.pairs][:3] == [1.0, 1.0, 1.0] and group.lowest > 0.9
    sim.write_pair_pages(pairs, tmp_path / "reports")
    assert all((tmp_path / "reports" / p.page).is_file() for p in pairs)
    page = (tmp_path / "reports" / pairs[0].page).read_text()
    assert "in a group of 4" in " ".join(page.split())


def test_a_large_group_gets_a_page_per_member():
    """Twelve alike submissions: 66 pairs, and a page for each member's most alike pair."""
    students = [f"s{i:02d}" for i in range(12)]
    pairs = [
        sim.Pair(A, a, b, 0.9 - 0.001 * i, 0.9, 0.9, 100, 100)
        for i, (a, b) in enumerate(itertools.combinations(students, 2))
    ]
    best = {
        s: max((p for p in pairs if s in p.students), key=lambda p: p.similarity) for s in students
    }
    chosen = sim.paged(pairs)
    assert len(pairs) == 66 and len(chosen) <= 12
    assert {id(p) for p in chosen} == {id(p) for p in best.values()}
