"""A quiz variant per student (quizkit.Quiz, questions.py, verdicts/hidden/quiz.py):
whose id a notebook shows, that classmates see other numbers, that a notebook copied from
another student loses what differs and says why, the practice round, and the quizzes'
item statistics in exports/items.csv."""

from __future__ import annotations

import itertools
import json
import os
import random
import sys

import nbformat
import pytest
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    STUDENT_ID_ENV,
    ScratchCourse,
    autograder_cli,
    failing_cells,
    load_kit,
    read,
)

from autograder.demo import STUDENTS, worked_quiz
from autograder.demo import _valid_order as valid_order
from autograder.verdicts.hidden import quiz

QUIZ = ("04_checkpoint_engine", "06_checkpoint_mlp")
MATHS = ("number", "function")  # the questions whose numbers students work with


@pytest.fixture
def kit(monkeypatch):
    """quizkit as a student's kernel has it, with no id from the environment."""

    for name in (STUDENT_ID_ENV, "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    module = load_kit("quizkit")
    monkeypatch.setattr(module, "_exchange_user", lambda: None)
    return module


def shows(v):
    return (v.text, v.code, tuple(v.options), tuple(v.listing), tuple(v.items))


# ---- one variant per student ---------------------------------------------------------------


@pytest.mark.parametrize("assignment", QUIZ)
def test_each_student_has_a_variant_of_their_own(assignment):
    ids = [f"s{i}" for i in range(200)]
    for q in quiz.questions_of(assignment).QUESTIONS:
        seen = [shows(quiz.variant(assignment, who, q)) for who in ids]
        assert seen[0] == shows(quiz.variant(assignment, "s0", q))  # the same every time
        kind = quiz.variant(assignment, "s0", q).kind
        if kind in MATHS:  # two students share numbers rarely (well under 1 in 20)
            shared = sum(a == b for a, b in itertools.combinations(seen, 2))
            assert shared / (len(ids) * (len(ids) - 1) / 2) < 0.05, (q, shared)
        else:  # other wording, other option order, another graph or listing
            assert len(set(seen)) >= (2 if kind == "truth" else 4), q
        stems = {quiz.variant(assignment, who, q).stem for who in ids}
        if stems != {""}:  # a question worded in several ways: at least two of them
            assert len(stems) >= 2, q


def test_two_students_of_the_demo_class_see_different_numbers_everywhere():
    """ada and edsger (who copies her quizzes in the demo), and ada and barbara."""
    for other in ("edsger", "barbara"):
        for assignment in QUIZ:
            for q in quiz.questions_of(assignment).QUESTIONS:
                v, w = quiz.variant(assignment, "ada", q), quiz.variant(assignment, other, q)
                if v.kind in MATHS:
                    assert shows(v) != shows(w), (other, assignment, q)


def test_practice_variants_are_other_variants_than_the_class_s():
    demo = [name for name, _, _ in STUDENTS]
    for assignment in QUIZ:
        for q in quiz.questions_of(assignment).QUESTIONS:
            if quiz.variant(assignment, "ada", q).kind != "number":
                continue
            practice = {shows(quiz.variant(assignment, ("practice", n), q)) for n in range(8)}
            graded = {shows(quiz.variant(assignment, who, q)) for who in demo}
            assert len(practice) >= 6 and len(practice & graded) <= 1, q


# ---- a copied notebook -------------------------------------------------------------------------


@pytest.mark.parametrize("assignment", QUIZ)
def test_a_copied_notebook_loses_what_differs_and_says_why(assignment):
    ada = worked_quiz(read(SOLUTIONS, assignment), assignment, "ada")
    assert failing_cells(ada, assignment, student="ada", shown="ada") == {}
    copied = failing_cells(ada, assignment, student="edsger", shown="ada")
    module = __import__(f"autograder.verdicts.hidden.{assignment}", fromlist=["KEYS"])
    differ = {
        q
        for q, key in module.KEYS.items()
        if quiz.variant(assignment, "ada", q).kind == "function"
        or key.key(quiz.variant(assignment, "ada", q))
        != key.key(quiz.variant(assignment, "edsger", q))
    }
    assert {c.rsplit("_", 1)[1] for c in copied} == differ
    assert len(differ) >= len(module.KEYS) // 2
    for message in copied.values():
        lines = message.splitlines()
        assert "showed the variant of id 'ada'" in " ".join(lines[1:]), message
        assert "handed in as 'edsger'" in message and all(len(x) < 90 for x in lines)
    silent = failing_cells(ada, assignment, student="edsger")  # no shown id: no sentence
    assert set(silent) == set(copied) and "showed" not in " ".join(silent.values())


def test_the_id_a_notebook_showed_is_read_from_its_outputs_and_nothing_else():
    from autograder.preprocessors.shownvariant import QUIZ_MIME, ShownVariant

    assert QUIZ_MIME == quiz.quizkit.QUIZ_MIME
    nb = worked_quiz(read(SOLUTIONS, QUIZ[0]), QUIZ[0], "ada")
    nb.metadata["autograder"] = {"shown_id": "forged", "other": 1}
    nb, _ = ShownVariant().preprocess(nb, {})
    assert nb.metadata["autograder"] == {"shown_id": "ada", "other": 1}
    setup = next(c for c in nb.cells if c.get("outputs"))
    for bad in ({"id": "x" * 500}, {"id": 7}, "not json", {"id": "a\nb"}, [], {"id": ""}):
        setup.outputs[0]["data"][QUIZ_MIME] = bad
        nb, _ = ShownVariant().preprocess(nb, {})
        assert "shown_id" not in nb.metadata["autograder"], bad
    setup.outputs[0]["data"][QUIZ_MIME] = json.dumps({"id": "grace"})
    assert ShownVariant().preprocess(nb, {})[0].metadata["autograder"]["shown_id"] == "grace"


# ---- whose variant a notebook shows -----------------------------------------------------------


def test_the_id_comes_from_the_grader_the_hub_the_exchange_or_the_first_cell(
    kit, monkeypatch, tmp_path
):
    assert kit.student_id("  ada ") == ("ada", kit.TYPED)
    assert kit.student_id("") == ("", "")
    monkeypatch.setattr(kit, "_exchange_user", lambda: "bob")
    assert kit.student_id("ada") == ("bob", "your user name on nbgrader's exchange")
    monkeypatch.setenv("JUPYTERHUB_USER", "carol")
    assert kit.student_id("ada")[0] == "carol"
    monkeypatch.setenv(STUDENT_ID_ENV, "dave")
    assert kit.student_id("ada") == ("dave", "set by the grader")


def test_the_exchange_is_nbgraders_configured_one(kit, monkeypatch, tmp_path):
    """With an nbgrader_config.py that names an exchange root which exists, the id is the
    user nbgrader's exchange files submissions under; without it, there is none."""
    fresh = load_kit("quizkit")  # its real _exchange_user
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    monkeypatch.chdir(tmp_path)
    (config / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.Exchange.root = {str(tmp_path / 'exchange')!r}\n"
    )
    assert fresh._exchange_user() is None  # the root does not exist
    (tmp_path / "exchange").mkdir()
    from nbgrader.utils import get_username

    assert fresh._exchange_user() == get_username()


def test_without_an_id_the_quiz_says_in_one_line_what_to_do(kit, capsys, monkeypatch):
    monkeypatch.chdir(NOTEBOOKS / QUIZ[0])
    q = kit.Quiz(QUIZ[0], "")
    q.show("q2")
    out = capsys.readouterr().out
    assert 'type yours in the first cell, such as my_id = "ada"' in out
    assert all(len(line) < 90 for line in out.splitlines())
    with pytest.raises(kit.CheckFailed, match="no student id yet"):
        q.check("q2", 1.0)
    q = kit.Quiz(QUIZ[0], "ada")
    out = capsys.readouterr().out
    assert q.student == "ada" and "Your variant of this quiz: questions shown for id 'ada'" in out
    monkeypatch.setenv("JUPYTERHUB_USER", "hedy")
    assert "'ada', typed in the first cell, is not used" in (
        kit.Quiz(QUIZ[0], "ada") and capsys.readouterr().out
    )


# ---- the practice round --------------------------------------------------------------------


@pytest.mark.parametrize("assignment", QUIZ)
def test_practice_round_checks_at_once_and_explains(kit, capsys, monkeypatch, assignment):
    monkeypatch.chdir(NOTEBOOKS / assignment)
    module = __import__(f"autograder.verdicts.hidden.{assignment}", fromlist=["KEYS"])
    q = kit.Quiz(assignment, "ada")
    for name, key in module.KEYS.items():
        p = q.practice(name)
        v = p.variant
        capsys.readouterr()
        p.answer(None)  # the practice cell as handed out: the answer goes inside .answer()
        out = capsys.readouterr().out
        assert p.right is False and out.startswith(f"✗ {v.name} is not answered yet"), out
        assert ".answer(...)" in out and "answer cell" not in out, out
        assert v.seed == quiz.variant(assignment, ("practice", 0), name).seed
        expected = key.key(v)
        if v.kind == "function":
            f = key.truth(v)
            right = f
            wrong = lambda *args, f=f: f(*args) + 1.0  # noqa: E731
        elif v.kind == "order":
            right = valid_order(expected)
            wrong = right[::-1]
        elif v.kind == "number":
            right, wrong = expected, expected + 1
        elif v.kind == "truth":
            right, wrong = expected, not expected
        else:  # a letter or a line number
            right = expected
            wrong = next(x for x in ("abcd" if v.kind == "choice" else range(1, 20)) if x != right)
        capsys.readouterr()
        p.answer(right)
        out = capsys.readouterr().out
        assert p.right is True and out.startswith("✓ Right.") and "Why: " in out, (name, out)
        p.answer(wrong)
        out = capsys.readouterr().out
        assert p.right is False and out.startswith("✗ Not right.") and "Why: " in out, name
        assert all(len(line) < 90 for line in out.splitlines()), out
    assert q.practice("q1").variant.seed == quiz.variant(assignment, ("practice", 1), "q1").seed
    with pytest.raises(kit.CheckFailed, match="numbered 0 to 7"):
        q.practice("q1", 99)


def test_practice_answers_are_kept_in_the_notebook_encoded_and_nowhere_else():
    for assignment in QUIZ:
        for folder in (NOTEBOOKS, SOLUTIONS):
            nb = read(folder, assignment)
            bank = nb.metadata["course"]["practice"]
            assert bank["assignment"] == assignment and set(bank["questions"]) == set(
                quiz.questions_of(assignment).QUESTIONS
            )
            text = json.dumps(nb.metadata)
            assert "Why" not in text and "dL/dn" not in text  # not readable by accident
        practice = [
            c for c in read(NOTEBOOKS, assignment).cells if "practice" in c.metadata.get("tags", [])
        ]
        assert practice and all(c.metadata.get("nbgrader") is None for c in practice)
    from autograder.preprocessors.execute import GuardedExecute

    assert "practice" in GuardedExecute().skip_tags  # never run while grading


def test_worked_answers_write_numbers_as_the_questions_do():
    """No "2x + -0.5", "3x + 0" or "1x": every worked answer of every practice variant (and
    of the numbers those variants draw) writes an expression as the question writes it."""
    import re

    sloppy = re.compile(r"\+ -|- -|x [+-] 0(?![.\d])|(?<![\d.])1x\b")
    for assignment in QUIZ:
        module = __import__(f"autograder.verdicts.hidden.{assignment}", fromlist=["KEYS"])
        for name, key in module.KEYS.items():
            for i in range(120):  # practice draws; the graded ones come from the same picks
                v = quiz.variant(assignment, ("practice", i), name)
                why = key.why(v, key.key(v))
                assert not sloppy.search(why), (assignment, name, why)
    assert quiz.affine(2.0, -0.5) == "2x - 0.5" and quiz.affine(3.0, 0.0) == "3x"
    assert quiz.affine(1.0, 1.5) == "x + 1.5" and quiz.affine(-1.0, 0.0) == "-x"


# ---- the practice round shows nothing that decides a graded answer --------------------------

MANY = [f"s{i}" for i in range(200)] + ["ada", "Bob", "Zoë O'Neil", "a.b@uni.edu", "Straße"]


def deciding(v, key=None) -> set:
    """What decides the answer of variant ``v``, as tagged items: a practice variant that
    shares one of them with a student's graded variant gives that answer away. Choices and
    statements: the wording, the option set and (``key``, its letter) the right option's
    text; listings: the listing; graphs and steps: the template, the option set; numbers:
    the numbers (wherever they are: a question's code, its statement, its options)."""
    found = set()
    if v.kind in ("choice", "truth"):
        found.add(("wording", v.text))
    if v.options:
        found.add(("options", frozenset(text for _, text in v.options)))
    if v.kind == "choice" and key is not None:
        found.add(("right option", v.options[quiz.quizkit.LETTERS.index(key)][1]))
    if v.listing:
        found.add(("listing", tuple(v.listing)))
    if v.template:
        found.add(("template", v.template))
    if v.values:
        found.add(("numbers", json.dumps(v.values, sort_keys=True)))
    return found


def _keys(assignment):
    return __import__(f"autograder.verdicts.hidden.{assignment}", fromlist=["KEYS"]).KEYS


def _deciding(assignment, who, q):
    v = quiz.variant(assignment, who, q)
    return deciding(v, _keys(assignment)[q].key(v) if v.kind == "choice" else None)


@pytest.mark.parametrize("assignment", QUIZ)
def test_no_practice_variant_a_student_can_see_shares_what_decides_their_answer(assignment):
    """For many students and every question: every practice variant of the notebook's
    practice round (all of them: their answers are in the notebook, encoded, for anyone
    to decode) differs from the student's graded variant in wording, option set, right
    option, statement, listing and numbers."""
    bank = read(NOTEBOOKS, assignment).metadata["course"]["practice"]["questions"]
    for q in quiz.questions_of(assignment).QUESTIONS:
        assert len(bank[q]) >= 4, q
        seen = set().union(
            *(_deciding(assignment, ("practice", n), q) for n in range(len(bank[q])))
        )
        for who in MANY:
            shared = _deciding(assignment, who, q) & seen
            assert not shared, (assignment, q, who, sorted(map(str, shared))[:2])


@pytest.mark.parametrize("assignment", QUIZ)
def test_practice_pools_never_meet_graded_ones_whatever_the_seed(assignment):
    """Not a matter of the bank's few seeds: 40 practice seeds against 200 students share
    nothing that decides an answer, the practice round still shows more than one variant
    of each question, and a true/false question has true and false statements on both sides
    (no pattern says what a graded statement is)."""
    for q in quiz.questions_of(assignment).QUESTIONS:
        practice = [_deciding(assignment, ("practice", n), q) for n in range(40)]
        graded = [_deciding(assignment, f"g{i}", q) for i in range(200)]
        assert not set().union(*practice) & set().union(*graded), q
        assert len({shows(quiz.variant(assignment, ("practice", n), q)) for n in range(8)}) > 1
        v = quiz.variant(assignment, "g0", q)
        if v.kind == "truth":
            for side in (("practice", n) for n in range(40)), (f"g{i}" for i in range(200)):
                answers = {_keys(assignment)[q].key(quiz.variant(assignment, w, q)) for w in side}
                assert answers == {True, False}, q


# ---- one id, whatever its case and spaces ------------------------------------------------


SAME_IDS = [
    ("Bob", "bob", " bob ", "BOB", "bOb\t"),  # case and spaces
    ("Zoë  O'Neil", "zoë o'neil", "ZOË O'NEIL", "Zoe\u0308 O'Neil"),  # composed or not
    ("Straße", "STRASSE", "strasse"),  # a case fold is not a lower()
    ("ｂｏｂ", "bob"),  # full-width letters, as an IME types them
]


@pytest.mark.parametrize("ids", SAME_IDS, ids=lambda ids: ids[1])
def test_an_id_gets_one_variant_whatever_its_case_and_spaces(ids):
    for assignment in QUIZ:
        for q in quiz.questions_of(assignment).QUESTIONS:
            assert len({shows(quiz.variant(assignment, who, q)) for who in ids}) == 1, (ids, q)
    assert shows(quiz.variant(QUIZ[0], "bob", "q2")) != shows(quiz.variant(QUIZ[0], "bobby", "q2"))


def test_the_quiz_and_the_roster_compare_ids_one_way(kit):
    """quizkit.quiz_id (student kernels) is roster.fold (the grader's ids, collect,
    ShownVariant): one normalisation, written twice because coursekit imports nothing."""
    from autograder.roster import fold

    for ids in SAME_IDS:
        assert {kit.quiz_id(who) for who in ids} == {fold(ids[0])}
    for who in ("ada", "A.B@Uni.EDU", "ǅemal", "ﬁona", "İlker", "x\u00a0y", "Σίσυφος", ""):
        assert kit.quiz_id(who) == fold(who) == kit.quiz_id(kit.quiz_id(who)), who


def test_the_first_cell_says_which_id_the_questions_are_shown_for(kit, monkeypatch):
    shown = []
    monkeypatch.setattr(kit, "_display", shown.append)
    monkeypatch.chdir(NOTEBOOKS / QUIZ[0])
    monkeypatch.setenv("JUPYTERHUB_USER", "Bob")  # a hub whose user names keep their case
    q = kit.Quiz(QUIZ[0], "BOB ")
    out = shown[-1]["text/plain"]
    assert q.student == "bob" and "questions shown for id 'bob'." in out, out
    assert "Where that id comes from: your JupyterHub user, as 'Bob'" in out, out
    assert "not used" not in out and all(len(line) < 90 for line in out.splitlines())
    assert shown[-1][kit.QUIZ_MIME]["id"] == "bob"
    assert shows(q.variant("q2")) == shows(quiz.variant(QUIZ[0], "bob", "q2"))
    monkeypatch.delenv("JUPYTERHUB_USER")
    q = kit.Quiz(QUIZ[0], "  Bob ")
    out = shown[-1]["text/plain"]
    assert q.student == "bob" and "typed in the first cell, as 'Bob'" in out, out


def test_grading_compares_ids_as_the_notebook_does(kit):
    """Bob's worked quiz, showing 'BOB', handed in as 'Bob': full marks, no copy message;
    the id a notebook showed is kept folded."""
    from autograder.preprocessors.shownvariant import QUIZ_MIME, ShownVariant

    nb = worked_quiz(read(SOLUTIONS, QUIZ[0]), QUIZ[0], "bob")
    assert failing_cells(nb, QUIZ[0], student="Bob", shown="BOB") == {}
    setup = next(c for c in nb.cells if c.get("outputs"))
    setup.outputs[0]["data"][QUIZ_MIME] = {"assignment": QUIZ[0], "id": " Bob "}
    assert ShownVariant().preprocess(nb, {})[0].metadata["autograder"]["shown_id"] == "bob"
    copied = failing_cells(nb, QUIZ[0], student="Edsger", shown="Bob")
    assert copied and all("variant of id 'bob'" in m for m in copied.values())
    assert all("handed in as 'edsger'" in m for m in copied.values())


# ---- item statistics -----------------------------------------------------------------------


def test_item_statistics_tell_what_separates_strong_from_weak():
    from autograder.grade.export import item_statistics

    rng = random.Random(1)
    students = [f"s{i}" for i in range(40)]
    ability = {s: i / 39 for i, s in enumerate(students)}
    items = {
        "easy": {s: 1.0 for s in students},  # everyone: tells nothing
        "good": {s: float(ability[s] > 0.5) for s in students},  # the strong get it
        "noise": {s: float(rng.random() < 0.5) for s in students},
        "bad": {s: float(ability[s] < 0.3) for s in students},  # the weak get it
        **{f"f{i}": {s: float(ability[s] > i / 6) for s in students} for i in range(5)},
    }
    stats = item_statistics(items)
    assert stats["easy"][:2] == (40, 1.0) and stats["easy"][2] is None
    assert stats["good"][1] == pytest.approx(0.5, abs=0.05)
    assert stats["good"][2] > 0.5 and stats["good"][3] == 1.0
    assert stats["bad"][2] < 0 and stats["bad"][3] < 0
    assert abs(stats["noise"][2]) < stats["good"][2]


def test_export_writes_item_statistics_for_the_quizzes_only():
    from autograder.grade.export import ITEMS_HEADER, item_rows

    cells = [
        [s, QUIZ[0], "checkpoint_engine", f"engine_quiz_test_q{q}", str(score * pts), str(pts)]
        for s, scores in {"a": (1, 1, 0), "b": (1, 0, 0), "c": (1, 1, 1)}.items()
        for q, (score, pts) in enumerate(zip(scores, (1, 2, 2)), start=1)
    ]
    cells.append(["a", "01_value", "value", "value_test_add_mul", "4", "4"])
    rows = [dict(zip(ITEMS_HEADER, r)) for r in item_rows(cells)]
    assert [r["question"] for r in rows] == ["q1", "q2", "q3"]
    assert [(r["points"], r["students"], r["share_right"]) for r in rows] == [
        ("1", "3", "1.000"),
        ("2", "3", "0.667"),
        ("2", "3", "0.333"),
    ]
    assert rows[0]["discrimination"] == "" and float(rows[1]["discrimination"]) > 0


# ---- real nbgrader -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("how", ["python -m autograder grade", "nbgrader autograde"])
def test_a_copied_quiz_is_graded_by_the_id_it_was_handed_in_under(tmp_path, how):
    """Really graded, both ways: ada's worked quiz, handed in by ada and by edsger, saved
    outputs and all. Edsger loses the questions whose variant differs, and the feedback
    says the notebook showed ada's variant; his graded notebook shows his own variant."""
    assignment = QUIZ[0]
    course = ScratchCourse(tmp_path, [assignment])
    course.release(assignment)
    ada = worked_quiz(read(SOLUTIONS, assignment), assignment, "ada")
    course.submit("ada", assignment, ada)
    course.submit("edsger", assignment, ada)
    if how == "nbgrader autograde":
        scores = course.autograde(assignment)
    else:
        autograder_cli("grade", assignment, "-q", cwd=course.path, timeout=900, codes=(0, 1))
        scores = course.scores(assignment)
    full = course.max_scores(assignment)
    assert scores["ada"] == full
    lost = {c for c, p in scores["edsger"].items() if p == 0}
    assert len(lost) >= 6
    graded = course.autograded("edsger", assignment)
    outputs = [o for c in graded.cells for o in c.get("outputs", [])]
    messages = [o for o in outputs if o.get("ename") == "HiddenTestFailed"]
    assert len(messages) == len(lost)
    assert all("showed the variant of id 'ada'" in " ".join(o.traceback) for o in messages)
    shown = [
        o["data"]["text/plain"]
        for o in outputs
        if "Your variant" in str(o.get("data", {}).get("text/plain", ""))
    ]
    assert shown and "'edsger'" in shown[0], shown


@pytest.mark.slow
def test_a_quiz_notebook_runs_in_a_real_kernel_with_the_hub_id(tmp_path):
    """The released quiz, run top to bottom by a JupyterHub user: it shows their variant,
    and its practice round works in the kernel."""
    from nbclient import NotebookClient

    assignment = QUIZ[1]
    nb = read(NOTEBOOKS, assignment)
    folder = tmp_path / assignment
    import shutil

    shutil.copytree(NOTEBOOKS / assignment, folder, symlinks=False)
    for cell in nb.cells:  # answer the practice variant with something
        if "p.answer(None)" in cell.source:
            cell.source = cell.source.replace("p.answer(None)", "p.answer(0.5)")
    env = {k: v for k, v in os.environ.items() if k != STUDENT_ID_ENV}
    env["JUPYTERHUB_USER"] = "hedy"
    nbformat.write(nb, folder / "checkpoint_mlp.ipynb")
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute(env=env, cwd=str(folder))
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        for o in c.get("outputs", [])
    )
    assert "questions shown for id 'hedy'.\nWhere that id comes from: your JupyterHub user" in text
    assert "Practice variant 0 of q5" in text and "Why: " in text
    assert sys.executable  # the kernel is this environment's
