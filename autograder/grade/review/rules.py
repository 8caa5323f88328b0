"""What review/flags.py flags, by class: the tables of modules, dotted names, attribute names,
names and IPython magics that honest work for this course never needs.

Each entry maps a name to its *class*, the reason a reviewer should look: the flag reads
``cell 7, line 3: calls gc.get_objects: introspection of the process``. The tables name
members of a class; review/cells.py also flags, by construction, what no table can list:
code run from strings built at run time, modules patched through any alias, any magic
the course does not use. A name goes in a table only if no solution notebook, released
notebook or demo student uses it (tests/test_review.py checks them all).
"""

from __future__ import annotations

ENGINE = "another autodiff engine"
GRADER = "the grader's code or files"
INTROSPECTION = "introspection of the process"
PROCESS = "a process trick"
KERNEL = "changes the kernel"
HIDDEN = "hidden code"
TOO_LONG = "too long to review"
UNREADABLE = "could not be reviewed"


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _table(*rows: tuple[str, str]) -> dict[str, str]:
    """{name: class} from (class, "name name ...") rows."""
    return {name: kind for kind, names in rows for name in names.split()}


ENGINES = words("""torch micrograd tensorflow jax autograd tinygrad minitorch mxnet chainer
theano paddle mlx keras flax""")

# A module imported (``import x``, ``from x import y``, ``__import__("x")``...); a dotted
# entry covers its submodules too.
MODULES = _table(
    (GRADER, "refgrad autograder nbgrader nbclient nbconvert jupyter_client dask distributed"),
    (
        INTROSPECTION,
        "ctypes _ctypes cffi _testcapi _testinternalcapi _xxsubinterpreters "
        "_interpreters __main__ objgraph pympler guppy tracemalloc",
    ),
    (
        PROCESS,
        "subprocess _posixsubprocess pty multiprocessing _multiprocessing concurrent "
        "signal _signal socket _socket socketserver ssl http urllib.request urllib3 requests "
        "ftplib smtplib telnetlib xmlrpc asyncio threading _thread mmap sqlite3 _sqlite3 "
        "resource fcntl termios tty select selectors psutil faulthandler atexit posix "
        "_posixshmem",
    ),
    (
        KERNEL,
        "builtins ipykernel IPython.core IPython.terminal IPython.kernel IPython.utils "
        "zmq tornado traitlets hmac _hashlib",
    ),
    (
        HIDDEN,
        "marshal runpy code codeop zipimport dill cloudpickle importlib.util "
        "importlib.machinery importlib.abc importlib._bootstrap importlib._bootstrap_external "
        "sitecustomize usercustomize",
    ),
)

# A dotted name reached through imports and aliases (``import os as o; o.kill``,
# ``from gc import get_objects``, ``getattr(os, "kill")``); covers ``name.anything``.
CALLS = _table(
    (
        INTROSPECTION,
        "gc.get_objects gc.get_referrers gc.get_referents sys._getframe "
        "sys._current_frames sys._current_exceptions sys.modules sys._getframemodulename "
        "inspect.currentframe inspect.stack inspect.getouterframes inspect.getinnerframes "
        "inspect.trace inspect.getframeinfo inspect.getsource inspect.getsourcelines "
        "inspect.getsourcefile inspect.getfile inspect.getmodule inspect.getmembers "
        "inspect.getclosurevars inspect.getgeneratorlocals inspect.getcoroutinelocals "
        "types.FrameType types.CellType traceback.walk_stack traceback.walk_tb numpy.ctypeslib",
    ),
    (
        PROCESS,
        "os.kill os.killpg os.system os.popen os.fork os.forkpty os.setsid os.setpgrp "
        "os.setpgid os.getppid os.getpgid os.putenv os.unsetenv os.openpty os.memfd_create "
        "os.dup os.dup2 os.pipe os.fdopen os.write os.chdir os.fchdir os.chroot os.nice "
        "os.sched_setaffinity os.tcsetpgrp os.environ.update os.environ.setdefault "
        "os.environ.pop os.environ.popitem os.environ.clear io.FileIO _io.FileIO",
    ),
    (
        KERNEL,
        "sys.settrace sys.setprofile sys.setrecursionlimit sys.displayhook "
        "sys.excepthook sys.unraisablehook sys.breakpointhook sys.addaudithook sys.monitoring "
        "sys.meta_path sys.path_hooks sys.path_importer_cache sys.path sys.set_asyncgen_hooks "
        "sys.setswitchinterval sys.setdlopenflags threading.settrace threading.setprofile "
        "threading.settrace_all_threads threading.setprofile_all_threads threading.excepthook "
        "os.register_at_fork importlib.reload importlib.invalidate_caches gc.callbacks "
        "pdb.set_trace pdb.Pdb bdb",
    ),
    (
        HIDDEN,
        "types.CodeType types.FunctionType types.LambdaType pickle.loads pickle.load "
        "pickle.Unpickler _pickle weakref.finalize operator.attrgetter operator.methodcaller",
    ),
)
# os.exec*, os.spawn*, os.posix_spawn*, os.wait*, os.pidfd_*: a process trick.
OS_PREFIXES = ("exec", "spawn", "posix_spawn", "wait", "pidfd")

# An attribute name, wherever it appears: ``x.f_back``, ``getattr(x, "f_back")``, or a
# string constant equal to it. Only names no honest code of the course uses.
ATTRIBUTES = _table(
    (
        INTROSPECTION,
        "_getframe _current_frames _current_exceptions f_back f_globals "
        "f_locals f_builtins f_code f_trace tb_frame tb_next gi_frame cr_frame ag_frame "
        "gi_code cr_code __closure__ cell_contents __globals__ __code__ co_code co_consts "
        "__subclasses__ __self__ __defaults__ __kwdefaults__ get_objects get_referrers "
        "get_referents",
    ),
    (
        KERNEL,
        "input_transformers_cleanup input_transformers_post input_transformer_manager "
        "ast_transformers input_splitter set_custom_exc set_hook display_pub displayhook "
        "excepthook display_formatter for_type for_type_by_name register_magic_function "
        "register_magics register_cell_magic register_line_magic user_ns user_global_ns "
        "user_ns_hidden ns_table settrace setprofile setrecursionlimit addaudithook "
        "register_at_fork send_response iopub_socket parent_header get_parent set_parent "
        "_parent_header __builtins__",
    ),
    (
        HIDDEN,
        "run_cell run_cell_async run_cell_magic run_line_magic run_code runcode "
        "run_ast_nodes safe_execfile safe_execfile_ipy safe_run_module runsource "
        "set_next_input",
    ),
    (GRADER, "load_grader"),
)
EVENT_METHODS = frozenset({"register", "unregister", "callbacks", "trigger"})

# A bare name (not an attribute), and a method defined (run whenever Python decides).
NAMES = _table((GRADER, "load_grader"), (KERNEL, "__builtins__"))
DEFINED = _table((HIDDEN, "__del__"))
RUNNERS = frozenset(
    {"exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile"}
)  # run the code given as a string
IMPORTERS = frozenset(
    {"__import__", "builtins.__import__", "importlib.import_module", "importlib.__import__"}
)
SHELL = "get_ipython()"  # what get_ipython() (through any alias) resolves to
SHELL_CALLS = frozenset({"run_line_magic", "run_cell_magic", "system", "getoutput"})

# Text inside a string constant (or a string built from constants).
STRINGS = {
    "load_grader": GRADER,
    "refgrad": GRADER,
    "autograder/": GRADER,
    "autograder.": GRADER,
    "autograder_probe": GRADER,
    "vnd.autograder": GRADER,
    "autograder-material": GRADER,
    ".reference": GRADER,
    "kernel_startup": GRADER,
    "kernel_guard": GRADER,
    "gradebook.db": GRADER,
    "sitecustomize": HIDDEN,
    "usercustomize": HIDDEN,
    "/proc/": INTROSPECTION,
    "/dev/fd": PROCESS,
    "/dev/std": PROCESS,  # the process's files
}
CODE_FILES = (".py", ".pyc", ".pyw", ".pth", ".so", ".ipy")  # a file written to be run

# IPython magics (``%name``, ``%%name``): the course's honest ones, the ones whose text is
# Python run in the kernel (read as such), the shell ones; any other is flagged.
HONEST_MAGICS = words("""matplotlib time timeit precision pprint who whos who_ls xmode
lsmagic quickref pinfo pinfo2 psearch html markdown latex svg""")
CODE_MAGICS = words("time timeit prun capture debug")
FILE_MAGICS = words("writefile file")  # %%writefile x.py: the body is code
SHELL_MAGICS = words(
    "system sx sc bash sh script perl ruby python python2 python3 pypy ! getoutput"
)
PYTHON_SCRIPTS = words("python python2 python3 pypy")  # body read as Python
RUNS_FILES = words("run load loadpy")  # %run x.py: x.py may be a file the notebook wrote
MAGIC_KINDS = _table(
    (PROCESS, "env set_env cd pushd popd bookmark dhist killbgscripts"),
    (
        KERNEL,
        "reset reset_selective xdel autoreload aimport load_ext "
        "reload_ext unload_ext alias alias_magic unalias rehashx autocall "
        "automagic doctest_mode colors autoawait config",
    ),
)


def module_kind(module: str) -> str | None:
    """The class of importing ``module`` (or one of its submodules), if flagged."""
    parts = module.split(".", 4)[:4]  # no entry is longer
    if parts[0] in ENGINES:
        return ENGINE
    for n in range(len(parts), 0, -1):
        kind = MODULES.get(".".join(parts[:n]))
        if kind:
            return kind
    return None


def dotted_kind(name: str) -> str | None:
    """The class of using the dotted name ``name`` (``os.kill``, ``sys.modules.get``); a
    name in a flagged module (``importlib.util.x``) is review/cells.py's to flag."""
    parts = name.split(".", 4)[:4]  # no entry is longer
    for n in range(len(parts), 1, -1):
        kind = CALLS.get(".".join(parts[:n]))
        if kind:
            return kind
    if len(parts) > 1 and parts[0] == "os" and parts[1].startswith(OS_PREFIXES):
        return PROCESS
    return None


def magic_kind(name: str, args: str = "") -> str | None:
    """The class of running the magic ``name`` (None for the course's honest ones)."""
    if name == "config" and args.strip().startswith("InlineBackend."):
        return None
    if name in HONEST_MAGICS or name in CODE_MAGICS - {"capture", "debug"}:
        return None
    if name in SHELL_MAGICS:
        return PROCESS
    return MAGIC_KINDS.get(name, HIDDEN)


def show(text: str, limit: int = 30) -> str:
    """Student text made fit for a one-line flag: printable, short."""
    text = "".join(c if c.isprintable() and c not in ",;" else "?" for c in text[: limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"
