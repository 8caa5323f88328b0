"""Flags for review (autograder/review.py): what they catch, and no flag for honest work.

(tests/test_feedback.py checks, end to end, that a flag reaches the record, the class table
and grades.csv without changing the score or the exit code.)"""

import json
from pathlib import Path

import nbformat
import pytest
from helpers import NOTEBOOKS, SOLUTIONS, SOURCE, notebook_path
from nbformat.v4 import new_code_cell

from autograder import demo
from autograder.review import flag_code, flag_notebook, flag_submission, given_code

ASSIGNMENTS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir()
                     and any(p.glob("*.ipynb")))
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


@pytest.mark.parametrize("code, reasons", [
    ("import torch", ["imports torch"]),
    ("import torch.nn.functional as F", ["imports torch"]),
    ("from micrograd.engine import Value", ["imports micrograd"]),
    ("import jax.numpy as jnp", ["imports jax"]),
    ("import refgrad", ["imports refgrad"]),
    ("from refgrad.nn import MLP", ["imports refgrad"]),
    ("import autograder.hidden", ["imports autograder"]),
    ("import gc\nobjects = gc.get_objects()", ["calls gc.get_objects"]),
    ("from gc import get_referrers as refs\nrefs(x)", ["calls gc.get_referrers"]),
    ("import sys\nframe = sys._getframe(1)", ["uses sys._getframe"]),
    ("import sys as s\ns._getframe(0).f_back", ["uses sys._getframe", "inspects stack frames"]),
    ("import inspect\ninspect.currentframe()", ["inspects the call stack"]),
    ("import sys\nsys.settrace(tracer)", ["sets a trace function"]),
    ("import ctypes\nctypes.string_at(0)", ["uses ctypes"]),
    ("ip = get_ipython()\nip.input_transformers_cleanup.append(rewrite)",
     ["uses IPython input transformers"]),
    ("get_ipython().ast_transformers.append(t)", ["uses IPython input transformers"]),
    ("from IPython.core.inputtransformer2 import TransformerManager",
     ["uses IPython input transformers"]),
    ("get_ipython().events.register('post_run_cell', hook)", ["registers IPython events"]),
    ("import os\nos.kill(os.getppid(), 9)", ["calls os.kill"]),
    ("from os import kill\nkill(1, 9)", ["calls os.kill"]),
    ("import os\nos.system('ls')", ["runs shell commands"]),
    ("import subprocess\nsubprocess.run(['ls'])", ["uses subprocess"]),
    ("import sqlite3\nsqlite3.connect('gradebook.db')",
     ["uses sqlite3", "mentions the grader's files"]),
    ("load_grader('01_value')", ["mentions load_grader"]),
    ("print(load_grader.__defaults__)", ["mentions load_grader"]),
    ("text = open('source/.reference/refgrad/engine.py').read()",
     ["mentions refgrad", "mentions the grader's files"]),
    ("import builtins\nbuiltins.abs = lambda x: 0.0", ["patches builtins"]),
    ("import math\nmath.isclose = lambda *a, **k: True", ["patches math"]),
    ("import sys\nsys.modules['refgrad'] = fake", ["uses sys.modules", "mentions refgrad"]),
    # the same, hidden a little
    ("__import__('torch')", ["imports torch"]),
    ("import importlib\nimportlib.import_module('micrograd.engine')", ["imports micrograd"]),
    ("from importlib import import_module as im\nim('ctypes')", ["uses ctypes"]),
    ("import sys\ngetattr(sys, '_getframe')(1)", ["uses sys._getframe"]),
    ("import gc\nf = getattr(gc, 'get_' + 'objects')", []),  # not a constant: not seen
    ("import os\ngetattr(os, 'kill')(1, 9)", ["calls os.kill"]),
    ("exec('import torch')", ["imports torch"]),
    ("vars(sys)['_getframe']", ["uses sys._getframe"]),
    # IPython syntax is set aside, and what %time runs is read
    ("!pip install torch", ["runs shell commands"]),
    ("files = !ls", ["runs shell commands"]),
    ("%%bash\nkill -9 $PPID", ["runs shell commands"]),
    ("%time import torch", ["imports torch"]),
    ("%%timeit\nimport gc\ngc.get_objects()", ["calls gc.get_objects"]),
    ("%matplotlib inline\nimport math\nprint(math.pi)", []),
    ("for i in range(3):\n    %time f(i)\nx = 1", []),
    # code that does not parse is searched as text
    ("def broken(:\n    import torch\n    os.kill(1, 9)", ["imports torch", "calls os.kill"]),
    # honest code
    ("import math, random, time\nimport numpy as np\nimport matplotlib.pyplot as plt", []),
    ("import gc\ngc.collect()\ngc.disable()", []),
    ("print('the autograder will check this; see events.register in the docs')", []),
    ("Value.__add__ = add\nself.grad += out.grad", []),
])
def test_what_is_flagged(code, reasons):
    assert flag_code(code) == reasons


def test_only_code_the_student_wrote_counts(tmp_path):
    """A course cell importing torch is the course's; the same import typed by the student
    in a cell of their own is flagged, and an edited course cell is the student's."""
    source = tmp_path / "source" / A
    source.mkdir(parents=True)
    nb = nbformat.read(notebook_path(SOURCE, A), as_version=4)
    given_cell = new_code_cell("import torch  # to compare with, given by the course")
    given_cell.metadata["nbgrader"] = {"grade_id": "given_torch", "locked": True,
                                       "grade": False, "solution": False}
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
    assert flag_submission(folder, source) == ["imports torch", "uses ctypes"]


def test_flagging_never_fails(tmp_path):
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "value.ipynb").write_text('{"cells": [')
    (folder / "other.ipynb").write_bytes(b"\xff\xfe\x00binary")
    (folder / "odd.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["import ", "torch"]}, "not a cell",
        {"cell_type": "code", "source": 3}, {"cell_type": "code"}]}))
    (folder / "v3.ipynb").write_text(json.dumps({"worksheets": [{"cells": [
        {"cell_type": "code", "input": "import micrograd"}]}]}))
    (folder / "deep.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": "x = " + "(" * 5000 + ")" * 5000}]}))
    assert flag_submission(folder, SOURCE / A) == ["imports torch", "imports micrograd"]
    assert flag_submission(folder, SOURCE / A, ["value.ipynb", "missing.ipynb"]) == []
    assert flag_submission(Path("/nonexistent"), SOURCE / A) == []
