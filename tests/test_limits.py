"""``Limits`` is traitlets configuration (``c.Limits.<name>`` in nbgrader_config.py): what
``grade``, ``nbgrader autograde`` and formgrader read alike, and what travels to a grading
worker inside a ``Job``."""

from __future__ import annotations

import pickle
import time

import cloudpickle
import nbformat
import pytest
from helpers import SOLUTIONS, ScratchCourse, notebook_path
from traitlets.config import Config

from autograder.course import nbgrader_config
from autograder.kernel.limits import GiB, LimitError, Limits
from autograder.kernel.sandbox import LimitedKernelManager
from autograder.messages import Job

A = "01_value"


def course_config(**limits) -> Config:
    """A configuration as nbgrader_config.py gives it: ``c.Execute.timeout`` and
    ``c.Limits`` set to ``limits``."""
    config = Config()
    config.Execute.timeout = 25
    for name, value in limits.items():
        setattr(config.Limits, name, value)
    return config


def test_limits_are_read_from_c_limits():
    limits = Limits(config=course_config(wall=8, memory="2G", sandbox="off", cpus=0.5))
    assert (limits.wall, limits.memory, limits.sandbox, limits.cpus) == (8, 2 * GiB, "off", 0.5)
    assert limits.output == Limits().output  # what the configuration leaves out: the default


def test_limits_given_on_nbgrader_s_command_line_are_read_too():
    from traitlets.config.loader import KVArgParseConfigLoader

    config = KVArgParseConfigLoader(["--Limits.memory=2G", "--Limits.wall=8"]).load_config()
    assert (Limits(config=config).memory, Limits(config=config).wall) == (2 * GiB, 8)


def test_the_per_cell_limit_is_execute_timeout_unless_c_limits_sets_one():
    assert Limits().cell_timeout == 60
    assert Limits(config=course_config()).cell_timeout == 25
    assert Limits(config=course_config(cell_timeout=40)).cell_timeout == 40


def test_for_course_gives_defaults_then_the_course_then_the_command_line():
    config = course_config(wall=200, attempts=5)
    limits = Limits.for_course(config, wall=100, memory=None, cell_timeout=None)
    assert (limits.cell_timeout, limits.wall, limits.attempts) == (25, 100, 5)
    assert limits.memory == Limits().memory
    assert Limits.for_course(None, cell_timeout=5).cell_timeout == 5
    assert Limits.for_course({"Limits": {"wall": 7}}).wall == 7  # a plain dict is fine too


def test_the_courses_nbgrader_config_gives_the_defaults_its_comment_claims():
    assert Limits.for_course(nbgrader_config()) == Limits()


def test_limits_pickle_as_their_values_alone():
    limits = Limits(config=course_config(wall=9), memory=2 * GiB)
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        back = loads(dumps(limits))
        assert back == limits and back.config == Config()
    job = Job(1, "ann", A, "course", "digest", {}, limits=limits)
    assert cloudpickle.loads(cloudpickle.dumps(job)).limits == limits


def test_equality_keywords_repr_and_replace():
    limits = Limits(cell_timeout=10, wall=240)
    assert limits == Limits(**limits.as_dict()) and limits != Limits()
    assert repr(limits).startswith("Limits(cell_timeout=10, wall=240, memory=")
    assert limits.replace(sandbox="off") == Limits(cell_timeout=10, wall=240, sandbox="off")
    assert limits.sandbox == "auto"
    with pytest.raises(TypeError, match="no wal"):
        Limits(wal=10)


@pytest.mark.parametrize(
    "setting, value", [("memory", "lots"), ("wall", -5), ("sandbox", "maybe"), ("cpus", 0)]
)
def test_a_bad_setting_is_one_line_naming_it(setting, value):
    with pytest.raises(LimitError) as raised:
        Limits(config=course_config(**{setting: value}))
    said = str(raised.value)
    assert said.startswith(f"bad limit c.Limits.{setting} ") and "\n" not in said, said


def test_the_kernel_manager_reads_the_limits_of_its_configuration():
    config = course_config(memory="1G", message="8M")
    assert LimitedKernelManager(config=config).limits == Limits(config=config)
    assert LimitedKernelManager().limits == Limits()


def test_a_workers_configuration_carries_the_jobs_limits_over_the_courses(tmp_path):
    from autograder.course import ROOT
    from autograder.worker.task import Worker

    job = Job(1, "ann", A, "course", "digest", {}, limits=Limits(wall=11, sandbox="off"))
    config = Worker().config(job, ROOT, tmp_path, "value", {}, "token")
    assert Limits(config=config) == job.limits


def autograde_with(tmp_path, settings: str, first_cell: str):
    """``nbgrader autograde`` (as formgrader's button runs it) of the solution with
    ``first_cell`` on top, in a course whose nbgrader_config.py ends with ``settings``:
    (seconds it took, the text of each cell's outputs)."""
    course = ScratchCourse(tmp_path / "course", [A])
    with (course.path / "nbgrader_config.py").open("a") as config:
        config.write(f"\n{settings}\n")
    course.release(A)
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(first_cell))
    course.submit("student", A, nb)
    started = time.monotonic()
    course.nbgrader("autograde", A, "--student", "student", "--force")
    seconds = time.monotonic() - started
    graded = course.autograded("student", A)
    said = [
        " ".join(str(o.get(k, "")) for o in c.get("outputs", []) for k in ("ename", "evalue"))
        for c in graded.cells
    ]
    return seconds, said


@pytest.mark.slow
def test_nbgrader_autograde_stops_an_endless_loop_at_the_configured_wall_limit(tmp_path):
    """An endless loop is stopped by c.Limits.wall (8 s), long before the 120 s per-cell
    limit, and the notebook says so. (The CPU limit, by default the wall limit's seconds,
    is raised so that it is the wall limit that stops the loop.)"""
    settings = "c.Limits.wall = 8\nc.Limits.cell_timeout = 120\nc.Limits.cpu_time = 600"
    seconds, said = autograde_with(tmp_path, settings, "while True:\n    pass")
    assert seconds < 60, seconds
    assert "the notebook's time limit ran out during this cell" in said[0], said[0]
    assert any("used up its 8 s time limit" in text for text in said[1:]), said


@pytest.mark.slow
def test_nbgrader_autograde_holds_a_kernel_to_the_configured_memory(tmp_path):
    """c.Limits.memory applies to the kernels of ``nbgrader autograde`` too: 2 GiB cannot
    be had under a 1 GiB limit, and the rest of the notebook is graded."""
    _, said = autograde_with(tmp_path, 'c.Limits.memory = "1G"', "hog = bytearray(2 * 1024**3)")
    assert "MemoryError" in said[0], said[0]
    assert not any("MemoryError" in text for text in said[1:]), said
