"""What the grader and its workers tell each other, as typed values.

The grader sends a worker a ``Job`` (one submission to grade); the worker answers with a
``Result``: for each notebook whether nbgrader graded it, the ``Event``s of its run (a
cell that timed out, a kernel that died...) and ``Note``s for the student. Both travel as
JSON (``to_json``/``from_json``), so a worker can be any process.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass
class Note:
    """One line for the student and the instructor about a submission."""

    text: str
    problem: bool = False  # the grade is not (only) the result of the tests


@dataclass
class Event:
    """Something that happened while a notebook ran.

    ``kind`` is one of: died (the kernel died), stuck (a cell ignored the interrupt),
    timeout (a cell hit the per-cell limit), wall (the notebook's limit ran out), memory,
    output (output was cut), skipped (a cell was skipped, as asked), grader (a hidden test
    could not check the kernel's answer)."""

    kind: str
    cell: int | None  # the cell's index in the notebook as run
    grade_id: str | None = None
    notebook: str | None = None  # set when the event is kept across runs


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

    @classmethod
    def from_dict(cls, d: dict) -> NotebookResult:
        return cls(
            notes=[Note(**n) for n in d.get("notes", [])],
            used_file=d.get("used_file"),
            graded=bool(d.get("graded")),
            events=[Event(**e) for e in d.get("events", [])],
            error=d.get("error"),
            log=d.get("log"),
            isolation=d.get("isolation"),
        )


@dataclass
class Job:
    """One submission for a worker to grade, in a private course under ``dir``."""

    id: int
    dir: str  # the job's scratch folder (the worker writes result.json and progress here)
    student: str
    assignment: str
    submission: str  # submitted/<student>/<assignment>/
    template: str  # a SQLite gradebook that knows the assignment's cells
    source: str  # the course's source/ folder
    course_id: str
    skip: dict[str, list[int]] = field(default_factory=dict)  # notebook -> cells not to run
    owners: dict[str, str] = field(default_factory=dict)  # grade id -> its assignment
    released: list[str] = field(default_factory=list)  # files students were given
    seed: int = 0  # the hidden tests draw this submission's inputs from it

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        return cls(**json.loads(text))


@dataclass
class Result:
    """What grading one submission gave: per notebook, and notes about the folder."""

    notebooks: dict[str, NotebookResult] = field(default_factory=dict)
    folder_notes: list[Note] = field(default_factory=list)
    autograded: str | None = None  # the folder of autograded notebooks, if any
    seconds: float = 0.0
    crash: str | None = None  # the grader itself failed (a traceback)
    record: bool = True  # False: not recorded, so the next run grades it again

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
        return [Event(e.kind, e.cell, e.grade_id, name) for name, nb in self.notebooks.items()
                for e in nb.events if e.kind in ("died", "stuck")]

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Result:
        d = json.loads(text)
        return cls(
            notebooks={k: NotebookResult.from_dict(v) for k, v in d.get("notebooks", {}).items()},
            folder_notes=[Note(**n) for n in d.get("folder_notes", [])],
            autograded=d.get("autograded"),
            seconds=d.get("seconds", 0.0),
            crash=d.get("crash"),
            record=d.get("record", True),
        )
