"""Runs in every grading kernel after kernel_startup.py (see nbgrader_config.py).

A student's code runs in the same Python process as the hidden tests, so it could change
what the tests rely on: ``builtins.abs``, ``math.isnan``, ``operator.add``, or
``load_grader`` itself. This guard keeps a copy of those as the kernel started and

- before every cell, puts back anything a previous cell changed (so a test cell always
  starts with the real functions and the real ``load_grader``);
- after every cell, if something was changed while that cell ran (say by a student's
  ``__add__`` that the test called), puts it back and writes one line to stderr: nbgrader
  scores a test cell with stderr output zero.

It defines no names in the notebook's namespace. It is a guard against changing the
grader's tools, not a sandbox: see docs/grading.md for what it does not cover.
"""


def _install_grading_guard():
    import builtins
    import importlib
    import sys

    shell = get_ipython()  # noqa: F821 (IPython runs this file in the kernel's namespace)
    names = [
        "abs", "all", "any", "bool", "callable", "complex", "dict", "divmod", "enumerate",
        "filter", "float", "format", "frozenset", "getattr", "hasattr", "hash", "id", "int",
        "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
        "object", "pow", "range", "repr", "reversed", "round", "set", "setattr", "slice",
        "sorted", "str", "sum", "super", "tuple", "type", "vars", "zip", "__import__",
        "compile", "exec", "eval", "globals", "locals", "delattr", "BaseException",
        "Exception", "AssertionError", "ArithmeticError", "ZeroDivisionError", "ValueError",
        "TypeError", "OverflowError", "AttributeError", "NotImplemented", "print",
    ]
    modules = ["math", "cmath", "operator", "functools", "itertools", "random", "numbers",
               "inspect", "types", "copy", "collections", "collections.abc", "re",
               "textwrap", "importlib", "importlib.util", "secrets", "dataclasses", "string",
               "os", "os.path", "sys"]
    saved = {"builtins": (builtins, {n: getattr(builtins, n) for n in names
                                     if hasattr(builtins, n)})}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if name == "sys":
            attrs = {n: getattr(module, n) for n in ("modules", "path_hooks", "meta_path")}
        else:
            attrs = {n: v for n, v in vars(module).items() if not n.startswith("_")
                     and (callable(v) or isinstance(v, (int, float, complex, str)))}
        saved[name] = (module, attrs)
    grader = shell.user_ns.get("load_grader")
    missing = object()

    def restore() -> list[str]:
        changed = []
        for label, (module, attrs) in saved.items():
            for attr, value in attrs.items():
                if getattr(module, attr, missing) is not value:
                    setattr(module, attr, value)
                    changed.append(f"{label}.{attr}")
        if grader is not None and shell.user_ns.get("load_grader") is not grader:
            shell.user_ns["load_grader"] = grader
            changed.append("load_grader")
        return changed

    def before(*args):
        restore()

    def after(*args):
        changed = restore()
        if changed:
            shown = ", ".join(changed[:2]) + (" ..." if len(changed) > 2 else "")
            sys.__stderr__.flush()
            print(f"This cell changed {shown}, which the tests rely on: it was undone.",
                  file=sys.stderr)
            sys.stderr.flush()

    shell.events.register("pre_run_cell", before)
    shell.events.register("post_run_cell", after)


_install_grading_guard()
del _install_grading_guard
