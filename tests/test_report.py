"""``python -m autograder report``: the class at a glance, on a small made-up class
(tests/synthetic_class.py: nbgrader's gradebook, autograded notebooks with verdicts and
the grader's records, written without grading) whose every verdict is fixed here, so the
page's counts can be checked exactly. The browser test opens the page from disk in
Chromium with every network request refused and sees its plots.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import types
import urllib.parse
from datetime import datetime
from pathlib import Path

import pytest
from synthetic_class import graded_cells, make_class

from autograder.errors import GraderError
from autograder.report import page as report_page
from autograder.report.page import duration, percentile, report
from autograder.report.slips import Slip, count_slips, parse_slips

ADD_UP = "a node used more than once must add up its gradient: use += in _backward, not ="
POWER = "the power rule: d(x**n)/dx = n * x**(n - 1)"
HOSTILE = "<b onmouseover=alert(1)>eve & co"  # a student id (a folder name: no slash)
SCRIPT = "<script>alert('verdict')</script>"
NOW = datetime(2027, 1, 1)  # every assignment of the class is due by then
CHROMIUM = Path("/usr/bin/chromium")
LESSON, QUIZ = "01_value", "04_checkpoint_engine"
STUDENTS = ["ada", "bob", "cy", "dee", HOSTILE]


def mul_slip(prefix: str = "") -> str:
    return (
        f"{prefix}`__mul__`: df/dx0 should be 2, got 1\nwith f = x0 * x0 at x0=1\n({ADD_UP})"
        "\nalso failing: `__add__`"
    )


def verdicts() -> dict:
    """Every verdict of the class: all pass, but these."""
    out = {
        (s, a, gid): (True, "")
        for s in STUDENTS
        for a in (LESSON, QUIZ)
        for _, gid, _ in graded_cells(a)
    }
    out[("ada", LESSON, "value_test_add_mul")] = (False, mul_slip())
    out[("ada", LESSON, "value_test_reflected")] = (False, mul_slip())  # ada counts once
    out[("bob", LESSON, "value_test_add_mul")] = (False, mul_slip())
    out[("cy", LESSON, "value_test_add_mul")] = (False, mul_slip("Fixed: "))
    out[("bob", LESSON, "value_test_arithmetic")] = (
        False,
        f"`__pow__`: df/dx0 should be 12, got 6\nwith f = x0**3 at x0=2\n({POWER})\n"
        "credited: `__neg__`, `__sub__`, `__truediv__` (3 of 4 shares of the points)",
    )
    out[(HOSTILE, LESSON, "value_test_reflected")] = (
        False,
        f"`{SCRIPT}`: got 1\n({SCRIPT} use <b>+=</b>)",
    )
    out[("cy", LESSON, "value_test_hand_backprop")] = (
        False,
        "backprop_by_hand raised NotImplementedError at x1=2, w1=-3, x2=0, w2=1, b=6.5",
    )
    # the quiz: q1 is right only for the two weakest (a question that misleads the strong)
    right = {
        "ada": set(range(2, 14)),
        "bob": set(range(4, 14)),
        HOSTILE: {2, 3, 4, 5, 6},
        "cy": {1, 2},
        "dee": {1},
    }
    for s, good in right.items():
        for q in range(1, 14):
            if q not in good:
                out[(s, QUIZ, f"engine_quiz_test_q{q}")] = (
                    False,
                    f"q{q}: 'd' is not the right answer.",
                )
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("report") / "class"
    made = make_class(
        root,
        STUDENTS,
        [LESSON, QUIZ],
        missing={("dee", LESSON)},
        late={("bob", LESSON): 3 * 3600 + 5 * 60, ("cy", QUIZ): 2 * 86400 + 60},
        verdicts=verdicts(),
    )
    eve = root / "submitted" / "eve" / LESSON  # collected, not graded yet
    eve.mkdir(parents=True)
    (eve / "value.ipynb").write_text("{}")
    return made


@pytest.fixture(scope="module")
def built(made):
    result = report(root=made.root, now=NOW)
    return result, result.path.read_text()


def section(page: str, ident: str) -> str:
    """The page's text from the heading with id ``ident`` to the next section's."""
    start = page.index(f'id="{ident}"')
    end = page.find("<h2", start)
    return page[start : end if end > 0 else None]


def text(fragment: str) -> str:
    """What a browser shows of ``fragment``: tags out, entities decoded, spaces joined."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


# ---- the slips: one small function, many real messages -----------------------------------


def test_parse_slips_reads_the_hidden_tests_messages():
    assert parse_slips(mul_slip()) == [Slip("__mul__", ADD_UP)]
    assert parse_slips(mul_slip("Fixed: ")) == [Slip("__mul__", ADD_UP)]  # problem set 1
    assert parse_slips(
        "`Tensor.__add__`: a.grad[0, 0] should be -1.722, got -1.613\nafter the closure of "
        "a + b\n(= where += belongs: the grad that was already there is lost)"
    ) == [Slip("Tensor.__add__", "= where += belongs: the grad that was already there is lost")]
    assert parse_slips(
        "grad_check(f, xs) raised ZeroDivisionError: float division by zero\nf = x0 * x1\n"
        "at x0=1, x1=0\n(divide by max(|engine|, |numerical|, 1e-12), which is never 0)"
    ) == [Slip("grad_check", "divide by max(|engine|, |numerical|, 1e-12), which is never 0")]
    assert parse_slips(
        "backward(): df/dx0 should be 1, got 0\nwith f = x0 + 1 at x0=2\n"
        "(no input got any gradient: does backward() set self.grad = 1.0 first?)"
    ) == [Slip("backward", "no input got any gradient: does backward() set self.grad = 1.0 first?")]
    # two hint lines: two slips (lesson 5 names each); the function may not be named
    assert parse_slips("output 0 of MLP(2, [1]) at x=[1]: expected 1, got 2\n(one)\n(two)") == [
        Slip("", "one"),
        Slip("", "two"),
    ]


def test_parse_slips_takes_no_hint_where_there_is_none():
    for message in [
        "",
        "`__add__`: x0 + x1 raised NotImplementedError",
        "mse_loss raised NotImplementedError (not written yet)",  # not a line of its own
        "q1: 'd' is not the right answer.",
        "`__pow__`: should be 3\ncredited: `__neg__` (1 of 4 shares of the points)",
        "x changed the grad it was given: out.grad is needed again\n(for the other operand): "
        "compute new arrays",  # a line that opens with "(" but is not one parenthesis
        None,
        42,
        ["`__mul__`", f"({ADD_UP})"],
        "`__mul__`: wrong\n()",
    ]:
        assert parse_slips(message) == [], message


def test_parse_slips_survives_huge_and_odd_messages():
    assert parse_slips("`f`: x\n(" + "y" * 10**6 + ")") == []  # a hint longer than any real one
    assert parse_slips("\n" * 100 + f"({ADD_UP})") == [Slip("", ADD_UP)]
    assert parse_slips("\n" * 10**5 + f"({ADD_UP})") == []  # past the length read
    assert parse_slips(f"`{'a' * 500}`: x\n({ADD_UP})") == [Slip("", ADD_UP)]


def test_count_slips_counts_students_once_most_common_first():
    v = types.SimpleNamespace
    verdicts = [
        v(student="a", assignment="01", passed=False, message=mul_slip()),
        v(student="a", assignment="01", passed=False, message=mul_slip()),  # twice: once
        v(student="b", assignment="01", passed=False, message=mul_slip()),
        v(student="b", assignment="02", passed=False, message=mul_slip()),  # another assignment
        v(student="c", assignment="01", passed=True, message=mul_slip()),  # passed: no slip
        v(student="c", assignment="01", passed=False, message="`f`: no hint"),
    ]
    counted = count_slips(verdicts, ["01", "02"])
    assert [(s.count, s.assignment, s.function, s.hint) for s in counted] == [
        (2, "01", "__mul__", ADD_UP),
        (1, "02", "__mul__", ADD_UP),
    ]
    assert counted[0].students == ("a", "b")


# ---- the page -----------------------------------------------------------------------------


@pytest.mark.xdist_group("report")
def test_report_has_every_section(built):
    result, page = built
    assert result.problems == [] and result.exit_code == 0
    assert result.path.name == "index.html" and result.path.parent.name == "reports"
    for ident, heading in [
        ("summary", "Class summary"),
        ("scores", "Score distribution"),
        ("exercises", "Pass rate per exercise"),
        ("slips", "Slips the hidden tests diagnosed"),
        ("items", "Quiz item statistics"),
        ("missing-late", "Missing and late submissions"),
        ("grading-time", "Grading time"),
        ("similarity", "Similar submissions"),
    ]:
        assert f'<h2 id="{ident}">{heading}</h2>' in page
    assert page.count('<img class="plot"') == 3
    assert page.count('src="data:image/png;base64,') == 3
    assert "http://" not in page and "https://" not in page  # nothing to fetch
    assert "<script" not in page.lower()


@pytest.mark.xdist_group("report")
def test_summary_counts_the_class(built):
    _, page = built
    summary = text(section(page, "summary"))
    assert "6 students, 2 assignments: 10 submissions, 9 graded (1 collected, not graded yet)" in (
        summary
    )
    assert "2 missing, 2 late" in summary
    row = text(re.search(r"<tr><td>01_value</td>.*?</tr>", page, re.S).group(0))
    # points 14, submitted 4 + 1 pending, graded 4, missing 1 (dee), late 1 (bob)
    assert row.split()[:8] == ["01_value", "2026-09-14", "23:59", "14", "5", "4", "1", "1"]


@pytest.mark.xdist_group("report")
def test_slips_are_counted_across_the_class(built):
    _, page = built
    slips = section(page, "slips")
    rows = [text(r) for r in re.findall(r"<tr><td class=\"n\">.*?</tr>", slips, re.S)]
    assert rows[0].startswith(f"3 ada, bob, cy 01_value __mul__ {ADD_UP}"), rows
    assert any(r.startswith(f"1 bob 01_value __pow__ {POWER}") for r in rows), rows
    assert not any("NotImplementedError" in r for r in rows)
    assert len(rows) == 3  # and the hostile one, escaped (below)


@pytest.mark.xdist_group("report")
def test_student_ids_and_messages_are_escaped(built):
    _, page = built
    assert HOSTILE not in page and SCRIPT not in page
    slips = text(section(page, "slips"))  # shown, as text
    assert f"1 {HOSTILE} 01_value {SCRIPT} {SCRIPT} use <b>+=</b>" in slips
    assert "<b>" not in page and "<b " not in page


@pytest.mark.xdist_group("report")
def test_missing_and_late_rows(built):
    _, page = built
    part = section(page, "missing-late")
    missing = [text(r) for r in re.findall(r"<tr><td>.*?</tr>", part.split("<h3>Late")[0], re.S)]
    assert missing == ["dee 1 01_value", f"eve 1 {QUIZ}"]
    assert "Collected but not graded yet" in part and "eve 01_value" in text(part)
    late = [text(r) for r in re.findall(r"<tr><td>.*?</tr>", part.split("<h3>Late")[1], re.S)]
    assert late == [
        "bob 01_value 2026-09-15 03:04 3 h 05 min 3 h 05 min late; no points are taken for "
        "lateness",
        f"cy {QUIZ} 2026-09-24 00:00 2 d 00 h 2 days 0 h 01 min late; no points are taken "
        "for lateness",
    ]


@pytest.mark.xdist_group("report")
def test_late_rows_take_the_course_late_policy_and_extensions(made, tmp_path):
    from autograder.schedule import Schedule

    schedule = Schedule(late_policy={"per_day": 0.1}, extensions={QUIZ: {"cy": 3}})
    page = report(root=made.root, now=NOW, out=tmp_path, schedule=schedule).path.read_text()
    part = section(page, "missing-late").split("<h3>Late")[1]
    late = [text(r) for r in re.findall(r"<tr><td>.*?</tr>", part, re.S)]
    # bob: 3 h late, one day started: 10% of the lesson's points; cy: within 3 more days
    assert len(late) == 1 and late[0].startswith("bob 01_value 2026-09-15 03:04 3 h 05 min −")
    assert "1 day started × 10% of" in late[0]


@pytest.mark.xdist_group("report")
def test_pass_rates_follow_the_notebook_and_the_gradebook(made):
    from autograder.course import open_course
    from autograder.report.data import gather

    data = gather(open_course(made.root), now=NOW)
    rates = report_page.pass_rate_rows(data)
    cells = [(c["cell"], c["n"], c["full"]) for c in rates[LESSON]]
    assert [c for c, _, _ in cells] == [gid for _, gid, _ in graded_cells(LESSON)]
    # 4 graded: add_mul failed by ada, bob, cy; reflected by ada and the hostile id
    assert cells[0] == ("value_test_add_mul", 4, 0.25)
    assert cells[3] == ("value_test_reflected", 4, 0.5)
    times = report_page.grading_time_rows(data)
    assert [t["assignment"] for t in times] == [LESSON, QUIZ] and times[0]["n"] == 4


@pytest.mark.xdist_group("report")
def test_quiz_items_flag_a_question_that_misleads_the_strong(built):
    _, page = built
    items = section(page, "items")
    rows = re.findall(r"<tr( class=\"flag\")?><td>04_checkpoint_engine</td>(.*?)</tr>", items, re.S)
    flagged = {text(r).split()[0]: text(r).split()[-1] for f, r in rows if f}
    # q1: right only for the two weakest; q2: for a strong, a middle and a weak student
    assert flagged == {"q1": "negative", "q2": "negative"}
    assert len(rows) == 13


@pytest.mark.xdist_group("report")
def test_unreadable_files_are_listed_never_fatal(made, tmp_path, capsys):
    from autograder.__main__ import main

    root = tmp_path / "class"
    shutil.copytree(made.root, root, symlinks=True)
    (root / "autograded" / "cy" / QUIZ / "checkpoint_engine.ipynb").write_text('{"cells": [')
    (root / "autograded" / "ada" / QUIZ / ".autograder.json").write_text("not json")
    nb = root / "autograded" / "bob" / LESSON / "value.ipynb"
    nb.write_text(json.dumps({"cells": [{"metadata": {"nbgrader": {"grade_id": 3}}}, "x", None]}))
    code = main(["report", "--course", str(root), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[-1] == f"wrote {tmp_path / 'out' / 'index.html'}"
    problems = [line for line in out if line.startswith("problem: ")]
    assert problems == [
        "problem: autograded/ada/04_checkpoint_engine/.autograder.json: the grader's record "
        "cannot be read",
        "problem: autograded/cy/04_checkpoint_engine/checkpoint_engine.ipynb: unreadable "
        "autograded notebook (Expecting value: line 1 column 12 (char 11))",
    ]
    page = (tmp_path / "out" / "index.html").read_text()
    assert 'id="problems"' in page and "checkpoint_engine.ipynb: unreadable" in page
    # bob's odd notebook gives no verdicts, so his __mul__ slip is not counted
    assert re.search(r"<summary>2</summary>\s*<span class=\"who\">ada, cy</span>", page)


@pytest.mark.xdist_group("report")
def test_bad_arguments_are_one_line_errors(made, tmp_path):
    with pytest.raises(GraderError, match=r"no assignment '99_nothing' in this course"):
        report(["99_nothing"], root=made.root, out=tmp_path)
    with pytest.raises(GraderError, match=r"^no gradebook at .*gradebook.db: grade the class"):
        report(root=tmp_path)
    assert list(tmp_path.iterdir()) == []  # no gradebook and no page made on the way


@pytest.mark.xdist_group("report")
def test_one_assignment_only(made, tmp_path):
    result = report([QUIZ], root=made.root, out=tmp_path, now=NOW)
    page = result.path.read_text()
    summary = section(page, "summary")
    assert QUIZ in summary and "<td>01_value</td>" not in summary
    assert "Pass rate per exercise" in page and "value_test_add_mul" not in page


# ---- similarity (report/similarity.py): the section, on real notebooks ---------------------


@pytest.fixture(scope="module")
def alike(made, tmp_path_factory):
    """The class with real lesson 1 notebooks handed in: ada the course's solution, bob a
    disguised copy of it, cy an honest solution of her own, the hostile id the release, dee
    not a notebook, flo past the grader's size limit."""
    import nbformat
    from similarity_solutions import HONEST_A, disguise
    from test_similarity import COURSE, notebook, reordered

    root = tmp_path_factory.mktemp("alike") / "class"
    shutil.copytree(made.root, root)
    handed = {
        "ada": notebook(COURSE),
        "bob": reordered(notebook(disguise(COURSE))),
        "cy": notebook(HONEST_A),
        HOSTILE: notebook(None),
    }
    for student, nb in handed.items():
        folder = root / "submitted" / student / LESSON
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / "value.ipynb")
    (root / "submitted" / "dee" / LESSON).mkdir(parents=True)
    (root / "submitted" / "dee" / LESSON / "value.ipynb").write_text("not json")
    (root / "submitted" / "flo" / LESSON).mkdir(parents=True)
    with open(root / "submitted" / "flo" / LESSON / "value.ipynb", "wb") as f:
        f.truncate(101 * 2**20)  # past the grader's limit: flagged for review (never read)
    return root


@pytest.mark.xdist_group("report")
def test_similarity_groups_a_disguised_copy_and_not_honest_work(alike, tmp_path):
    result = report(root=alike, out=tmp_path, now=NOW)
    part = section(result.path.read_text(), "similarity")
    assert "Similarity is evidence for a person to weigh, never a verdict" in part
    groups = [text(h) for h in re.findall(r"<h3>.*?</h3>", part, re.S)]
    assert len(groups) == 1 and groups[0].startswith(f"{LESSON}: 2 submissions alike")
    rows = [text(r) for r in re.findall(r"<tr><td>.*?</tr>", part, re.S)]
    assert len(rows) == 1 and rows[0].startswith("ada bob ")
    href = re.findall(r'<a href="([^"]+)">side by side</a>', part)
    assert len(href) == 1 and (tmp_path / urllib.parse.unquote(href[0])).is_file()
    assert "never a verdict" in (tmp_path / urllib.parse.unquote(href[0])).read_text()
    assert "Not compared: dee (01_value: not a notebook" in text(part)  # and no quiz there
    assert "Flagged for review" in part and "flo (01_value: 101 MiB" in text(part)
    assert "flo" not in text(part).split("Not compared:")[1]


@pytest.mark.xdist_group("report")
def test_similarity_failing_is_a_problem_not_a_crash(made, tmp_path, monkeypatch):
    from autograder.report import similarity

    def fails(course, assignments=None):
        raise RuntimeError("copydetect fell over\nsecond line")

    monkeypatch.setattr(similarity, "find_pairs", fails)
    result = report(root=made.root, out=tmp_path, now=NOW)
    assert result.problems == ["similarity: RuntimeError: copydetect fell over"]
    assert "Similarity was not computed." in result.path.read_text()


def test_durations_and_percentiles():
    assert [duration(s) for s in (2.04, 40, 600, 11100, 2 * 86400 + 60)] == [
        "2.0 s",
        "40 s",
        "10 min",
        "3 h 05 min",
        "2 d 00 h",
    ]
    assert percentile([1.0], 0.95) == 1.0
    assert percentile([float(x) for x in range(1, 101)], 0.95) == pytest.approx(95.05)


# ---- in a browser, offline ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("report")
def test_the_page_opens_offline_and_shows_its_plots(built, tmp_path):
    """Chromium opens reports/index.html from disk with every network request refused
    (and the context offline): its sections are there and every plot is an image that
    decoded (naturalWidth > 0)."""
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium (scripts/setup --test)")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    result, _ = built
    url = result.path.as_uri()
    outside: list[str] = []

    def only_the_file(route):
        if route.request.url == url or route.request.url.startswith("data:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.route("**/*", only_the_file)
            context.set_offline(True)
            page = context.new_page()
            page.goto(url)
            page.wait_for_load_state("load")
            headings = page.locator("h2").all_inner_texts()
            assert headings[:8] == [
                "Class summary",
                "Score distribution",
                "Pass rate per exercise",
                "Slips the hidden tests diagnosed",
                "Quiz item statistics",
                "Missing and late submissions",
                "Grading time",
                "Similar submissions",
            ]
            images = page.eval_on_selector_all(
                "img",
                "imgs => imgs.map(i => ({complete: i.complete, width: i.naturalWidth,"
                " height: i.naturalHeight, shown: i.getBoundingClientRect().width}))",
            )
            assert len(images) == 3
            assert all(i["complete"] and i["width"] > 0 and i["height"] > 0 for i in images)
            assert all(i["shown"] > 100 for i in images)
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            print(f"\nscreenshot: {tmp_path / 'report.png'}")
            assert not outside, f"the page tried to reach the network: {outside[:5]}"
        finally:
            browser.close()
