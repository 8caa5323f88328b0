"""Flags for review find covert code by its class, say where it is, and read every cell in
time linear in its size (issue 20, classes 4 and 5).

Each class gets several members, written the ways a student who has read autograder/
would hide them: through aliases, ``getattr``, ``sys.modules``, strings built at run time,
IPython's escapes and magics, a file written by ``%%writefile`` then run or imported."""

import subprocess
import sys
import textwrap

import nbformat
import pytest
from helpers import ROOT, SOLUTIONS, SOURCE, notebook_path
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.grade.review.flags import flag_code, flag_notebook, flag_submission
from autograder.grade.review.rules import ENGINE, GRADER, HIDDEN, INTROSPECTION, KERNEL, PROCESS

A = "01_value"


def classes(code: str) -> set[str]:
    return {reason.rsplit(": ", 1)[1] for reason in flag_code(code)}


INTROSPECTION_CODE = [
    "import gc\nfor o in gc.get_objects():\n    pass",
    "import gc as g\nrefs = g.get_referrers(x)",
    "from gc import get_referents\nget_referents(x)",
    "import sys\nf = sys._getframe(1)",
    "import inspect\nframe = inspect.currentframe().f_back",
    "import inspect\nfor info in inspect.stack():\n    print(info.frame.f_locals)",
    "cells = check.__closure__",
    "secret = f.__closure__[0].cell_contents",
    "f.__code__ = g.__code__",
    "().__class__.__base__.__subclasses__()",
    "fn.__globals__['passed'] = lambda *a: None",
    "import ctypes\nctypes.pythonapi.PyFrame_LocalsToFast",
    "import _ctypes",
    "import sys\nsys.modules['coursekit'].check = lambda *a: True",
    "m = __import__('sys').modules",
    "import sys\ntb = sys.exc_info()[2]\ntb.tb_frame.f_globals",
    "builtins_module = print.__self__",
    "import importlib\ng = importlib.import_module('gc')\ng.get_objects()",
    "getattr(__import__('gc'), 'get_' + 'objects')()",
    "import gc\ngc.ｇｅｔ_ｏｂｊｅｃｔｓ()",  # NFKC: Python reads gc.get_objects
    "import gc\nobjs = gc.__dict__['get_objects']()",
    "import gc\nfind = vars(gc)['get_referrers']",
    "from gc import *\nget_objects()",
    "import sys\nmodules = sys.__dict__['modules']",
    "import traceback\nfor frame, _ in traceback.walk_stack(None):\n    frame.clear()",
    "try:\n    1 / 0\nexcept Exception as e:\n    e.__traceback__.tb_frame",
    # the process's memory and descriptors read as files
    "maps = open('/proc/self/maps').read()",
    "from pathlib import Path\nPath(f'/proc/{pid}/mem').read_bytes()",
    "import tracemalloc\ntracemalloc.start()",
    "import numpy as np\nnp.ctypeslib.as_array(pointer, (10,))",
]
PROCESS_CODE = [
    "import subprocess\nsubprocess.run(['ls'])",
    "from subprocess import Popen as P\nP(['ls'])",
    "import os\nos.system('ls')",
    "import os\npid = os.fork()",
    "import os\nos.execv('/bin/sh', ['sh'])",
    "import os\nos.posix_spawn('/bin/sh', ['sh'], {})",
    "import pty\npty.spawn('sh')",
    "import multiprocessing\nmultiprocessing.Process(target=f).start()",
    "import signal\nsignal.signal(signal.SIGALRM, handler)",
    "from signal import setitimer, ITIMER_REAL\nsetitimer(ITIMER_REAL, 0.1)",
    "import os\nos.kill(os.getppid(), 9)",
    "import os\nk = os.kill\nk(1, 9)",
    "o = __import__('os')\no.system('ls')",
    "import os as o\ngetattr(o, 'sys' + 'tem')('ls')",
    "import socket\nsocket.socket().connect(('localhost', 1))",
    "import mmap\nm = mmap.mmap(-1, 10)",
    "from multiprocessing import shared_memory\nshared_memory.SharedMemory(create=True, size=9)",
    "import sqlite3\nsqlite3.connect('x.db')",
    "import threading\nthreading.Timer(0.1, patch).start()",
    "import os\nos.environ['OMP_NUM_THREADS'] = '1'",
    "!ls",
    "!!ls",
    "files = !ls",
    "if True:\n    !kill -9 $PPID",
    "%%bash\nkill -9 $PPID",
    "  %%sh\n  ls",  # indented: IPython strips the indent, then runs the magic
    "%%script bash\nls",
    "%system ls",
    "%sx ls",
    "%env HOME=/tmp",
    "%cd /tmp",
    "get_ipython().system('ls')",
    "ip = get_ipython()\nip.getoutput('ls')",
    "getattr(get_ipython(), 'system')('ls')",
    "get_ipython().system.__call__('ls')",
    # writing into a descriptor the kernel did not open for the notebook
    "f = open(5, 'wb')\nf.write(b'{}')",
    "fd = 7\nwith open(fd, 'w') as pipe:\n    pipe.write('x')",
    "import io\nio.FileIO(3 + 2, 'w').write(b'x')",
    "open('/dev/fd/5', 'wb').write(b'x')",
]
KERNEL_CODE = [
    "import json\njson.dumps = lambda *a, **k: '{}'",
    "import json as j\nj.loads = fake",
    "import json\nsetattr(json, 'dumps', fake)",
    "import json\nvars(json)['dumps'] = fake",
    "import json\njson.__dict__['dumps'] = fake",
    "get_ipython().display_pub.publish = fake",
    "ip = get_ipython()\nip.input_transformers_cleanup.append(rewrite)",
    "get_ipython().ast_transformers.append(t)",
    "get_ipython().events.register('pre_run_cell', hook)",
    "shell = get_ipython()\nev = shell.events\nev.register('post_execute', hook)",
    "import sys\nsys.displayhook = hook",
    "import sys\nsys.stdout = sink",
    "import builtins\nbuiltins.len = fake",
    "__builtins__.len = fake",
    "setattr(__builtins__, 'len', fake)",
    "import os\nos.register_at_fork(after_in_child=patch)",
    "import sys\nsys.setprofile(tracer)",
    "import sys\nsys.settrace(tracer)",
    "import threading\nthreading.settrace(tracer)",
    "import sys\nsys.setrecursionlimit(60)",
    "import sys\nsys.meta_path.insert(0, Finder())",
    "from IPython import get_ipython\nget_ipython().user_ns['x'] = 1",
    "import IPython\nIPython.get_ipython().kernel.session.send",
    "from IPython.core.inputtransformer2 import TransformerManager",
    "%config InteractiveShell.ast_node_interactivity = 'none'",
    "%reset -f",
    "%load_ext helper",
    "%autoreload 2",
    "import pdb\npdb.set_trace()",
]
HIDDEN_CODE = [
    "import base64\nexec(base64.b64decode('aW1wb3J0IG1hdGg='))",
    "import codecs\nexec(codecs.decode('vzcbeg zngu', 'rot13'))",
    "exec(bytes.fromhex('696d706f7274206d617468').decode())",
    "exec(''.join(chr(c) for c in [112, 97, 115, 115]))",
    "exec('ssap'[::-1])",
    "getattr(__builtins__, 'ex' + 'ec')('x = 1')",
    "eval(compile(source, 'x', 'exec'))",
    "exec(code)",
    "run = exec\nrun(text)",
    "get_ipython().run_cell(text)",
    "get_ipython().run_line_magic('run', 'helper.py')",
    "__import__('o' + 's')",
    "import importlib\nname = 'os'\nimportlib.import_module(name)",
    "import marshal\nexec(marshal.loads(data))",
    "import types\ntypes.FunctionType(code, {})()",
    "import pickle\npickle.loads(blob)",
    "open('helper.py', 'w').write(source)",
    "from pathlib import Path\nPath('helper.py').write_text(source)",
    "%run -i helper.py",
    "%load helper.py",
    "%%writefile helper.py\nx = 1",
    "%%capture\nx = 1",
    "%macro m 1-3",
    "%%javascript\nalert(1)",
    "list(map(get_ipython().system, ['ls']))",
    "import importlib\nspec = importlib.util.spec_from_file_location('h', 'helper.py')",
    "class Value:\n    def __del__(self):\n        patch()",
    "import operator, os\noperator.attrgetter('sys' + 'tem')(os)('ls')",
    "from operator import methodcaller as m\nm('get_objects')(g)",
]
GRADER_CODE = [
    "import refgrad",
    "from autograder.verdicts.hidden import common",
    "text = open('source/.reference/refgrad/engine.py').read()",
    "load_grader('01_value')",
    "import nbgrader",
    "import sqlite3\nsqlite3.connect('../gradebook.db')",
    "path = 'grade' + 'book.db'",
    "import sys\nprobe = sys.modules['autograder_probe']",
    "exec('import refgrad')",
]
ENGINE_CODE = [
    "import torch",
    "import jax.numpy as jnp",
    "__import__('tor' + 'ch')",
    "import importlib\nimportlib.import_module('micro' + 'grad')",
    "%time import tensorflow",
]
CASES = [
    (code, kind)
    for kind, codes in [
        (INTROSPECTION, INTROSPECTION_CODE),
        (PROCESS, PROCESS_CODE),
        (KERNEL, KERNEL_CODE),
        (HIDDEN, HIDDEN_CODE),
        (GRADER, GRADER_CODE),
        (ENGINE, ENGINE_CODE),
    ]
    for code in codes
]


@pytest.mark.parametrize("code, kind", CASES)
def test_every_member_of_a_class_is_flagged_as_such(code, kind):
    assert kind in classes(code), flag_code(code)


def test_a_flag_fits_a_line():
    """Where, what and class in under 90 characters, for every member above."""
    reasons = {reason for code, _ in CASES for reason in flag_code(code)}
    assert max(len(f"cell 99, line 999: {reason}") for reason in reasons) < 90


@pytest.mark.parametrize(
    "code, kind",
    [
        (";exec import ctypes", INTROSPECTION),  # IPython runs exec("import ctypes")
        ("/exec 'import ctypes'", INTROSPECTION),
        (">>> import ctypes", INTROSPECTION),  # IPython strips the prompt
        ("In [3]: import subprocess", PROCESS),
        ("%time import subprocess", PROCESS),
        ("%%timeit -n 1\nimport ctypes", INTROSPECTION),
        ("%%python3\nimport ctypes", INTROSPECTION),
        ("%%capture out\nimport gc\ngc.get_objects()", INTROSPECTION),
        ("exec('exec(\"import ctypes\")')", INTROSPECTION),
        ("get_ipython().run_cell('%%bash\\nls')", PROCESS),
        ("x = 1 +\\\n2\nimport ctypes", INTROSPECTION),
        ("def broken(:\n    import ctypes", INTROSPECTION),  # not Python: read as words
        ("x = (\nimport sys; sys._getframe", INTROSPECTION),
    ],
)
def test_hiding_places_of_ipython_syntax_are_read(code, kind):
    assert kind in classes(code), flag_code(code)


@pytest.mark.parametrize(
    "code",
    [
        "import math, random, time\nimport numpy as np\nimport matplotlib.pyplot as plt",
        "random.seed(0)\nnp.random.seed(1)\nplt.rcParams['figure.figsize'] = (4, 3)",
        "import matplotlib.pyplot as plt\nplt.rcParams['figure.figsize'] = (4, 3)\nplt.show()",
        "def f():\n    ...\n\n\nclass A:\n    ...",
        "import graphviz\nfrom graphviz import Digraph\ndot = Digraph()",
        "%matplotlib inline\n%time f(1)\nx = 1",
        "%%timeit\nf(2)",
        "%config InlineBackend.figure_format = 'retina'",
        "Value?",
        "y = getattr(x, name)()\ncheck_close(f'{name}.grad', getattr(g, name).grad, 1.0)",
        "print('-' * 40)\nprint('%.3f' % x, '{:>8}'.format(name), ''.join(['a', 'b']))",
        "Value.__add__ = add\nself.grad += out.grad",
        "import gc\ngc.collect()\ngc.disable()",
        "import os\n\nos._exit(1)  # a debugging leftover",
        "from IPython.display import HTML, display\ndisplay(HTML('<b>hi</b>'))",
        "from types import SimpleNamespace\nns = SimpleNamespace(a=1)\nns.a = 2",
        "print('the autograder will check this; see events.register in the docs')",
        "def __repr__(self):\n    return f'Value(data={self.data!r}, grad={self.grad})'",
        "x = 1  # not IPython syntax: !ls %run\ns = '''\n%run x\n!ls\n'''",
        "assert a != b\nc = a == b\nd = {'k': 1}\ne = [i for i in range(3) if i % 2]",
    ],
)
def test_honest_code_is_not_flagged(code):
    assert flag_code(code) == []


def test_the_course_code_is_never_flagged_even_as_the_students():
    """Every code cell of every solution notebook, read as if the student had typed it:
    nothing but the course's own comparison with PyTorch (lesson 5) is flagged."""
    for folder in sorted(p for p in SOLUTIONS.iterdir() if any(p.glob("*.ipynb"))):
        nb = nbformat.read(notebook_path(SOLUTIONS, folder.name), as_version=4)
        flags = [str(f) for f in flag_notebook(nb) if "imports torch" not in str(f)]
        assert flags == [], folder.name


def notebook(tmp_path, *cells, name="value.ipynb"):
    nb = new_notebook(
        cells=[new_markdown_cell("# Lesson")]
        + [new_code_cell(c) if isinstance(c, str) else c for c in cells]
    )
    folder = tmp_path / "alice"
    folder.mkdir(exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder


def test_a_flag_says_cell_and_line(tmp_path):
    folder = notebook(
        tmp_path,
        "x = 1",
        "y = 2",
        "z = 3",
        "w = 4",
        "v = 5",
        "import gc\n\nn = len(gc.get_objects())",
    )
    assert flag_submission(folder, SOURCE / A) == [
        "cell 7, line 3: calls gc.get_objects: introspection of the process"
    ]


def test_writefile_then_run_or_import_is_flagged_with_what_the_file_holds(tmp_path):
    folder = notebook(
        tmp_path,
        "%%writefile helper.py\nimport gc\nleak = gc.get_objects()",
        "x = 1",
        "%run -i helper.py",
        "import helper",
    )
    assert flag_submission(folder, SOURCE / A) == [
        "cell 2, line 1: runs %%writefile helper.py: hidden code",
        "cell 2, line 3: calls gc.get_objects: introspection of the process",
        "cell 4, line 1: runs helper.py, written by the notebook: hidden code",
        "cell 5, line 1: imports helper, written by the notebook: hidden code",
    ]


def test_a_flag_is_listed_once_where_first_found_and_the_list_is_bounded(tmp_path):
    folder = notebook(
        tmp_path, *["import os\nos.system('ls')"] * 3, *[f"%magic{i}" for i in range(30)]
    )
    flags = flag_submission(folder, SOURCE / A)
    assert flags[0] == "cell 2, line 2: calls os.system: a process trick"
    assert len(flags) == 12 and flags[-1] == "and 20 more flags"
    assert all(len(f) < 90 for f in flags)


def test_a_long_cell_is_cut_and_the_cut_flagged(tmp_path):
    folder = notebook(tmp_path, "x = 1\n" * 30_000 + "import ctypes")
    assert flag_submission(folder, SOURCE / A) == [
        "cell 2, line 1: 180,013 characters: the first 100,000 read: too long to review"
    ]


def test_a_submission_is_read_up_to_a_bound_and_the_rest_flagged(tmp_path):
    folder = notebook(tmp_path, *["x = 1\n" * 16_000] * 6, "import ctypes")
    assert flag_submission(folder, SOURCE / A) == [
        "cell 8, line 1: not read: past 500,000 characters of code: too long to review"
    ]


def run_for(code: str, timeout: float = 60) -> float:
    """CPU seconds ``code`` (which sets ``f`` and ``arg``) takes to run ``f(arg)``, measured in
    a fresh interpreter so that a scan that never ends fails the test instead of hanging
    it."""
    program = textwrap.dedent(code) + textwrap.dedent("""
        import time
        start = time.process_time()  # CPU time: other tests running meanwhile count less
        f(arg)
        print(time.process_time() - start)
    """)
    try:
        run = subprocess.run(
            [sys.executable, "-c", program],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout} s")
    assert run.returncode == 0, run.stderr[-2000:]
    return float(run.stdout.split()[-1])


# Seconds each input took before the fix (2 cores, Python 3.11), and the bound now: every
# input is 100 kB or more; a linear scan reads it in well under a second.
FLAG = "from autograder.grade.review.flags import flag_code as f\n"


@pytest.mark.parametrize(
    "setup",
    [
        # review/flags.py's MAGIC_LINE on a line of spaces, cubic: 1,600 spaces 3.9 s, 100 kB ~ days
        FLAG + "arg = ' ' * 100_000 + 'x'",
        # review/flags.py's DOTTED on a cell not parsing (quadratic), 16 kB 2.8 s, 100 kB 110 s
        FLAG + "arg = '(' + 'a' * 100_000",
        # IPython's own transformer, quadratic in magics: 1,000 magic lines 10 s
        FLAG + "arg = '%time x\\n' * 20_000",
        FLAG + "arg = 'x = ' + ' + '.join(['\"a\"'] * 20_000)",
        FLAG + "arg = 'x = y' + '.a' * 50_000",
        FLAG + "arg = 'exec(' * 90 + ')' * 90",
        FLAG + 'arg = \'"""\' * 30_000 + "\'" * 30_000',
        FLAG + "arg = '  \\n' * 50_000 + '%%bash'",
        FLAG + "arg = 'import os\\n' + 'os.kill(1)\\n' * 9000",
        # sanitize.py's TAG in _depth, quadratic: 16 kB 1.9 s, 100 kB ~73 s, 2 MB ~8 h
        "from autograder.feedback.sanitize import clean_html as f\narg = '<a' * 50_000",
        "from autograder.feedback.sanitize import clean_html as f\narg = '<div ' + 'a' * 100_000",
        # feedback/pages.py's tag stripper, quadratic: 16 kB 0.18 s, 100 kB 7 s, 1 MB ~12 min
        "from autograder.feedback.pages import _html_text as f\narg = '<' * 1_000_000",
        # feedback/pages.py's MATERIAL_PATH, 300 steps a character: 1 MB 3.2 s
        "from autograder.feedback.pages import blank_paths as f\n"
        "arg = '/autograder-material/ ' + 'a' * 1_000_000",
    ],
)
def test_every_text_scan_is_linear(setup):
    assert run_for(setup) < 2
