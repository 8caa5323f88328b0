"""The student edition (``python -m autograder release --to DIR``) and the self-learners'
solutions download (``--solutions``): what they hold, and above all what they do not.

The scan here is the release's own (``edition.leaks``), and each kind of secret it looks
for is planted once to show that it is found; the student edition is also checked against
the instructor notebooks directly, region by region.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from helpers import NOTEBOOKS, ROOT, SOLUTIONS, SOURCE, autograder_cli

from autograder.content import slides
from autograder.course import assignments, kind
from autograder.students import edition, launcher

ASSIGNMENTS = assignments()


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("release") / "student-edition"
    assert edition.release(dest, zip_=True) == 0
    return dest


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


# ---- what the student edition holds ---------------------------------------------------


def test_student_edition_holds_lessons_launcher_readme_and_requirements(student):
    expected = {
        ".edition.json",
        ".gitignore",
        "README.md",
        "lessons/START-HERE.md",
        "lab.py",
        "requirements.txt",
        "LICENSE",
    }
    expected |= {f"jupyter/{p}" for p in files(edition.LAB_CONFIG)}
    for assignment in ASSIGNMENTS:
        expected |= {
            f"lessons/{assignment}/{p}"
            for p in files(NOTEBOOKS / assignment)
            if ".ipynb_checkpoints" not in p
        }
    shown = {f for f in files(student) if f.startswith("slides/") and "/vendor/" not in f}
    expected |= {"slides/index.html"} | {f"slides/{a}.slides.html" for a in slides.lessons()}
    assert shown == {f for f in expected if f.startswith("slides/")}
    expected |= {f for f in files(student) if f.startswith("slides/vendor/")}
    assert "slides/vendor/reveal.js/dist/reveal.js" in expected
    assert set(files(student)) == expected
    for assignment in ASSIGNMENTS:
        for path in (NOTEBOOKS / assignment).iterdir():
            if path.is_file():
                assert (
                    student / "lessons" / assignment / path.name
                ).read_bytes() == path.read_bytes()


def test_every_lesson_holds_coursekit_as_a_real_file(student, tmp_path):
    """notebooks/<lesson>/coursekit.py is a link to source/.shared/coursekit.py (the only
    one in git); the student edition and the solutions download hold the file itself."""
    shared = (SOURCE / ".shared" / "coursekit.py").read_bytes()
    assert edition.release(tmp_path / "solutions", solutions=True) == 0
    for folder in [student / "lessons", tmp_path / "solutions"]:
        for assignment in ASSIGNMENTS:
            kit = folder / assignment / "coursekit.py"
            assert kit.is_file() and not kit.is_symlink(), kit
            assert kit.read_bytes() == shared, kit


def test_student_edition_holds_nothing_secret(student):
    assert edition.leaks(student) == []
    names = {part for p in student.rglob("*") for part in p.relative_to(student).parts}
    assert not names & {
        "source",
        "solutions",
        "autograder",
        "hidden",
        "refgrad",
        ".reference",
        "nbgrader_config.py",
        "gradebook.db",
    }


def test_no_solution_or_hidden_test_line_of_the_instructor_notebooks_is_in_it(student):
    """Independently of edition.leaks: every line inside a solution or hidden-test region
    of source/ that students are not otherwise given is absent from every notebook."""
    given = set((SOURCE / ".shared" / "coursekit.py").read_text().splitlines())
    regions: list[str] = []
    for assignment in ASSIGNMENTS:
        for path in (SOURCE / assignment).glob("*.ipynb"):
            for cell in nbformat.read(path, as_version=4).cells:
                text = cell.source
                for begin, end in (("SOLUTION", "SOLUTION"), ("HIDDEN TESTS", "HIDDEN TESTS")):
                    pattern = rf"### BEGIN {begin}\n(.*?)### END {end}"
                    for body in re.findall(pattern, text, re.S):
                        regions.append(body)
                        text = text.replace(body, "")
                given.update(text.splitlines())
    given = {line.strip() for line in given}
    secret = {line.strip() for body in regions for line in body.splitlines()} - given
    secret = {line for line in secret if re.search(r"\w", line)}  # not "],": punctuation
    assert any(line.startswith("q2 = ") for line in secret)  # quiz answers are in there
    assert any(line.startswith("# Why:") for line in secret)  # and their reasoning
    for path in student.rglob("*"):
        if path.is_file():
            lines = {line.strip() for line in path.read_text(errors="replace").splitlines()}
            if path.suffix == ".ipynb":
                nb = nbformat.read(path, as_version=4)
                lines = {ln.strip() for c in nb.cells for ln in c.source.splitlines()}
            assert not lines & secret, f"{path}: {sorted(lines & secret)[:3]}"


def test_student_requirements_are_the_one_list_and_hold_nothing_of_the_grader(student):
    """The edition ships requirements-student.txt, which requirements.txt includes: one
    list, so the grader's packages (Dask, psutil, latex2mathml) cannot drift into it."""
    listed = (ROOT / "requirements-student.txt").read_text()
    assert (student / "requirements.txt").read_text() == listed
    assert "-r requirements-student.txt" in (ROOT / "requirements.txt").read_text().splitlines()
    names = {
        re.split(r"[<>=!~\[ ]", line)[0].lower()
        for line in listed.splitlines()
        if line and not line.startswith("#")
    }
    assert "nbgrader" in names  # for Validate
    assert not names & {"dask", "distributed", "psutil", "latex2mathml", "torch"}


def test_student_settings_keep_validate_and_turn_off_instructor_tools(student):
    server = json.loads((student / "jupyter" / "jupyter_server_config.json").read_text())
    ext = server["ServerApp"]["jpserver_extensions"]
    assert ext["nbgrader.server_extensions.validate_assignment"] is True
    assert not ext["nbgrader.server_extensions.formgrader"]
    validate = json.loads((student / "jupyter" / "nbgrader_config.json").read_text())
    assert validate["Execute"]["timeout"] > 0


def test_the_zip_holds_the_same_files_under_one_folder(student):
    with zipfile.ZipFile(student.with_suffix(".zip")) as zf:
        names = sorted(n.split("/", 1)[1] for n in zf.namelist())
        assert {n.split("/", 1)[0] for n in zf.namelist()} == {student.name}
    assert names == files(student)


def test_readme_says_the_one_command_and_the_start_page_lists_every_lesson(student):
    readme = (student / "README.md").read_text()
    assert "python3 lab.py" in readme and "Validate" in readme
    start = (student / "lessons" / "START-HERE.md").read_text()
    for assignment in ASSIGNMENTS:
        (nb,) = (NOTEBOOKS / assignment).glob("*.ipynb")
        assert f"]({assignment}/{nb.name})" in start


# ---- releasing again, and bad targets ---------------------------------------------------


def test_releasing_again_keeps_git_work_and_venv_and_refuses_other_folders(tmp_path, capsys):
    dest = tmp_path / "edition"
    assert edition.release(dest, git=True) == 0
    (dest / "my-work" / "01_value").mkdir(parents=True)
    (dest / "my-work" / "01_value" / "value.ipynb").write_text("my answers")
    (dest / ".venv").mkdir()
    (dest / "stale.txt").write_text("from an older release")
    edition.commit(dest, "an older release had one more file")
    assert edition.release(dest, git=True) == 0
    assert (dest / "my-work" / "01_value" / "value.ipynb").read_text() == "my answers"
    assert (dest / ".venv").is_dir() and not (dest / "stale.txt").exists()
    log = subprocess.run(
        ["git", "-C", str(dest), "log", "--oneline"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(log) == 3  # the second release removed stale.txt
    capsys.readouterr()

    other = tmp_path / "someones-folder"
    other.mkdir()
    (other / "thesis.tex").write_text("precious")
    assert edition.release(other) == 2
    assert "not empty" in capsys.readouterr().out
    assert (other / "thesis.tex").read_text() == "precious"
    assert edition.release(dest, solutions=True) == 2
    assert "student release, not a solutions one" in capsys.readouterr().out
    assert edition.release(ROOT) == 2
    assert edition.release(ROOT.parent) == 2


def test_release_command_line(tmp_path):
    proc = autograder_cli("release", "--to", str(tmp_path / "ed"), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "student edition:" in proc.stdout and "python3 lab.py" in proc.stdout
    assert (tmp_path / "ed" / "lab.py").exists()


# ---- the scan finds each kind of secret ------------------------------------------------


PLANTED = {
    "solution code": ("lessons/05_mlp/mlp.ipynb", "x = module(x)"),
    "a quiz answer": (
        "lessons/04_checkpoint_engine/checkpoint_engine.ipynb",
        'q5 = quiz.variant("q5").letter_of("listed twice")',
    ),
    "a quiz's key table": (  # which listing line is wrong, from the grader's answers
        "lessons/04_checkpoint_engine/questions.py",
        '"m1": 7, "m2": 8, "m3": 6, "m4": 3, "m5": 8, "m6": 6,',
    ),
    "which option is right": ("lessons/06_checkpoint_mlp/questions.py", '{"s1", "s3"},'),
    "its reasoning": (
        "notes.md",
        "# Why: c = a * b. In d = c*c + k*c, the node c gets a share from each of its uses: 2c",
    ),
    "a hidden test": ("lessons/01_value/value.ipynb", 'load_grader("lesson01").add_mul(Value)'),
    "solution code on a slide": (  # as nbconvert writes code: each token in its own tag
        "slides/05_mlp.slides.html",
        '<pre><span class="n">x</span> <span class="o">=</span> <span class="n">module</span>'
        '<span class="p">(</span><span class="n">x</span><span class="p">)</span></pre>',
    ),
    "a marker": ("README.md", "### BEGIN HIDDEN TESTS"),
    "the reference engine": ("lab.py", "from refgrad import Value"),
}


@pytest.mark.parametrize("kind", PLANTED)
def test_a_planted_secret_is_found(student, tmp_path, kind):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(student, copy)
    rel, line = PLANTED[kind]
    path = copy / rel
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(line))
        nbformat.write(nb, path)
    else:
        path.write_text((path.read_text() if path.exists() else "") + f"\n{line}\n")
    found = edition.leaks(copy)
    assert found and all(f.startswith(rel) for f in found), found


@pytest.mark.parametrize(
    "name",
    [
        "solutions/value.ipynb",
        "refgrad/engine.py",
        "nbgrader_config.py",
        "verdicts/api.py",
        "probe/runtime.py",
    ],
)
def test_a_planted_grader_file_is_found(student, tmp_path, name):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(student, copy)
    (copy / name).parent.mkdir(parents=True, exist_ok=True)
    (copy / name).write_text("# nothing\n")
    assert edition.leaks(copy)


def test_a_partial_release_holds_only_those_lessons_and_none_of_the_next(tmp_path, capsys):
    """Releasing lesson 1 alone gives nothing of lesson 2, and lesson 1's solution lines
    count as secret there."""
    import shutil

    dest = tmp_path / "ed"
    assert edition.release(dest, ["01_value"]) == 0
    assert sorted(p.name for p in (dest / "lessons").iterdir()) == ["01_value", "START-HERE.md"]
    path = dest / "lessons" / "01_value" / "value.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("self.grad += other.data * out.grad"))
    copy = tmp_path / "copy"
    shutil.copytree(dest, copy)
    nbformat.write(nb, copy / "lessons" / "01_value" / "value.ipynb")
    assert edition.leaks(copy)
    assert edition.release(tmp_path / "other", ["99_nothing"]) == 2
    assert "no assignment 99_nothing" in capsys.readouterr().out


# ---- lessons released by dates: what is past ships, nothing else does ---------------------


def lesson_answers() -> dict[str, set[str]]:
    """Independently of edition.Secrets: {lesson: the lines of its solution regions that
    coursekit, the lesson itself and the assignments before it do not give anyway}."""
    kit = {ln.strip() for ln in (SOURCE / ".shared" / "coursekit.py").read_text().splitlines()}
    given, answers = set(kit), {}
    for assignment in ASSIGNMENTS:
        solution = set()
        for path in (SOURCE / assignment).glob("*.ipynb"):
            for cell in nbformat.read(path, as_version=4).cells:
                text = cell.source
                for body in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", text, re.S):
                    solution |= {ln.strip() for ln in body.splitlines() if ln.strip()}
                    text = text.replace(body, "")
                given |= {ln.strip() for ln in text.splitlines()}
        if kind(assignment) == "lesson":
            answers[assignment] = solution - given
    return answers


def lines_of(path: Path) -> set[str]:
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        return {ln.strip() for c in nb.cells for ln in c.source.splitlines()}
    return {ln.strip() for ln in path.read_text(errors="replace").splitlines()}


def own_given(assignment: str) -> set[str]:
    """What a quiz or a problem set gives outside its solution regions."""
    out = set()
    for path in (SOURCE / assignment).glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            text = re.sub(r"### BEGIN SOLUTION\n.*?### END SOLUTION", "", cell.source, flags=re.S)
            out |= {ln.strip() for ln in text.splitlines()}
    return out


def test_an_edition_of_every_lesson_at_once_holds_no_line_of_any_lessons_solution(student):
    """No dates: everything at once, nothing past. No lesson gives an earlier lesson's
    answers away (each starts from the student's own engine): not its notebook, not its
    slides, not coursekit. A quiz or a problem set may show code like the lessons' in
    its own notebook (they come after them), and nothing more."""
    assert json.loads((student / edition.MARKER).read_text())["past"] == []
    assert not (student / edition.COURSE_FOLDER).exists()
    answers = set().union(*lesson_answers().values())
    assert len(answers) > 50
    for path in sorted(p for p in student.rglob("*") if p.is_file() and p.suffix != ".zip"):
        rel = path.relative_to(student)
        found = lines_of(path) & answers
        owner = rel.parts[1] if rel.parts[0] == "lessons" and len(rel.parts) > 2 else None
        if owner is not None and kind(owner) != "lesson":
            found -= own_given(owner)
        assert not found, f"{rel}: {sorted(found)[:3]}"


def test_every_lesson_gives_its_own_lines_only(student):
    """Lessons 2, 3 and 5 hold no line of an earlier lesson's solution at all."""
    answers = lesson_answers()
    for lesson in answers:
        (path,) = (student / "lessons" / lesson).glob("*.ipynb")
        earlier = set().union(*(lines for other, lines in answers.items() if other < lesson))
        assert not lines_of(path) & earlier, lesson


@pytest.fixture(scope="module")
def upto_3(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("upto") / "edition"
    assert edition.release(dest, upto="03_activations") == 0
    return dest


def test_upto_ships_up_to_that_lesson_and_the_course_versions_of_the_ones_before(upto_3):
    assert sorted(p.name for p in (upto_3 / "lessons").iterdir() if p.is_dir()) == [
        "01_value",
        "02_backward",
        "03_activations",
    ]
    course = upto_3 / edition.COURSE_FOLDER
    assert sorted(p.name for p in course.iterdir() if p.is_dir()) == ["01_value", "02_backward"]
    for lesson in ("01_value", "02_backward"):
        for path in (SOLUTIONS / lesson).glob("*.ipynb"):
            assert (course / lesson / path.name).read_bytes() == path.read_bytes()
    assert 'Change `"mine"` to `"course"`' in (course / "README.md").read_text()
    marker = json.loads((upto_3 / edition.MARKER).read_text())
    assert marker["past"] == ["01_value", "02_backward"]
    assert edition.leaks(upto_3) == []


def test_only_past_solution_lines_may_ship(upto_3, tmp_path):
    """Lesson 1's answers are out (its course version ships); lesson 3's are not."""
    import shutil

    answers = lesson_answers()
    copy = tmp_path / "copy"
    shutil.copytree(upto_3, copy)
    path = copy / "lessons" / "03_activations" / "activations.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(sorted(answers["01_value"])[0]))
    nbformat.write(nb, path)
    assert edition.leaks(copy) == []
    line = "return n.tanh()"
    assert line in answers["03_activations"]
    nb.cells.append(nbformat.v4.new_code_cell(line))
    nbformat.write(nb, path)
    found = edition.leaks(copy)
    assert found == [
        f"lessons/03_activations/activations.ipynb: solution or hidden-test line {line!r}"
    ]
    readme = copy / edition.COURSE_FOLDER / "README.md"
    readme.write_text(readme.read_text() + "\n" + sorted(answers["05_mlp"])[0] + "\n")
    assert any(f.startswith("course/README.md") for f in edition.leaks(copy))


def test_a_lesson_that_repeats_an_earlier_ones_answers_stops_the_release(
    monkeypatch, tmp_path, capsys
):
    """Say lesson 2 gave lesson 1's engine in a locked cell again: a class that gets both
    at once would get lesson 1's answers, so nothing is released."""
    import shutil

    notebooks = tmp_path / "notebooks"
    for lesson in ("01_value", "02_backward"):
        shutil.copytree(NOTEBOOKS / lesson, notebooks / lesson)
    path = notebooks / "02_backward" / "backward.ipynb"
    nb = nbformat.read(path, as_version=4)
    engine = nbformat.v4.new_code_cell(
        "def __sub__(self, other):\n    return self + (-other)\n\n\nValue.__sub__ = __sub__"
    )
    engine.metadata["nbgrader"] = {"locked": True, "grade_id": "backward_engine"}
    nb.cells.insert(3, engine)
    nbformat.write(nb, path)
    monkeypatch.setattr(edition, "NOTEBOOKS", notebooks)
    dest = tmp_path / "ed"
    assert edition.release(dest, ["01_value", "02_backward"]) == 1
    out = capsys.readouterr().out
    assert (
        "lessons/02_backward/backward.ipynb: solution or hidden-test line 'return self + (-other)'"
        in out
    )
    assert "Nothing was published" in out
    capsys.readouterr()
    assert edition.release(tmp_path / "later", upto="02_backward") == 0  # lesson 1 is past
    capsys.readouterr()


@pytest.mark.slow
def test_engine_course_runs_the_shipped_lessons_in_a_real_kernel(upto_3, tmp_path):
    """A student of lesson 3, in the edition, switches to the course's lessons 1 and 2."""
    import shutil

    from nbclient import NotebookClient

    work = upto_3 / "my-work"
    shutil.copytree(upto_3 / "lessons" / "03_activations", work / "03_activations")
    nb = nbformat.read(work / "03_activations" / "activations.ipynb", as_version=4)
    (engine,) = [c for c in nb.cells if "engine" in c.metadata.get("tags", [])]
    engine.source = engine.source.replace('engine(\n    "mine"', 'engine(\n    "course"')
    assert '"course"' in engine.source
    probe = nbformat.v4.new_code_cell(
        "x = Value(2.0)\n(x * x + x).backward()\n"
        "print(x.grad, grad_check(lambda a, b: a * b + a, [2.0, 3.0]) < 1e-6)"
    )
    nb.cells = [*nb.cells[: nb.cells.index(engine) + 1], probe]
    NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        resources={"metadata": {"path": str(work / "03_activations")}},
    ).execute()
    assert engine.outputs[0]["text"] == (
        "Value, numerical_grad, grad_check: the course's, from 02_backward (which starts "
        "from 01_value).\n"
    )
    assert probe.outputs[0]["text"] == "5.0 True\n"
    engine.source = engine.source.replace('"course"', '"mine"')  # lessons 1 and 2 not done
    nb.cells = nb.cells[:-1]
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(work / "03_activations")}},
    )
    client.execute()
    assert "02_backward/backward.ipynb is not next to" in engine.outputs[-1]["evalue"]
    shutil.rmtree(work)


# ---- the self-paced edition: no due dates, the course's engines when the learner chooses ----


def test_self_paced_edition_ships_every_lessons_course_version_and_no_answer(tmp_path, capsys):
    """A learner on their own has no due dates to wait for: every lesson's course version
    is in course/ from the start; quizzes and sets ship unsolved, and the leak scan still
    guards them (only the lessons count as past)."""
    dest = tmp_path / "self-paced"
    assert edition.release(dest, self_paced=True) == 0
    lessons = [a for a in ASSIGNMENTS if kind(a) == "lesson"]
    course = dest / edition.COURSE_FOLDER
    assert sorted(p.name for p in course.iterdir() if p.is_dir()) == lessons
    assert sorted(p.name for p in (dest / "lessons").iterdir() if p.is_dir()) == ASSIGNMENTS
    assert json.loads((dest / edition.MARKER).read_text())["past"] == lessons
    assert "self-paced edition" in (course / "README.md").read_text()
    assert edition.leaks(dest) == []
    quiz = (dest / "lessons" / "04_checkpoint_engine" / "checkpoint_engine.ipynb").read_text()
    assert "q2 = dd_dc * v.b" not in quiz
    assert "past, with the course's version in course/: 01_value" in capsys.readouterr().out
    code = (
        "from coursekit import engine\n"
        'Value, MLP = engine("course", "Value", "MLP")\n'
        "x = Value(0.5)\n(x.tanh() * x).backward()\n"
        "print(round(x.grad, 6), len(MLP(2, [3, 1]).parameters()))\n"
    )
    folder = dest / "lessons" / "07_set_gradients"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    want = round(math.tanh(0.5) + 0.5 * (1 - math.tanh(0.5) ** 2), 6)  # d(x tanh x)/dx
    assert proc.stdout.splitlines()[-1] == f"{want} 13"


@pytest.mark.parametrize(
    "args, words",
    [
        (["--self-paced", "--upto", "03_activations"], "not allowed with argument"),
        (["--self-paced", "01_value"], "--self-paced releases every assignment"),
        (["--self-paced", "--solutions"], "are for the student edition"),
    ],
)
def test_self_paced_refuses_what_contradicts_it_in_one_line(tmp_path, args, words):
    proc = autograder_cli("release", "--to", str(tmp_path / "out"), *args)
    assert proc.returncode == 2 and words in proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()


# ---- the solutions download -------------------------------------------------------------


def test_solutions_download_is_separate_and_holds_no_grader_material(tmp_path):
    dest = tmp_path / "solutions"
    assert edition.release(dest, solutions=True) == 0
    assert not (dest / "lab.py").exists() and not (dest / "lessons").exists()
    for assignment in ASSIGNMENTS:
        for path in (SOLUTIONS / assignment).glob("*.ipynb"):
            assert (dest / assignment / path.name).read_bytes() == path.read_bytes()
    assert edition.leaks(dest, allow_solutions=True) == []
    text = (dest / "04_checkpoint_engine" / "checkpoint_engine.ipynb").read_text()
    assert "q2 = dd_dc * v.b" in text  # what self-learners came for
    assert "README.md" in files(dest)
    assert (dest / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()


def test_every_release_carries_the_licence(student):
    """Code MIT, course text CC BY 4.0, in the file and in the edition's README."""
    text = (student / "LICENSE").read_text()
    assert text == (ROOT / "LICENSE").read_text()
    assert "MIT License" in text and "CC BY 4.0" in text
    assert "CC BY 4.0" in (student / "README.md").read_text()


# ---- the launcher -------------------------------------------------------------------------


def test_launcher_seeds_lessons_and_start_page_and_never_overwrites_a_notebook(student, tmp_path):
    layout = launcher.Layout(student, work=tmp_path / "my-work")
    changed = launcher.seed(layout.work, layout.lessons, layout.start_page)
    assert "START-HERE.md" in changed and "01_value/value.ipynb" in changed
    mine = layout.work / "01_value" / "value.ipynb"
    mine.write_text("my answers")
    (layout.work / "01_value" / "coursekit.py").write_text("an old coursekit")
    again = launcher.seed(layout.work, layout.lessons, layout.start_page)
    assert again == ["01_value/coursekit.py"]
    assert mine.read_text() == "my answers"


def test_launcher_tells_the_student_what_it_added(student, tmp_path, capsys):
    layout = launcher.Layout(student, work=tmp_path / "my-work")
    launcher.seed_and_say(layout.work, layout.lessons, layout.start_page, "my-work")
    first = capsys.readouterr().out
    assert "new lesson notebook: my-work/01_value/value.ipynb" in first
    assert "course files copied or updated in my-work/:" in first
    launcher.seed_and_say(layout.work, layout.lessons, layout.start_page, "my-work")
    assert capsys.readouterr().out == (
        "Your notebooks are in my-work/ (your answers there are never overwritten).\n"
    )


def test_launcher_command_opens_the_start_page_on_this_machine_only(student, tmp_path):
    work = tmp_path / "my-work"
    launcher.seed(work, student / "lessons", student / "lessons" / "START-HERE.md")
    cmd = launcher.lab_command(work, student / "jupyter", ["--no-browser"])
    assert "--LabApp.default_url=/lab/tree/START-HERE.md" in cmd
    assert "--ServerApp.ip=127.0.0.1" in cmd and cmd[-1] == "--no-browser"
    assert f"--ServerApp.root_dir={work}" in cmd
    env = launcher.lab_env(student / "jupyter", {"PATH": "/usr/bin"})
    assert env["JUPYTER_CONFIG_PATH"].split(":")[0] == str(student / "jupyter")


def test_edition_launcher_check_runs_without_the_course(student, tmp_path):
    """``python lab.py --check --no-venv`` in a copy of the edition, far from the course:
    the blank lessons fail their checks (exit 1) with one short line each."""
    import shutil

    copy = tmp_path / "elsewhere" / "edition"
    shutil.copytree(student, copy)
    for folder in (copy / "lessons").iterdir():  # one lesson is enough, and quicker
        if folder.is_dir() and folder.name != "04_checkpoint_engine":
            shutil.rmtree(folder)
    proc = subprocess.run(
        [sys.executable, "lab.py", "--check", "--no-venv"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "0 of 13 exercises pass" in proc.stdout
    assert all(len(line) < 90 for line in proc.stdout.splitlines())


def test_launcher_refuses_an_old_python(monkeypatch, capsys):
    monkeypatch.setattr(launcher, "MIN_PYTHON", (9, 0))
    assert launcher.main(["--no-venv"]) == 1
    assert "needs Python 9.0" in capsys.readouterr().out


@pytest.mark.slow
def test_launcher_sets_up_its_venv_once(tmp_path):
    """A first start makes .venv and installs requirements.txt; the next one does neither
    (here with a requirements file that installs nothing, to stay offline and quick)."""
    layout = launcher.Layout(tmp_path)
    layout.requirements.write_text("# nothing to install\n")
    python = launcher.ensure_venv(layout)
    assert python == launcher.venv_python(layout.venv) and python.exists()
    (stamp,) = layout.venv.glob(".installed-*")
    before = stamp.stat().st_mtime_ns
    assert launcher.ensure_venv(layout) == python
    assert stamp.stat().st_mtime_ns == before
    layout.requirements.write_text("# changed: install again\n")
    launcher.ensure_venv(layout)
    assert len(list(layout.venv.glob(".installed-*"))) == 2
