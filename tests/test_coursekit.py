"""coursekit.py, the students' helper module, is in git once (``source/.shared/``); every
assignment folder gets it as a link (``course.place_coursekit``), and every way the course
reaches students or graders hands on a real file with the same bytes: nbgrader's release
to the exchange, the lab's working copy, the student edition, the grading material."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import NOTEBOOKS, ROOT, SOLUTIONS, SOURCE, ScratchCourse

from autograder.course import (
    KIT,
    KITS,
    QUIZ_KIT,
    SELF_CHECK_KIT,
    CoursekitError,
    assignments,
    kind,
    kit_files,
    link_coursekit,
    open_course,
    place_coursekit,
)

SHARED = SOURCE / ".shared" / KIT
ASSIGNMENTS = assignments()
A = "01_value"


def same_as_shared(path: Path) -> bool:
    return path.is_file() and path.read_bytes() == SHARED.read_bytes()


def test_git_holds_exactly_one_copy_of_each_kit_module():
    proc = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"not a git checkout: {proc.stderr.strip()}")
    course = ("source/", "notebooks/", "solutions/")
    kits = sorted(
        p for p in proc.stdout.splitlines() if p.startswith(course) and Path(p).name in KITS
    )
    assert kits == sorted(f"source/.shared/{name}" for name in KITS)


@pytest.mark.parametrize("top", [SOURCE, NOTEBOOKS, SOLUTIONS], ids=lambda p: p.name)
def test_the_quiz_kit_is_only_in_quiz_folders_and_the_self_check_in_all(top):
    for assignment in ASSIGNMENTS:
        folder = top / assignment
        quiz = kind(assignment) == "quiz"
        assert (folder / QUIZ_KIT).exists() == quiz, folder
        assert sorted(kit_files(assignment)) == sorted(
            [KIT, SELF_CHECK_KIT, *([QUIZ_KIT] if quiz else [])]
        )
        path = folder / SELF_CHECK_KIT
        assert path.read_bytes() == (SOURCE / ".shared" / SELF_CHECK_KIT).read_bytes(), path


@pytest.mark.parametrize("top", [SOURCE, NOTEBOOKS, SOLUTIONS], ids=lambda p: p.name)
def test_every_assignment_folder_has_the_shared_coursekit(top):
    """After placing (conftest does, as every command does), in source/, notebooks/ and
    solutions/: a relative link to source/.shared/coursekit.py."""
    assert place_coursekit() == []  # already placed: nothing to write
    for assignment in ASSIGNMENTS:
        path = top / assignment / KIT
        assert same_as_shared(path), path
        if os.name != "nt":
            assert path.is_symlink() and not os.path.isabs(os.readlink(path)), path
            assert path.resolve() == SHARED.resolve()


def scratch(root: Path) -> Path:
    """A course with two assignments in each folder and no coursekit placed yet."""
    (root / "source" / ".shared").mkdir(parents=True)
    shutil.copy(SHARED, root / "source" / ".shared" / KIT)
    for top in ("source", "notebooks", "solutions"):
        for name in ("01_a", "02_b"):
            (root / top / name).mkdir(parents=True)
            (root / top / name / "a.ipynb").write_text("a notebook")
    return root


def test_place_coursekit_links_missing_replaces_stale_and_keeps_right_ones(tmp_path):
    course = scratch(tmp_path / "course")
    (course / "notebooks" / "01_a" / KIT).write_text("an old coursekit")  # stale copy
    (course / "solutions" / "01_a" / KIT).symlink_to("../nowhere/coursekit.py")  # broken
    shutil.copy(SHARED, course / "solutions" / "02_b" / KIT)  # a right copy: kept
    written = place_coursekit(course)
    assert sorted(p.relative_to(course).as_posix() for p in written) == [
        "notebooks/01_a/coursekit.py",
        "notebooks/02_b/coursekit.py",
        "solutions/01_a/coursekit.py",
        "source/01_a/coursekit.py",
        "source/02_b/coursekit.py",
    ]
    for top in ("source", "notebooks", "solutions"):
        for name in ("01_a", "02_b"):
            assert same_as_shared(course / top / name / KIT)
            assert (course / top / name / "a.ipynb").read_text() == "a notebook"
    assert os.readlink(course / "source" / "01_a" / KIT) == "../.shared/coursekit.py"
    assert os.readlink(course / "notebooks" / "01_a" / KIT) == "../../source/.shared/coursekit.py"
    assert not (course / "solutions" / "02_b" / KIT).is_symlink()
    assert place_coursekit(course) == []
    assert sorted(p.name for p in (course / "source" / "01_a").iterdir()) == ["a.ipynb", KIT]

    moved = tmp_path / "moved"  # a copy of the course, links kept: they resolve inside it
    shutil.copytree(course, moved, symlinks=True)
    shutil.rmtree(course)
    assert place_coursekit(moved) == []
    assert (moved / "notebooks" / "02_b" / KIT).resolve().is_relative_to(moved.resolve())


def test_place_coursekit_says_in_one_line_what_it_cannot_do(tmp_path):
    course = scratch(tmp_path / "course")
    (course / "notebooks" / "02_b" / KIT).mkdir()
    with pytest.raises(CoursekitError) as info:
        place_coursekit(course)
    assert len(str(info.value).splitlines()) == 1
    assert "notebooks/02_b/coursekit.py is a folder" in str(info.value)
    assert place_coursekit(tmp_path / "no-course") == []  # no source/.shared/coursekit.py


def test_nbgrader_config_places_coursekit(tmp_path):
    """Loading nbgrader_config.py (every nbgrader command does) places coursekit."""
    from traitlets.config.loader import PyFileConfigLoader

    course = scratch(tmp_path / "course")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    for top in ("source", "notebooks", "solutions"):
        assert same_as_shared(course / top / "02_b" / KIT)


def test_source_digest_is_the_same_with_or_without_the_link(tmp_path):
    """check-generated is not confused by coursekit: the digest hashes the shared file as
    the assignment's coursekit.py whether the link is there, missing, or a stale copy."""
    from autograder.content.generate import source_digest

    expected = source_digest(A)
    source = tmp_path / "source"
    shutil.copytree(SOURCE / ".shared", source / ".shared")
    shutil.copytree(SOURCE / A, source / A, symlinks=True, ignore=shutil.ignore_patterns(KIT))
    assert source_digest(A, source) == expected  # no link yet
    (source / A / KIT).write_text("an old coursekit")
    assert source_digest(A, source) == expected
    (source / ".shared" / KIT).write_text("a new coursekit")
    assert source_digest(A, source) != expected  # coursekit is part of the digest


def test_lab_working_copy_gets_coursekit_as_a_file(tmp_path):
    from autograder.students import lab

    work = tmp_path / "my-work"
    lab.seed(work, NOTEBOOKS)
    for assignment in ASSIGNMENTS:
        path = work / assignment / KIT
        assert not path.is_symlink() and same_as_shared(path), path


def test_grading_material_holds_coursekit(tmp_path):
    from autograder.worker.material import material_files

    template = tmp_path / "template.db"
    template.write_bytes(b"a template gradebook")
    files = material_files(open_course(), A, template, shared={})
    assert files[f"source/{A}/coursekit.py"] == SHARED.read_bytes()


@pytest.mark.slow
def test_nbgrader_release_assignment_hands_students_a_real_coursekit(tmp_path):
    """In a course copied without coursekit in source/<assignment>/ (as a fresh clone),
    real nbgrader: generate_assignment (its config places the link first), then, with
    notebooks/<assignment>/coursekit.py a link as `generate` leaves it,
    release_assignment into an exchange: the released folder holds a regular file."""
    course = ScratchCourse(tmp_path / "course", [A])
    (course.path / "source" / A / KIT).unlink()
    released = course.release(A)
    assert (course.path / "source" / A / KIT).is_symlink()
    assert same_as_shared(released / KIT)
    link_coursekit(released, course.path / "source" / ".shared" / KIT, keep_copy=False)
    assert (released / KIT).is_symlink()
    assert (released / KIT).resolve().is_relative_to(course.path.resolve())

    exchange = tmp_path / "exchange"
    course.nbgrader("release_assignment", A, f"--Exchange.root={exchange}")
    outbound = exchange / "autograd-from-scratch" / "outbound" / A
    assert sorted(p.name for p in outbound.iterdir()) == sorted(p.name for p in released.iterdir())
    kit = outbound / KIT
    assert kit.is_file() and not kit.is_symlink()
    assert same_as_shared(kit)
