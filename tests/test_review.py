"""Flags for review (autograder/grade/review/): what they catch, and no flag for honest work.

(tests/test_feedback.py checks, end to end, that a flag reaches the record, the class table
and grades.csv without changing the score or the exit code.)"""

import json
from pathlib import Path

import nbformat
import pytest
from helpers import NOTEBOOKS, SOLUTIONS, SOURCE, notebook_path
from nbformat.v4 import new_code_cell

from autograder import demo
from autograder.grade.review.flags import flag_code, flag_notebook, flag_submission, given_code
from autograder.grade.review.rules import ENGINE, GRADER, HIDDEN, KERNEL, PROCESS
from autograder.grade.review.rules import INTROSPECTION as INTRO

ASSIGNMENTS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
A = "01_value"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_honest_work_is_never_flagged(assignment, tmp_path):
    """The solutions, the release and every student of the demo class: nothing flagged."""
    given = given_code(str(SOURCE / assignment))
    for folder in (SOLUTIONS, NOTEBOOKS):
        nb = nbformat.read(notebook_path(folder, assignment), as_version=4)
        assert flag_notebook(nb, given) == [], folder
    for student, files in demo.submissions_for(assignment).items():
        sub = tmp_path / student
        sub.mkdir()
        for name, data in files.items():
            (sub / name).write_bytes(data)
        assert flag_submission(sub, SOURCE / assignment) == [], student


@pytest.mark.parametrize(
    "code, reasons",
    [
        ("import torch", [f"imports torch: {ENGINE}"]),
        ("import torch.nn.functional as F", [f"imports torch.nn.functional: {ENGINE}"]),
        ("from micrograd.engine import Value", [f"imports micrograd.engine: {ENGINE}"]),
        ("import jax.numpy as jnp", [f"imports jax.numpy: {ENGINE}"]),
        ("import refgrad", [f"imports refgrad: {GRADER}"]),
        ("from refgrad.nn import MLP", [f"imports refgrad.nn: {GRADER}"]),
        ("import autograder.verdicts.hidden", [f"imports autograder.verdicts.hidden: {GRADER}"]),
        ("import gc\nobjects = gc.get_objects()", [f"calls gc.get_objects: {INTRO}"]),
        (
            "from gc import get_referrers as refs\nrefs(x)",
            [f"imports gc.get_referrers: {INTRO}", f"calls gc.get_referrers: {INTRO}"],
        ),
        ("import sys\nframe = sys._getframe(1)", [f"calls sys._getframe: {INTRO}"]),
        (
            "import sys as s\ns._getframe(0).f_back",
            [f"calls sys._getframe: {INTRO}", f"uses f_back: {INTRO}"],
        ),
        ("import inspect\ninspect.currentframe()", [f"calls inspect.currentframe: {INTRO}"]),
        ("import sys\nsys.settrace(tracer)", [f"calls sys.settrace: {KERNEL}"]),
        ("import ctypes\nctypes.string_at(0)", [f"imports ctypes: {INTRO}"]),
        (
            "ip = get_ipython()\nip.input_transformers_cleanup.append(rewrite)",
            [f"uses input_transformers_cleanup: {KERNEL}"],
        ),
        ("get_ipython().ast_transformers.append(t)", [f"uses ast_transformers: {KERNEL}"]),
        (
            "from IPython.core.inputtransformer2 import TransformerManager",
            [f"imports IPython.core.inputtransformer2: {KERNEL}"],
        ),
        (
            "get_ipython().events.register('post_run_cell', hook)",
            [f"uses get_ipython().events: {KERNEL}", f"registers IPython events: {KERNEL}"],
        ),
        (
            "import os\nos.kill(os.getppid(), 9)",
            [f"calls os.kill: {PROCESS}", f"calls os.getppid: {PROCESS}"],
        ),
        (
            "from os import kill\nkill(1, 9)",
            [f"imports os.kill: {PROCESS}", f"calls os.kill: {PROCESS}"],
        ),
        ("import os\nos.system('ls')", [f"calls os.system: {PROCESS}"]),
        ("import subprocess\nsubprocess.run(['ls'])", [f"imports subprocess: {PROCESS}"]),
        (
            "import sqlite3\nsqlite3.connect('gradebook.db')",
            [f"imports sqlite3: {PROCESS}", f"mentions gradebook.db: {GRADER}"],
        ),
        ("load_grader('01_value')", [f"uses load_grader: {GRADER}"]),
        (
            "print(load_grader.__defaults__)",
            [f"uses load_grader: {GRADER}", f"uses __defaults__: {INTRO}"],
        ),
        (
            "text = open('source/.reference/refgrad/engine.py').read()",
            [f"mentions refgrad: {GRADER}", f"mentions .reference: {GRADER}"],
        ),
        (
            "import builtins\nbuiltins.abs = lambda x: 0.0",
            [f"imports builtins: {KERNEL}", f"patches builtins: {KERNEL}"],
        ),
        ("import math\nmath.isclose = lambda *a, **k: True", [f"patches math: {KERNEL}"]),
        (
            "import sys\nsys.modules['refgrad'] = fake",
            [f"uses sys.modules: {INTRO}", f"mentions refgrad: {GRADER}"],
        ),
        # the same, hidden a little
        ("__import__('torch')", [f"imports torch: {ENGINE}"]),
        (
            "import importlib\nimportlib.import_module('micrograd.engine')",
            [f"imports micrograd.engine: {ENGINE}"],
        ),
        ("from importlib import import_module as im\nim('ctypes')", [f"imports ctypes: {INTRO}"]),
        ("import sys\ngetattr(sys, '_getframe')(1)", [f"calls sys._getframe: {INTRO}"]),
        (
            "import gc\nf = getattr(gc, 'get_' + 'objects')",
            [f"uses gc.get_objects: {INTRO}"],
        ),  # built from constants: worked out
        ("import os\ngetattr(os, 'kill')(1, 9)", [f"calls os.kill: {PROCESS}"]),
        ("exec('import torch')", [f"imports torch: {ENGINE}"]),
        ("vars(sys)['_getframe']", [f"uses sys._getframe: {INTRO}"]),
        (
            "import gc\nf = getattr(gc, name)",
            [f"calls getattr on gc with a name made at run time: {HIDDEN}"],
        ),
        # IPython syntax is set aside, and what %time runs is read
        ("!pip install torch", [f"runs shell commands: {PROCESS}"]),
        ("files = !ls", [f"runs shell commands: {PROCESS}"]),
        ("%%bash\nkill -9 $PPID", [f"runs %%bash: {PROCESS}"]),
        ("%time import torch", [f"imports torch: {ENGINE}"]),
        ("%%timeit\nimport gc\ngc.get_objects()", [f"calls gc.get_objects: {INTRO}"]),
        ("%matplotlib inline\nimport math\nprint(math.pi)", []),
        ("for i in range(3):\n    %time f(i)\nx = 1", []),
        # code that does not parse is searched as text
        (
            "def broken(:\n    import torch\n    os.kill(1, 9)",
            [f"imports torch: {ENGINE}", f"uses os.kill: {PROCESS}"],
        ),
        # honest code
        ("import math, random, time\nimport numpy as np\nimport matplotlib.pyplot as plt", []),
        ("import gc\ngc.collect()\ngc.disable()", []),
        ("print('the autograder will check this; see events.register in the docs')", []),
        ("Value.__add__ = add\nself.grad += out.grad", []),
    ],
)
def test_what_is_flagged(code, reasons):
    assert flag_code(code) == reasons


def test_only_code_the_student_wrote_counts(tmp_path):
    """A course cell importing torch is the course's; the same import typed by the student
    in a cell of their own is flagged, and an edited course cell is the student's."""
    source = tmp_path / "source" / A
    source.mkdir(parents=True)
    nb = nbformat.read(notebook_path(SOURCE, A), as_version=4)
    given_cell = new_code_cell("import torch  # to compare with, given by the course")
    given_cell.metadata["nbgrader"] = {
        "grade_id": "given_torch",
        "locked": True,
        "grade": False,
        "solution": False,
    }
    nb.cells.insert(2, given_cell)
    nbformat.write(nb, source / notebook_path(SOURCE, A).name)
    submission = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    submission.cells.insert(2, nbformat.from_dict(json.loads(json.dumps(given_cell))))
    folder = tmp_path / "alice"
    folder.mkdir()
    name = notebook_path(SOLUTIONS, A).name
    nbformat.write(submission, folder / name)
    assert flag_submission(folder, source) == []
    submission.cells[2].source += "\nimport ctypes"
    nbformat.write(submission, folder / name)
    assert flag_submission(folder, source) == [
        f"cell 3, line 1: imports torch: {ENGINE}",
        f"cell 3, line 2: imports ctypes: {INTRO}",
    ]


def test_flagging_never_fails(tmp_path):
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "value.ipynb").write_text('{"cells": [')
    (folder / "other.ipynb").write_bytes(b"\xff\xfe\x00binary")
    (folder / "odd.ipynb").write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "code", "source": ["import ", "torch"]},
                    "not a cell",
                    {"cell_type": "code", "source": 3},
                    {"cell_type": "code"},
                ]
            }
        )
    )
    (folder / "v3.ipynb").write_text(
        json.dumps(
            {"worksheets": [{"cells": [{"cell_type": "code", "input": "import micrograd"}]}]}
        )
    )
    (folder / "deep.ipynb").write_text(
        json.dumps({"cells": [{"cell_type": "code", "source": "x = " + "(" * 5000 + ")" * 5000}]})
    )
    assert flag_submission(folder, SOURCE / A) == [
        f"odd.ipynb cell 1, line 1: imports torch: {ENGINE}",
        f"v3.ipynb cell 1, line 1: imports micrograd: {ENGINE}",
    ]
    assert flag_submission(folder, SOURCE / A, ["value.ipynb", "missing.ipynb"]) == []
    assert flag_submission(Path("/nonexistent"), SOURCE / A) == []
