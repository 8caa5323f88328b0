"""What the grader and its workers tell each other, as typed values.

The grader sends a Dask task a ``Job`` (one submission to grade, its files carried as
bytes); the task answers with a ``Result``: for each notebook whether nbgrader graded it,
the ``Event``s of its run (a cell that timed out, a kernel that died...), ``Note``s for
the student and the autograded files as bytes. While it runs, the task reports
``Progress``. Nothing here names a path on the grader's machine: a worker can be on any
machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .kernel.limits import Limits


@dataclass
class Note:
    """One line for the student and the instructor about a submission."""

    text: str
    problem: bool = False  # the grade is not (only) the result of the tests


@dataclass
class Event:
    """Something that happened while a notebook ran.

    ``kind`` is one of: died (the kernel died), stuck (a cell ignored the interrupt),
    timeout (a cell hit the per-cell limit), wall (the notebook's limit ran out), memory
    (a MemoryError, or the OOM killer at the kernel's bound; a kernel it killed dies with
    ``detail`` "memory"), processes (a fork refused at the kernel's bound), output (output
    was cut), skipped (a cell was skipped, as asked), grader (a hidden test
    could not check the kernel's answer), forged (the kernel answered a hidden test as
    honest code never does: ``detail`` says how; a reason for review, answers.py); and, for
    a cell skipped in a later run, lost (the grading worker itself died in that cell)."""

    kind: str
    cell: int | None  # the cell's index in the notebook as run
    grade_id: str | None = None
    notebook: str | None = None  # set when the event is kept across runs
    detail: str | None = None


@dataclass
class File:
    """A file, carried between machines: its bytes (None when only its name and size
    travel: a file that is listed but never read), size, modification time and mode."""

    data: bytes | None
    size: int
    mtime: float = 0.0
    mode: int = 0o644


def read_files(
    folder: Path, paths: list[Path], send: Callable[[Path], bool] = lambda path: True
) -> dict[str, File]:
    """``paths`` (files in ``folder``) as Files, with their bytes when ``send(path)``."""
    out = {}
    for path in paths:
        st = path.stat()
        data = path.read_bytes() if send(path) else None
        out[path.relative_to(folder).as_posix()] = File(
            data, st.st_size, st.st_mtime, st.st_mode & 0o777
        )
    return out


def write_files(files: dict[str, File], folder: Path) -> None:
    """Files into ``folder``; a file without bytes is written as a sparse file of its size
    (what is listed but never read keeps its name and size)."""
    for rel, f in files.items():
        path = folder / rel
        if not path.resolve().is_relative_to(folder.resolve()):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            if f.data is not None:
                fh.write(f.data)
            else:
                fh.truncate(f.size)
        os.utime(path, (f.mtime, f.mtime))
        os.chmod(path, f.mode or 0o644)


@dataclass
class NotebookResult:
    """How one of the assignment's notebooks went."""

    notes: list[Note] = field(default_factory=list)
    used_file: str | None = None  # the submitted file graded as this notebook
    graded: bool = False  # nbgrader wrote an autograded notebook
    events: list[Event] = field(default_factory=list)
    error: str | None = None  # why nbgrader could not grade it (one line)
    log: str | None = None  # the end of nbgrader's log, when it failed
    isolation: str | None = None  # the kernel's isolation (sandbox.py), if one ran


@dataclass
class Job:
    """One submission for a worker to grade: everything it needs besides the grading
    material (``material`` is its digest: the worker refuses other material)."""

    id: int
    student: str
    assignment: str
    course_id: str
    material: str  # digest of the grading material (see material.py)
    files: dict[str, File]  # the submitted folder: path inside it -> file
    limits: Limits = field(default_factory=Limits)
    skip: dict[str, list[int]] = field(default_factory=dict)  # notebook -> cells not to run
    history: list[Event] = field(default_factory=list)  # why those cells are skipped
    attempt: int = 1  # the number of this job's first run
    owners: dict[str, str] = field(default_factory=dict)  # grade id -> its assignment
    released: list[str] = field(default_factory=list)  # files students were given
    seed: int = 0  # the hidden tests draw this submission's inputs from it
    topic: str = ""  # where the task reports its Progress (a Dask event topic)
    careful: bool = False  # report each cell before it runs, and wait (it killed workers)

    @property
    def label(self) -> str:
        return f"{self.student}/{self.assignment}"


@dataclass
class Result:
    """What grading one submission gave: per notebook, and notes about the folder."""

    notebooks: dict[str, NotebookResult] = field(default_factory=dict)
    folder_notes: list[Note] = field(default_factory=list)
    autograded: dict[str, File] = field(default_factory=dict)  # the autograded folder
    seconds: float = 0.0
    crash: str | None = None  # the grader itself failed (a traceback)
    record: bool = True  # False: not recorded, so the next run grades it again
    history: list[Event] = field(default_factory=list)  # cells skipped in later runs, why
    runs: int = 1  # runs of the notebooks it took (the last run's number)

    @classmethod
    def failed(cls, why: str, *, again: bool) -> Result:
        """Nothing was graded, for the reason ``why``. With ``again`` the submission is not
        recorded (the next run grades it again); otherwise it scores zero."""
        if again:
            note = Note(f"not graded: {why} (it will be graded again next run)", True)
        else:
            note = Note(f"{why}: 0 points for what was not graded", True)
        return cls(folder_notes=[note], record=not again)

    @property
    def graded(self) -> set[str]:
        """The notebooks nbgrader graded."""
        return {name for name, nb in self.notebooks.items() if nb.graded}

    @property
    def isolation(self) -> str | None:
        """The weakest isolation any of its kernels ran under (None: no kernel ran)."""
        levels = {nb.isolation for nb in self.notebooks.values() if nb.isolation}
        return "none" if "none" in levels else min(levels, default=None)

    def stops(self) -> list[Event]:
        """Events that stopped a notebook early (a dead or stuck kernel), with the notebook."""
        return [
            Event(e.kind, e.cell, e.grade_id, name, e.detail)
            for name, nb in self.notebooks.items()
            for e in nb.events
            if e.kind in ("died", "stuck")
        ]


@dataclass
class Progress:
    """Where a job is: its run, and the cell being run (``cells`` in the notebook). It
    travels as a Dask event, so on the wire it is a plain list (``to_wire``)."""

    job: int
    attempt: int
    worker: str
    notebook: str = ""
    cell: int = 0
    cells: int = 0

    def to_wire(self) -> list:
        return [self.job, self.attempt, self.worker, self.notebook, self.cell, self.cells]

    @classmethod
    def from_wire(cls, msg) -> Progress:
        job, attempt, worker, notebook, cell, cells = msg
        return cls(int(job), int(attempt), str(worker), str(notebook), int(cell), int(cells))
