"""The probe's guard (probe/runtime.py) in a real grading kernel: each way of installing a
forger that reaches for the probe's key, table or frames is refused and recorded, and the
grade follows: every hidden test decided after it scores 0 with a note naming the line,
even in a notebook whose own code is the course's solution."""

import nbformat
import pytest
from helpers import SOLUTIONS, grade_id, grade_in_kernel, is_test_cell, notebook_path

A = "01_value"

# Each route a forger has to the probe's internals (the list, and more members).
FORGERS = {
    "reads the key through the garbage collector": """
import gc
stolen = [o for o in gc.get_objects() if isinstance(o, bytes) and len(o) == 32]
""",
    "replaces the table through a frame in a step": """
import sys
_real = Value.__mul__
def _mul(self, other):
    sys._getframe(1).f_globals["OPERATIONS"].clear()
    return _real(self, other)
Value.__mul__ = _mul
""",
    "an at-fork hook walks up to the probe's frame": """
import os, sys
def _hook():
    frame = sys._getframe()
    while frame is not None:
        frame.f_globals.get("OPERATIONS", {}).clear()
        frame = frame.f_back
os.register_at_fork(after_in_child=_hook)
""",
    "an audit hook of its own": """
import sys
def _spy(event, args):
    if event == "autograder.probe":
        print(args)
sys.addaudithook(_spy)
""",
    "a thread started before the fork reads other frames": """
import sys, threading, time
def _watch():
    for _ in range(200):
        for frame in sys._current_frames().values():
            frame.f_locals
        time.sleep(0.01)
threading.Thread(target=_watch, daemon=True).start()
""",
    "a traceback's frame from inside a step": """
_real_add = Value.__add__
def _add(self, other):
    try:
        raise ZeroDivisionError
    except ZeroDivisionError as exc:
        exc.__traceback__.tb_frame.f_back.f_locals
    return _real_add(self, other)
Value.__add__ = _add
""",
    "a signal handler gets the running frame": """
import signal, os
signal.signal(signal.SIGINT, lambda sig, frame: frame.f_back)
""",
    "a generator's own frame, kept for a later step": """
import inspect
def _frames():
    while True:
        yield inspect.currentframe()
_gen = _frames()
_frame = next(_gen)  # later, inside a step, _frame.f_back would be the probe's
""",
    "raw memory through ctypes": """
import ctypes
ctypes.c_char.from_address(id(Value))
""",
}


@pytest.mark.slow  # real kernels
@pytest.mark.parametrize("name", FORGERS)
def test_a_forger_in_the_solution_takes_every_later_hidden_test_to_0(name):
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    ids = [grade_id(c) for c in nb.cells if is_test_cell(c)]
    at = next(i for i, c in enumerate(nb.cells) if is_test_cell(c)) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(FORGERS[name]))  # the first keeps its points
    verdicts = grade_in_kernel(nb, A)
    assert verdicts[ids[0]]["passed"], verdicts[ids[0]]
    later = {gid: v for gid, v in verdicts.items() if gid != ids[0]}
    assert later and not any(v["passed"] for v in later.values()), later
    texts = " ".join(str(v) for v in later.values())
    assert "reached into the grading code" in texts or "did not come from" in texts, texts


@pytest.mark.slow
def test_the_solution_alone_keeps_full_marks_under_the_guard():
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    verdicts = grade_in_kernel(nb, A)
    assert verdicts and all(v["passed"] for v in verdicts.values()), verdicts
